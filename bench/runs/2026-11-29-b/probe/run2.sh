#!/usr/bin/env bash
# Probe 2 on the H200: build, GPU tests (incl. parallel-compile test and every template's default
# point vs float64), then new kernel families at chosen points on every shape of their problems
# (correctness everywhere, PyTorch side by side), then one focused softmax search. Output under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/probe2}; mkdir -p "$OUT"
T0=$(date +%s); st() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_BENCH=OFF > "$OUT/configure.log" 2>&1 &&
  cmake --build build/gpu --target kernelbrain_cli kernelbrain_cuda_worker kernelbrain_gpu_tests -j 16 > "$OUT/build.log" 2>&1 || { echo BUILD FAILED; grep -E "error" "$OUT/build.log" | head; exit 1; }
st built
cat bench/runs/2026-11-29-b/probe/points-dw.txt bench/runs/2026-11-29-b/probe/points-flash.txt bench/runs/2026-11-29-b/probe/points-tf32.txt ${EXTRA_POINTS:-} > "$OUT/points.txt" 2>/dev/null
timeout 150 python3 bench/side_by_side.py --kernels-from-catalogue --points-file "$OUT/points.txt" --points-only --no-references \
  --problems group_conv,sdpa_fp16,linear_relu_div_tf32,linear_relu_div_3xtf32 --no-compile --out "$OUT/points.json" > "$OUT/points.log" 2>&1
st "points rc=$?"
timeout 200 ctest --test-dir build/gpu -L gpu --output-on-failure > "$OUT/gpu-tests.log" 2>&1; st "gpu tests rc=$?"
grep -E "Passed|Failed|FAILED|ERROR|error:|CHECK" "$OUT/gpu-tests.log" | head -30
KERNELBRAIN_CACHE_DIR=$OUT/cache timeout 90 build/gpu/apps/kernelbrain/kernelbrain tune examples/cuda_problems/softmax --backend cuda \
  --focus 4096x393216 --budget 40s --wall 60 --no-progress --journal "$OUT/tune-softmax.jsonl" --best-out "$OUT/best-softmax.json" > "$OUT/tune-softmax.log" 2>&1
st "tune rc=$?"; tail -25 "$OUT/tune-softmax.log"
grep -E "^(group_conv|sdpa_fp16|linear_relu)" "$OUT/points.log" | grep -v -E " (smoke|odd[a-z_0-9]*) " | cut -c1-200
grep -E "FAIL|ERROR" "$OUT/points.log" | cut -c1-250 | head -20
tail -1 "$OUT/points.log"
