#!/usr/bin/env bash
# NVRTC seconds per candidate on the H200 machine (16 cores), for the throughput model: the 82 candidate
# sources of pool-h200.sh's first search (copied to .h200/compile by hand), compiled by the worker's
# --compile mode one after another, then 16 at a time.
set -uo pipefail
B=$PWD/.h200/new
W=$B/kernelbrain-cuda-worker
D=$PWD/.h200/compile
python3 - "$W" "$D" <<'PY'
import glob, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
w, d = sys.argv[1], sys.argv[2]
srcs = sorted(glob.glob(os.path.join(d, "*.cu")))
opts = ["--gpu-architecture=sm_90", "-default-device", "--std=c++17"]
def one(s):
    t = time.time()
    r = subprocess.run([w, "--compile", s, s[:-3] + ".cubin"] + opts, capture_output=True)
    return time.time() - t, r.returncode
t0 = time.time(); seq = [one(s) for s in srcs]; t_seq = time.time() - t0
ok = sum(1 for _, rc in seq if rc == 0)
times = sorted(x for x, _ in seq)
print(f"sequential: {len(srcs)} compiles ({ok} ok) in {t_seq:.2f} s: mean {t_seq/len(srcs):.3f} s, "
      f"median {times[len(times)//2]:.3f} s, p90 {times[int(len(times)*0.9)]:.3f} s, max {times[-1]:.3f} s")
for p in (8, 16):
    t0 = time.time()
    with ThreadPoolExecutor(p) as ex: list(ex.map(one, srcs))
    t = time.time() - t0
    print(f"{p} at a time: {len(srcs)} compiles in {t:.2f} s: {len(srcs)/t:.1f} compiles/s")
print("cores", os.cpu_count())
PY
