// RMSNorm over C of NCHW, one thread per VEC consecutive H*W positions of one image. The channel
// loop runs at stride H*W, so each load instruction is coalesced across the warp (16-byte loads
// when VEC = 4). The first CMAX channels are kept in registers between the sum of squares and the
// scaled write (one read of x, one write of y); channels beyond CMAX are streamed twice (two-pass).
// No block barriers, so out-of-range threads simply leave. H*W not a multiple of VEC, or the last
// partial group of positions, takes a guarded scalar path.
#define BLOCK ${BLOCK}
#define VEC ${VEC}
#define CMAX ${CMAX}
#define EPS 1e-5f

template <bool VECTOR>
__device__ __forceinline__ void ldv(const float* __restrict__ p, float (&o)[VEC], int valid, bool stream) {
  if (VECTOR) {
    if (VEC == 4) {
      const float4 q = stream ? __ldcs(reinterpret_cast<const float4*>(p)) : __ldg(reinterpret_cast<const float4*>(p));
      o[0] = q.x; o[1] = q.y; o[2 % VEC] = q.z; o[3 % VEC] = q.w;
    } else if (VEC == 2) {
      const float2 q = stream ? __ldcs(reinterpret_cast<const float2*>(p)) : __ldg(reinterpret_cast<const float2*>(p));
      o[0] = q.x; o[1 % VEC] = q.y;
    } else {
      o[0] = stream ? __ldcs(p) : __ldg(p);
    }
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k) o[k] = k < valid ? (stream ? __ldcs(p + k) : __ldg(p + k)) : 0.f;
  }
}
template <bool VECTOR>
__device__ __forceinline__ void stv(float* __restrict__ p, const float (&o)[VEC], int valid) {
  if (VECTOR) {
    if (VEC == 4) __stcs(reinterpret_cast<float4*>(p), make_float4(o[0], o[1 % VEC], o[2 % VEC], o[3 % VEC]));
    else if (VEC == 2) __stcs(reinterpret_cast<float2*>(p), make_float2(o[0], o[1 % VEC]));
    else __stcs(p, o[0]);
  } else {
#pragma unroll
    for (int k = 0; k < VEC; ++k)
      if (k < valid) __stcs(p + k, o[k]);
  }
}

template <bool VECTOR>
__device__ __forceinline__ void positions(const float* __restrict__ xb, float* __restrict__ yb, long long C, long long HW,
                                          int valid) {
  float v[CMAX][VEC];
  float ss[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) ss[k] = 0.f;
  // All cached loads are independent and issued before their first use.
#pragma unroll
  for (int c = 0; c < CMAX; ++c)
    if (c < C) ldv<VECTOR>(xb + c * HW, v[c], valid, true);
#pragma unroll
  for (int c = 0; c < CMAX; ++c)
    if (c < C) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) ss[k] = fmaf(v[c][k], v[c][k], ss[k]);
    }
#pragma unroll 4
  for (long long c = CMAX; c < C; ++c) {
    float t[VEC];
    ldv<VECTOR>(xb + c * HW, t, valid, false);
#pragma unroll
    for (int k = 0; k < VEC; ++k) ss[k] = fmaf(t[k], t[k], ss[k]);
  }
  const float invC = 1.0f / (float)C;
  float r[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) r[k] = rsqrtf(fmaf(ss[k], invC, EPS));
#pragma unroll
  for (int c = 0; c < CMAX; ++c)
    if (c < C) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = v[c][k] * r[k];
      stv<VECTOR>(yb + c * HW, o, valid);
    }
#pragma unroll 4
  for (long long c = CMAX; c < C; ++c) {
    float t[VEC];
    ldv<VECTOR>(xb + c * HW, t, valid, true);
#pragma unroll
    for (int k = 0; k < VEC; ++k) t[k] *= r[k];
    stv<VECTOR>(yb + c * HW, t, valid);
  }
}

// grid: (ceil_div(H*W, BLOCK*VEC), B)
extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_thread_positions(const float* __restrict__ x, float* __restrict__ y, long long B, long long C, long long H,
                         long long W) {
  const long long HW = H * W;
  const long long p0 = ((long long)blockIdx.x * BLOCK + threadIdx.x) * VEC;
  if (p0 >= HW) return;
  const long long b = blockIdx.y;
  const float* xb = x + b * C * HW + p0;
  float* yb = y + b * C * HW + p0;
  const int valid = (int)min((long long)VEC, HW - p0);
  if (HW % VEC == 0) positions<true>(xb, yb, C, HW, VEC);
  else positions<false>(xb, yb, C, HW, valid);
}
