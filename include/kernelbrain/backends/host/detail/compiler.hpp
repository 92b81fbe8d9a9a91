// Compiles host-backend sources (candidates and references) into shared objects: the system
// compiler in a killable, resource-limited child, with artifacts cached on disk by content.
// Bodies: impl/compiler.ipp.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/common/cache_dir.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::detail {

struct host_compiler_options {
  std::string compiler = "c++";  ///< looked up on PATH
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-march=native"};
  std::string include_dir;                      ///< holds kernelbrain/evaluate/host_abi.h; empty: this installation's
  std::string cache_dir;                        ///< artifacts go to <cache_dir>/host/
  std::chrono::milliseconds time_limit{60000};  ///< wall clock per compile; the process group is killed after it
  std::uint64_t memory_bytes = std::uint64_t{2} << 30;  ///< address-space limit of the compiler
  std::string limiter;                                  ///< the worker executable: its --exec mode applies the limits
};

struct compile_result {
  verdict result;        ///< pass; or compile / signature with the compiler's first lines
  std::string artifact;  ///< the shared object, when it passed
  bool cache_hit = false;
  double seconds = 0;  ///< wall time spent compiling (0 on a cache hit)
};

class host_compiler {
 public:
  /// Probes the compiler (`--version`) and prepares the cache directory. Throws kernelbrain::error
  /// naming the compiler or directory when either is unusable.
  KERNELBRAIN_DECL explicit host_compiler(host_compiler_options o);

  /// Compiles `source` (or finds it in the cache). Never throws for a bad source.
  [[nodiscard]] KERNELBRAIN_DECL compile_result compile(std::string_view source);

  /// The first line of `compiler --version`: part of every cache key and of the fingerprint.
  [[nodiscard]] std::string const& version() const noexcept { return version_; }
  /// The flags that change the generated code, as one string.
  [[nodiscard]] KERNELBRAIN_DECL std::string flags_text() const;
  /// Where artifacts go.
  [[nodiscard]] std::string const& directory() const noexcept { return dir_; }
  [[nodiscard]] host_compiler_options const& options() const noexcept { return opt_; }

 private:
  host_compiler_options opt_;
  std::string version_, dir_, prelude_, abi_text_;
};

}  // namespace kernelbrain::detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/host/detail/impl/compiler.ipp"
#endif
