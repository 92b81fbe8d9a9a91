// A tiny program using the exported kb_softmax API: it asks which sizes are tuned, then runs the kernels once at
// the first tuned shape (16x16384) on random inputs and prints a checksum of the output. Without a CUDA
// device it stops after the part that needs none.
//   nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 example.cpp softmax.cu -o example && ./example
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <vector>

#include "softmax.h"

namespace {

std::size_t elements(std::vector<std::int64_t> const& sizes) {
  std::size_t n = 1;
  for (auto s : sizes) n *= static_cast<std::size_t>(s);
  return n;
}

std::size_t element_bytes(kb_softmax::dtype t) { return t == kb_softmax::dtype::f16 ? 2 : 4; }

/// f32 as the f16 bit pattern (round to nearest even; normal range only, enough for random inputs).
std::uint16_t to_f16(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exponent = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (exponent <= 0) return static_cast<std::uint16_t>(sign);
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(h);
}

float from_f16(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t x = sign;
  if (exponent == 31) x |= 0x7f800000u | (mantissa << 13);
  else if (exponent != 0) x |= (static_cast<std::uint32_t>(exponent - 15 + 127) << 23) | (mantissa << 13);
  float f = 0;
  std::memcpy(&f, &x, 4);
  return f;
}

bool ok(cudaError_t e, char const* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main() {
  namespace api = kb_softmax;
  std::printf("kb_softmax: kernels for %s; tuned shapes:", api::required_arch);
  for (auto const& s : api::tuned_shapes) std::printf(" %s (%.2fx)", s.name, s.speedup);
  std::printf("\n");

  // Host-side checks: no GPU needed.
  api::tensor x{nullptr, api::dtype::f32, {16, 16384}, {}};
  api::tensor y{nullptr, api::dtype::f32, {16, 16384}, {}};

  std::printf("is_tuned(16x16384): %s, workspace %zu bytes\n", api::is_tuned(x) ? "yes" : "no",
              api::workspace_bytes(x));
  {
    auto wrong = x;
    wrong.sizes.back() += 1;
    std::printf("one size off: is_tuned %s\n", api::is_tuned(wrong) ? "yes" : "no");
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to run\n");
    return 0;
  }
  std::vector<void*> allocations;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto* t : {&x, &y}) {
    const std::size_t n = elements(t->sizes);
    if (!ok(cudaMalloc(&t->data, n * element_bytes(t->type)), "cudaMalloc")) return 1;
    allocations.push_back(t->data);
  }
  for (auto* t : {&x}) {
    const std::size_t n = elements(t->sizes);
    std::vector<unsigned char> host(n * element_bytes(t->type));
    for (std::size_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      if (t->type == api::dtype::f16) {
        const std::uint16_t h = to_f16(v);
        std::memcpy(&host[2 * i], &h, 2);
      } else {
        std::memcpy(&host[4 * i], &v, 4);
      }
    }
    if (!ok(cudaMemcpy(t->data, host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy")) return 1;
  }
  void* workspace = nullptr;
  const std::size_t workspace_size = api::workspace_bytes(x);
  if (workspace_size > 0 && !ok(cudaMalloc(&workspace, workspace_size), "cudaMalloc")) return 1;
  try {
    api::forward(x, y, workspace, workspace_size, nullptr);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  if (!ok(cudaDeviceSynchronize(), "the kernels")) return 1;
  auto const& out = y;
  const std::size_t n = elements(out.sizes);
  std::vector<unsigned char> host(n * element_bytes(out.type));
  if (!ok(cudaMemcpy(host.data(), out.data, host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    float v = 0;
    if (out.type == api::dtype::f16) {
      std::uint16_t h = 0;
      std::memcpy(&h, &host[2 * i], 2);
      v = from_f16(h);
    } else {
      std::memcpy(&v, &host[4 * i], 4);
    }
    sum += v;
  }
  std::printf("ran 16x16384: %zu outputs, sum %.6g\n", n, sum);
  for (void* p : allocations) cudaFree(p);
  if (workspace) cudaFree(workspace);
  return 0;
}
