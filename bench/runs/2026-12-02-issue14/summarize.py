#!/usr/bin/env python3
"""The table of docs/results.md's issue-14 section, from the H200 run's logs and journals:
summarize.py DIR (DIR/logs, DIR/journals with <run>-s<seed>.jsonl or .jsonl.gz: run1/, run2/ here)."""
import gzip
import json
import os
import re
import statistics
import sys

d = sys.argv[1]


def field(text, name):
    m = re.search(rf"^\s*{re.escape(name)}\s+(.+)$", text, re.M)
    return m.group(1).strip() if m else "?"


rows = []
for cfg in ("one", "two", "mpi2"):
    for seed in (1, 2):
        log = os.path.join(d, "logs", f"{cfg}-s{seed}.txt")
        jr = os.path.join(d, "journals", f"{cfg}-s{seed}.jsonl")
        opener = open
        if not os.path.exists(jr) and os.path.exists(jr + ".gz"):
            jr, opener = jr + ".gz", gzip.open
        if not os.path.exists(log) or not os.path.exists(jr):
            continue
        text = open(log).read()
        lines = [json.loads(l) for l in opener(jr, "rt") if l.endswith("\n")]
        outs = [l for l in lines if l["type"] == "outcome"]
        gated = [o["wall_seconds"] for o in outs if o["gated"]]
        rungs = [o["wall_seconds"] for o in outs if not o["gated"]]
        members = {}
        for o in outs:
            members[o.get("member", "")] = members.get(o.get("member", ""), 0) + 1
        wall = float(field(text, "wall seconds"))
        evals = int(field(text, "evaluations"))
        rows.append({
            "cfg": cfg, "seed": seed, "wall": wall, "evals": evals, "rate": evals / wall if wall else 0,
            "device": float(field(text, "device seconds")), "best": field(text, "best candidate"),
            "family": field(text, "family"), "speedup": field(text, "speedup"),
            "gated_mean": statistics.mean(gated) if gated else 0, "gated_n": len(gated),
            "rung_mean": statistics.mean(rungs) if rungs else 0, "rung_n": len(rungs),
            "members": members,
        })
print("| run | seed | wall s | evaluations | evaluations per wall-s | device s | best (family) | speed-up | "
      "gate+rung-0 wall s per candidate (n) | later rung wall s (n) | outcomes by member |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['cfg']} | {r['seed']} | {r['wall']:.1f} | {r['evals']} | {r['rate']:.2f} | {r['device']:.2f} | "
          f"{r['best']} ({r['family']}) | {r['speedup'].split(' ')[0]} | {r['gated_mean']:.3f} ({r['gated_n']}) | "
          f"{r['rung_mean']:.3f} ({r['rung_n']}) | "
          + ", ".join(f"{k}: {v}" for k, v in sorted(r["members"].items())) + " |")
