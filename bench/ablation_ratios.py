#!/usr/bin/env python3
"""Reads `kernelbrain ablate` tables (bench/ablation-replay.sh's stdout) and prints, per problem, each
strategy's device seconds to 5% over a reference strategy's (default: exhaustive), with the geometric
mean and the worst problem, and the runs that reached 5%.
  bench/ablation_ratios.py TABLE... [--over exhaustive] [--problems a,b]"""
import argparse, math

from ablation_table import read_rows

ap = argparse.ArgumentParser()
ap.add_argument("tables", nargs="+")
ap.add_argument("--over", default="exhaustive")
ap.add_argument("--problems", default="")
a = ap.parse_args()
rows = {}  # (problem, strategy) -> (device s to 5%, reached)
order_p, order_s = [], []
for prob, strat, reached, to5 in read_rows(a.tables):
    rows[(prob, strat)] = (to5, reached)
    if prob not in order_p: order_p.append(prob)
    if strat not in order_s: order_s.append(strat)
keep = [p for p in order_p if not a.problems or p in a.problems.split(",")]
others = [s for s in order_s if s != a.over]
print("| problem | " + " | ".join(f"{s} / {a.over} (reached)" for s in others) + " |")
print("|---|" + "---:|" * len(others))
logs = {s: [] for s in others}
for p in keep:
    base = rows.get((p, a.over), (None, ""))[0]
    cells = []
    for s in others:
        v, reached = rows.get((p, s), (None, "-"))
        if v is None or not base:
            cells.append(f"- ({reached})")
            logs[s].append(math.inf)
        else:
            cells.append(f"{v / base:.2f}x ({reached})")
            logs[s].append(math.log(v / base))
    print(f"| {p} | " + " | ".join(cells) + " |")
def gm(xs):
    return "-" if any(math.isinf(x) for x in xs) or not xs else f"{math.exp(sum(xs) / len(xs)):.2f}x"
def worst(xs):
    return "-" if not xs else ("never" if any(math.isinf(x) for x in xs) else f"{math.exp(max(xs)):.2f}x")
print("| geometric mean | " + " | ".join(gm(logs[s]) for s in others) + " |")
print("| worst | " + " | ".join(worst(logs[s]) for s in others) + " |")
