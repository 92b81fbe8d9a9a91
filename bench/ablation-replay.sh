#!/usr/bin/env bash
# The ablation of docs/results.md ("Ablations on recorded H200 landscapes"): every strategy on every
# recorded CUDA problem (bench/recordings), replayed, 10 seeds, each problem under one device-time
# budget for all strategies: what exhaustive needs to sweep every recorded point once at its one rung
# (so that exhaustive always finishes; measured with `kernelbrain ablate REC --strategies exhaustive
# --seeds 1 --budget 100000s`, rounded up). Those sweeps were measured while replay charged every rung
# measurement twice (issue 28); charged once, a sweep costs 50-55% of its budget (the budgets are kept,
# bench/runs/2026-12-06-ablation-replay/exhaustive-sweep.txt; since the checks are done once per candidate and
# shape, 47-51%). Seconds on two cores; no GPU. bench/ablation_ratios.py turns the output into device seconds
# to 5% over exhaustive's; bench/ablation_lopo.py checks a choice among variants leave-one-problem-out.
#   bench/ablation-replay.sh [KERNELBRAIN] [SEEDS] [STRATEGIES]   (the table on stdout)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=${1:-$ROOT/build/release/apps/kernelbrain/kernelbrain}
SEEDS=${2:-10}
STRATEGIES=${3:-default,exhaustive,random,sha,hyperband}
budgets="softmax:60s rmsnorm:95s matvec:52s linear_relu_div:103s linear_relu_div_tf32:163s group_conv:174s
  sdpa:564s sdpa_3xtf32:608s sdpa_fp16:13s"
first=1
for pb in $budgets; do
  p=${pb%%:*} b=${pb#*:}
  out=$("$K" ablate "$ROOT/bench/recordings/$p.jsonl.gz" --backend replay --seeds "$SEEDS" --strategies "$STRATEGIES" --budget "$b")
  if [ $first = 1 ]; then
    echo "$out" | sed -n '/^| problem/,/^|---/p' | sed 's/^| problem |/| problem (budget) |/'
    first=0
  fi
  echo "$out" | grep -E "^\| $p \|" | sed "s/^| $p |/| $p ($b) |/"
  notes+=$(echo "$out" | grep -E "^best of" || true)$'\n'
done
echo
echo "$out" | sed -n '/^final best:/,/^device s: /p'
printf '%s' "$notes"
