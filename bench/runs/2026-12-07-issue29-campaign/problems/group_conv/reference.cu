// Reference grouped 2-D convolution, NCHW, stride 1, square kernel R x R, zero padding P, no bias:
// y[n][k][oh][ow] = sum_{ci < C/G, r, s} x[n][g*C/G + ci][oh - P + r][ow - P + s] * w[k][ci][r][s],
// g = k / (K/G). One thread per output element, accumulated in double.
extern "C" __global__ void groupconv_reference(const float* __restrict__ x, const float* __restrict__ w,
                                               float* __restrict__ y, long long N, long long C, long long H,
                                               long long W, long long K, long long G, long long R, long long P) {
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= N * K * OH * OW) return;
  const long long ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
  const long long CG = C / G, KG = K / G, g = k / KG;
  double s = 0.0;
  for (long long ci = 0; ci < CG; ++ci)
    for (long long r = 0; r < R; ++r)
      for (long long q = 0; q < R; ++q) {
        const long long ih = oh - P + r, iw = ow - P + q;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        s += (double)x[((n * C + g * CG + ci) * H + ih) * W + iw] * (double)w[((k * CG + ci) * R + r) * R + q];
      }
  y[i] = (float)s;
}
