// Reference softmax over dim 1 of an R x C matrix: one block per row, three plain passes
// (max, sum of exponentials in double, normalised write). Obviously correct, not fast.
#define REF_THREADS 256

extern "C" __global__ void __launch_bounds__(REF_THREADS)
softmax_reference(const float* __restrict__ x, float* __restrict__ y, long long R, long long C) {
  __shared__ double red[REF_THREADS];
  const long long r = blockIdx.x;
  if (r >= R) return;
  const float* xr = x + r * C;
  float* yr = y + r * C;
  const int t = threadIdx.x;

  double m = -1.0e300;
  for (long long c = t; c < C; c += REF_THREADS) m = fmax(m, (double)xr[c]);
  red[t] = m;
  __syncthreads();
  for (int s = REF_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmax(red[t], red[t + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();

  double sum = 0.0;
  for (long long c = t; c < C; c += REF_THREADS) sum += exp((double)xr[c] - m);
  red[t] = sum;
  __syncthreads();
  for (int s = REF_THREADS / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    __syncthreads();
  }
  sum = red[0];

  for (long long c = t; c < C; c += REF_THREADS) yr[c] = (float)(exp((double)xr[c] - m) / sum);
}
