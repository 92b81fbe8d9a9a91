#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the main job — a real search on built-in problems:
# the CUDA suite on the GPU when there is one, the host (CPU) problems otherwise.
set -euo pipefail
# The main job needs the library and the CLI: the tests and benchmarks are built when their
# libraries are there (or installable), and left out otherwise (e.g. on an offline GPU machine).
KB_NEED_TESTS=${KB_NEED_TESTS:-0} KB_NEED_BENCH=${KB_NEED_BENCH:-0}
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mkdir -p "$KB_ROOT/out"
stamp=$(date +%Y%m%d-%H%M%S)
cli="$BUILD_DIR/apps/kernelbrain/kernelbrain"
# The CUDA suite needs a visible GPU and the CUDA backend's worker (built when the CUDA toolkit is found).
gpus=$(nvidia-smi -L 2>/dev/null) || gpus=""
if [[ $gpus == *GPU* ]] && [ ! -x "$BUILD_DIR/kernelbrain-cuda-worker" ]; then
  echo "run-main: a GPU is visible, but the CUDA backend was not built (no CUDA toolkit found): host problems" >&2
fi
if [[ $gpus == *GPU* ]] && [ -x "$BUILD_DIR/kernelbrain-cuda-worker" ]; then
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
