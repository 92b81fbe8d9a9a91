#!/usr/bin/env bash
# Issue 29, item 5: PyTorch side by side (eager and torch.compile, same process, same card) with the best
# kernels of short catalogue searches on this card: the problems that win today at their headline shapes, and
# every problem at the new shapes of bench/unseen (make.py says why each is realistic) and the sdpa_fp16 sweep.
# The problems that lose today come from the issue-29 campaigns (their best.json, KB_EXTRA_KERNELS). Programs of
# tools/build-for-h200.sh (.h200/new, carried). Logs and best kernels come back in $OUT/logs.tgz.
set -u
cd "$(dirname "$0")/../../.."
export KERNELBRAIN_CACHE_DIR=/tmp/kbcache KERNELBRAIN_PYTHON=none
export KERNELBRAIN_CUDA_PROBLEMS=$PWD/examples/cuda_problems
KB_PREBUILT=$PWD/.h200/new KB_COMPILE=1 KB_BUDGET=${KB_BUDGET:-15s} KB_WALL=${KB_WALL:-20} KB_SBS_TIMEOUT=${KB_SBS_TIMEOUT:-150} \
KB_PROBLEMS=${KB_PROBLEMS:-"softmax@4096x393216=20 softmax@16x16384,4096x65536=15 rmsnorm=20 matvec=15 group_conv@dw_16x64x512x512=20 group_conv@dw_16x3x256x256=12 softmax_vocab=15 rmsnorm_convnet=20 matvec_decode=15 group_conv_resnext_deep=20 linear_relu_div_llm=25 linear_relu_div_tf32_llm=25 sdpa_llm=25 sdpa_fp16_llm=20 sdpa_fp16_sweep=40"} \
  OUT=$OUT bash bench/run-gpu > "$OUT/run-gpu.txt" 2>&1
cp "$OUT/logs/env.txt" "$OUT/env.txt" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz logs best && rm -rf logs best)
python3 bench/issue29_goals.py "$OUT/side_by_side.json" > "$OUT/goals.md" 2>&1
tail -60 "$OUT/run-gpu.txt"; cat "$OUT/goals.md"
