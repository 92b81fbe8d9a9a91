// Depthwise conv2d (NCHW, stride 1, zero padding), vectorised column sweep: each thread owns 4
// consecutive output columns of one (n, k) plane and walks VH output rows down them with a rolling
// window of three input rows of 6 values each in registers. With no padding and W % 4 == 0 a row
// step is one 16-byte load (columns 4j..4j+3) plus one 8-byte load (4j+4, 4j+5, mostly an L1 hit on
// the neighbour's data): 2 load instructions for 4 outputs, a warp covering 512 contiguous bytes of
// a row, stores as float2 pairs. Otherwise the same walk with guarded scalar loads. Grouped
// convolutions (C/G > 1) and R != 3 take a generic loop (correct, not fast).
#define BX ${BX}
#define BY ${BY}
#define VH ${VH}

extern "C" __global__ void __launch_bounds__(BX * BY, 1)
groupconv_dw_vec_sweep(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                       long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const long long ow0 = ((long long)blockIdx.x * BX + threadIdx.x) * 4;
  const long long oh0 = ((long long)blockIdx.y * BY + threadIdx.y) * VH;
  if (ow0 >= OW || oh0 >= OH) return;
  const long long plane = blockIdx.z;
  const long long n = plane / K, k = plane % K;
  const long long CG = C / G, KG = K / G, g = k / KG;
  const int rows = (int)min((long long)VH, OH - oh0);
  const int cols = (int)min(4LL, OW - ow0);
  float* yp = y + plane * OH * OW + oh0 * OW + ow0;

  if (CG == 1 && R == 3) {
    const float* xp = x + ((n * C + g) * H) * W;
    const float* wp = w + k * 9;
    float w0[3], w1[3], w2[3];
#pragma unroll
    for (int s = 0; s < 3; ++s) { w0[s] = __ldg(wp + s); w1[s] = __ldg(wp + 3 + s); w2[s] = __ldg(wp + 6 + s); }
    const long long iw0 = ow0 - P;
    const bool vec = P == 0 && (W & 3) == 0 && iw0 + 6 <= W;  // whole 6-wide window inside the row
    auto load_row = [&](long long ih, float (&v)[6]) {
      const bool rin = ih >= 0 && ih < H;
      const float* p = xp + ih * W + iw0;
      if (vec) {
        if (rin) {
          const float4 a = __ldg(reinterpret_cast<const float4*>(p));
          const float2 b = __ldg(reinterpret_cast<const float2*>(p + 4));
          v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y;
        } else {
#pragma unroll
          for (int s = 0; s < 6; ++s) v[s] = 0.f;
        }
      } else {
#pragma unroll
        for (int s = 0; s < 6; ++s) v[s] = (rin && iw0 + s >= 0 && iw0 + s < W) ? __ldg(p + s) : 0.f;
      }
    };
    const bool pairs = (OW & 1) == 0 && cols == 4;
    float a[6], b[6];
    load_row(oh0 - P, a);
    load_row(oh0 - P + 1, b);
#pragma unroll 2
    for (int i = 0; i < rows; ++i) {
      float c[6];
      load_row(oh0 - P + i + 2, c);
      float o[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float acc = 0.f;
#pragma unroll
        for (int s = 0; s < 3; ++s) {
          acc = fmaf(a[j + s], w0[s], acc);
          acc = fmaf(b[j + s], w1[s], acc);
          acc = fmaf(c[j + s], w2[s], acc);
        }
        o[j] = acc;
      }
      float* q = yp + (long long)i * OW;
      if (pairs) {
        __stcs(reinterpret_cast<float2*>(q), make_float2(o[0], o[1]));
        __stcs(reinterpret_cast<float2*>(q + 2), make_float2(o[2], o[3]));
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < cols) __stcs(q + j, o[j]);
      }
#pragma unroll
      for (int s = 0; s < 6; ++s) { a[s] = b[s]; b[s] = c[s]; }
    }
    return;
  }
  // Generic path: any group size and kernel size.
  for (int i = 0; i < rows; ++i) {
    const long long oh = oh0 + i;
    for (int j = 0; j < cols; ++j) {
      const long long ow = ow0 + j;
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
      __stcs(yp + (long long)i * OW + j, acc);
    }
  }
}
