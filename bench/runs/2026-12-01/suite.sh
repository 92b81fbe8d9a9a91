#!/usr/bin/env bash
# The CUDA suite after the gate changes of issue 8 (2026-12-01), on one H200, in two device calls:
#   PART=1 bash bench/runs/2026-12-01/suite.sh      PART=2 bash bench/runs/2026-12-01/suite.sh
# = bench/run-gpu with the programs of tools/build-for-h200.sh (KB_PREBUILT), one search per problem
# focused on its headline (largest) shape with the same wall limits as the 2026-11-29 run
# (bench/runs/2026-11-29-final/final.sh), PyTorch eager side by side (no torch.compile: device time).
# Logs are packed into $OUT/logs.tgz.
set -u
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export KERNELBRAIN_CACHE_DIR=/tmp/kbcache
case "${PART:-1}" in
  1) ENTRIES="softmax@4096x393216=45 group_conv@dw_16x64x512x512=45 rmsnorm=35 matvec=30 sdpa_fp16=40" ;;
  2) ENTRIES="linear_relu_div@1024x8192x8192=45 linear_relu_div_tf32@1024x8192x8192=40 linear_relu_div_3xtf32@1024x8192x8192=45 sdpa@32x32x512x1024=50 sdpa_3xtf32@32x32x512x1024=50" ;;
  *) echo "PART is 1 or 2"; exit 2 ;;
esac
KB_PREBUILT=${KB_PREBUILT:-$PWD/.h200/new} KB_COMPILE=0 KB_BUDGET=${KB_BUDGET:-40s} KB_SBS_TIMEOUT=${KB_SBS_TIMEOUT:-200} \
  KB_PROBLEMS=${KB_PROBLEMS:-$ENTRIES} OUT=$OUT bash bench/run-gpu > "$OUT/run-gpu.txt" 2>&1
cp "$OUT/logs/env.txt" "$OUT/env.txt" 2>/dev/null
(cd "$OUT" && tar czf logs.tgz logs best && rm -rf logs best)
tail -60 "$OUT/run-gpu.txt"
