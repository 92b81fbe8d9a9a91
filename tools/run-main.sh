#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the main job — a real search on built-in problems:
# the CUDA suite on the GPU when there is one, the host (CPU) problems otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mkdir -p "$KB_ROOT/out"
stamp=$(date +%Y%m%d-%H%M%S)
cli="$BUILD_DIR/examples/kernelbrain"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && "$cli" --help | grep -q "cuda"; then
  problems=(softmax rmsnorm matvec)
  backend=cuda
  budget=${KB_BUDGET:-120s}
else
  problems=(softmax rmsnorm matvec)
  backend=host
  budget=${KB_BUDGET:-60evals}
fi
for p in "${problems[@]}"; do
  journal="$KB_ROOT/out/$p-$backend-$stamp.jsonl"
  "$cli" tune "$p" --backend "$backend" --strategy default --budget "$budget" --seed 1 --journal "$journal" "$@"
  echo "journal: $journal"
  echo
done
