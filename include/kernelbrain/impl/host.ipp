// Bodies of kernelbrain/evaluate/host.hpp: the trusted side of the host backend. It draws inputs,
// prepares the shared arena, asks the workers to run, and checks everything they leave behind.
// Compiled once, from kernelbrain/src.hpp; never include this anywhere else.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/detail/compile_pool.hpp"
#include "kernelbrain/evaluate/host.hpp"
#include "kernelbrain/evaluate/host_compiler.hpp"
#include "kernelbrain/evaluate/host_protocol.hpp"
#include "kernelbrain/evaluate/worker_process.hpp"

namespace kernelbrain {
namespace detail::host {

namespace fs = std::filesystem;
namespace hp = host_protocol;

inline constexpr std::uint32_t nan_poison = 0x7fc0deadU;   ///< a quiet NaN whose payload arithmetic never produces
inline constexpr std::uint32_t big_poison = 0x7f7fdeadU;   ///< a huge finite value (about 3.4e38)
inline constexpr std::uint32_t canary_bits = 0x7fc0ca11U;  ///< fills the gaps between buffers
inline constexpr std::size_t gap_bytes = 64;               ///< at least this much canary around every buffer

/// A shape, resolved: the dims in dim_order and every tensor's element count.
struct shape_plan {
  std::vector<std::int64_t> dims;
  std::vector<std::size_t> in_counts, out_counts;
  std::string label;  ///< "'odd' (R=5, C=37)"
};

struct slot {
  std::size_t offset = 0, count = 0;
  std::string name;
};

/// Where everything lives in an arena: inputs, outputs, the incumbent's outputs, a second input set,
/// and canary-filled gaps between all of them.
struct layout {
  std::vector<slot> inputs, outputs, outputs_b, last_inputs;
  std::vector<std::pair<std::size_t, std::size_t>> gaps;  ///< [begin, end) byte ranges
  std::vector<std::string> gap_names;                     ///< "between input 'x' and output 'y'"
  std::size_t bytes = 0;
};

inline layout make_layout(problem const& p, shape_plan const& s) {
  layout l;
  std::size_t pos = 0;
  std::string before = "the start of the arena";
  auto place = [&](std::vector<slot>& into, std::size_t count, std::string name) {
    const std::size_t start = (pos + gap_bytes + 63) / 64 * 64;
    l.gaps.emplace_back(pos, start);
    l.gap_names.push_back("between " + before + " and " + name);
    into.push_back({start, count, name});
    pos = start + count * sizeof(float);
    before = std::move(name);
  };
  for (std::size_t i = 0; i < s.in_counts.size(); ++i)
    place(l.inputs, s.in_counts[i], "input '" + p.inputs[i].name + "'");
  for (std::size_t i = 0; i < s.out_counts.size(); ++i)
    place(l.outputs, s.out_counts[i], "output '" + p.outputs[i].name + "'");
  for (std::size_t i = 0; i < s.out_counts.size(); ++i)
    place(l.outputs_b, s.out_counts[i], "the incumbent's output '" + p.outputs[i].name + "'");
  for (std::size_t i = 0; i < s.in_counts.size(); ++i)
    place(l.last_inputs, s.in_counts[i], "the second set of input '" + p.inputs[i].name + "'");
  l.gaps.emplace_back(pos, pos + gap_bytes);
  l.gap_names.push_back("after " + before);
  l.bytes = pos + gap_bytes;
  return l;
}

/// Inputs and the reference's outputs for one (shape, seed), kept in the parent's own memory.
struct reference_case {
  std::vector<std::vector<float>> inputs, outputs;
};

/// The reference failed: not the candidate's fault.
struct reference_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

inline std::vector<hp::tensor_ref> refs(std::vector<slot> const& v) {
  std::vector<hp::tensor_ref> out;
  for (auto const& s : v) out.push_back({s.offset, s.count});
  return out;
}

inline std::uint64_t llc_bytes() {
  std::uint64_t best = 0;
  std::error_code ec;
  for (auto const& e : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    std::ifstream in(e.path() / "size");
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    std::uint64_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    best = std::max(best, v);
  }
  if (!best) best = static_cast<std::uint64_t>(std::max(0L, ::sysconf(_SC_LEVEL3_CACHE_SIZE)));
  return best ? best : std::uint64_t{32} << 20;
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(' ', c + 1));
    }
  return "unknown cpu";
}

inline std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000.0)));
}

}  // namespace detail::host

std::string find_host_worker(std::string const& explicit_path) {
  namespace fs = std::filesystem;
  auto usable = [](std::string const& p) {
    return !p.empty() && fs::is_regular_file(p) && ::access(p.c_str(), X_OK) == 0;
  };
  if (!explicit_path.empty()) {
    if (usable(explicit_path)) return explicit_path;
    throw error("host backend: worker_path '" + explicit_path +
                "' is not an executable file: build the kernelbrain_host_worker target and point worker_path at it");
  }
  if (char const* env = std::getenv("KERNELBRAIN_HOST_WORKER"); env && *env) {
    if (usable(env)) return env;
    throw error(std::string("host backend: KERNELBRAIN_HOST_WORKER='") + env +
                "' is not an executable file: point it at kernelbrain-host-worker (built by the "
                "kernelbrain_host_worker target)");
  }
  std::string looked;
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = (self.parent_path() / "kernelbrain-host-worker").string();
    if (usable(beside)) return beside;
    looked = beside;
  }
#ifdef KERNELBRAIN_HOST_WORKER_BUILD_PATH
  if (usable(KERNELBRAIN_HOST_WORKER_BUILD_PATH)) return KERNELBRAIN_HOST_WORKER_BUILD_PATH;
  looked += std::string(looked.empty() ? "" : ", ") + KERNELBRAIN_HOST_WORKER_BUILD_PATH;
#endif
  throw error(
      "host backend: cannot find the worker executable kernelbrain-host-worker (looked at: " +
      (looked.empty() ? std::string("nothing") : looked) +
      "): build the kernelbrain_host_worker target and set KERNELBRAIN_HOST_WORKER or host_options::worker_path to it");
}

struct host_evaluator::state {
  problem prob;
  host_options opt;
  std::string worker_exe;
  host_compiler compiler;
  std::vector<detail::host::shape_plan> plans;
  std::vector<detail::host::layout> layouts;
  worker_process cand;
  worker_process ref;
  std::string ref_artifact;
  std::string fingerprint;
  std::uint64_t flush_bytes = 0;
  struct built {
    verdict result;
    std::string artifact;
  };
  std::unordered_map<std::uint64_t, built> builds;  ///< by candidate id
  std::map<std::pair<std::size_t, std::uint64_t>, detail::host::reference_case> ref_cache;
  std::set<std::string> loaded;  ///< modules the current candidate worker has loaded
  std::size_t loaded_generation = 0;
  double spent = 0;
  std::atomic<std::size_t> compiles{0}, hits{0};  ///< counted where the compile runs (pool or inline)
  mutable std::mutex mu;

  state(problem const& p, host_options o)
      : prob(p),
        opt(std::move(o)),
        worker_exe(find_host_worker(opt.worker_path)),
        compiler(compiler_options()),
        cand(worker_exe, host_protocol::role),
        ref(worker_exe, host_protocol::role) {}

  host_compiler_options compiler_options() const {
    host_compiler_options c;
    c.compiler = opt.compiler;
    c.flags = opt.flags;
    c.include_dir = opt.include_dir;
    c.cache_dir = opt.cache_dir;
    c.time_limit = detail::host::millis(opt.compile_timeout);
    c.memory_bytes = opt.compile_memory;
    c.limiter = worker_exe;
    return c;
  }

  // ---- setup ----------------------------------------------------------------------------------------

  void plan_shapes() {
    using detail::host::shape_plan;
    auto const& p = prob;
    auto where = [&](std::string const& what) { return "problem '" + p.name + "' (host backend): " + what; };
    if (!p.backend.empty() && p.backend != "host")
      throw error(
          where("it is for backend '" + p.backend + "'; use that backend's evaluator or set backend to \"host\""));
    if (p.reference_source.empty())
      throw error(where("reference_source is empty: the host backend needs a trusted C++ reference"));
    if (p.outputs.empty())
      throw error(where("no outputs declared: the host backend checks every output, declare at least one"));
    for (auto const* list : {&p.inputs, &p.outputs})
      for (auto const& t : *list) {
        if (t.name.empty()) throw error(where("a tensor has no name"));
        if (list == &p.inputs && t.distribution != "normal" && t.distribution != "uniform" &&
            t.distribution != "positive")
          throw error(where("input '" + t.name + "' has distribution '" + t.distribution +
                            "': use normal, uniform or positive"));
      }
    for (auto const& s : p.shapes) {
      shape_plan sp;
      sp.label = "'" + s.name + "' (";
      bool first = true;
      for (auto const& d : p.dim_order) {
        auto it = s.dims.find(d);
        if (it == s.dims.end())
          throw error(where("shape '" + s.name + "' has no dim '" + d + "' (dim_order lists it): add it to the shape"));
        sp.dims.push_back(it->second);
        sp.label += (first ? "" : ", ") + d + "=" + std::to_string(it->second);
        first = false;
      }
      sp.label += ")";
      if (p.dim_order.empty() && !s.dims.empty())
        throw error(
            where("shape '" + s.name + "' has dims but dim_order is empty: list the order kb_kernel receives them in"));
      auto lookup = [&s](std::string_view n) -> std::optional<std::int64_t> {
        auto it = s.dims.find(std::string(n));
        if (it == s.dims.end()) return std::nullopt;
        return it->second;
      };
      auto count = [&](tensor_spec const& t, char const* kind) {
        std::int64_t v = 0;
        try {
          v = evaluate_expression(t.size, lookup);
        } catch (error const& e) {
          throw error(where(std::string(kind) + " '" + t.name + "' at shape '" + s.name + "': " + e.what()));
        }
        if (v < 0 || v > (std::int64_t{1} << 33))
          throw error(where(std::string(kind) + " '" + t.name + "' at shape '" + s.name + "' has " + std::to_string(v) +
                            " elements: sizes must be between 0 and 2^33"));
        return static_cast<std::size_t>(v);
      };
      for (auto const& t : p.inputs) sp.in_counts.push_back(count(t, "input"));
      for (auto const& t : p.outputs) sp.out_counts.push_back(count(t, "output"));
      layouts.push_back(detail::host::make_layout(p, sp));
      plans.push_back(std::move(sp));
    }
  }

  void prepare_reference() {
    const auto r = compiler.compile(prob.reference_source);
    ++(r.cache_hit ? hits : compiles);
    if (!r.result)
      throw error("problem '" + prob.name + "': reference_source failed to build (" +
                  std::string(to_string(r.result.where)) + "): " + r.result.detail);
    ref_artifact = r.artifact;
    host_protocol::run_request q;
    q.module = ref_artifact;
    auto rep =
        ref.call(static_cast<std::uint32_t>(host_protocol::request::load), host_protocol::encode(q), run_silence(0));
    auto v = translate(rep, "loading the reference", nullptr, false);
    if (!v) throw error("problem '" + prob.name + "': reference_source cannot be used: " + v.detail);
  }

  // ---- worker plumbing ------------------------------------------------------------------------------

  /// The watchdog's silence limit for one kernel call (two for A/B), plus bookkeeping time.
  [[nodiscard]] std::chrono::milliseconds run_silence(std::size_t arena_bytes, int calls = 1) const {
    const double slack = 0.5 + 4.0 * static_cast<double>(arena_bytes + flush_bytes) / 1e9;
    return detail::host::millis(opt.run_timeout * calls + slack);
  }

  /// A worker's answer as a verdict. `charge`: count its time against the device budget.
  verdict translate(worker_reply const& r, std::string const& what, host_protocol::reply* out, bool charge) {
    namespace hp = host_protocol;
    if (r.st == worker_reply::status::timeout) {
      if (charge) spent += r.seconds;
      return verdict::reject(stage::timeout, what + ": " + r.why);
    }
    if (r.st == worker_reply::status::died) {
      if (charge) spent += r.seconds;
      return verdict::reject(stage::crash, what + ": " + r.why);
    }
    hp::reply rep;
    try {
      rep = hp::decode_reply(r.msg.body);
    } catch (wire_error const& e) {
      return verdict::reject(stage::infrastructure, what + ": malformed reply from the worker: " + e.what());
    }
    if (charge) spent += rep.kernel_seconds;
    if (out) *out = rep;
    switch (rep.st) {
      case hp::status::ok:
        return verdict::pass();
      case hp::status::load_failed:
      case hp::status::missing_entry:
        return verdict::reject(stage::signature, what + ": " + rep.message);
      case hp::status::bad_alloc:
        return verdict::reject(stage::resources, what + ": " + rep.message);
      case hp::status::threw:
        return verdict::reject(stage::crash, what + ": " + rep.message);
      case hp::status::stray_threads:
        return verdict::reject(stage::correctness, what + ": " + rep.message);
      case hp::status::unwritten: {
        const auto k = static_cast<std::size_t>(rep.index);
        const std::string name = k < prob.outputs.size() ? "output '" + prob.outputs[k].name + "'" : "an output";
        const std::string context = what.rfind("kb_kernel ", 0) == 0 ? what.substr(10) : what;
        return verdict::reject(stage::correctness,
                               "output not written on a timed run: " + name + " " + context + ": " + rep.message);
      }
      case hp::status::bad_request:
        break;
    }
    return verdict::reject(stage::infrastructure, what + ": the worker refused the request: " + rep.message);
  }

  /// Makes room for `modules` in the candidate worker, recycling it when it has loaded too many.
  void admit_modules(std::initializer_list<std::string const*> modules) {
    if (!cand.running() || cand.spawns() != loaded_generation) loaded.clear();
    std::size_t fresh = 0;
    for (auto const* m : modules) fresh += loaded.contains(*m) ? 0 : 1;
    if (fresh && loaded.size() + fresh > std::max<std::size_t>(opt.modules_per_worker, 2)) {
      cand.stop();
      loaded.clear();
    }
    cand.ensure_started();
    loaded_generation = cand.spawns();
    for (auto const* m : modules) loaded.insert(*m);
  }
  /// After any failure the worker may hold a broken candidate's state: start the next one fresh.
  void recycle_candidate_worker() {
    cand.stop();
    loaded.clear();
  }

  // ---- building -----------------------------------------------------------------------------------------

  built const& build(candidate const& c) {
    if (auto it = builds.find(c.id.value); it != builds.end()) return it->second;
    built b;
    if (c.source.empty())
      b.result = verdict::reject(stage::compile,
                                 "the candidate has no source: a host candidate is a C++ file defining "
                                 "extern \"C\" void kb_kernel(const kb_args* args)");
    if (b.result) b.result = inspect_host_source(c.source, opt.policy);  // enforced even when no gate ran
    if (b.result) {
      auto r = pool.get(source_key(c.source), [this, &c] { return compile_counted(c.source); });
      b.result = r.result;
      b.artifact = r.artifact;
    }
    if (b.result) {
      // Loading runs the candidate's static initialisers: in the worker, never here.
      admit_modules({&b.artifact});
      host_protocol::run_request q;
      q.module = b.artifact;
      q.memory_allowance = opt.candidate_memory;
      auto rep =
          cand.call(static_cast<std::uint32_t>(host_protocol::request::load), host_protocol::encode(q), run_silence(0));
      b.result = translate(rep, "loading the candidate", nullptr, true);
      if (!b.result) recycle_candidate_worker();
    }
    return builds.emplace(c.id.value, std::move(b)).first->second;
  }

  // ---- references -------------------------------------------------------------------------------------

  void fill_inputs(std::size_t s, std::uint64_t seed, detail::host::reference_case& rc) const {
    auto const& sp = plans[s];
    for (std::size_t k = 0; k < prob.inputs.size(); ++k) {
      auto const& t = prob.inputs[k];
      rng r(derive_seed(seed, t.name, k));
      std::vector<float> v(sp.in_counts[k]);
      if (t.distribution == "uniform")
        for (auto& x : v) x = static_cast<float>(2.0 * r.uniform() - 1.0);
      else if (t.distribution == "positive")
        for (auto& x : v) x = static_cast<float>(0.5 + 1.5 * r.uniform());
      else
        for (auto& x : v) x = static_cast<float>(r.normal());
      rc.inputs.push_back(std::move(v));
    }
  }

  /// Writes inputs, poisons outputs and fills the canary gaps of `arena` for shape `s`.
  void stage_arena(shared_arena& arena, std::size_t s, detail::host::reference_case const& rc,
                   std::uint32_t poison) const {
    using namespace detail::host;
    auto const& l = layouts[s];
    arena.ensure(l.bytes);
    for (auto const& [b, e] : l.gaps) {
      auto* w = arena.at<std::uint32_t>(b);
      for (std::size_t i = 0; i < (e - b) / 4; ++i) w[i] = canary_bits;
    }
    for (std::size_t k = 0; k < l.inputs.size(); ++k)
      if (l.inputs[k].count)
        std::memcpy(arena.at<float>(l.inputs[k].offset), rc.inputs[k].data(), l.inputs[k].count * 4);
    poison_outputs(arena, s, poison);
  }
  void poison_outputs(shared_arena& arena, std::size_t s, std::uint32_t poison) const {
    for (auto const& o : layouts[s].outputs) {
      auto* w = arena.at<std::uint32_t>(o.offset);
      std::fill(w, w + o.count, poison);
    }
  }

  host_protocol::run_request run_request_for(std::size_t s, std::string const& module, std::size_t arena_bytes) const {
    host_protocol::run_request q;
    q.module = module;
    q.arena_bytes = arena_bytes;
    q.memory_allowance = opt.candidate_memory;
    q.inputs = detail::host::refs(layouts[s].inputs);
    q.outputs = detail::host::refs(layouts[s].outputs);
    q.dims = plans[s].dims;
    return q;
  }

  /// Inputs drawn from `seed` and the reference's outputs for them (computed once per measurement).
  detail::host::reference_case const& reference(std::size_t s, std::uint64_t seed) {
    using namespace detail::host;
    const auto key = std::make_pair(s, seed);
    if (auto it = ref_cache.find(key); it != ref_cache.end()) return it->second;
    reference_case rc;
    fill_inputs(s, seed, rc);
    stage_arena(ref.arena(), s, rc, nan_poison);
    auto q = run_request_for(s, ref_artifact, layouts[s].bytes);
    q.memory_allowance = 0;  // trusted
    auto rep = ref.call(static_cast<std::uint32_t>(host_protocol::request::run), host_protocol::encode(q),
                        run_silence(layouts[s].bytes));
    auto v = translate(rep, "the reference at shape " + plans[s].label, nullptr, false);
    if (!v) {
      ref.stop();
      throw reference_failure(v.detail + " (the reference is trusted code: fix problem.reference_source)");
    }
    for (std::size_t k = 0; k < layouts[s].outputs.size(); ++k) {
      auto const& o = layouts[s].outputs[k];
      float const* out = ref.arena().at<float>(o.offset);
      for (std::size_t i = 0; i < o.count; ++i)
        if (!std::isfinite(out[i]))
          throw reference_failure("the reference left output '" + prob.outputs[k].name + "' at shape " +
                                  plans[s].label + (bits_of(out[i]) == nan_poison ? " unwritten" : " non-finite") +
                                  " at index " + std::to_string(i) + ": fix problem.reference_source");
      rc.outputs.emplace_back(out, out + o.count);
    }
    return ref_cache.emplace(key, std::move(rc)).first->second;
  }

  // ---- checking ---------------------------------------------------------------------------------------

  /// Everything the parent checks after a candidate ran: the canary gaps, the inputs, every output element.
  verdict verify(std::size_t s, detail::host::reference_case const& rc, std::uint32_t poison, std::string const& when,
                 bool timed) {
    using namespace detail::host;
    auto const& l = layouts[s];
    auto& arena = cand.arena();
    for (std::size_t g = 0; g < l.gaps.size(); ++g) {
      auto const* w = arena.at<std::uint32_t>(l.gaps[g].first);
      for (std::size_t i = 0; i < (l.gaps[g].second - l.gaps[g].first) / 4; ++i)
        if (w[i] != canary_bits)
          return verdict::reject(stage::correctness, "wrote outside its buffers (" + l.gap_names[g] + ") " + when +
                                                         ": a candidate may write only its outputs");
    }
    for (std::size_t k = 0; k < l.inputs.size(); ++k) {
      float const* in = arena.at<float>(l.inputs[k].offset);
      if (std::memcmp(in, rc.inputs[k].data(), l.inputs[k].count * 4) == 0) continue;
      std::size_t i = 0;
      while (i < l.inputs[k].count && bits_of(in[i]) == bits_of(rc.inputs[k][i])) ++i;
      return verdict::reject(stage::correctness, "wrote its input '" + prob.inputs[k].name + "' " + when +
                                                     " (element " + std::to_string(i) + " changed from " +
                                                     num(rc.inputs[k][i]) + " to " + num(in[i]) +
                                                     "): inputs are read-only");
    }
    for (std::size_t k = 0; k < l.outputs.size(); ++k) {
      float const* out = arena.at<float>(l.outputs[k].offset);
      auto const& ref_out = rc.outputs[k];
      const std::size_t n = l.outputs[k].count;
      double max_ref = 0;
      for (float x : ref_out) max_ref = std::max(max_ref, static_cast<double>(std::fabs(x)));
      const double bound = prob.tol.atol + prob.tol.rtol * max_ref;
      std::size_t unwritten = 0, nonfinite = 0, wrong = 0, first_u = 0, first_n = 0, first_w = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float o = out[i];
        if (bits_of(o) == poison) {
          if (!unwritten++) first_u = i;
        } else if (!std::isfinite(o)) {
          if (!nonfinite++) first_n = i;
        } else if (!(std::fabs(static_cast<double>(o) - ref_out[i]) <= bound)) {
          if (!wrong++) first_w = i;
        }
      }
      const std::string name = "output '" + prob.outputs[k].name + "' " + when;
      if (unwritten)
        return verdict::reject(stage::correctness,
                               std::string(timed ? "output not written on a timed run: " : "output not written: ") +
                                   name + ": " + std::to_string(unwritten) + " of " + std::to_string(n) +
                                   " elements still hold the poison written before the call (first at index " +
                                   std::to_string(first_u) +
                                   "); a candidate must write every output element on every call");
      if (nonfinite)
        return verdict::reject(stage::correctness, "NaN or infinite output: " + name + ": " +
                                                       std::to_string(nonfinite) + " of " + std::to_string(n) +
                                                       " elements (first at index " + std::to_string(first_n) + ": " +
                                                       num(out[first_n]) + ", expected " + num(ref_out[first_n]) + ")");
      if (wrong)
        return verdict::reject(stage::correctness,
                               "wrong output: " + name + ": " + std::to_string(wrong) + " of " + std::to_string(n) +
                                   " elements differ from the reference by more than " + num(bound) + " = atol " +
                                   num(prob.tol.atol) + " + rtol " + num(prob.tol.rtol) + " x max|ref| " +
                                   num(max_ref) + " (first at index " + std::to_string(first_w) + ": got " +
                                   num(out[first_w]) + ", expected " + num(ref_out[first_w]) + ")");
    }
    return verdict::pass();
  }

  /// One fresh-input correctness trial: two runs (NaN poison, then a huge sentinel), each fully
  /// checked, and the two must agree.
  verdict trial(std::string const& artifact, std::size_t s, std::uint64_t seed, std::string const& label) {
    using namespace detail::host;
    auto const& rc = reference(s, seed);
    auto& arena = cand.arena();
    admit_modules({&artifact});
    stage_arena(arena, s, rc, nan_poison);
    const auto q = host_protocol::encode(run_request_for(s, artifact, layouts[s].bytes));
    const auto silence = run_silence(layouts[s].bytes);
    const std::string where = "at shape " + plans[s].label + ", " + label;
    std::vector<std::vector<float>> first;
    for (int run = 0; run < 2; ++run) {
      const std::uint32_t poison = run == 0 ? nan_poison : big_poison;
      if (run == 1) poison_outputs(arena, s, poison);
      auto rep = cand.call(static_cast<std::uint32_t>(host_protocol::request::run), q, silence);
      const std::string when = where + (run == 0 ? ", first run" : ", second run");
      if (auto v = translate(rep, "kb_kernel " + when, nullptr, true); !v) {
        recycle_candidate_worker();
        return v;
      }
      if (auto v = verify(s, rc, poison, when, false); !v) return v;
      for (std::size_t k = 0; k < layouts[s].outputs.size(); ++k) {
        auto const& o = layouts[s].outputs[k];
        float const* out = arena.at<float>(o.offset);
        if (run == 0) {
          first.emplace_back(out, out + o.count);
          continue;
        }
        const double bound = prob.tol.atol + prob.tol.rtol * max_abs(rc.outputs[k]);
        std::size_t differ = 0, at = 0;
        for (std::size_t i = 0; i < o.count; ++i) {
          const bool same = opt.bitwise_repeat ? bits_of(out[i]) == bits_of(first[k][i])
                                               : std::fabs(static_cast<double>(out[i]) - first[k][i]) <= bound;
          if (!same && !differ++) at = i;
        }
        if (differ)
          return verdict::reject(stage::correctness, "nondeterministic output: output '" + prob.outputs[k].name + "' " +
                                                         where + " differs between two runs on the same inputs (" +
                                                         std::to_string(differ) + " of " + std::to_string(o.count) +
                                                         " elements; first at index " + std::to_string(at) + ": " +
                                                         num(first[k][at]) + " then " + num(out[at]) +
                                                         "); a candidate must compute the same result every time");
      }
    }
    return verdict::pass();
  }

  static double max_abs(std::vector<float> const& v) {
    double m = 0;
    for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
    return m;
  }

  std::uint64_t trial_seed(std::uint64_t seed, std::size_t s, int t) const {
    return derive_seed(seed, "host-trial", (static_cast<std::uint64_t>(s) << 32) | static_cast<std::uint32_t>(t));
  }

  verdict check_shapes(std::string const& artifact, std::span<std::size_t const> shapes, int trials,
                       std::uint64_t seed) {
    for (auto s : shapes) {
      if (s >= plans.size())
        throw error("host backend: shape index " + std::to_string(s) + " out of range: problem '" + prob.name +
                    "' has " + std::to_string(plans.size()) + " shapes");
      for (int t = 0; t < trials; ++t)
        if (auto v = trial(artifact, s, trial_seed(seed, s, t),
                           "trial " + std::to_string(t + 1) + " of " + std::to_string(trials));
            !v)
          return v;
    }
    return verdict::pass();
  }

  // ---- timing -------------------------------------------------------------------------------------------

  /// Times candidate `a` (and `b`, interleaved, when given) at shape `s`. The last timed call gets a
  /// fresh input set (same buffers, new values) and its outputs are checked like any trial's.
  verdict time_shape(std::string const& a, std::string const* b, std::size_t s, rung const& r, std::uint64_t seed,
                     std::uint64_t last_seed, host_protocol::reply& out) {
    using namespace detail::host;
    auto const& l = layouts[s];
    auto const& check_case = reference(s, seed);
    auto const& last_case = reference(s, last_seed);
    auto& arena = cand.arena();
    if (b)
      admit_modules({&a, b});
    else
      admit_modules({&a});
    stage_arena(arena, s, check_case, nan_poison);
    for (std::size_t k = 0; k < l.last_inputs.size(); ++k)
      if (l.last_inputs[k].count)
        std::memcpy(arena.at<float>(l.last_inputs[k].offset), last_case.inputs[k].data(), l.last_inputs[k].count * 4);
    host_protocol::time_request q;
    q.a = run_request_for(s, a, l.bytes);
    if (b) {
      q.module_b = *b;
      q.outputs_b = refs(l.outputs_b);
    }
    for (auto const& li : l.last_inputs) q.last_inputs.push_back(li.offset);
    q.warmup = std::max(0, r.warmup);
    q.samples = std::max(1, r.samples);
    q.flush_bytes = flush_bytes;
    q.poison_bits = nan_poison;
    const std::string where = "at shape " + plans[s].label + ", timing";
    auto rep = cand.call(static_cast<std::uint32_t>(host_protocol::request::time), host_protocol::encode(q),
                         run_silence(l.bytes, b ? 2 : 1), opt.on_timing_request);
    if (auto v = translate(rep, "kb_kernel " + where, &out, true); !v) {
      recycle_candidate_worker();
      return v;
    }
    if (out.samples_a.size() != static_cast<std::size_t>(q.samples) ||
        (b && out.samples_b.size() != out.samples_a.size()))
      return verdict::reject(stage::infrastructure, "the worker returned the wrong number of samples " + where);
    // The worker shares an address space with the candidate; the parent's own clock is the check.
    double total = 0;
    for (double x : out.samples_a) total += x;
    for (double x : out.samples_b) total += x;
    if (total > rep.seconds * 1.01 + 1e-3)
      return verdict::reject(stage::impossible, "the worker reported " + num(total) + " s of samples in " +
                                                    num(rep.seconds) + " s of wall time " + where +
                                                    " (was the timer tampered with?)");
    return verify(s, last_case, nan_poison, where + " (last timed call)", true);
  }

  // ---- background compiles (declared last: its threads stop before the compiler goes away) ----
  static std::uint64_t source_key(std::string const& source) { return hasher{}.bytes(source).digest(); }
  compile_result compile_counted(std::string const& source) {
    auto r = compiler.compile(source);
    ++(r.cache_hit ? hits : compiles);
    return r;
  }
  /// Failed compiles are remembered (not cached on disk); passing ones are in the artifact cache.
  detail::compile_pool<compile_result> pool{[](compile_result const& r) { return !r.result; },
                                            std::max(1u, opt.compile_threads)};
};

// ---- host_evaluator -----------------------------------------------------------------------------------

host_evaluator::host_evaluator(problem const& p, host_options o) {
  p.validate();
  s_ = std::make_unique<state>(p, std::move(o));
  auto& s = *s_;
  if (!(s.opt.run_timeout > 0) || !(s.opt.compile_timeout > 0))
    throw error("host_options: run_timeout and compile_timeout must be positive seconds");
  if (s.opt.baseline_samples < 1) throw error("host_options: baseline_samples must be at least 1");
  s.flush_bytes = s.opt.flush_bytes ? s.opt.flush_bytes
                                    : std::clamp<std::uint64_t>(2 * detail::host::llc_bytes(), std::uint64_t{8} << 20,
                                                                std::uint64_t{512} << 20);
  s.plan_shapes();
  s.prepare_reference();
  s.fingerprint = "host/v1; compiler: " + s.compiler.version() + "; flags: " + s.compiler.flags_text() +
                  "; cpu: " + detail::host::cpu_model();
}

host_evaluator::~host_evaluator() = default;

std::string host_evaluator::fingerprint() const { return s_->fingerprint; }

verdict host_evaluator::inspect(candidate const& c) {
  std::lock_guard lk(s_->mu);
  return inspect_host_source(c.source, s_->opt.policy);
}

void host_evaluator::prefetch(candidate const& c) {
  // Only what the source policy admits is worth compiling early (build() enforces it again).
  if (s_->opt.compile_threads == 0 || c.source.empty() || !inspect_host_source(c.source, s_->opt.policy)) return;
  s_->pool.prefetch(state::source_key(c.source), [st = s_.get(), src = c.source] { return st->compile_counted(src); });
}

verdict host_evaluator::build(candidate const& c) {
  std::lock_guard lk(s_->mu);
  return s_->build(c).result;
}

verdict host_evaluator::check(candidate const& c, std::span<std::size_t const> shapes, int trials, std::uint64_t seed) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  s.ref_cache.clear();
  auto const& b = s.build(c);
  if (!b.result) return b.result;
  try {
    return s.check_shapes(b.artifact, shapes, std::max(1, trials), seed);
  } catch (detail::host::reference_failure const& e) {
    return verdict::reject(stage::infrastructure, e.what());
  }
}

measurement host_evaluator::measure(candidate const& c, rung const& r, measure_request const& req) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  measurement m;
  s.ref_cache.clear();
  auto const& b = s.build(c);
  if (!b.result) {
    m.result = b.result;
    return m;
  }
  const std::string artifact = b.artifact;
  std::string incumbent;
  if (r.interleaved && req.incumbent && req.incumbent->id != c.id)
    if (auto const& ib = s.build(*req.incumbent); ib.result) incumbent = ib.artifact;
  const int trials = std::max(1, r.correctness_trials);
  std::vector<std::vector<double>> ratios;  // per shape, per sample: candidate / incumbent
  std::vector<double> weights;
  try {
    for (auto shape : r.shapes) {
      // Correctness at every shape that is timed, on fresh inputs, before any timing.
      const std::size_t one[] = {shape};
      if (auto v = s.check_shapes(artifact, one, trials, req.seed); !v) {
        m.result = v;
        return m;
      }
      host_protocol::reply rep;
      auto v = s.time_shape(artifact, incumbent.empty() ? nullptr : &incumbent, shape, r,
                            s.trial_seed(req.seed, shape, trials - 1), derive_seed(req.seed, "host-timed", shape), rep);
      if (!v) {
        m.result = v;
        return m;
      }
      shape_timing st;
      st.shape = shape;
      st.samples = std::move(rep.samples_a);
      st.summarise();
      if (!incumbent.empty()) {
        std::vector<double> rs;
        for (std::size_t i = 0; i < st.samples.size(); ++i)
          rs.push_back(st.samples[i] / std::max(rep.samples_b[i], 1e-12));
        ratios.push_back(std::move(rs));
        weights.push_back(s.prob.shapes[shape].weight);
      }
      m.timings.push_back(std::move(st));
    }
  } catch (detail::host::reference_failure const& e) {
    m.result = verdict::reject(stage::infrastructure, e.what());
    m.timings.clear();
    return m;
  }
  m.res = resources{};  // a CPU has no registers-per-thread or shared memory to report
  if (!ratios.empty()) {
    // Sample i of the comparison: the weighted geometric mean over shapes of sample i's ratio.
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

baseline host_evaluator::measure_baseline(problem const& p) {
  std::lock_guard lk(s_->mu);
  auto& s = *s_;
  if (p.shapes.size() != s.plans.size())
    throw error("host backend: measure_baseline was given problem '" + p.name + "' with " +
                std::to_string(p.shapes.size()) + " shapes, but this evaluator was built for '" + s.prob.name +
                "' with " + std::to_string(s.plans.size()));
  baseline b;
  s.ref_cache.clear();
  for (std::size_t i = 0; i < s.plans.size(); ++i) {
    detail::host::reference_case const* rc = nullptr;
    try {
      rc = &s.reference(i, derive_seed(0x6261736555ULL, "host-baseline", i));
    } catch (detail::host::reference_failure const& e) {
      throw error("host backend: cannot time the reference of problem '" + s.prob.name + "': " + e.what());
    }
    auto const& l = s.layouts[i];
    s.stage_arena(s.ref.arena(), i, *rc, detail::host::nan_poison);
    host_protocol::time_request q;
    q.a = s.run_request_for(i, s.ref_artifact, l.bytes);
    q.a.memory_allowance = 0;
    q.warmup = std::max(0, s.opt.baseline_warmup);
    q.samples = s.opt.baseline_samples;
    q.flush_bytes = s.flush_bytes;
    q.poison_bits = detail::host::nan_poison;
    auto rep = s.ref.call(static_cast<std::uint32_t>(host_protocol::request::time), host_protocol::encode(q),
                          s.run_silence(l.bytes));
    host_protocol::reply out;
    if (auto v = s.translate(rep, "timing the reference at shape " + s.plans[i].label, &out, false); !v) {
      s.ref.stop();
      throw error("host backend: " + v.detail + " (fix problem.reference_source, or raise host_options::run_timeout)");
    }
    b.seconds.push_back(median_with_ci(out.samples_a).median);
    s.spent += out.kernel_seconds;
  }
  return b;
}

double host_evaluator::take_device_seconds() {
  std::lock_guard lk(s_->mu);
  return std::exchange(s_->spent, 0.0);
}

int host_evaluator::worker_pid() const {
  std::lock_guard lk(s_->mu);
  return s_->cand.running() ? s_->cand.pid() : -1;
}
std::size_t host_evaluator::worker_starts() const {
  std::lock_guard lk(s_->mu);
  return s_->cand.spawns();
}
std::size_t host_evaluator::compiles() const {
  std::lock_guard lk(s_->mu);
  return s_->compiles;
}
std::size_t host_evaluator::cache_hits() const {
  std::lock_guard lk(s_->mu);
  return s_->hits;
}
std::string host_evaluator::cache_directory() const {
  std::lock_guard lk(s_->mu);
  return s_->compiler.directory();
}

}  // namespace kernelbrain
