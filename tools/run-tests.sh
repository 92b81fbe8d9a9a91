#!/usr/bin/env bash
# Quick start, command 2: set up, build, and run the test suite. GPU tests (CTest label "gpu")
# run only where a GPU is visible; elsewhere they are skipped cleanly.
#   bash tools/run-tests.sh           the full tier: every test (what .ci/run runs)
#   bash tools/run-tests.sh --fast    the fast tier: CTest label "fast", a few minutes (docs/testing.md)
# Other arguments go to ctest (e.g. -R journal). Tests run in parallel (KB_TEST_JOBS, default: the
# number of cores), except those marked RUN_SERIAL, which run alone (docs/testing.md says which, and why).
set -euo pipefail
tier_filter=()
if [ "${1:-}" = --fast ]; then tier_filter=(-L fast); shift; fi
# The format and lint checks need clang-format and clang-tidy: required in CI (CI=true), used where
# there (or installable) elsewhere, so that the tests still run on a GPU machine without them.
if [ -n "${CI:-}" ]; then KB_NEED_LINT=${KB_NEED_LINT:-1}; else KB_NEED_LINT=${KB_NEED_LINT:-optional}; fi
# The report's browser test (Chromium) and the exported PyTorch module's test (python3-torch) skip
# where their tool is absent; CI installs both and makes a skip a failure (KB_REQUIRE_REPORT_TOOLS).
if [ -n "${CI:-}" ]; then
  KB_NEED_REPORT_TOOLS=${KB_NEED_REPORT_TOOLS:-1}
  [ "$KB_NEED_REPORT_TOOLS" = 1 ] && export KB_REQUIRE_REPORT_TOOLS=${KB_REQUIRE_REPORT_TOOLS:-1}
else KB_NEED_REPORT_TOOLS=${KB_NEED_REPORT_TOOLS:-optional}; fi
# Open MPI (one search over an MPI job, tested under mpirun -np 3 on loopback): CI installs it and
# its tests then must run; elsewhere it is used where there (the MPI tests are built only with it).
if [ -n "${CI:-}" ]; then KB_NEED_MPI=${KB_NEED_MPI:-1}; else KB_NEED_MPI=${KB_NEED_MPI:-optional}; fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
label_filter=(-LE gpu)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then label_filter=(); fi
ctest --test-dir "$BUILD_DIR" "${label_filter[@]}" "${tier_filter[@]}" -j "${KB_TEST_JOBS:-$(nproc)}" \
  --output-on-failure "$@"
