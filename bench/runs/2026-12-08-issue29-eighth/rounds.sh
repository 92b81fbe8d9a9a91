#!/usr/bin/env bash
# Issue 29, eighth session: one device call that steps both campaign folders once (the sixth session's
# running campaigns, then the ablation pairs), with the programs of tools/build-for-h200.sh and the pinned CLIs
# (.h200, carried). Each folder comes back as its own archive: $OUT/campaign.tgz (extract over
# bench/runs/2026-12-07-issue29-campaign) and $OUT/ablation.tgz (over bench/runs/2026-12-07-issue29-ablation).
#   CAMPAIGN_SECONDS (default 280), ABLATION_SECONDS (default 280): each folder's share of the call.
#   CAMPAIGNS / PAIRS: the campaigns to step in each folder (default: all that still run).
# The tracked tree is about 46 MB and the device call carries at most 64 MiB, so .h200 (32 MB) travels as
# .h200pack/h200.tar.xz (5 MB; `tar cJf .h200pack/h200.tar.xz .h200`, .h200pack ignored by git) and is
# unpacked here when there.
set -u
cd "$(dirname "$0")/../../.."
[ -f .h200pack/h200.tar.xz ] && tar xJf .h200pack/h200.tar.xz
R=bench/runs/2026-12-07-issue29-campaign/round.sh
CAMPAIGNS=${CAMPAIGNS:-"resnext-default tf32-default sdpa32-default lrd-blind sdpa16-default sdpa16-blind"}
PAIRS=${PAIRS:-"lrd-default lrd-blind sdpa16-default sdpa16-blind"}
if [ -n "$CAMPAIGNS" ]; then
  STEP_FORCE=1 ROUND_TIMEOUT=${ROUND_TIMEOUT:-90} CALL_SECONDS=${CAMPAIGN_SECONDS:-280} bash $R $CAMPAIGNS
  [ -f "$OUT/campaigns.tgz" ] && mv "$OUT/campaigns.tgz" "$OUT/campaign.tgz"
fi
if [ -n "$PAIRS" ]; then
  CAMPAIGNS_DIR=bench/runs/2026-12-07-issue29-ablation STEP_FORCE=1 ROUND_TIMEOUT=${ROUND_TIMEOUT:-90} \
    CALL_SECONDS=${ABLATION_SECONDS:-280} bash $R $PAIRS
  [ -f "$OUT/campaigns.tgz" ] && mv "$OUT/campaigns.tgz" "$OUT/ablation.tgz"
fi
ls -la "$OUT"
