#!/usr/bin/env bash
# Issue 26 on the GPU, part 1: build this tree on the GPU machine and run `ctest -L gpu` (the CUDA
# backend's GPU suite, the references against float64, side_by_side agreement). Logs to $OUT.
set -u
ROOT=$(pwd)
BUILD=$ROOT/build/gpu
mkdir -p "$OUT"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; python3 -c "import torch; print('torch', torch.__version__)"; git -C "$ROOT" log --oneline -1 2>/dev/null; } > "$OUT/env.txt" 2>&1
T0=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_BENCH=OFF > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
cmake --build "$BUILD" --target kernelbrain_cli kernelbrain_cuda_worker kernelbrain_kernel_prep kernelbrain_gpu_tests -j "$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -30; exit 1; }
T1=$(date +%s)
export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests
timeout 480 ctest --test-dir "$BUILD" -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1
rc=$?
T2=$(date +%s)
grep -E "MESSAGE|test cases|assertions" "$OUT/ctest-gpu.log" | head -30
tail -12 "$OUT/ctest-gpu.log"
echo "build $((T1-T0)) s, ctest -L gpu $((T2-T1)) s, rc $rc"
