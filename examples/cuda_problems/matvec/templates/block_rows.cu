// Matrix-vector product y = A x, ROWS rows per block: BLOCK threads stride over K with 16-byte
// loads, UNROLL x ROWS loads in flight per thread; each x float4 is loaded once and used for ROWS
// rows (less L2 traffic for x). A is streamed with evict-first loads; the ROWS partial sums meet in
// a block reduction. K % 4 != 0 takes a scalar path (rows are then not 16-byte aligned).
#define BLOCK ${BLOCK}
#define ROWS ${ROWS}
#define UNROLL ${UNROLL}
#define NW (BLOCK / 32)

// acc[r] += sum over float4 index j in [j0, j1), j = j0 + lane + i*STRIDE, of A[row r][4j..4j+3] . x[4j..4j+3].
// A is streamed (evict-first), x is reused by every row and block (normal caching, stays in L2).
// VECTOR: K % 4 == 0 so rows are 16-byte aligned; otherwise j indexes scalars.
template <int STRIDE, bool VECTOR>
__device__ __forceinline__ void dot_rows(const float* const (&a)[ROWS], const float* __restrict__ x, long long j0,
                                         long long j1, int lane, float (&acc)[ROWS]) {
  long long j = j0 + lane;
  if (VECTOR) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (; j + (long long)(UNROLL - 1) * STRIDE < j1; j += (long long)UNROLL * STRIDE) {
      float4 xv[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) xv[u] = __ldg(x4 + j + u * STRIDE);
      float4 av[ROWS][UNROLL];
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) av[r][u] = __ldcs(reinterpret_cast<const float4*>(a[r]) + j + u * STRIDE);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          acc[r] = fmaf(av[r][u].x, xv[u].x, acc[r]);
          acc[r] = fmaf(av[r][u].y, xv[u].y, acc[r]);
          acc[r] = fmaf(av[r][u].z, xv[u].z, acc[r]);
          acc[r] = fmaf(av[r][u].w, xv[u].w, acc[r]);
        }
    }
    for (; j < j1; j += STRIDE) {
      const float4 xv = __ldg(x4 + j);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        const float4 av = __ldcs(reinterpret_cast<const float4*>(a[r]) + j);
        acc[r] = fmaf(av.x, xv.x, acc[r]);
        acc[r] = fmaf(av.y, xv.y, acc[r]);
        acc[r] = fmaf(av.z, xv.z, acc[r]);
        acc[r] = fmaf(av.w, xv.w, acc[r]);
      }
    }
  } else {
    for (; j + (long long)(UNROLL - 1) * STRIDE < j1; j += (long long)UNROLL * STRIDE) {
      float xv[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) xv[u] = __ldg(x + j + u * STRIDE);
      float av[ROWS][UNROLL];
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) av[r][u] = __ldcs(a[r] + j + u * STRIDE);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[r] = fmaf(av[r][u], xv[u], acc[r]);
    }
    for (; j < j1; j += STRIDE) {
      const float xv = __ldg(x + j);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r] = fmaf(__ldcs(a[r] + j), xv, acc[r]);
    }
  }
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
matvec_block_rows(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, long long M, long long K) {
  __shared__ float red[ROWS][NW];
  const long long r0 = (long long)blockIdx.x * ROWS;
  const float* a[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) a[r] = A + min(r0 + r, M - 1) * K;  // clamped rows are computed, never stored
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
  if ((K & 3) == 0) dot_rows<BLOCK, true>(a, x, 0, K >> 2, threadIdx.x, acc);
  else dot_rows<BLOCK, false>(a, x, 0, K, threadIdx.x, acc);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0) red[r][w] = v;
  }
  __syncthreads();
  if (w == 0) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const float v = warp_sum(lane < NW ? red[r][lane] : 0.f);
      if (lane == 0 && r0 + r < M) y[r0 + r] = v;
    }
  }
}
