// cuda_worker_client: the serving kernelbrain-cuda-worker as the CUDA backend's parent talks to it.
// It builds the requests (a shape's tensors, the candidate's and the reference's plans, the seed
// and tolerance), sends them under a watchdog limit, and reads the replies as verdicts (the shared
// worker_verdict plus the CUDA protocol's statuses). Also what the worker says about NVRTC and the
// device (--version).
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/input_cases.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/backends/cuda/detail/shapes.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"
#include "kernelbrain/isolation/worker_verdict.hpp"

namespace kernelbrain::detail::cuda {

/// What `kernelbrain-cuda-worker --version` says.
struct worker_report {
  std::string nvrtc_version;
  std::string device_text;  ///< the device's name and the driver's version
  std::uint64_t l2_bytes = 0;
  int sm_count = 0;              ///< multiprocessors of the worker's device 0; 0 without a device
  std::size_t device_count = 0;  ///< devices the worker sees (cuDeviceGetCount); 0 without a driver
};

/// Asks `worker_exe` (in a child: no CUDA context here), with `env` added to its environment (the
/// evaluator's CUDA_VISIBLE_DEVICES). Throws kernelbrain::error when it fails.
inline worker_report probe_worker(std::string const& worker_exe, std::vector<std::string> const& env = {}) {
  const auto v = run_captured({worker_exe, "--version"}, std::chrono::milliseconds(60000), 64 * 1024, env);
  if (!v.succeeded()) {
    std::string with;
    for (auto const& e : env) with += " " + e;
    throw error("cuda backend: " + worker_exe + " --version failed" + (with.empty() ? "" : " (with" + with + ")") +
                ": " + v.output);
  }
  worker_report r;
  std::istringstream in(v.output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("nvrtc ", 0) == 0) r.nvrtc_version = line.substr(6);
    if (line.rfind("device ", 0) == 0) r.device_text = line.substr(7);
    if (line.rfind("driver ", 0) == 0) r.device_text += "; driver " + line.substr(7);
    if (line.rfind("l2 ", 0) == 0) r.l2_bytes = std::strtoull(line.c_str() + 3, nullptr, 10);
    if (line.rfind("sms ", 0) == 0) r.sm_count = static_cast<int>(std::strtol(line.c_str() + 4, nullptr, 10));
    if (line.rfind("devices ", 0) == 0) r.device_count = std::strtoull(line.c_str() + 8, nullptr, 10);
  }
  return r;
}

/// What a decoded CUDA reply's status means for the request `what`. `p` names the tensor a
/// status is about.
inline verdict judge_reply(problem const& p, cuda_protocol::reply const& rep, std::string const& what) {
  namespace cp = cuda_protocol;
  auto tensor = [&]() -> std::string {
    const auto k = static_cast<std::size_t>(rep.index);
    if (rep.st == cp::status::wrote_input) return k < p.inputs.size() ? "input '" + p.inputs[k].name + "': " : "";
    return k < p.outputs.size() ? "output '" + p.outputs[k].name + "': " : "";
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

class cuda_worker_client {
 public:
  /// Everything passed by reference must outlive this object; `spent`: where the device time of
  /// every request is charged. `run_timeout`: cuda_options::run_timeout. `env`: added to the
  /// worker's environment (the evaluator's CUDA_VISIBLE_DEVICES).
  cuda_worker_client(std::string const& worker_exe, problem const& p, shape_table const& shapes,
                     std::vector<cuda_protocol::plan> const& ref_plans, double run_timeout, double* spent,
                     std::vector<std::string> env = {})
      : proc_(worker_exe, cuda_protocol::role, {}, std::move(env)),
        prob_(p),
        shapes_(shapes),
        ref_plans_(ref_plans),
        run_timeout_(run_timeout),
        spent_(spent) {}

  /// A request to run `cand` at shape `s` on inputs drawn from `seed`, against the reference.
  [[nodiscard]] cuda_protocol::run_request request_for(std::size_t s, cuda_protocol::plan const& cand,
                                                       std::uint64_t seed) const {
    cuda_protocol::run_request q;
    q.shape_key = s + 1;
    q.inputs = shapes_.at[s].inputs;
    q.outputs = shapes_.at[s].outputs;
    q.dims = shapes_.at[s].dims;
    q.cand = cand;
    q.ref = ref_plans_[s];
    q.seed = seed;
    q.rtol = prob_.tol.rtol;
    q.atol = prob_.tol.atol;
    return q;
  }

  /// "at shape 'NAME'", for messages.
  [[nodiscard]] std::string at_shape(std::size_t s) const { return "at shape '" + prob_.shapes[s].name + "'"; }

  /// `trials` correctness trials of `cand` at shape `s`, then, when `adversarial`, one trial per
  /// adversarial case of each input.
  verdict check(std::size_t s, cuda_protocol::plan const& cand, int trials, std::uint64_t seed, bool adversarial) {
    auto q = request_for(s, cand, seed);
    q.trials = std::max(1, trials);
    if (adversarial) q.cases = adversarial_cases();
    return ask(cuda_protocol::request::check, q, 1.0 + static_cast<double>(q.cases.size()) / 4.0, at_shape(s), nullptr);
  }

  /// Times `cand` (and `incumbent`, interleaved, when given) at shape `s` as rung `r` asks; the
  /// outputs of `checked_calls` timed calls drawn from `seed`, and of the last one, are checked.
  /// `out` receives the samples. `after_send`: the test hook.
  verdict time(std::size_t s, cuda_protocol::plan const& cand, cuda_protocol::plan const* incumbent, rung const& r,
               std::uint64_t seed, int checked_calls, std::uint64_t flush_bytes, cuda_protocol::reply& out,
               std::function<void(int pid)> const& after_send = {}) {
    auto q = request_for(s, cand, derive_seed(seed, "cuda-timed", s));
    if (incumbent) q.incumbent = *incumbent;
    q.warmup = std::max(0, r.warmup);
    q.samples = std::max(1, r.samples);
    q.flush_bytes = flush_bytes;
    // Which timed calls are checked: drawn from the measurement's seed, unknown to the candidate.
    rng pick(derive_seed(seed, "cuda-checked-calls", s));
    const int total = q.warmup + q.samples;
    for (int k = 0; k < checked_calls && total > 1; ++k)
      q.checked_calls.push_back(static_cast<std::int32_t>(pick.below(static_cast<std::uint64_t>(total - 1))));
    if (auto v =
            ask(cuda_protocol::request::time, q, incumbent ? 2.0 : 1.0, at_shape(s) + ", timing", &out, after_send);
        !v)
      return v;
    if (out.samples_a.size() != static_cast<std::size_t>(q.samples))
      return verdict::reject(stage::infrastructure, "the worker returned the wrong number of samples");
    return verdict::pass();
  }

  /// Times the reference alone at shape `s` (no check afterwards): `out` receives the samples.
  verdict time_reference(std::size_t s, int warmup, int samples, std::uint64_t flush_bytes, std::uint64_t seed,
                         cuda_protocol::reply& out) {
    auto q = request_for(s, ref_plans_[s], seed);
    q.warmup = warmup;
    q.samples = samples;
    q.flush_bytes = flush_bytes;
    q.verify_after_timing = 0;
    return ask(cuda_protocol::request::time, q, 1.0, "timing the reference " + at_shape(s), &out);
  }

  [[nodiscard]] std::size_t spawns() const noexcept { return proc_.spawns(); }

  /// The name and launch limits of the worker's device 0, the evaluator's device (request::device:
  /// the worker creates no context for it; present == 0 where there is no driver or device).
  [[nodiscard]] cuda_protocol::device_info device() {
    const auto r =
        proc_.call(static_cast<std::uint32_t>(cuda_protocol::request::device), {}, std::chrono::milliseconds(60000));
    if (r.st != worker_reply::status::reply)
      throw error("cuda backend: the worker did not report its device: " + r.why);
    try {
      return cuda_protocol::decode_device(r.msg.body);
    } catch (wire_error const& e) {
      throw error(std::string("cuda backend: the worker's device reply: ") + e.what());
    }
  }

 private:
  /// The watchdog's limit for a request that runs `run_timeouts` times run_timeout worth of plans,
  /// plus the time a fresh worker takes to create its CUDA context.
  [[nodiscard]] std::chrono::milliseconds silence(double run_timeouts) const {
    return ceil_millis(run_timeout_ * run_timeouts + (proc_.running() ? 0.0 : 30.0));
  }

  verdict ask(cuda_protocol::request type, cuda_protocol::run_request const& q, double run_timeouts,
              std::string const& what, cuda_protocol::reply* out, std::function<void(int pid)> const& after_send = {}) {
    const auto r =
        proc_.call(static_cast<std::uint32_t>(type), cuda_protocol::encode(q), silence(run_timeouts), after_send);
    return worker_verdict(
        r, what,
        reply_reading<cuda_protocol::reply>{&cuda_protocol::decode_reply, &cuda_protocol::reply::device_seconds},
        [this, &what](cuda_protocol::reply const& rep) { return judge_reply(prob_, rep, what); }, spent_, out);
  }

  /// One trial per adversarial case of each input (the other inputs as drawn).
  [[nodiscard]] std::vector<std::vector<cuda_protocol::input_case>> adversarial_cases() const {
    std::vector<std::vector<cuda_protocol::input_case>> out;
    for (auto const& t : adversarial_trials(prob_)) {
      std::vector<cuda_protocol::input_case> v(prob_.inputs.size());
      v[t.input] = {static_cast<std::int32_t>(t.what.what), t.what.value};
      out.push_back(std::move(v));
    }
    return out;
  }

  worker_process proc_;
  problem const& prob_;
  shape_table const& shapes_;
  std::vector<cuda_protocol::plan> const& ref_plans_;
  double run_timeout_;
  double* spent_;
};

}  // namespace kernelbrain::detail::cuda
