#!/usr/bin/env bash
# Issue 11 on the H200 machine: the GPU tests after the shared adversarial-input code and the wire
# version change, kernelbrain check on the CUDA softmax, and the host sandbox on this machine's kernel
# (its Landlock ABI, the hostile corpus, the search-level sandbox test, eval on a forged timing).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
LOGS="$OUT/logs"
mkdir -p "$LOGS"
t0=$(date +%s)
uname -r > "$LOGS/uname.log"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release > "$LOGS/configure.log" 2>&1
cmake --build build/release -j "$(nproc)" --target kernelbrain_cli kernelbrain_cuda_worker kernelbrain_host_worker \
  kernelbrain_gpu_tests kernelbrain_tests kernelbrain_kernel_prep > "$LOGS/build.log" 2>&1 || { grep -E "error|FAILED" "$LOGS/build.log" | head -20; exit 1; }
echo "== built in $(( $(date +%s) - t0 )) s; kernel $(uname -r)"
timeout 330 ctest --test-dir build/release -L gpu --output-on-failure > "$LOGS/ctest-gpu.log" 2>&1
echo "== ctest -L gpu rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "Test +#|tests passed|tests failed|Total Test" "$LOGS/ctest-gpu.log" | tail -8
K=build/release/apps/kernelbrain/kernelbrain
timeout 150 $K check softmax --backend cuda > "$LOGS/check-softmax-cuda.log" 2>&1
echo "== check softmax --backend cuda: exit $? ($(( $(date +%s) - t0 )) s)"
grep -E "FINDING|finding|gate|verdict" "$LOGS/check-softmax-cuda.log" | cut -c1-160 | head -8
T=build/release/tests/kernelbrain_tests
timeout 240 $T -tc="host backend: every corpus*,host backend: candidates that signal*" > "$LOGS/host-sandbox.log" 2>&1
echo "== host corpus + sandbox search tests rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "test cases|assertions" "$LOGS/host-sandbox.log"
timeout 120 $K eval softmax tests/hostile_softmax/forged_timing.cpp --backend host > "$LOGS/eval-forged.log" 2>&1
echo "== eval forged_timing (host): exit $?"
grep -E "sandbox|verdict" "$LOGS/eval-forged.log" | cut -c1-220
tar czf "$OUT/issue11-sandbox.tar.gz" -C "$OUT" logs
