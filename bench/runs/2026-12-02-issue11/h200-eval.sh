#!/usr/bin/env bash
# kernelbrain eval on the H200 (issue 11's tool, CUDA side): a model-written softmax (an exchange answer
# file from the issue-10 run, evaluated as it is) and a deliberately wrong one (zeros.md).
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
for c in model-cluster-softmax.md zeros.md; do
  timeout 120 $K eval softmax "$HERE/$c" --backend cuda > "$OUT/logs/eval-$c.log" 2>&1
  echo "== eval $c: exit $? ($(( $(date +%s) - t0 )) s)"
  grep -vE "^\s*$" "$OUT/logs/eval-$c.log" | cut -c1-220 | head -24
done
tar czf "$OUT/issue11-eval.tar.gz" -C "$OUT" logs
