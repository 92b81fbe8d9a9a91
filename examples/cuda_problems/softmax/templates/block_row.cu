// Softmax, one block per row. Each thread caches ITEMS float4 of the row in registers, so a row of
// at most 4*BLOCK*ITEMS elements is read once (max, then exponentials kept in registers, then the
// scaled write). Longer rows take an online streaming pass (max and sum together, one read) and a
// second read that often hits L2 because the block's row was just read. Rows whose length is not a
// multiple of 4 take a scalar path.
#define BLOCK ${BLOCK}
#define ITEMS ${ITEMS}
#define NW (BLOCK / 32)

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
// Block-wide reductions; every thread gets the result. `sh` holds at least NW + 1 floats and is
// not reused by the caller until after the next __syncthreads.
__device__ __forceinline__ float block_max(float v, float* sh) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  v = warp_max(v);
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    float u = lane < NW ? sh[lane] : NEG_BIG;
    u = warp_max(u);
    if (lane == 0) sh[NW] = u;
  }
  __syncthreads();
  return sh[NW];
}
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  v = warp_sum(v);
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    float u = lane < NW ? sh[lane] : 0.f;
    u = warp_sum(u);
    if (lane == 0) sh[NW] = u;
  }
  __syncthreads();
  return sh[NW];
}
__device__ __forceinline__ void block_ms(float& m, float& s, float* sh) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    ms_merge(m, s, m2, s2);
  }
  if (lane == 0) { sh[w] = m; sh[NW + w] = s; }
  __syncthreads();
  if (w == 0) {
    float mm = lane < NW ? sh[lane] : NEG_BIG, ss = lane < NW ? sh[NW + lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, mm, o);
      const float s2 = __shfl_xor_sync(0xffffffffu, ss, o);
      ms_merge(mm, ss, m2, s2);
    }
    if (lane == 0) { sh[2 * NW] = mm; sh[2 * NW + 1] = ss; }
  }
  __syncthreads();
  m = sh[2 * NW];
  s = sh[2 * NW + 1];
}

template <int V>
__device__ __forceinline__ void row_cached(const float* __restrict__ xr, float* __restrict__ yr, int C, float* sh) {
  const int t = threadIdx.x;
  float v[ITEMS * 4];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (V == 4) {
      const int e = 4 * (i * BLOCK + t);
      if (e < C) {
        const float4 q = __ldcs(reinterpret_cast<const float4*>(xr + e));
        v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
      } else {
        v[4 * i] = v[4 * i + 1] = v[4 * i + 2] = v[4 * i + 3] = NEG_BIG;
      }
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int e = (4 * i + k) * BLOCK + t;
        v[4 * i + k] = e < C ? __ldcs(xr + e) : NEG_BIG;
      }
    }
  }
  float m = NEG_BIG;
#pragma unroll
  for (int i = 0; i < ITEMS * 4; ++i) m = fmaxf(m, v[i]);
  m = block_max(m, sh);
  const float mL = m * L2E;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < ITEMS * 4; ++i) { v[i] = exp2f(fmaf(v[i], L2E, -mL)); s += v[i]; }
  s = block_sum(s, sh + NW + 1);
  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    if (V == 4) {
      const int e = 4 * (i * BLOCK + t);
      if (e < C) __stcs(reinterpret_cast<float4*>(yr + e), make_float4(v[4 * i] * inv, v[4 * i + 1] * inv, v[4 * i + 2] * inv, v[4 * i + 3] * inv));
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int e = (4 * i + k) * BLOCK + t;
        if (e < C) __stcs(yr + e, v[4 * i + k] * inv);
      }
    }
  }
}

template <int V>
__device__ __forceinline__ void row_stream(const float* __restrict__ xr, float* __restrict__ yr, long long C, float* sh) {
  const int t = threadIdx.x;
  float m = NEG_BIG, s = 0.f;
  if (V == 4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const long long n4 = C >> 2;
#pragma unroll 4
    for (long long j = t; j < n4; j += BLOCK) {
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
    for (long long j = t; j < C; j += BLOCK) {
      const float q = __ldg(xr + j);
      const float mn = fmaxf(m, q);
      s = s * exp2f((m - mn) * L2E) + exp2f((q - mn) * L2E);
      m = mn;
    }
  }
  block_ms(m, s, sh);
  const float mL = m * L2E, inv = 1.0f / s;
  if (V == 4) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    const long long n4 = C >> 2;
#pragma unroll 4
    for (long long j = t; j < n4; j += BLOCK) {
      const float4 q = __ldcs(x4 + j);
      __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                                 exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
    }
  } else {
#pragma unroll 4
    for (long long j = t; j < C; j += BLOCK) __stcs(yr + j, exp2f(fmaf(__ldcs(xr + j), L2E, -mL)) * inv);
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_block_row(const float* __restrict__ x, float* __restrict__ y, long long R, long long C) {
  __shared__ float sh[4 * NW + 4];
  const long long row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + row * C;
  float* yr = y + row * C;
  const bool vec = (C & 3) == 0;
  if (C <= 4LL * BLOCK * ITEMS) {
    if (vec) row_cached<4>(xr, yr, (int)C, sh);
    else row_cached<1>(xr, yr, (int)C, sh);
  } else {
    if (vec) row_stream<4>(xr, yr, C, sh);
    else row_stream<1>(xr, yr, C, sh);
  }
}
