// y = relu(x W^T + b) / 2 with TF32 mma.sync.m16n8k8 (fp32 accumulation, operands fed as raw fp32 bits:
// the tensor core truncates them to TF32).
// One kernel, two tile configurations selected by the launch plan through blockDim.x:
//   256 threads: block tile 128x256x32, 2x4 warps of 64x64, 4-stage cp.async ring (192 KB), for big problems.
//   128 threads: block tile  64x 64x32, 2x2 warps of 32x32, 4-stage ring (64 KB), for small problems, with
//                split-K across a thread-block cluster (1,1,S): CTA rank r of the cluster takes a contiguous
//                range of k-tiles; partial tiles are summed through distributed shared memory and the
//                bias + ReLU + halving epilogue is fused there. With a cluster of 1 the accumulators are
//                written directly.
// x [M,K] and W [N,K] are K-contiguous (row.col operand layout). Tiles stream global -> shared with 16-byte
// cp.async (zero-filled at the M/N/K edges; a 4-byte path when K % 4 != 0) into a STAGES-deep ring. Shared
// rows are BK floats, chunk c of row r stored at chunk c ^ (r & 7) (XOR swizzle): conflict-free cp.async
// stores and ldmatrix loads. Fragments come from ldmatrix.x4.b16 and are double buffered across k-steps.
#define BK 32
#define KS (BK / 8)           // k-steps per stage
#define CHR (BK / 4)          // 16-byte chunks per shared row (8)
#define ROW_BYTES (BK * 4)    // 128

__device__ __forceinline__ int swz(int r) { return r & 7; }
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }

__device__ __forceinline__ void cp_async16(unsigned s, const float* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned s, const float* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void mma_tf32(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Cluster helpers (sm_90).
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_nctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned mapa_shared(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void ld_cluster_v4(unsigned addr, float& a, float& b, float& c, float& d) {
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(a), "=f"(b), "=f"(c), "=f"(d) : "r"(addr) : "memory");
}

// One ROWS x BK tile of a K-major matrix into the stage at shared address S (swizzled).
// Thread copies rows r0 + i*RSTEP (i < NCP), chunk c; g points at element (row0 + r0, c*4) of G.
template <int NCP, int RSTEP>
__device__ __forceinline__ void load_tile(unsigned S, const float* __restrict__ G, const float* g, long long rows_left,
                                          long long K, long long k0, int r0, int c, unsigned dst, bool fast, bool kvec) {
  const long long rstride = (long long)RSTEP * K;
  const float* p = g + k0;
  if (fast) {  // all rows in range, whole BK slice inside K, 16-byte aligned rows
#pragma unroll
    for (int i = 0; i < NCP; ++i) {
      cp_async16(S + dst + i * RSTEP * ROW_BYTES, p, 16);
      p += rstride;
    }
  } else if (kvec) {
    const long long kl = K - k0 - c * 4;  // floats of this chunk inside K
    const int kb = kl >= 4 ? 16 : kl > 0 ? (int)kl * 4 : 0;
#pragma unroll
    for (int i = 0; i < NCP; ++i) {
      const bool in = (long long)(r0 + i * RSTEP) < rows_left && kb > 0;
      cp_async16(S + dst + i * RSTEP * ROW_BYTES, in ? p : G, in ? kb : 0);
      p += rstride;
    }
  } else {
#pragma unroll 1
    for (int i = 0; i < NCP; ++i) {
      const bool rin = (long long)(r0 + i * RSTEP) < rows_left;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool in = rin && k0 + c * 4 + e < K;
        cp_async4(S + dst + i * RSTEP * ROW_BYTES + 4 * e, in ? p + e : G, in ? 4 : 0);
      }
      p += rstride;
    }
  }
}

template <int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void lrd_body(const float* __restrict__ x, const float* __restrict__ W,
                                         const float* __restrict__ bias, float* __restrict__ y,
                                         long long M, long long N, long long K, unsigned sbase, float* smemf) {
  constexpr int THREADS = 32 * WM * WN;
  constexpr int WTM = BM / WM, WTN = BN / WN;
  constexpr int MT = WTM / 16, NT = WTN / 8;
  constexpr int RSTEP = THREADS / CHR;
  constexpr int A_CP = BM * CHR / THREADS, B_CP = BN * CHR / THREADS;
  constexpr int A_BYTES = BM * ROW_BYTES;
  constexpr int STAGE_BYTES = (BM + BN) * ROW_BYTES;
  constexpr int RS = BN + 8;  // floats per row of the split-K reduction buffer
  static_assert(NT % 2 == 0, "NT must be even");
  static_assert(RSTEP % 8 == 0, "swizzle period");
  static_assert(A_CP * THREADS == BM * CHR && B_CP * THREADS == BN * CHR, "copy map");
  static_assert(BM * RS * 4 <= STAGES * STAGE_BYTES, "reduction buffer");

  const unsigned send = sbase + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int wm = warp / WN, wn = warp % WN;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const bool kvec = (K & 3) == 0;
  const bool interior = kvec && m0 + BM <= M && n0 + BN <= N;

  // Split-K across the cluster (cluster of 1: the whole K range).
  const int crank = (int)cluster_ctarank(), cn = (int)cluster_nctarank();
  const int nk_all = (int)((K + BK - 1) / BK);
  const int kper = (nk_all + cn - 1) / cn;
  const int kt0 = imin(nk_all, crank * kper);
  const int nk = imin(nk_all, kt0 + kper) - kt0;
  const long long kbase = (long long)kt0 * BK;

  // Global -> shared copy map: row r0 + i*RSTEP, chunk cc (same swizzle for every i: RSTEP % 8 == 0).
  const int r0 = tid / CHR, cc = tid % CHR;
  const unsigned dst = (unsigned)(r0 * ROW_BYTES + ((cc ^ swz(r0)) << 4));
  const float* ga = x + (m0 + r0) * K + cc * 4;
  const float* gb = W + (n0 + r0) * K + cc * 4;
  const long long mleft = M - m0, nleft = N - n0;

  // ldmatrix lane addresses (relative to the stage base) for each k-step.
  const int a_row = wm * WTM + (lane & 7) + ((lane >> 3) & 1) * 8, a_hi = lane >> 4;
  const int b_row = wn * WTN + (lane & 7) + (lane >> 4) * 8, b_hi = (lane >> 3) & 1;
  unsigned aoff[KS], boff[KS];
#pragma unroll
  for (int s = 0; s < KS; ++s) {
    aoff[s] = (unsigned)(a_row * ROW_BYTES + (((2 * s + a_hi) ^ swz(a_row)) << 4));
    boff[s] = (unsigned)(A_BYTES + b_row * ROW_BYTES + (((2 * s + b_hi) ^ swz(b_row)) << 4));
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  // Prologue: stages 0 .. STAGES-2.
  unsigned ws = sbase;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) {
      const long long k0 = kbase + (long long)s * BK;
      const bool fast = interior && k0 + BK <= K;
      load_tile<A_CP, RSTEP>(ws, x, ga, mleft, K, k0, r0, cc, dst, fast, kvec);
      load_tile<B_CP, RSTEP>(ws + A_BYTES, W, gb, nleft, K, k0, r0, cc, dst, fast, kvec);
    }
    cp_async_commit();
    ws += STAGE_BYTES;
  }
  long long kload = kbase + (long long)(STAGES - 1) * BK;

  unsigned fa[2][MT][4], fb[2][NT][2];
  unsigned rs = sbase;
  cp_async_wait<STAGES - 2>();
  __syncthreads();
#pragma unroll
  for (int i = 0; i < MT; ++i) ldsm_x4(fa[0][i], rs + aoff[0] + i * 16 * ROW_BYTES);
#pragma unroll
  for (int j = 0; j < NT / 2; ++j) {
    unsigned r[4];
    ldsm_x4(r, rs + boff[0] + j * 16 * ROW_BYTES);
    fb[0][2 * j][0] = r[0]; fb[0][2 * j][1] = r[1]; fb[0][2 * j + 1][0] = r[2]; fb[0][2 * j + 1][1] = r[3];
  }

#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int cur = s & 1, nxt = cur ^ 1;
      if (s == KS - 1) {
        // Next stage must have landed (own copies: wait; everyone's: barrier). The barrier also ends every
        // warp's reads of the stage that the copy issued at s == 0 of kt+1 overwrites.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        rs += STAGE_BYTES;
        if (rs == send) rs = sbase;
      }
      {
        const int sn = (s + 1) % KS;
#pragma unroll
        for (int i = 0; i < MT; ++i) ldsm_x4(fa[nxt][i], rs + aoff[sn] + i * 16 * ROW_BYTES);
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
          unsigned r[4];
          ldsm_x4(r, rs + boff[sn] + j * 16 * ROW_BYTES);
          fb[nxt][2 * j][0] = r[0]; fb[nxt][2 * j][1] = r[1];
          fb[nxt][2 * j + 1][0] = r[2]; fb[nxt][2 * j + 1][1] = r[3];
        }
      }
      if (s == 0) {
        // Tile kt + STAGES - 1 into the stage read during kt - 1 (all warps passed the barrier since).
        if (kt + STAGES - 1 < nk) {
          const bool fast = interior && kload + BK <= K;
          load_tile<A_CP, RSTEP>(ws, x, ga, mleft, K, kload, r0, cc, dst, fast, kvec);
          load_tile<B_CP, RSTEP>(ws + A_BYTES, W, gb, nleft, K, kload, r0, cc, dst, fast, kvec);
        }
        cp_async_commit();
        kload += BK;
        ws += STAGE_BYTES;
        if (ws == send) ws = sbase;
      }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int jj = (i & 1) ? NT - 1 - j : j;
          mma_tf32(acc[i][jj], fa[cur][i][0], fa[cur][i][1], fa[cur][i][2], fa[cur][i][3],
                   fb[cur][jj][0], fb[cur][jj][1]);
        }
      }
    }
  }
  cp_async_wait<0>();

  const int g = lane >> 2, t = lane & 3;
  if (cn == 1) {
    // Direct epilogue: acc[i][j] = rows (g, g+8) x cols (2t, 2t+1) of the 16x8 tile (i, j).
    const bool nvec = (N & 1) == 0;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const long long n = n0 + wn * WTN + j * 8 + 2 * t;
      float b0 = 0.f, b1 = 0.f;
      if (nvec && n + 1 < N) {
        const float2 bv = __ldg(reinterpret_cast<const float2*>(bias + n));
        b0 = bv.x; b1 = bv.y;
      } else {
        if (n < N) b0 = __ldg(bias + n);
        if (n + 1 < N) b1 = __ldg(bias + n + 1);
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long m = m0 + wm * WTM + i * 16 + g + 8 * h;
          if (m >= M) continue;
          const float v0 = fmaxf(acc[i][j][2 * h] + b0, 0.f) * 0.5f;
          const float v1 = fmaxf(acc[i][j][2 * h + 1] + b1, 0.f) * 0.5f;
          if (nvec && n + 1 < N) {
            *reinterpret_cast<float2*>(y + m * N + n) = make_float2(v0, v1);
          } else {
            if (n < N) y[m * N + n] = v0;
            if (n + 1 < N) y[m * N + n + 1] = v1;
          }
        }
    }
  } else {
    // Split-K: park the partial tile in this CTA's shared memory (the ring is free once every warp is
    // past its last ldmatrix and no cp.async is in flight), then CTA rank r reduces a 1/cn share of the
    // tile over all cluster CTAs through DSMEM and runs the fused epilogue.
    __syncthreads();
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = wm * WTM + i * 16 + g + 8 * h;
          const int col = wn * WTN + j * 8 + 2 * t;
          *reinterpret_cast<float2*>(smemf + row * RS + col) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
    cluster_sync_all();
    constexpr int C4 = BN / 4;
    const bool n4 = (N & 3) == 0;
    for (int f = crank * THREADS + tid; f < BM * C4; f += cn * THREADS) {
      const int row = f / C4, c4 = f - (f / C4) * C4;
      const long long m = m0 + row, n = n0 + 4 * c4;
      if (m < M && n < N) {
        const unsigned la = sbase + (unsigned)((row * RS + 4 * c4) * 4);
        float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
        for (int q = 0; q < cn; ++q) {
          float v0, v1, v2, v3;
          ld_cluster_v4(mapa_shared(la, (unsigned)q), v0, v1, v2, v3);
          s0 += v0; s1 += v1; s2 += v2; s3 += v3;
        }
        float* yp = y + m * N + n;
        if (n4) {  // n % 4 == 0 and N % 4 == 0: n + 3 < N, 16-byte aligned
          const float4 bv = __ldg(reinterpret_cast<const float4*>(bias + n));
          *reinterpret_cast<float4*>(yp) =
              make_float4(fmaxf(s0 + bv.x, 0.f) * 0.5f, fmaxf(s1 + bv.y, 0.f) * 0.5f,
                          fmaxf(s2 + bv.z, 0.f) * 0.5f, fmaxf(s3 + bv.w, 0.f) * 0.5f);
        } else {
          yp[0] = fmaxf(s0 + __ldg(bias + n), 0.f) * 0.5f;
          if (n + 1 < N) yp[1] = fmaxf(s1 + __ldg(bias + n + 1), 0.f) * 0.5f;
          if (n + 2 < N) yp[2] = fmaxf(s2 + __ldg(bias + n + 2), 0.f) * 0.5f;
          if (n + 3 < N) yp[3] = fmaxf(s3 + __ldg(bias + n + 3), 0.f) * 0.5f;
        }
      }
    }
    // No CTA may leave while others still read its shared memory.
    cluster_sync_all();
  }
}

// blockDim.x == 256: 128x256 tiles, grid (ceil_div(M,128), ceil_div(N,256), 1), dynamic smem 196608.
// blockDim.x == 128: 64x64 tiles, grid (ceil_div(M,64), ceil_div(N,64), S), cluster (1,1,S), smem 65536.
extern "C" __global__ void __launch_bounds__(256, 1)
lrd_tf32_v3(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
            float* __restrict__ y, long long M, long long N, long long K) {
  extern __shared__ float4 smem4[];
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem4);
  float* smemf = reinterpret_cast<float*>(smem4);
  if (blockDim.x == 256) {
    lrd_body<128, 256, 2, 4, 4>(x, W, bias, y, M, N, K, sbase, smemf);
  } else {
    lrd_body<64, 64, 2, 2, 4>(x, W, bias, y, M, N, K, sbase, smemf);
  }
}
