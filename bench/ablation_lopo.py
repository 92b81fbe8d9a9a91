#!/usr/bin/env python3
"""Leave-one-problem-out check of a design choice, from `kernelbrain ablate` tables (bench/ablation-replay.sh's
stdout). The candidates are the table's strategies whose label starts with --family (default: "default"): for
each problem, the candidate with the lowest geometric mean of device seconds to 5% over --over (exhaustive) on
the other problems is chosen, and its ratio on the held-out problem is reported. A candidate that never reached
5% on a problem counts as --never times the reference there.
  bench/ablation_lopo.py TABLE... [--family default] [--over exhaustive] [--never 10]"""
import argparse, math

from ablation_table import read_rows

ap = argparse.ArgumentParser()
ap.add_argument("tables", nargs="+")
ap.add_argument("--family", default="default")
ap.add_argument("--over", default="exhaustive")
ap.add_argument("--never", type=float, default=10.0)
a = ap.parse_args()
to5, problems, cands = {}, [], []
for p, strat, _, v in read_rows(a.tables):
    to5[(p, strat)] = v
    if p not in problems: problems.append(p)
    if strat.split(":")[0] == a.family and strat not in cands: cands.append(strat)
def ratio(p, s):
    v, b = to5.get((p, s)), to5.get((p, a.over))
    return a.never if v is None or not b else v / b
def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))
print("| held-out problem | chosen on the other eight | its ratio there | held-out ratio | " + " | ".join(cands) + " |")
print("|---|---|---:|---:|" + "---:|" * len(cands))
held = []
for p in problems:
    rest = [q for q in problems if q != p]
    best = min(cands, key=lambda s: (gm([ratio(q, s) for q in rest]), cands.index(s)))
    held.append(ratio(p, best))
    print(f"| {p} | {best} | {gm([ratio(q, best) for q in rest]):.2f}x | {ratio(p, best):.2f}x | " +
          " | ".join(f"{ratio(p, s):.2f}x" for s in cands) + " |")
print(f"| geometric mean | | | {gm(held):.2f}x | " + " | ".join(f"{gm([ratio(q, s) for q in problems]):.2f}x" for s in cands) + " |")
print(f"| worst | | | {max(held):.2f}x | " + " | ".join(f"{max(ratio(q, s) for q in problems):.2f}x" for s in cands) + " |")
