#!/usr/bin/env bash
# Issue 26 on the GPU in one call, after the backends moved to one folder each (backends/<name>/,
# isolation/), the CUDA worker was split into src/cuda_worker/, and the architecture table and the Nsight
# Compute rules became data. Programs built on the development machine (tools/build-for-h200.sh):
# .h200/new = this tree; .h200/old = built at bf1c014, before the backend registry. The three gpu-labelled
# ctest tests run directly (gpu.cuda_backend = kernelbrain_gpu_tests, gpu.references_vs_float64,
# gpu.side_by_side_agreement, as tests/CMakeLists.txt defines them), then the same 30-device-second softmax
# search (default strategy, seed 1) with the old and the new CLI, each with its own compile cache, and one
# and both workers' --version (the worker's modes: serve, sanitize, profile-once are the gpu tests' own). A table last; logs in $OUT/logs.tgz.
set -u
ROOT=$(pwd)
NEWD=$ROOT/.h200/new
OLDD=$ROOT/.h200/old
mkdir -p "$OUT/l"
L=$OUT/l
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; } > "$L/env.txt" 2>&1
T0=$(date +%s)
export KERNELBRAIN_CUDA_WORKER=$NEWD/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$NEWD/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems
timeout 300 "$NEWD/kernelbrain_gpu_tests" > "$L/gpu.cuda_backend.log" 2>&1; r1=$?
timeout 200 python3 bench/side_by_side.py --kernels-from-catalogue --check-only --references --tiers smoke,odd --no-compile > "$L/gpu.references_vs_float64.log" 2>&1; r2=$?
grep -qE "[1-9][0-9]* failed or errored" "$L/gpu.references_vs_float64.log" && r2=1
PYTHON=python3 timeout 150 bash bench/check_side_by_side_agreement.sh --prep "$NEWD/kernelbrain_kernel_prep" > "$L/gpu.side_by_side_agreement.log" 2>&1; r3=$?
T1=$(date +%s)
unset KERNELBRAIN_CUDA_WORKER
for v in OLD NEW; do
  d=${v}D; cli=${!d}/kernelbrain
  KERNELBRAIN_CACHE_DIR=$OUT/cache-$v timeout 130 "$cli" tune "$ROOT/examples/cuda_problems/softmax" --backend cuda \
    --budget 30s --wall 110 --seed 1 --journal "$L/softmax-$v.jsonl" > "$L/softmax-$v.log" 2>&1
  echo "$v rc $?" >> "$L/rc.txt"
done
"$NEWD/kernelbrain" list-backends > "$L/list-backends.txt" 2>&1
for v in OLD NEW; do d=${v}D; echo "$v worker: $(${!d}/kernelbrain-cuda-worker --version 2>&1 | tr "\n" " ")"; done > "$L/versions.txt"
T2=$(date +%s)
echo "== $(grep -m1 NVIDIA "$L/env.txt")"
echo "gpu.cuda_backend rc $r1: $(grep -E 'test cases' "$L/gpu.cuda_backend.log")"
echo "gpu.references_vs_float64 rc $r2: $(tail -1 "$L/gpu.references_vs_float64.log")"
echo "gpu.side_by_side_agreement rc $r3: $(tail -1 "$L/gpu.side_by_side_agreement.log")"
echo "tests $((T1-T0)) s, searches $((T2-T1)) s"
echo "| CLI | best family | params | speedup | device s | wall s | evaluations | stop |"
echo "|---|---|---|---|---|---|---|---|"
for v in OLD NEW; do
  l=$L/softmax-$v.log
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$v" "$(awk '/^    family/{print $2; exit}' "$l")" \
    "$(awk '/^    params/{print $2; exit}' "$l")" "$(awk '/^    speedup/{print $2; exit}' "$l")" \
    "$(awk '/^  device seconds/{print $3; exit}' "$l")" "$(awk '/^  wall seconds/{print $3; exit}' "$l")" \
    "$(awk '/^  evaluations/{print $2; exit}' "$l")" "$(awk -F'  +' '/^  stop reason/{print $3; exit}' "$l")"
done
cat "$L/rc.txt" "$L/versions.txt" "$L/list-backends.txt"
gzip -f "$L"/*.jsonl 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$OUT" l
rm -rf "$OUT"/cache-* "$L"
