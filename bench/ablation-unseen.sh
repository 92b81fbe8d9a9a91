#!/usr/bin/env bash
# The ablation of bench/ablation-replay.sh on recordings that no design decision saw (issue 28: the
# "new recordings" table). Each recording's budget follows bench/recordings' rule as it stands now: twice
# what exhaustive's one sweep of every recorded point at its one rung costs (measured here with
# `ablate --strategies exhaustive --seeds 1 --budget 100000s`, rounded up to a whole second); the
# nine budgets of bench/ablation-replay.sh are 1.8-2.1x their sweeps since replay charges once.
#   bench/ablation-unseen.sh KERNELBRAIN SEEDS RECORDING.jsonl.gz...   (the table on stdout)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The problems of bench/unseen are in no built-in folder: replay looks them up here (the others as usual).
export KERNELBRAIN_CUDA_PROBLEMS=${KERNELBRAIN_CUDA_PROBLEMS:-$ROOT/bench/unseen}
K=$1 SEEDS=$2
shift 2
STRATEGIES=${STRATEGIES:-default,exhaustive,random,sha,hyperband}
first=1
for rec in "$@"; do
  sweep=$("$K" ablate "$rec" --backend replay --seeds 1 --strategies exhaustive --budget 100000s |
    awk -F'|' '/^\| [^ ]+ \| exhaustive \|/ {gsub(/ /, "", $8); print $8}')
  b=$(python3 -c "import math; print(math.ceil(2 * float('$sweep')))")s
  out=$("$K" ablate "$rec" --backend replay --seeds "$SEEDS" --strategies "$STRATEGIES" --budget "$b")
  p=$(echo "$out" | awk -F'|' '/^\| [^ ]+ \| exhaustive \|/ {gsub(/ /, "", $2); print $2}')
  if [ $first = 1 ]; then
    echo "$out" | sed -n '/^| problem/,/^|---/p' | sed 's/^| problem |/| problem (budget) |/'
    first=0
  fi
  echo "$out" | grep -E "^\| $p \|" | sed "s/^| $p |/| $p ($b) |/"
  notes+="$p: one exhaustive sweep costs $sweep s; "$(echo "$out" | grep -E "^best of" || true)$'\n'
done
echo
echo "$out" | sed -n '/^final best:/,/^device s: /p'
printf '%s' "$notes"
