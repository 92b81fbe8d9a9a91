#!/usr/bin/env bash
# Issue 27 (b): the search rank's rate (evaluations dispatched and applied per second, evaluators
# costing nothing) on a synthetic search that stops on its evaluation budget, not on an exhausted
# space. The synthetic landscape's space is fixed (3 families, 2,208 points); the default strategy
# runs out of it after 3,063-3,077 evaluations (landscapes 1, 2, 3, 7, seeds 1 and 2), so no budget
# above about 3,060 evaluations can be spent. Budgets here: 3000 evaluations (the largest that stops on
# the budget), 1000 (the same search earlier, to show how the rate changes), and 1 (the fixed costs:
# process start, the landscape, the baseline, MPI start). Each in one process and over 8 MPI ranks on
# loopback TCP (the command line of bench/runs/2026-12-02-issue14/pool-h200.sh, with --budget changed),
# in-flight 16 as there, journaled as there; then the 8-rank search at in-flight 64 and 256 (is the
# rate set by round trips, which a deeper queue overlaps?), and the in-flight-16 search over 2, 3 and
# 5 ranks (how the other ranks' share grows with their number). Three repetitions, interleaved.
# Evaluations, stop reason and wall seconds are read from each run's summary by summarize.py; the
# external wall time (date +%s.%N around the command) and how many of the machine's cores were busy
# meanwhile (/proc/stat, every process, ours and anyone else's) are written to run.txt, and each
# rank's CPU seconds (user + sys, GNU time, 0.01 s resolution; kernelbrain started under a bash -c
# that execs /usr/bin/time) to <run>.cpu.txt.
# Usage, from the repository root after building kernelbrain_cli:
#   bash bench/runs/2026-12-06-issue27-mpi/throughput.sh [build/ci/apps/kernelbrain/kernelbrain]
set -uo pipefail
K=${1:-build/ci/apps/kernelbrain/kernelbrain}
HERE=bench/runs/2026-12-06-issue27-mpi
LOGS=$HERE/throughput
mkdir -p "$LOGS"
rm -f "$LOGS"/*.txt
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2054  # "self,tcp" is one value of --mca btl
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo)
WORK=$(mktemp -d)
exec > >(tee "$LOGS/run.txt") 2>&1
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB; 8 ranks on $(nproc) cores are oversubscribed (--oversubscribe --bind-to none)"
echo "$(mpirun --version | head -1); $("$K" --version | head -1); build type: $(grep -m1 CMAKE_BUILD_TYPE "$(dirname "$K")/../../CMakeCache.txt" 2>/dev/null | cut -d= -f2)"
busy_ticks() {  # "busy total" jiffies over every core, from /proc/stat
  awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}
# Each rank's CPU seconds, one line per rank appended to $KB_CPU_LOG; the exit code is kernelbrain's.
# shellcheck disable=SC2016
TIMED='exec /usr/bin/time -a -o "$KB_CPU_LOG" -f "rank ${OMPI_COMM_WORLD_RANK:-0} user %U sys %S wall %e" "$@"'
# The machine is shared: before each run, wait (at most 10 minutes) for a second in which less than
# 0.3 of a core was busy, and write down how long that took and what was busy before.
wait_quiet() {
  local waited=0 b0 t0 b1 t1 busy
  while :; do
    read -r b0 t0 < <(busy_ticks)
    sleep 1
    read -r b1 t1 < <(busy_ticks)
    busy=$(python3 -c "print(f'{$(nproc) * ($b1 - $b0) / max(1, $t1 - $t0):.2f}')")
    if python3 -c "import sys; sys.exit(0 if $busy < 0.3 else 1)" || [ "$waited" -ge 600 ]; then break; fi
    waited=$((waited + 1))
  done
  echo "quiet_after_s=$waited cores_busy_before=$busy"
}
run_one() {  # NP IN_FLIGHT BUDGET REP
  local np=$1 fl=$2 budget=$3 rep=$4
  local name=np$np-f$fl-b$budget-r$rep
  local journal=$WORK/$name.jsonl
  local load busy quiet start end rc b0 t0 b1 t1 members
  busy=$(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | tr -s ' ' | paste -sd ';')
  quiet=$(wait_quiet)
  load=$(cut -d' ' -f1 /proc/loadavg)
  read -r b0 t0 < <(busy_ticks)
  start=$(date +%s.%N)
  export KB_CPU_LOG=$LOGS/$name.cpu.txt
  if [ "$np" = 1 ]; then
    bash -c "$TIMED" timed "$K" tune synthetic --budget "${budget}evals" --in-flight "$fl" --no-progress \
      --journal "$journal" > "$LOGS/$name.txt" 2>&1
  else
    "${MPIRUN[@]}" -np "$np" -x KB_CPU_LOG bash -c "$TIMED" timed "$K" tune synthetic --budget "${budget}evals" \
      --in-flight "$fl" --mpi --no-progress --journal "$journal" > "$LOGS/$name.txt" 2>&1
  fi
  rc=$?
  end=$(date +%s.%N)
  read -r b1 t1 < <(busy_ticks)
  # Outcomes per pool member, from the journal (which rank evaluated what).
  members=$(python3 -c "
import collections, json, sys
c = collections.Counter(json.loads(l).get('member', '?') for l in open(sys.argv[1]) if '\"type\":\"outcome\"' in l)
print(', '.join(f'{m}: {n}' for m, n in sorted(c.items())))" "$journal")
  echo "run $name rc=$rc external_wall_s=$(python3 -c "print(f'{$end - $start:.4f}')") cores_busy=$(python3 -c "print(f'{$(nproc) * ($b1 - $b0) / max(1, $t1 - $t0):.2f}')") load_before=$load $quiet busiest_before_waiting=[$busy] outcomes_per_member=[$members]"
  rm -f "$journal"
}
for rep in 1 2 3; do
  for budget in 1 1000 3000; do
    run_one 1 16 "$budget" "$rep"
    run_one 8 16 "$budget" "$rep"
  done
  run_one 8 64 3000 "$rep"
  run_one 8 256 3000 "$rep"
  for np in 2 3 5; do run_one "$np" 16 3000 "$rep"; done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$WORK"
python3 "$HERE/summarize.py" "$LOGS" | tee "$HERE/throughput.md"
