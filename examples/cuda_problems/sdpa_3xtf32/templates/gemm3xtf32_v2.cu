// Scaled dot-product attention at fp32 accuracy, v2: three launches (scores = Q K^T / sqrt(D) into
// the scratch P, in-place row softmax, O = P V), both batched GEMMs on the v2 mma.sync.m16n8k8 TF32
// core of linear_relu_div_tf32 (templates/mma_tf32_v2.cu). PREC = 3: 3xTF32 split precision in
// registers: a = big + small, big = rna(a), small = rna(a - big), acc += a_small*b_big +
// a_big*b_small + a_big*b_big (small terms first), fp32 accumulation. PREC = 1: plain TF32 (rna).
// Block tile BM x BN x BK, WM x WN warps, warp tile (BM/WM) x (BN/WN) of 16x8 MMA tiles.
// The A operand (Q for scores, P for PV) is K-contiguous; so is the scores B operand (K). They
// stream global -> shared with 16-byte cp.async (zero-filled by the source size at the edges,
// 4-byte copies when the row length is not a multiple of 4) into a STAGES-deep ring of unpadded
// BK-float rows whose 16-byte chunks are XOR-swizzled by row; fragments come from ldmatrix.x4.b16
// (an 8x4 tf32 block is an 8x8 b16 matrix), double-buffered in registers across k-steps.
// The PV B operand V is N-contiguous ([k][n], n = the head dim): its tiles are stored as BK rows of
// BN floats, chunk c of row k at chunk c ^ 2*(k & 3), so the 16-byte cp.async stores and the 32-bit
// fragment loads (lane (g, t) reads rows t and t+4, column g) are both bank-conflict-free; no
// transpose pass and no padding. Softmax: one warp per row, the row in registers for S <= 1024
// (exact expf), an online max/sum pass plus a normalising pass above that.
#define BM ${BM}
#define BN ${BN}
#define BK ${BK}
#define WM ${WM}
#define WN ${WN}
#define STAGES ${STAGES}
#define PREC ${PREC}
#define SMB ${SMB}

#define THREADS (32 * WM * WN)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MT (WTM / 16)
#define NT (WTN / 8)
#define KS (BK / 8)              // k-steps per stage
#define CHR (BK / 4)             // 16-byte chunks per K-major shared row
#define RSTEP (THREADS / CHR)    // rows between one thread's successive copies (K-major)
#define A_CP (BM * CHR / THREADS)
#define B_CP (BN * CHR / THREADS)
#define ROW_BYTES (BK * 4)
#define A_BYTES (BM * ROW_BYTES)
#define STAGE_BYTES ((BM + BN) * ROW_BYTES)
#define CHB (BN / 4)             // 16-byte chunks per N-major shared row
#define RSTEPB (THREADS / CHB)
#define BN_CP (BK * CHB / THREADS)
#define ROWB_BYTES (BN * 4)
#define NQ (NT < 4 ? NT : 4)

__device__ __forceinline__ int swz(int r) {
  return CHR >= 8 ? (r & 7) : CHR == 4 ? ((r >> 1) & 3) : ((r >> 2) & 1);
}

__device__ __forceinline__ void cp_async16(unsigned s, const float* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned s, const float* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// cvt.rna.tf32.f32 on the bits (finite inputs): add half an ulp of the 10-bit mantissa, clear 13 bits.
__device__ __forceinline__ unsigned tf32_rna(unsigned f) { return (f + 0x1000u) & 0xffffe000u; }
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ unsigned lds32(unsigned a) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(a));
  return r;
}
__device__ __forceinline__ void mma_tf32(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One ROWS x BK tile of a K-major matrix into the stage at shared address S (swizzled).
// Thread copies rows r0 + i*RSTEP (i < NCP), chunk c; g points at element (row0 + r0, c*4) of G.
template <int NCP>
__device__ __forceinline__ void load_tile(unsigned S, const float* __restrict__ G, const float* g, long long rows_left,
                                          long long K, long long k0, int r0, int c, unsigned dst, bool fast, bool kvec) {
  const long long rstride = (long long)RSTEP * K;
  if (fast) {  // all rows in range, whole BK slice inside K, 16-byte aligned rows
    const float* p = g + k0;
#pragma unroll
    for (int i = 0; i < NCP; ++i) {
      cp_async16(S + dst + i * RSTEP * ROW_BYTES, p, 16);
      p += rstride;
    }
  } else if (kvec) {
    const long long kl = K - k0 - c * 4;  // floats of this chunk inside K
    const int kb = kl >= 4 ? 16 : kl > 0 ? (int)kl * 4 : 0;
    const float* p = g + k0;
#pragma unroll
    for (int i = 0; i < NCP; ++i) {
      const bool in = (long long)(r0 + i * RSTEP) < rows_left && kb > 0;
      cp_async16(S + dst + i * RSTEP * ROW_BYTES, in ? p : G, in ? kb : 0);
      p += rstride;
    }
  } else {
    const float* p = g + k0;
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

// One BK x BN tile of an N-major matrix (rows k0 .. k0+BK-1, columns n0 .. n0+BN-1) into the stage
// at S: row rr = rb0 + i*RSTEPB, chunk cb at chunk cb ^ 2*(rr & 3). g points at (k = rb0, n0 + cb*4).
__device__ __forceinline__ void load_tile_n(unsigned S, const float* __restrict__ G, const float* g, long long N,
                                            long long K, long long k0, long long nl, int rb0, int cb, bool fast,
                                            bool nvec) {
  const long long rstride = (long long)RSTEPB * N;
  const float* p = g + k0 * N;
  if (fast) {
#pragma unroll
    for (int i = 0; i < BN_CP; ++i) {
      const int rr = rb0 + i * RSTEPB;
      cp_async16(S + rr * ROWB_BYTES + ((cb ^ ((rr & 3) << 1)) << 4), p, 16);
      p += rstride;
    }
  } else if (nvec) {
    const int nb = nl >= 4 ? 16 : nl > 0 ? (int)nl * 4 : 0;
#pragma unroll
    for (int i = 0; i < BN_CP; ++i) {
      const int rr = rb0 + i * RSTEPB;
      const bool in = k0 + rr < K && nb > 0;
      cp_async16(S + rr * ROWB_BYTES + ((cb ^ ((rr & 3) << 1)) << 4), in ? p : G, in ? nb : 0);
      p += rstride;
    }
  } else {
#pragma unroll 1
    for (int i = 0; i < BN_CP; ++i) {
      const int rr = rb0 + i * RSTEPB;
      const bool rin = k0 + rr < K;
      const unsigned d = S + rr * ROWB_BYTES + ((cb ^ ((rr & 3) << 1)) << 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool in = rin && e < nl;
        cp_async4(d + 4 * e, in ? p + e : G, in ? 4 : 0);
      }
      p += rstride;
    }
  }
}

// C[M, N] = scale * A[M, K] B^T: A K-contiguous [M][K]; B [N][K] (NMAJ = false) or [K][N] (NMAJ = true).
template <bool NMAJ>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ Bm,
                                           float* __restrict__ C, long long M, long long N, long long K,
                                           float scale) {
  extern __shared__ float4 smem4[];
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem4);
  const unsigned send = sbase + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int wm = warp / WN, wn = warp % WN;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const bool kvec = (K & 3) == 0;
  const bool bvec = NMAJ ? (N & 3) == 0 : kvec;
  const int nk = (int)((K + BK - 1) / BK);
  const bool interior = kvec && bvec && m0 + BM <= M && n0 + BN <= N;

  const int r0 = tid / CHR, cc = tid % CHR;
  const unsigned dst = (unsigned)(r0 * ROW_BYTES + ((cc ^ swz(r0)) << 4));
  const float* ga = A + (m0 + r0) * K + cc * 4;
  const long long mleft = M - m0, nleft = N - n0;
  // K-major B copy map (NMAJ = false) / N-major B copy map (NMAJ = true).
  const int rb0 = NMAJ ? tid / CHB : r0, cb = NMAJ ? tid % CHB : cc;
  const float* gb = NMAJ ? Bm + (long long)rb0 * N + n0 + cb * 4 : Bm + (n0 + r0) * K + cc * 4;
  const long long nlb = N - n0 - cb * 4;  // N-major: floats of this thread's chunk inside N

  const int a_row = wm * WTM + (lane & 7) + ((lane >> 3) & 1) * 8, a_hi = lane >> 4;
  unsigned aoff[KS];
#pragma unroll
  for (int s = 0; s < KS; ++s) aoff[s] = (unsigned)(a_row * ROW_BYTES + (((2 * s + a_hi) ^ swz(a_row)) << 4));
  // K-major B: ldmatrix offsets per k-step. N-major B: per (j & 3) lane offsets of row t, column g.
  constexpr int NBOFF = NMAJ ? NQ : KS;
  unsigned boff[NBOFF];
  if constexpr (NMAJ) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int q = 0; q < NQ; ++q) {
      const int c = wn * WTN / 4 + 2 * q + (g >> 2);
      boff[q] = (unsigned)(A_BYTES + t * ROWB_BYTES + ((c ^ (2 * t)) << 4) + (g & 3) * 4);
    }
  } else {
    const int b_row = wn * WTN + (lane & 7) + (lane >> 4) * 8, b_hi = (lane >> 3) & 1;
#pragma unroll
    for (int s = 0; s < NBOFF; ++s)
      boff[s] = (unsigned)(A_BYTES + b_row * ROW_BYTES + (((2 * s + b_hi) ^ swz(b_row)) << 4));
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  unsigned ws = sbase;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) {
      const long long k0 = (long long)s * BK;
      const bool fast = interior && k0 + BK <= K;
      load_tile<A_CP>(ws, A, ga, mleft, K, k0, r0, cc, dst, fast, kvec);
      if constexpr (NMAJ) load_tile_n(ws + A_BYTES, Bm, gb, N, K, k0, nlb, rb0, cb, fast, bvec);
      else load_tile<B_CP>(ws + A_BYTES, Bm, gb, nleft, K, k0, r0, cc, dst, fast, kvec);
    }
    cp_async_commit();
    ws += STAGE_BYTES;
  }
  long long kload = (long long)(STAGES - 1) * BK;

  unsigned fa[2][MT][4], fb[2][NT][2];
  unsigned rs = sbase;
  cp_async_wait<STAGES - 2>();
  __syncthreads();
#pragma unroll
  for (int i = 0; i < MT; ++i) ldsm_x4(fa[0][i], rs + aoff[0] + i * 16 * ROW_BYTES);
  if constexpr (NMAJ) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const unsigned a = rs + boff[j & 3] + (j >> 2) * 128;
      fb[0][j][0] = lds32(a);
      fb[0][j][1] = lds32(a + 4 * ROWB_BYTES);
    }
  } else {
#pragma unroll
    for (int j = 0; j < NT / 2; ++j) {
      unsigned r[4];
      ldsm_x4(r, rs + boff[0] + j * 16 * ROW_BYTES);
      fb[0][2 * j][0] = r[0]; fb[0][2 * j][1] = r[1]; fb[0][2 * j + 1][0] = r[2]; fb[0][2 * j + 1][1] = r[3];
    }
  }

#pragma unroll 1
  for (int kt = 0; kt < nk; ++kt) {
#pragma unroll
    for (int s = 0; s < KS; ++s) {
      const int cur = s & 1, nxt = cur ^ 1;
      if (s == KS - 1) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        rs += STAGE_BYTES;
        if (rs == send) rs = sbase;
      }
      {
        const int sn = (s + 1) % KS;
#pragma unroll
        for (int i = 0; i < MT; ++i) ldsm_x4(fa[nxt][i], rs + aoff[sn] + i * 16 * ROW_BYTES);
        if constexpr (NMAJ) {
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const unsigned a = rs + boff[j & 3] + (j >> 2) * 128 + sn * 8 * ROWB_BYTES;
            fb[nxt][j][0] = lds32(a);
            fb[nxt][j][1] = lds32(a + 4 * ROWB_BYTES);
          }
        } else {
#pragma unroll
          for (int j = 0; j < NT / 2; ++j) {
            unsigned r[4];
            ldsm_x4(r, rs + boff[sn] + j * 16 * ROW_BYTES);
            fb[nxt][2 * j][0] = r[0]; fb[nxt][2 * j][1] = r[1]; fb[nxt][2 * j + 1][0] = r[2]; fb[nxt][2 * j + 1][1] = r[3];
          }
        }
      }
      if (s == 0) {
        if (kt + STAGES - 1 < nk) {
          const bool fast = interior && kload + BK <= K;
          load_tile<A_CP>(ws, A, ga, mleft, K, kload, r0, cc, dst, fast, kvec);
          if constexpr (NMAJ) load_tile_n(ws + A_BYTES, Bm, gb, N, K, kload, nlb, rb0, cb, fast, bvec);
          else load_tile<B_CP>(ws + A_BYTES, Bm, gb, nleft, K, kload, r0, cc, dst, fast, kvec);
        }
        cp_async_commit();
        kload += BK;
        ws += STAGE_BYTES;
        if (ws == send) ws = sbase;
      }
#if PREC == 3
      unsigned bb[NT][2], bs[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const unsigned v = fb[cur][j][h];
          bb[j][h] = tf32_rna(v);
          bs[j][h] = tf32_rna(__float_as_uint(__uint_as_float(v) - __uint_as_float(bb[j][h])));
        }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        unsigned ab[4], as[4];
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const unsigned v = fa[cur][i][h];
          ab[h] = tf32_rna(v);
          as[h] = tf32_rna(__float_as_uint(__uint_as_float(v) - __uint_as_float(ab[h])));
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int jj = (i & 1) ? NT - 1 - j : j;
          mma_tf32(acc[i][jj], as[0], as[1], as[2], as[3], bb[jj][0], bb[jj][1]);
          mma_tf32(acc[i][jj], ab[0], ab[1], ab[2], ab[3], bs[jj][0], bs[jj][1]);
          mma_tf32(acc[i][jj], ab[0], ab[1], ab[2], ab[3], bb[jj][0], bb[jj][1]);
        }
      }
#else
      unsigned bb[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j) { bb[j][0] = tf32_rna(fb[cur][j][0]); bb[j][1] = tf32_rna(fb[cur][j][1]); }
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        unsigned a[4];
#pragma unroll
        for (int h = 0; h < 4; ++h) a[h] = tf32_rna(fa[cur][i][h]);
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const int jj = (i & 1) ? NT - 1 - j : j;
          mma_tf32(acc[i][jj], a[0], a[1], a[2], a[3], bb[jj][0], bb[jj][1]);
        }
      }
#endif
    }
  }
  cp_async_wait<0>();

  // Epilogue: acc[i][j] = rows (g, g+8) x cols (2t, 2t+1) of the 16x8 tile (i, j).
  const int g = lane >> 2, t = lane & 3;
  const bool nvec = (N & 1) == 0;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const long long n = n0 + wn * WTN + j * 8 + 2 * t;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long m = m0 + wm * WTM + i * 16 + g + 8 * h;
        if (m >= M) continue;
        const float v0 = acc[i][j][2 * h] * scale;
        const float v1 = acc[i][j][2 * h + 1] * scale;
        if (nvec && n + 1 < N) {
          *reinterpret_cast<float2*>(C + m * N + n) = make_float2(v0, v1);
        } else {
          if (n < N) C[m * N + n] = v0;
          if (n + 1 < N) C[m * N + n + 1] = v1;
        }
      }
  }
}

// P[bh] = (Q[bh] K[bh]^T) / sqrt(D). grid: (ceil_div(S, BM), ceil_div(S, BN), B*H); block THREADS;
// dynamic smem STAGES * (BM + BN) * BK * 4.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_scores(const float* __restrict__ Q, const float* __restrict__ Kt, float* __restrict__ P, long long B,
            long long H, long long S, long long D) {
  const long long z = blockIdx.z;
  gemm_block<false>(Q + z * S * D, Kt + z * S * D, P + z * S * S, S, S, D, 1.0f / sqrtf((float)D));
}

// O[bh] = P[bh] V[bh]. grid: (ceil_div(S, BM), ceil_div(D, BN), B*H); same block and smem.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_pv(const float* __restrict__ P, const float* __restrict__ V, float* __restrict__ O, long long B, long long H,
        long long S, long long D) {
  const long long z = blockIdx.z;
  gemm_block<true>(P + z * S * S, V + z * S * D, O + z * S * D, S, D, S, 1.0f);
}

// Row softmax in place: one warp per row, SMB / 32 rows per block. grid: ceil_div(B*H*S, SMB/32).
#define SM_NW (SMB / 32)
#define SM_V 8                   // float4 per lane held in registers: rows up to 1024
#define NEG_BIG (-3.0e38f)
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

extern "C" __global__ void __launch_bounds__(SMB) sdpa_softmax(float* P, long long B, long long H, long long S) {
  const int lane = threadIdx.x & 31;
  const long long r = (long long)blockIdx.x * SM_NW + (threadIdx.x >> 5);
  if (r >= B * H * S) return;
  float* row = P + r * S;
  if (S <= 128LL * SM_V) {
    float v[4 * SM_V];
    const bool vec = (S & 3) == 0;  // rows 16-byte aligned
#pragma unroll
    for (int i = 0; i < SM_V; ++i) {
      if (vec) {
        const long long e = 4LL * (i * 32 + lane);
        float4 q = make_float4(NEG_BIG, NEG_BIG, NEG_BIG, NEG_BIG);
        if (e < S) q = *reinterpret_cast<const float4*>(row + e);
        v[4 * i] = q.x; v[4 * i + 1] = q.y; v[4 * i + 2] = q.z; v[4 * i + 3] = q.w;
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const long long e = (long long)(4 * i + k) * 32 + lane;
          v[4 * i + k] = e < S ? row[e] : NEG_BIG;
        }
      }
    }
    float m = NEG_BIG;
#pragma unroll
    for (int i = 0; i < 4 * SM_V; ++i) m = fmaxf(m, v[i]);
    m = warp_max(m);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 4 * SM_V; ++i) { v[i] = expf(v[i] - m); s += v[i]; }
    s = warp_sum(s);
    const float inv = 1.0f / s;
#pragma unroll
    for (int i = 0; i < SM_V; ++i) {
      if (vec) {
        const long long e = 4LL * (i * 32 + lane);
        if (e < S) *reinterpret_cast<float4*>(row + e) = make_float4(v[4 * i] * inv, v[4 * i + 1] * inv, v[4 * i + 2] * inv, v[4 * i + 3] * inv);
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const long long e = (long long)(4 * i + k) * 32 + lane;
          if (e < S) row[e] = v[4 * i + k] * inv;
        }
      }
    }
  } else {
    // Online max / sum (rescaled when the running max grows), then a normalising pass.
    float m = NEG_BIG, s = 0.f;
    for (long long e = lane; e < S; e += 32) {
      const float x = row[e];
      if (x > m) { s = s * expf(m - x) + 1.f; m = x; } else s += expf(x - m);
    }
    const float mw = warp_max(m);
    s = warp_sum(s * expf(m - mw));
    const float inv = 1.0f / s;
    for (long long e = lane; e < S; e += 32) row[e] = expf(row[e] - mw) * inv;
  }
}
