// The host backend's static source policy: forbidden constructs (inline assembly, processes,
// dynamic loading, raw system calls, memory mapping, signal handlers, file and network I/O) and an
// #include allowlist. A cheap first filter, not a sandbox: isolation and the runtime checks are.
// Bodies: impl/source_policy.ipp.
#pragma once
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

struct host_source_policy {
  bool enabled = true;
  /// Headers a candidate may include, by name as written between <> or "".
  std::vector<std::string> allowed_includes = {"cmath",
                                               "cstddef",
                                               "cstdint",
                                               "cstring",
                                               "algorithm",
                                               "array",
                                               "numeric",
                                               "limits",
                                               "immintrin.h",
                                               "thread",
                                               "vector",
                                               "atomic",
                                               "kernelbrain/evaluate/host_abi.h"};
  /// More identifiers to refuse, on top of the built-in list.
  std::vector<std::string> extra_forbidden;
};

/// Pass, or stage::policy naming the first forbidden construct and its line. Comments and string
/// literals are skipped; identifiers are matched as whole tokens after line splicing, anywhere but
/// after `.` or `->` (so macros cannot hide a call); `##` is refused because it can assemble names.
[[nodiscard]] KERNELBRAIN_DECL verdict inspect_host_source(std::string_view source, host_source_policy const& policy);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/host/impl/source_policy.ipp"
#endif
