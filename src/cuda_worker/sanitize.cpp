// --sanitize: one run of a candidate plan, for compute-sanitizer (which starts this mode): inputs
// from the host, no trusted kernels.
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include "buffers.hpp"
#include "device.hpp"
#include "driver.hpp"
#include "errors.hpp"
#include "launch.hpp"
#include "modes.hpp"
#include "one_shot.hpp"

namespace kernelbrain::cuda_worker {

using kernelbrain::detail::wire_error;

namespace {

std::uint16_t float_to_half_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1u) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) ++h;  // round half up: close enough for test inputs
  return static_cast<std::uint16_t>(h);
}

}  // namespace

/// Runs the request's candidate plan once at its shape on host-generated inputs, poisoned outputs
/// and scratch, with buffers of exactly their size (so that memcheck's padding catches overruns).
/// Prints "kernelbrain-sanitize: ok" on success.
int sanitize_mode(char const* request_path) {
  die_with_parent();
  cp::run_request q;
  try {
    q = cp::decode_run(read_text(request_path));
  } catch (wire_error const& e) {
    std::printf("kernelbrain-sanitize: bad request file %s: %s\n", request_path, e.what());
    return 2;
  }
  try {
    device_context dc;
    std::vector<buffer> bufs;
    std::uint64_t state = q.seed | 1;
    auto next = [&state] {  // xorshift64*
      state ^= state >> 12;
      state ^= state << 25;
      state ^= state >> 27;
      return (state * 0x2545F4914F6CDD1DULL) >> 11;
    };
    auto u01 = [&] { return (static_cast<double>(next()) + 0.5) / 9007199254740992.0; };
    for (auto const& t : q.inputs) {
      auto b = alloc(bytes_of(t), "an input", 4);
      std::vector<std::uint16_t> h16;
      std::vector<float> h32;
      for (std::uint64_t i = 0; i < t.count; ++i) {
        double v = t.distribution == 1   ? 2 * u01() - 1
                   : t.distribution == 2 ? 0.5 + 1.5 * u01()
                                         : std::sqrt(-2 * std::log(u01())) * std::cos(6.283185307179586 * u01());
        if (t.dtype)
          h16.push_back(float_to_half_bits(static_cast<float>(v)));
        else
          h32.push_back(static_cast<float>(v));
      }
      void const* src = t.dtype ? static_cast<void const*>(h16.data()) : static_cast<void const*>(h32.data());
      cu.cuMemcpyHtoDAsync(b.p, src, bytes_of(t), dc.stream);
      if (cu.cuStreamSynchronize(dc.stream) != CUDA_SUCCESS)
        throw request_failure{cp::status::bad_request, "copying inputs"};
      bufs.push_back(b);
    }
    for (auto const& t : q.outputs) {
      auto b = alloc(bytes_of(t), "an output", 4);
      if (t.dtype)
        cu.cuMemsetD16Async(b.p, static_cast<unsigned short>(f16_p1), t.count, dc.stream);
      else
        cu.cuMemsetD32Async(b.p, f32_p1, t.count, dc.stream);
      bufs.push_back(b);
    }
    for (auto s : q.cand.scratch) {
      auto b = alloc(s, "scratch", 4);
      cu.cuMemsetD32Async(b.p, f32_p1, std::max<std::uint64_t>(s, 4) / 4, dc.stream);
      bufs.push_back(b);
    }
    std::vector<CUdeviceptr> ptrs;
    ptrs.reserve(bufs.size());
    for (auto const& b : bufs) ptrs.push_back(b.p);
    CUmodule m = load_module(q.cand.cubin);
    const auto fns = functions_of(m, q.cand, "the candidate", query_device());
    launch_all(q.cand, fns, ptrs, q.dims, dc.stream, "the candidate");
    const CUresult r = cu.cuStreamSynchronize(dc.stream);
    if (r != CUDA_SUCCESS) {
      std::printf("kernelbrain-sanitize: the candidate failed: %s\n", err_text(r).c_str());
      return 1;
    }
  } catch (request_failure const& f) {
    std::printf("kernelbrain-sanitize: the candidate failed: %s\n", f.message.c_str());
    return 1;
  }
  std::printf("kernelbrain-sanitize: ok\n");
  return 0;
}

}  // namespace kernelbrain::cuda_worker
