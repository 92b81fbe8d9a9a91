#!/usr/bin/env bash
# Builds the CLIs the issue-29 campaigns are pinned to (their prompts' text keys the answer files, so each
# campaign's rounds must run the CLI of its first round) into .h200/campaign/kernelbrain-<commit>, statically
# linked like tools/build-for-h200.sh's programs. Only the CLI target is built at each commit (the worker and
# the rest come from the current tree's tools/build-for-h200.sh). .h200 is not in git: run this once per
# session before the campaigns' rounds. Needs the build's dependencies (bash tools/setup.sh installs them).
#   bash bench/runs/2026-12-07-issue29-ablation/build-pinned-clis.sh [COMMIT...]
# Default commits: caad18d's CLI, built from 62b2f47 (the issue29-campaign folder's campaigns), and 6275f7f
# (the issue29-ablation folder's).
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
[ $# -gt 0 ] || set -- 62b2f47:caad18d 6275f7f
mkdir -p .h200/campaign
for spec in "$@"; do
  commit=${spec%%:*}
  name=${spec#*:}
  out=.h200/campaign/kernelbrain-$name
  if [ -x "$out" ]; then echo "$out: there already"; continue; fi
  tree=$(mktemp -d)/kb-$commit
  git worktree add --detach "$tree" "$commit" > /dev/null
  cmake -S "$tree" -B "$tree/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKERNELBRAIN_BUILD_TESTS=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc" > "$tree.configure.log" 2>&1 ||
    { cat "$tree.configure.log"; exit 1; }
  cmake --build "$tree/build" --target kernelbrain_cli -j "$(nproc)"
  cp "$tree/build/apps/kernelbrain/kernelbrain" "$out"
  strip "$out"
  git worktree remove --force "$tree"
  echo "$out: built from $commit"
done
grep -q '^/.h200/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.h200/' >> "$ROOT/.git/info/exclude"
ls -la .h200/campaign
