#!/usr/bin/env python3
"""The search rank's rate from throughput.sh's logs: evaluations, stop reason and wall seconds from
each run's tune summary (counted, not assumed; the summary prints wall seconds to 0.1 s), the
external wall time and the machine's busy cores from run.txt.
Usage: summarize.py bench/runs/2026-12-06-issue27-mpi/throughput"""
import os
import re
import statistics
import sys

logs = sys.argv[1]
runs = {}
with open(os.path.join(logs, "run.txt"), encoding="utf-8") as f:
    for line in f:
        m = re.match(r"run (np(\d+)-f(\d+)-b(\d+)-r(\d+)) rc=(\d+) external_wall_s=([\d.]+) cores_busy=([\d.]+) "
                     r"load_before=([\d.]+)", line)
        if m:
            members = re.search(r"outcomes_per_member=\[(.*)\]", line).group(1)
            local = re.search(r"(?:^|, )(?:rank 0 )?synthetic: (\d+)", members)
            runs[m.group(1)] = {"np": int(m.group(2)), "fl": int(m.group(3)), "budget": int(m.group(4)),
                                "rep": int(m.group(5)), "rc": int(m.group(6)), "ext": float(m.group(7)),
                                "busy": float(m.group(8)), "load": float(m.group(9)),
                                "local": int(local.group(1)) if local else 0}
for name, r in runs.items():
    with open(os.path.join(logs, name + ".txt"), encoding="utf-8") as f:
        text = f.read()
    r["evals"] = int(re.search(r"^  evaluations +(\d+)", text, re.M).group(1))
    r["stop"] = re.search(r"^  stop reason +(.*)$", text, re.M).group(1)
    r["wall"] = float(re.search(r"^  wall seconds +([\d.]+)", text, re.M).group(1))
    cpu = {}
    with open(os.path.join(logs, name + ".cpu.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"rank (\d+) user ([\d.]+) sys ([\d.]+)", line)
            if m:
                cpu[int(m.group(1))] = float(m.group(2)) + float(m.group(3))
    assert len(cpu) == r["np"], f"{name}: CPU seconds of {len(cpu)} ranks, not {r['np']}"
    r["cpu0"], r["cpu_all"] = cpu[0], sum(cpu.values())

# Fixed costs: the median external wall time of the 1-evaluation runs, per rank count.
fixed = {np: statistics.median(r["ext"] for r in runs.values() if r["np"] == np and r["budget"] == 1)
         for np in sorted({r["np"] for r in runs.values() if r["budget"] == 1})}
# Rank 0's fixed CPU seconds likewise (start, MPI start, the landscape, the baseline).
fixed_cpu0 = {np: statistics.median(r["cpu0"] for r in runs.values() if r["np"] == np and r["budget"] == 1)
              for np in fixed}

order = sorted(runs, key=lambda n: (runs[n]["np"], runs[n]["fl"], runs[n]["budget"], runs[n]["rep"]))
print("| ranks | in-flight | budget | rep | rc | stop reason | evaluations | summary wall s | external wall s | "
      "evals / summary wall | evals / external wall | evals / (external - fixed) | cores busy (of 2) | "
      "rank 0 CPU s | all ranks' CPU s | on rank 0's member | on other ranks, per summary wall s | load before |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for name in order:
    r = runs[name]
    per_wall = f"{r['evals'] / r['wall']:,.0f}" if r["wall"] > 0 else "- (0.0 printed)"
    net = r["ext"] - fixed[r["np"]] if r["np"] in fixed else 0
    per_net = f"{r['evals'] / net:,.0f}" if r["budget"] > 1 and net > 0 else "-"
    remote = r["evals"] - r["local"]
    per_remote = f"{remote / r['wall']:,.0f}" if r["np"] > 1 and r["wall"] > 0 else "-"
    print(f"| {r['np']} | {r['fl']} | {r['budget']} | {r['rep']} | {r['rc']} | {r['stop']} | {r['evals']} | "
          f"{r['wall']:.1f} | {r['ext']:.3f} | {per_wall} | {r['evals'] / r['ext']:,.0f} | {per_net} | "
          f"{r['busy']:.2f} | {r['cpu0']:.2f} | {r['cpu_all']:.2f} | {r['local']} | {per_remote} | {r['load']:.2f} |")
print()
print("fixed costs (medians of the 1-evaluation runs): external wall s "
      + ", ".join(f"{np} rank(s) {s:.3f}" for np, s in fixed.items()) + "; rank 0's CPU s "
      + ", ".join(f"{np} rank(s) {s:.2f}" for np, s in fixed_cpu0.items()))
groups = sorted({(r["np"], r["fl"], r["budget"]) for r in runs.values() if r["budget"] > 1})
for np, fl, budget in groups:
    sel = [r for r in runs.values() if (r["np"], r["fl"], r["budget"]) == (np, fl, budget)]
    stops = sorted({r["stop"] for r in sel})
    ext = [r["evals"] / r["ext"] for r in sel]
    net = [r["evals"] / (r["ext"] - fixed[np]) for r in sel if np in fixed and r["ext"] > fixed[np]]
    wall = [r["evals"] / r["wall"] for r in sel if r["wall"] > 0]
    busy = [r["busy"] for r in sel]

    def span(v):
        return f"median {statistics.median(v):,.0f} (min {min(v):,.0f}, max {max(v):,.0f})"

    line = (f"{np} rank(s), in-flight {fl}, budget {budget} ({len(sel)} runs): evaluations "
            f"{sorted({r['evals'] for r in sel})}, stop {stops}; evals/s over the external wall: {span(ext)}")
    if net:
        line += f"; over the external wall minus the fixed cost: {span(net)}"
    if wall:
        line += f"; over the summary's wall seconds: {span(wall)}"
    line += f"; cores busy {min(busy):.2f}-{max(busy):.2f} of 2"
    if np in fixed_cpu0:
        cpu0 = [r["cpu0"] - fixed_cpu0[np] for r in sel]
        line += (f"; rank 0's CPU s less its fixed cost {min(cpu0):.2f}-{max(cpu0):.2f}, "
                 f"{1000 * statistics.median(cpu0) / budget:.3f} ms an evaluation (median), "
                 f"{budget / statistics.median(cpu0):,.0f} evaluations per CPU-second of rank 0")
    if np > 1:
        local = [r["local"] for r in sel]
        remote = [(r["evals"] - r["local"]) / r["wall"] for r in sel if r["wall"] > 0]
        line += (f"; on rank 0's own member {min(local)}-{max(local)} of {budget}; on the other {np - 1} rank(s), "
                 f"per summary wall second: {span(remote)} ({statistics.median(remote) / (np - 1):,.0f} per rank)")
    print(line)
