#!/usr/bin/env bash
# The gate check of issue 8 on the H200, in one device call: the gate's cost per candidate before
# (commit b527ff9) and after, then the GPU tests (ctest -L gpu's two programs). Runs binaries built
# on the development machine with -static-libstdc++ (tools/build-for-h200.sh), carried in .h200/:
#   .h200/new/{kernelbrain-cuda-worker, kernelbrain_gpu_tests, kb_gate_cost, kernelbrain}
#   .h200/old/{kernelbrain-cuda-worker, kb_gate_cost} and .h200/old/cuda_problems (b527ff9's problems,
#   which its loader reads; today's files carry fields it does not know)
# The carried binaries hold absolute paths of /work/main (tests' KB_SOURCE_DIR): the script links
# /work/main to this checkout when that path is free. Logs: $OUT/logs.tgz; a short table last.
#   GATE_EVALS=30 GATE_PROBLEMS="softmax" TESTS=1 bash bench/h200-gate-check.sh
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
[ -e /work/main ] || { mkdir -p /work && ln -s "$ROOT" /work/main; }
NEW=$ROOT/.h200/new
OLD=$ROOT/.h200/old
EVALS=${GATE_EVALS:-30}
PROBLEMS=${GATE_PROBLEMS:-"softmax linear_relu_div_tf32"}
T0=$(date +%s)
stamp() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
{ date -u; nvidia-smi 2>&1 | head -15; nvcc --version 2>&1 | tail -2; python3 -c "import torch; print('torch', torch.__version__)" 2>&1
  command -v compute-sanitizer && compute-sanitizer --version 2>&1 | tail -2; } > "$LOGS/env.txt" 2>&1
chmod +x "$NEW"/* "$OLD"/* 2>/dev/null

# 1. Gate cost before and after, old first: nothing has filled the machine's CUDA compute cache yet
#    (the old code rejects every kernel that the compute cache already holds). Each run gets a private
#    compute cache and KernelBrain cache.
if [ "${GATE:-1}" = 1 ]; then
  stamp "gate cost, b527ff9"
  for p in $PROBLEMS; do
    CUDA_CACHE_PATH=/tmp/cc-old-$p KERNELBRAIN_CACHE_DIR=/tmp/kb-old-$p KERNELBRAIN_CUDA_WORKER=$OLD/kernelbrain-cuda-worker \
      timeout 300 "$OLD/kb_gate_cost" --label b527ff9 --evals "$EVALS" "$OLD/cuda_problems/$p" 2>&1 | tee -a "$LOGS/gate-old.txt"
  done
  stamp "gate cost, this tree"
  for p in $PROBLEMS; do
    CUDA_CACHE_PATH=/tmp/cc-new-$p KERNELBRAIN_CACHE_DIR=/tmp/kb-new-$p KERNELBRAIN_CUDA_WORKER=$NEW/kernelbrain-cuda-worker \
      timeout 300 "$NEW/kb_gate_cost" --label this-tree --evals "$EVALS" "$ROOT/examples/cuda_problems/$p" 2>&1 | tee -a "$LOGS/gate-new.txt"
  done
fi

# 2. The GPU tests: the doctest program (gpu.cuda_backend) and the references against float64
#    (gpu.references_vs_float64), as ctest -L gpu runs them.
TESTS_RC="skipped"
if [ "${TESTS:-1}" = 1 ]; then
  stamp "gpu tests"
  export KERNELBRAIN_CUDA_WORKER=$NEW/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$NEW/kernelbrain_kernel_prep
  timeout ${TEST_TIMEOUT:-420} "$NEW/kernelbrain_gpu_tests" ${TEST_ARGS:-} > "$LOGS/gpu-tests.log" 2>&1
  TESTS_RC=$?
  stamp "gpu tests rc $TESTS_RC"
  if [ "${REFERENCES:-1}" = 1 ]; then
    timeout 300 python3 bench/side_by_side.py --kernels-from-catalogue --check-only --references --tiers smoke,odd --no-compile \
      > "$LOGS/references.log" 2>&1
    echo "references rc $?" >> "$LOGS/references.log"
  fi
fi
{
  echo "== gate cost (kb_gate_cost, $EVALS evaluations, default strategy) =="
  cat "$LOGS"/gate-old.txt "$LOGS"/gate-new.txt 2>/dev/null | grep -v "^problem " | sort
  echo "== gpu tests: rc $TESTS_RC =="
  grep -E "test cases:|assertions:|ERROR|FAILED|MESSAGE|CHECK|REQUIRE|failed" "$LOGS/gpu-tests.log" 2>/dev/null | head -60
  tail -3 "$LOGS/references.log" 2>/dev/null
} > "$OUT/gate-check.txt"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
cat "$OUT/gate-check.txt"
