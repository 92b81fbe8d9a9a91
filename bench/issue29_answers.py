#!/usr/bin/env python3
"""What each model answer became, and what the ladder saved (issue 29, items 2 and 3), read from journals.

    python3 bench/issue29_answers.py JOURNAL...

Per journal (a campaign's journal.jsonl), in Markdown:
- the model's kernels: how many were proposed, refused by the gate (and the verdict stages), measured at the
  smoke rung and at the top rung; for the kernels that were measured at the smoke rung, the median and best
  speed-up there, and how many beat, at the smoke rung, the best kernel measured there before them (an answer
  that would have moved the search on) and, for the answers to mutate prompts, their parent;
- the ladder: device seconds per rung (the gate's checks are inside each rung's measurement), how many
  candidates stopped at each rung, and what measuring every candidate that reached the smoke rung once at the
  top rung would have cost instead (their count times the mean top-rung cost of one candidate in this journal):
  the saving a one-rung search would not have had.

The kernels proposed and refused are `tools/campaign.py status`'s own count (its journal_summary: refusals
before measurement and in it, the last verdict of a kernel winning); the rest is read from events and outcomes
here, so the figures are those of the run as journaled, across all its segments (rounds).
"""
import importlib.util
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

_spec = importlib.util.spec_from_file_location("campaign", Path(__file__).resolve().parent.parent / "tools" / "campaign.py")
campaign = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(campaign)


def read(path):
    proposed = {}  # id -> (note, parent)
    events = []
    outcomes = []
    strategy = problem = device = ""
    with open(path) as f:
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue  # a blank or torn last line (a run killed mid-write), as tools/campaign.py skips it
            t = d.get("type")
            if t == "header" and not problem:
                problem, strategy = d.get("problem", ""), d.get("strategy", "")
                ev = d.get("evaluator", "")
                device = ev.split("device: ")[1].split(";")[0] if "device: " in ev else ""
            elif t == "event":
                events.append(d)
                if d["kind"] == "proposed":
                    c = d.get("candidate") or {}
                    proposed[d["id"]] = (d.get("note", ""), c.get("parent") or "")
            elif t == "outcome":
                outcomes.append(d)
    return problem, strategy, device, proposed, events, outcomes


def analyse(path):
    problem, strategy, device, proposed, events, outcomes = read(path)
    summary = campaign.journal_summary(path)["model"]
    model = {i for i, (note, _) in proposed.items() if note.startswith("llm")}  # as journal_summary counts them
    top = max((e["rung"] for e in events if e["kind"] == "measured"), default=0)
    # Speed-ups by (id, rung), in journal order.
    speed = {}
    order = []  # (id, rung, speedup) as measured
    for e in events:
        if e["kind"] != "measured" or (e.get("verdict") or {}).get("stage", "pass") != "pass":
            continue
        s = (e.get("score") or {}).get("speedup")
        if s is None:
            continue
        speed[(e["id"], e["rung"])] = s
        order.append((e["id"], e["rung"], s))
    smoke_best = 0.0
    beat_best = 0
    for i, r, s in order:
        if r != 0:
            continue
        if i in model and s > smoke_best:
            beat_best += 1
        smoke_best = max(smoke_best, s)
    m_smoke = [speed[(i, 0)] for i in model if (i, 0) in speed]
    m_top = [speed[(i, top)] for i in model if (i, top) in speed and top > 0]
    mutate = [(i, proposed[i][1]) for i in model if ":mutate" in proposed[i][0] and (i, 0) in speed]
    beat_parent = sum(1 for i, p in mutate if (p, 0) in speed and speed[(i, 0)] > speed[(p, 0)])
    parent_known = sum(1 for _, p in mutate if (p, 0) in speed)
    # The ladder: device seconds per rung, candidates per highest rung reached.
    spent = defaultdict(float)
    for o in outcomes:
        spent[o.get("rung", 0)] += o.get("device_seconds", 0.0) or 0.0
    highest = {}
    for i, r, _ in order:
        highest[i] = max(highest.get(i, 0), r)
    stopped = Counter(highest.values())
    top_cost = defaultdict(float)
    for o in outcomes:
        if o.get("rung") == top:
            top_cost[o["id"]] += o.get("device_seconds", 0.0) or 0.0
    mean_top = statistics.mean(top_cost.values()) if top_cost else None
    return {
        "path": path, "problem": problem, "strategy": strategy, "device": device, "top": top,
        "model": summary["proposed"], "refused": Counter(summary["rejected"]), "smoke": m_smoke, "top_speed": m_top,
        "beat_best": beat_best, "mutate": len(mutate), "beat_parent": beat_parent, "parent_known": parent_known,
        "spent": dict(spent), "stopped": stopped, "candidates": len(highest), "mean_top": mean_top,
    }


def fmt(x, unit="x"):
    return "-" if x is None else f"{x:.2f}{unit}"


def main(paths):
    rows = [analyse(p) for p in paths]
    print("### The model's kernels\n")
    print("| journal | problem | strategy | proposed | refused by the gate | at smoke | smoke speed-up, median (best) "
          "| beat the best so far at smoke | mutations that beat their parent at smoke | at the top rung | "
          "top-rung speed-up, best |")
    print("|---|---|---|---:|---|---:|---|---:|---|---:|---:|")
    for r in rows:
        ref = ", ".join(f"{k} {v}" for k, v in sorted(r["refused"].items())) or "none"
        med = fmt(statistics.median(r["smoke"])) if r["smoke"] else "-"
        best = fmt(max(r["smoke"])) if r["smoke"] else "-"
        par = f"{r['beat_parent']} of {r['parent_known']}" if r["parent_known"] else "-"
        tb = fmt(max(r["top_speed"])) if r["top_speed"] else "-"
        print(f"| {r['path']} | {r['problem']} | {r['strategy']} | {r['model']} | {ref} | {len(r['smoke'])} | "
              f"{med} ({best}) | {r['beat_best']} | {par} | {len(r['top_speed'])} | {tb} |")
    print("\n### The ladder\n")
    print("| journal | device s per rung (smoke, ..., top) | candidates stopped at each rung | mean top-rung cost "
          "of a candidate | every smoked candidate at the top rung instead | ladder's share of that |")
    print("|---|---|---|---:|---:|---:|")
    for r in rows:
        top = r["top"]
        per = ", ".join(f"{r['spent'].get(k, 0.0):.2f}" for k in range(top + 1))
        st = ", ".join(str(r["stopped"].get(k, 0)) for k in range(top + 1))
        instead = r["candidates"] * r["mean_top"] if r["mean_top"] and top > 0 else 0.0
        if instead > 0:
            print(f"| {r['path']} | {per} | {st} | {r['mean_top']:.3f} s | {instead:.2f} s | "
                  f"{sum(r['spent'].values()) / instead:.2f}x |")
        else:
            print(f"| {r['path']} | {per} | {st} | - | - | - |")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    main(sys.argv[1:])
