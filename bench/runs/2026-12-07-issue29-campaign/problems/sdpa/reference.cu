// Reference scaled dot-product attention O = softmax(Q K^T / sqrt(D)) V for Q, K, V, O: [B, H, S, D]
// (row-major), no mask. Three plain kernels in double precision:
//   1. sdpa_ref_scores: textbook 16x16 shared-memory tiled batched product Q K^T, times 1/sqrt(D),
//      into a double scratch (the f32 scratch "Sd" of 2*B*H*S*S floats, used as B*H*S*S doubles);
//   2. sdpa_ref_softmax: one block per row, max / sum of exp / normalise, in place, in double;
//   3. sdpa_ref_pv: textbook 16x16 tiled batched product P V, rounded to float at the end.
#define T 16
#define RT 256

// grid: (ceil_div(S, 16), ceil_div(S, 16), B*H); block (16, 16)
extern "C" __global__ void __launch_bounds__(T * T)
sdpa_ref_scores(const float* __restrict__ Q, const float* __restrict__ Kt, float* __restrict__ Sd, long long B,
                long long H, long long S, long long D) {
  __shared__ double qs[T][T + 1], ks[T][T + 1];
  double* Sc = reinterpret_cast<double*>(Sd);
  const long long z = blockIdx.z;
  const float* q = Q + z * S * D;
  const float* k = Kt + z * S * D;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long i0 = (long long)blockIdx.y * T, j0 = (long long)blockIdx.x * T;
  double s = 0.0;
  for (long long d0 = 0; d0 < D; d0 += T) {
    qs[ty][tx] = (i0 + ty < S && d0 + tx < D) ? (double)q[(i0 + ty) * D + d0 + tx] : 0.0;
    ks[ty][tx] = (j0 + ty < S && d0 + tx < D) ? (double)k[(j0 + ty) * D + d0 + tx] : 0.0;
    __syncthreads();
    for (int dd = 0; dd < T; ++dd) s += qs[ty][dd] * ks[tx][dd];
    __syncthreads();
  }
  const long long i = i0 + ty, j = j0 + tx;
  if (i < S && j < S) Sc[(z * S + i) * S + j] = s / sqrt((double)D);
}

// grid: B*H*S; block 256
extern "C" __global__ void __launch_bounds__(RT) sdpa_ref_softmax(float* Sd, long long B, long long H, long long S) {
  __shared__ double red[RT];
  double* row = reinterpret_cast<double*>(Sd) + (long long)blockIdx.x * S;
  const int t = threadIdx.x;
  double m = -1.0e300;
  for (long long j = t; j < S; j += RT) m = fmax(m, row[j]);
  red[t] = m;
  __syncthreads();
  for (int h = RT / 2; h > 0; h >>= 1) {
    if (t < h) red[t] = fmax(red[t], red[t + h]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  double s = 0.0;
  for (long long j = t; j < S; j += RT) s += exp(row[j] - m);
  red[t] = s;
  __syncthreads();
  for (int h = RT / 2; h > 0; h >>= 1) {
    if (t < h) red[t] += red[t + h];
    __syncthreads();
  }
  s = red[0];
  for (long long j = t; j < S; j += RT) row[j] = exp(row[j] - m) / s;
}

// grid: (ceil_div(D, 16), ceil_div(S, 16), B*H); block (16, 16)
extern "C" __global__ void __launch_bounds__(T * T)
sdpa_ref_pv(const float* __restrict__ Sd, const float* __restrict__ V, float* __restrict__ O, long long B, long long H,
            long long S, long long D) {
  __shared__ double ps[T][T + 1], vs[T][T + 1];
  const double* P = reinterpret_cast<const double*>(Sd);
  const long long z = blockIdx.z;
  const double* p = P + z * S * S;
  const float* v = V + z * S * D;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long i0 = (long long)blockIdx.y * T, d0 = (long long)blockIdx.x * T;
  double s = 0.0;
  for (long long j0 = 0; j0 < S; j0 += T) {
    ps[ty][tx] = (i0 + ty < S && j0 + tx < S) ? p[(i0 + ty) * S + j0 + tx] : 0.0;
    vs[ty][tx] = (j0 + ty < S && d0 + tx < D) ? (double)v[(j0 + ty) * D + d0 + tx] : 0.0;
    __syncthreads();
    for (int jj = 0; jj < T; ++jj) s += ps[ty][jj] * vs[jj][tx];
    __syncthreads();
  }
  const long long i = i0 + ty, d = d0 + tx;
  if (i < S && d < D) O[(z * S + i) * D + d] = (float)s;
}
