// Reference matrix-vector product y = A x (A: M x K row-major): one block per row, the dot product
// accumulated in double and reduced with a shared-memory tree.
#define REF_THREADS 256

extern "C" __global__ void __launch_bounds__(REF_THREADS)
matvec_reference(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, long long M, long long K) {
  __shared__ double red[REF_THREADS];
  const long long m = blockIdx.x;
  if (m >= M) return;
  const float* a = A + m * K;
  double s = 0.0;
  for (long long k = threadIdx.x; k < K; k += REF_THREADS) s += (double)a[k] * (double)x[k];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int h = REF_THREADS / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[m] = (float)red[0];
}
