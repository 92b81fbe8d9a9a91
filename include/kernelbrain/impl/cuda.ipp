// Bodies of kernelbrain/evaluate/cuda.hpp: the trusted parent side of the CUDA backend. No CUDA
// header and no CUDA library here: compiles and kernels run in kernelbrain-cuda-worker processes.
// Compiled once, from kernelbrain/src.hpp; never include this anywhere else.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/detail/compile_pool.hpp"
#include "kernelbrain/evaluate/cubin.hpp"
#include "kernelbrain/evaluate/cuda.hpp"
#include "kernelbrain/evaluate/cuda_protocol.hpp"
#include "kernelbrain/evaluate/launch_plan.hpp"
#include "kernelbrain/evaluate/worker_process.hpp"
#include "kernelbrain/generate/template_space.hpp"

namespace kernelbrain {
namespace detail::cuda {

namespace fs = std::filesystem;
namespace cp = cuda_protocol;

inline std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

inline std::uint64_t hash_text(std::string_view s) { return hasher{}.bytes(s).digest(); }

}  // namespace detail::cuda

verdict sanitizer_verdict(std::string const& tool, bool timed_out, int wait_status, std::string const& output,
                          double limit) {
  auto tail = [&](std::size_t n) { return output.size() > n ? "..." + output.substr(output.size() - n) : output; };
  if (timed_out)
    return verdict::reject(stage::sanitizer, tool + ": the candidate did not finish under compute-sanitizer within " +
                                                 std::to_string(static_cast<int>(limit)) + " s");
  // Errors: the summary line, or the exit status asked for with --error-exitcode.
  int errors = 0, warnings = 0;
  bool summary = false;
  std::istringstream in(output);
  std::string line;
  std::vector<std::string> report;
  bool candidate_failed = false, ran = false;
  while (std::getline(in, line)) {
    if (line.find("kernelbrain-sanitize: ok") != std::string::npos) ran = true;
    if (line.find("kernelbrain-sanitize: the candidate failed") != std::string::npos ||
        line.find("kernelbrain-cuda-worker: sticky CUDA error") != std::string::npos) {
      candidate_failed = true;
      report.push_back(line);
    }
    if (line.rfind("=========", 0) != 0) continue;
    std::string text = line.substr(9);
    const auto first = text.find_first_not_of(' ');
    text = first == std::string::npos ? std::string{} : text.substr(first);
    if (auto at = text.find("ERROR SUMMARY: "); at != std::string::npos) {
      std::from_chars(text.data() + at + 15, text.data() + text.size(), errors);
      summary = true;
      continue;
    }
    if (text.find("RACECHECK SUMMARY:") != std::string::npos) {
      // "N hazards displayed (E errors, W warnings)": racecheck's --error-exitcode counts warnings too.
      if (auto at = text.find('('); at != std::string::npos) std::from_chars(text.data() + at + 1, text.data() + text.size(), errors);
      if (auto at = text.find(", "); at != std::string::npos) std::from_chars(text.data() + at + 2, text.data() + text.size(), warnings);
      summary = true;
      continue;
    }
    if (text.empty() || text.rfind("COMPUTE-SANITIZER", 0) == 0 || text.rfind("Program hit", 0) == 0 ||
        text.rfind("Saved host backtrace", 0) == 0 || text.rfind("Host Frame", 0) == 0)
      continue;
    if (report.size() < 4) report.push_back(text);
  }
  const bool error_exit = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 86;
  // Racecheck's warnings (hazards it rates as possibly benign, such as intra-warp ones between
  // warp-synchronous instructions) are not errors: with a summary that counts no error, they pass.
  const bool only_warnings = tool == "racecheck" && summary && errors == 0 && warnings > 0 && ran;
  std::string what;
  for (auto const& r : report) what += (what.empty() ? "" : " / ") + r;
  if (errors > 0 || (error_exit && !only_warnings))
    return verdict::reject(stage::sanitizer, tool + (errors > 0 ? " found " + std::to_string(errors) + " error" + (errors == 1 ? "" : "s")
                                                                : std::string(" reported errors")) +
                                                 ": " + what);
  if (candidate_failed) return verdict::reject(stage::sanitizer, tool + ": the candidate failed under compute-sanitizer: " + what);
  if (ran && ((WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) || only_warnings)) return verdict::pass();
  return verdict::reject(stage::infrastructure,
                         "compute-sanitizer " + tool + " did not run the candidate (" + describe_wait_status(wait_status) + "): " + tail(600));
}

std::string find_cuda_worker(std::string const& explicit_path) {
  namespace fs = std::filesystem;
  auto usable = [](std::string const& p) { return !p.empty() && fs::is_regular_file(p) && ::access(p.c_str(), X_OK) == 0; };
  if (!explicit_path.empty()) {
    if (usable(explicit_path)) return explicit_path;
    throw error("cuda backend: worker_path '" + explicit_path + "' is not an executable file");
  }
  if (char const* env = std::getenv("KERNELBRAIN_CUDA_WORKER"); env && *env) {
    if (usable(env)) return env;
    throw error(std::string("cuda backend: KERNELBRAIN_CUDA_WORKER='") + env + "' is not an executable file");
  }
  std::string looked;
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = (self.parent_path() / "kernelbrain-cuda-worker").string();
    if (usable(beside)) return beside;
    looked = beside;
  }
#ifdef KERNELBRAIN_CUDA_WORKER_BUILD_PATH
  if (usable(KERNELBRAIN_CUDA_WORKER_BUILD_PATH)) return KERNELBRAIN_CUDA_WORKER_BUILD_PATH;
  looked += std::string(looked.empty() ? "" : ", ") + KERNELBRAIN_CUDA_WORKER_BUILD_PATH;
#endif
  throw error("cuda backend: cannot find kernelbrain-cuda-worker (looked at: " + (looked.empty() ? std::string("nothing") : looked) +
              "): configure with the CUDA toolkit so that the kernelbrain_cuda_worker target is built, or set "
              "KERNELBRAIN_CUDA_WORKER");
}

struct cuda_evaluator::state {
  problem prob;
  cuda_options opt;
  std::string worker_exe;
  std::string cache;
  std::string nvrtc_version, device_text;
  std::uint64_t l2_bytes = 0;
  std::string fingerprint;
  worker_process worker;
  std::vector<std::vector<cuda_protocol::tensor>> in_t, out_t;  // per shape
  std::vector<std::vector<std::int64_t>> dims;
  std::string ref_cubin;
  std::vector<cuda_protocol::plan> ref_plans;
  struct built {
    verdict result;
    std::string cubin;
    std::vector<cuda_protocol::plan> plans;  // per shape
    resources res;
  };
  std::unordered_map<std::uint64_t, built> builds;
  double spent = 0;
  std::atomic<std::size_t> compiles{0}, hits{0};
  std::string sanitizer;                  ///< compute-sanitizer, or empty: the stage is off
  std::size_t sanitize_shape = 0;         ///< the smallest correctness shape
  std::size_t adversarial_shape = 0;      ///< the smallest "odd" shape (else the smallest correctness shape)
  std::set<std::string> sanitized_families;  ///< families whose template instance passed the sanitizer
  std::unordered_map<std::uint64_t, verdict> sanitized;  ///< per candidate id
  std::size_t sanitizer_runs = 0;
  mutable std::mutex mu;  ///< builds, worker, spent: the evaluation thread's state

  state(problem const& p, cuda_options o)
      : prob(p), opt(std::move(o)), worker_exe(find_cuda_worker(opt.worker_path)), worker(worker_exe, cuda_protocol::role) {}

  std::string options_text() const {
    std::string t;
    for (auto const& o : opt.nvrtc_options) t += o + " ";
    return t;
  }

  struct compiled {
    verdict result;
    std::string cubin, log;
  };

  // ---- Compiles: a pool of background compiles fed by prefetch(), deduplicated by content key
  // (`pool`, declared last so that its threads stop before anything they use goes away). ----
  std::uint64_t compile_key(std::string const& source) const {
    return detail::cuda::hash_text(source + "\n//" + options_text() + "\n//" + nvrtc_version);
  }
  std::string cache_base(std::uint64_t key) const { return (std::filesystem::path(cache) / to_hex(key)).string(); }
  bool cached_on_disk(std::uint64_t key) const {
    std::error_code ec;
    const auto base = cache_base(key);
    return std::filesystem::is_regular_file(base + ".cubin", ec) && std::filesystem::is_regular_file(base + ".log", ec);
  }

  /// Queues a background compile of `source` unless it is cached, queued or running.
  void prefetch(std::string const& source) {
    if (source.empty()) return;
    const auto key = compile_key(source);
    if (cached_on_disk(key)) return;
    pool.prefetch(key, [this, key, source] { return compile_now(key, source); });
  }

  /// The compile of `source`: from a finished or running job, inline when queued or unknown.
  compiled compile(std::string const& source) {
    const auto key = compile_key(source);
    return pool.get(key, [this, key, &source] { return compile_now(key, source); });
  }

  /// An exclusive lock on `<key>.lock` for the lifetime of the object (flock: released by close, so
  /// a killed holder never leaves it taken). No lock (a no-op) where the file cannot be opened.
  struct key_lock {
    int fd = -1;
    explicit key_lock(std::string const& path) : fd(::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
      if (fd >= 0)
        while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    ~key_lock() {
      if (fd >= 0) ::close(fd);
    }
    key_lock(key_lock const&) = delete;
    key_lock& operator=(key_lock const&) = delete;
  };

  compiled compile_now(std::uint64_t key, std::string const& source) {
    namespace fs = std::filesystem;
    compiled c;
    const auto base = cache_base(key);
    c.cubin = base + ".cubin";
    std::error_code ec;
    // One compile of a key at a time across processes and evaluators sharing the cache (two
    // searches on two GPUs): the second waits and then finds the first one's result. Concurrent
    // compiles of one key lost their ptxas report on the H200 machine (kernels then looked
    // undefined); within one evaluator `jobs` already serialises a key.
    const key_lock lock(base + ".lock");
    if (cached_on_disk(key)) {
      std::ifstream in(base + ".log");
      std::stringstream ss;
      ss << in.rdbuf();
      c.log = ss.str();
      ++hits;
      return c;
    }
    ++compiles;
    // Several searches may share the cache (one per GPU): everything is written under names of this
    // process and thread, then renamed into place (atomic), cubin before log, because a reader
    // takes the pair as a hit only when both exist. A reader never sees a half-written file.
    static std::atomic<std::uint64_t> serial{0};
    const auto tmp = base + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
    const auto src = tmp + ".cu", cubin = tmp + ".cubin", log = tmp + ".log";
    std::ofstream(src, std::ios::binary) << source;
    std::vector<std::string> argv = {worker_exe, "--compile", src, cubin};
    for (auto const& o : opt.nvrtc_options) argv.push_back(o);
    const auto r = run_captured(argv, detail::cuda::millis(opt.compile_timeout), 256 * 1024);
    c.log = r.output;
    auto cleanup = [&] {
      fs::remove(src, ec);
      fs::remove(cubin, ec);
      fs::remove(log, ec);
    };
    if (r.timed_out) {
      cleanup();
      c.result = verdict::reject(stage::compile, "NVRTC did not finish within " + std::to_string(opt.compile_timeout) +
                                                     " s and was killed");
      return c;
    }
    if (!r.succeeded() || !fs::is_regular_file(cubin, ec)) {
      cleanup();
      std::string tail = r.output.size() > 4000 ? r.output.substr(0, 4000) + "..." : r.output;
      c.result = r.started ? verdict::reject(stage::compile, "NVRTC failed (" + describe_wait_status(r.wait_status) + "): " + tail)
                           : verdict::reject(stage::infrastructure, "cannot start the NVRTC compile: " + tail);
      return c;
    }
    std::ofstream(log) << c.log;
    fs::rename(cubin, c.cubin, ec);
    if (!ec) fs::rename(log, base + ".log", ec);
    if (ec) {  // keep going with this process's copy; the cache just misses next time
      c.cubin = cubin;
      fs::remove(log, ec);
    }
    fs::remove(src, ec);
    return c;
  }

  void setup() {
    namespace fs = std::filesystem;
    auto where = [&](std::string const& w) { return "problem '" + prob.name + "' (cuda backend): " + w; };
    if (prob.backend != "cuda") throw error(where("it is for backend '" + prob.backend + "'"));
    if (prob.reference_source.empty() || prob.reference_launch.empty())
      throw error(where("needs a reference {source, launch}"));
    if (auto a = prob.options.find("arch"); a != prob.options.end()) {  // the problem's NVRTC target
      bool set = false;
      for (auto& o : opt.nvrtc_options)
        if (o.starts_with("--gpu-architecture=")) { o = "--gpu-architecture=" + a->second; set = true; }
      if (!set) opt.nvrtc_options.push_back("--gpu-architecture=" + a->second);
    }
    cache = (fs::path(opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir) / "cuda").string();
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (!fs::is_directory(cache)) throw error("cuda backend: cannot create the cache directory " + cache);
    const auto v = run_captured({worker_exe, "--version"}, std::chrono::milliseconds(60000));
    if (!v.succeeded()) throw error("cuda backend: " + worker_exe + " --version failed: " + v.output);
    std::istringstream in(v.output);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("nvrtc ", 0) == 0) nvrtc_version = line.substr(6);
      if (line.rfind("device ", 0) == 0) device_text = line.substr(7);
      if (line.rfind("driver ", 0) == 0) device_text += "; driver " + line.substr(7);
      if (line.rfind("l2 ", 0) == 0) l2_bytes = std::strtoull(line.c_str() + 3, nullptr, 10);
    }
    std::uint64_t smallest = ~std::uint64_t{0}, smallest_odd = ~std::uint64_t{0};
    for (std::size_t s = 0; s < prob.shapes.size(); ++s) {
      auto const& sh = prob.shapes[s];
      auto lookup = [&sh](std::string_view n) -> std::optional<std::int64_t> {
        auto it = sh.dims.find(std::string(n));
        if (it == sh.dims.end()) return std::nullopt;
        return it->second;
      };
      std::vector<std::int64_t> d;
      for (auto const& n : prob.dim_order) d.push_back(sh.dims.at(n));
      dims.push_back(std::move(d));
      std::vector<cuda_protocol::tensor> ins, outs;
      std::uint64_t bytes = 0;
      for (auto const& t : prob.inputs) {
        ins.push_back({static_cast<std::uint64_t>(evaluate_expression(t.size, lookup)), t.dtype == "f16" ? 1 : 0,
                       t.distribution == "uniform" ? 1 : t.distribution == "positive" ? 2 : 0});
        bytes += ins.back().count * (ins.back().dtype ? 2 : 4);
      }
      for (auto const& t : prob.outputs) {
        outs.push_back({static_cast<std::uint64_t>(evaluate_expression(t.size, lookup)), t.dtype == "f16" ? 1 : 0, 0});
        bytes += outs.back().count * (outs.back().dtype ? 2 : 4);
      }
      in_t.push_back(std::move(ins));
      out_t.push_back(std::move(outs));
      if (correctness_tier(s) && bytes < smallest) {
        smallest = bytes;
        sanitize_shape = s;
      }
      if (prob.shapes[s].tier == "odd" && bytes < smallest_odd) {
        smallest_odd = bytes;
        adversarial_shape = s;
      }
    }
    auto rc = compile(prob.reference_source);
    if (!rc.result) throw error(where("the reference does not compile: " + rc.result.detail));
    ref_cubin = rc.cubin;
    cubin_info ref_info;
    try {
      ref_info = read_cubin_file(ref_cubin);
    } catch (error const& e) {
      throw error(where(std::string("cannot read the reference's cubin: ") + e.what()));
    }
    for (std::size_t s = 0; s < prob.shapes.size(); ++s) {
      try {
        auto p = resolve_launch_plan(prob, prob.shapes[s].dims, prob.reference_launch);
        if (auto bad = check_plan_against(p, ref_info)) throw plan_reject(*bad);
        annotate(p, ref_info);
        p.cubin = ref_cubin;
        ref_plans.push_back(std::move(p));
      } catch (plan_reject const& e) {
        throw error(where("the reference launch plan at shape '" + prob.shapes[s].name + "': " + e.message));
      }
    }
    if (smallest_odd == ~std::uint64_t{0}) adversarial_shape = sanitize_shape;
    if (opt.sanitize) sanitizer = find_sanitizer();
    fingerprint = "cuda/v2; nvrtc " + nvrtc_version + "; options: " + options_text() + "; device: " + device_text +
                  "; gate: adversarial " + (opt.adversarial_inputs ? "on" : "off") + ", checked timed calls " +
                  std::to_string(opt.checked_timed_calls) + ", sanitizer " + (sanitizer.empty() ? "off" : "on");
  }

  [[nodiscard]] bool correctness_tier(std::size_t s) const {
    return prob.shapes[s].tier == "smoke" || prob.shapes[s].tier == "odd";
  }

  /// compute-sanitizer: the option, $KERNELBRAIN_SANITIZER, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin;
  /// empty when none is there (the stage is then off, and the fingerprint says so).
  std::string find_sanitizer() const {
    namespace fs = std::filesystem;
    auto usable = [](std::string const& p) { return !p.empty() && fs::is_regular_file(p) && ::access(p.c_str(), X_OK) == 0; };
    if (!opt.sanitizer_path.empty()) {
      if (usable(opt.sanitizer_path)) return opt.sanitizer_path;
      throw error("cuda backend: sanitizer_path '" + opt.sanitizer_path + "' is not an executable file");
    }
    if (char const* e = std::getenv("KERNELBRAIN_SANITIZER"); e && *e) {
      if (usable(e)) return e;
      throw error(std::string("cuda backend: KERNELBRAIN_SANITIZER='") + e + "' is not an executable file");
    }
    std::vector<std::string> dirs;
    if (char const* path = std::getenv("PATH")) {
      std::string p(path);
      for (std::size_t b = 0; b <= p.size();) {
        const auto e = p.find(':', b);
        dirs.push_back(p.substr(b, e == std::string::npos ? std::string::npos : e - b));
        if (e == std::string::npos) break;
        b = e + 1;
      }
    }
    if (char const* h = std::getenv("CUDA_HOME"); h && *h) dirs.push_back(std::string(h) + "/bin");
    dirs.push_back("/usr/local/cuda/bin");
    for (auto const& d : dirs)
      if (!d.empty() && usable(d + "/compute-sanitizer")) return d + "/compute-sanitizer";
    return {};
  }

  /// What the worker cross-checks against cuFuncGetAttribute: the cubin's view of each kernel.
  static void annotate(cuda_protocol::plan& p, cubin_info const& info) {
    for (auto& l : p.launches)
      if (auto const* k = info.find(l.kernel)) {
        l.registers = k->registers;
        l.local_bytes = k->local_bytes;
        l.static_smem = k->static_smem;
      }
  }

  /// The cubin's kernels; a cached cubin that cannot be read is compiled again once.
  std::optional<cubin_info> read_compiled(std::string const& source, compiled& cc, std::string& why) {
    try {
      return read_cubin_file(cc.cubin);
    } catch (error const& e) {
      why = e.what();
    }
    std::error_code ec;
    const auto key = compile_key(source);
    std::filesystem::remove(cache_base(key) + ".cubin", ec);
    std::filesystem::remove(cache_base(key) + ".log", ec);
    cc = compile_now(key, source);
    if (!cc.result) return std::nullopt;
    try {
      return read_cubin_file(cc.cubin);
    } catch (error const& e) {
      why = e.what();
    }
    return std::nullopt;
  }

  built const& build(candidate const& c) {
    if (auto it = builds.find(c.id.value); it != builds.end()) return it->second;
    built b;
    if (c.source.empty() || c.launch.empty())
      b.result = verdict::reject(stage::compile, "a CUDA candidate needs a source and a launch plan");
    compiled cc;
    if (b.result) {
      cc = compile(c.source);
      b.result = cc.result;
      b.cubin = cc.cubin;
    }
    cubin_info info;
    if (b.result) {
      std::string why;
      if (auto i = read_compiled(c.source, cc, why)) {
        info = std::move(*i);
        b.cubin = cc.cubin;
      } else {
        b.result = cc.result ? verdict::reject(stage::infrastructure, "cannot read the compiled cubin: " + why) : cc.result;
      }
    }
    if (b.result) {
      // State that would outlive the candidate (the device heap) or flood the worker (printf).
      for (auto const& f : info.imports)
        if (f == "malloc" || f == "free" || f == "__nv_aligned_device_malloc" || f == "vprintf") {
          b.result = verdict::reject(stage::policy, "the kernel calls " + f + " in device code, which candidates may not: " +
                                                        "use a scratch buffer of the launch plan instead of the device heap, and no printf");
          break;
        }
    }
    if (b.result) {
      for (std::size_t s = 0; s < prob.shapes.size() && b.result; ++s) {
        try {
          auto p = resolve_launch_plan(prob, prob.shapes[s].dims, c.launch);
          if (auto bad = check_plan_against(p, info)) throw plan_reject(*bad);
          annotate(p, info);
          p.cubin = b.cubin;
          b.plans.push_back(std::move(p));
        } catch (plan_reject const& e) {
          b.result = verdict::reject(e.where, "launch plan at shape '" + prob.shapes[s].name + "': " + e.message);
        }
      }
    }
    if (b.result) {
      // Spill counts are only in the ptxas report, which NVRTC leaves empty on a compute-cache hit;
      // the report is taken where it agrees with the cubin, else local memory is the spill signal.
      const auto report = parse_ptxas_log(cc.log);
      int regs = 0, spill = 0, smem = 0;
      for (auto const& l : b.plans.back().launches) {
        auto const* k = info.find(l.kernel);
        regs = std::max(regs, k->registers);
        int spilled = k->local_bytes;
        for (auto const& [name, r] : report)
          if (name == l.kernel && r.registers == k->registers && r.stack == k->local_bytes) spilled = r.spill_stores + r.spill_loads;
        spill = std::max(spill, spilled);
        smem = std::max<int>(smem, k->static_smem + static_cast<int>(l.smem));
      }
      // Occupancy of the first launch at the last (largest) shape.
      auto const& l = b.plans.back().launches.front();
      auto const* k = info.find(l.kernel);
      const std::int64_t threads = l.block[0] * l.block[1] * l.block[2];
      const std::int64_t warps = (threads + 31) / 32;
      const std::int64_t regs_warp = ((std::max(k->registers, 1) * 32 + 255) / 256) * 256;
      const std::int64_t by_regs = 65536 / std::max<std::int64_t>(1, regs_warp * warps);
      const std::int64_t by_smem = 233472 / (k->static_smem + l.smem + 1024);
      const std::int64_t by_threads = 2048 / std::max<std::int64_t>(1, threads);
      const std::int64_t blocks = std::min({by_regs, by_smem, by_threads, std::int64_t{32}});
      b.res = resources{regs, spill, smem, static_cast<double>(blocks * warps) / 64.0};
    }
    return builds.emplace(c.id.value, std::move(b)).first->second;
  }

  std::chrono::milliseconds silence() const {
    return detail::cuda::millis(opt.run_timeout + (worker.running() ? 0.0 : 30.0));
  }

  verdict translate(worker_reply const& r, std::string const& what, cuda_protocol::reply* out) {
    namespace cp = cuda_protocol;
    if (r.st == worker_reply::status::timeout) {
      spent += r.seconds;
      return verdict::reject(stage::timeout, what + ": " + r.why);
    }
    if (r.st == worker_reply::status::died) {
      spent += r.seconds;
      return verdict::reject(stage::crash, what + ": " + r.why);
    }
    cp::reply rep;
    try {
      rep = cp::decode_reply(r.msg.body);
    } catch (wire_error const& e) {
      return verdict::reject(stage::infrastructure, what + ": malformed reply: " + e.what());
    }
    spent += rep.device_seconds;
    if (out) *out = rep;
    auto tensor = [&]() -> std::string {
      const auto k = static_cast<std::size_t>(rep.index);
      if (rep.st == cp::status::wrote_input)
        return k < prob.inputs.size() ? "input '" + prob.inputs[k].name + "': " : "";
      return k < prob.outputs.size() ? "output '" + prob.outputs[k].name + "': " : "";
    };
    switch (rep.st) {
      case cp::status::ok:
        return verdict::pass();
      case cp::status::load_failed:
      case cp::status::missing_kernel:
        return verdict::reject(stage::signature, what + ": " + rep.message);
      case cp::status::launch_failed:
      case cp::status::out_of_memory:
        return verdict::reject(stage::resources, what + ": " + rep.message);
      case cp::status::unwritten:
        return verdict::reject(stage::correctness, "output not written: " + tensor() + what + ": " + rep.message);
      case cp::status::nonfinite:
        return verdict::reject(stage::correctness, "NaN or infinite output: " + tensor() + what + ": " + rep.message);
      case cp::status::wrong:
        return verdict::reject(stage::correctness, "wrong output: " + tensor() + what + ": " + rep.message);
      case cp::status::nondeterministic:
        return verdict::reject(stage::correctness, "nondeterministic output: " + tensor() + what + ": " + rep.message);
      case cp::status::wrote_input:
        return verdict::reject(stage::correctness, "wrote its input " + tensor() + what + ": " + rep.message);
      case cp::status::reference_failed:
      case cp::status::bad_request:
      case cp::status::attribute_mismatch:
        break;
    }
    return verdict::reject(stage::infrastructure, what + ": " + rep.message);
  }

  cuda_protocol::run_request request_for(std::size_t s, cuda_protocol::plan const& cand, std::uint64_t seed) const {
    cuda_protocol::run_request q;
    q.shape_key = s + 1;
    q.inputs = in_t[s];
    q.outputs = out_t[s];
    q.dims = dims[s];
    q.cand = cand;
    q.ref = ref_plans[s];
    q.seed = seed;
    q.rtol = prob.tol.rtol;
    q.atol = prob.tol.atol;
    return q;
  }
  std::string at_shape(std::size_t s) const { return "at shape '" + prob.shapes[s].name + "'"; }

  /// One trial per adversarial case of each input (the other inputs as drawn).
  std::vector<std::vector<cuda_protocol::input_case>> adversarial_cases() const {
    std::vector<std::vector<cuda_protocol::input_case>> out;
    for (std::size_t k = 0; k < prob.inputs.size(); ++k)
      for (auto const& c : prob.inputs[k].adversarial) {
        std::vector<cuda_protocol::input_case> v(prob.inputs.size());
        v[k] = {static_cast<std::int32_t>(c.what), c.value};
        out.push_back(std::move(v));
      }
    return out;
  }

  verdict check_shape(built const& b, std::size_t s, int trials, std::uint64_t seed) {
    auto q = request_for(s, b.plans[s], seed);
    q.trials = std::max(1, trials);
    if (opt.adversarial_inputs && s == adversarial_shape) q.cases = adversarial_cases();
    auto rep = worker.call(static_cast<std::uint32_t>(cuda_protocol::request::check), cuda_protocol::encode(q),
                           detail::cuda::millis(opt.run_timeout * (1.0 + static_cast<double>(q.cases.size()) / 4.0) +
                                                (worker.running() ? 0.0 : 30.0)));
    return translate(rep, at_shape(s), nullptr);
  }

  /// Is `c` exactly its family's template at its parameters (so the family's sanitizer run covers it)?
  bool template_instance(candidate const& c) const {
    auto const* h = find_hint(prob, c.family);
    return h && h->templ && substitute(h->templ->source, c.params) == c.source && substitute(h->templ->launch, c.params) == c.launch;
  }

  /// compute-sanitizer on `c` at the smallest correctness shape: every tool at once (nothing is
  /// timed meanwhile: the evaluation thread waits here), wall time charged as device time.
  verdict sanitize(candidate const& c, built const& b, std::uint64_t seed) {
    if (sanitizer.empty() || opt.sanitizer_tools.empty()) return verdict::pass();
    if (auto it = sanitized.find(c.id.value); it != sanitized.end()) return it->second;
    const bool instance = template_instance(c);
    if (instance && sanitized_families.count(c.family)) return verdict::pass();
    ++sanitizer_runs;
    static std::atomic<std::uint64_t> serial{0};
    const auto request = (std::filesystem::path(cache) / ("sanitize-" + std::to_string(::getpid()) + "-" +
                                                          std::to_string(serial++) + ".req")).string();
    {
      std::ofstream out(request, std::ios::binary);
      out << cuda_protocol::encode(request_for(sanitize_shape, b.plans[sanitize_shape], seed));
      if (!out) return verdict::reject(stage::infrastructure, "cannot write the sanitizer request " + request);
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<captured_run> runs(opt.sanitizer_tools.size());
    {
      std::vector<std::thread> threads;
      for (std::size_t t = 0; t < opt.sanitizer_tools.size(); ++t)
        threads.emplace_back([&, t] {
          auto const& tool = opt.sanitizer_tools[t];
          std::vector<std::string> argv = {worker_exe,  "--exec", "--", sanitizer, "--tool", tool, "--error-exitcode", "86",
                                           "--print-limit", "4"};
          if (tool == "memcheck") argv.insert(argv.end(), {"--padding", "256"});
          argv.insert(argv.end(), {worker_exe, "--sanitize", request});
          runs[t] = run_captured(argv, detail::cuda::millis(opt.sanitizer_timeout), 256 * 1024);
        });
      for (auto& t : threads) t.join();
    }
    spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::error_code ec;
    std::filesystem::remove(request, ec);
    verdict v = verdict::pass();
    for (std::size_t t = 0; t < runs.size() && v; ++t) {
      auto const& r = runs[t];
      v = r.started ? sanitizer_verdict(opt.sanitizer_tools[t], r.timed_out, r.wait_status, r.output, opt.sanitizer_timeout)
                    : verdict::reject(stage::infrastructure, "cannot start compute-sanitizer: " + r.output);
    }
    if (v.where == stage::sanitizer) v.detail = at_shape(sanitize_shape) + ": " + v.detail;
    if (v && instance) sanitized_families.insert(c.family);
    if (v.where != stage::infrastructure) sanitized.emplace(c.id.value, v);
    return v;
  }

  std::uint64_t flush() const { return opt.flush_bytes ? opt.flush_bytes : (l2_bytes ? 2 * l2_bytes : std::uint64_t{128} << 20); }

  /// Failed compiles are remembered (not cached on disk: a killed compile depends on the limit).
  detail::compile_pool<compiled> pool{[](compiled const& c) { return !c.result; }};
};

cuda_evaluator::cuda_evaluator(problem const& p, cuda_options o) {
  p.validate();
  s_ = std::make_unique<state>(p, std::move(o));
  if (!(s_->opt.run_timeout > 0) || !(s_->opt.compile_timeout > 0) || !(s_->opt.sanitizer_timeout > 0))
    throw error("cuda_options: run_timeout, compile_timeout and sanitizer_timeout must be positive seconds");
  if (s_->opt.checked_timed_calls < 0) throw error("cuda_options: checked_timed_calls must be >= 0");
  s_->setup();
}
cuda_evaluator::~cuda_evaluator() = default;

std::string cuda_evaluator::fingerprint() const { return s_->fingerprint; }

void cuda_evaluator::prefetch(candidate const& c) { s_->prefetch(c.source); }

verdict cuda_evaluator::build(candidate const& c) {
  std::lock_guard lk(s_->mu);
  return s_->build(c).result;
}

verdict cuda_evaluator::check(candidate const& c, std::span<std::size_t const> shapes, int trials, std::uint64_t seed) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  auto const& b = s.build(c);
  if (!b.result) return b.result;
  for (auto sh : shapes) {
    if (sh >= s.prob.shapes.size()) throw error("cuda backend: shape index out of range");
    if (auto v = s.check_shape(b, sh, trials, derive_seed(seed, "cuda-check", sh)); !v) return v;
  }
  return s.sanitize(c, b, derive_seed(seed, "cuda-sanitize", 0));
}

measurement cuda_evaluator::measure(candidate const& c, rung const& r, measure_request const& req) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  measurement m;
  auto const& b = s.build(c);
  if (!b.result) {
    m.result = b.result;
    return m;
  }
  state::built const* inc = nullptr;
  if (r.interleaved && req.incumbent && req.incumbent->id != c.id)
    if (auto const& ib = s.build(*req.incumbent); ib.result) inc = &ib;
  std::vector<std::vector<double>> ratios;
  std::vector<double> weights;
  for (auto sh : r.shapes) {
    if (auto v = s.check_shape(b, sh, std::max(1, r.correctness_trials), derive_seed(req.seed, "cuda-check", sh)); !v) {
      m.result = v;
      return m;
    }
    auto q = s.request_for(sh, b.plans[sh], derive_seed(req.seed, "cuda-timed", sh));
    if (inc) q.incumbent = inc->plans[sh];
    q.warmup = std::max(0, r.warmup);
    q.samples = std::max(1, r.samples);
    q.flush_bytes = s.flush();
    // Which timed calls are checked: drawn from the measurement's seed, unknown to the candidate.
    rng pick(derive_seed(req.seed, "cuda-checked-calls", sh));
    const int total = q.warmup + q.samples;
    for (int k = 0; k < s.opt.checked_timed_calls && total > 1; ++k)
      q.checked_calls.push_back(static_cast<std::int32_t>(pick.below(static_cast<std::uint64_t>(total - 1))));
    auto rep = s.worker.call(static_cast<std::uint32_t>(cuda_protocol::request::time), cuda_protocol::encode(q),
                             detail::cuda::millis(s.opt.run_timeout * (inc ? 2 : 1) + (s.worker.running() ? 0.0 : 30.0)),
                             s.opt.on_timing_request);
    cuda_protocol::reply out;
    if (auto v = s.translate(rep, s.at_shape(sh) + ", timing", &out); !v) {
      m.result = v;
      return m;
    }
    if (out.samples_a.size() != static_cast<std::size_t>(q.samples)) {
      m.result = verdict::reject(stage::infrastructure, "the worker returned the wrong number of samples");
      return m;
    }
    shape_timing st;
    st.shape = sh;
    st.samples = std::move(out.samples_a);
    st.summarise();
    if (inc && out.samples_b.size() == st.samples.size()) {
      std::vector<double> rs;
      for (std::size_t i = 0; i < st.samples.size(); ++i) rs.push_back(st.samples[i] / std::max(out.samples_b[i], 1e-12));
      ratios.push_back(std::move(rs));
      weights.push_back(s.prob.shapes[sh].weight);
    }
    m.timings.push_back(std::move(st));
  }
  m.res = b.res;
  if (!ratios.empty()) {
    std::vector<double> combined;
    for (std::size_t i = 0; i < ratios.front().size(); ++i) {
      std::vector<double> at;
      for (auto const& rs : ratios) at.push_back(rs[i]);
      combined.push_back(weighted_geomean(at, weights));
    }
    m.vs_incumbent = ab_comparison{req.incumbent->id.str(), median_with_ci(combined)};
  }
  return m;
}

baseline cuda_evaluator::measure_baseline(problem const& p) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  if (p.shapes.size() != s.prob.shapes.size()) throw error("cuda backend: measure_baseline was given another problem");
  baseline b;
  for (std::size_t sh = 0; sh < s.prob.shapes.size(); ++sh) {
    auto q = s.request_for(sh, s.ref_plans[sh], derive_seed(0x6261736555ULL, "cuda-baseline", sh));
    q.warmup = std::max(0, s.opt.baseline_warmup);
    q.samples = std::max(1, s.opt.baseline_samples);
    q.flush_bytes = s.flush();
    q.verify_after_timing = 0;
    auto rep = s.worker.call(static_cast<std::uint32_t>(cuda_protocol::request::time), cuda_protocol::encode(q),
                             detail::cuda::millis(s.opt.run_timeout + (s.worker.running() ? 0.0 : 30.0)));
    cuda_protocol::reply out;
    if (auto v = s.translate(rep, "timing the reference " + s.at_shape(sh), &out); !v)
      throw error("cuda backend: " + v.detail);
    b.seconds.push_back(median_with_ci(out.samples_a).median);
  }
  return b;
}

double cuda_evaluator::take_device_seconds() {
  std::lock_guard lk(s_->mu);
  return std::exchange(s_->spent, 0.0);
}
std::optional<resources> cuda_evaluator::resources_of(candidate const& c) {
  std::lock_guard lk(s_->mu);
  auto const& b = s_->build(c);
  if (!b.result) return std::nullopt;
  return b.res;
}
std::size_t cuda_evaluator::worker_starts() const {
  std::lock_guard lk(s_->mu);
  return s_->worker.spawns();
}
std::size_t cuda_evaluator::compiles() const {
  std::lock_guard lk(s_->mu);
  return s_->compiles;
}
std::size_t cuda_evaluator::cache_hits() const {
  std::lock_guard lk(s_->mu);
  return s_->hits;
}
std::size_t cuda_evaluator::sanitizer_runs() const {
  std::lock_guard lk(s_->mu);
  return s_->sanitizer_runs;
}
std::string const& cuda_evaluator::sanitizer() const { return s_->sanitizer; }

}  // namespace kernelbrain
