// Matrix-vector product y = A x, one warp per ROWS rows: each lane strides over K with 16-byte
// loads (UNROLL x ROWS in flight), the x float4 shared by the warp's ROWS rows, and a warp-shuffle
// reduction; no shared memory, no barriers. K % 4 != 0 takes a scalar path.
#define WARPS ${WARPS}
#define ROWS ${ROWS}
#define UNROLL ${UNROLL}

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

extern "C" __global__ void __launch_bounds__(WARPS * 32, 1)
matvec_warp_rows(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, long long M, long long K) {
  const int lane = threadIdx.x & 31;
  const long long r0 = ((long long)blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
  if (r0 >= M) return;  // whole warps; no block barrier
  const float* a[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) a[r] = A + min(r0 + r, M - 1) * K;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) acc[r] = 0.f;
  if ((K & 3) == 0) dot_rows<32, true>(a, x, 0, K >> 2, lane, acc);
  else dot_rows<32, false>(a, x, 0, K, lane, acc);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const float v = warp_sum(acc[r]);
    if (lane == 0 && r0 + r < M) y[r0 + r] = v;
  }
}
