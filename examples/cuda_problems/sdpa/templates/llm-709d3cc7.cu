// Scaled dot-product attention, strict fp32 (FFMA only).
//
// D <= 128: ONE fused flash-attention launch (sdpa_main). A block of 128 threads owns 64 query rows of
// one (b, h) and streams 64-key K/V tiles through shared memory with cp.async (K of tile j+1 lands during
// P.V of tile j, V of tile j+1 during Q.K^T of tile j+1). Scores (8 rows x 4 keys per thread), an online
// softmax (running max reduced over the 16 lanes that share a row, per-thread partial row sums reduced
// once at the end) and the 64 x 128 output accumulator (8 x 8 per thread) stay in registers; P goes
// through a small shared tile. No S x S scratch traffic. Shared tiles are XOR-swizzled (Q by row bit 2,
// K by row & 7, P by key & 7) so every float4 access is conflict-free without padding: 112 KB per block,
// two blocks per SM.
// D > 128: unfused path: scores SGEMM (split over D into slices when the tile grid is small), a row
// softmax that first sums the slices, then O = P V. Launches a shape does not need collapse to a single
// block that exits at once.
#define BM 128
#define BN 64
#define BK 16
#define TM 8
#define TN 8
#define SMB 128

#define NTX (BN / TN)
#define NTY (BM / TM)
#define THREADS (NTX * NTY)
#define SUBM (TM / 4)
#define SUBN (TN / 4)
#define LDA_S BM
#define LDB_S BN
#define SWZ(k) ((((k) >> 2) & (BK / 4 - 1)) * (128 / BK))
#define LA (BM * BK / 4 / THREADS)
#define LB (BN * BK / 4 / THREADS)

#define L2E 1.4426950408889634f
#define NEG_BIG (-3.0e38f)

// fused path
#define FBM 64
#define FBN 64
#define FDP 128
#define QS_OFF 0
#define KS_OFF (FBM * FDP)
#define VS_OFF (KS_OFF + FBN * FDP)
#define PS_OFF (VS_OFF + FBN * FDP)

static_assert(THREADS == 128, "fused path assumes 128 threads per block");

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned r;
  asm("{ .reg .u64 smp; cvta.to.shared.u64 smp, %1; cvt.u32.u64 %0, smp; }" : "=r"(r) : "l"(p));
  return r;
}
__device__ __forceinline__ void cp_async16(unsigned dst, const float* src, unsigned bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned dst, const float* src, unsigned bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ------------------------------------------------------------------------------------------------
// Unfused GEMM core (D > 128).
// K-major operand (rows r, K contiguous, leading dimension ld): ROWS_T x BK tile as float4 along K.
template <int ROWS_T, int L>
__device__ __forceinline__ void load_kmajor(const float* __restrict__ G, long long ld, long long nrows, long long K,
                                            long long r0, long long k0, bool full, float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int kq = f % (BK / 4), row = f / (BK / 4);
    const long long gr = r0 + row, gk = k0 + kq * 4;
    if (full) {
      p[i] = __ldg(reinterpret_cast<const float4*>(G + gr * ld + gk));
    } else {
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = (gr < nrows && gk + j < K) ? __ldg(G + gr * ld + gk + j) : 0.f;
      p[i] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}
template <int ROWS_T, int LD, int L>
__device__ __forceinline__ void store_kmajor(float* __restrict__ S, const float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int kq = f % (BK / 4), row = f / (BK / 4);
    const int col = row ^ SWZ(kq * 4);
    S[(kq * 4 + 0) * LD + col] = p[i].x;
    S[(kq * 4 + 1) * LD + col] = p[i].y;
    S[(kq * 4 + 2) * LD + col] = p[i].z;
    S[(kq * 4 + 3) * LD + col] = p[i].w;
  }
}
// N-major operand (B[k][n], leading dimension ld): BK x BN tile as float4 along N, stored as is.
template <int L>
__device__ __forceinline__ void load_nmajor(const float* __restrict__ G, long long ld, long long N, long long K,
                                            long long n0, long long k0, bool full, float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int k = f / (BN / 4), nq = f % (BN / 4);
    const long long gk = k0 + k, gn = n0 + nq * 4;
    if (full) {
      p[i] = __ldg(reinterpret_cast<const float4*>(G + gk * ld + gn));
    } else {
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = (gk < K && gn + j < N) ? __ldg(G + gk * ld + gn + j) : 0.f;
      p[i] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}
template <int L>
__device__ __forceinline__ void store_nmajor(float* __restrict__ S, const float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int k = f / (BN / 4), nq = f % (BN / 4);
    *reinterpret_cast<float4*>(S + k * LDB_S + ((nq * 4) ^ SWZ(k))) = p[i];
  }
}

// C[M][N] (row stride N) = alpha * A[M][0:K] . op(B); A K-major with stride lda; B_KMAJOR: B is [N][ldb],
// else [K][ldb]. One block tile.
template <bool B_KMAJOR>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, long long lda, const float* __restrict__ Bm,
                                           long long ldb, float* __restrict__ Cm, long long M, long long N,
                                           long long K, float alpha, float* smem) {
  float* As = smem;                   // [2][BK][LDA_S]
  float* Bs = smem + 2 * BK * LDA_S;  // [2][BK][LDB_S]
  const int tid = threadIdx.x;
  const int tx = tid % NTX, ty = tid / NTX;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const int nk = (int)((K + BK - 1) / BK);
  const bool avec = (lda & 3) == 0;
  const bool bvec = (ldb & 3) == 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  float4 pa[LA], pb[LB];
  auto load = [&](long long k0) {
    const bool kfull = k0 + BK <= K;
    load_kmajor<BM, LA>(A, lda, M, K, m0, k0, avec && kfull && m0 + BM <= M, pa);
    if (B_KMAJOR) load_kmajor<BN, LB>(Bm, ldb, N, K, n0, k0, bvec && kfull && n0 + BN <= N, pb);
    else load_nmajor<LB>(Bm, ldb, N, K, n0, k0, bvec && kfull && n0 + BN <= N, pb);
  };
  auto store = [&](int buf) {
    store_kmajor<BM, LDA_S, LA>(As + buf * BK * LDA_S, pa);
    if (B_KMAJOR) store_kmajor<BN, LDB_S, LB>(Bs + buf * BK * LDB_S, pb);
    else store_nmajor<LB>(Bs + buf * BK * LDB_S, pb);
  };
  if (nk > 0) { load(0); store(0); }
  __syncthreads();
  for (int kt = 0; kt < nk; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) load((long long)(kt + 1) * BK);
    const float* a_s = As + cur * BK * LDA_S;
    const float* b_s = Bs + cur * BK * LDB_S;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int s = 0; s < SUBM; ++s) {
        const float4 t = *reinterpret_cast<const float4*>(a_s + k * LDA_S + ((s * (BM / SUBM) + ty * 4) ^ SWZ(k)));
        a[4 * s] = t.x; a[4 * s + 1] = t.y; a[4 * s + 2] = t.z; a[4 * s + 3] = t.w;
      }
#pragma unroll
      for (int s = 0; s < SUBN; ++s) {
        const float4 t = *reinterpret_cast<const float4*>(b_s + k * LDB_S + ((s * (BN / SUBN) + tx * 4) ^ SWZ(k)));
        b[4 * s] = t.x; b[4 * s + 1] = t.y; b[4 * s + 2] = t.z; b[4 * s + 3] = t.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) store(cur ^ 1);
    __syncthreads();
  }
  const bool nvec = (N & 3) == 0;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long m = m0 + (i / 4) * (BM / SUBM) + ty * 4 + (i % 4);
    if (m >= M) continue;
#pragma unroll
    for (int s = 0; s < SUBN; ++s) {
      const long long n = n0 + s * (BN / SUBN) + tx * 4;
      const float v0 = acc[i][4 * s] * alpha, v1 = acc[i][4 * s + 1] * alpha;
      const float v2 = acc[i][4 * s + 2] * alpha, v3 = acc[i][4 * s + 3] * alpha;
      if (nvec && n + 3 < N) {
        *reinterpret_cast<float4*>(Cm + m * N + n) = make_float4(v0, v1, v2, v3);
      } else {
        if (n < N) Cm[m * N + n] = v0;
        if (n + 1 < N) Cm[m * N + n + 1] = v1;
        if (n + 2 < N) Cm[m * N + n + 2] = v2;
        if (n + 3 < N) Cm[m * N + n + 3] = v3;
      }
    }
  }
}

// Number of D-slices of the scores GEMM (must match the plan's expression).
__device__ __forceinline__ long long score_splits(long long B, long long H, long long S, long long D) {
  const long long tiles = ((S + BM - 1) / BM) * ((S + BN - 1) / BN) * B * H;
  const long long a = (D + 127) / 128, b = (264 + tiles - 1) / tiles;
  const long long n = a < b ? a : b;
  return n < 1 ? 1 : n;
}

// ------------------------------------------------------------------------------------------------
// Fused path (D <= 128).
// Rows [r0, r0+64) x cols [0,128) of the row-major [S][D] matrix G into a 64 x 128 shared tile (zero
// filled outside S x D). Logical float4 chunk (m, c4) goes to physical chunk c4 ^ key(m):
// MODE 0: key 0 (V), MODE 1: ((m >> 2) & 1) << 2 (Q), MODE 2: m & 7 (K).
// Thread (warp w, lane) copies chunk c4 = lane of rows m = w + 4 i.
template <int MODE>
__device__ __forceinline__ void flash_load_tile(unsigned sdst, const float* __restrict__ G, long long r0, long long S,
                                                long long D, bool vec, bool full) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int c0 = lane * 4;
  if (full) {
    const float* src = G + (r0 + w) * D + c0;
#pragma unroll
    for (int i = 0; i < FBM / 4; ++i) {
      const int m = w + 4 * i;
      const int pc = MODE == 1 ? (lane ^ ((i & 1) << 2)) : (MODE == 2 ? (lane ^ (w + 4 * (i & 1))) : lane);
      cp_async16(sdst + (unsigned)((m * FDP + pc * 4) * 4), src + (long long)i * 4 * D, 16u);
    }
  } else {
#pragma unroll
    for (int i = 0; i < FBM / 4; ++i) {
      const int m = w + 4 * i;
      const int pc = MODE == 1 ? (lane ^ ((i & 1) << 2)) : (MODE == 2 ? (lane ^ (w + 4 * (i & 1))) : lane);
      const unsigned dst = sdst + (unsigned)((m * FDP + pc * 4) * 4);
      const long long gr = r0 + m;
      const bool rok = gr < S;
      if (vec) {
        const bool ok = rok && c0 < D;
        cp_async16(dst, ok ? G + gr * D + c0 : G, ok ? 16u : 0u);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool ok = rok && c0 + e < D;
          cp_async4(dst + 4u * e, ok ? G + gr * D + c0 + e : G, ok ? 4u : 0u);
        }
      }
    }
  }
}

// Thread (tx = tid & 15, ty = tid >> 4) owns query rows rr(r) = (r >> 2) * 32 + ty * 4 + (r & 3), r < 8;
// score columns (keys) tx + 16 c, c < 4; output columns (h * 64) + tx * 4 + e, h < 2, e < 4.
__device__ __forceinline__ void flash_block(const float* __restrict__ Q, const float* __restrict__ Kt,
                                            const float* __restrict__ V, float* __restrict__ O, long long S,
                                            long long D, float* sm) {
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const long long z = blockIdx.z;
  const long long m0 = (long long)blockIdx.x * FBM;
  const float* Qz = Q + z * S * D;
  const float* Kz = Kt + z * S * D;
  const float* Vz = V + z * S * D;
  float* Oz = O + z * S * D;
  const bool vec = (D & 3) == 0;
  const bool dfull = vec && D == FDP;
  const unsigned su = smem_u32(sm);
  const int nt = (int)((S + FBN - 1) / FBN);
  const int nd32 = (int)((D + 31) >> 5);
  const float scale = 1.0f / sqrtf((float)D);

  flash_load_tile<1>(su + QS_OFF * 4, Qz, m0, S, D, vec, dfull && m0 + FBM <= S);
  flash_load_tile<2>(su + KS_OFF * 4, Kz, 0, S, D, vec, dfull && FBN <= S);
  cp_commit();
  flash_load_tile<0>(su + VS_OFF * 4, Vz, 0, S, D, vec, dfull && FBN <= S);
  cp_commit();

  float oacc[8][8], mL[8], lsum[8];
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    mL[r] = NEG_BIG;
    lsum[r] = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) oacc[r][k] = 0.f;
  }

  const int kkey = tx & 7, qkey = (ty & 1) << 2;
  int kb[8], qb[8], pb[8];
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    kb[t] = KS_OFF + tx * FDP + ((t ^ kkey) << 2);
    qb[t] = QS_OFF + ty * 4 * FDP + ((t ^ qkey) << 2);
    pb[t] = PS_OFF + t * FBM + ((ty ^ t) << 2);
  }
  const int pw = PS_OFF + tx * FBM + ((ty ^ kkey) << 2);
  const int vb = VS_OFF + tx * 4;

#pragma unroll 1
  for (int jt = 0; jt < nt; ++jt) {
    const long long j0 = (long long)jt * FBN;
    cp_wait<1>();  // Q and K tile jt
    __syncthreads();

    // ---- scores: sacc[r][c] = Q[rr(r)] . K[j0 + tx + 16 c]
    float sacc[8][4];
#pragma unroll
    for (int r = 0; r < 8; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) sacc[r][c] = 0.f;
#pragma unroll 1
    for (int d32 = 0; d32 < nd32; ++d32) {
      const int o = d32 * 32;
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        float4 kf[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) kf[c] = *reinterpret_cast<const float4*>(sm + kb[t] + o + c * 16 * FDP);
#pragma unroll
        for (int r = 0; r < 8; ++r) {
          const float4 qf = *reinterpret_cast<const float4*>(sm + qb[t] + o + ((r >> 2) * 32 + (r & 3)) * FDP);
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            float a = sacc[r][c];
            a = fmaf(qf.x, kf[c].x, a);
            a = fmaf(qf.y, kf[c].y, a);
            a = fmaf(qf.z, kf[c].z, a);
            a = fmaf(qf.w, kf[c].w, a);
            sacc[r][c] = a;
          }
        }
      }
    }

    // ---- online softmax
    bool cv[4];
#pragma unroll
    for (int c = 0; c < 4; ++c) cv[c] = j0 + tx + 16 * c < S;
    float tmx[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      float mx = NEG_BIG;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float x = sacc[r][c] * scale;
        sacc[r][c] = x;
        if (cv[c]) mx = fmaxf(mx, x);
      }
      tmx[r] = mx;
    }
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      float mx = tmx[r];
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      const float mn = fmaxf(mL[r], mx * L2E);
      const float al = exp2f(mL[r] - mn);
      mL[r] = mn;
      float rs = 0.f;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const float p = cv[c] ? exp2f(fmaf(sacc[r][c], L2E, -mn)) : 0.f;
        sacc[r][c] = p;
        rs += p;
      }
      lsum[r] = fmaf(lsum[r], al, rs);
#pragma unroll
      for (int k = 0; k < 8; ++k) oacc[r][k] *= al;
    }
    // P tile: logical [key j][query row i], chunk (i / 4) stored at (i / 4) ^ (j & 7)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      *reinterpret_cast<float4*>(sm + pw + c * 16 * FBM) = make_float4(sacc[0][c], sacc[1][c], sacc[2][c], sacc[3][c]);
      *reinterpret_cast<float4*>(sm + pw + c * 16 * FBM + 32) =
          make_float4(sacc[4][c], sacc[5][c], sacc[6][c], sacc[7][c]);
    }
    cp_wait<0>();  // V tile jt
    __syncthreads();
    if (jt + 1 < nt) flash_load_tile<2>(su + KS_OFF * 4, Kz, j0 + FBN, S, D, vec, dfull && j0 + 2 * FBN <= S);
    cp_commit();

    // ---- O += P V
    const long long jrem = S - j0;
    const int jn8 = jrem >= FBN ? FBN / 8 : (int)((jrem + 7) >> 3);
#pragma unroll 1
    for (int j8 = 0; j8 < jn8; ++j8) {
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const float4 a0 = *reinterpret_cast<const float4*>(sm + pb[u] + j8 * 8 * FBM);
        const float4 a1 = *reinterpret_cast<const float4*>(sm + pb[u] + j8 * 8 * FBM + 32);
        const float4 b0 = *reinterpret_cast<const float4*>(sm + vb + (j8 * 8 + u) * FDP);
        const float4 b1 = *reinterpret_cast<const float4*>(sm + vb + (j8 * 8 + u) * FDP + 64);
        const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int k = 0; k < 8; ++k) oacc[i][k] = fmaf(a[i], b[k], oacc[i][k]);
      }
    }
    __syncthreads();
    if (jt + 1 < nt) flash_load_tile<0>(su + VS_OFF * 4, Vz, j0 + FBN, S, D, vec, dfull && j0 + 2 * FBN <= S);
    cp_commit();
  }

  // ---- normalise and store
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    float s = lsum[r];
    s += __shfl_xor_sync(0xffffffffu, s, 8);
    s += __shfl_xor_sync(0xffffffffu, s, 4);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    const float inv = 1.0f / s;
    const long long m = m0 + (r >> 2) * 32 + ty * 4 + (r & 3);
    if (m < S) {
      float* orow = Oz + m * D;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long n = h * 64 + tx * 4;
        const float v0 = oacc[r][4 * h] * inv, v1 = oacc[r][4 * h + 1] * inv;
        const float v2 = oacc[r][4 * h + 2] * inv, v3 = oacc[r][4 * h + 3] * inv;
        if (vec && n + 3 < D) {
          *reinterpret_cast<float4*>(orow + n) = make_float4(v0, v1, v2, v3);
        } else {
          if (n < D) orow[n] = v0;
          if (n + 1 < D) orow[n + 1] = v1;
          if (n + 2 < D) orow[n + 2] = v2;
          if (n + 3 < D) orow[n + 3] = v3;
        }
      }
    }
  }
}

// D <= 128: fused attention, grid (ceil_div(S, 64), 1, B*H), 114688 B dynamic shared.
// D > 128: scores slice P[split][bh] = (Q K^T)[:, :, D chunk] / sqrt(D),
//          grid (ceil_div(S, 128), ceil_div(S, 64), B*H*splits), 24576 B dynamic shared.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sdpa_main(const float* __restrict__ Q, const float* __restrict__ Kt, const float* __restrict__ V,
          float* __restrict__ O, float* __restrict__ P, long long B, long long H, long long S, long long D) {
  extern __shared__ float4 smem4[];
  float* sm = reinterpret_cast<float*>(smem4);
  if (D <= FDP) {
    flash_block(Q, Kt, V, O, S, D, sm);
    return;
  }
  const long long bh = B * H;
  const long long ns = score_splits(B, H, S, D);
  const long long zz = blockIdx.z;
  const long long split = zz / bh, z = zz % bh;
  const long long kc = ((D + ns - 1) / ns + BK - 1) / BK * BK;
  const long long kbeg = split * kc;
  long long klen = D - kbeg;
  if (klen > kc) klen = kc;
  if (klen < 0) klen = 0;
  gemm_block<true>(Q + z * S * D + kbeg, D, Kt + z * S * D + kbeg, D, P + split * bh * S * S + z * S * S, S, S, klen,
                   1.0f / sqrtf((float)D), sm);
}

// O[bh] = P[bh] V[bh] (D > 128 only). grid: (ceil_div(S, BM), ceil_div(D, BN), B*H).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_pv(const float* __restrict__ P, const float* __restrict__ V, float* __restrict__ O, long long B, long long H,
        long long S, long long D) {
  if (D <= FDP) return;
  extern __shared__ float4 smem4[];
  const long long z = blockIdx.z;
  gemm_block<false>(P + z * S * S, S, V + z * S * D, D, O + z * S * D, S, D, S, 1.0f,
                    reinterpret_cast<float*>(smem4));
}

// In-place softmax of each of the B*H*S rows of length S (D > 128 only); the score slices are summed
// into slice 0 first. One block of SMB threads per row.
#define SM_ITEMS 4
#define SM_NW (SMB / 32)
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float block_max(float v, float* sh) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  v = warp_max(v);
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    float u = warp_max(lane < SM_NW ? sh[lane] : NEG_BIG);
    if (lane == 0) sh[SM_NW] = u;
  }
  __syncthreads();
  return sh[SM_NW];
}
__device__ __forceinline__ float block_sum(float v, float* sh) {
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  v = warp_sum(v);
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    float u = warp_sum(lane < SM_NW ? sh[lane] : 0.f);
    if (lane == 0) sh[SM_NW] = u;
  }
  __syncthreads();
  return sh[SM_NW];
}

// grid: B*H*S blocks; block SMB.
extern "C" __global__ void __launch_bounds__(SMB)
sdpa_softmax(float* P, long long B, long long H, long long S, long long D) {
  if (D <= FDP) return;
  __shared__ float sh[2 * SM_NW + 2];
  float* row = P + (long long)blockIdx.x * S;
  const int t = threadIdx.x;
  const long long ns = score_splits(B, H, S, D);
  if (ns > 1) {
    const long long slice = B * H * S * S;
    for (long long e = t; e < S; e += SMB) {
      float a = row[e];
      for (long long s = 1; s < ns; ++s) a += row[s * slice + e];
      row[e] = a;
    }
    __syncthreads();
  }
  const bool vec = (S & 3) == 0;
  if (S <= 4LL * SMB * SM_ITEMS) {
    float v[SM_ITEMS * 4];
#pragma unroll
    for (int i = 0; i < SM_ITEMS; ++i) {
      if (vec) {
        const long long e = 4LL * (i * SMB + t);
        float4 q = make_float4(NEG_BIG, NEG_BIG, NEG_BIG, NEG_BIG);
        if (e < S) q = *reinterpret_cast<const float4*>(row + e);
        v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const long long e = (long long)(4 * i + k) * SMB + t;
          v[4 * i + k] = e < S ? row[e] : NEG_BIG;
        }
      }
    }
    float m = NEG_BIG;
#pragma unroll
    for (int i = 0; i < SM_ITEMS * 4; ++i) m = fmaxf(m, v[i]);
    m = block_max(m, sh);
    const float mL = m * L2E;
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < SM_ITEMS * 4; ++i) { v[i] = exp2f(fmaf(v[i], L2E, -mL)); s += v[i]; }
    s = block_sum(s, sh + SM_NW + 1);
    const float inv = 1.0f / s;
#pragma unroll
    for (int i = 0; i < SM_ITEMS; ++i) {
      if (vec) {
        const long long e = 4LL * (i * SMB + t);
        if (e < S)
          *reinterpret_cast<float4*>(row + e) =
              make_float4(v[4 * i] * inv, v[4 * i + 1] * inv, v[4 * i + 2] * inv, v[4 * i + 3] * inv);
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const long long e = (long long)(4 * i + k) * SMB + t;
          if (e < S) row[e] = v[4 * i + k] * inv;
        }
      }
    }
  } else {
    float m = NEG_BIG;
    for (long long e = t; e < S; e += SMB) m = fmaxf(m, row[e]);
    m = block_max(m, sh);
    const float mL = m * L2E;
    float s = 0.f;
    for (long long e = t; e < S; e += SMB) s += exp2f(fmaf(row[e], L2E, -mL));
    s = block_sum(s, sh + SM_NW + 1);
    const float inv = 1.0f / s;
    for (long long e = t; e < S; e += SMB) row[e] = exp2f(fmaf(row[e], L2E, -mL)) * inv;
  }
}
