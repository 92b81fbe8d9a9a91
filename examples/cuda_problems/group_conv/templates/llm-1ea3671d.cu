// Grouped conv2d (NCHW, stride 1, zero padding, no bias), strict fp32, one kernel with three uniform paths.
//  * C/G == 8 && K/G == 8 && R == 3 && 0 <= P <= 4 (ResNeXt layer): block = (n, g, 28x56 output tile), all 8
//    output channels. The 8 input channels' (30 x 64) halo tiles are staged in shared memory by cp.async in four
//    commit groups (2 channels each) so compute on early channels overlaps the remaining loads. Thread = 2 adjacent
//    columns x 4 output channels x a 7-row sweep; per input channel it reads each of its 9 input rows once (4
//    values), keeps the 36 weights it needs in registers (9 broadcast LDS.128), and issues 504 FMAs.
//  * C/G == 1 && K/G == 1 && R == 3 (depthwise): column sweep without shared memory; each thread owns one output
//    column and sweeps 7 rows with a rolling window of 3 input rows in registers, 9 weights in registers.
//  * anything else: one output per thread, grid-stride.
#define NT 224

// ---- fast grouped (8 -> 8) tile geometry
#define FT_TH 28
#define FT_TW 56
#define FT_SH 30            // FT_TH + 2
#define FT_SW 72            // smem row stride (>= 64, == 8 mod 32: conflict-free across row segments)
#define FT_CS (FT_SH * FT_SW)
#define FT_TILE (8 * FT_CS)  // floats; weights (576 floats) follow

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
__device__ __forceinline__ void cp16(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp4(unsigned dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int NW>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(NW) : "memory");
}
__device__ __forceinline__ void st_cs(float* p, float v) {
  asm volatile("st.global.cs.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void st_cs2(float* p, float a, float b) {
  asm volatile("st.global.cs.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
}

// Stage input channels 2q, 2q+1 of the group: tile rows ih0 + [0,30), columns iw0 + [0,64).
__device__ __forceinline__ void ft_stage(const float* __restrict__ xg, unsigned tile_s, int q, bool vec, long long H,
                                         long long W, long long ih0, long long iw0, int tid) {
  if (vec) {
    for (int idx = tid; idx < 2 * FT_SH * 16; idx += NT) {
      const int cl = idx >= FT_SH * 16 ? 1 : 0;
      const int rem = idx - cl * (FT_SH * 16);
      const int row = rem >> 4, m = rem & 15;
      const int ci = 2 * q + cl;
      const long long ih = ih0 + row, iw = iw0 + 4 * m;
      const bool ok = (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
      const float* src = ok ? (xg + ((long long)ci * H + ih) * W + iw) : xg;
      cp16(tile_s + (unsigned)((ci * FT_CS + row * FT_SW + 4 * m) * 4), src, ok ? 16 : 0);
    }
  } else {
    for (int idx = tid; idx < 2 * FT_SH * 64; idx += NT) {
      const int cl = idx >= FT_SH * 64 ? 1 : 0;
      const int rem = idx - cl * (FT_SH * 64);
      const int row = rem >> 6, c = rem & 63;
      const int ci = 2 * q + cl;
      const long long ih = ih0 + row, iw = iw0 + c;
      const bool ok = (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
      const float* src = ok ? (xg + ((long long)ci * H + ih) * W + iw) : xg;
      cp4(tile_s + (unsigned)((ci * FT_CS + row * FT_SW + c) * 4), src, ok ? 4 : 0);
    }
  }
}

// One input channel: tb points at the thread's first tile row / first tap column, wsv at its weight float4s.
template <bool ODD>
__device__ __forceinline__ void ft_channel(const float* __restrict__ tb, const float4* __restrict__ wsv,
                                           float (&acc)[7][2][4]) {
  float4 wv[9];
#pragma unroll
  for (int t = 0; t < 9; ++t) wv[t] = wsv[2 * t];
#pragma unroll
  for (int rr = 0; rr < 9; ++rr) {
    const float* rp = tb + rr * FT_SW;
    float v[4];
    if constexpr (ODD) {
      v[0] = rp[0];
      const float2 mm = *reinterpret_cast<const float2*>(rp + 1);
      v[1] = mm.x;
      v[2] = mm.y;
      v[3] = rp[3];
    } else {
      const float2 a = *reinterpret_cast<const float2*>(rp);
      const float2 b = *reinterpret_cast<const float2*>(rp + 2);
      v[0] = a.x;
      v[1] = a.y;
      v[2] = b.x;
      v[3] = b.y;
    }
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      const int r = rr - i;
      if (r >= 0 && r < 3) {
#pragma unroll
        for (int s = 0; s < 3; ++s) {
          const float4 wq = wv[r * 3 + s];
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float xv = v[j + s];
            acc[i][j][0] = fmaf(xv, wq.x, acc[i][j][0]);
            acc[i][j][1] = fmaf(xv, wq.y, acc[i][j][1]);
            acc[i][j][2] = fmaf(xv, wq.z, acc[i][j][2]);
            acc[i][j][3] = fmaf(xv, wq.w, acc[i][j][3]);
          }
        }
      }
    }
  }
}

template <bool ODD>
__device__ __forceinline__ void fast_path(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ y, long long N, long long C, long long H, long long W,
                                          long long K, long long G, long long P, long long OH, long long OW,
                                          float* smem) {
  float* tile = smem;
  float* ws = smem + FT_TILE;
  const int tid = threadIdx.x;
  const int kh = tid & 1, p = tid >> 1, tx = p % 28, ty = p / 28;
  const long long nTH = (OH + FT_TH - 1) / FT_TH, nTW = (OW + FT_TW - 1) / FT_TW;
  const long long units = N * G * nTH * nTW;
  const bool vec = (W & 3) == 0;
  const unsigned tile_s = smem_u32(tile);
  const int cb = 2 * tx + 4 - (int)P;  // tile column of the thread's first tap (tile col 0 <-> iw = ow0 - 4)
  const float* tb = tile + ty * 7 * FT_SW + cb;
  const float4* ws4 = reinterpret_cast<const float4*>(ws) + kh;
  const bool ev = (OW & 1) == 0;

  for (long long u = blockIdx.x; u < units; u += gridDim.x) {
    const long long tw = u % nTW;
    long long t2 = u / nTW;
    const long long th = t2 % nTH;
    t2 /= nTH;
    const long long g = t2 % G, n = t2 / G;
    const long long oh0 = th * FT_TH, ow0 = tw * FT_TW;

    __syncthreads();  // previous unit's shared reads are finished
    for (int idx = tid; idx < 576; idx += NT) {
      const int kk = idx / 72, rem = idx - kk * 72;  // rem = ci*9 + r*3 + s
      ws[rem * 8 + kk] = __ldg(w + g * 576 + idx);
    }
    const float* xg = x + ((n * C + g * 8) * H) * W;
    const long long ih0 = oh0 - P, iw0 = ow0 - 4;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      ft_stage(xg, tile_s, q, vec, H, W, ih0, iw0, tid);
      cp_commit();
    }

    float acc[7][2][4];
#pragma unroll
    for (int i = 0; i < 7; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) acc[i][j][kk] = 0.f;

#pragma unroll 1
    for (int ci = 0; ci < 8; ++ci) {
      if ((ci & 1) == 0) {
        const int q = ci >> 1;
        if (q == 0) cp_wait<3>();
        else if (q == 1) cp_wait<2>();
        else if (q == 2) cp_wait<1>();
        else cp_wait<0>();
        __syncthreads();
      }
      ft_channel<ODD>(tb + ci * FT_CS, ws4 + ci * 18, acc);
    }

    const long long owa = ow0 + 2 * tx;
#pragma unroll
    for (int i = 0; i < 7; ++i) {
      const long long oh = oh0 + ty * 7 + i;
      if (oh < OH) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
          const long long k = g * 8 + kh * 4 + kk;
          float* yp = y + ((n * K + k) * OH + oh) * OW + owa;
          if (ev && owa + 1 < OW) {
            st_cs2(yp, acc[i][0][kk], acc[i][1][kk]);
          } else {
            if (owa < OW) st_cs(yp, acc[i][0][kk]);
            if (owa + 1 < OW) st_cs(yp + 1, acc[i][1][kk]);
          }
        }
      }
    }
  }
}

// Depthwise (C == K == G), R = 3: column sweep, rolling 3-row window in registers, no shared memory.
__device__ __forceinline__ void dw_path(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, long long N, long long H, long long W, long long K,
                                        long long P, long long OH, long long OW) {
  const int tid = threadIdx.x;
  const int c = tid % 56, seg = tid / 56;
  const long long nTH = (OH + 27) / 28, nTW = (OW + 55) / 56;
  const long long units = N * K * nTH * nTW;
  for (long long u = blockIdx.x; u < units; u += gridDim.x) {
    const long long tw = u % nTW;
    const long long t2 = u / nTW;
    const long long th = t2 % nTH;
    const long long plane = t2 / nTH;  // n*K + k == n*C + c
    const long long k = plane % K;
    const long long ow = tw * 56 + c, ohs = th * 28 + seg * 7;
    if (ow >= OW || ohs >= OH) continue;
    float wr[9];
#pragma unroll
    for (int t = 0; t < 9; ++t) wr[t] = __ldg(w + k * 9 + t);
    const float* xp = x + plane * H * W;
    float acc[7];
#pragma unroll
    for (int i = 0; i < 7; ++i) acc[i] = 0.f;
#pragma unroll
    for (int rr = 0; rr < 9; ++rr) {
      const long long ih = ohs - P + rr;
      const bool rin = ih >= 0 && ih < H;
      float v[3];
#pragma unroll
      for (int s = 0; s < 3; ++s) {
        const long long iw = ow - P + s;
        v[s] = (rin && iw >= 0 && iw < W) ? __ldg(xp + ih * W + iw) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < 7; ++i) {
        const int r = rr - i;
        if (r >= 0 && r < 3) {
          acc[i] = fmaf(v[0], wr[r * 3 + 0], acc[i]);
          acc[i] = fmaf(v[1], wr[r * 3 + 1], acc[i]);
          acc[i] = fmaf(v[2], wr[r * 3 + 2], acc[i]);
        }
      }
    }
    float* yp = y + plane * OH * OW + ow;
#pragma unroll
    for (int i = 0; i < 7; ++i)
      if (ohs + i < OH) st_cs(yp + (ohs + i) * OW, acc[i]);
  }
}

// Anything else: one output per thread, grid-stride.
__device__ __forceinline__ void generic_path(const float* __restrict__ x, const float* __restrict__ w,
                                             float* __restrict__ y, long long N, long long C, long long H,
                                             long long W, long long K, long long G, long long R, long long P,
                                             long long OH, long long OW) {
  const long long total = N * K * OH * OW;
  const long long CG = C / G, KG = K / G;
  for (long long i = (long long)blockIdx.x * NT + threadIdx.x; i < total; i += (long long)gridDim.x * NT) {
    const long long ow = i % OW, oh = (i / OW) % OH, k = (i / (OW * OH)) % K, n = i / (OW * OH * K);
    const long long g = k / KG;
    float s = 0.f;
    for (long long ci = 0; ci < CG; ++ci) {
      const float* xp = x + (n * C + g * CG + ci) * H * W;
      const float* wp = w + (k * CG + ci) * R * R;
      for (long long r = 0; r < R; ++r) {
        const long long ih = oh - P + r;
        if (ih < 0 || ih >= H) continue;
        for (long long q = 0; q < R; ++q) {
          const long long iw = ow - P + q;
          if (iw < 0 || iw >= W) continue;
          s = fmaf(__ldg(xp + ih * W + iw), __ldg(wp + r * R + q), s);
        }
      }
    }
    y[i] = s;
  }
}

// grid: max(N*G*ceil_div(OH,28)*ceil_div(OW,56), min(ceil_div(N*K*OH*OW,224),1024)); block 224; smem 71424 bytes.
extern "C" __global__ void __launch_bounds__(NT, 2)
groupconv_colsweep(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                   long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const long long OH = H + 2 * P - R + 1, OW = W + 2 * P - R + 1;
  const long long CG = C / G, KG = K / G;
  if (R == 3 && CG == 8 && KG == 8 && P >= 0 && P <= 4) {
    if (P & 1) fast_path<true>(x, w, y, N, C, H, W, K, G, P, OH, OW, smem);
    else fast_path<false>(x, w, y, N, C, H, W, K, G, P, OH, OW, smem);
  } else if (R == 3 && CG == 1 && KG == 1) {
    dw_path(x, w, y, N, H, W, K, P, OH, OW);
  } else {
    generic_path(x, w, y, N, C, H, W, K, G, R, P, OH, OW);
  }
}
