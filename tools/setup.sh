#!/usr/bin/env bash
# Finds what KernelBrain's build needs, installs only what is missing (apt, under the distribution's
# own package names: Debian 12, Ubuntu 22.04, Ubuntu 24.04) or unpacks .deb files from .deps/debs on
# a machine without network, then configures and builds. When something cannot be had it stops
# before the build, with one message naming each missing piece, what needs it, and its package.
# Sourced by tools/run-main.sh and tools/run-tests.sh; `bash tools/setup.sh` works too.
#
# Set by the caller (all optional):
#   BUILD_DIR, BUILD_TYPE   where and how to build (build/release, Release)
#   KB_WERROR=ON            warnings as errors (CI)
#   KB_NEED_TESTS=0         doctest is not required: without it the tests are not built (default 1)
#   KB_NEED_BENCH=0         Google Benchmark is not required: without it bench/ is not built (default 1)
#   KB_NEED_LINT=1          clang-format and clang-tidy are required (the test command sets it);
#                           KB_NEED_LINT=optional: used where there, or installed where apt can
#   KB_NEED_REPORT_TOOLS=1  Chromium and PyTorch (python3) are required: the report's browser test and
#                           the exported PyTorch module's test (the test command sets it in CI);
#                           optional: used where there, or installed where apt can; default: not asked
#   KB_NO_INSTALL=1         never run apt-get: report what is missing instead
#   KB_SETUP_CHECK_ONLY=1   stop before configuring: print the table and the cmake arguments
#   KB_DEPS_DIR             offline dependencies: debs/ (.deb files in) and root/ (unpacked); .deps
# For tests (tests/setup/check-setup.sh): KB_OS_RELEASE (default /etc/os-release) and
# KB_SYSTEM_PREFIXES (default /usr/local:/usr), the system prefixes searched for headers and libraries.
# Detection runs no more processes than it must: some machines fork slowly.
set -euo pipefail
KB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$KB_ROOT/build/release}
BUILD_TYPE=${BUILD_TYPE:-Release}
KB_DEPS_DIR=${KB_DEPS_DIR:-$KB_ROOT/.deps}

kb_items=(cxx cmake ninja boost zlib fmt cli11 doctest benchmark clang_format clang_tidy chartjs chromium torch mpi cuda)
declare -A kb_label=([cxx]="C++ compiler" [cmake]=cmake [ninja]=ninja [boost]=Boost [zlib]=zlib [fmt]=fmt
  [cli11]=CLI11 [doctest]=doctest [benchmark]="Google Benchmark" [clang_format]=clang-format
  [clang_tidy]=clang-tidy [chartjs]=Chart.js [chromium]=Chromium [torch]="PyTorch (python3)" [mpi]="Open MPI" [cuda]="CUDA toolkit")
declare -A kb_probe=([cxx]="g++ >= 11 or clang++ >= 14" [cmake]="cmake >= 3.25" [ninja]=ninja
  [boost]="boost/version.hpp, >= 1.81" [zlib]="zlib.h + libz" [fmt]="fmt/format.h + fmt-config.cmake"
  [cli11]="CLI/CLI.hpp + CLI11Config.cmake" [doctest]="doctest/doctest.h + doctestConfig.cmake"
  [benchmark]="benchmark/benchmark.h + libbenchmark + benchmarkConfig.cmake"
  [clang_format]=clang-format [clang_tidy]=clang-tidy [chartjs]="share/javascript/chart.js/chart.min.js"
  [chromium]="chromium or chromium-browser" [torch]="python3's torch package (dist-packages)" [mpi]="mpicc and mpirun"
  [cuda]="nvcc or include/nvrtc.h")
declare -A kb_purpose=([cxx]="building everything (C++20)" [cmake]="configuring the build"
  [ninja]="building (optional: make otherwise)" [boost]="the library (JSON, Asio, Beast)"
  [zlib]="the library (reading gzip-compressed recordings)"
  [fmt]="the command-line program (apps/kernelbrain)" [cli11]="the command-line program (apps/kernelbrain)"
  [doctest]="the test suite (tests/)" [benchmark]="the benchmarks (bench/)"
  [clang_format]="the format check of the test command" [clang_tidy]="the lint check of the test command"
  [chartjs]="the plots of kernelbrain report (inlined into each report)"
  [chromium]="the report's test in a headless browser" [torch]="the test of kernelbrain export's PyTorch module"
  [mpi]="one search over an MPI job (kernelbrain tune --mpi) and its tests" [cuda]="the CUDA backend (optional)")
# Per item: need (required, optional, unused), status (ok, missing, old, skipped), found (version or
# what is wrong), where (path). Functions return values in kb_reply.
declare -A kb_need=() kb_status=() kb_found=() kb_where=()
kb_reply=""

kb_say() { echo "kernelbrain setup: $*" >&2; }
kb_set() { kb_status[$1]=$2; kb_found[$1]=$3; kb_where[$1]=${4:-}; }

# --- small helpers, without subprocesses ---------------------------------------------------------
kb_version_ge() {  # A B: A >= B, for dotted versions
  local i x y a b; IFS=. read -ra a <<< "$1"; IFS=. read -ra b <<< "$2"
  for ((i = 0; i < ${#a[@]} || i < ${#b[@]}; i++)); do
    x=${a[i]:-0} y=${b[i]:-0}; x=${x%%[!0-9]*} y=${y%%[!0-9]*}
    ((10#${x:-0} > 10#${y:-0})) && return 0
    ((10#${x:-0} < 10#${y:-0})) && return 1
  done
  return 0
}
kb_which() {  # NAME: its path on PATH (or NAME itself when it is a path)
  case $1 in */*) [ -x "$1" ] && { kb_reply=$1; return 0; }; return 1 ;; esac
  local d IFS=:
  for d in $PATH; do
    [ -f "${d:-.}/$1" ] && [ -x "${d:-.}/$1" ] && { kb_reply=${d:-.}/$1; return 0; }
  done
  return 1
}
# Where headers and CMake package configs are looked for, in the order a build sees them: the
# compiler's environment, CMAKE_PREFIX_PATH, BOOST_ROOT, the unpacked .debs, the system.
kb_search_dirs() {
  kb_prefixes=() kb_include_dirs=()
  local p IFS=:
  for p in ${CMAKE_PREFIX_PATH:-} "${BOOST_ROOT:-}" "${Boost_ROOT:-}" "$KB_DEPS_DIR/root/usr" \
           ${KB_SYSTEM_PREFIXES:-/usr/local:/usr}; do
    [ -n "$p" ] && kb_prefixes+=("$p")
  done
  for p in ${CPLUS_INCLUDE_PATH:-} ${CPATH:-}; do [ -n "$p" ] && kb_include_dirs+=("$p"); done
  for p in "${kb_prefixes[@]}"; do kb_include_dirs+=("$p/include"); done
}
kb_find_header() {  # HEADER (boost/version.hpp): the include directory that has it
  local d; for d in "${kb_include_dirs[@]}"; do [ -f "$d/$1" ] && { kb_reply=$d; return 0; }; done
  return 1
}
kb_find_cmake_config() {  # NAME: the directory of NAMEConfig.cmake / NAME-config.cmake
  local p d
  for p in "${kb_prefixes[@]}"; do
    for d in "$p"/lib/cmake/"$1" "$p"/lib/*/cmake/"$1" "$p"/lib64/cmake/"$1" "$p"/share/cmake/"$1"; do
      if [ -f "$d/$1Config.cmake" ] || [ -f "$d/$1-config.cmake" ]; then kb_reply=$d; return 0; fi
    done
  done
  return 1
}
kb_defines() {  # FILE MACRO...: the macros' values (quotes removed), joined with dots
  kb_reply=$(awk -v names="${*:2}" 'BEGIN { n = split(names, want, " ") }
    { line = $0 }
    sub(/^[ \t]*#[ \t]*define[ \t]+/, "", line) {
      split(line, f, /[ \t]+/); gsub(/"/, "", f[2])
      for (i = 1; i <= n; i++) if (f[1] == want[i] && !(i in v)) v[i] = f[2]
    }
    END { for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "." : ""), v[i] }' "$1" 2>/dev/null) || kb_reply=""
}
kb_is_under_deps() { case $1 in "$KB_DEPS_DIR"/*) return 0 ;; *) return 1 ;; esac; }

# --- one check per dependency ----------------------------------------------------------------------
kb_check_cxx() {
  local candidates=(g++ clang++) c path out ver kind min old=""
  [ -n "${CXX:-}" ] && candidates=("$CXX")   # CMake takes CXX when it is set: check that one
  for c in "${candidates[@]}"; do
    kb_which "$c" || continue; path=$kb_reply
    out=$("$path" --version 2>/dev/null) || out=""
    if [[ $out == *clang* ]]; then
      kind=clang++ min=14; [[ $out =~ version\ ([0-9.]+) ]] && ver=${BASH_REMATCH[1]} || ver=0
    else
      kind=g++ min=11; ver=$("$path" -dumpfullversion 2>/dev/null) || ver=0
    fi
    if kb_version_ge "$ver" "$min"; then kb_set cxx ok "$kind $ver" "$path"; kb_cxx=$path; return 0; fi
    old="$kind $ver at $path (C++20 needs g++ 11 or clang++ 14 or newer)"
  done
  if [ -n "$old" ]; then kb_set cxx old "$old"; else kb_set cxx missing "-"; fi
}
kb_check_cmake() {
  kb_which cmake || { kb_set cmake missing "-"; return 0; }
  local path=$kb_reply out ver=0
  out=$("$path" --version 2>/dev/null) || out=""
  [[ $out =~ version\ ([0-9.]+) ]] && ver=${BASH_REMATCH[1]}
  if kb_version_ge "$ver" 3.25; then kb_set cmake ok "$ver" "$path"
  else kb_set cmake old "cmake $ver at $path (3.25 or newer needed)"; fi
}
kb_check_ninja() {
  if kb_which ninja; then kb_set ninja ok "$("$kb_reply" --version 2>/dev/null || true)" "$kb_reply"
  elif kb_which make; then kb_set ninja missing "- (make will build)"
  else kb_set ninja missing "- (and no make)"; kb_need[ninja]=required; fi
}
kb_check_boost() {
  kb_find_header boost/version.hpp || { kb_set boost missing "-"; return 0; }
  local dir=$kb_reply v
  kb_defines "$dir/boost/version.hpp" BOOST_VERSION; v=${kb_reply:-0}
  local text="$((v / 100000)).$((v / 100 % 1000)).$((v % 100))"
  if ((v >= 108100)); then kb_set boost ok "$text" "$dir"
  else kb_set boost old "Boost $text at $dir (1.81 or newer needed)"; fi
}
# Found by CMake through its package config (find_package(NAME CONFIG)): the header is not enough.
kb_check_config() {  # ITEM CONFIG-NAME HEADER-DIR HEADER VERSION
  if kb_find_cmake_config "$2"; then kb_set "$1" ok "$5" "$3"
  else kb_set "$1" missing "$4 in $3, but no $2 CMake config"; fi
}
kb_check_fmt() {
  kb_find_header fmt/format.h || { kb_set fmt missing "-"; return 0; }
  local dir=$kb_reply f v=""
  for f in base.h core.h format.h; do
    [ -f "$dir/fmt/$f" ] || continue
    kb_defines "$dir/fmt/$f" FMT_VERSION; v=$kb_reply; [ -n "$v" ] && break
  done
  [ -n "$v" ] && v="$((v / 10000)).$((v / 100 % 100)).$((v % 100))"
  kb_check_config fmt fmt "$dir" fmt/format.h "${v:-found}"
}
kb_check_header() {  # ITEM HEADER CONFIG-NAME VERSION-HEADER PREFIX (PREFIX_MAJOR, _MINOR, _PATCH)
  kb_find_header "$2" || { kb_set "$1" missing "-"; return 0; }
  local dir=$kb_reply
  kb_defines "$dir/$4" "$5_MAJOR" "$5_MINOR" "$5_PATCH"
  [[ $kb_reply =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || kb_reply=found
  kb_check_config "$1" "$3" "$dir" "$2" "$kb_reply"
}
kb_check_benchmark() {  # the header, the library next to it, the CMake config
  kb_find_header benchmark/benchmark.h || { kb_set benchmark missing "-"; return 0; }
  local dir=$kb_reply lib line v=found
  local prefix=${dir%/include}
  for lib in "$prefix"/lib/libbenchmark.* "$prefix"/lib/*/libbenchmark.* "$prefix"/lib64/libbenchmark.*; do
    [ -e "$lib" ] || continue
    if kb_find_cmake_config benchmark && [ -f "$kb_reply/benchmarkConfigVersion.cmake" ]; then
      while read -r line; do
        [[ $line =~ ^set\(PACKAGE_VERSION\ \"([^\"]+)\" ]] && { v=${BASH_REMATCH[1]}; break; }
      done < "$kb_reply/benchmarkConfigVersion.cmake"
    fi
    kb_check_config benchmark benchmark "$dir" benchmark/benchmark.h "$v"; return 0
  done
  kb_set benchmark missing "benchmark/benchmark.h in $dir, but no libbenchmark library"
}
kb_check_tool() {  # ITEM COMMAND
  kb_which "$2" || { kb_set "$1" missing "-"; return 0; }
  local path=$kb_reply out ver=found
  out=$("$path" --version 2>/dev/null) || out=""
  [[ $out =~ version\ ([0-9.]+) ]] && ver=${BASH_REMATCH[1]}
  kb_set "$1" ok "$ver" "$path"
}
kb_check_cuda() {  # optional: reported, never installed, never required
  local home=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}} out
  if kb_which nvcc; then
    out=$("$kb_reply" --version 2>/dev/null) || out=""
    [[ $out =~ release\ ([0-9.]+) ]] && out=${BASH_REMATCH[1]} || out=found
    kb_set cuda ok "$out" "$kb_reply"
  elif [ -f "$home/include/nvrtc.h" ]; then
    kb_defines "$home/include/cuda.h" CUDA_VERSION
    kb_set cuda ok "${kb_reply:+$((kb_reply / 1000)).$((kb_reply % 1000 / 10))}" "$home"
  else kb_set cuda missing "- (the CUDA backend is not built)"; fi
}

kb_decide_needs() {
  local i; for i in "${kb_items[@]}"; do kb_need[$i]=required; done
  kb_need[ninja]=optional kb_need[cuda]=optional
  [ "${KB_NEED_TESTS:-1}" = 1 ] || kb_need[doctest]=optional
  [ "${KB_NEED_BENCH:-1}" = 1 ] || kb_need[benchmark]=optional
  case ${KB_NEED_LINT:-0} in
    1) ;;
    optional) kb_need[clang_format]=optional kb_need[clang_tidy]=optional ;;
    *) kb_need[clang_format]=unused kb_need[clang_tidy]=unused ;;
  esac
  kb_need[chartjs]=optional
  case ${KB_NEED_REPORT_TOOLS:-0} in
    1) ;;
    optional) kb_need[chromium]=optional kb_need[torch]=optional ;;
    *) kb_need[chromium]=unused kb_need[torch]=unused ;;
  esac
  case ${KB_NEED_MPI:-0} in
    1) ;;
    optional) kb_need[mpi]=optional ;;
    *) kb_need[mpi]=unused ;;
  esac
}
kb_check_mpi() {  # Open MPI's compiler wrapper (CMake's FindMPI asks it) and launcher
  if [ "${kb_need[mpi]}" = unused ]; then kb_set mpi skipped "(not asked for)"; return 0; fi
  if kb_which mpicc && kb_which mpirun; then kb_set mpi ok found "$kb_reply"; else kb_set mpi missing "-"; fi
}
kb_check_chartjs() {  # the UMD build Debian's libjs-chart.js installs (kernelbrain report's default)
  local p f
  for p in "${kb_prefixes[@]}"; do
    for f in "$p"/share/javascript/chart.js/chart.min.js "$p"/share/javascript/chart.js/chart.umd.js; do
      [ -f "$f" ] && { kb_set chartjs ok found "$f"; return 0; }
    done
  done
  kb_set chartjs missing "-"
}
kb_check_report_tools() {  # chromium on PATH; torch in a python3 package directory (no python3 started)
  if [ "${kb_need[chromium]}" = unused ]; then
    kb_set chromium skipped "(not asked for)"; kb_set torch skipped "(not asked for)"; return 0
  fi
  if kb_which chromium || kb_which chromium-browser; then kb_set chromium ok found "$kb_reply"
  else kb_set chromium missing "-"; fi
  local p d
  for p in "${kb_prefixes[@]}" "${HOME:-/nonexistent}/.local"; do
    for d in "$p"/lib/python3/dist-packages "$p"/lib/python3*/dist-packages "$p"/lib/python3*/site-packages; do
      [ -f "$d/torch/__init__.py" ] && { kb_set torch ok found "$d/torch"; return 0; }
    done
  done
  kb_set torch missing "-"
}
kb_detect() {
  local i
  kb_check_cxx; kb_check_cmake; kb_check_ninja; kb_check_boost; kb_check_fmt
  if kb_find_header zlib.h; then kb_set zlib ok found "$kb_reply"; else kb_set zlib missing "-"; fi
  kb_check_header cli11 CLI/CLI.hpp CLI11 CLI/Version.hpp CLI11_VERSION
  kb_check_header doctest doctest/doctest.h doctest doctest/doctest.h DOCTEST_VERSION
  kb_check_benchmark
  if [ "${kb_need[clang_format]}" = unused ]; then
    kb_set clang_format skipped "(not asked for)"; kb_set clang_tidy skipped "(not asked for)"
  else kb_check_tool clang_format clang-format; kb_check_tool clang_tidy clang-tidy; fi
  kb_check_chartjs
  kb_check_report_tools
  kb_check_mpi
  kb_check_cuda
  # What the caller wants (required or optional) and is not there; CUDA aside: it is never installed.
  kb_missing=() kb_missing_required=()
  for i in "${kb_items[@]}"; do
    [ "$i" = cuda ] || [ "${kb_need[$i]}" = unused ] || [ "${kb_status[$i]}" = ok ] && continue
    kb_missing+=("$i")
    [ "${kb_need[$i]}" = required ] && kb_missing_required+=("$i")
  done
  return 0
}

# --- the distribution and its package names -------------------------------------------------------
kb_read_os_release() {
  local file=${KB_OS_RELEASE:-/etc/os-release} line ID="" VERSION_ID="" PRETTY_NAME=""
  if [ -r "$file" ]; then
    while IFS= read -r line; do
      [[ $line =~ ^(ID|VERSION_ID|PRETTY_NAME)=\"?([^\"]*)\"?$ ]] && printf -v "${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
    done < "$file"
  fi
  case "$ID:$VERSION_ID" in
    debian:12) kb_distro=debian12 kb_distro_name="Debian 12" ;;
    ubuntu:22.04) kb_distro=ubuntu22.04 kb_distro_name="Ubuntu 22.04" ;;
    ubuntu:24.04) kb_distro=ubuntu24.04 kb_distro_name="Ubuntu 24.04" ;;
    *) kb_distro=unknown kb_distro_name="${PRETTY_NAME:-unknown system} (ID=${ID:-?} VERSION_ID=${VERSION_ID:-?})" ;;
  esac
}
# ITEM's package on this distribution (Debian 12's name on an unknown one); empty where the
# distribution has none recent enough (kb_no_package says why).
kb_package() {
  case $1 in
    cxx) kb_reply=g++ ;;
    cmake) [ "$kb_distro" = ubuntu22.04 ] && kb_reply="" || kb_reply=cmake ;;
    ninja) kb_reply=ninja-build ;;
    boost) case $kb_distro in ubuntu24.04) kb_reply=libboost1.83-dev ;; ubuntu22.04) kb_reply="" ;; *) kb_reply=libboost1.81-dev ;; esac ;;
    zlib) kb_reply=zlib1g-dev ;;
    fmt) kb_reply=libfmt-dev ;;
    cli11) kb_reply=libcli11-dev ;;
    doctest) kb_reply=doctest-dev ;;
    benchmark) kb_reply=libbenchmark-dev ;;
    clang_format) kb_reply=clang-format ;;
    clang_tidy) kb_reply=clang-tidy ;;
    chartjs) kb_reply=libjs-chart.js ;;
    chromium) [[ $kb_distro == ubuntu* ]] && kb_reply="" || kb_reply=chromium ;;
    torch) kb_reply=python3-torch ;;
    mpi) kb_reply=libopenmpi-dev ;;  # with openmpi-bin (mpirun), which it depends on
    *) kb_reply="" ;;
  esac
}
kb_library_package() {  # the shared-library package that ITEM's -dev package depends on, if any
  case "$kb_distro:$1" in
    ubuntu24.04:benchmark) kb_reply=libbenchmark1.8.3 ;;
    ubuntu22.04:benchmark) kb_reply=libbenchmark1 ;;
    *:benchmark) kb_reply=libbenchmark1debian ;;
    ubuntu22.04:fmt) kb_reply=libfmt8 ;;
    *:fmt) kb_reply=libfmt9 ;;
    *) kb_reply="" ;;
  esac
}
kb_no_package() {
  case "$kb_distro:$1" in
    ubuntu22.04:boost) kb_reply="Ubuntu 22.04 ships Boost 1.74 (libboost1.74-dev), older than the 1.81 needed: put Boost 1.81+ headers (a boost.org release) in a prefix and set BOOST_ROOT or CMAKE_PREFIX_PATH to it, or use Debian 12 / Ubuntu 24.04" ;;
    ubuntu*:chromium) kb_reply="Ubuntu ships Chromium as a snap only: 'snap install chromium' (or install Google Chrome), or KB_NEED_REPORT_TOOLS=0 to skip the report's browser test" ;;
    ubuntu22.04:cmake) kb_reply="Ubuntu 22.04's cmake package is 3.22.1, older than the 3.25 needed: 'pip install cmake' (or Kitware's APT repository)" ;;
    *) kb_reply="no package known" ;;
  esac
}

# --- installing with apt ----------------------------------------------------------------------------
kb_apt_unusable() {  # why apt cannot be used here, in kb_reply (fails when it can)
  if [ "${KB_NO_INSTALL:-0}" = 1 ]; then kb_reply="installing is turned off (KB_NO_INSTALL=1)"
  elif [ "$kb_distro" = unknown ]; then kb_reply="unknown distribution $kb_distro_name: package names are known for Debian 12, Ubuntu 22.04 and Ubuntu 24.04 (Debian 12's are shown)"
  elif ! kb_which apt-get; then kb_reply="no apt-get on this machine"
  elif [ "$kb_uid" != 0 ] && ! kb_which sudo; then kb_reply="not root and no sudo"
  else return 1; fi
}
kb_apt() {  # apt-get ARGS, as root or through sudo; its output goes to $kb_apt_log
  local sudo=(); [ "$kb_uid" = 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$kb_apt_log" 2>&1
}
kb_apt_install() {  # PACKAGE...: apt-get update once, then install the ones apt has a candidate for
  local p candidate installable=() hint=""
  [[ $kb_distro == ubuntu* ]] && hint=" (Ubuntu has it in the 'universe' component)"
  kb_say "installing with apt-get: $*"
  kb_apt_log=$(mktemp "${TMPDIR:-/tmp}/kb-setup-apt.XXXXXX")
  kb_apt -o Acquire::Retries=0 -o Acquire::http::Timeout=30 -o Acquire::https::Timeout=30 update -qq || true
  for p in "$@"; do
    candidate=$(apt-cache policy "$p" 2>/dev/null) || candidate=""
    [[ $candidate =~ Candidate:\ ([^[:space:]]+) ]] && candidate=${BASH_REMATCH[1]} || candidate=""
    if [ -n "$candidate" ] && [ "$candidate" != "(none)" ]; then installable+=("$p")
    else kb_apt_problem+=("apt has no candidate for $p$hint"); fi
  done
  if ((${#installable[@]})) && ! kb_apt install -y -qq "${installable[@]}"; then
    local errors; errors=$(grep -E '^E:' "$kb_apt_log" | tail -n 2 | tr '\n' ' ') || true
    kb_apt_problem+=("apt-get install ${installable[*]} failed (no network?): $errors")
  elif ((${#installable[@]})); then
    kb_apt_installed=("${installable[@]}")
  fi
  rm -f "$kb_apt_log"
}
# apt runs only when something required is missing (so that a machine without network does not try
# on every run for an optional piece); it then installs the optional ones too.
kb_try_apt() {
  local i pkgs=() none=()
  ((${#kb_missing_required[@]})) || return 0
  for i in "${kb_missing[@]}"; do
    kb_package "$i"
    if [ -n "$kb_reply" ]; then pkgs+=("$kb_reply"); elif [ "${kb_need[$i]}" = required ]; then none+=("${kb_label[$i]}"); fi
  done
  ((${#pkgs[@]})) || return 0
  if kb_apt_unusable; then kb_apt_problem+=("$kb_reply"); return 0; fi
  # A required piece that this distribution cannot provide: stop before installing the rest.
  if ((${#none[@]})); then
    printf -v i '%s, ' "${none[@]}"
    kb_apt_problem+=("nothing installed, since $kb_distro_name has no package for ${i%, } (see above)"); return 0
  fi
  kb_apt_install "${pkgs[@]}"
  kb_detect
  for i in "${kb_missing_required[@]}"; do  # installed, and still not where this script looks
    kb_package "$i"
    [[ " ${kb_apt_installed[*]} " == *" $kb_reply "* ]] &&
      kb_apt_problem+=("apt-get installed $kb_reply, but ${kb_label[$i]} is still not found in ${kb_include_dirs[*]}")
  done
  return 0
}

# --- offline: .deb files in $KB_DEPS_DIR/debs ---------------------------------------------------------
# Unpacks (dpkg-deb -x: no root, nothing installed system-wide) the .debs that hold a missing item's
# header, and those of the packages they depend on that are there too (libbenchmark-dev -> its library).
kb_try_offline_debs() {
  local debs=("$KB_DEPS_DIR"/debs/*.deb) deb i name dep contents
  [ -e "${debs[0]}" ] || return 0
  kb_which dpkg-deb || { kb_apt_problem+=("$KB_DEPS_DIR/debs has .deb files, but there is no dpkg-deb"); return 0; }
  local -A header=([boost]=boost/version.hpp [zlib]=zlib.h [fmt]=fmt/format.h [cli11]=CLI/CLI.hpp
    [doctest]=doctest/doctest.h [benchmark]=benchmark/benchmark.h)
  local -A selected=() wanted=()
  for deb in "${debs[@]}"; do
    contents=$(dpkg-deb -c "$deb" 2>/dev/null) || continue
    for i in "${kb_missing[@]}"; do
      [ -n "${header[$i]:-}" ] && [[ $contents == *"/include/${header[$i]}"* ]] || continue
      selected[$deb]=1
      for dep in $(dpkg-deb -f "$deb" Depends 2>/dev/null | tr ',|' '  '); do wanted[$dep]=1; done
      break
    done
  done
  ((${#selected[@]})) || return 0
  for deb in "${debs[@]}"; do  # apt-get download names them PACKAGE_VERSION_ARCH.deb
    name=${deb##*/}; name=${name%%_*}
    [ -n "${wanted[$name]:-}" ] && selected[$deb]=1
  done
  mkdir -p "$KB_DEPS_DIR/root"
  for deb in "${!selected[@]}"; do
    kb_say "unpacking ${deb##*/} into $KB_DEPS_DIR/root"
    dpkg-deb -x "$deb" "$KB_DEPS_DIR/root"
  done
  kb_detect
}

# --- reporting --------------------------------------------------------------------------------------
kb_print_table() {
  local i status need pkg
  kb_say "$kb_distro_name; headers looked for in: ${kb_include_dirs[*]}"
  printf '  %-17s %-9s %-10s %-40s %s\n' what status need found "package ($kb_distro_name)" >&2
  for i in "${kb_items[@]}"; do
    status=${kb_status[$i]} need=${kb_need[$i]}
    kb_package "$i"; pkg=${kb_reply:-"(none: see below)"}
    case "$i:$status" in
      cuda:ok) pkg=- ;;
      cuda:*) status="not found" pkg=- ;;
      *:ok) ;;
      *:skipped) status=- need="not asked" ;;
      *) status=${status^^} ;;
    esac
    printf '  %-17s %-9s %-10s %-40s %s\n' "${kb_label[$i]}" "$status" "$need" \
      "${kb_found[$i]}${kb_where[$i]:+ (${kb_where[$i]})}" "$pkg" >&2
  done
}
kb_fail_missing() {
  local i p what download=()
  {
    echo
    echo "kernelbrain setup: cannot build on $kb_distro_name: missing, and not installable here:"
    for i in "${kb_missing_required[@]}"; do
      kb_package "$i"
      if [ -n "$kb_reply" ]; then
        what="install package $kb_reply"
        case $i in  # libraries can be unpacked from .debs; tools cannot
          boost | zlib | fmt | cli11 | doctest | benchmark)
            download+=("$kb_reply"); kb_library_package "$i"; [ -z "$kb_reply" ] || download+=("$kb_reply") ;;
        esac
      else kb_no_package "$i"; what=$kb_reply; fi
      printf '  - %s (%s), needed for %s: %s\n' "${kb_label[$i]}" "${kb_probe[$i]}" "${kb_purpose[$i]}" "$what"
      [[ ${kb_found[$i]} == -* ]] || echo "      found: ${kb_found[$i]}"
    done
    for p in "${kb_apt_problem[@]}"; do echo "  why not installed: $p"; done
    [[ " ${kb_missing_required[*]} " == *" clang_"* ]] &&
      echo "  (clang-format and clang-tidy are asked for by KB_NEED_LINT=1; KB_NEED_LINT=0 goes on without them)"
    [[ " ${kb_missing_required[*]} " == *" chromium "* || " ${kb_missing_required[*]} " == *" torch "* ]] &&
      echo "  (Chromium and PyTorch are asked for by KB_NEED_REPORT_TOOLS=1; KB_NEED_REPORT_TOOLS=0 goes on without them)"
    [[ " ${kb_missing_required[*]} " == *" mpi "* ]] &&
      echo "  (Open MPI is asked for by KB_NEED_MPI=1; KB_NEED_MPI=0 goes on without it)"
    if ((${#download[@]})); then
      echo "  Without network: run 'apt-get download ${download[*]}' on a machine with network"
      echo "  ($kb_distro_name preferably), put the .deb files in $KB_DEPS_DIR/debs and run this again"
      echo "  (README.md, \"Machines without network\")."
    fi
  } >&2
  exit 1
}
kb_note_optional() {
  local i; for i in "${kb_missing[@]}"; do
    [ "${kb_need[$i]}" = optional ] || continue
    kb_package "$i"
    case $i in
      doctest) kb_say "doctest not found: the tests are not built (package $kb_reply)" ;;
      benchmark) kb_say "Google Benchmark not found: bench/ is not built (package $kb_reply)" ;;
      ninja) kb_say "ninja not found: make builds (package $kb_reply)" ;;
      clang_format | clang_tidy) kb_say "${kb_label[$i]} not found: its checks cannot run (package $kb_reply)" ;;
      chartjs) kb_say "Chart.js not found: kernelbrain report cannot draw its plots (package $kb_reply)" ;;
      chromium | torch) kb_say "${kb_label[$i]} not found: ${kb_purpose[$i]} is skipped${kb_reply:+ (package $kb_reply)}" ;;
      mpi) kb_say "Open MPI not found: --mpi and its tests are not built (package $kb_reply)" ;;
    esac
  done
}

# --- configure and build ----------------------------------------------------------------------------
kb_cmake_args() {
  kb_cmake=(-S "$KB_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
    -DKERNELBRAIN_WARNINGS_AS_ERRORS="${KB_WERROR:-OFF}")
  # An existing build directory keeps its generator (cmake refuses another one).
  [ "${kb_status[ninja]}" = ok ] && [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && kb_cmake+=(-G Ninja)
  local on=OFF; [ "${kb_status[doctest]}" = ok ] && on=ON; kb_cmake+=("-DKERNELBRAIN_BUILD_TESTS=$on")
  on=OFF; [ "${kb_status[benchmark]}" = ok ] && on=ON; kb_cmake+=("-DKERNELBRAIN_BUILD_BENCH=$on")
  # Unpacked .debs: CMake finds their package configs through CMAKE_PREFIX_PATH. Debian's doctest
  # config names /usr/include wherever it lies (CLI11's and Benchmark's are relocatable), so that
  # directory also goes to every compile, as -isystem after the project's own include directories.
  local i; for i in "${kb_items[@]}"; do
    if [ "${kb_status[$i]}" = ok ] && kb_is_under_deps "${kb_where[$i]}"; then
      kb_cmake+=(-DCMAKE_PREFIX_PATH="$KB_DEPS_DIR/root/usr"
        -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES="$KB_DEPS_DIR/root/usr/include")
      return 0
    fi
  done
}

kb_setup_main() {
  kb_apt_problem=() kb_apt_installed=() kb_uid=$(id -u)
  kb_read_os_release
  kb_search_dirs
  kb_decide_needs
  kb_detect
  ((${#kb_missing[@]} == 0)) || kb_try_apt
  ((${#kb_missing[@]} == 0)) || kb_try_offline_debs
  kb_print_table
  ((${#kb_missing_required[@]} == 0)) || kb_fail_missing
  kb_note_optional
  kb_cmake_args
  if [ "${KB_SETUP_CHECK_ONLY:-0}" = 1 ]; then
    printf 'cmake arguments:'; printf ' %q' "${kb_cmake[@]}"; echo
    exit 0
  fi
  mkdir -p "$BUILD_DIR"
  local cxx=(); [ -z "${CXX:-}" ] && [ -n "${kb_cxx:-}" ] && cxx=(env CXX="$kb_cxx")
  "${cxx[@]}" cmake "${kb_cmake[@]}" >"$BUILD_DIR/configure.log" 2>&1 \
    || { cat "$BUILD_DIR/configure.log" >&2; exit 1; }
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}
kb_setup_main
