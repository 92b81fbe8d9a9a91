// Scaled dot-product attention at fp32 accuracy on the tensor cores: three launches like the FFMA
// version (scores = Q K^T / sqrt(D) into scratch, in-place row softmax, O = P V), with both batched
// GEMMs on mma.sync.m16n8k8 TF32 using 3xTF32 split precision: each operand a = a_big + a_small
// (both TF32), a*b ~ a_small*b_big + a_big*b_small + a_big*b_big with fp32 accumulation, so the
// error stays at fp32 level (the dropped small*small term is ~2^-22 relative). Tiles stream
// global -> shared with 16-byte cp.async in a STAGES-deep ring; K-major tiles are stored [row][k]
// with rows padded by 4 floats, N-major tiles [k][n] with rows padded by 8 floats, which makes every
// fragment load bank-conflict free. Edges are zero-filled through cp.async's source size.
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
#define LDK (BK + 4)
#define LDN (BN + 8)

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem, int src_bytes) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, int src_bytes) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ unsigned to_tf32(float f) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// K-major operand: ROWS_T x BK tile (rows r0.., k0..) into S[ROWS_T][LDK].
template <int ROWS_T>
__device__ __forceinline__ void load_kmajor(float* S, const float* __restrict__ G, long long nrows, long long K,
                                            long long r0, long long k0, bool vec) {
  if (vec) {
    constexpr int CH = ROWS_T * BK / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int row = c / (BK / 4), col = (c % (BK / 4)) * 4;
        const long long gr = r0 + row, gk = k0 + col;
        const bool in = gr < nrows && gk < K;
        cp_async16(S + row * LDK + col, in ? G + gr * K + gk : G, in ? (int)min(16LL, 4 * (K - gk)) : 0);
      }
    }
  } else {
    constexpr int CH = ROWS_T * BK;
#pragma unroll 4
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int row = c / BK, col = c % BK;
        const long long gr = r0 + row, gk = k0 + col;
        const bool in = gr < nrows && gk < K;
        cp_async4(S + row * LDK + col, in ? G + gr * K + gk : G, in ? 4 : 0);
      }
    }
  }
}
// N-major operand B[k][n]: BK x BN tile (k0.., n0..) into S[BK][LDN].
__device__ __forceinline__ void load_nmajor(float* S, const float* __restrict__ G, long long N, long long K,
                                            long long n0, long long k0, bool vec) {
  if (vec) {
    constexpr int CH = BK * BN / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int k = c / (BN / 4), col = (c % (BN / 4)) * 4;
        const long long gk = k0 + k, gn = n0 + col;
        const bool in = gk < K && gn < N;
        cp_async16(S + k * LDN + col, in ? G + gk * N + gn : G, in ? (int)min(16LL, 4 * (N - gn)) : 0);
      }
    }
  } else {
    constexpr int CH = BK * BN;
#pragma unroll 4
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int k = c / BN, col = c % BN;
        const long long gk = k0 + k, gn = n0 + col;
        const bool in = gk < K && gn < N;
        cp_async4(S + k * LDN + col, in ? G + gk * N + gn : G, in ? 4 : 0);
      }
    }
  }
}

__device__ __forceinline__ float tf32_round(float f) { return __uint_as_float(to_tf32(f)); }
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const float* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// Split one landed float4 (or float) at p: big part in place, small part TWIN floats further on.
template <int TWIN>
__device__ __forceinline__ void split4(float* p) {
  const float4 v = *reinterpret_cast<float4*>(p);
  const float4 h = make_float4(tf32_round(v.x), tf32_round(v.y), tf32_round(v.z), tf32_round(v.w));
  *reinterpret_cast<float4*>(p) = h;
  if (PREC == 3)
    *reinterpret_cast<float4*>(p + TWIN) =
        make_float4(tf32_round(v.x - h.x), tf32_round(v.y - h.y), tf32_round(v.z - h.z), tf32_round(v.w - h.w));
}
template <int TWIN>
__device__ __forceinline__ void split1(float* p) {
  const float v = *p, h = tf32_round(v);
  *p = h;
  if (PREC == 3) p[TWIN] = tf32_round(v - h);
}
// The same chunk maps as load_kmajor / load_nmajor: each thread splits only what it copied.
template <int ROWS_T, int TWIN>
__device__ __forceinline__ void split_kmajor(float* S, bool vec) {
  if (vec) {
    constexpr int CH = ROWS_T * BK / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) split4<TWIN>(S + (c / (BK / 4)) * LDK + (c % (BK / 4)) * 4);
    }
  } else {
    constexpr int CH = ROWS_T * BK;
#pragma unroll 4
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) split1<TWIN>(S + (c / BK) * LDK + c % BK);
    }
  }
}
template <int TWIN>
__device__ __forceinline__ void split_nmajor(float* S, bool vec) {
  if (vec) {
    constexpr int CH = BK * BN / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) split4<TWIN>(S + (c / (BN / 4)) * LDN + (c % (BN / 4)) * 4);
    }
  } else {
    constexpr int CH = BK * BN;
#pragma unroll 4
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) split1<TWIN>(S + (c / BN) * LDN + c % BN);
    }
  }
}

// C[M][N] = alpha * A[M][K] . op(B); A K-major; B_KMAJOR: B is [N][K], else [K][N].
template <bool B_KMAJOR>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ Bm,
                                           float* __restrict__ Cm, long long M, long long N, long long K, float alpha,
                                           float* smem) {
  constexpr int A_FLOATS = BM * LDK;
  constexpr int TILE = A_FLOATS + (B_KMAJOR ? BN * LDK : BK * LDN);  // big parts; small parts follow
  constexpr int STAGE = TILE * (PREC == 3 ? 2 : 1);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / WN, wn = warp % WN;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const bool avec = (K & 3) == 0;
  const bool bvec = B_KMAJOR ? avec : (N & 3) == 0;
  const int nk = (int)((K + BK - 1) / BK);
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 4;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 4;

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

  auto issue = [&](int kt) {
    float* st = smem + (kt % STAGES) * STAGE;
    load_kmajor<BM>(st, A, M, K, m0, (long long)kt * BK, avec);
    if (B_KMAJOR) load_kmajor<BN>(st + A_FLOATS, Bm, N, K, n0, (long long)kt * BK, bvec);
    else load_nmajor(st + A_FLOATS, Bm, N, K, n0, (long long)kt * BK, bvec);
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) issue(s);
    cp_async_commit();
  }
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<STAGES - 2>();
    float* cur = smem + (kt % STAGES) * STAGE;
    split_kmajor<BM, TILE>(cur, avec);
    if (B_KMAJOR) split_kmajor<BN, TILE>(cur + A_FLOATS, bvec);
    else split_nmajor<TILE>(cur + A_FLOATS, bvec);
    __syncthreads();
    if (kt + STAGES - 1 < nk) issue(kt + STAGES - 1);
    cp_async_commit();
    const float* Ab = cur + (wm * WTM) * LDK;
    const float* Bs = cur + A_FLOATS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned ab[MT][4], as[MT][4], bb[NT][2], bs[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        ldsm_x4(ab[i], Ab + (i * 16 + a_row) * LDK + kk + a_col);
        if (PREC == 3) ldsm_x4(as[i], Ab + TILE + (i * 16 + a_row) * LDK + kk + a_col);
      }
      if (B_KMAJOR) {
        const float* Bb = Bs + (wn * WTN) * LDK;
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
          unsigned r[4];
          ldsm_x4(r, Bb + (j * 16 + b_row) * LDK + kk + b_col);
          bb[2 * j][0] = r[0]; bb[2 * j][1] = r[1]; bb[2 * j + 1][0] = r[2]; bb[2 * j + 1][1] = r[3];
          if (PREC == 3) {
            ldsm_x4(r, Bb + TILE + (j * 16 + b_row) * LDK + kk + b_col);
            bs[2 * j][0] = r[0]; bs[2 * j][1] = r[1]; bs[2 * j + 1][0] = r[2]; bs[2 * j + 1][1] = r[3];
          }
        }
      } else {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const float* p = Bs + (kk + t) * LDN + wn * WTN + j * 8 + g;
          bb[j][0] = __float_as_uint(p[0]);
          bb[j][1] = __float_as_uint(p[4 * LDN]);
          if (PREC == 3) {
            bs[j][0] = __float_as_uint(p[TILE]);
            bs[j][1] = __float_as_uint(p[TILE + 4 * LDN]);
          }
        }
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#if PREC == 3
          mma_tf32(acc[i][j], as[i], bb[j]);
          mma_tf32(acc[i][j], ab[i], bs[j]);
#endif
          mma_tf32(acc[i][j], ab[i], bb[j]);
        }
    }
  }
  cp_async_wait<0>();
  const bool nvec = (N & 1) == 0;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long m = m0 + wm * WTM + i * 16 + g + 8 * h;
      if (m >= M) continue;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const long long n = n0 + wn * WTN + j * 8 + 2 * t;
        const float v0 = acc[i][j][2 * h] * alpha, v1 = acc[i][j][2 * h + 1] * alpha;
        if (nvec && n + 1 < N) {
          *reinterpret_cast<float2*>(Cm + m * N + n) = make_float2(v0, v1);
        } else {
          if (n < N) Cm[m * N + n] = v0;
          if (n + 1 < N) Cm[m * N + n + 1] = v1;
        }
      }
    }
}

// P[bh] = (Q[bh] K[bh]^T) / sqrt(D). grid: (ceil_div(S, BM), ceil_div(S, BN), B*H);
// smem STAGES*((PREC+1)/2)*(BM+BN)*(BK+4)*4 bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_scores(const float* __restrict__ Q, const float* __restrict__ Kt, float* __restrict__ P, long long B, long long H,
            long long S, long long D) {
  extern __shared__ float4 smem4[];
  const long long z = blockIdx.z;
  gemm_block<true>(Q + z * S * D, Kt + z * S * D, P + z * S * S, S, S, D, 1.0f / sqrtf((float)D),
                   reinterpret_cast<float*>(smem4));
}

// O[bh] = P[bh] V[bh]. grid: (ceil_div(S, BM), ceil_div(D, BN), B*H);
// smem STAGES*((PREC+1)/2)*(BM*(BK+4) + BK*(BN+8))*4 bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_pv(const float* __restrict__ P, const float* __restrict__ V, float* __restrict__ O, long long B, long long H,
        long long S, long long D) {
  extern __shared__ float4 smem4[];
  const long long z = blockIdx.z;
  gemm_block<false>(P + z * S * S, V + z * S * D, O + z * S * D, S, D, S, 1.0f, reinterpret_cast<float*>(smem4));
}

// In-place softmax of each of the B*H*S rows of length S; one block of SMB threads per row, the row
// in registers (4 floats x 4 per thread, so rows up to 16*SMB), longer rows streamed twice.
#define SM_ITEMS 4
#define SM_NW (SMB / 32)
#define L2E 1.4426950408889634f
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
extern "C" __global__ void __launch_bounds__(SMB) sdpa_softmax(float* P, long long B, long long H, long long S) {
  __shared__ float sh[2 * SM_NW + 2];
  float* row = P + (long long)blockIdx.x * S;
  const int t = threadIdx.x;
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
        if (e < S) *reinterpret_cast<float4*>(row + e) = make_float4(v[4 * i] * inv, v[4 * i + 1] * inv, v[4 * i + 2] * inv, v[4 * i + 3] * inv);
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
