// Grouped conv2d (NCHW, stride 1, zero padding) with register tiling over output channels: a block
// computes KT output channels of one group over a TH x TW spatial tile of one image. The group's
// input channels are staged CB at a time: their input tiles (with halo, zero padding applied while
// loading, coalesced rows) and their weights, transposed to [ci][r][s][kt] so that the KT weights of
// one tap are float4 broadcasts, go to shared memory in one phase, then every thread computes KT
// channels x VH rows of one column for those CB channels. With CB = C/G (8 for ResNeXt) a block
// needs a single load phase, so fewer, larger transfers and fewer barriers. Output channels past the
// group's end (KT not dividing K/G) use zero weights and are not stored. R = 3 is unrolled; other R
// take the same loops with a run-time bound.
#define TW ${TW}
#define TH ${TH}
#define VH ${VH}
#define KT ${KT}
#define CB ${CB}
#define NRG (TH / VH)
#define THREADS (TW * NRG)

template <int RR>
__device__ __forceinline__ void conv_group(const float* __restrict__ x, const float* __restrict__ w,
                                           float* __restrict__ y, long long N, long long C, long long H, long long W,
                                           long long K, long long G, int Rrt, long long P, float* smem) {
  const int R = RR > 0 ? RR : Rrt;
  const int RS = R * R;
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const int SW = TW + R - 1, SH = TH + R - 1;
  const long long KG = K / G, CG = C / G, nkc = (KG + KT - 1) / KT;
  const long long bx = blockIdx.x;
  const long long n = bx / (G * nkc), rem = bx % (G * nkc), g = rem / nkc, k0 = (rem % nkc) * KT;
  const long long oh0 = (long long)blockIdx.y * TH, ow0 = (long long)blockIdx.z * TW;
  const int tid = threadIdx.x, col = tid % TW, rg = tid / TW;
  float* ws = smem;                 // [CB][R*R][KT]
  float* tiles = smem + CB * RS * KT;  // [CB][SH][SW]   (CB*RS*KT is a multiple of 4: KT is)

  float acc[KT][VH];
#pragma unroll
  for (int c = 0; c < KT; ++c)
#pragma unroll
    for (int i = 0; i < VH; ++i) acc[c][i] = 0.f;

  for (long long c0 = 0; c0 < CG; c0 += CB) {
    __syncthreads();  // the previous stage is no longer read
    for (int idx = tid; idx < CB * SH * SW; idx += THREADS) {
      const int cb = idx / (SH * SW), rr = idx - cb * SH * SW;
      const int row = rr / SW, cc = rr - row * SW;
      const long long ci = c0 + cb, ih = oh0 - P + row, iw = ow0 - P + cc;
      tiles[idx] = (ci < CG && ih >= 0 && ih < H && iw >= 0 && iw < W)
                       ? __ldg(x + ((n * C + g * CG + ci) * H + ih) * W + iw) : 0.f;
    }
    for (int idx = tid; idx < CB * RS * KT; idx += THREADS) {
      const int kt = idx % KT, q = (idx / KT) % RS, cb = idx / (KT * RS);
      const long long ci = c0 + cb, kk = k0 + kt;
      ws[idx] = (ci < CG && kk < KG) ? __ldg(w + ((g * KG + kk) * CG + ci) * RS + q) : 0.f;
    }
    __syncthreads();
    const int nc = (int)min((long long)CB, CG - c0);
    for (int cb = 0; cb < nc; ++cb) {
      const float* tl = tiles + cb * SH * SW + (rg * VH) * SW + col;
      const float* wl = ws + cb * RS * KT;
#pragma unroll
      for (int r = 0; r < R; ++r) {  // R is a compile-time 3 when RR = 3, so these unroll
#pragma unroll
        for (int s = 0; s < R; ++s) {
          float wv[KT];
#pragma unroll
          for (int q = 0; q < KT / 4; ++q) {
            const float4 t4 = reinterpret_cast<const float4*>(wl + (r * R + s) * KT)[q];
            wv[4 * q] = t4.x; wv[4 * q + 1] = t4.y; wv[4 * q + 2] = t4.z; wv[4 * q + 3] = t4.w;
          }
#pragma unroll
          for (int i = 0; i < VH; ++i) {
            const float v = tl[(i + r) * SW + s];
#pragma unroll
            for (int c = 0; c < KT; ++c) acc[c][i] = fmaf(v, wv[c], acc[c][i]);
          }
        }
      }
    }
  }
  const long long ow = ow0 + col;
  if (ow >= OW) return;
#pragma unroll
  for (int c = 0; c < KT; ++c) {
    if (k0 + c >= KG) break;
    float* yp = y + ((n * K + g * KG + k0 + c) * OH) * OW;
#pragma unroll
    for (int i = 0; i < VH; ++i) {
      const long long oh = oh0 + rg * VH + i;
      if (oh < OH) __stcs(yp + oh * OW + ow, acc[c][i]);
    }
  }
}

// grid: (N * G * ceil_div(K/G, KT), ceil_div(OH, TH), ceil_div(OW, TW)); block TW*TH/VH;
// smem 4 * CB * (R*R*KT + (TH+R-1)*(TW+R-1)) bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
groupconv_grouped_regtile(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                          long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  if (R == 3) conv_group<3>(x, w, y, N, C, H, W, K, G, 3, P, smem);
  else conv_group<0>(x, w, y, N, C, H, W, K, G, (int)R, P, smem);
}
