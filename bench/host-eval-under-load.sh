#!/usr/bin/env bash
# The catalogue kernels of the three host problems while every core is busy compiling (issue 24: a
# timing check that an honest kernel can fail is a bug):
#   1. `kernelbrain record` of every admitted catalogue point of softmax, rmsnorm and matvec (POINTS=N:
#      the first N of the record's seeded sample of each space): the gate
#      (with the sanitizer stage for each family's first point) and every shape timed (3 samples after
#      a warm-up, the calls checked as a rung's are); every refusal is counted;
#   2. `kernelbrain eval` (the confirm rung: 30 samples at every timed shape) REPEATS times each of
#      the best kernels the README's main job found and the one issue 24 saw refused (BEST=0: not
#      these); with ALL=1 also each family's first and last point, with ALL=first its first.
# Prints one line per eval and the tables last.
#
#   bash bench/host-eval-under-load.sh [BUILD_DIR] [REPEATS] [OUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
repeats=${2:-5}
out=${3:-$(mktemp -d)}
cli=$build/apps/kernelbrain/kernelbrain
mkdir -p "$out/kernels"
here=$(cd "$(dirname "$0")" && pwd)

# The kernels for eval: instantiated from their family's template at the chosen points.
python3 "$here/host_load_kernels.py" "$root" "$out/kernels"

# The load: one compile loop per core, on the project's own sources.
load_pids=()
for i in $(seq 1 "$(nproc)"); do
  (while :; do c++ -std=c++20 -O2 -I"$root/include" -I"$root/strategies" -c "$root/tests/test_engine.cpp" \
      -o "$out/load$i.o" 2>/dev/null || true; done) &
  load_pids+=($!)
done
trap 'kill "${load_pids[@]}" 2>/dev/null || true' EXIT
sleep 2

# 1. Every catalogue point, gated and timed at every shape.
if [ "${RECORD:-1}" = 1 ]; then
  for prob in softmax rmsnorm matvec; do
    rm -f "$out/record-$prob.jsonl"
    "$cli" record "$prob" --backend host --samples 3 --warmup 1 ${POINTS:+--points "$POINTS"} --out "$out/record-$prob.jsonl" \
      >"$out/record-$prob.log" 2>&1 || echo "record $prob exited $?" >>"$out/record-$prob.log"
    tail -1 "$out/record-$prob.log"
  done
fi

# 2. The chosen kernels through eval, REPEATS times each.
: >"$out/evals.txt"
for src in "$out"/kernels/*.cpp; do
  name=$(basename "$src" .cpp)
  prob=${name%%__*}
  for k in $(seq 1 "$repeats"); do
    set +e
    "$cli" eval "$prob" "$src" --seed "$k" >"$out/eval.log" 2>&1
    rc=$?
    set -e
    verdict=$(grep -m1 '^  verdict' "$out/eval.log" | sed 's/^  verdict *//')
    speedup=$(grep -m1 '^  speedup' "$out/eval.log" | awk '{print $2}')
    echo "$name seed=$k rc=$rc verdict=${verdict:0:160} speedup=${speedup:--}" | tee -a "$out/evals.txt"
    [ "$rc" = 0 ] || cp "$out/eval.log" "$out/failed-$name-$k.log"
  done
done
kill "${load_pids[@]}" 2>/dev/null || true

echo
if [ "${RECORD:-1}" = 1 ]; then
  echo "| problem | points recorded | gate passed | shapes timed | shapes refused |"
  echo "|---|---|---|---|---|"
  for prob in softmax rmsnorm matvec; do python3 "$here/host_load_kernels.py" --summary "$out/record-$prob.jsonl" "$prob"; done
  echo
fi
echo "| kernel | evals passed | speedups |"
echo "|---|---|---|"
awk '{ n[$1]++; if ($3 == "rc=0") ok[$1]++; for (i = 1; i <= NF; i++) if ($i ~ /^speedup=/) sp[$1] = sp[$1] (sp[$1] ? ", " : "") substr($i, 9) }
     END { for (k in n) printf "| %s | %d/%d | %s |\n", k, ok[k] + 0, n[k], sp[k] }' "$out/evals.txt" | sort
awk '$3 == "rc=0" { ok++ } { all++ } END { printf "\n%d of %d evals passed\n", ok, all }' "$out/evals.txt"
