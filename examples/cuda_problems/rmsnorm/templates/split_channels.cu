// RMSNorm over C of NCHW with the channel reduction split over TY rows of the block: thread
// (tx, ty) owns VEC consecutive positions and channels ty, ty+TY, ...; it keeps up to CPT of them in
// registers, the partial sums of squares meet in shared memory, and each thread scales what it
// holds. Fewer registers per thread than one-thread-per-position, so more loads in flight per SM.
// Channels beyond CPT*TY are streamed twice. Loads at stride H*W, coalesced along tx.
#define TX ${TX}
#define TY ${TY}
#define VEC ${VEC}
#define CPT ${CPT}
#define EPS 1e-5f

template <bool VECTOR>
__device__ __forceinline__ void ldv(const float* __restrict__ p, float (&o)[VEC], int valid, bool stream) {
  if (VECTOR) {
    if (VEC == 4) {
      const float4 q = stream ? __ldcs(reinterpret_cast<const float4*>(p)) : __ldg(reinterpret_cast<const float4*>(p));
      o[0] = q.x; o[1 % VEC] = q.y; o[2 % VEC] = q.z; o[3 % VEC] = q.w;
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
__device__ __forceinline__ void run(const float* __restrict__ xb, float* __restrict__ yb, long long C, long long HW,
                                    int valid, float* red) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  float v[CPT][VEC];
  float ss[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) ss[k] = 0.f;
  if (valid > 0) {
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const long long c = ty + (long long)i * TY;
      if (c < C) ldv<VECTOR>(xb + c * HW, v[i], valid, true);
    }
#pragma unroll
    for (int i = 0; i < CPT; ++i)
      if (ty + (long long)i * TY < C) {
#pragma unroll
        for (int k = 0; k < VEC; ++k) ss[k] = fmaf(v[i][k], v[i][k], ss[k]);
      }
#pragma unroll 2
    for (long long c = ty + (long long)CPT * TY; c < C; c += TY) {
      float t[VEC];
      ldv<VECTOR>(xb + c * HW, t, valid, false);
#pragma unroll
      for (int k = 0; k < VEC; ++k) ss[k] = fmaf(t[k], t[k], ss[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < VEC; ++k) red[(ty * TX + tx) * VEC + k] = ss[k];
  __syncthreads();
  if (valid <= 0) return;  // after the only barrier
  const float invC = 1.0f / (float)C;
  float r[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < TY; ++j) s += red[(j * TX + tx) * VEC + k];  // same order in every thread
    r[k] = rsqrtf(fmaf(s, invC, EPS));
  }
#pragma unroll
  for (int i = 0; i < CPT; ++i) {
    const long long c = ty + (long long)i * TY;
    if (c < C) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = v[i][k] * r[k];
      stv<VECTOR>(yb + c * HW, o, valid);
    }
  }
#pragma unroll 2
  for (long long c = ty + (long long)CPT * TY; c < C; c += TY) {
    float t[VEC];
    ldv<VECTOR>(xb + c * HW, t, valid, true);
#pragma unroll
    for (int k = 0; k < VEC; ++k) t[k] *= r[k];
    stv<VECTOR>(yb + c * HW, t, valid);
  }
}

// grid: (ceil_div(H*W, TX*VEC), B), block (TX, TY)
extern "C" __global__ void __launch_bounds__(TX * TY, 1)
rmsnorm_split_channels(const float* __restrict__ x, float* __restrict__ y, long long B, long long C, long long H,
                       long long W) {
  __shared__ float red[TY * TX * VEC];
  const long long HW = H * W;
  const long long p0 = ((long long)blockIdx.x * TX + threadIdx.x) * VEC;
  const long long b = blockIdx.y;
  const int valid = (int)max(0LL, min((long long)VEC, HW - p0));
  const long long off = b * C * HW + (valid > 0 ? p0 : 0);
  if (HW % VEC == 0) run<true>(x + off, y + off, C, HW, valid, red);
  else run<false>(x + off, y + off, C, HW, valid, red);
}
