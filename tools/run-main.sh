#!/usr/bin/env bash
# Quick start, command 1: set up, build, and run the main job — a real search on a built-in problem.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mkdir -p "$KB_ROOT/out"
journal="$KB_ROOT/out/main-$(date +%Y%m%d-%H%M%S).jsonl"
"$BUILD_DIR/examples/kernelbrain" tune synthetic --backend synthetic --strategy default \
  --budget 400evals --seed 1 --journal "$journal" "$@"
echo "journal: $journal"
