#!/usr/bin/env bash
# Issue 27 (a): the 3-rank MPI search against the same search in one process, event by event. Runs
# the test mpi.cli_same_events_as_one_process's script (tests/mpi/check_mpi_event_order.py: the
# fixed-seed synthetic search, 300 evaluations, --in-flight 6, once in one process and once under
# `mpirun -np 3 ... --mpi`, both journaled, events compared in seq order) and keeps both journals,
# then a negative control: the same command over 4 ranks, whose pool raises the in-flight depth to
# 8 (2 per member), is another search, and the comparison must say where it first differs.
# Usage, from the repository root after building kernelbrain_cli:
#   bash bench/runs/2026-12-06-issue27-mpi/event-order.sh [build/ci/apps/kernelbrain/kernelbrain]
set -uo pipefail
K=${1:-build/ci/apps/kernelbrain/kernelbrain}
HERE=bench/runs/2026-12-06-issue27-mpi
WORK=$(mktemp -d)
exec > >(tee "$HERE/event-order.txt") 2>&1
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "busiest processes now (the machine is shared with another engineer's builds): $(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | tr -s ' ' | paste -sd ';')"
echo "$(mpirun --version | head -1); $("$K" --version | head -1)"
echo
python3 tests/mpi/check_mpi_event_order.py --cli "$K" --work "$WORK/test" --keep "$HERE/journals"
rc=$?
echo "check_mpi_event_order.py exit code: $rc"
echo
echo "negative control: the same search over 4 ranks (the pool makes the in-flight depth 8, not 6)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 4 --oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1 --mca btl_tcp_if_include lo \
  --mca oob_tcp_if_include lo "$K" tune synthetic:7 --seed 1 --in-flight 6 --budget 300evals --no-progress \
  --mpi --journal "$WORK/np4.jsonl" > "$WORK/np4.txt" 2>&1
echo "mpirun -np 4 exit code: $?; $(grep 'evaluation pool' "$WORK/np4.txt")"
PYTHONPATH=tests/mpi python3 - "$WORK/test/one-process.jsonl" "$WORK/np4.jsonl" <<'PY'
import sys
import check_mpi_event_order as c
a, b = c.events(c.read_journal(sys.argv[1])), c.events(c.read_journal(sys.argv[2]))
d = c.first_difference(a, b)
print(f"events: one process {len(a)}, 4 ranks {len(b)}; first differing position: {d}", end="")
if d is not None:
    print(f" (one process {c.key(a[d])}, 4 ranks {c.key(b[d])})", end="")
print()
PY
rm -rf "$WORK"
exit $rc
