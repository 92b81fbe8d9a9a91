#!/usr/bin/env bash
# Issue 27 on the GPU: the search measures PyTorch itself. One device call per part (a call is at most 10
# minutes), each self-contained:
#   PART=softmax | linear_relu_div | sdpa_fp16: `kernelbrain tune` of that CUDA problem (default strategy, seed 1,
#     20 device seconds, --wall 240, so PyTorch's measurement may take 80 s), which times PyTorch eager and torch.compile with its baseline; then
#     bench/side_by_side.py on the search's best kernels (--best-out), 30 samples, in the same call on the same
#     card; then bench/check_pytorch_agreement.py (the search's PyTorch medians against side_by_side.py's).
#     PART=linear_relu_div also runs `kernelbrain eval` of the committed kernel kernels/softmax-46c7601e.cu;
#     PART=softmax the gpu test case that checks the PyTorch baseline (tests/gpu/test_cuda_backend.cpp).
# Programs built here with tools/build-for-h200.sh (.h200/new). Logs and journals come back in $OUT/logs.tgz.
set -u
PART=${PART:?PART=softmax|linear_relu_div|sdpa_fp16}
ROOT=$(pwd)
NEWD=$ROOT/.h200/new
HERE=$ROOT/bench/runs/2026-12-06-issue27
L=$OUT/l
mkdir -p "$L"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > "$L/env-$PART.txt" 2>&1
export KERNELBRAIN_CUDA_WORKER=$NEWD/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$NEWD/kernelbrain_kernel_prep
export KERNELBRAIN_CACHE_DIR=$OUT/cache KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems
T0=$(date +%s)
timeout 250 "$NEWD/kernelbrain" tune "$ROOT/examples/cuda_problems/$PART" --backend cuda --budget 20s --wall 240 \
  --seed 1 --journal "$L/$PART.jsonl" --best-out "$L/$PART.best.json" > "$L/tune-$PART.log" 2>&1
echo "tune rc $?" > "$L/rc-$PART.txt"
T1=$(date +%s)
timeout 110 python3 bench/side_by_side.py --prep "$NEWD/kernelbrain_kernel_prep" --kernels "$L/$PART.best.json" \
  --samples 30 --out "$L/sbs-$PART.json" > "$L/sbs-$PART.log" 2>&1
echo "side_by_side rc $?" >> "$L/rc-$PART.txt"
python3 bench/check_pytorch_agreement.py "$L/$PART.jsonl" --side-by-side "$L/sbs-$PART.json" > "$L/agreement-$PART.txt" 2>&1
echo "agreement rc $?" >> "$L/rc-$PART.txt"
T2=$(date +%s)
if [ "$PART" = linear_relu_div ]; then
  timeout 120 "$NEWD/kernelbrain" eval softmax "$HERE/kernels/softmax-46c7601e.cu" --plan "$HERE/kernels/softmax-46c7601e.plan.json" \
    --backend cuda > "$L/eval-softmax.log" 2>&1
  echo "eval rc $?" >> "$L/rc-$PART.txt"
fi
if [ "$PART" = softmax ]; then
  KERNELBRAIN_PYTHON=none timeout 110 "$NEWD/kernelbrain_gpu_tests" -tc="*PyTorch*" > "$L/gpu-test-pytorch.log" 2>&1
  echo "gpu test rc $?" >> "$L/rc-$PART.txt"
fi
T3=$(date +%s)
echo "== $(grep -m1 NVIDIA "$L/env-$PART.txt") | $(grep -m1 torch "$L/env-$PART.txt")"
echo "tune $((T1-T0)) s, side_by_side $((T2-T1)) s, rest $((T3-T2)) s"
cat "$L/rc-$PART.txt"
sed -n '/^kernelbrain tune/,$p' "$L/tune-$PART.log" | grep -v "^report:"
cat "$L/agreement-$PART.txt"
[ -f "$L/eval-softmax.log" ] && cat "$L/eval-softmax.log"
[ -f "$L/gpu-test-pytorch.log" ] && tail -4 "$L/gpu-test-pytorch.log"
tail -3 "$L/sbs-$PART.log"
tar czf "$OUT/logs-$PART.tgz" -C "$OUT" l
rm -rf "$OUT/cache" "$L"
