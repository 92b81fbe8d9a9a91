// Bodies of kernelbrain/evaluate/cuda.hpp: the trusted parent side of the CUDA backend. No CUDA
// header and no CUDA library here: compiles and kernels run in kernelbrain-cuda-worker processes.
// Compiled once, from kernelbrain/src.hpp; never include this anywhere else.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <unordered_map>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/detail/compile_pool.hpp"
#include "kernelbrain/evaluate/cuda.hpp"
#include "kernelbrain/evaluate/cuda_protocol.hpp"
#include "kernelbrain/evaluate/worker_process.hpp"

namespace kernelbrain {
namespace detail::cuda {

namespace fs = std::filesystem;
namespace cp = cuda_protocol;

inline std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

// H200 (sm_90) launch limits.
inline constexpr std::int64_t max_threads = 1024, max_smem = 232448, max_grid_x = 2147483647, max_grid_yz = 65535,
                              max_cluster = 8;

/// A launch plan that cannot be used: `st` says which stage rejects it.
struct plan_error {
  stage st;
  std::string message;
};

struct resolver {
  problem const* prob;
  std::map<std::string, std::int64_t> const* dims;

  std::int64_t eval(boost::json::value const& v, std::string const& where) const {
    std::string text;
    if (v.is_string())
      text = std::string(v.get_string().data(), v.get_string().size());
    else if (v.is_int64())
      return v.get_int64();
    else if (v.is_uint64())
      return static_cast<std::int64_t>(v.get_uint64());
    else
      throw plan_error{stage::signature, where + ": expected an expression"};
    try {
      return evaluate_expression(text, [this](std::string_view n) -> std::optional<std::int64_t> {
        auto it = dims->find(std::string(n));
        if (it == dims->end()) return std::nullopt;
        return it->second;
      });
    } catch (error const& e) {
      throw plan_error{stage::signature, where + ": \"" + text + "\": " + e.what()};
    }
  }

  cp::plan resolve(std::string const& text) const {
    namespace json = boost::json;
    json::value doc;
    try {
      doc = json::parse(text);
    } catch (std::exception const& e) {
      throw plan_error{stage::signature, std::string("the launch plan is not valid JSON: ") + e.what()};
    }
    if (!doc.is_object()) throw plan_error{stage::signature, "the launch plan must be a JSON object"};
    auto const& o = doc.get_object();
    cp::plan p;
    std::map<std::string, std::int64_t> buffers;
    std::int64_t next = 0;
    for (auto const& t : prob->inputs) buffers[t.name] = next++;
    for (auto const& t : prob->outputs) buffers[t.name] = next++;
    if (auto const* sc = o.if_contains("scratch")) {
      if (!sc->is_array()) throw plan_error{stage::signature, "scratch must be an array"};
      for (auto const& e : sc->get_array()) {
        if (!e.is_object() || !e.get_object().if_contains("name") || !e.get_object().if_contains("size"))
          throw plan_error{stage::signature, "a scratch buffer needs a name and a size"};
        auto const& so = e.get_object();
        const std::string name(so.at("name").as_string().c_str());
        const auto n = eval(so.at("size"), "scratch '" + name + "' size");
        if (n < 0 || n > (std::int64_t{1} << 36)) throw plan_error{stage::resources, "scratch '" + name + "' size out of range"};
        std::int64_t width = 4;
        if (auto const* dt = so.if_contains("dtype"); dt && dt->is_string() && dt->get_string() == "f16") width = 2;
        p.scratch.push_back(static_cast<std::uint64_t>(n * width));
        buffers[name] = next++;
      }
    }
    auto const* ls = o.if_contains("launches");
    if (!ls || !ls->is_array() || ls->get_array().empty())
      throw plan_error{stage::signature, "the launch plan has no launches"};
    for (auto const& lv : ls->get_array()) {
      if (!lv.is_object()) throw plan_error{stage::signature, "a launch must be an object"};
      auto const& lo = lv.get_object();
      cp::launch l;
      auto const* k = lo.if_contains("kernel");
      if (!k || !k->is_string()) throw plan_error{stage::signature, "a launch needs a kernel name"};
      l.kernel = std::string(k->get_string().c_str());
      const std::string at = "kernel '" + l.kernel + "'";
      auto triple = [&](char const* key, std::int64_t* out, bool required) {
        auto const* v = lo.if_contains(key);
        if (!v) {
          if (required) throw plan_error{stage::signature, at + ": no " + key};
          return;
        }
        if (!v->is_array() || v->get_array().size() != 3)
          throw plan_error{stage::signature, at + ": " + key + " must list 3 expressions"};
        for (int i = 0; i < 3; ++i) out[i] = eval(v->get_array()[static_cast<std::size_t>(i)], at + " " + key);
      };
      triple("grid", l.grid, true);
      triple("block", l.block, true);
      triple("cluster", l.cluster, false);
      if (auto const* sm = lo.if_contains("smem")) l.smem = eval(*sm, at + " smem");
      auto const* args = lo.if_contains("args");
      if (!args || !args->is_array()) throw plan_error{stage::signature, at + ": no args"};
      for (auto const& a : args->get_array()) {
        if (!a.is_string()) throw plan_error{stage::signature, at + ": args must be names"};
        const std::string name(a.get_string().c_str());
        if (auto it = buffers.find(name); it != buffers.end()) {
          l.args.push_back(static_cast<std::int64_t>(cp::arg_kind::buffer));
          l.args.push_back(it->second);
          continue;
        }
        auto d = std::find(prob->dim_order.begin(), prob->dim_order.end(), name);
        if (d == prob->dim_order.end())
          throw plan_error{stage::signature, at + ": argument '" + name + "' is neither a tensor, a scratch buffer nor a dim"};
        l.args.push_back(static_cast<std::int64_t>(cp::arg_kind::dim));
        l.args.push_back(d - prob->dim_order.begin());
      }
      // Launchable on an H200?
      const auto threads = l.block[0] * l.block[1] * l.block[2];
      const auto cl = l.cluster[0] * l.cluster[1] * l.cluster[2];
      auto bad = [&](std::string const& why) { throw plan_error{stage::resources, at + ": " + why}; };
      for (int i = 0; i < 3; ++i)
        if (l.block[i] < 1 || l.grid[i] < 1 || l.cluster[i] < 1) bad("grid, block and cluster dims must be >= 1");
      if (threads > max_threads) bad(std::to_string(threads) + " threads per block (at most 1024)");
      if (l.grid[0] > max_grid_x || l.grid[1] > max_grid_yz || l.grid[2] > max_grid_yz) bad("grid too large");
      if (l.smem < 0 || l.smem > max_smem) bad(std::to_string(l.smem) + " bytes of dynamic shared memory (at most 232448)");
      if (cl > max_cluster) bad("cluster of " + std::to_string(cl) + " blocks (at most 8)");
      for (int i = 0; i < 3; ++i)
        if (l.grid[i] % l.cluster[i] != 0) bad("grid not a multiple of the cluster");
      p.launches.push_back(std::move(l));
    }
    return p;
  }
};

inline std::uint64_t hash_text(std::string_view s) { return hasher{}.bytes(s).digest(); }

}  // namespace detail::cuda

std::vector<std::pair<std::string, cuda_kernel_resources>> parse_ptxas_log(std::string const& log) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for ([A-Za-z_0-9]+))");
  static const std::regex frame_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers(.*))");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::vector<std::pair<std::string, cuda_kernel_resources>> out;
  auto find = [&](std::string const& n) -> cuda_kernel_resources* {
    for (auto& [k, v] : out)
      if (k == n) return &v;
    return nullptr;
  };
  std::istringstream lines(log);
  std::string line, current, props_for;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      current = m[1];
      if (!find(current)) out.emplace_back(current, cuda_kernel_resources{});
      continue;
    }
    if (std::regex_search(line, m, props_re)) {
      props_for = m[1];
      continue;
    }
    if (std::regex_search(line, m, frame_re)) {
      if (auto* k = find(props_for)) {
        k->stack = std::stoi(m[1]);
        k->spill_stores = std::stoi(m[2]);
        k->spill_loads = std::stoi(m[3]);
      }
      continue;
    }
    if (std::regex_search(line, m, used_re) && !current.empty()) {
      if (auto* k = find(current)) {
        k->registers = std::stoi(m[1]);
        const std::string rest = m[2];
        std::smatch s;
        if (std::regex_search(rest, s, smem_re)) k->static_smem = std::stoi(s[1]);
      }
    }
  }
  return out;
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
      c.result = verdict::reject(stage::compile, "NVRTC failed (" + (r.started ? describe_wait_status(r.wait_status) : std::string("not started")) + "): " + tail);
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
      for (auto const& t : prob.inputs)
        ins.push_back({static_cast<std::uint64_t>(evaluate_expression(t.size, lookup)), t.dtype == "f16" ? 1 : 0,
                       t.distribution == "uniform" ? 1 : t.distribution == "positive" ? 2 : 0});
      for (auto const& t : prob.outputs)
        outs.push_back({static_cast<std::uint64_t>(evaluate_expression(t.size, lookup)), t.dtype == "f16" ? 1 : 0, 0});
      in_t.push_back(std::move(ins));
      out_t.push_back(std::move(outs));
    }
    auto rc = compile(prob.reference_source);
    if (!rc.result) throw error(where("the reference does not compile: " + rc.result.detail));
    ref_cubin = rc.cubin;
    for (std::size_t s = 0; s < prob.shapes.size(); ++s) {
      try {
        auto p = resolver_at(s).resolve(prob.reference_launch);
        p.cubin = ref_cubin;
        ref_plans.push_back(std::move(p));
      } catch (detail::cuda::plan_error const& e) {
        throw error(where("the reference launch plan at shape '" + prob.shapes[s].name + "': " + e.message));
      }
    }
    fingerprint = "cuda/v1; nvrtc " + nvrtc_version + "; options: " + options_text() + "; device: " + device_text;
  }

  detail::cuda::resolver resolver_at(std::size_t s) const { return {&prob, &prob.shapes[s].dims}; }

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
    if (b.result) {
      try {
        for (std::size_t s = 0; s < prob.shapes.size(); ++s) {
          auto p = resolver_at(s).resolve(c.launch);
          p.cubin = b.cubin;
          b.plans.push_back(std::move(p));
        }
      } catch (detail::cuda::plan_error const& e) {
        b.result = verdict::reject(e.st, "launch plan: " + e.message);
      }
    }
    if (b.result) {
      const auto kernels = parse_ptxas_log(cc.log);
      int regs = 0, spill = 0, smem = 0;
      for (auto const& l : b.plans.back().launches) {
        auto it = std::find_if(kernels.begin(), kernels.end(), [&](auto const& k) { return k.first == l.kernel; });
        if (it == kernels.end()) {
          std::string found;
          for (auto const& k : kernels) found += (found.empty() ? "" : ", ") + k.first;
          b.result = verdict::reject(
              stage::signature, "the launch plan names kernel '" + l.kernel +
                                    "', which the source does not define as extern \"C\" __global__ (entry points: " +
                                    (found.empty() ? "none; compiler log: '" + cc.log.substr(0, 300) + "'" : found) + ")");
          break;
        }
        regs = std::max(regs, it->second.registers);
        spill = std::max(spill, it->second.spill_stores + it->second.spill_loads);
        smem = std::max<int>(smem, it->second.static_smem + static_cast<int>(l.smem));
        if (it->second.registers > 255)
          b.result = verdict::reject(stage::resources, "kernel '" + l.kernel + "' uses " +
                                                           std::to_string(it->second.registers) + " registers");
      }
      if (b.result) {
        // Occupancy of the first launch at the last (largest) shape.
        auto const& l = b.plans.back().launches.front();
        auto it = std::find_if(kernels.begin(), kernels.end(), [&](auto const& k) { return k.first == l.kernel; });
        const std::int64_t threads = l.block[0] * l.block[1] * l.block[2];
        const std::int64_t warps = (threads + 31) / 32;
        const std::int64_t regs_warp = ((std::max(it->second.registers, 1) * 32 + 255) / 256) * 256;
        const std::int64_t by_regs = 65536 / std::max<std::int64_t>(1, regs_warp * warps);
        const std::int64_t by_smem = 233472 / (it->second.static_smem + l.smem + 1024);
        const std::int64_t by_threads = 2048 / std::max<std::int64_t>(1, threads);
        const std::int64_t blocks = std::min({by_regs, by_smem, by_threads, std::int64_t{32}});
        b.res = resources{regs, spill, smem, static_cast<double>(blocks * warps) / 64.0};
      }
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

  verdict check_shape(built const& b, std::size_t s, int trials, std::uint64_t seed) {
    auto q = request_for(s, b.plans[s], seed);
    q.trials = std::max(1, trials);
    auto rep = worker.call(static_cast<std::uint32_t>(cuda_protocol::request::check), cuda_protocol::encode(q),
                           detail::cuda::millis(opt.run_timeout + (worker.running() ? 0.0 : 30.0)));
    return translate(rep, at_shape(s), nullptr);
  }

  std::uint64_t flush() const { return opt.flush_bytes ? opt.flush_bytes : (l2_bytes ? 2 * l2_bytes : std::uint64_t{128} << 20); }

  /// Failed compiles are remembered (not cached on disk: a killed compile depends on the limit).
  detail::compile_pool<compiled> pool{[](compiled const& c) { return !c.result; }};
};

cuda_evaluator::cuda_evaluator(problem const& p, cuda_options o) {
  p.validate();
  s_ = std::make_unique<state>(p, std::move(o));
  if (!(s_->opt.run_timeout > 0) || !(s_->opt.compile_timeout > 0))
    throw error("cuda_options: run_timeout and compile_timeout must be positive seconds");
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
  return verdict::pass();
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

}  // namespace kernelbrain
