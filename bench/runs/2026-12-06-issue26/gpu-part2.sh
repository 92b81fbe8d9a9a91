#!/usr/bin/env bash
# Issue 26 on the GPU, part 2: the same 30-device-second softmax search (default strategy, seed 1) with
# the CLI from before the backend registry (.h200/old: built at bf1c014, CUDA path unchanged since) and
# with this tree's (build/gpu from part 1), alternated twice, each with its own compile cache; then the
# `list-backends` of the new CLI. Logs to $OUT; a table last.
set -u
ROOT=$(pwd)
NEW=$ROOT/build/gpu/apps/kernelbrain/kernelbrain
OLD=$ROOT/.h200/old/kernelbrain
mkdir -p "$OUT"
export KERNELBRAIN_CUDA_PROBLEMS=$ROOT/examples/cuda_problems
for round in 1 2; do
  for v in OLD NEW; do
    cli=${!v}
    j=$OUT/softmax-$v-$round.jsonl
    KERNELBRAIN_CACHE_DIR=$OUT/cache-$v-$round timeout 200 "$cli" tune "$ROOT/examples/cuda_problems/softmax" --backend cuda \
      --budget 30s --wall 150 --seed 1 --journal "$j" > "$OUT/softmax-$v-$round.log" 2>&1
    echo "$v round $round rc $?"
  done
done
"$NEW" list-backends > "$OUT/list-backends.txt" 2>&1
echo "| CLI | round | best family | params | speedup | device s | wall s | evaluations |"
echo "|---|---|---|---|---|---|---|---|"
for round in 1 2; do for v in OLD NEW; do
  l=$OUT/softmax-$v-$round.log
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$v" "$round" \
    "$(awk '/^    family/{print $2; exit}' "$l")" "$(awk '/^    params/{print $2; exit}' "$l")" \
    "$(awk '/^    speedup/{print $2; exit}' "$l")" "$(awk '/^  device seconds/{print $3; exit}' "$l")" \
    "$(awk '/^  wall seconds/{print $3; exit}' "$l")" "$(awk '/^  evaluations/{print $2; exit}' "$l")"
done; done
cat "$OUT/list-backends.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls softmax-* list-backends.txt) 2>/dev/null
rm -rf "$OUT"/cache-* "$OUT"/softmax-*.jsonl
