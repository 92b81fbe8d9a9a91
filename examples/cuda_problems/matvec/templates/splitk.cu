// Matrix-vector product y = A x with split-K: block (i, s) computes ROWS rows over the s-th of
// SPLIT chunks of K and writes partial sums to scratch; a second kernel adds each row's SPLIT
// partials in a fixed order. Fills the machine when rows are few (256 x 131072).
#define BLOCK ${BLOCK}
#define ROWS ${ROWS}
#define UNROLL ${UNROLL}
#define SPLIT ${SPLIT}
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

// grid: (ceil_div(M, ROWS), SPLIT); partial: M x SPLIT
extern "C" __global__ void __launch_bounds__(BLOCK)
matvec_splitk_partial(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ partial, long long M,
                      long long K) {
  __shared__ float red[ROWS][NW];
  const long long r0 = (long long)blockIdx.x * ROWS;
  const int s = blockIdx.y;
  const float* a[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) a[r] = A + min(r0 + r, M - 1) * K;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
  const bool vec = (K & 3) == 0;
  const long long n = vec ? (K >> 2) : K;
  const long long chunk = (n + SPLIT - 1) / SPLIT;
  const long long j0 = min(n, s * chunk), j1 = min(n, j0 + chunk);
  if (vec) dot_rows<BLOCK, true>(a, x, j0, j1, threadIdx.x, acc);
  else dot_rows<BLOCK, false>(a, x, j0, j1, threadIdx.x, acc);
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
      if (lane == 0 && r0 + r < M) partial[(r0 + r) * SPLIT + s] = v;
    }
  }
}

// grid: ceil_div(M, 256), block 256
extern "C" __global__ void matvec_splitk_combine(const float* __restrict__ partial, float* __restrict__ y, long long M) {
  const long long m = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M) return;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < SPLIT; ++i) s += partial[m * SPLIT + i];
  y[m] = s;
}
