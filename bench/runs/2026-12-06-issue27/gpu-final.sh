#!/usr/bin/env bash
# Issue 27's remaining GPU work in one device call: the three parts of gpu-run.sh (softmax, linear_relu_div,
# sdpa_fp16: a search that measures PyTorch, side_by_side.py on its best kernels, the agreement check; the
# eval of the committed model-written softmax kernel; the PyTorch gpu test case), then the three gpu-labelled
# ctest tests run directly as tests/CMakeLists.txt defines them (skipped when less than 270 s of the call is left).
set -u
ROOT=$(pwd)
T0=$(date +%s)
for P in softmax linear_relu_div sdpa_fp16; do PART=$P bash bench/runs/2026-12-06-issue27/gpu-run.sh; done
NEWD=$ROOT/.h200/new
L=$OUT/g
mkdir -p "$L"
if [ $(( $(date +%s) - T0 )) -lt 330 ]; then
  export KERNELBRAIN_CUDA_WORKER=$NEWD/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$NEWD/kernelbrain_kernel_prep
  export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems
  KERNELBRAIN_PYTHON=none timeout 150 "$NEWD/kernelbrain_gpu_tests" > "$L/gpu.cuda_backend.log" 2>&1; r1=$?
  timeout 60 python3 bench/side_by_side.py --kernels-from-catalogue --check-only --references --tiers smoke,odd --no-compile > "$L/gpu.references_vs_float64.log" 2>&1; r2=$?
  grep -qE "[1-9][0-9]* failed or errored" "$L/gpu.references_vs_float64.log" && r2=1
  PYTHON=python3 timeout 50 bash bench/check_side_by_side_agreement.sh --prep "$NEWD/kernelbrain_kernel_prep" > "$L/gpu.side_by_side_agreement.log" 2>&1; r3=$?
  echo "== ctest -L gpu, run directly"
  echo "gpu.cuda_backend rc $r1: $(grep -E 'test cases' "$L/gpu.cuda_backend.log")"
  echo "gpu.references_vs_float64 rc $r2: $(tail -1 "$L/gpu.references_vs_float64.log")"
  echo "gpu.side_by_side_agreement rc $r3: $(tail -1 "$L/gpu.side_by_side_agreement.log")"
else
  echo "== gpu tests skipped: $(( $(date +%s) - T0 )) s used"
fi
echo "call total $(( $(date +%s) - T0 )) s"
tar czf "$OUT/gpu-tests.tgz" -C "$OUT" g
rm -rf "$OUT/cache-tests" "$L"
