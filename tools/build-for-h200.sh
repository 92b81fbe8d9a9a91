#!/usr/bin/env bash
# Builds, on the development machine, the programs that bench/h200-gate-check.sh and bench/run-gpu
# (KB_PREBUILT) run on the H200 machine, with libstdc++ and libgcc linked statically (the H200 image
# has another g++), into .h200/new (ignored by git; carried to the device). NVRTC is linked as
# libnvrtc.so.13, which both machines have; the CUDA driver is opened at run time.
#   OLD=<tree at an older commit, built the same way> also copies that build into .h200/old.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build/h200}
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_TESTS=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" --target kernelbrain_cli kernelbrain_cuda_worker kernelbrain_kernel_prep kernelbrain_gpu_tests kb_gate_cost -j "$(nproc)"
mkdir -p "$ROOT/.h200/new"
cp "$BUILD/kernelbrain-cuda-worker" "$BUILD/kernelbrain_kernel_prep" "$BUILD/tests/kernelbrain_gpu_tests" "$BUILD/bench/kb_gate_cost" "$BUILD/apps/kernelbrain/kernelbrain" \
  "$ROOT/.h200/new/"
strip "$ROOT/.h200/new/"*
if [ -n "${OLD:-}" ]; then
  mkdir -p "$ROOT/.h200/old"
  cp "$OLD/build/h200/kernelbrain-cuda-worker" "$OLD/build/h200/bench/kb_gate_cost" "$ROOT/.h200/old/"
  strip "$ROOT/.h200/old/"*
  rm -rf "$ROOT/.h200/old/cuda_problems" && cp -r "$OLD/examples/cuda_problems" "$ROOT/.h200/old/cuda_problems"
fi
grep -q '^/.h200/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.h200/' >> "$ROOT/.git/info/exclude"
du -sh "$ROOT/.h200"
