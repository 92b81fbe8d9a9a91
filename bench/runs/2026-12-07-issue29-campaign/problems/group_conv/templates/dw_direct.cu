// Depthwise conv2d (NCHW, stride 1, zero padding) as a column sweep, no shared memory: each thread
// owns one output column of one (n, k) plane and walks VH output rows down it, keeping a rolling
// window of three input rows (3 taps each) in registers, so each step loads 3 values (coalesced
// across the warp; the horizontal taps of neighbouring lanes hit the same L1 lines) and writes one
// output with 9 FMAs. The whole input is read from DRAM about once and every output written once.
// No barriers; tails simply leave. Grouped convolutions (C/G > 1) and R != 3 take a generic loop
// (correct, not fast).
#define BX ${BX}
#define BY ${BY}
#define VH ${VH}

extern "C" __global__ void __launch_bounds__(BX * BY)
groupconv_dw_direct(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                    long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const long long ow = (long long)blockIdx.x * BX + threadIdx.x;
  const long long oh0 = ((long long)blockIdx.y * BY + threadIdx.y) * VH;
  if (ow >= OW || oh0 >= OH) return;
  const long long plane = blockIdx.z;
  const long long n = plane / K, k = plane % K;
  const long long CG = C / G, KG = K / G, g = k / KG;
  const int rows = (int)min((long long)VH, OH - oh0);
  float* yp = y + plane * OH * OW + oh0 * OW + ow;

  if (CG == 1 && R == 3) {
    const float* xp = x + ((n * C + g) * H) * W;
    const float* wp = w + k * 9;
    float w0[3], w1[3], w2[3];
#pragma unroll
    for (int s = 0; s < 3; ++s) { w0[s] = __ldg(wp + s); w1[s] = __ldg(wp + 3 + s); w2[s] = __ldg(wp + 6 + s); }
    bool cin[3];
#pragma unroll
    for (int s = 0; s < 3; ++s) cin[s] = ow - P + s >= 0 && ow - P + s < W;
    auto load_row = [&](long long ih, float (&v)[3]) {
      const bool rin = ih >= 0 && ih < H;
      const float* p = xp + ih * W + ow - P;
#pragma unroll
      for (int s = 0; s < 3; ++s) v[s] = (rin && cin[s]) ? __ldg(p + s) : 0.f;
    };
    float a[3], b[3];
    load_row(oh0 - P, a);
    load_row(oh0 - P + 1, b);
#pragma unroll 4
    for (int i = 0; i < rows; ++i) {
      float c[3];
      load_row(oh0 - P + i + 2, c);
      float acc = 0.f;
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        acc = fmaf(a[s], w0[s], acc);
        acc = fmaf(b[s], w1[s], acc);
        acc = fmaf(c[s], w2[s], acc);
      }
      __stcs(yp + (long long)i * OW, acc);
#pragma unroll
      for (int s = 0; s < 3; ++s) { a[s] = b[s]; b[s] = c[s]; }
    }
    return;
  }
  // Generic path: any group size and kernel size.
  for (int i = 0; i < rows; ++i) {
    const long long oh = oh0 + i;
    float acc = 0.f;
    for (long long ci = 0; ci < CG; ++ci) {
      const float* xp = x + ((n * C + g * CG + ci) * H) * W;
      const float* wp = w + (k * CG + ci) * R * R;
      for (long long r = 0; r < R; ++r) {
        const long long ih = oh - P + r;
        if (ih < 0 || ih >= H) continue;
        for (long long s = 0; s < R; ++s) {
          const long long iw = ow - P + s;
          if (iw >= 0 && iw < W) acc = fmaf(__ldg(xp + ih * W + iw), __ldg(wp + r * R + s), acc);
        }
      }
    }
    __stcs(yp + (long long)i * OW, acc);
  }
}
