// RMSNorm over C of NCHW, one thread per VEC consecutive positions, using the register file AND
// shared memory to hold a position's whole channel column: channels [0, CR) are loaded into
// registers, channels [CR, CR+CS) are copied global -> shared with cp.async straight into this
// thread's own shared-memory column (no barrier is ever needed: every thread reads back only what
// it copied). All loads of all channels are in flight before the first use, so an SM keeps far more
// bytes in flight than registers alone allow, while x is still read exactly once. Channels beyond
// CR+CS are streamed twice. H*W not a multiple of VEC takes a plain scalar two-pass path.
#define BLOCK ${BLOCK}
#define VEC ${VEC}
#define CR ${CR}
#define CS ${CS}
#define EPS 1e-5f

__device__ __forceinline__ void cp_async_vec(float* smem, const float* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  if (VEC == 4) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
  else if (VEC == 2) asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

__device__ __forceinline__ void ldv(const float* __restrict__ p, float (&o)[VEC], bool stream) {
  if (VEC == 4) {
    const float4 q = stream ? __ldcs(reinterpret_cast<const float4*>(p)) : __ldg(reinterpret_cast<const float4*>(p));
    o[0] = q.x; o[1 % VEC] = q.y; o[2 % VEC] = q.z; o[3 % VEC] = q.w;
  } else if (VEC == 2) {
    const float2 q = stream ? __ldcs(reinterpret_cast<const float2*>(p)) : __ldg(reinterpret_cast<const float2*>(p));
    o[0] = q.x; o[1 % VEC] = q.y;
  } else {
    o[0] = stream ? __ldcs(p) : __ldg(p);
  }
}
__device__ __forceinline__ void stv(float* __restrict__ p, const float (&o)[VEC]) {
  if (VEC == 4) __stcs(reinterpret_cast<float4*>(p), make_float4(o[0], o[1 % VEC], o[2 % VEC], o[3 % VEC]));
  else if (VEC == 2) __stcs(reinterpret_cast<float2*>(p), make_float2(o[0], o[1 % VEC]));
  else __stcs(p, o[0]);
}

// grid: (ceil_div(H*W, BLOCK*VEC), B); block BLOCK; dynamic smem 4*CS*BLOCK*VEC bytes.
extern "C" __global__ void __launch_bounds__(BLOCK, 1)
rmsnorm_regs_smem(const float* __restrict__ x, float* __restrict__ y, long long B, long long C, long long H,
                  long long W) {
  extern __shared__ float4 smem4[];
  const long long HW = H * W;
  const int t = threadIdx.x;
  const long long p0 = ((long long)blockIdx.x * BLOCK + t) * VEC;
  if (p0 >= HW) return;  // no barriers anywhere
  const long long b = blockIdx.y;
  const float* xb = x + b * C * HW + p0;
  float* yb = y + b * C * HW + p0;
  const float invC = 1.0f / (float)C;

  if (HW % VEC != 0) {  // scalar two-pass fallback
    for (int k = 0; k < VEC && p0 + k < HW; ++k) {
      float ss = 0.f;
      for (long long c = 0; c < C; ++c) { const float v = __ldg(xb + c * HW + k); ss = fmaf(v, v, ss); }
      const float r = rsqrtf(fmaf(ss, invC, EPS));
      for (long long c = 0; c < C; ++c) __stcs(yb + c * HW + k, __ldcs(xb + c * HW + k) * r);
    }
    return;
  }
  float* col = reinterpret_cast<float*>(smem4) + t * VEC;  // this thread's column: col[c * BLOCK * VEC + k]
  const int ns = (int)min((long long)CS, max(0LL, C - CR));
  for (int c = 0; c < ns; ++c) cp_async_vec(col + c * BLOCK * VEC, xb + (CR + c) * HW);
  float v[CR][VEC];
#pragma unroll
  for (int c = 0; c < CR; ++c)
    if (c < C) ldv(xb + c * HW, v[c], true);
  float ss[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) ss[k] = 0.f;
#pragma unroll
  for (int c = 0; c < CR; ++c)
    if (c < C) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) ss[k] = fmaf(v[c][k], v[c][k], ss[k]);
    }
  cp_async_wait_all();
  for (int c = 0; c < ns; ++c) {
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float u = col[c * BLOCK * VEC + k];
      ss[k] = fmaf(u, u, ss[k]);
    }
  }
  for (long long c = CR + CS; c < C; ++c) {
    float u[VEC];
    ldv(xb + c * HW, u, false);
#pragma unroll
    for (int k = 0; k < VEC; ++k) ss[k] = fmaf(u[k], u[k], ss[k]);
  }
  float r[VEC];
#pragma unroll
  for (int k = 0; k < VEC; ++k) r[k] = rsqrtf(fmaf(ss[k], invC, EPS));
#pragma unroll
  for (int c = 0; c < CR; ++c)
    if (c < C) {
      float o[VEC];
#pragma unroll
      for (int k = 0; k < VEC; ++k) o[k] = v[c][k] * r[k];
      stv(yb + c * HW, o);
    }
  for (int c = 0; c < ns; ++c) {
    float o[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) o[k] = col[c * BLOCK * VEC + k] * r[k];
    stv(yb + (CR + c) * HW, o);
  }
  for (long long c = CR + CS; c < C; ++c) {
    float u[VEC];
    ldv(xb + c * HW, u, true);
#pragma unroll
    for (int k = 0; k < VEC; ++k) u[k] *= r[k];
    stv(yb + c * HW, u);
  }
}
