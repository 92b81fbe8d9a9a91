// cuda_compile_cache: the compile step of the CUDA backend. NVRTC runs in a killable child
// (kernelbrain-cuda-worker --compile) under a wall-clock limit; cubins and their ptxas logs are
// cached on disk by content (source, options, NVRTC version), safely shared by several searches; a
// pool compiles proposed candidates ahead of time (prefetch).
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/compile_pool.hpp"
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::detail::cuda {

/// One compile's outcome: pass with the cubin and NVRTC's log (its ptxas report), or why not.
struct compiled {
  verdict result;
  std::string cubin, log;
  double seconds = 0;  ///< wall seconds of the NVRTC run that made it, when this process ran it; else 0
};

/// An exclusive lock on `<key>.lock` for the lifetime of the object (flock: released by close, so
/// a killed holder never leaves it taken). No lock (a no-op) where the file cannot be opened.
class key_lock {
 public:
  explicit key_lock(std::string const& path) : fd_(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~key_lock() {
    if (fd_ >= 0) ::close(fd_);
  }
  key_lock(key_lock const&) = delete;
  key_lock& operator=(key_lock const&) = delete;

 private:
  int fd_ = -1;
};

class compile_cache {
 public:
  /// `worker_exe` compiles (its --compile mode), killed after `compile_timeout` seconds.
  compile_cache(std::string worker_exe, double compile_timeout)
      : worker_exe_(std::move(worker_exe)), compile_timeout_(compile_timeout) {}

  /// Where the cache is (an existing directory) and what every key includes: the NVRTC options and
  /// version. Call once, before any compile or prefetch.
  void open(std::string directory, std::vector<std::string> nvrtc_options, std::string nvrtc_version) {
    dir_ = std::move(directory);
    options_ = std::move(nvrtc_options);
    nvrtc_version_ = std::move(nvrtc_version);
  }

  /// The NVRTC options, as one string (for the fingerprint and the keys).
  [[nodiscard]] std::string options_text() const {
    std::string t;
    for (auto const& o : options_) t += o + " ";
    return t;
  }

  /// Queues a background compile of `source` unless it is cached, queued or running.
  void prefetch(std::string const& source) {
    if (source.empty()) return;
    const auto key = key_of(source);
    if (cached_on_disk(key)) return;
    pool_.prefetch(key, [this, key, source] { return compile_now(key, source); });
  }

  /// The compile of `source`: from a finished or running job, inline when queued or unknown.
  compiled compile(std::string const& source) {
    const auto key = key_of(source);
    return pool_.get(key, [this, key, &source] { return compile_now(key, source); });
  }

  /// The kernels of `cc`'s cubin (`cc`: compile(source)'s result). A cached cubin that cannot be read
  /// is compiled again once, and `cc` replaced; nullopt with `why` when it still cannot be read.
  std::optional<cubin_info> read(std::string const& source, compiled& cc, std::string& why) {
    try {
      return read_cubin_file(cc.cubin);
    } catch (error const& e) {
      why = e.what();
    }
    std::error_code ec;
    const auto key = key_of(source);
    std::filesystem::remove(base_of(key) + ".cubin", ec);
    std::filesystem::remove(base_of(key) + ".log", ec);
    cc = compile_now(key, source);
    if (!cc.result) return std::nullopt;
    try {
      return read_cubin_file(cc.cubin);
    } catch (error const& e) {
      why = e.what();
    }
    return std::nullopt;
  }

  [[nodiscard]] std::size_t compiles() const noexcept { return compiles_; }
  [[nodiscard]] std::size_t cache_hits() const noexcept { return hits_; }

 private:
  [[nodiscard]] std::uint64_t key_of(std::string const& source) const {
    return hasher{}.bytes(source + "\n//" + options_text() + "\n//" + nvrtc_version_).digest();
  }
  [[nodiscard]] std::string base_of(std::uint64_t key) const {
    return (std::filesystem::path(dir_) / to_hex(key)).string();
  }
  [[nodiscard]] bool cached_on_disk(std::uint64_t key) const {
    std::error_code ec;
    const auto base = base_of(key);
    return std::filesystem::is_regular_file(base + ".cubin", ec) && std::filesystem::is_regular_file(base + ".log", ec);
  }

  compiled compile_now(std::uint64_t key, std::string const& source) {
    namespace fs = std::filesystem;
    compiled c;
    const auto base = base_of(key);
    c.cubin = base + ".cubin";
    std::error_code ec;
    // One compile of a key at a time across processes and evaluators sharing the cache (two
    // searches on two GPUs): the second waits and then finds the first one's result. Concurrent
    // compiles of one key lost their ptxas report on the H200 machine (kernels then looked
    // undefined); within one evaluator the pool already serialises a key.
    const key_lock lock(base + ".lock");
    if (cached_on_disk(key)) {
      std::ifstream in(base + ".log");
      std::stringstream ss;
      ss << in.rdbuf();
      c.log = ss.str();
      ++hits_;
      // A background compile's cubin is found on disk when the search asks for it (the pool keeps
      // only failures): its NVRTC time is the one this process measured.
      const std::lock_guard lk(seconds_mu_);
      if (auto it = seconds_.find(key); it != seconds_.end()) c.seconds = it->second;
      return c;
    }
    ++compiles_;
    // Several searches may share the cache (one per GPU): everything is written under names of this
    // process and thread, then renamed into place (atomic), cubin before log, because a reader
    // takes the pair as a hit only when both exist. A reader never sees a half-written file.
    static std::atomic<std::uint64_t> serial{0};
    const auto tmp = base + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    const auto src = tmp + ".cu", cubin = tmp + ".cubin", log = tmp + ".log";
    std::ofstream(src, std::ios::binary) << source;
    std::vector<std::string> argv = {worker_exe_, "--compile", src, cubin};
    for (auto const& o : options_) argv.push_back(o);
    const auto started = std::chrono::steady_clock::now();
    const auto r = run_captured(argv, ceil_millis(compile_timeout_), 256 * 1024);
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    c.log = r.output;
    auto cleanup = [&] {
      fs::remove(src, ec);
      fs::remove(cubin, ec);
      fs::remove(log, ec);
    };
    if (r.timed_out) {
      cleanup();
      c.result = verdict::reject(
          stage::compile, "NVRTC did not finish within " + std::to_string(compile_timeout_) + " s and was killed");
      return c;
    }
    if (!r.succeeded() || !fs::is_regular_file(cubin, ec)) {
      cleanup();
      std::string tail = r.output.size() > 4000 ? r.output.substr(0, 4000) + "..." : r.output;
      c.result = r.started ? verdict::reject(stage::compile,
                                             "NVRTC failed (" + describe_wait_status(r.wait_status) + "): " + tail)
                           : verdict::reject(stage::infrastructure, "cannot start the NVRTC compile: " + tail);
      return c;
    }
    std::ofstream(log) << c.log;
    {
      const std::lock_guard lk(seconds_mu_);
      seconds_[key] = c.seconds;
    }
    fs::rename(cubin, c.cubin, ec);
    if (!ec) fs::rename(log, base + ".log", ec);
    if (ec) {  // keep going with this process's copy; the cache just misses next time
      c.cubin = cubin;
      fs::remove(log, ec);
    }
    fs::remove(src, ec);
    return c;
  }

  std::string worker_exe_;
  double compile_timeout_;
  std::string dir_, nvrtc_version_;
  std::vector<std::string> options_;
  std::atomic<std::size_t> compiles_{0}, hits_{0};
  std::mutex seconds_mu_;
  std::unordered_map<std::uint64_t, double> seconds_;  ///< NVRTC wall seconds of the compiles this process ran
  /// Failed compiles are remembered (not cached on disk: a killed compile depends on the limit).
  /// Declared last: its threads stop before anything they use goes away.
  compile_pool<compiled> pool_{[](compiled const& c) { return !c.result; }};
};

}  // namespace kernelbrain::detail::cuda
