#!/usr/bin/env python3
"""The paper's ablation (issue 29, item 3) as a table: the default against blind-llm on each problem.

    python3 bench/issue29_ablation.py --cli build/release/apps/kernelbrain/kernelbrain \
        [--html report.html] JOURNAL...

Runs `kernelbrain report` on the journals (so the curves are the report page's own, docs/report.md) and
reads its data block. For each problem with journals of both strategies it prints, in Markdown:
- per strategy: rounds, answered prompts, tokens, device seconds, its best at the top rung and where the
  best came from (catalogue or model);
- the best at the top rung of each when both had the same number of answered prompts (the smaller
  count of the two);
- the device seconds and tokens the default spent to reach, at the top rung, the blind run's final best,
  over what the blind run spent to get there (the goal: at most 0.6x each).

Only top-rung incumbents count: a smoke-rung speed-up times fewer shapes and is not comparable.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def report_data(cli, journals, html):
    out = html or str(Path(tempfile.mkdtemp(prefix="kb-ablation-")) / "report.html")
    subprocess.run([cli, "report", *journals, "-o", out], check=True, stdout=subprocess.DEVNULL)
    text = Path(out).read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="kb-data">(.*?)</script>', text, re.S)
    if not m:
        sys.exit(f"{out}: no kb-data block: not a kernelbrain report page")
    return json.loads(m.group(1))


def top_points(curve, top):
    """(x, y) of the curve's marked steps measured at the top rung, in x order."""
    return [(p["x"], p["y"]) for p in curve["median"] if p.get("m") and p.get("r") == top]


def best_by(points, x):
    ys = [y for px, y in points if px <= x]
    return max(ys) if ys else None


def first_reaching(points, y):
    """The x at which the curve first reaches y (None: never)."""
    for px, py in points:
        if py >= y * (1 - 1e-9):
            return px
    return None


def ratio(a, b):
    if a is None:
        return "never"
    if not b:
        return f"{a:g} against 0" if a else "0 against 0"
    return f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True, help="the kernelbrain CLI")
    ap.add_argument("--html", help="also keep the report page here")
    ap.add_argument("journals", nargs="+")
    a = ap.parse_args()
    d = report_data(a.cli, a.journals, a.html)
    journals = d["journals"]
    for p in d["problems"]:
        groups = {g["strategy"].split("+")[0]: g for g in p["groups"]}
        if "default" not in groups or "blind-llm" not in groups:
            print(f"{p['name']}: no default and blind-llm pair ({', '.join(groups)}); skipped\n")
            continue
        rows = {(r["j"], r["id"]): r for r in p["rows"]}
        print(f"### {p['name']}\n")
        print("| strategy | rounds | answered prompts | tokens | device s | best at the top rung | from |")
        print("|---|---:|---:|---:|---:|---:|---|")
        facts = {}
        for name in ("default", "blind-llm"):
            g = groups[name]
            (j,) = g["journals"]  # one seed a strategy: a campaign is one search
            jj = journals[j]
            top = jj["ladder"].split("/")[0].split(",")[-1]
            pm = g["progress_model"]
            f = {
                "top": top,
                "device": top_points(g["progress"], top),
                "tokens": top_points(pm["tokens"], top),
                "answers": top_points(pm["answers"], top),
                "n_answers": pm["answers"]["median"][-1]["x"] if pm["answers"]["median"] else 0,
                "n_tokens": pm["tokens"]["median"][-1]["x"] if pm["tokens"]["median"] else 0,
            }
            facts[name] = f
            best = best_by(f["device"], float("inf"))
            b = jj.get("best") or {}
            origin = rows.get((j, b.get("id")), {}).get("origin", "")
            source = "model" if origin.startswith("llm") else ("catalogue" if origin else "none")
            print(f"| {name} | {jj['segments']} | {f['n_answers']:.0f} | {f['n_tokens']:.0f} | "
                  f"{jj['device_seconds']:.2f} | {'-' if best is None else f'{best:.2f}x'} | {source} |")
        n = min(facts["default"]["n_answers"], facts["blind-llm"]["n_answers"])
        at_n = {k: best_by(v["answers"], n) for k, v in facts.items()}
        fmt_b = lambda v: "none at the top rung" if v is None else f"{v:.2f}x"
        print(f"\nAt {n:.0f} answered prompts each: default {fmt_b(at_n['default'])}, "
              f"blind-llm {fmt_b(at_n['blind-llm'])}.")
        blind_final = best_by(facts["blind-llm"]["device"], float("inf"))
        if blind_final is None:
            print("The blind run has no incumbent at the top rung: no target to reach.\n")
            continue
        dev = (first_reaching(facts["default"]["device"], blind_final),
               first_reaching(facts["blind-llm"]["device"], blind_final))
        tok = (first_reaching(facts["default"]["tokens"], blind_final),
               first_reaching(facts["blind-llm"]["tokens"], blind_final))
        target = f"To the blind run's final best ({blind_final:.2f}x at {facts['blind-llm']['top']})"
        if dev[0] is None:
            print(f"{target}: the default never reached it (the blind run took {dev[1]:.2f} device s and "
                  f"{tok[1]:.0f} tokens).\n")
            continue
        print(f"{target}: the default took {dev[0]:.2f} device s against {dev[1]:.2f} s ({ratio(dev[0], dev[1])}) "
              f"and {tok[0]:.0f} tokens against {tok[1]:.0f} ({ratio(tok[0], tok[1])}).\n")

if __name__ == "__main__":
    main()
