#!/usr/bin/env bash
# Every answer file of one or more exchange folders through `kernelbrain eval` (the gate, then every shape
# against the reference), interleaved across the folders so that machine load falls on all alike; one
# Markdown row per answer: folder, answer, verdict (stage), overall speedup over the reference, and whether
# the source adds run-time instruction-set dispatch (__builtin_cpu_supports or target attributes).
#   bench/eval_answers.sh KERNELBRAIN PROBLEM DIR [DIR...]
set -uo pipefail
K=$1 P=$2
shift 2
declare -a lists
n=0
for d in "$@"; do
  mapfile -t files < <(ls "$d"/answer-*.md 2> /dev/null | sort)
  lists+=("${files[*]}")
  [ ${#files[@]} -gt $n ] && n=${#files[@]}
done
echo "| folder | answer | verdict | speedup | run-time ISA dispatch |"
echo "|---|---|---|---:|---|"
for ((i = 0; i < n; i++)); do
  for ((j = 0; j < $#; j++)); do
    read -r -a files <<< "${lists[$j]}"
    f=${files[$i]:-}
    [ -n "$f" ] || continue
    out=$("$K" eval "$P" "$f" 2>&1)
    verdict=$(awk '$1 == "verdict" {sub(/^ *verdict +/, ""); print; exit}' <<< "$out")
    speedup=$(awk '$1 == "speedup" && $3 == "over" {print $2; exit}' <<< "$out")
    dispatch=$(grep -qE '__builtin_cpu_supports|__attribute__\(\(target' "$f" && echo yes || echo no)
    echo "| $(basename "$(dirname "$(dirname "$f")")") | $(basename "$f" .md | sed 's/^answer-//') | ${verdict:-${out##*$'\n'}} | ${speedup:--} | $dispatch |"
  done
done
