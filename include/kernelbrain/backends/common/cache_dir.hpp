// default_cache_dir: where the backends keep compiled artifacts between runs (the host backend's
// shared objects under host/, the CUDA backend's cubins under cuda/).
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

namespace kernelbrain::detail {

/// The cache root: $KERNELBRAIN_CACHE_DIR, else $XDG_CACHE_HOME/kernelbrain, else ~/.cache/kernelbrain.
[[nodiscard]] inline std::string default_cache_dir() {
  namespace fs = std::filesystem;
  if (char const* d = std::getenv("KERNELBRAIN_CACHE_DIR"); d && *d) return d;
  if (char const* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "kernelbrain").string();
  if (char const* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "kernelbrain").string();
  return (fs::temp_directory_path() / "kernelbrain-cache").string();
}

}  // namespace kernelbrain::detail
