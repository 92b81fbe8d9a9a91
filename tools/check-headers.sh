#!/usr/bin/env bash
# Each public header compiles on its own: every include/kernelbrain and strategies header is the only
# include of a translation unit, compiled with -fsyntax-only as a user would include it: header-only,
# and separately compiled (KERNELBRAIN_SEPARATE_COMPILATION) where the header declares compiled bodies. Prints each failure with the
# compiler's first errors; exits 1 if any header fails.
#   tools/check-headers.sh [CXX] [JOBS]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CXX=${1:-${CXX:-c++}}
JOBS=${2:-$(nproc)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
# src.hpp is the one-TU form of the separately compiled library: it refuses, by design, to be included
# without KERNELBRAIN_SEPARATE_COMPILATION, and is compiled as such by the runtime library.
mapfile -t headers < <(find include/kernelbrain strategies/kernelbrain -name '*.hpp' -not -path '*/impl/*' \
  -not -name src.hpp | sort)
# The MPI pool's headers (distribute/) need MPI's: checked where they are (the MPI build's wrapper, or mpi.h on the path).
if ! echo '#include <mpi.h>' | "$CXX" -x c++ -fsyntax-only - >/dev/null 2>&1; then
  mapfile -t headers < <(printf '%s\n' "${headers[@]}" | grep -v 'include/kernelbrain/distribute/')
  echo "note: no mpi.h for $CXX: the MPI pool's headers (include/kernelbrain/distribute/) not checked"
fi
check() {
  local header=$1 mode=$2 flags=()
  [ "$mode" = separate ] && flags=(-DKERNELBRAIN_SEPARATE_COMPILATION)
  local rel=${header#include/}
  rel=${rel#strategies/}
  local tu="$WORK/$(echo "$header-$mode" | tr '/.' '__').cpp"
  printf '#include <%s>\n' "$rel" > "$tu"
  if ! out=$("$CXX" -std=c++20 -fsyntax-only -Iinclude -Istrategies "${flags[@]}" "$tu" 2>&1); then
    printf 'FAIL %s (%s)\n%s\n' "$header" "$mode" "$(echo "$out" | grep -m5 'error')"
    return 1
  fi
}
export -f check
export CXX WORK
# Both forms where they differ (a header that declares KERNELBRAIN_DECL bodies); the header-only form
# of every other header.
for h in "${headers[@]}"; do
  echo "$h header-only"
  grep -q KERNELBRAIN_DECL "$h" && echo "$h separate"
done |
  tee "$WORK/list.txt" | xargs -P "$JOBS" -L 1 bash -c 'check "$0" "$1"' > "$WORK/results.txt"
fails=$(grep -c '^FAIL' "$WORK/results.txt")
cat "$WORK/results.txt"
echo "${#headers[@]} headers, each compiled alone ($(wc -l < "$WORK/list.txt") compiles): $fails failed"
[ "$fails" -eq 0 ]
