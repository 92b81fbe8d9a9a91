// Softmax, one warp per row. Each lane caches up to ITEMS float4 of the row in registers, so a row
// of at most 128*ITEMS elements is read from memory once; longer rows fall back to an online
// (max and sum together) streaming pass followed by a re-read. Rows whose length is not a multiple
// of 4 take a scalar path (their rows are not 16-byte aligned).
#define WARPS ${WARPS}
#define ITEMS ${ITEMS}

#define L2E 1.4426950408889634f
#define NEG_BIG (-3.0e38f)

__device__ __forceinline__ void ms_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = s * exp2f((m - mn) * L2E) + s2 * exp2f((m2 - mn) * L2E);
  m = mn;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ void warp_ms(float& m, float& s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
}

// Row of C elements; V = 4 (row 16-byte aligned, C % 4 == 0) or 1.
template <int V>
__device__ __forceinline__ void row_cached(const float* __restrict__ xr, float* __restrict__ yr, int C, int lane) {
  float v[ITEMS * 4];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (V == 4) {
      const int e = 4 * (i * 32 + lane);
      if (e < C) {
        const float4 q = __ldcs(reinterpret_cast<const float4*>(xr + e));
        v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
      } else {
        v[4 * i] = v[4 * i + 1] = v[4 * i + 2] = v[4 * i + 3] = NEG_BIG;
      }
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int e = (4 * i + k) * 32 + lane;
        v[4 * i + k] = e < C ? __ldcs(xr + e) : NEG_BIG;
      }
    }
  }
  float m = NEG_BIG;
#pragma unroll
  for (int i = 0; i < ITEMS * 4; ++i) m = fmaxf(m, v[i]);
  m = warp_max(m);
  const float mL = m * L2E;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < ITEMS * 4; ++i) { v[i] = exp2f(fmaf(v[i], L2E, -mL)); s += v[i]; }
  s = warp_sum(s);
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (V == 4) {
      const int e = 4 * (i * 32 + lane);
      if (e < C) __stcs(reinterpret_cast<float4*>(yr + e), make_float4(v[4 * i] * inv, v[4 * i + 1] * inv, v[4 * i + 2] * inv, v[4 * i + 3] * inv));
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int e = (4 * i + k) * 32 + lane;
        if (e < C) __stcs(yr + e, v[4 * i + k] * inv);
      }
    }
  }
}

template <int V>
__device__ __forceinline__ void row_stream(const float* __restrict__ xr, float* __restrict__ yr, long long C, int lane) {
  float m = NEG_BIG, s = 0.f;
  if (V == 4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const long long n4 = C >> 2;
#pragma unroll 4
    for (long long j = lane; j < n4; j += 32) {
      const float4 q = __ldg(x4 + j);
      const float mx = fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w));
      const float mn = fmaxf(m, mx);
      const float mL = mn * L2E;
      s = s * exp2f((m - mn) * L2E) + exp2f(fmaf(q.x, L2E, -mL)) + exp2f(fmaf(q.y, L2E, -mL)) +
          exp2f(fmaf(q.z, L2E, -mL)) + exp2f(fmaf(q.w, L2E, -mL));
      m = mn;
    }
  } else {
#pragma unroll 4
    for (long long j = lane; j < C; j += 32) {
      const float q = __ldg(xr + j);
      const float mn = fmaxf(m, q);
      s = s * exp2f((m - mn) * L2E) + exp2f((q - mn) * L2E);
      m = mn;
    }
  }
  warp_ms(m, s);
  const float mL = m * L2E, inv = 1.0f / s;
  if (V == 4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    const long long n4 = C >> 2;
#pragma unroll 4
    for (long long j = lane; j < n4; j += 32) {
      const float4 q = __ldcs(x4 + j);
      __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                                 exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
    }
  } else {
#pragma unroll 4
    for (long long j = lane; j < C; j += 32) __stcs(yr + j, exp2f(fmaf(__ldcs(xr + j), L2E, -mL)) * inv);
  }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
softmax_warp_row(const float* __restrict__ x, float* __restrict__ y, long long R, long long C) {
  const int lane = threadIdx.x & 31;
  const long long row = (long long)blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= R) return;  // whole warps leave; no block-wide barrier follows
  const float* xr = x + row * C;
  float* yr = y + row * C;
  const bool vec = (C & 3) == 0;
  if (C <= 128LL * ITEMS) {
    if (vec) row_cached<4>(xr, yr, (int)C, lane);
    else row_cached<1>(xr, yr, (int)C, lane);
  } else {
    if (vec) row_stream<4>(xr, yr, C, lane);
    else row_stream<1>(xr, yr, C, lane);
  }
}
