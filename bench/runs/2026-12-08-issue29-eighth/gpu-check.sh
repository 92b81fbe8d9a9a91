#!/usr/bin/env bash
# Issue 29, eighth session: the three gpu-labelled tests of tests/CMakeLists.txt at this tree, run directly with
# the programs of tools/build-for-h200.sh (gpu.cuda_backend = kernelbrain_gpu_tests; gpu.references_vs_float64;
# gpu.side_by_side_agreement), then (SIDE=1) a PyTorch side by side of the campaigns' best kernels
# (best.json of each campaign named in SIDE_CAMPAIGNS). Logs in $OUT/gpu-check.tgz; a summary last.
set -u
cd "$(dirname "$0")/../../.."
ROOT=$PWD
[ -f .h200pack/h200.tar.xz ] && [ ! -x .h200/new/kernelbrain_gpu_tests ] && tar xJf .h200pack/h200.tar.xz
# kernelbrain_gpu_tests finds the problems under the source folder it was built in (KB_SOURCE_DIR).
# That folder is read from the test sources' paths compiled into it; where it is not this tree, a link makes it so.
SRC=$(strings .h200/new/kernelbrain_gpu_tests | grep -m1 -E '^/.*/tests/gpu/test_[a-z_]+[.]cpp$' | sed 's#/tests/gpu/.*##')
[ -n "$SRC" ] && [ ! -e "$SRC" ] && { mkdir -p "$(dirname "$SRC")"; ln -s "$ROOT" "$SRC"; }
NEWD=$ROOT/.h200/new
L=$OUT/l
mkdir -p "$L"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; } > "$L/env.txt" 2>&1
export KERNELBRAIN_CUDA_WORKER=$NEWD/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$NEWD/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=$OUT/cache-tests KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems KERNELBRAIN_PYTHON=none
T0=$(date +%s)
timeout 300 "$NEWD/kernelbrain_gpu_tests" > "$L/gpu.cuda_backend.log" 2>&1; r1=$?
T1=$(date +%s)
timeout 200 python3 bench/side_by_side.py --kernels-from-catalogue --check-only --references --tiers smoke,odd --no-compile > "$L/gpu.references_vs_float64.log" 2>&1; r2=$?
grep -qE "[1-9][0-9]* failed or errored" "$L/gpu.references_vs_float64.log" && r2=1
T2=$(date +%s)
PYTHON=python3 timeout 150 bash bench/check_side_by_side_agreement.sh --prep "$NEWD/kernelbrain_kernel_prep" > "$L/gpu.side_by_side_agreement.log" 2>&1; r3=$?
T3=$(date +%s)
if [ "${SIDE:-0}" = 1 ]; then
  extra=""
  for c in ${SIDE_CAMPAIGNS:-}; do [ -f "$c/best.json" ] && extra="$extra $ROOT/$c/best.json"; done
  KB_EXTRA_KERNELS="$extra" KB_PREBUILT=$NEWD KB_COMPILE=1 KB_BUDGET=${KB_BUDGET:-10s} KB_WALL=${KB_WALL:-15} \
    KB_SBS_TIMEOUT=${KB_SBS_TIMEOUT:-200} KB_PROBLEMS=${KB_PROBLEMS:-"sdpa_fp16@1x32x16384x128=15"} OUT=$OUT/side \
    timeout ${SIDE_TIMEOUT:-300} bash bench/run-gpu > "$L/run-gpu.txt" 2>&1
  [ -f "$OUT/side/side_by_side.json" ] && python3 bench/issue29_goals.py "$OUT/side/side_by_side.json" > "$L/goals.md" 2>&1
  cp "$OUT/side/side_by_side.json" "$L/" 2>/dev/null
  rm -rf "$OUT/side"
fi
echo "== $(grep -m2 -E 'NVIDIA|torch' "$L/env.txt" | tr '\n' ' ')"
echo "gpu.cuda_backend rc $r1 ($((T1-T0)) s): $(grep -E 'test cases' "$L/gpu.cuda_backend.log")"
echo "gpu.references_vs_float64 rc $r2 ($((T2-T1)) s): $(tail -1 "$L/gpu.references_vs_float64.log")"
echo "gpu.side_by_side_agreement rc $r3 ($((T3-T2)) s): $(tail -1 "$L/gpu.side_by_side_agreement.log")"
[ -f "$L/goals.md" ] && cat "$L/goals.md"
tar czf "$OUT/gpu-check.tgz" -C "$OUT" l
rm -rf "$OUT"/cache-* "$L"
