#!/usr/bin/env bash
# Issue 29 item 2's "others" (softmax, rmsnorm, matvec, depthwise): one round of each campaign in
# bench/runs/2026-12-08-issue29-others, on whatever card the call gets (a fresh journal binds to it). Comes back
# as $OUT/others.tgz (extract over that folder). OTHERS_SECONDS (default 280): this script's share of the call.
set -u
cd "$(dirname "$0")/../../.."
[ -f .h200pack/h200.tar.xz ] && [ ! -x .h200/new/kernelbrain-cuda-worker ] && tar xJf .h200pack/h200.tar.xz
CAMPAIGNS_DIR=bench/runs/2026-12-08-issue29-others STEP_FORCE=1 ROUND_TIMEOUT=${ROUND_TIMEOUT:-70} \
  CALL_SECONDS=${OTHERS_SECONDS:-280} bash bench/runs/2026-12-07-issue29-campaign/round.sh \
  ${OTHERS:-softmax-default rmsnorm-default matvec-default depthwise-default}
[ -f "$OUT/campaigns.tgz" ] && mv "$OUT/campaigns.tgz" "$OUT/others.tgz"
