#!/usr/bin/env bash
# Issue 9, third device call: after the spin before each Python-timed call (bench/side_by_side.py),
# build what the two Python GPU tests need and run them (the C++ GPU tests are unchanged since part 2).
set -uo pipefail
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/out}; LOGS=$OUT/logs; mkdir -p "$LOGS"
t0=$(date +%s)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_BENCH=OFF > "$LOGS/configure.log" 2>&1
cmake --build build/release --target kernelbrain_cuda_worker kernelbrain_kernel_prep -j "$(nproc)" > "$LOGS/build.log" 2>&1 || { tail -20 "$LOGS/build.log"; exit 1; }
timeout 400 ctest --test-dir build/release -R "references_vs_float64|side_by_side_agreement" --output-on-failure > "$LOGS/ctest-agree.log" 2>&1
rc=$?
echo "== ctest -R references|agreement rc $rc, $(( $(date +%s) - t0 )) s =="
grep -E "Test +#|^ok|^FAIL|tests passed|tests failed" "$LOGS/ctest-agree.log" | tail -12
tar czf "$OUT/issue9-logs-agreement.tar.gz" -C "$OUT" logs && rm -rf "$LOGS"
