// A scratch directory for one benchmark process (an artifact cache), removed at exit.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kb_bench {

inline std::string scratch_dir(std::string const& tag) {
  struct dir {
    std::filesystem::path path;
    ~dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static dir d{std::filesystem::temp_directory_path() / ("kb-" + tag + "-" + std::to_string(::getpid()))};
  return d.path.string();
}

}  // namespace kb_bench
