#!/usr/bin/env bash
# Probe 3 on the H200: the wgmma flash-attention family at chosen points (every sdpa_fp16 shape,
# PyTorch side by side) and the GPU tests again. Output under $OUT; caches outside it.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/probe3}; mkdir -p "$OUT"
T0=$(date +%s); st() { echo "[+$(( $(date +%s) - T0 ))s] $*"; }
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_BENCH=OFF > "$OUT/configure.log" 2>&1 &&
  cmake --build build/gpu --target kernelbrain_cli kernelbrain_cuda_worker kernelbrain_gpu_tests -j 16 > "$OUT/build.log" 2>&1 || { echo BUILD FAILED; grep -E "error" "$OUT/build.log" | head; exit 1; }
st built
timeout 120 python3 bench/side_by_side.py --kernels-from-catalogue --points-file bench/runs/2026-11-29-b/probe/points-wgmma.txt --points-only --no-references \
  --problems sdpa_fp16 --no-compile --out "$OUT/points.json" > "$OUT/points.log" 2>&1
st "points rc=$?"
grep -E "^sdpa_fp16" "$OUT/points.log" | cut -c1-220
grep -E "FAIL|ERROR|Error|error" "$OUT/points.log" | cut -c1-400 | head -12
KERNELBRAIN_CACHE_DIR=/tmp/kbcache timeout 200 ctest --test-dir build/gpu -L gpu --output-on-failure > "$OUT/gpu-tests.log" 2>&1; st "gpu tests rc=$?"
grep -E "Passed|Failed|ERROR|values" "$OUT/gpu-tests.log" | head -20
