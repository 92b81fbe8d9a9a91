// The library's version: the one place it is written. CMakeLists.txt reads project(VERSION) from
// these three lines; journal headers and every program's --version report it.
#pragma once
#include <string_view>

#define KERNELBRAIN_VERSION_MAJOR 0
#define KERNELBRAIN_VERSION_MINOR 1
#define KERNELBRAIN_VERSION_PATCH 0

#define KERNELBRAIN_DETAIL_STRINGIZE2(x) #x
#define KERNELBRAIN_DETAIL_STRINGIZE(x) KERNELBRAIN_DETAIL_STRINGIZE2(x)
/// "major.minor.patch" as a string literal.
#define KERNELBRAIN_DETAIL_VERSION_STRING                                                       \
  KERNELBRAIN_DETAIL_STRINGIZE(KERNELBRAIN_VERSION_MAJOR)                                       \
  "." KERNELBRAIN_DETAIL_STRINGIZE(KERNELBRAIN_VERSION_MINOR) "." KERNELBRAIN_DETAIL_STRINGIZE( \
      KERNELBRAIN_VERSION_PATCH)

namespace kernelbrain {
/// The library version ("major.minor.patch"), written to journal headers.
inline constexpr std::string_view library_version = KERNELBRAIN_DETAIL_VERSION_STRING;
}  // namespace kernelbrain
