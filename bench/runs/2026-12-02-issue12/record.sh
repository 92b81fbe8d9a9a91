#!/usr/bin/env bash
# Issue 12 on the H200 machine: sweeps of the CUDA problems' template spaces (kernelbrain record), in
# parts. Programs prebuilt by tools/build-for-h200.sh into .h200/new (carried). A part continues the
# committed recording bench/recordings/<problem>.jsonl.gz when there is one; every recording comes back
# gzipped in $OUT/recordings.tar.gz, the logs in $OUT/logs.tar.gz.
#   record.sh [--gpu-tests] PROBLEM:POINTS:SECONDS[:MAX_SHAPE_SECONDS] ...
#     POINTS 0: every admitted point; SECONDS: this part's --time-limit
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
BIN=${KB_BIN:-.h200/new}
mkdir -p "$OUT/logs" "$OUT/rec"
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$BIN/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=/tmp/kb-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/logs/gpu.log" 2>&1
if [ "${1:-}" = --gpu-tests ]; then
  shift
  timeout 300 "$BIN/kernelbrain_gpu_tests" > "$OUT/logs/gpu-tests.log" 2>&1
  echo "== gpu tests rc $? ($(( $(date +%s) - t0 )) s): $(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/logs/gpu-tests.log" | tr '\n' ' ')"
fi
for spec in "$@"; do
  IFS=: read -r name points limit maxs <<< "$spec"
  f="$OUT/rec/$name.jsonl"
  [ -f "bench/recordings/$name.jsonl.gz" ] && gunzip -c "bench/recordings/$name.jsonl.gz" > "$f"
  timeout $((limit + 90)) "$BIN/kernelbrain" record "examples/cuda_problems/$name" --backend cuda --points "$points" \
    --seed 1 --samples 20 --warmup 2 --max-shape-seconds "${maxs:-0.5}" --time-limit "$limit" --out "$f" \
    > "$OUT/logs/record-$name.log" 2>&1
  echo "== $name rc $? ($(( $(date +%s) - t0 )) s): $(tail -1 "$OUT/logs/record-$name.log" | cut -c1-260)"
  gzip -9 -f "$f"
done
tar czf "$OUT/recordings.tar.gz" -C "$OUT/rec" . && rm -rf "$OUT/rec"
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "== done in $(( $(date +%s) - t0 )) s"
