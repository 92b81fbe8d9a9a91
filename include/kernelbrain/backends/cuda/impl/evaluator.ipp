// Bodies of kernelbrain/backends/cuda/evaluator.hpp: the trusted parent side of the CUDA backend. No CUDA
// header and no CUDA library here: compiles and kernels run in kernelbrain-cuda-worker processes.
// The parts (compile cache, shapes, worker client, sanitizer gate, what a build reads from its cubin)
// live in kernelbrain/backends/cuda/detail/; the state here wires them and resolves the launch plans.
// Included by backends/cuda/evaluator.hpp (header-only form) or by kernelbrain/src.hpp: see kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/ab_ratios.hpp"
#include "kernelbrain/backends/common/cache_dir.hpp"
#include "kernelbrain/backends/common/profile_rationing.hpp"
#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/detail/build.hpp"
#include "kernelbrain/backends/cuda/detail/compile_cache.hpp"
#include "kernelbrain/backends/cuda/detail/profiler.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/backends/cuda/detail/sanitizer_gate.hpp"
#include "kernelbrain/backends/cuda/detail/shapes.hpp"
#include "kernelbrain/backends/cuda/detail/worker_client.hpp"
#include "kernelbrain/backends/cuda/diagnosis.hpp"
#include "kernelbrain/backends/cuda/evaluator.hpp"
#include "kernelbrain/backends/cuda/launch_plan.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain {

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
      if (auto at = text.find('('); at != std::string::npos)
        std::from_chars(text.data() + at + 1, text.data() + text.size(), errors);
      if (auto at = text.find(", "); at != std::string::npos)
        std::from_chars(text.data() + at + 2, text.data() + text.size(), warnings);
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
    return verdict::reject(stage::sanitizer,
                           tool +
                               (errors > 0 ? " found " + std::to_string(errors) + " error" + (errors == 1 ? "" : "s")
                                           : std::string(" reported errors")) +
                               ": " + what);
  if (candidate_failed)
    return verdict::reject(stage::sanitizer, tool + ": the candidate failed under compute-sanitizer: " + what);
  if (ran && ((WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) || only_warnings)) return verdict::pass();
  return verdict::reject(stage::infrastructure, "compute-sanitizer " + tool + " did not run the candidate (" +
                                                    detail::describe_wait_status(wait_status) + "): " + tail(600));
}

std::string find_cuda_worker(std::string const& explicit_path) {
#ifdef KERNELBRAIN_CUDA_WORKER_BUILD_PATH
  char const* build_path = KERNELBRAIN_CUDA_WORKER_BUILD_PATH;
#else
  char const* build_path = nullptr;
#endif
  return detail::find_worker(
      {.named = {.backend = "cuda backend", .option = "worker_path", .env_var = "KERNELBRAIN_CUDA_WORKER"},
       .executable = "kernelbrain-cuda-worker",
       .build_path = build_path,
       .not_found_hint = "configure with the CUDA toolkit so that the kernelbrain_cuda_worker "
                         "target is built, or set KERNELBRAIN_CUDA_WORKER"},
      explicit_path);
}

std::vector<std::string> cuda_visible_devices(std::string const& worker_path) {
  std::vector<std::string> out;
  if (char const* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    const std::string_view list(v);
    for (std::size_t b = 0; b <= list.size();) {
      auto e = list.find(',', b);
      if (e == std::string_view::npos) e = list.size();
      auto entry = list.substr(b, e - b);
      const auto first = entry.find_first_not_of(" \t");
      entry = first == std::string_view::npos ? std::string_view{}
                                              : entry.substr(first, entry.find_last_not_of(" \t") - first + 1);
      if (entry.empty() || entry == "-1") break;  // CUDA shows no device from here on
      if (std::find(out.begin(), out.end(), entry) == out.end()) out.emplace_back(entry);
      b = e + 1;
    }
    return out;
  }
  const auto report = detail::cuda::probe_worker(find_cuda_worker(worker_path));
  for (std::size_t i = 0; i < report.device_count; ++i) out.push_back(std::to_string(i));
  return out;
}

/// The parts of the CUDA backend (kernelbrain/backends/cuda/detail/), wired together, and the launch
/// plans resolved for the reference and each candidate. Declaration order is construction order.
struct cuda_evaluator::state {
  problem prob;
  cuda_options opt;
  std::string worker_exe;
  /// Added to the environment of every GPU child (not the NVRTC compiles: they use no device).
  std::vector<std::string> child_env;
  std::string cache;  ///< the cache directory: cubins, logs, sanitizer requests
  detail::cuda::worker_report device;
  device_limits limits;  ///< the GPU's own (asked of the worker), else the problem arch's row
  detail::cuda::shape_table shapes;
  std::string ref_cubin;
  std::vector<detail::cuda_protocol::plan> ref_plans;
  std::unordered_map<std::uint64_t, detail::cuda::built> builds;  ///< by candidate id
  double spent = 0;                                               ///< device seconds not yet taken
  detail::cuda::cuda_worker_client worker;
  detail::cuda::sanitizer_gate sanitizer;
  detail::cuda::ncu_profiler profiler;
  sm_resources sm;   ///< the problem arch's SM, for the static occupancy
  int sm_count = 0;  ///< the device's multiprocessors (0: no device seen)
  /// Profiles by (candidate id, shape): a candidate is profiled once per shape, whatever it is measured against.
  std::map<std::pair<std::uint64_t, std::size_t>, detail::cuda::profile_outcome> profiles;
  detail::profile_rationing rationing;  ///< which measurements get an ncu run
  std::string fingerprint;
  mutable std::mutex mu;                 ///< builds, worker, spent: the evaluation thread's state
  detail::cuda::compile_cache compiler;  ///< last: its compile threads stop before anything they use goes away

  state(problem const& p, cuda_options o)
      : prob(p),
        opt(std::move(o)),
        worker_exe(find_cuda_worker(opt.worker_path)),
        child_env(opt.visible_device.empty() ? std::vector<std::string>{}
                                             : std::vector<std::string>{"CUDA_VISIBLE_DEVICES=" + opt.visible_device}),
        worker(worker_exe, prob, shapes, ref_plans, opt.run_timeout, &spent, child_env),
        sanitizer(prob, opt, worker_exe, &spent, child_env),
        profiler(worker_exe, opt.profile_timeout, &spent, child_env),
        rationing(opt.profile_share, 2.5),
        compiler(worker_exe, opt.compile_timeout) {}

  void setup() {
    namespace fs = std::filesystem;
    auto where = [&](std::string const& w) { return "problem '" + prob.name + "' (cuda backend): " + w; };
    if (prob.backend != "cuda") throw error(where("it is for backend '" + prob.backend + "'"));
    if (prob.reference_source.empty() || prob.reference_launch.empty())
      throw error(where("needs a reference {source, launch}"));
    if (auto a = prob.options.find("arch"); a != prob.options.end()) {  // the problem's NVRTC target
      bool set = false;
      for (auto& o : opt.nvrtc_options)
        if (o.starts_with("--gpu-architecture=")) {
          o = "--gpu-architecture=" + a->second;
          set = true;
        }
      if (!set) opt.nvrtc_options.push_back("--gpu-architecture=" + a->second);
    }
    cache = (fs::path(opt.cache_dir.empty() ? detail::default_cache_dir() : opt.cache_dir) / "cuda").string();
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (!fs::is_directory(cache)) throw error("cuda backend: cannot create the cache directory " + cache);
    device = detail::cuda::probe_worker(worker_exe, child_env);
    // A device named explicitly must exist: else every request would fail later, one by one.
    if (!opt.visible_device.empty() && device.device_count == 0)
      throw error("cuda backend: cuda_options::visible_device '" + opt.visible_device +
                  "' shows the worker no device (CUDA_VISIBLE_DEVICES=" + opt.visible_device +
                  " kernelbrain-cuda-worker --version: device " + device.device_text + ")");
    const auto arch = prob.options.find("arch");
    limits =
        limits_for_device(worker.device(), arch != prob.options.end() ? std::string_view(arch->second) : default_arch);
    compiler.open(cache, opt.nvrtc_options, device.nvrtc_version);
    shapes = detail::cuda::plan_shapes(prob);
    auto rc = compiler.compile(prob.reference_source);
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
        auto p = resolve_launch_plan(prob, prob.shapes[s].dims, prob.reference_launch, limits);
        if (auto bad = check_plan_against(p, ref_info, limits)) throw plan_reject(*bad);
        detail::cuda::annotate(p, ref_info);
        p.cubin = ref_cubin;
        ref_plans.push_back(std::move(p));
      } catch (plan_reject const& e) {
        throw error(where("the reference launch plan at shape '" + prob.shapes[s].name + "': " + e.message));
      }
    }
    sanitizer.use(opt.sanitize ? detail::cuda::find_sanitizer(opt) : std::string{}, cache);
    profiler.use(opt.profile ? detail::cuda::find_ncu(opt.ncu_path)
                             : detail::cuda::ncu_location{{}, "ncu: profiling is off (cuda_options::profile)"},
                 cache);
    sm = sm_resources_for_arch(arch != prob.options.end() ? std::string_view(arch->second) : default_arch);
    sm_count = device.sm_count;
    fingerprint = "cuda/v2; nvrtc " + device.nvrtc_version + "; options: " + compiler.options_text() +
                  "; device: " + device.device_text + "; gate: adversarial " + (opt.adversarial_inputs ? "on" : "off") +
                  ", checked timed calls " + std::to_string(opt.checked_timed_calls) + ", sanitizer " +
                  (sanitizer.tool().empty() ? "off" : "on") +
                  "; profiler: " + (profiler.tool().empty() ? "off" : "ncu");
  }

  detail::cuda::built const& build(candidate const& c) {
    if (auto it = builds.find(c.id.value); it != builds.end()) return it->second;
    detail::cuda::built b;
    if (c.source.empty() || c.launch.empty())
      b.result = verdict::reject(stage::compile, "a CUDA candidate needs a source and a launch plan");
    detail::cuda::compiled cc;
    if (b.result) {
      cc = compiler.compile(c.source);
      b.result = cc.result;
      b.cubin = cc.cubin;
      b.compile_seconds = cc.seconds;
    }
    cubin_info info;
    if (b.result) {
      std::string why;
      if (auto i = compiler.read(c.source, cc, why)) {
        info = std::move(*i);
        b.cubin = cc.cubin;
      } else {
        b.result =
            cc.result ? verdict::reject(stage::infrastructure, "cannot read the compiled cubin: " + why) : cc.result;
      }
    }
    if (b.result) b.result = detail::cuda::device_code_policy(info);
    if (b.result) {
      for (std::size_t s = 0; s < prob.shapes.size() && b.result; ++s) {
        try {
          auto p = resolve_launch_plan(prob, prob.shapes[s].dims, c.launch, limits);
          if (auto bad = check_plan_against(p, info, limits)) throw plan_reject(*bad);
          detail::cuda::annotate(p, info);
          p.cubin = b.cubin;
          b.plans.push_back(std::move(p));
        } catch (plan_reject const& e) {
          b.result = verdict::reject(e.where, "launch plan at shape '" + prob.shapes[s].name + "': " + e.message);
        }
      }
    }
    if (b.result) b.res = detail::cuda::static_resources(b.plans.back(), info, cc.log);
    return builds.emplace(c.id.value, std::move(b)).first->second;
  }

  verdict check_shape(detail::cuda::built const& b, std::size_t s, int trials, std::uint64_t seed) {
    return worker.check(s, b.plans[s], trials, seed, opt.adversarial_inputs && s == shapes.adversarial);
  }

  /// The diagnosis of a passing measurement `m` of `c` at a rung with rung::profile: the static one at
  /// the rung's profiled shape (detail::profiled_shape: the most bytes moved), with ncu's profile of one run there when
  /// the profiler works (once per candidate and shape), else with why it does not.
  void diagnose(candidate const& c, detail::cuda::built const& b, rung const& r, std::uint64_t seed, measurement& m) {
    if (r.shapes.empty()) return;
    const std::size_t sh = detail::profiled_shape(prob, r);
    auto const* t = m.timing_for(sh);
    const auto roof = roofline_at(prob.shapes[sh], prob.machine, t ? t->stats.median : 0.0);
    // The main launch: the one with the most threads.
    std::optional<launch_facts> main;
    for (auto const& l : b.plans[sh].launches) {
      launch_facts f;
      f.kernel = l.kernel;
      f.registers = l.registers;
      f.threads_per_block = l.block[0] * l.block[1] * l.block[2];
      f.blocks = l.grid[0] * l.grid[1] * l.grid[2];
      f.shared_bytes = std::max<std::int64_t>(l.static_smem, 0) + l.smem;
      if (!main || f.threads_per_block * f.blocks > main->threads_per_block * main->blocks) main = std::move(f);
    }
    const auto statics = diagnose_static(b.res, sm, roof, main, sm_count > 0 ? sm_count : sm.sm_count);
    const auto key = std::make_pair(c.id.value, sh);
    auto it = profiles.find(key);
    // Not every measurement is worth an ncu run (common/profile_rationing.hpp), unless this candidate was
    // profiled here already.
    const bool worth = rationing.should_profile(r.name, sh, t ? t->stats.median : 0.0, spent, opt.profile_all);
    if (it == profiles.end() && !worth) {
      m.diagnosis = render(kernelbrain::diagnose(
          statics, {}, roof,
          "ncu: not run: not the fastest at shape '" + prob.shapes[sh].name +
              "' so far, or the profiler's share of the device time is spent (cuda_options::profile_share)"));
      return;
    }
    if (it == profiles.end()) {
      auto q = worker.request_for(sh, b.plans[sh], derive_seed(seed, "cuda-profile", sh));
      q.warmup = 1;
      q.samples = 1;
      it = profiles.emplace(key, profiler.profile(q)).first;
      rationing.ran(it->second.seconds);
    }
    auto const& p = it->second;
    if (p.why_not.empty()) m.profile = p.metrics;
    m.diagnosis = render(kernelbrain::diagnose(statics, p.metrics, roof, p.why_not));
  }

  /// Written before every timed sample: cuda_options::flush_bytes, else twice the device's L2.
  std::uint64_t flush() const {
    return opt.flush_bytes ? opt.flush_bytes : (device.l2_bytes ? 2 * device.l2_bytes : std::uint64_t{128} << 20);
  }
};

cuda_evaluator::cuda_evaluator(problem const& p, cuda_options o) {
  p.validate();
  s_ = std::make_unique<state>(p, std::move(o));
  if (!(s_->opt.run_timeout > 0) || !(s_->opt.compile_timeout > 0) || !(s_->opt.sanitizer_timeout > 0))
    throw error("cuda_options: run_timeout, compile_timeout and sanitizer_timeout must be positive seconds");
  if (!(s_->opt.profile_share >= 0 && s_->opt.profile_share <= 1))
    throw error("cuda_options: profile_share must be a share from 0 to 1");
  if (s_->opt.checked_timed_calls < 0) throw error("cuda_options: checked_timed_calls must be >= 0");
  s_->setup();
}
cuda_evaluator::~cuda_evaluator() = default;

std::string cuda_evaluator::fingerprint() const { return s_->fingerprint; }

void cuda_evaluator::prefetch(candidate const& c) { s_->compiler.prefetch(c.source); }

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

verdict cuda_evaluator::assure(candidate const& c, std::uint64_t seed) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  auto const& b = s.build(c);
  if (!b.result) return b.result;
  const auto at = s.shapes.sanitize;
  return s.sanitizer.check(c, s.worker.request_for(at, b.plans[at], derive_seed(seed, "cuda-sanitize", 0)),
                           s.worker.at_shape(at));
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
  detail::cuda::built const* inc = nullptr;
  if (r.interleaved && req.incumbent && req.incumbent->id != c.id)
    if (auto const& ib = s.build(*req.incumbent); ib.result) inc = &ib;
  detail::ab_ratios ratios;
  for (auto sh : r.shapes) {
    if (auto v = req.needs_check(sh)
                     ? s.check_shape(b, sh, std::max(1, r.correctness_trials), derive_seed(req.seed, "cuda-check", sh))
                     : verdict::pass();
        !v) {
      m.result = v;
      return m;
    }
    detail::cuda_protocol::reply out;
    if (auto v = s.worker.time(sh, b.plans[sh], inc ? &inc->plans[sh] : nullptr, r, req.seed, s.opt.checked_timed_calls,
                               s.flush(), out, s.opt.on_timing_request);
        !v) {
      m.result = v;
      return m;
    }
    shape_timing st;
    st.shape = sh;
    st.samples = std::move(out.samples_a);
    st.summarise();
    if (inc && out.samples_b.size() == st.samples.size())
      ratios.add(st.samples, out.samples_b, s.prob.shapes[sh].weight);
    m.timings.push_back(std::move(st));
  }
  m.res = b.res;
  if (req.incumbent) m.vs_incumbent = ratios.against(req.incumbent->id.str());
  if (r.profile) s.diagnose(c, b, r, req.seed, m);
  return m;
}

baseline cuda_evaluator::measure_baseline(problem const& p) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  if (p.shapes.size() != s.prob.shapes.size()) throw error("cuda backend: measure_baseline was given another problem");
  baseline b;
  for (std::size_t sh = 0; sh < s.prob.shapes.size(); ++sh) {
    detail::cuda_protocol::reply out;
    if (auto v = s.worker.time_reference(sh, std::max(0, s.opt.baseline_warmup), std::max(1, s.opt.baseline_samples),
                                         s.flush(), derive_seed(0x6261736555ULL, "cuda-baseline", sh), out);
        !v)
      throw error("cuda backend: " + v.detail);
    b.seconds.push_back(median_with_ci(out.samples_a).median);
  }
  // PyTorch at the same shapes, on the same device, while this evaluator's worker is idle (the lock is
  // held); its device time is charged like the reference's.
  auto po = s.opt.pytorch;
  po.visible_device = s.opt.visible_device;
  po.flush_bytes = s.opt.flush_bytes;
  b.pytorch = measure_pytorch(s.prob, po);
  s.spent += b.pytorch->device_seconds;
  return b;
}

double cuda_evaluator::take_device_seconds() {
  std::lock_guard lk(s_->mu);
  s_->rationing.charged(s_->spent);
  return std::exchange(s_->spent, 0.0);
}
std::optional<resources> cuda_evaluator::resources_of(candidate const& c) {
  std::lock_guard lk(s_->mu);
  auto const& b = s_->build(c);
  if (!b.result) return std::nullopt;
  return b.res;
}
std::optional<double> cuda_evaluator::compile_seconds(candidate const& c) const {
  std::lock_guard lk(s_->mu);
  if (auto it = s_->builds.find(c.id.value); it != s_->builds.end()) return it->second.compile_seconds;
  return std::nullopt;
}
std::size_t cuda_evaluator::worker_starts() const {
  std::lock_guard lk(s_->mu);
  return s_->worker.spawns();
}
std::size_t cuda_evaluator::compiles() const {
  std::lock_guard lk(s_->mu);
  return s_->compiler.compiles();
}
std::size_t cuda_evaluator::cache_hits() const {
  std::lock_guard lk(s_->mu);
  return s_->compiler.cache_hits();
}
std::size_t cuda_evaluator::sanitizer_runs() const {
  std::lock_guard lk(s_->mu);
  return s_->sanitizer.runs();
}
std::string const& cuda_evaluator::sanitizer() const { return s_->sanitizer.tool(); }
std::string cuda_evaluator::profiler() const {
  std::lock_guard lk(s_->mu);
  return s_->profiler.why_not().empty() ? s_->profiler.tool() : std::string{};
}
std::size_t cuda_evaluator::profiler_runs() const {
  std::lock_guard lk(s_->mu);
  return s_->profiler.runs();
}
std::string const& cuda_evaluator::device() const { return s_->opt.visible_device; }  // set once, never changed

}  // namespace kernelbrain
