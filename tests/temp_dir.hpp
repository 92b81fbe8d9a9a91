// Scratch directories for tests: one fresh directory per use, removed when it goes out of scope, and
// one per test process (an artifact cache shared by a file's test cases); and reading a file whole.
// Shared by the CPU and GPU tests.
#pragma once
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

namespace kb_test {

/// A fresh, empty directory under the system temp directory; removed with everything in it.
class temp_dir {
 public:
  explicit temp_dir(std::string const& tag = "test") {
    static std::atomic<unsigned> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("kb_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(temp_dir const&) = delete;
  temp_dir& operator=(temp_dir const&) = delete;
  [[nodiscard]] std::filesystem::path operator/(std::string const& name) const { return path / name; }

  std::filesystem::path path;
};

/// One directory for the whole test process under `tag` (each test case is its own process under
/// ctest), removed at exit.
inline std::string process_dir(std::string const& tag) {
  static std::map<std::string, std::unique_ptr<temp_dir>> dirs;
  auto& d = dirs[tag];
  if (!d) d = std::make_unique<temp_dir>(tag);
  return d->path.string();
}

/// A file's contents ("" when it cannot be read).
inline std::string slurp(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kb_test
