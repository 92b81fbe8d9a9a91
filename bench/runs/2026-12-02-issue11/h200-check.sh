#!/usr/bin/env bash
# kernelbrain check on the H200 (issue 11's tool, CUDA side): the CUDA problems of the issue-10 runs.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/logs"
t0=$(date +%s)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/logs/configure.log" 2>&1
cmake --build build/release -j "$(nproc)" --target kernelbrain_cli kernelbrain_cuda_worker > "$OUT/logs/build.log" 2>&1 || { grep -E "error" "$OUT/logs/build.log" | head; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
K=build/release/apps/kernelbrain/kernelbrain
for p in ${KB_PROBLEMS:-softmax linear_relu_div sdpa_fp16}; do
  timeout 150 $K check "$p" --backend cuda > "$OUT/logs/check-$p.log" 2>&1
  echo "== check $p: exit $? ($(( $(date +%s) - t0 )) s)"
  grep -vE "^\s*$" "$OUT/logs/check-$p.log" | cut -c1-200 | head -40
done
tar czf "$OUT/issue11-check.tar.gz" -C "$OUT" logs
