#!/usr/bin/env bash
# Issue 13 on the H200 machine: real journals for the report's example (several strategies x seeds on
# one problem, so the progress plot has seed bands). Programs prebuilt by tools/build-for-h200.sh into
# .h200/new (carried). Journals and logs come back in $OUT/journals.tar.gz.
#   journals.sh PROBLEM BUDGET "STRATEGY..." "SEED..."
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
BIN=${KB_BIN:-.h200/new}
P=${1:-softmax} BUDGET=${2:-15s} STRATEGIES=${3:-default random sha} SEEDS=${4:-1 2 3}
J=$OUT/journals
mkdir -p "$J"
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_CACHE_DIR=/tmp/kb-cache
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > "$J/gpu.log" 2>&1
for s in $STRATEGIES; do
  for seed in $SEEDS; do
    f=$J/$P-$s-$seed
    timeout 150 "$BIN/kernelbrain" tune "examples/cuda_problems/$P" --backend cuda --strategy "$s" --seed "$seed" \
      --budget "$BUDGET" --journal "$f.jsonl" --best-out "$f.best.json" --no-progress > "$f.log" 2>&1
    echo "== $s seed $seed rc $? ($(( $(date +%s) - t0 )) s): $(grep -E '^  (evaluations|speedup|device seconds|wall seconds) ' "$f.log" | sed 's/ \+/ /g' | tr '\n' ' ')"
  done
done
tar czf "$OUT/journals.tar.gz" -C "$OUT" journals && rm -rf "$J"
echo "== done in $(( $(date +%s) - t0 )) s"
