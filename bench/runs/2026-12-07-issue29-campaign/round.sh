#!/usr/bin/env bash
# One campaign round on the GPU machine for each campaign named (issue 29): `tools/campaign.py step`, with
# the programs of tools/build-for-h200.sh (.h200/new, carried). The campaign folders come back in
# $OUT/campaigns.tgz (extract over bench/runs/2026-12-07-issue29-campaign/ here). ROUND_TIMEOUT: seconds
# per campaign step (default 170). CALL_SECONDS (default 580): a step is not started unless ROUND_TIMEOUT
# seconds are left before it (the device call's limit), so a call never cuts a step short; the campaigns left
# over are named at the end. STEP_FORCE=1: step with the answers there are (some prompts unanswered).
# CAMPAIGNS_DIR: the folder of the campaigns named (default this one; the ablation pairs are in
# bench/runs/2026-12-07-issue29-ablation).
#   bash bench/runs/2026-12-07-issue29-campaign/round.sh linear_relu_div sdpa_fp16
set -u
ROOT=$(pwd)
C=${CAMPAIGNS_DIR:-bench/runs/2026-12-07-issue29-campaign}
BIN=$ROOT/.h200/new
export KERNELBRAIN_CUDA_WORKER=$BIN/kernelbrain-cuda-worker KERNELBRAIN_KERNEL_PREP=$BIN/kernelbrain_kernel_prep
export KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems KERNELBRAIN_PYTHON=none
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
T0=$(date +%s)
LEFT=()
for p in "$@"; do
  if [ $(( $(date +%s) - T0 + ${ROUND_TIMEOUT:-170} )) -gt "${CALL_SECONDS:-580}" ]; then LEFT+=("$p"); continue; fi
  export KERNELBRAIN_CACHE_DIR=$OUT/cache-$p
  timeout "${ROUND_TIMEOUT:-170}" python3 tools/campaign.py step ${STEP_FORCE:+--force} "$C/$p"
  echo "step $p rc $?"
  python3 tools/campaign.py status "$C/$p" | tail -12
  tar czf "$OUT/campaigns.tgz" -C "$C" "$@"  # after each step: a call cut short keeps what was done
done
rm -rf "$OUT"/cache-*
[ ${#LEFT[@]} -eq 0 ] || echo "not stepped (no time left in this call): ${LEFT[*]}"
