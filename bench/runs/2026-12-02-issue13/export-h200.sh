#!/usr/bin/env bash
# Issue 13 on the H200 machine: each exported PyTorch module (kernelbrain export) imported in a fresh
# worker process of bench/side_by_side.py, checked against float64 and timed beside PyTorch eager,
# torch.compile and our own launch of the same kernel's NVRTC cubin (the worker's method), all in that
# one process. Programs prebuilt by tools/build-for-h200.sh into .h200/new (carried); the exported
# folders are made on the development machine into exported/<problem> (see README.md beside this).
#   export-h200.sh PROBLEM=BEST_JSON ...
# Logs come back in $OUT/logs.tar.gz; the last lines printed are the tables.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
BIN=${KB_BIN:-.h200/new}
mkdir -p "$OUT/logs"
export KERNELBRAIN_CUDA_WORKER=$PWD/$BIN/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$PWD/$BIN/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=/tmp/kb-cache
t0=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  command -v nvcc || ls /usr/local/cuda/bin/nvcc; /usr/local/cuda/bin/nvcc --version | tail -2; } > "$OUT/logs/env.txt" 2>&1
cat "$OUT/logs/env.txt"
if [ "${KB_AGREEMENT:-1}" = 1 ]; then
  timeout 300 bash bench/check_side_by_side_agreement.sh --prep "$KERNELBRAIN_KERNEL_PREP" > "$OUT/logs/agreement.log" 2>&1
  echo "== side_by_side agreement rc $? ($(( $(date +%s) - t0 )) s): $(tail -1 "$OUT/logs/agreement.log")"
fi
for spec in "$@"; do
  p=${spec%%=*} best=${spec#*=}
  timeout 420 python3 bench/side_by_side.py --kernels "$best" --export "$HERE/exported/$p" --samples 21 \
    --out "$OUT/logs/sbs-$p.json" > "$OUT/logs/sbs-$p.log" 2>&1
  echo "== $p rc $? ($(( $(date +%s) - t0 )) s)"
  grep -E "^export: kb_|Error|error" "$OUT/logs/sbs-$p.log" | head -5
  sed -n '/^problem  *shape  *eager ms  *compile ms  *ours ms  *ours again/,$p' "$OUT/logs/sbs-$p.log"
done
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
echo "== done in $(( $(date +%s) - t0 )) s"
