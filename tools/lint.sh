#!/usr/bin/env bash
# The house rules, checked: `tools/lint.sh format` (clang-format, .clang-format) and
# `tools/lint.sh tidy <build-dir>` (clang-tidy, .clang-tidy, over that build's compile_commands.json).
# `tools/lint.sh format --fix` rewrites the files instead of checking them. CTest runs both checks
# (tests lint.format and lint.tidy) wherever the tools are found; CI requires them.
#
# Not formatted or linted: problem data (examples/problems, examples/cuda_problems: a kernel's bytes
# are part of its problem's identity, and old journals name them) and tests/host_corpus and
# tests/hostile_softmax (hostile candidates whose exact text is what the tests feed the gate), and
# bench/runs (records of runs: logs, and what `kernelbrain export` generated, kept as it ran).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

sources() {
  git ls-files -- 'include/*.hpp' 'include/*.ipp' 'include/*.h' 'strategies/*.hpp' 'src/*.cpp' 'src/*.hpp' 'apps/*.cpp' \
    'apps/*.hpp' 'tools/*.cpp' 'tests/*.cpp' 'tests/*.hpp' 'bench/*.cpp' 'bench/*.hpp' 'examples/*.cpp' \
    | grep -v -e '^examples/problems/' -e '^examples/cuda_problems/' -e '^tests/host_corpus/' \
      -e '^tests/hostile_softmax/' -e '^bench/runs/' \
    | while read -r f; do [ -f "$f" ] && echo "$f"; done
}

# The translation units clang-tidy reads: together they include every header of the library, the
# strategies, the workers, the CLI and the tools (header-filter limits findings to our own files).
tidy_units() {
  git ls-files -- 'src/*.cpp' 'apps/*.cpp' 'tools/*.cpp' 'examples/*.cpp' 'tests/test_conformance.cpp' \
    | grep -v -e '^examples/problems/' -e '^examples/cuda_problems/'
}

case "${1:-}" in
  format)
    mapfile -t files < <(sources)
    if [ "${2:-}" = --fix ]; then
      clang-format -i "${files[@]}"
      echo "lint: formatted ${#files[@]} files"
    else
      clang-format --dry-run -Werror "${files[@]}"
      echo "lint: ${#files[@]} files formatted as .clang-format says"
    fi
    ;;
  tidy)
    build=${2:?usage: tools/lint.sh tidy <build-dir with compile_commands.json>}
    [ -f "$build/compile_commands.json" ] || { echo "lint: no $build/compile_commands.json" >&2; exit 2; }
    mapfile -t units < <(tidy_units | while read -r f; do grep -q "\"file\": \"$ROOT/$f\"" "$build/compile_commands.json" && echo "$f"; done)
    # A unit this build did not compile (no CUDA toolkit: tools/; CLI turned off: apps/) is named and
    # skipped; none at all means the database is not this tree's, and that is a failure, not a pass.
    mapfile -t skipped < <(tidy_units | while read -r f; do grep -q "\"file\": \"$ROOT/$f\"" "$build/compile_commands.json" || echo "$f"; done)
    ((${#skipped[@]})) && echo "lint: not in this build, not linted: ${skipped[*]}"
    ((${#units[@]})) || { echo "lint: none of the translation units is in $build/compile_commands.json" >&2; exit 2; }
    echo "lint: clang-tidy over ${#units[@]} translation units"
    status=0
    printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -I{} sh -c \
      'clang-tidy --quiet --extra-arg=-Wno-unknown-warning-option -p "$1" --header-filter="^$2/(include|strategies|src|apps|tools|tests)/" --warnings-as-errors="*" "$2/$3" 2>/dev/null' \
      _ "$build" "$ROOT" {} || status=$?
    [ $status = 0 ] && echo "lint: clang-tidy found nothing" || echo "lint: clang-tidy findings above" >&2
    exit $status
    ;;
  *)
    echo "usage: tools/lint.sh format [--fix] | tools/lint.sh tidy <build-dir>" >&2
    exit 2
    ;;
esac
