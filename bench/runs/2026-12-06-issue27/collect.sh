#!/usr/bin/env bash
# After gpu-run.sh: unpack the logs-<problem>.tgz archives the device call returned (FILES_AT), keep the
# journals in journals/ (report.markdown and report.browser read them) and the logs in logs/, and make
# tables.md with `kernelbrain report --markdown` (the tables docs/results.md quotes).
#   bench/runs/2026-12-06-issue27/collect.sh FILES_AT [KERNELBRAIN]
set -euo pipefail
FROM=$1
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
K=${2:-$ROOT/build/release/apps/kernelbrain/kernelbrain}
DIR=bench/runs/2026-12-06-issue27
cd "$ROOT"
tmp=$(mktemp -d)
for a in "$FROM"/logs-*.tgz; do tar xzf "$a" -C "$tmp"; done
mkdir -p $DIR/journals $DIR/logs
for p in softmax linear_relu_div sdpa_fp16; do
  [ -f "$tmp/l/$p.jsonl" ] && cp "$tmp/l/$p.jsonl" $DIR/journals/
done
find "$tmp/l" -maxdepth 1 -type f ! -name '*.jsonl' -exec cp {} $DIR/logs/ \;
rm -rf "$tmp"
mapfile -t journals < <(ls $DIR/journals/*.jsonl | sort)
"$K" report "${journals[@]}" --markdown -o - > $DIR/tables.md
ls -la $DIR/journals $DIR/logs
