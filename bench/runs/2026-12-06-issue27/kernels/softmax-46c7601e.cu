// Softmax with one thread-block cluster per row: the row is split into CL slices, one per CTA, and
// each CTA copies its slice into shared memory with cp.async, so the row is read from HBM once even
// when it is far larger than one SM (4096 x 393216: 1.5 MB rows over 8 SMs). Each CTA reduces its
// slice to a (max, sum of exp) pair; the pairs are exchanged through distributed shared memory
// (mapa + ld.shared::cluster, i.e. what cooperative_groups' map_shared_rank does; raw PTX keeps the
// source free of headers, which NVRTC only finds with an include path) and merged in rank order, so all CTAs agree bit for bit; then each CTA
// writes its slice from shared memory. The part of a slice that does not fit the dynamic shared
// memory the launch gives (read from %dynamic_smem_size) is streamed from global memory instead.

#define CL 8
#define BLOCK 128
#define NG 2
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
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// All threads of all CTAs of the cluster; release/acquire, so shared-memory writes before it are
// visible to the cluster after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;\n" ::: "memory");
}
__device__ __forceinline__ float ld_cluster(const float* local, unsigned rank) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(local);
  unsigned ra;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
  return v;
}

template <int N>
__device__ __forceinline__ void cp_async_wait_group() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Exchange this CTA's (m, s) with the cluster and merge all CL pairs in rank order.
__device__ __forceinline__ void cluster_merge(float& m, float& s, float* xch, float* all_ms) {
  if (threadIdx.x == 0) { xch[0] = m; xch[1] = s; }
  cluster_sync();
  if (threadIdx.x < CL) {
    all_ms[2 * threadIdx.x] = ld_cluster(xch, threadIdx.x);
    all_ms[2 * threadIdx.x + 1] = ld_cluster(xch + 1, threadIdx.x);
  }
  __syncthreads();
  m = all_ms[0];
  s = all_ms[1];
#pragma unroll
  for (int r = 1; r < CL; ++r) ms_merge(m, s, all_ms[2 * r], all_ms[2 * r + 1]);
}

// Group G of the thread's cached float4s, once its cp.async group has landed (groups complete in
// commit order, so waiting until at most NG-1-G are pending is enough); recursion keeps G and the
// mg[] index compile-time.
template <int G>
__device__ __forceinline__ void reduce_groups(float4* c4, int t, int ni, int per, float& m, float& s, float (&mg)[NG]) {
  cp_async_wait_group<NG - 1 - G>();
  const int i0 = G * per, i1 = min(ni, (G + 1) * per);
  float gm = NEG_BIG;
  for (int i = i0; i < i1; ++i) {
    const float4 q = c4[t + i * BLOCK];
    gm = fmaxf(gm, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
  }
  const float mn = fmaxf(m, gm);
  s *= exp2f((m - mn) * L2E);
  m = mn;
  mg[G] = m;
  const float mL = m * L2E;
  for (int i = i0; i < i1; ++i) {
    float4 q = c4[t + i * BLOCK];
    q.x = exp2f(fmaf(q.x, L2E, -mL));
    q.y = exp2f(fmaf(q.y, L2E, -mL));
    q.z = exp2f(fmaf(q.z, L2E, -mL));
    q.w = exp2f(fmaf(q.w, L2E, -mL));
    s += (q.x + q.y) + (q.z + q.w);
    c4[t + i * BLOCK] = q;
  }
  if constexpr (G + 1 < NG) reduce_groups<G + 1>(c4, t, ni, per, m, s, mg);
}

// Aligned slice (C % 4 == 0). The thread's cached float4s (j = t + i*BLOCK) are copied in NG
// cp.async groups; group g is reduced as soon as it lands, while later groups are still in flight:
// its max updates the thread's running (m, s), its values are replaced in shared memory by
// exp(x - m_g) (one exponential per element), and m_g is kept so that the final write is
// e * exp(m_g - M) / S with no second exponential.
__device__ __forceinline__ void slice_vec(const float* __restrict__ xs, float* __restrict__ ys, int n, int ncache,
                                          float* cache, float* red, float* xch, float* all_ms) {
  const int t = threadIdx.x;
  float4* c4 = reinterpret_cast<float4*>(cache);
  const int nc4 = ncache >> 2;
  const int ni = nc4 > t ? (nc4 - t + BLOCK - 1) / BLOCK : 0;  // this thread's cached float4s
  const int per = ((nc4 + BLOCK - 1) / BLOCK + NG - 1) / NG;      // items per group (uniform)
#pragma unroll
  for (int g = 0; g < NG; ++g) {
    for (int i = g * per; i < min(ni, (g + 1) * per); ++i) cp_async16(cache + 4 * (t + i * BLOCK), xs + 4 * (t + i * BLOCK));
    cp_async_commit();
  }
  float m = NEG_BIG, s = 0.f, mg[NG];
  reduce_groups<0>(c4, t, ni, per, m, s, mg);
  // The uncached remainder of the slice, streamed with an online update.
  const float4* x4 = reinterpret_cast<const float4*>(xs);
#pragma unroll 4
  for (int j = nc4 + t; j < (n >> 2); j += BLOCK) {
    const float4 q = __ldg(x4 + j);
    const float mn = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
    const float mL2 = mn * L2E;
    s = s * exp2f((m - mn) * L2E) + exp2f(fmaf(q.x, L2E, -mL2)) + exp2f(fmaf(q.y, L2E, -mL2)) +
        exp2f(fmaf(q.z, L2E, -mL2)) + exp2f(fmaf(q.w, L2E, -mL2));
    m = mn;
  }
  block_ms(m, s, red);
  cluster_merge(m, s, xch, all_ms);
  const float inv = 1.0f / s, mL = m * L2E;
  float4* y4 = reinterpret_cast<float4*>(ys);
#pragma unroll
  for (int g = 0; g < NG; ++g) {
    const float f = exp2f((mg[g] - m) * L2E) * inv;
    for (int i = g * per; i < min(ni, (g + 1) * per); ++i) {
      const float4 e = c4[t + i * BLOCK];
      __stcs(y4 + t + i * BLOCK, make_float4(e.x * f, e.y * f, e.z * f, e.w * f));
    }
  }
#pragma unroll 4
  for (int j = nc4 + t; j < (n >> 2); j += BLOCK) {
    const float4 q = __ldcs(x4 + j);
    __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                               exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
  }
  cluster_sync();  // keep this CTA's xch alive until every CTA of the cluster has read it
}

// Unaligned slice (C % 4 != 0): scalar loads, two exponentials per element; correctness path.
__device__ __forceinline__ void slice_scalar(const float* __restrict__ xs, float* __restrict__ ys, int n, int ncache,
                                             float* cache, float* red, float* xch, float* all_ms) {
  const int t = threadIdx.x;
  for (int j = t; j < ncache; j += BLOCK) cache[j] = __ldcs(xs + j);
  float m = NEG_BIG, s = 0.f;
  for (int j = t; j < ncache; j += BLOCK) m = fmaxf(m, cache[j]);
  const float mL0 = m * L2E;
  for (int j = t; j < ncache; j += BLOCK) s += exp2f(fmaf(cache[j], L2E, -mL0));
  for (int j = ncache + t; j < n; j += BLOCK) {
    const float q = __ldg(xs + j);
    const float mn = fmaxf(m, q);
    s = s * exp2f((m - mn) * L2E) + exp2f((q - mn) * L2E);
    m = mn;
  }
  block_ms(m, s, red);
  cluster_merge(m, s, xch, all_ms);
  const float mL = m * L2E, inv = 1.0f / s;
  for (int j = t; j < ncache; j += BLOCK) __stcs(ys + j, exp2f(fmaf(cache[j], L2E, -mL)) * inv);
  for (int j = ncache + t; j < n; j += BLOCK) __stcs(ys + j, exp2f(fmaf(__ldcs(xs + j), L2E, -mL)) * inv);
  cluster_sync();
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1)
softmax_cluster_row(const float* __restrict__ x, float* __restrict__ y, long long R, long long C) {
  extern __shared__ float4 cache4[];
  __shared__ float red[2 * NW + 2];
  __shared__ float xch[2];
  __shared__ float all_ms[2 * CL];
  const int rank = (int)cluster_ctarank();
  const long long row = (long long)blockIdx.x / CL;  // grid.x = R * CL, clusters along x
  unsigned dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  const long long slice = (C + 4 * CL - 1) / (4 * CL) * 4;  // multiple of 4: slices stay 16-byte aligned
  const long long beg = min(C, (long long)rank * slice);
  const long long end = min(C, beg + slice);
  const int n = (int)(end - beg);
  const int ncache = min(n, (int)(dyn / 16) * 4);
  const float* xs = x + row * C + beg;
  float* ys = y + row * C + beg;
  if ((C & 3) == 0) slice_vec(xs, ys, n, ncache, reinterpret_cast<float*>(cache4), red, xch, all_ms);
  else slice_scalar(xs, ys, n, ncache, reinterpret_cast<float*>(cache4), red, xch, all_ms);
}
