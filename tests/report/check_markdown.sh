#!/usr/bin/env bash
# kernelbrain report --markdown on the committed GPU journals of bench/runs/2026-12-06-issue27 gives exactly
# the committed tables (tables.md, which docs/results.md quotes): the published figures are generated from
# journals, and a change to how they are computed shows up here.
#   tests/report/check_markdown.sh CLI   (run from anywhere; paths are the repository's)
set -euo pipefail
CLI=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
DIR=bench/runs/2026-12-06-issue27
if [ ! -d $DIR/journals ]; then
  echo "SKIPPED: no GPU journals committed in $DIR/journals yet (they come from gpu-run.sh on the GPU machine)"
  exit 77
fi
# The journals in name order, as collect.sh gives them when it makes tables.md.
mapfile -t journals < <(ls $DIR/journals/*.jsonl | sort)
got=$("$CLI" report "${journals[@]}" --markdown -o -)
if ! diff -u $DIR/tables.md <(printf '%s\n' "$got"); then
  echo "FAIL: report --markdown differs from $DIR/tables.md (above)"
  exit 1
fi
for want in "vs eager" "vs torch.compile" "Over PyTorch eager:" "Over torch.compile:"; do
  grep -qF "$want" <<<"$got" || { echo "FAIL: the tables do not say '$want'"; exit 1; }
done
echo "report.markdown: OK: $(grep -c '^| ' <<<"$got") table lines, identical to $DIR/tables.md"
