// The serving worker of kernelbrain-cuda-worker: one CUDA context, the trusted kernels, and the
// buffers and modules of the current shape; answers check and time requests (handle) and runs one
// plan for Nsight Compute (profile). Inputs are generated, outputs poisoned and compared by trusted
// kernels on the device; only counters come back to the host.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>
#include "buffers.hpp"
#include "device.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/isolation/worker_protocol.hpp"
#include "launch.hpp"

namespace kernelbrain::cuda_worker {

namespace cp = kernelbrain::detail::cuda_protocol;
using kernelbrain::detail::worker_context;

class worker {
 public:
  /// Device 0's context, the trusted kernels compiled and loaded; any failure ends the process.
  worker();

  std::string handle(std::uint32_t type, std::string_view body, worker_context& ctx);

  /// --profile-once: the candidate plan of `q` at its shape on fresh inputs, q.warmup times untimed,
  /// then q.samples times between cuProfilerStart and cuProfilerStop (a profiler started with
  /// --profile-from-start off sees those launches only: not the inputs' generation or the poison).
  void profile(cp::run_request const& q);

 private:
  /// Synchronises; a sticky error ends the process, another error fails the request.
  void sync(std::string const& what);

  void load_trusted();

  void trusted_launch(CUfunction f, void** args, std::string const& what);

  /// Every candidate starts from the same state: modules (and the scratch and __device__ memory that
  /// come with them) of plans this request does not use are unloaded before it runs.
  void keep_only(cp::run_request const& q);

  void prepare(cp::run_request const& q);
  /// Inputs start `offset` x 256 bytes into their buffers: a timed call's inputs are a window of one
  /// random field at a random offset, different values at different addresses on every call, without
  /// writing them anew (the window's alignment stays 256 bytes).
  static constexpr std::uint64_t view_offsets = 256, view_step = 256, view_slack = view_offsets * view_step;
  void set_views(std::uint64_t offset);
  void ensure_outb(cp::run_request const& q);

  loaded_module& module(std::string const& path);

  /// Fresh inputs from `seed`; `c` (when given) transforms one case per input.
  void fill(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c = nullptr);
  void poison(std::vector<buffer> const& outs, cp::run_request const& q, bool second);
  std::vector<std::uint64_t> checksums(cp::run_request const& q);

  /// Runs a plan with `outs` as its outputs; `ms` (when given) receives the time between events
  /// recorded around the whole plan.
  void run_plan(cp::plan const& p, cp::run_request const& q, std::vector<buffer> const& outs, std::string const& who,
                float* ms = nullptr);

  /// Compares `outs` (and `firsts`, the first run's copy) with the reference outputs.
  void compare(cp::run_request const& q, std::vector<buffer> const& outs, std::vector<buffer> const& firsts,
               bool two_runs, std::string const& when);

  void verify_inputs(cp::run_request const& q, std::vector<std::uint64_t> const& before, std::string const& when);

  /// One correctness trial: the candidate twice (different poisons) on the same fresh inputs, inputs
  /// unchanged, then the reference (after the candidate: the candidate cannot have prepared its
  /// buffers) and every element compared.
  void trial(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c,
             std::string const& when);

  static std::string case_text(std::vector<cp::input_case> const& c);

  void check(cp::run_request const& q, worker_context& ctx);

  /// Timed calls. Every call sees other input values at other addresses: one fresh random field is
  /// written per request, and each call reads a window of it at a random offset (a kernel cannot
  /// profit from recognising a repeat, and nothing is rewritten between calls). Outputs are poisoned
  /// and the L2 flushed before each call; the calls in q.checked_calls and the last one are checked
  /// against the reference on their own window, and the inputs must be unchanged at the end.
  void time(cp::run_request const& q, worker_context& ctx, cp::reply& rep);

  device_context dc_;
  cp::device_info dev_;  ///< the limits each launch is checked against
  CUevent e0_ = nullptr, e1_ = nullptr;
  CUmodule trusted_ = nullptr;
  CUfunction k_fill_ = nullptr, k_poison_ = nullptr, k_checksum_ = nullptr, k_maxabs_ = nullptr, k_compare_ = nullptr;
  CUdeviceptr stats_ = 0;
  int grid_ = 1024;
  std::uint64_t shape_key_ = 0;
  bool have_shape_ = false;
  std::vector<buffer> in_, out_, first_, ref_, outb_;
  std::vector<CUdeviceptr> view_;  ///< where each input starts for the current run (inside in_)
  std::map<std::string, loaded_module> modules_;
  buffer flush_;
};

}  // namespace kernelbrain::cuda_worker
