// host_builds: the compile step of the host backend. A candidate's source goes through the source
// policy, the compiler (on this thread, or ahead of time in a background pool fed by prefetch) and
// a first load in the candidate worker, which runs its static initialisers there and never here.
// One verdict per candidate id, kept.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include "kernelbrain/backends/common/compile_pool.hpp"
#include "kernelbrain/backends/host/detail/compiler.hpp"
#include "kernelbrain/backends/host/detail/worker.hpp"
#include "kernelbrain/backends/host/options.hpp"
#include "kernelbrain/backends/host/source_policy.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::detail::host {

/// A candidate, built: pass with the shared object it compiled to, or why not.
struct built {
  verdict result;
  std::string artifact;
};

class host_builds {
 public:
  /// `opt` must outlive this object; `worker_exe` applies the compiler's limits (its --exec mode).
  /// Probes the compiler: throws kernelbrain::error when it is unusable. With host_options::sanitize,
  /// also asks it for its sanitizer runtimes (the sanitizer stage is off without them).
  host_builds(host_options const& opt, std::string const& worker_exe)
      : opt_(opt), compiler_(compiler_options(opt, worker_exe)) {
    if (!opt_.sanitize) return;
    runtimes_ = find_sanitizer_runtimes(opt_.compiler);
    if (runtimes_.empty()) return;
    auto o = compiler_options(opt, worker_exe);
    o.flags.insert(o.flags.end(), opt_.sanitizer_flags.begin(), opt_.sanitizer_flags.end());
    sanitizing_.emplace(std::move(o));
  }

  /// The sanitizer runtimes to preload for a sanitized build (colon-separated); empty when the
  /// sanitizer stage is off.
  [[nodiscard]] std::string const& sanitizer_runtimes() const noexcept { return runtimes_; }

  /// `source` compiled with the sanitizer flags (or found in the artifact cache); the stage must be on.
  compile_result compile_sanitized(std::string const& source) {
    auto r = sanitizing_->compile(source);
    ++(r.cache_hit ? hits_ : compiles_);
    return r;
  }

  /// `source` compiled (or found in the artifact cache), counted as a compile or a cache hit.
  compile_result compile(std::string const& source) {
    auto r = compiler_.compile(source);
    ++(r.cache_hit ? hits_ : compiles_);
    return r;
  }

  /// Starts compiling `source` in the background, when there are compile threads and the source
  /// policy admits it (build() enforces the policy again). Safe from any thread.
  void prefetch(std::string const& source) {
    if (opt_.compile_threads == 0 || source.empty() || !inspect_host_source(source, opt_.policy)) return;
    pool_.prefetch(source_key(source), [this, source] { return compile(source); });
  }

  /// `c` built and loaded once in `cand` (the candidate worker); remembered by id.
  built const& build(candidate const& c, host_worker& cand) {
    if (auto it = builds_.find(c.id.value); it != builds_.end()) return it->second;
    built b;
    if (c.source.empty())
      b.result = verdict::reject(stage::compile,
                                 "the candidate has no source: a host candidate is a C++ file defining "
                                 "extern \"C\" void kb_kernel(const kb_args* args)");
    if (b.result) b.result = inspect_host_source(c.source, opt_.policy);  // enforced even when no gate ran
    if (b.result) {
      auto r = pool_.get(source_key(c.source), [this, &c] { return compile(c.source); });
      b.result = r.result;
      b.artifact = r.artifact;
    }
    if (b.result) {
      // Loading runs the candidate's static initialisers: in the worker, never here.
      cand.admit({&b.artifact}, opt_.modules_per_worker);
      b.result = cand.load(b.artifact, opt_.candidate_memory, "loading the candidate");
    }
    return builds_.emplace(c.id.value, std::move(b)).first->second;
  }

  [[nodiscard]] host_compiler const& compiler() const noexcept { return compiler_; }
  [[nodiscard]] std::size_t compiles() const noexcept { return compiles_; }
  [[nodiscard]] std::size_t cache_hits() const noexcept { return hits_; }

 private:
  static host_compiler_options compiler_options(host_options const& opt, std::string const& worker_exe) {
    host_compiler_options c;
    c.compiler = opt.compiler;
    c.flags = opt.flags;
    c.include_dir = opt.include_dir;
    c.cache_dir = opt.cache_dir;
    c.time_limit = ceil_millis(opt.compile_timeout);
    c.memory_bytes = opt.compile_memory;
    c.limiter = worker_exe;
    return c;
  }
  static std::uint64_t source_key(std::string const& source) { return hasher{}.bytes(source).digest(); }

  /// AddressSanitizer's and UndefinedBehaviorSanitizer's runtimes as `compiler` links them
  /// (-print-file-name), colon-separated; empty when it has not both.
  static std::string find_sanitizer_runtimes(std::string const& compiler) {
    std::string joined;
    for (char const* lib : {"libasan.so", "libubsan.so"}) {
      const auto r = run_captured({compiler, std::string("-print-file-name=") + lib}, std::chrono::seconds(30));
      std::string path = r.succeeded() ? r.output.substr(0, r.output.find('\n')) : std::string{};
      std::error_code ec;
      if (path.empty() || path.front() != '/' || !std::filesystem::exists(path, ec)) return {};
      path = std::filesystem::canonical(path, ec).string();
      if (ec) return {};
      joined += (joined.empty() ? "" : ":") + path;
    }
    return joined;
  }

  host_options const& opt_;
  host_compiler compiler_;
  std::string runtimes_;                             ///< the sanitizer runtimes; empty: the stage is off
  std::optional<host_compiler> sanitizing_;          ///< the compiler with the sanitizer flags
  std::atomic<std::size_t> compiles_{0}, hits_{0};   ///< counted where the compile runs (pool or inline)
  std::unordered_map<std::uint64_t, built> builds_;  ///< by candidate id
  /// Failed compiles are remembered (not cached on disk); passing ones are in the artifact cache.
  /// Declared last: its threads stop before anything they use goes away.
  compile_pool<compile_result> pool_{[](compile_result const& r) { return !r.result; },
                                     std::max(1u, opt_.compile_threads)};
};

}  // namespace kernelbrain::detail::host
