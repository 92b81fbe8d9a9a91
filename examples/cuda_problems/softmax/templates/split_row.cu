// Softmax with each row split across SPLIT blocks and no clusters: pass 1 reduces each chunk to an
// online (max, sum of exp) pair in scratch; pass 2 merges the row's SPLIT pairs (in a fixed order,
// so every block of a row agrees) and re-reads its chunk to write the output. Two reads and one
// write: the fallback that fills the machine when rows are few (16 x 16384).
#define SPLIT ${SPLIT}
#define BLOCK ${BLOCK}
#define NW (BLOCK / 32)

#define L2E 1.4426950408889634f
#define NEG_BIG (-3.0e38f)

__device__ __forceinline__ void ms_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = s * exp2f((m - mn) * L2E) + s2 * exp2f((m2 - mn) * L2E);
  m = mn;
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

// The chunk [beg, end) of block (row, k); chunks are multiples of 4 long so they stay aligned.
__device__ __forceinline__ void chunk_of(long long C, int k, long long& beg, long long& end) {
  const long long chunk = (C + 4 * SPLIT - 1) / (4 * SPLIT) * 4;
  beg = min(C, (long long)k * chunk);
  end = min(C, beg + chunk);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_split_stats(const float* __restrict__ x, float* __restrict__ partial, long long R, long long C) {
  __shared__ float red[2 * NW + 2];
  const long long row = blockIdx.x / SPLIT;
  const int k = blockIdx.x % SPLIT;
  long long beg, end;
  chunk_of(C, k, beg, end);
  const float* xr = x + row * C;
  float m = NEG_BIG, s = 0.f;
  if ((C & 3) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
#pragma unroll 4
    for (long long j = (beg >> 2) + threadIdx.x; j < (end >> 2); j += BLOCK) {
      const float4 q = __ldg(x4 + j);
      const float mn = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
      const float mL = mn * L2E;
      s = s * exp2f((m - mn) * L2E) + exp2f(fmaf(q.x, L2E, -mL)) + exp2f(fmaf(q.y, L2E, -mL)) +
          exp2f(fmaf(q.z, L2E, -mL)) + exp2f(fmaf(q.w, L2E, -mL));
      m = mn;
    }
  } else {
#pragma unroll 4
    for (long long j = beg + threadIdx.x; j < end; j += BLOCK) {
      const float q = __ldg(xr + j);
      const float mn = fmaxf(m, q);
      s = s * exp2f((m - mn) * L2E) + exp2f((q - mn) * L2E);
      m = mn;
    }
  }
  block_ms(m, s, red);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = m;
    partial[2 * blockIdx.x + 1] = s;
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_split_apply(const float* __restrict__ x, const float* __restrict__ partial, float* __restrict__ y, long long R,
                    long long C) {
  const long long row = blockIdx.x / SPLIT;
  const int k = blockIdx.x % SPLIT;
  const float* pr = partial + 2 * row * SPLIT;
  float m = pr[0], s = pr[1];
#pragma unroll
  for (int i = 1; i < SPLIT; ++i) ms_merge(m, s, pr[2 * i], pr[2 * i + 1]);
  const float mL = m * L2E, inv = 1.0f / s;
  long long beg, end;
  chunk_of(C, k, beg, end);
  const float* xr = x + row * C;
  float* yr = y + row * C;
  if ((C & 3) == 0) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll 4
    for (long long j = (beg >> 2) + threadIdx.x; j < (end >> 2); j += BLOCK) {
      const float4 q = __ldcs(x4 + j);
      __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                                 exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
    }
  } else {
#pragma unroll 4
    for (long long j = beg + threadIdx.x; j < end; j += BLOCK) __stcs(yr + j, exp2f(fmaf(__ldcs(xr + j), L2E, -mL)) * inv);
  }
}
