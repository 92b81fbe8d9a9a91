// The built-in backends' traits: synthetic, host, cuda and replay. Pure data and the prompt text of
// each backend's answer format, so that the registry, the prompt builder and the problem loader need
// none of the evaluators. Their factories: backends/builtin.hpp.
#pragma once
#include <string>
#include <vector>
#include "kernelbrain/backends/traits.hpp"

namespace kernelbrain {

namespace detail {
inline std::string arch_of(problem const& p) {
  auto it = p.options.find("arch");
  return it == p.options.end() ? std::string("sm_90") : it->second;
}
}  // namespace detail

/// The synthetic backend: a cost landscape with a known optimum (backends/synthetic/evaluator.hpp).
[[nodiscard]] inline backend_traits synthetic_backend_traits() {
  backend_traits t;
  t.name = "synthetic";
  t.description = "a simulated cost landscape with a known optimum: strategies compared at no device cost";
  t.problem_files = false;
  t.fingerprint_prefix = "synthetic/";
  t.float64_note = "synthetic problems have no reference code";
  return t;
}

/// The host backend: C++ candidates compiled and run on this CPU, each in a sandboxed process
/// (backends/host/evaluator.hpp).
/// How a host candidate is built and what the CPU it runs on offers, for the answer format: without it
/// models guess, and spend their answer on run-time dispatch between instruction sets the build already
/// chose (the first host campaign, bench/runs/2026-12-07-issue29-host-campaign/).
[[nodiscard]] inline std::string host_compile_note() {
  std::string s =
      "Build: the evaluator's default flags are -std=c++20 -O3 -march=native (plus -fPIC -shared), on the "
      "CPU that runs it";
#if defined(__x86_64__) || defined(__i386__)
  std::string isa;
  auto has = [&isa](bool yes, char const* name) {
    if (yes) isa += (isa.empty() ? "" : ", ") + std::string(name);
  };
  __builtin_cpu_init();
  has(__builtin_cpu_supports("sse4.2"), "SSE4.2");
  has(__builtin_cpu_supports("avx"), "AVX");
  has(__builtin_cpu_supports("avx2"), "AVX2");
  has(__builtin_cpu_supports("fma"), "FMA");
  has(__builtin_cpu_supports("avx512f"), "AVX-512F");
  has(__builtin_cpu_supports("avx512bw"), "AVX-512BW");
  has(__builtin_cpu_supports("avx512vl"), "AVX-512VL");
  s += ", which has " + (isa.empty() ? std::string("none of SSE4.2, AVX, AVX2, FMA, AVX-512") : isa) +
       (__builtin_cpu_supports("avx512f") ? "" : " (no AVX-512)") +
       ": intrinsics of those sets compile as they are, with no target attributes or run-time dispatch";
#endif
  return s + ".\n";
}

[[nodiscard]] inline backend_traits host_backend_traits() {
  backend_traits t;
  t.name = "host";
  t.description = "C++ kernels compiled with the system compiler and run on this CPU, each in a sandboxed process";
  t.language = "C++";
  t.fence = "cpp";
  t.min_dim = 1;
  t.fingerprint_prefix = "host/";
  t.device_kind = "cpu";
  t.problems_env = "KERNELBRAIN_PROBLEMS";
  t.float64_note =
      "host problems carry no float64 evaluation (the shipped ones are compared with float64 in "
      "tests/test_problems.cpp)";
  t.answer_format = [](problem const&) -> std::string {
    return "## Answer format\n\n"
           "Answer with exactly one ```cpp fenced block holding one complete C++17 source file that defines\n"
           "`extern \"C\" void kb_kernel(const kb_args* args)` (from \"kernelbrain/evaluate/host_abi.h\": "
           "`struct kb_args { const float* const* inputs; float* const* outputs; const long long* dims; int "
           "n_inputs, n_outputs, n_dims; }`; inputs and outputs are float32 buffers in the problem's order, dims "
           "in its dim order). Prose outside the block is ignored.\n\n"
           "Rules: include only <cmath>, <cstddef>, <cstdint>, <cstring>, <algorithm>, <array>, <numeric>, "
           "<limits>, <immintrin.h>, <thread>, <vector>, <atomic> and \"kernelbrain/evaluate/host_abi.h\"; no "
           "I/O, no system calls, no global state kept between calls; write every output element and never an "
           "input; join every thread you start before returning (at most 4 threads); compile cleanly with -O3 "
           "and without -ffast-math assumptions about the inputs.\n\n" +
           host_compile_note();
  };
  return t;
}

/// The CUDA backend: NVRTC-compiled kernels launched by a launch plan on a GPU (backends/cuda/evaluator.hpp).
[[nodiscard]] inline backend_traits cuda_backend_traits() {
  backend_traits t;
  t.name = "cuda";
  t.description = "CUDA kernels compiled with NVRTC and launched by a launch plan on NVIDIA GPUs, in a worker process";
  t.language = "CUDA";
  t.fence = "cuda";
  t.launch_plan = true;
  t.min_dim = 0;
  t.fingerprint_prefix = "cuda/";
  t.device_kind = "cuda";
  t.problems_env = "KERNELBRAIN_CUDA_PROBLEMS";
  t.exports = true;
  t.profiles = true;
  t.float64_note =
      "not compared here: bench/side_by_side.py --references compares every CUDA reference with float64 (PyTorch)";
  t.answer_format = [](problem const& p) -> std::string {
    using detail::arch_of;
    return "## Answer format\n\n"
           "Answer with exactly one ```cuda fenced block holding the whole kernel source, and exactly one "
           "```json fenced block holding its launch plan. Prose outside the blocks is ignored.\n\n"
           "Source rules: compiled by NVRTC for " +
           arch_of(p) +
           " with `-default-device --std=c++17` and nothing else; no #include at all (not even cuda_fp16.h "
           "or cooperative_groups.h: use PTX for clusters, fp16 conversions and async copies). Built in without "
           "an include: the vector types (float2, float4, int4, ... and make_float4 ...), CUDA's device math "
           "functions (expf, __expf, exp2f, logf, tanhf, sqrtf, rsqrtf, fmaf, fmaxf, fminf, fabsf, __fdividef, "
           "...), min and max, __ldg, __shfl_xor_sync, __shfl_down_sync, __ballot_sync, __syncwarp, __popc, "
           "__int_as_float, __float_as_int, atomicAdd, __launch_bounds__, __align__(n) and __restrict__; not "
           "the macros of <cmath> and <cfloat> (INFINITY, FLT_MAX: write __int_as_float(0x7f800000) and "
           "3.402823466e38f). Every kernel the plan launches is `extern \"C\" __global__`; every kernel parameter is 8 "
           "bytes: device pointers in "
           "the order the plan's args give, dims as `long long`. At most 255 registers per thread and no "
           "register spills are a good target; a block's shared memory (static + dynamic) at most 232448 "
           "bytes.\n\n"
           "Launch plan: {\"scratch\": [{\"name\", \"size\", \"dtype\"}] (optional), \"launches\": [{\"kernel\", "
           "\"grid\": [3 exprs], \"block\": [3 exprs], \"smem\": expr (default \"0\"), \"cluster\": [3 exprs] "
           "(optional, at most 8 blocks, dividing the grid; [1, 1, 1] or none is an ordinary launch), \"args\": "
           "[names]}]}. Every size (grid, block, smem, cluster, scratch) is a JSON integer or a string: a 64-bit "
           "integer expression over the shape's dims with + - * / % (/ and % truncate as in C), comparisons "
           "(< <= > >= == != give 0 or 1), parentheses and the two-argument functions ceil_div(a, b), min(a, b) "
           "and max(a, b), nested as deep as needed. args name inputs, "
           "outputs, scratch buffers (element counts in size; dtype f32 or f16; uninitialised: write before "
           "reading) or dims. Launches run in order on one stream. Dynamic shared memory above 48 KB is "
           "allowed (the runner opts in).\n";
  };
  return t;
}

/// The replay backend: answers from a recording of a host or CUDA sweep (backends/replay/evaluator.hpp).
[[nodiscard]] inline backend_traits replay_backend_traits() {
  backend_traits t;
  t.name = "replay";
  t.description = "answers from a recording of a host or CUDA sweep (kernelbrain record): ablations at no device cost";
  t.problem_files = false;
  t.fingerprint_prefix = "replay/";
  t.wraps_fingerprint = true;
  t.float64_note = "replayed problems are checked where they were recorded";
  return t;
}

[[nodiscard]] inline std::vector<backend_traits> builtin_backend_traits() {
  return {synthetic_backend_traits(), host_backend_traits(), cuda_backend_traits(), replay_backend_traits()};
}

}  // namespace kernelbrain
