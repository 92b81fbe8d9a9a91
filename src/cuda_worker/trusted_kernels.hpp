// The trusted device code of kernelbrain-cuda-worker (CUDA C++ source, compiled with NVRTC when the
// serving worker starts, after backends/common/input_cases.hpp's input_case_device_source): input
// generation, poisoning, input checksums and the comparison with the reference, on the device.
#pragma once

namespace kernelbrain::cuda_worker {

inline constexpr char const* trusted_source = R"(
typedef unsigned long long u64;
__device__ __forceinline__ u64 kb_mix(u64 z) {
  z += 0x9E3779B97F4A7C15ull; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31);
}
__device__ __forceinline__ float kb_u01(u64 h) { return ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f); }
__device__ __forceinline__ unsigned short kb_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float kb_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned kb_bits(const void* p, long long i, int dt) {
  return dt ? (unsigned)((const unsigned short*)p)[i] : ((const unsigned*)p)[i];
}
__device__ __forceinline__ float kb_val(unsigned b, int dt) { return dt ? kb_h2f((unsigned short)b) : __uint_as_float(b); }
// Fresh values from `seed` (dist: 0 normal, 1 uniform(-1,1), 2 uniform[0.5,2)), then an adversarial
// transform (kind: 0 none, 1 scaled, 2 offset, 3 constant, 4 ties, 5 spikes, 6 signed zeros):
// kb_input_case, put before this text from backends/common/input_cases.hpp (the host backend compiles the same).
extern "C" __global__ void kb_fill(void* p, long long n, int dt, int dist, u64 seed, int kind, float a) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    u64 h = kb_mix(seed ^ kb_mix((u64)i));
    float v;
    if (dist == 1) v = 2.f * kb_u01(h) - 1.f;
    else if (dist == 2) v = 0.5f + 1.5f * kb_u01(h);
    else { float x = kb_u01(h), y = kb_u01(kb_mix(h)); v = sqrtf(-2.f * logf(x)) * cospif(2.f * y); }
    v = kb_input_case(kind, a, v, kb_mix(h ^ 0x2545F4914F6CDD1Dull));
    if (dt) ((unsigned short*)p)[i] = kb_f2h(v); else ((float*)p)[i] = v;
  }
}
extern "C" __global__ void kb_poison(void* p, long long n, int dt, unsigned bits) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (dt) ((unsigned short*)p)[i] = (unsigned short)bits; else ((unsigned*)p)[i] = bits;
  }
}
extern "C" __global__ void kb_checksum(const unsigned short* p, long long n, u64* out) {
  u64 acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    acc += kb_mix(((u64)i << 16) ^ p[i]);
  atomicAdd(out, acc);
}
extern "C" __global__ void kb_maxabs(const void* r, long long n, int dt, unsigned* out) {
  float m = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = fabsf(kb_val(kb_bits(r, i, dt), dt));
    if (v <= 3.0e38f && v > m) m = v;
  }
  atomicMax(out, __float_as_uint(m));
}
// st[0..5]: counts of (first run unwritten, second run unwritten, non-finite, wrong, runs differ,
// reference non-finite); st[6..11]: the first index of each.
extern "C" __global__ void kb_compare(const void* o, const void* f, const void* r, long long n, int dt,
                                      unsigned p1, unsigned p2, double bound, u64* st) {
  u64 c[6] = {0, 0, 0, 0, 0, 0}, first[6];
  for (int k = 0; k < 6; ++k) first[k] = ~0ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned ob = kb_bits(o, i, dt), fb = kb_bits(f, i, dt), rb = kb_bits(r, i, dt);
    float ov = kb_val(ob, dt), rv = kb_val(rb, dt);
    int k = -1;
    if (fb == p1) k = 0;
    else if (ob == p2) k = 1;
    else if (!isfinite(ov)) k = 2;
    else if (!(fabs((double)ov - (double)rv) <= bound)) k = 3;
    if (k >= 0) { if (!c[k]++) first[k] = i; }
    if (fb != p1 && ob != p2 && ob != fb) { if (!c[4]++) first[4] = i; }
    if (!isfinite(rv)) { if (!c[5]++) first[5] = i; }
  }
  for (int k = 0; k < 6; ++k) if (c[k]) { atomicAdd(st + k, c[k]); atomicMin(st + 6 + k, first[k]); }
}
)";

}  // namespace kernelbrain::cuda_worker
