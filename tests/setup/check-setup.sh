#!/usr/bin/env bash
# Runs tools/setup.sh (KB_SETUP_CHECK_ONLY=1: nothing is configured or built) on simulated machines
# and checks what it reports: Debian 12 with everything; the H200 (Ubuntu 24.04, root, offline) for
# each quick-start command, with and without .debs in .deps/debs; Ubuntu 22.04 (Boost and cmake too
# old); an unknown distribution; no CUDA; a header without its CMake config; no root and no sudo.
# Each machine is a fake os-release, a fake prefix with the headers it has, and fake g++, cmake,
# ninja, apt-get (offline) on PATH, the real ones hidden. Needs bash, coreutils and dpkg-deb; no
# network, no root, nothing installed; the one real cmake/c++ step (a scratch project against the
# unpacked .debs) is skipped where they are missing. About 10 s on an idle 2-core machine.
# Usage: bash tests/setup/check-setup.sh   (exit 0 when every check passed)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
setup=$root/tools/setup.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-check-setup.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

# --- building blocks of a simulated machine ------------------------------------------------------
write() { mkdir -p "$(dirname "$1")"; cat > "$1"; }
script() { write "$1"; chmod +x "$1"; }
os_release() { printf 'PRETTY_NAME="%s"\nID=%s\nVERSION_ID="%s"\n' "$3" "$1" "$2" > "$work/os-$1-$2"; echo "$work/os-$1-$2"; }

# A directory of links to every command on PATH except the hidden ones.
make_path() {  # DIR HIDDEN...
  local dir=$1 d f; shift; mkdir -p "$dir"
  local IFS=:; for d in $PATH; do [ -d "$d" ] && ln -s "$d"/* "$dir"/ 2>/dev/null || true; done; unset IFS
  for f in "$@"; do rm -f "$dir/$f"; done
}
hidden=(g++ c++ clang++ cmake ninja make clang-format clang-tidy nvcc chromium chromium-browser mpicc mpirun apt-get apt-cache sudo id dpkg-query)
make_path "$work/path" "${hidden[@]}"

# Fake tools. apt-get behaves like an offline machine: update fails to fetch (exit 0, like apt), install
# fails (exit 100). apt-cache knows candidates unless FAKE_APT_LISTS=empty (lists never downloaded).
fake=$work/fakebin
script "$fake/g++" <<'EOF'
#!/bin/sh
case $1 in -dumpfullversion|-dumpversion) echo "${FAKE_GXX_VERSION:-13.2.0}" ;; --version) echo "g++ (Ubuntu 13.2.0-23ubuntu4) 13.2.0" ;; esac
EOF
script "$fake/cmake" <<'EOF'
#!/bin/sh
[ "$1" = --version ] && { echo "cmake version ${FAKE_CMAKE_VERSION:-3.28.3}"; exit 0; }
echo "cmake $*" >> "$FAKE_LOG"; exit 1
EOF
script "$fake/ninja" <<'EOF'
#!/bin/sh
echo 1.11.1
EOF
script "$fake/apt-get" <<'EOF'
#!/bin/sh
echo "apt-get $*" >> "$FAKE_LOG"
case " $* " in
  *" update "*) echo "Err:1 http://archive.ubuntu.com/ubuntu noble InRelease"
    echo "  Temporary failure resolving 'archive.ubuntu.com'"
    echo "W: Some index files failed to download. They have been ignored, or old ones used instead."; exit 0 ;;
  *" install "*) echo "E: Failed to fetch http://archive.ubuntu.com/ubuntu/pool/universe/x.deb  Temporary failure resolving 'archive.ubuntu.com'"
    echo "E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?"; exit 100 ;;
esac
EOF
script "$fake/apt-cache" <<'EOF'
#!/bin/sh
[ "${FAKE_APT_LISTS:-}" = empty ] && exit 0
echo "$2:"; echo "  Installed: (none)"; echo "  Candidate: 1.0-1"
EOF
script "$fake/sudo" <<'EOF'
#!/bin/sh
exec "$@"
EOF
script "$fake/id" <<'EOF'
#!/bin/sh
echo "${FAKE_UID:-0}"
EOF
lint=$work/lintbin
for t in clang-format clang-tidy; do
  script "$lint/$t" <<EOF
#!/bin/sh
echo "Ubuntu $t version 18.1.3"
EOF
done

# Fake prefixes (what /usr holds on each machine).
header() { write "$1/include/$2" <<< "$3"; }
config() { write "$1/$2" <<< "# CMake package config"; }  # where Debian/Ubuntu put it
boost() { header "$1" boost/version.hpp "#define BOOST_VERSION $2"; header "$1" zlib.h '#define ZLIB_VERSION "1.2.13"'; }  # with zlib
fmt() { header "$1" fmt/core.h "#define FMT_VERSION $2"; header "$1" fmt/format.h '#include "core.h"'
        config "$1" lib/x86_64-linux-gnu/cmake/fmt/fmt-config.cmake; }
cli11() { header "$1" CLI/CLI.hpp '#pragma once'
          header "$1" CLI/Version.hpp $'#define CLI11_VERSION_MAJOR 2\n#define CLI11_VERSION_MINOR 4\n#define CLI11_VERSION_PATCH 1'
          config "$1" share/cmake/CLI11/CLI11Config.cmake; }
doctest() { header "$1" doctest/doctest.h $'#define DOCTEST_VERSION_MAJOR 2\n#define DOCTEST_VERSION_MINOR 4\n#define DOCTEST_VERSION_PATCH 11'
            config "$1" lib/cmake/doctest/doctestConfig.cmake; }
benchmark() { header "$1" benchmark/benchmark.h '#pragma once'; write "$1/lib/x86_64-linux-gnu/libbenchmark.so" <<< ""
              config "$1" lib/x86_64-linux-gnu/cmake/benchmark/benchmarkConfig.cmake
              write "$1/lib/x86_64-linux-gnu/cmake/benchmark/benchmarkConfigVersion.cmake" <<< 'set(PACKAGE_VERSION "1.8.3")'; }
h200=$work/h200/usr;     boost "$h200" 108300; fmt "$h200" 90100
full=$work/full/usr;     boost "$full" 108100; fmt "$full" 90100; cli11 "$full"; doctest "$full"; benchmark "$full"
bare=$work/bare/usr;     boost "$bare" 108300; fmt "$bare" 90100; header "$bare" CLI/CLI.hpp '#pragma once'  # no CLI11 config
jammy=$work/jammy/usr;   boost "$jammy" 107400; fmt "$jammy" 80101; cli11 "$jammy"; doctest "$jammy"; benchmark "$jammy"
cuda=$work/cuda;         header "$cuda" nvrtc.h '#pragma once'; header "$cuda" cuda.h '#define CUDA_VERSION 13000'
mkdir -p "$work/nocuda"

# .deb files as `apt-get download` gives them: CLI11 (relocatable CMake config), doctest (its config
# names /usr/include, as Debian's does), Google Benchmark's -dev package and the library it depends
# on, and a Boost that must NOT be unpacked where Boost is already there.
deb_tree() {  # NAME DEPENDS FILE=CONTENT...: the package's tree, in $work/debsrc/NAME
  local name=$1 depends=$2 f; shift 2
  local dir=$work/debsrc/$name; mkdir -p "$dir/DEBIAN"
  { printf 'Package: %s\nVersion: 1.0-1\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: test\n' "$name"
    [ -z "$depends" ] || printf 'Depends: %s\n' "$depends"; } > "$dir/DEBIAN/control"
  for f in "$@"; do write "$dir/${f%%=*}" <<< "${f#*=}"; done
}
deb_build() { dpkg-deb --root-owner-group -Zgzip -b "$work/debsrc/$1" "$work/debs-all/${1}_1.0-1_all.deb" >/dev/null; }
deb() { deb_tree "$@"; deb_build "$1"; }
mkdir -p "$work/debs-all"
deb libcli11-dev "" "usr/include/CLI/CLI.hpp=#define KB_FAKE_CLI11 1" \
  "usr/include/CLI/Version.hpp=#define CLI11_VERSION_MAJOR 2
#define CLI11_VERSION_MINOR 4
#define CLI11_VERSION_PATCH 1" \
  "usr/share/cmake/CLI11/CLI11Config.cmake=get_filename_component(_p \"\${CMAKE_CURRENT_LIST_DIR}/../../..\" ABSOLUTE)
add_library(CLI11::CLI11 INTERFACE IMPORTED)
set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"\${_p}/include\")"
deb doctest-dev "" "usr/include/doctest/doctest.h=#define KB_FAKE_DOCTEST 1" \
  "usr/lib/cmake/doctest/doctestConfig.cmake=add_library(doctest::doctest INTERFACE IMPORTED)
set_target_properties(doctest::doctest PROPERTIES INTERFACE_INCLUDE_DIRECTORIES \"/usr/include\")"
deb_tree libbenchmark-dev "libbenchmark1.8.3 (= 1.8.3-3), libc6" "usr/include/benchmark/benchmark.h=#pragma once" \
  "usr/lib/cmake/benchmark/benchmarkConfig.cmake=# config"
mkdir -p "$work/debsrc/libbenchmark-dev/usr/lib"
ln -s libbenchmark.so.1.8.3 "$work/debsrc/libbenchmark-dev/usr/lib/libbenchmark.so"   # as the -dev package has it
deb_build libbenchmark-dev
deb libbenchmark1.8.3 "" "usr/lib/libbenchmark.so.1.8.3=ELF"
deb libboost1.90-dev "" "usr/include/boost/version.hpp=#define BOOST_VERSION 109000"

# --- running setup.sh on a simulated machine ------------------------------------------------------
# run NAME [VAR=VALUE...]: output in $work/NAME.out, exit status in $rc, fake tool calls in $work/NAME.log.
run() {
  local name=$1; shift
  out=$work/$name.out log=$work/$name.log; : > "$log"
  set +e
  env -i HOME="$work" TMPDIR="$work" PATH="$fake:$work/path" FAKE_LOG="$log" KB_SETUP_CHECK_ONLY=1 \
    BUILD_DIR="$work/build-$name" KB_DEPS_DIR="$work/deps-$name" CUDA_HOME="$work/nocuda" "$@" \
    bash "$setup" > "$out" 2>&1
  rc=$?
  set -e
  current=$name output="" lines=()
  IFS= read -r -d '' output < "$out" || true
  mapfile -t lines < "$log"
}
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL [$current] $*"; }
expect_rc() { [ "$rc" = "$1" ] && ok || bad "exit status $rc, expected $1"; }
# Checks on the last run's output and on the fake tools' log (no subprocesses: forks can be slow).
has() { [[ $output == *"$1"* ]] && ok || bad "output lacks: $1"; }
lacks() { [[ $output == *"$1"* ]] && bad "output has: $1" || ok; }
calls() {  # REGEX COUNT: how many logged calls of the fake tools match
  local n=0 l; for l in "${lines[@]}"; do [[ $l =~ $1 ]] && n=$((n + 1)); done
  [ "$n" = "$2" ] && ok || bad "$n calls matching '$1', expected $2"
}
show() { echo "----- $current (exit $rc)"; printf '%s' "$output"; }

# 1. Debian 12 with everything (lint too): installs nothing, builds everything.
run debian12 KB_OS_RELEASE="$(os_release debian 12 'Debian GNU/Linux 12 (bookworm)')" KB_SYSTEM_PREFIXES="$full" \
  PATH="$fake:$lint:$work/path" KB_NEED_LINT=1
expect_rc 0; has "Debian 12"; has "-DKERNELBRAIN_BUILD_TESTS=ON"; has "-DKERNELBRAIN_BUILD_BENCH=ON"; has "-G Ninja"
has "18.1.3"; lacks "CMAKE_PREFIX_PATH"; calls apt-get 0; calls "^cmake" 0

# 2. The H200 as it is (Ubuntu 24.04, root, offline, Boost 1.83 + fmt, CUDA 13), run-main's needs:
#    apt is tried once and fails; CLI11 is reported with Ubuntu 24.04's name; nothing is configured.
h200_os=$(os_release ubuntu 24.04 'Ubuntu 24.04.1 LTS')
run h200-main KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_NEED_TESTS=0 KB_NEED_BENCH=0
expect_rc 1; show
has "Ubuntu 24.04"; has "1.83.0 ($h200/include)"; has "13.0 ($cuda)"
has "  - CLI11 (CLI/CLI.hpp + CLI11Config.cmake), needed for the command-line program (apps/kernelbrain): install package libcli11-dev"
# libjs-chart.js (optional: the report's plots) goes along once apt runs for the required ones.
has "apt-get install libcli11-dev doctest-dev libbenchmark-dev libjs-chart.js failed (no network?)"
has "'apt-get download libcli11-dev'"; has "$work/deps-h200-main/debs"; lacks "  - doctest"; lacks "libboost1.81-dev"; lacks "cmake arguments"
calls "apt-get .*update" 1; calls "apt-get .*install" 1; calls "^cmake" 0

# 3. The H200 for the test command (lint asked for, no clang tools, apt lists never downloaded):
#    every missing piece with its package; apt-get install is not even tried.
run h200-tests KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_NEED_LINT=1 FAKE_APT_LISTS=empty
expect_rc 1
has "  - CLI11 (CLI/CLI.hpp + CLI11Config.cmake), needed for the command-line program (apps/kernelbrain): install package libcli11-dev"
has "  - doctest (doctest/doctest.h + doctestConfig.cmake), needed for the test suite (tests/): install package doctest-dev"
has "  - Google Benchmark (benchmark/benchmark.h + libbenchmark + benchmarkConfig.cmake), needed for the benchmarks (bench/): install package libbenchmark-dev"
has "  - clang-format (clang-format), needed for the format check of the test command: install package clang-format"
has "  - clang-tidy (clang-tidy), needed for the lint check of the test command: install package clang-tidy"
has "apt has no candidate for libcli11-dev (Ubuntu has it in the 'universe' component)"
has "'apt-get download libcli11-dev doctest-dev libbenchmark-dev libbenchmark1.8.3'"
has "KB_NEED_LINT=0 goes on without them"
calls "apt-get .*update" 1; calls "apt-get .*install" 0
# KB_NEED_LINT=optional with everything else there: goes on, says the checks cannot run, asks no apt.
run lint-optional KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$full" KB_NEED_LINT=optional
expect_rc 0; has "clang-format not found: its checks cannot run (package clang-format)"; calls apt-get 0

# 3b. The report's tools (CI's test command: KB_NEED_REPORT_TOOLS=1) on Debian 12 without them, offline:
#     Chromium and PyTorch named with their packages and the way out; Chart.js, optional, goes along.
run report-tools KB_OS_RELEASE="$(os_release debian 12 'Debian GNU/Linux 12 (bookworm)')" KB_SYSTEM_PREFIXES="$full" \
  KB_NEED_REPORT_TOOLS=1
expect_rc 1
has "  - Chromium (chromium or chromium-browser), needed for the report's test in a headless browser: install package chromium"
has "  - PyTorch (python3) (python3's torch package (dist-packages)), needed for the test of kernelbrain export's PyTorch module: install package python3-torch"
has "KB_NEED_REPORT_TOOLS=0 goes on without them"
has "apt-get install libjs-chart.js chromium python3-torch failed (no network?)"
# On Ubuntu, Chromium is a snap: no apt package is offered for it, and what to do instead is said.
run report-tools-ubuntu KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$full" KB_NEED_REPORT_TOOLS=1
expect_rc 1; has "Ubuntu ships Chromium as a snap only"; calls "apt-get .*install" 0
# Not asked for (the default outside CI): neither is looked for.
run report-tools-default KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$full"
expect_rc 0; lacks "Chromium not found"; has "Chart.js not found: kernelbrain report cannot draw its plots (package libjs-chart.js)"

# 3c. Open MPI (CI's test command: KB_NEED_MPI=1) on Debian 12 without it, offline: named with its
#     package and the way out; not asked for (the default), it is not looked for.
run mpi KB_OS_RELEASE="$(os_release debian 12 'Debian GNU/Linux 12 (bookworm)')" KB_SYSTEM_PREFIXES="$full" KB_NEED_MPI=1
expect_rc 1
has "  - Open MPI (mpicc and mpirun), needed for one search over an MPI job (kernelbrain tune --mpi) and its tests: install package libopenmpi-dev"
has "KB_NEED_MPI=0 goes on without it"
has "apt-get install libjs-chart.js libopenmpi-dev failed (no network?)"
run mpi-default KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$full"
expect_rc 0; lacks "Open MPI not found"; has "Open MPI          -         not asked"

# 4. The H200 with CLI11's .deb in .deps/debs (run-main's needs): unpacked, then the cmake arguments
#    point at it; the tests and bench are left out (no doctest, no Google Benchmark there).
mkdir -p "$work/deps-h200-cli11/debs"; cp "$work/debs-all/libcli11-dev_"*.deb "$work/deps-h200-cli11/debs/"
run h200-cli11 KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_NEED_TESTS=0 KB_NEED_BENCH=0
expect_rc 0; show
has "unpacking libcli11-dev_1.0-1_all.deb into $work/deps-h200-cli11/root"
has "-DCMAKE_PREFIX_PATH=$work/deps-h200-cli11/root/usr"
has "-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$work/deps-h200-cli11/root/usr/include"
has "-DKERNELBRAIN_BUILD_TESTS=OFF"; has "-DKERNELBRAIN_BUILD_BENCH=OFF"; has "the tests are not built (package doctest-dev)"
calls "apt-get .*update" 1; calls "^cmake" 0
# Run again: CLI11 is there now, and for doctest and Google Benchmark alone (optional) apt is not tried.
run h200-cli11-again KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_NEED_TESTS=0 KB_NEED_BENCH=0 \
  KB_DEPS_DIR="$work/deps-h200-cli11"
expect_rc 0; lacks "unpacking"; has "-DKERNELBRAIN_BUILD_TESTS=OFF"; has "-DCMAKE_PREFIX_PATH=$work/deps-h200-cli11/root/usr"
calls apt-get 0

# 5. The H200 with all the .debs, the test command's needs (no lint): the ones needed are unpacked,
#    with Google Benchmark's library package (a Depends of libbenchmark-dev); Boost's is not (Boost is
#    there). A second run finds them unpacked and asks apt for nothing.
mkdir -p "$work/deps-h200-all/debs"; cp "$work/debs-all/"*.deb "$work/deps-h200-all/debs/"
run h200-all KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_DEPS_DIR="$work/deps-h200-all"
expect_rc 0
has "unpacking doctest-dev"; has "unpacking libbenchmark1.8.3"; lacks "unpacking libboost"
has "-DKERNELBRAIN_BUILD_TESTS=ON"; has "-DKERNELBRAIN_BUILD_BENCH=ON"; has "1.83.0 ($h200/include)"
has "Google Benchmark  ok"; has "doctest           ok"
[ ! -e "$work/deps-h200-all/root/usr/include/boost" ] && ok || bad "Boost's .deb was unpacked"
run h200-all-again KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" CUDA_HOME="$cuda" KB_DEPS_DIR="$work/deps-h200-all"
expect_rc 0; lacks "unpacking"; has "-DCMAKE_PREFIX_PATH=$work/deps-h200-all/root/usr"; calls apt-get 0

# 5b. With the arguments that run printed, CMake finds CLI11's and doctest's configs in the unpacked
#     root, and a compile sees their headers though doctest's config names /usr/include (real cmake, c++).
if [[ $output =~ (-DCMAKE_PREFIX_PATH=[^ ]+)\ (-DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=[^[:space:]]+) ]] &&
   command -v cmake >/dev/null && command -v c++ >/dev/null; then
  args=("${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
  current=h200-all-cmake proj=$work/proj deps=$work/deps-h200-all/root/usr
  write "$proj/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(p LANGUAGES CXX)
find_package(CLI11 CONFIG REQUIRED)
find_package(doctest CONFIG REQUIRED)
message(STATUS "found CLI11_DIR=${CLI11_DIR} doctest_DIR=${doctest_DIR}")
add_executable(p p.cpp)
target_link_libraries(p PRIVATE CLI11::CLI11 doctest::doctest)
EOF
  write "$proj/p.cpp" <<'EOF'
#include <CLI/CLI.hpp>
#include <doctest/doctest.h>
#if !defined(KB_FAKE_CLI11) || !defined(KB_FAKE_DOCTEST)
#error "headers not taken from the unpacked .debs"
#endif
int main() {}
EOF
  if cmake -S "$proj" -B "$proj/b" "${args[@]}" > "$work/cmake.out" 2>&1 &&
     cmake --build "$proj/b" >> "$work/cmake.out" 2>&1; then ok; else bad "scratch project: $(tail -n 20 "$work/cmake.out")"; fi
  IFS= read -r -d '' output < "$work/cmake.out" || true
  has "found CLI11_DIR=$deps/share/cmake/CLI11 doctest_DIR=$deps/lib/cmake/doctest"
else
  echo "skipped the scratch CMake project (no cmake or c++ here, or no arguments to try)"
fi

# 6. Ubuntu 22.04: Boost 1.74 and cmake 3.22 are too old and the distribution has nothing newer:
#    said so, with what was found and what is needed; nothing is installed.
run jammy KB_OS_RELEASE="$(os_release ubuntu 22.04 'Ubuntu 22.04.4 LTS')" KB_SYSTEM_PREFIXES="$jammy" \
  FAKE_CMAKE_VERSION=3.22.1 FAKE_GXX_VERSION=11.4.0
expect_rc 1; show
has "found: Boost 1.74.0 at $jammy/include (1.81 or newer needed)"
has "Ubuntu 22.04 ships Boost 1.74 (libboost1.74-dev), older than the 1.81 needed"
has "found: cmake 3.22.1 at $fake/cmake (3.25 or newer needed)"
has "Ubuntu 22.04's cmake package is 3.22.1, older than the 3.25 needed: 'pip install cmake'"
# Chart.js (optional) has a package, but nothing is installed while required pieces have none.
has "why not installed: nothing installed, since Ubuntu 22.04 has no package for cmake, Boost (see above)"
has "g++ 11.4.0"; lacks "apt-get download"; calls apt-get 0

# 6b. The same with CLI11 missing too: libcli11-dev is named, but nothing is installed.
jammy2=$work/jammy2/usr; boost "$jammy2" 107400; fmt "$jammy2" 80101
run jammy-cli11 KB_OS_RELEASE="$(os_release ubuntu 22.04 'Ubuntu 22.04.4 LTS')" KB_SYSTEM_PREFIXES="$jammy2" \
  FAKE_CMAKE_VERSION=3.22.1 KB_NEED_TESTS=0 KB_NEED_BENCH=0
expect_rc 1; has "install package libcli11-dev"
has "why not installed: nothing installed, since Ubuntu 22.04 has no package for cmake, Boost (see above)"
has "'apt-get download libcli11-dev'"; calls apt-get 0

# 7. An unknown distribution: Debian 12's names, no apt.
run unknown KB_OS_RELEASE="$(os_release fedora 40 'Fedora Linux 40')" KB_SYSTEM_PREFIXES="$h200" KB_NEED_TESTS=0 KB_NEED_BENCH=0
expect_rc 1; has "unknown distribution Fedora Linux 40 (ID=fedora VERSION_ID=40)"; has "install package libcli11-dev"
calls apt-get 0

# 8. No CUDA toolkit: reported, not required.
run nocuda KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$full"
expect_rc 0; has "CUDA toolkit      not found"; has "cmake arguments"

# 9. Not root and no sudo: says so instead of trying.
mkdir -p "$work/nosudo-bin"
for t in g++ cmake ninja apt-get apt-cache id; do ln -s "$fake/$t" "$work/nosudo-bin/$t"; done
run nosudo KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$h200" FAKE_UID=1000 KB_NEED_TESTS=0 KB_NEED_BENCH=0 \
  PATH="$work/nosudo-bin:$work/path"
expect_rc 1; has "why not installed: not root and no sudo"; calls apt-get 0

# 10. CLI11's header without its CMake config (find_package(CLI11 CONFIG) would fail): missing.
run bare KB_OS_RELEASE="$h200_os" KB_SYSTEM_PREFIXES="$bare" KB_NEED_TESTS=0 KB_NEED_BENCH=0 KB_NO_INSTALL=1
expect_rc 1; has "found: CLI/CLI.hpp in $bare/include, but no CLI11 CMake config"
has "why not installed: installing is turned off (KB_NO_INSTALL=1)"; calls apt-get 0

echo "check-setup: $passed passed, $failed failed"
[ "$failed" = 0 ]
