// The host backend's requests and replies (on top of worker_protocol.hpp): load a compiled
// candidate, run it once, or time it. Shared by the evaluator (parent) and kernelbrain-host-worker.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/isolation/worker_protocol.hpp"

namespace kernelbrain::detail::host_protocol {

inline constexpr char const* role = "host";

/// Canary bytes around every buffer in the arena (arena.hpp); the worker copies them to and
/// from a candidate's executor along with the buffer, so that a write just past an end is seen.
inline constexpr std::uint64_t guard_bytes = 64;

enum class request : std::uint32_t {
  load = wire::first_backend_type,  ///< dlopen a module and find kb_kernel
  run,                              ///< one call on buffers the parent prepared
  time,                             ///< warm-up and timed calls, optionally interleaved with a second module
};

enum class status : std::uint32_t {
  ok,
  load_failed,       ///< dlopen refused the module
  missing_entry,     ///< no extern "C" kb_kernel
  bad_alloc,         ///< std::bad_alloc escaped kb_kernel (the worker's address-space limit)
  threw,             ///< another exception escaped kb_kernel
  stray_threads,     ///< threads still running after kb_kernel returned
  unwritten,         ///< a timed call left poison in an output (`index` names which)
  bad_request,       ///< the request made no sense (a parent bug)
  forbidden_call,    ///< the candidate made a system call the sandbox does not allow (`message` names it)
  crashed,           ///< the candidate's executor died (a signal, or an exit in the middle of a call)
  timed_out,         ///< a call ran past run_timeout; the executor was killed
  timing_mismatch,   ///< the kernel's CPU accounting contradicts the end of a call: forged timing
  sandbox_failed,    ///< the executor could not be started or confined (not the candidate's fault)
  sanitizer_report,  ///< a sanitized build's run ended in a sanitizer report (`message` quotes it)
};

/// A float32 buffer in the arena: byte offset and element count.
struct tensor_ref {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

struct run_request {
  std::string module;                  ///< artifact path
  std::uint64_t arena_bytes = 0;       ///< the arena is at least this large
  std::uint64_t memory_allowance = 0;  ///< address space the candidate may add (0: no limit)
  double call_timeout = 10;            ///< seconds one call (or the module's load) may take
  std::vector<tensor_ref> inputs, outputs;
  std::vector<std::int64_t> dims;
  /// A sanitized build: the sanitizer runtimes its executor preloads (colon-separated paths, as
  /// LD_PRELOAD takes them); empty for an ordinary build.
  std::string sanitizer_runtimes;
};

/// Warm-up and timed calls. No two calls read the same inputs: the parent stages input *regions*
/// (a random field per input, larger than the input, and near-copies of windows of it), and each call
/// reads each input from its own place in them (`reads`), so nothing is rewritten between calls.
struct time_request {
  run_request a;                      ///< the candidate (or the reference); a.inputs: element counts only
  std::string module_b;               ///< interleaved second module (the incumbent); empty: none
  std::vector<tensor_ref> outputs_b;  ///< its outputs
  std::vector<tensor_ref> regions;    ///< where the calls' inputs lie; copied back, unchanged, at the end
  /// Arena offset of each input of each call: index (call * sides + side) * inputs + input, side 0 for
  /// `a`, 1 for `module_b`. Each read must lie inside one region.
  std::vector<std::uint64_t> reads;
  std::int32_t checked_call = -1;           ///< a's outputs after this call are copied to checked_outputs
  std::vector<tensor_ref> checked_outputs;  ///< as many as a.outputs
  std::int32_t warmup = 1;
  std::int32_t samples = 5;
  std::uint64_t flush_bytes = 0;  ///< written before every call, warm-up included
  std::uint32_t poison_bits = 0;  ///< written to the outputs before every call

  [[nodiscard]] int sides() const noexcept { return module_b.empty() ? 1 : 2; }
  [[nodiscard]] int calls() const noexcept { return warmup + samples; }
};

struct reply {
  status st = status::ok;
  std::string message;
  std::int32_t index = -1;    ///< the output a status is about, where it is about one
  double kernel_seconds = 0;  ///< time inside kb_kernel, warm-up and module b included
  std::vector<double> samples_a, samples_b;
  /// Calls whose time was raised to what the CPU accounting says they took (host_executor.hpp).
  std::int32_t charged_calls = 0;
};

namespace detail {
inline void put_refs(wire_writer& w, std::vector<tensor_ref> const& v) {
  w.put(static_cast<std::uint64_t>(v.size()));
  for (auto const& t : v) w.put(t.offset).put(t.count);
}
inline std::vector<tensor_ref> get_refs(wire_reader& r) {
  const auto n = r.get<std::uint64_t>();
  if (n > 4096) throw wire_error("host request: too many tensors");
  std::vector<tensor_ref> v(n);
  for (auto& t : v) {
    t.offset = r.get<std::uint64_t>();
    t.count = r.get<std::uint64_t>();
  }
  return v;
}
inline void put_run(wire_writer& w, run_request const& q) {
  w.str(q.module).put(q.arena_bytes).put(q.memory_allowance).put(q.call_timeout);
  put_refs(w, q.inputs);
  put_refs(w, q.outputs);
  w.vec(q.dims).str(q.sanitizer_runtimes);
}
inline run_request get_run(wire_reader& r) {
  run_request q;
  q.module = r.str();
  q.arena_bytes = r.get<std::uint64_t>();
  q.memory_allowance = r.get<std::uint64_t>();
  q.call_timeout = r.get<double>();
  if (!(q.call_timeout > 0) || q.call_timeout > 86400) throw wire_error("host request: call_timeout out of range");
  q.inputs = get_refs(r);
  q.outputs = get_refs(r);
  q.dims = r.vec<std::int64_t>();
  q.sanitizer_runtimes = r.str();
  return q;
}
}  // namespace detail

inline std::string encode(run_request const& q) {
  wire_writer w;
  detail::put_run(w, q);
  return w.take();
}
inline std::string encode(time_request const& q) {
  wire_writer w;
  detail::put_run(w, q.a);
  w.str(q.module_b);
  detail::put_refs(w, q.outputs_b);
  detail::put_refs(w, q.regions);
  w.vec(q.reads).put(q.checked_call);
  detail::put_refs(w, q.checked_outputs);
  w.put(q.warmup).put(q.samples).put(q.flush_bytes).put(q.poison_bits);
  return w.take();
}
inline std::string encode(reply const& p) {
  return wire_writer{}
      .put(p.st)
      .str(p.message)
      .put(p.index)
      .put(p.kernel_seconds)
      .vec(p.samples_a)
      .vec(p.samples_b)
      .put(p.charged_calls)
      .take();
}
inline run_request decode_run(std::string_view body) {
  wire_reader r(body);
  return detail::get_run(r);
}
inline time_request decode_time(std::string_view body) {
  wire_reader r(body);
  time_request q;
  q.a = detail::get_run(r);
  q.module_b = r.str();
  q.outputs_b = detail::get_refs(r);
  q.regions = detail::get_refs(r);
  q.reads = r.vec<std::uint64_t>();
  q.checked_call = r.get<std::int32_t>();
  q.checked_outputs = detail::get_refs(r);
  q.warmup = r.get<std::int32_t>();
  q.samples = r.get<std::int32_t>();
  q.flush_bytes = r.get<std::uint64_t>();
  q.poison_bits = r.get<std::uint32_t>();
  return q;
}
inline reply decode_reply(std::string_view body) {
  wire_reader r(body);
  reply p;
  p.st = r.get<status>();
  p.message = r.str();
  p.index = r.get<std::int32_t>();
  p.kernel_seconds = r.get<double>();
  p.samples_a = r.vec<double>();
  p.samples_b = r.vec<double>();
  p.charged_calls = r.get<std::int32_t>();
  return p;
}

}  // namespace kernelbrain::detail::host_protocol
