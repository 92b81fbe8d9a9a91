#!/usr/bin/env python3
"""Device seconds to within a tolerance of the best, from search journals (kernelbrain tune --journal).

What `kernelbrain ablate` prints for runs it makes itself, for runs made one by one with journals, so that
where the device time went can be read afterwards (issue 28, on the GPU). Per problem, the best is the best
speedup any of the given runs confirmed at its ladder's top rung; a run reaches it when a new incumbent at
the top rung comes within the tolerance, and its device seconds are the sum of the journal's outcomes up to
that one. Also prints what the tools cost: the first gated outcome of each template family against the
family's others (where the CUDA backend ran compute-sanitizer until 2026-12-07), the first top-rung outcome of
each family (where it runs it since: evaluator::assure; on a one-rung ladder that is also the first gated
one), and the family's other top-rung outcomes with an ncu profile against those without.

    bench/journal_reach.py JOURNAL... [--tolerance 0.05]
"""
import argparse
import collections
import gzip
import json
import statistics


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_of(path):
    lines = read(path)
    head = lines[0]
    rungs = head["ladder"].split("/")[0].split(",")
    top = len(rungs) - 1
    family, spent, bests = {}, 0.0, []
    first_of_family, others, top_first, profiled, unprofiled = [], [], [], [], []
    seen, seen_top = set(), set()
    for e in lines:
        if e["type"] == "event" and e.get("candidate"):
            family[e["id"]] = e["candidate"].get("family", "")
        elif e["type"] == "outcome":
            d = e.get("device_seconds", 0.0)
            spent += d
            if e["rung"] == 0 and e.get("gated"):
                fam = family.get(e["id"], "")
                (others if fam in seen else first_of_family).append(d)
                seen.add(fam)
            if e["rung"] == top:
                fam = family.get(e["id"], "")
                if fam not in seen_top:
                    seen_top.add(fam)
                    top_first.append(d)
                elif e.get("verdict", {}).get("stage") == "pass":
                    (profiled if e.get("profile") else unprofiled).append(d)
        elif e["type"] == "event" and e["kind"] == "new_best" and e["rung"] == top and e.get("score"):
            bests.append((spent, e["score"]["speedup"]))
    return {"problem": head["problem"], "strategy": head["strategy"], "seed": head["seed"], "spent": spent,
            "bests": bests, "first_of_family": first_of_family, "others": others, "top_first": top_first,
            "profiled": profiled,
            "unprofiled": unprofiled, "path": path}


def mean(xs):
    return f"{statistics.mean(xs):.3f} ({len(xs)})" if xs else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journals", nargs="+")
    ap.add_argument("--tolerance", type=float, default=0.05)
    a = ap.parse_args()
    runs = [run_of(p) for p in a.journals]
    by_problem = collections.defaultdict(list)
    for r in runs:
        by_problem[r["problem"]].append(r)
    print("| problem | strategy | seeds reached | device s to 5% (median) | device s to 5% (each) | device s (mean) | "
          "gate, family's first | gate, others | top rung, family's first | top rung, others, ncu | "
          "top rung, others, no ncu |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for problem, rs in by_problem.items():
        best = max((s for r in rs for _, s in r["bests"]), default=0.0)
        strategies = collections.defaultdict(list)
        for r in rs:
            strategies[r["strategy"]].append(r)
        for strategy, group in strategies.items():
            reach = []
            for r in sorted(group, key=lambda r: r["seed"]):
                hit = next((d for d, s in r["bests"] if s >= (1 - a.tolerance) * best), None)
                reach.append(hit)
            got = [x for x in reach if x is not None]
            med = statistics.median([x if x is not None else float("inf") for x in reach])
            each = ", ".join("never" if x is None else f"{x:.2f}" for x in reach)
            cat = lambda key: [x for r in group for x in r[key]]
            print(f"| {problem} | {strategy} | {len(got)}/{len(reach)} | {'-' if med == float('inf') else f'{med:.2f}'} "
                  f"| {each} | {statistics.mean(r['spent'] for r in group):.2f} | {mean(cat('first_of_family'))} | "
                  f"{mean(cat('others'))} | {mean(cat('top_first'))} | {mean(cat('profiled'))} | "
                  f"{mean(cat('unprofiled'))} |")
        print(f"\nbest of {problem}: {best:.3f} (the best speedup any of these runs confirmed at its top rung)\n")


if __name__ == "__main__":
    main()
