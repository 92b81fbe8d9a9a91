#!/usr/bin/env bash
# Installs what KernelBrain needs (Debian 12 packages) when missing, then configures and builds.
# Sourced by tools/run-main.sh and tools/run-tests.sh. BUILD_DIR and BUILD_TYPE may be set by the caller.
set -euo pipefail
KB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KB_ROOT/build/release}
BUILD_TYPE=${BUILD_TYPE:-Release}

packages=(build-essential cmake ninja-build libboost1.81-dev libfmt-dev doctest-dev libbenchmark-dev libssl-dev)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  echo "kernelbrain: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "kernelbrain: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
mkdir -p "$BUILD_DIR"
cmake -S "$KB_ROOT" -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
  -DKERNELBRAIN_WARNINGS_AS_ERRORS="${KB_WERROR:-OFF}" >"$BUILD_DIR/configure.log" 2>&1 \
  || { cat "$BUILD_DIR/configure.log" >&2; exit 1; }
cmake --build "$BUILD_DIR" -j "$(nproc)"
