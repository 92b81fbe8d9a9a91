#!/usr/bin/env python3
"""How the in-flight depth (2 x the GPUs of a pool) changes what one search finds for a fixed evaluation
budget: the synthetic landscape (kernelbrain tune synthetic, default strategy), seeds 1-10, depth 4
(2 GPUs) to 1024 (512 GPUs). The count is of searches that ended on the landscape's optimum, the
candidate every depth-4 search converges on (e3e12960ebc41f02); the measured speed-up is printed too,
but a search that stops with many results outstanding can end on a lucky low-rung measurement.
Usage: depth-study.py KERNELBRAIN_CLI   (about a minute on two cores)"""
import re
import statistics
import subprocess
import sys

cli = sys.argv[1]
for budget in (200, 400, 1000):
    for depth in (4, 16, 64, 256, 1024):
        speedups, optimum = [], 0
        for seed in range(1, 11):
            out = subprocess.run([cli, "tune", "synthetic", "--budget", f"{budget}evals", "--in-flight", str(depth),
                                  "--seed", str(seed), "--no-progress"], capture_output=True, text=True,
                                 check=True).stdout
            speedups.append(float(re.search(r"speedup\s+([0-9.]+)x", out).group(1)))
            optimum += re.search(r"best candidate\s+(\S+)", out).group(1) == "e3e12960ebc41f02"
        print(f"budget {budget} evaluations, depth {depth} (a pool of {depth // 2}): optimum found {optimum}/10, "
              f"best measured speed-up mean {statistics.mean(speedups):.3f} (min {min(speedups):.3f})")
