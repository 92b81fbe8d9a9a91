#!/usr/bin/env bash
# Issue 28: recordings of landscapes no design decision saw: bench/unseen/softmax_vocab and rmsnorm_convnet
# (bench/unseen/make.py: the softmax and rmsnorm templates at benchmark shapes that are in no problem file),
# swept with `kernelbrain record` as bench/recordings/ were (--seed 1 --samples 20 --warmup 2), each under a
# time limit (a partial sweep is the first points of a seeded random order: a uniform sample). Programs from
# tools/build-for-h200.sh (.h200/new). Recordings come back in $OUT/unseen.tar.gz, logs in $OUT/logs.tgz.
set -u
ROOT=$(pwd)
BIN=$ROOT/.h200/new
L=$OUT/lu
R=$OUT/rec
mkdir -p "$L" "$R"
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$BIN/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=$OUT/cache KERNELBRAIN_PYTHON=none
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/gpu.txt" 2>&1
for spec in softmax_vocab:80 rmsnorm_convnet:80; do
  name=${spec%%:*} limit=${spec#*:}
  timeout $((limit + 40)) "$BIN/kernelbrain" record "bench/unseen/$name" --backend cuda --points 0 --seed 1 --samples 20 \
    --warmup 2 --max-shape-seconds 0.5 --time-limit "$limit" --out "$R/$name.jsonl" > "$L/record-$name.log" 2>&1
  echo "== $name rc $? ($(( $(date +%s) - T0 )) s): $(tail -1 "$L/record-$name.log" | cut -c1-300)"
  gzip -9 -f "$R/$name.jsonl"
done
cat "$L/gpu.txt"
tar czf "$OUT/unseen.tar.gz" -C "$R" . && tar czf "$OUT/logs.tgz" -C "$OUT" lu
rm -rf "$R" "$L" "$OUT/cache"
