// Softmax with one thread-block cluster per row: the row is split into CL slices, one per CTA, and
// each CTA copies its slice into shared memory with cp.async, so the row is read from HBM once even
// when it is far larger than one SM (4096 x 393216: 1.5 MB rows over 8 SMs). Each CTA reduces its
// slice to a (max, sum of exp) pair; the pairs are exchanged through distributed shared memory
// (mapa + ld.shared::cluster, i.e. what cooperative_groups' map_shared_rank does; raw PTX keeps the
// source free of headers, which NVRTC only finds with an include path) and merged in rank order, so all CTAs agree bit for bit; then each CTA
// writes its slice from shared memory. The part of a slice that does not fit the dynamic shared
// memory the launch gives (read from %dynamic_smem_size) is streamed from global memory instead.

#define CL ${CL}
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
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// V = 4: slice 16-byte aligned and its length a multiple of 4; V = 1: scalar.
template <int V>
__device__ __forceinline__ void slice_softmax(const float* __restrict__ xs, float* __restrict__ ys, int n, int ncache,
                                              float* cache, float* red, float* xch, float* all_ms) {
  const int t = threadIdx.x;
  // 1. Cached part into shared memory; each thread later touches only the elements it copied.
  if (V == 4) {
    const int nc4 = ncache >> 2;
    for (int j = t; j < nc4; j += BLOCK) cp_async16(cache + 4 * j, xs + 4 * j);
    cp_async_wait_all();
  } else {
    for (int j = t; j < ncache; j += BLOCK) cache[j] = __ldcs(xs + j);
  }
  // 2. This thread's (max, sum of exp) over its cached elements, then the streamed remainder.
  float m = NEG_BIG, s = 0.f;
  if (V == 4) {
    const int nc4 = ncache >> 2;
    for (int j = t; j < nc4; j += BLOCK) {
      const float4 q = reinterpret_cast<const float4*>(cache)[j];
      m = fmaxf(m, fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)));
    }
    const float mL = m * L2E;
    for (int j = t; j < nc4; j += BLOCK) {
      const float4 q = reinterpret_cast<const float4*>(cache)[j];
      s += exp2f(fmaf(q.x, L2E, -mL)) + exp2f(fmaf(q.y, L2E, -mL)) + exp2f(fmaf(q.z, L2E, -mL)) + exp2f(fmaf(q.w, L2E, -mL));
    }
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
  } else {
    for (int j = t; j < ncache; j += BLOCK) m = fmaxf(m, cache[j]);
    const float mL = m * L2E;
    for (int j = t; j < ncache; j += BLOCK) s += exp2f(fmaf(cache[j], L2E, -mL));
    for (int j = ncache + t; j < n; j += BLOCK) {
      const float q = __ldg(xs + j);
      const float mn = fmaxf(m, q);
      s = s * exp2f((m - mn) * L2E) + exp2f((q - mn) * L2E);
      m = mn;
    }
  }
  block_ms(m, s, red);
  if (t == 0) { xch[0] = m; xch[1] = s; }
  // 3. Exchange the CTAs' pairs through distributed shared memory.
  cluster_sync();
  if (t < CL) {
    all_ms[2 * t] = ld_cluster(xch, t);
    all_ms[2 * t + 1] = ld_cluster(xch + 1, t);
  }
  __syncthreads();
  m = all_ms[0];
  s = all_ms[1];
#pragma unroll
  for (int r = 1; r < CL; ++r) ms_merge(m, s, all_ms[2 * r], all_ms[2 * r + 1]);
  const float mL = m * L2E, inv = 1.0f / s;
  // 4. Write the slice.
  if (V == 4) {
    const int nc4 = ncache >> 2;
    float4* y4 = reinterpret_cast<float4*>(ys);
    for (int j = t; j < nc4; j += BLOCK) {
      const float4 q = reinterpret_cast<const float4*>(cache)[j];
      __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                                 exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
    }
    const float4* x4 = reinterpret_cast<const float4*>(xs);
#pragma unroll 4
    for (int j = nc4 + t; j < (n >> 2); j += BLOCK) {
      const float4 q = __ldcs(x4 + j);
      __stcs(y4 + j, make_float4(exp2f(fmaf(q.x, L2E, -mL)) * inv, exp2f(fmaf(q.y, L2E, -mL)) * inv,
                                 exp2f(fmaf(q.z, L2E, -mL)) * inv, exp2f(fmaf(q.w, L2E, -mL)) * inv));
    }
  } else {
    for (int j = t; j < ncache; j += BLOCK) __stcs(ys + j, exp2f(fmaf(cache[j], L2E, -mL)) * inv);
    for (int j = ncache + t; j < n; j += BLOCK) __stcs(ys + j, exp2f(fmaf(__ldcs(xs + j), L2E, -mL)) * inv);
  }
  // 5. Keep this CTA's xch alive until every CTA of the cluster has read it.
  cluster_sync();
}

extern "C" __global__ void __launch_bounds__(BLOCK)
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
  if ((C & 3) == 0) slice_softmax<4>(xs, ys, n, ncache, reinterpret_cast<float*>(cache4), red, xch, all_ms);
  else slice_softmax<1>(xs, ys, n, ncache, reinterpret_cast<float*>(cache4), red, xch, all_ms);
}
