// The CUDA backend's requests and replies (on top of worker_protocol.hpp). Shared by the evaluator
// (parent, which never touches CUDA) and kernelbrain-cuda-worker (which owns the CUDA context).
// Launch plans cross the channel resolved: every expression already evaluated at one shape.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/isolation/worker_protocol.hpp"

namespace kernelbrain::detail::cuda_protocol {

inline constexpr char const* role = "cuda";

/// The most launches one plan may have (the parent rejects longer plans; the worker refuses them).
inline constexpr std::uint64_t max_launches = 64;
/// The most extra correctness trials (adversarial input cases) one check request may carry.
inline constexpr std::uint64_t max_cases = 256;

enum class request : std::uint32_t {
  check = wire::first_backend_type,  ///< correctness trials of a plan against the reference plan
  time,                              ///< timed runs (optionally interleaved with a second plan), then a check
  device,                            ///< the device's name and launch limits (empty body; reply: device_info)
};

enum class status : std::uint32_t {
  ok,
  load_failed,       ///< the module would not load
  missing_kernel,    ///< a launch names a kernel the module lacks
  launch_failed,     ///< the launch was refused (resources, bad configuration): not sticky
  unwritten,         ///< an output kept the poison
  nonfinite,         ///< NaN or Inf in an output
  wrong,             ///< outside the tolerance
  nondeterministic,  ///< two runs on the same inputs differ
  wrote_input,       ///< an input changed
  reference_failed,  ///< the trusted reference failed (not the candidate's fault)
  out_of_memory,     ///< device allocation failed
  bad_request,
  attribute_mismatch,  ///< the driver's view of a kernel differs from the parent's reading of its cubin
};

enum class arg_kind : std::int32_t { buffer = 0, dim = 1 };

struct launch {
  std::string kernel;
  std::int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  std::int64_t smem = 0;
  std::vector<std::int64_t> args;  ///< pairs (kind, index): buffer index (inputs, outputs, scratch) or dim index
  /// What the parent read from the cubin, cross-checked against cuFuncGetAttribute (-1: not checked).
  std::int32_t registers = -1, local_bytes = -1, static_smem = -1;
};

struct plan {
  std::string cubin;                   ///< path of the module
  std::vector<std::uint64_t> scratch;  ///< scratch buffer sizes in bytes (buffer indices after the outputs)
  std::vector<launch> launches;
  [[nodiscard]] bool empty() const noexcept { return cubin.empty(); }
};

struct tensor {
  std::uint64_t count = 0;
  std::int32_t dtype = 0;         ///< 0: f32, 1: f16
  std::int32_t distribution = 0;  ///< inputs: 0 normal, 1 uniform, 2 positive
};

/// How one input's fresh values are transformed in an adversarial trial (see problem.hpp's
/// input_case): kind 0 leaves them as drawn.
struct input_case {
  std::int32_t kind = 0;
  double value = 0;
};

struct run_request {
  std::uint64_t shape_key = 0;  ///< buffers are reused while it stays the same
  std::vector<tensor> inputs, outputs;
  std::vector<std::int64_t> dims;
  plan cand, ref, incumbent;  ///< incumbent: time only, may be empty
  std::uint64_t seed = 0;
  std::int32_t trials = 1;
  double rtol = 0, atol = 0;
  std::int32_t warmup = 1, samples = 5;
  std::uint64_t flush_bytes = 0;
  std::int32_t verify_after_timing = 1;  ///< 0: baseline (the reference timed alone)
  /// check: after the `trials` plain trials, one trial per entry, each entry one case per input.
  std::vector<std::vector<input_case>> cases;
  /// time: the timed calls (0-based, warm-up included) whose outputs are checked against the
  /// reference on that call's inputs, besides the last one (when verify_after_timing).
  std::vector<std::int32_t> checked_calls;
};

/// The reply to request::device: device 0 as the driver reports it (cuDeviceGetAttribute), asked
/// without creating a context. present == 0 when there is no usable driver or device; `message` says
/// why and the numbers are 0. The parent checks plans against these (launch_plan.hpp's
/// limits_for_device) and the worker checks each launch against them before it runs.
struct device_info {
  std::int32_t present = 0;
  std::string message;  ///< why not present
  std::string name;     ///< e.g. "NVIDIA H200"
  std::int32_t cc_major = 0, cc_minor = 0;
  std::int64_t max_threads_per_block = 0;     ///< MAX_THREADS_PER_BLOCK
  std::int64_t max_block[3] = {0, 0, 0};      ///< MAX_BLOCK_DIM_X/Y/Z
  std::int64_t max_grid[3] = {0, 0, 0};       ///< MAX_GRID_DIM_X/Y/Z
  std::int64_t max_smem_per_block = 0;        ///< MAX_SHARED_MEMORY_PER_BLOCK: without the opt-in
  std::int64_t max_smem_per_block_optin = 0;  ///< MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: static + dynamic
  std::int64_t max_registers_per_block = 0;   ///< MAX_REGISTERS_PER_BLOCK
  std::int32_t cluster_launch = 0;            ///< CLUSTER_LAUNCH: 1 when clusters can be launched
};
/// The first field of an encoded device_info: a reply of another layout (an older worker answers an
/// unknown request with an encoded `reply`) is then a wire_error, not numbers read from the wrong place.
inline constexpr std::uint64_t device_info_tag = 0x6b62646576310001ULL;  // "kbdev1", layout 1

struct reply {
  status st = status::ok;
  std::string message;
  std::int32_t index = -1;    ///< the output (or input) a status is about
  double device_seconds = 0;  ///< wall time the request kept the device busy
  std::vector<double> samples_a, samples_b;
};

namespace detail {
inline void put_plan(wire_writer& w, plan const& p) {
  w.str(p.cubin).vec(p.scratch).put(static_cast<std::uint64_t>(p.launches.size()));
  for (auto const& l : p.launches) {
    w.str(l.kernel);
    for (int i = 0; i < 3; ++i) w.put(l.grid[i]).put(l.block[i]).put(l.cluster[i]);
    w.put(l.smem).vec(l.args).put(l.registers).put(l.local_bytes).put(l.static_smem);
  }
}
inline plan get_plan(wire_reader& r) {
  plan p;
  p.cubin = r.str();
  p.scratch = r.vec<std::uint64_t>();
  const auto n = r.get<std::uint64_t>();
  if (n > max_launches) throw wire_error("cuda request: too many launches");
  for (std::uint64_t k = 0; k < n; ++k) {
    launch l;
    l.kernel = r.str();
    for (int i = 0; i < 3; ++i) {
      l.grid[i] = r.get<std::int64_t>();
      l.block[i] = r.get<std::int64_t>();
      l.cluster[i] = r.get<std::int64_t>();
    }
    l.smem = r.get<std::int64_t>();
    l.args = r.vec<std::int64_t>();
    l.registers = r.get<std::int32_t>();
    l.local_bytes = r.get<std::int32_t>();
    l.static_smem = r.get<std::int32_t>();
    p.launches.push_back(std::move(l));
  }
  return p;
}
inline void put_tensors(wire_writer& w, std::vector<tensor> const& v) {
  w.put(static_cast<std::uint64_t>(v.size()));
  for (auto const& t : v) w.put(t.count).put(t.dtype).put(t.distribution);
}
inline std::vector<tensor> get_tensors(wire_reader& r) {
  const auto n = r.get<std::uint64_t>();
  if (n > 256) throw wire_error("cuda request: too many tensors");
  std::vector<tensor> v(n);
  for (auto& t : v) {
    t.count = r.get<std::uint64_t>();
    t.dtype = r.get<std::int32_t>();
    t.distribution = r.get<std::int32_t>();
  }
  return v;
}
}  // namespace detail

inline std::string encode(run_request const& q) {
  wire_writer w;
  w.put(q.shape_key);
  detail::put_tensors(w, q.inputs);
  detail::put_tensors(w, q.outputs);
  w.vec(q.dims);
  detail::put_plan(w, q.cand);
  detail::put_plan(w, q.ref);
  detail::put_plan(w, q.incumbent);
  w.put(q.seed)
      .put(q.trials)
      .put(q.rtol)
      .put(q.atol)
      .put(q.warmup)
      .put(q.samples)
      .put(q.flush_bytes)
      .put(q.verify_after_timing);
  w.put(static_cast<std::uint64_t>(q.cases.size()));
  for (auto const& c : q.cases) {
    w.put(static_cast<std::uint64_t>(c.size()));
    for (auto const& k : c) w.put(k.kind).put(k.value);
  }
  w.vec(q.checked_calls);
  return w.take();
}
inline run_request decode_run(std::string_view body) {
  wire_reader r(body);
  run_request q;
  q.shape_key = r.get<std::uint64_t>();
  q.inputs = detail::get_tensors(r);
  q.outputs = detail::get_tensors(r);
  q.dims = r.vec<std::int64_t>();
  q.cand = detail::get_plan(r);
  q.ref = detail::get_plan(r);
  q.incumbent = detail::get_plan(r);
  q.seed = r.get<std::uint64_t>();
  q.trials = r.get<std::int32_t>();
  q.rtol = r.get<double>();
  q.atol = r.get<double>();
  q.warmup = r.get<std::int32_t>();
  q.samples = r.get<std::int32_t>();
  q.flush_bytes = r.get<std::uint64_t>();
  q.verify_after_timing = r.get<std::int32_t>();
  const auto ncases = r.get<std::uint64_t>();
  if (ncases > max_cases) throw wire_error("cuda request: too many input cases");
  for (std::uint64_t i = 0; i < ncases; ++i) {
    const auto n = r.get<std::uint64_t>();
    if (n > q.inputs.size()) throw wire_error("cuda request: an input case for more inputs than there are");
    std::vector<input_case> c(n);
    for (auto& k : c) {
      k.kind = r.get<std::int32_t>();
      k.value = r.get<double>();
    }
    q.cases.push_back(std::move(c));
  }
  q.checked_calls = r.vec<std::int32_t>();
  return q;
}
inline std::string encode(reply const& p) {
  return wire_writer{}
      .put(p.st)
      .str(p.message)
      .put(p.index)
      .put(p.device_seconds)
      .vec(p.samples_a)
      .vec(p.samples_b)
      .take();
}
inline reply decode_reply(std::string_view body) {
  wire_reader r(body);
  reply p;
  p.st = r.get<status>();
  p.message = r.str();
  p.index = r.get<std::int32_t>();
  p.device_seconds = r.get<double>();
  p.samples_a = r.vec<double>();
  p.samples_b = r.vec<double>();
  return p;
}

inline std::string encode(device_info const& d) {
  wire_writer w;
  w.put(device_info_tag)
      .put(d.present)
      .str(d.message)
      .str(d.name)
      .put(d.cc_major)
      .put(d.cc_minor)
      .put(d.max_threads_per_block);
  for (int i = 0; i < 3; ++i) w.put(d.max_block[i]);
  for (int i = 0; i < 3; ++i) w.put(d.max_grid[i]);
  w.put(d.max_smem_per_block).put(d.max_smem_per_block_optin).put(d.max_registers_per_block).put(d.cluster_launch);
  return w.take();
}
inline device_info decode_device(std::string_view body) {
  wire_reader r(body);
  if (r.get<std::uint64_t>() != device_info_tag)
    throw wire_error(
        "cuda device reply: not a device_info of this layout (a kernelbrain-cuda-worker from another version?)");
  device_info d;
  d.present = r.get<std::int32_t>();
  d.message = r.str();
  d.name = r.str();
  d.cc_major = r.get<std::int32_t>();
  d.cc_minor = r.get<std::int32_t>();
  d.max_threads_per_block = r.get<std::int64_t>();
  for (int i = 0; i < 3; ++i) d.max_block[i] = r.get<std::int64_t>();
  for (int i = 0; i < 3; ++i) d.max_grid[i] = r.get<std::int64_t>();
  d.max_smem_per_block = r.get<std::int64_t>();
  d.max_smem_per_block_optin = r.get<std::int64_t>();
  d.max_registers_per_block = r.get<std::int64_t>();
  d.cluster_launch = r.get<std::int32_t>();
  if (!r.done()) throw wire_error("cuda device reply: bytes after the end");
  return d;
}

}  // namespace kernelbrain::detail::cuda_protocol
