// Grouped/depthwise conv2d (NCHW, stride 1, zero padding), one output plane tile per block: the
// block's (TH + R - 1) x (TW + R - 1) input tile with halo is staged in shared memory (coalesced
// rows, zero padding applied while loading), and each thread computes VH rows x VW columns of the
// TH x TW output tile. Columns are thread-strided (ow = ow0 + tx + j*BX) so every store
// instruction writes 32 consecutive floats; rows slide a window down the tile so each shared
// value feeds up to R rows. The depthwise case (C/G = 1) loads one input channel per block; other
// group sizes loop over the group's C/G input channels. R = 3 is compiled with all loops unrolled
// and the 9 weights in registers; any other R takes a generic path.
#define BX ${BX}
#define BY ${BY}
#define VW ${VW}
#define VH ${VH}
#define TW (BX * VW)
#define TH (BY * VH)

template <int RR>
__device__ __forceinline__ void conv_tile(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ y, long long C, long long H, long long W, long long K,
                                          long long G, int Rrt, long long P, float* tile) {
  const int R = RR > 0 ? RR : Rrt;
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const int SW = TW + R - 1, SH = TH + R - 1;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long plane = blockIdx.z;
  const long long n = plane / K, k = plane % K;
  const long long CG = C / G, KG = K / G, g = k / KG;
  const long long oh0 = (long long)blockIdx.y * TH, ow0 = (long long)blockIdx.x * TW;

  float acc[VH][VW];
#pragma unroll
  for (int i = 0; i < VH; ++i)
#pragma unroll
    for (int j = 0; j < VW; ++j) acc[i][j] = 0.f;

  for (long long ci = 0; ci < CG; ++ci) {
    const float* xp = x + ((n * C + g * CG + ci) * H) * W;
    const float* wp = w + (k * CG + ci) * R * R;
    __syncthreads();  // the previous channel's tile is no longer read
    for (int row = ty; row < SH; row += BY) {
      const long long ih = oh0 - P + row;
      const bool rin = ih >= 0 && ih < H;
      for (int col = tx; col < SW; col += BX) {
        const long long iw = ow0 - P + col;
        tile[row * SW + col] = (rin && iw >= 0 && iw < W) ? __ldg(xp + ih * W + iw) : 0.f;
      }
    }
    __syncthreads();
    if (RR > 0) {
      float wr[RR > 0 ? RR * RR : 1];
#pragma unroll
      for (int q = 0; q < RR * RR; ++q) wr[q] = __ldg(wp + q);
#pragma unroll
      for (int j = 0; j < VW; ++j) {
        const int col = tx + j * BX;
#pragma unroll
        for (int rr = 0; rr < VH + RR - 1; ++rr) {
          float v[RR > 0 ? RR : 1];
#pragma unroll
          for (int s = 0; s < RR; ++s) v[s] = tile[(ty * VH + rr) * SW + col + s];
#pragma unroll
          for (int i = 0; i < VH; ++i) {
            const int r = rr - i;
            if (r >= 0 && r < RR) {
#pragma unroll
              for (int s = 0; s < RR; ++s) acc[i][j] = fmaf(v[s], wr[r * RR + s], acc[i][j]);
            }
          }
        }
      }
    } else {
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < R; ++s) {
          const float wv = __ldg(wp + r * R + s);
#pragma unroll
          for (int i = 0; i < VH; ++i)
#pragma unroll
            for (int j = 0; j < VW; ++j) acc[i][j] = fmaf(tile[(ty * VH + i + r) * SW + tx + j * BX + s], wv, acc[i][j]);
        }
    }
  }
  float* yp = y + plane * OH * OW;
#pragma unroll
  for (int i = 0; i < VH; ++i) {
    const long long oh = oh0 + ty * VH + i;
    if (oh >= OH) continue;
#pragma unroll
    for (int j = 0; j < VW; ++j) {
      const long long ow = ow0 + tx + j * BX;
      if (ow < OW) __stcs(yp + oh * OW + ow, acc[i][j]);
    }
  }
}

// grid: (ceil_div(OW, TW), ceil_div(OH, TH), N*K); block (BX, BY); smem 4*(TH+R-1)*(TW+R-1) bytes.
extern "C" __global__ void __launch_bounds__(BX * BY, 1)
groupconv_dw_smem_tile(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                       long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  extern __shared__ float4 smem4[];
  float* tile = reinterpret_cast<float*>(smem4);
  if (R == 3) conv_tile<3>(x, w, y, C, H, W, K, G, 3, P, tile);
  else conv_tile<0>(x, w, y, C, H, W, K, G, (int)R, P, tile);
}
