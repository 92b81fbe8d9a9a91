#!/usr/bin/env bash
# Issue 27: where the synthetic space runs out. The default strategy with a budget it cannot spend
# (20,000 evaluations, --in-flight 16, as issue 14's runs) on landscapes 1, 2, 3 and 7, seeds 1 and 2:
# the stop reason and the evaluations made, from each run's summary. Then the other strategies on
# landscape 7, whose runs also end on the space. (The space: 3 families of 368, 368 and 1,472 points.)
# Usage, from the repository root: bash bench/runs/2026-12-06-issue27-mpi/exhaustion.sh [kernelbrain]
set -uo pipefail
K=${1:-build/ci/apps/kernelbrain/kernelbrain}
exec > >(tee bench/runs/2026-12-06-issue27-mpi/exhaustion.txt) 2>&1
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit: $(git rev-parse --short HEAD); $("$K" --version | head -1)"
summary() { grep -E '^  (evaluations|stop reason|candidates) ' | sed -E 's/^ +//; s/  +/: /' | paste -sd ';' | sed 's/;/; /g'; }
for land in 1 2 3 7; do
  for seed in 1 2; do
    echo "synthetic:$land seed $seed default: $("$K" tune "synthetic:$land" --seed "$seed" --budget 20000evals --in-flight 16 --no-progress 2>&1 | summary)"
  done
done
for strategy in random exhaustive sha hyperband default-one-rung; do
  echo "synthetic:7 seed 1 $strategy: $("$K" tune synthetic:7 --strategy "$strategy" --budget 20000evals --in-flight 16 --no-progress 2>&1 | summary)"
done
