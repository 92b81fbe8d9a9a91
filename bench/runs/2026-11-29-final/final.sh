#!/usr/bin/env bash
# The second full CUDA-suite run of 2026-11-29 (issue 4): bench/run-gpu over both GPUs of an
# nvidia-h200-x2 lease, focused searches where families diverge by shape, PyTorch side by side
# with torch.compile. Logs are packed into $OUT/logs.tgz (the device tool returns few files).
# Entries: problem[@focus shapes][=wall seconds]; shapes whose best families differ (a depthwise
# and a grouped convolution, a small and a large GEMM) get their own searches.
set -u
cd "$(dirname "$0")/.."
export KERNELBRAIN_CACHE_DIR=/tmp/kbcache
KB_SKIP_TESTS=${KB_SKIP_TESTS:-1} KB_COMPILE=1 KB_WALL=${KB_WALL:-45} KB_BUDGET=${KB_BUDGET:-40s} KB_SBS_TIMEOUT=${KB_SBS_TIMEOUT:-170} \
KB_PROBLEMS=${KB_PROBLEMS:-"softmax@4096x393216=45 softmax@16x16384,4096x65536=30 group_conv@dw_16x64x512x512=45 group_conv@resnext_32x256x56x56_g32=45 sdpa_fp16=40 group_conv@dw_16x3x256x256=25 sdpa=50 linear_relu_div@1024x8192x8192=45 rmsnorm=35 linear_relu_div@128x512x1024=25 linear_relu_div_tf32@1024x8192x8192=40 linear_relu_div_3xtf32@1024x8192x8192=45 linear_relu_div_tf32@128x512x1024=25 linear_relu_div_3xtf32@128x512x1024=25 matvec=30 sdpa_3xtf32=50"} \
  OUT=$OUT bash bench/run-gpu > "$OUT/run-gpu.txt" 2>&1
cp "$OUT/logs/env.txt" "$OUT/env.txt" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz logs best && rm -rf logs best)
tail -100 "$OUT/run-gpu.txt"
