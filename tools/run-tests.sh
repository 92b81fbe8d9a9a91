#!/usr/bin/env bash
# Quick start, command 2: set up, build, and run the test suite. GPU tests (CTest label "gpu")
# run only where a GPU is visible; elsewhere they are skipped cleanly.
set -euo pipefail
# The format and lint checks need clang-format and clang-tidy: required in CI (CI=true), used where
# there (or installable) elsewhere, so that the tests still run on a GPU machine without them.
if [ -n "${CI:-}" ]; then KB_NEED_LINT=${KB_NEED_LINT:-1}; else KB_NEED_LINT=${KB_NEED_LINT:-optional}; fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
label_filter=(-LE gpu)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then label_filter=(); fi
# Serial: several tests time real code, and parallel tests on a small machine would disturb them.
ctest --test-dir "$BUILD_DIR" "${label_filter[@]}" --output-on-failure "$@"
