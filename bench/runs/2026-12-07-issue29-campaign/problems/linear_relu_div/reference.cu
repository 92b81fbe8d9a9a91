// Reference y = relu(x W^T + b) / 2 (x: M x K, W: N x K, both row-major): the textbook 16x16
// shared-memory tiled product, accumulated in double, guarded at every edge.
#define T 16

extern "C" __global__ void __launch_bounds__(T * T)
lrd_reference(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ b,
              float* __restrict__ y, long long M, long long N, long long K) {
  __shared__ float xs[T][T + 1], ws[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long m0 = (long long)blockIdx.y * T, n0 = (long long)blockIdx.x * T;
  double s = 0.0;
  for (long long k0 = 0; k0 < K; k0 += T) {
    xs[ty][tx] = (m0 + ty < M && k0 + tx < K) ? x[(m0 + ty) * K + k0 + tx] : 0.f;
    ws[ty][tx] = (n0 + ty < N && k0 + tx < K) ? W[(n0 + ty) * K + k0 + tx] : 0.f;
    __syncthreads();
    for (int kk = 0; kk < T; ++kk) s += (double)xs[ty][kk] * (double)ws[tx][kk];
    __syncthreads();
  }
  const long long m = m0 + ty, n = n0 + tx;
  if (m < M && n < N) {
    s += (double)b[n];
    y[m * N + n] = (float)((s > 0.0 ? s : 0.0) / 2.0);
  }
}
