// y = relu(x W^T + b) / 2 on the tensor cores with mma.sync.m16n8k8 TF32 and fp32 accumulation.
// PREC = 1: one MMA per product, the `tf32` precision; RND = 1 rounds each operand to TF32 once per
// stage (cvt.rna), RND = 0 feeds the fp32 bits as they are (the tensor core uses the top 19 bits,
// i.e. truncation: about twice the error, no rounding pass).
// PREC = 3: "3xTF32" split-precision emulation: a = a_big + a_small with both parts TF32, and
// a*b ~ a_small*b_big + a_big*b_small + a_big*b_big (the dropped a_small*b_small term is ~2^-22
// relative), giving near-fp32 accuracy on the tensor cores at three MMAs per product.
// Block tile BM x BN, WM x WN warps, each warp (BM/WM) x (BN/WN) as 16x8 MMA tiles. x and W are
// both K-major, exactly the row.col operand layout, so tiles go global -> shared with 16-byte
// cp.async (no transposes) in a STAGES-deep ring. When a stage lands each thread rounds / splits
// the elements it copied once (big part rounded in place, small part into a twin array for
// PREC = 3), so the inner loop has no conversions; fragments are then read with ldmatrix.x4 (a 16x8 fp32 tile is a 16x16 b16 tile),
// one instruction per A tile and per pair of B tiles. Shared rows are padded to BK + 4 floats (an odd
// number of 16-byte units), which keeps ldmatrix conflict-free. Out-of-range rows and K are
// zero-filled by cp.async's source size; K % 4 != 0 uses 4-byte copies. Grid x walks M tiles so
// the blocks sharing a W column block run together. Bias, ReLU and the halving are fused.
#define BM ${BM}
#define BN ${BN}
#define BK ${BK}
#define WM ${WM}
#define WN ${WN}
#define STAGES ${STAGES}
#define PREC ${PREC}
#define RND ${RND}

#define THREADS (32 * WM * WN)
#define WTM (BM / WM)
#define WTN (BN / WN)
#define MT (WTM / 16)
#define NT (WTN / 8)
#define LDS (BK + 4)
#define TILE_FLOATS ((BM + BN) * LDS)              // big parts of one stage: A then B
#define STAGE_FLOATS (TILE_FLOATS * (PREC == 3 ? 2 : 1))  // plus the small parts

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

__device__ __forceinline__ float tf32_round(float f) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return __uint_as_float(r);
}
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const float* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ROWS_T x BK tile of a K-major matrix (rows r0.., k0..) into S[ROWS_T][LDS], zero outside.
template <int ROWS_T>
__device__ __forceinline__ void load_tile(float* S, const float* __restrict__ G, long long nrows, long long K,
                                          long long r0, long long k0, bool kvec) {
  if (kvec) {
    constexpr int CH = ROWS_T * BK / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int row = c / (BK / 4), col = (c % (BK / 4)) * 4;
        const long long gr = r0 + row, gk = k0 + col;
        const bool in = gr < nrows && gk < K;
        cp_async16(S + row * LDS + col, in ? G + gr * K + gk : G, in ? (int)min(16LL, 4 * (K - gk)) : 0);
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
        cp_async4(S + row * LDS + col, in ? G + gr * K + gk : G, in ? 4 : 0);
      }
    }
  }
}
// Round the ROWS_T x BK floats of a landed tile that this thread copied itself (same chunk map as
// load_tile, so no other thread's cp.async is involved): big part in place, small part (PREC = 3)
// at the same offset in the twin array TILE_FLOATS further on.
template <int ROWS_T>
__device__ __forceinline__ void split_tile(float* S, bool kvec) {
  if (PREC == 1 && RND == 0) return;  // plain TF32, truncation: the MMA reads the top 19 bits as they are
  if (kvec) {
    constexpr int CH = ROWS_T * BK / 4;
#pragma unroll
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int row = c / (BK / 4), col = (c % (BK / 4)) * 4;
        float4* p = reinterpret_cast<float4*>(S + row * LDS + col);
        const float4 v = *p;
        const float4 h = make_float4(tf32_round(v.x), tf32_round(v.y), tf32_round(v.z), tf32_round(v.w));
        *p = h;
        if (PREC == 3)
          *reinterpret_cast<float4*>(S + TILE_FLOATS + row * LDS + col) =
              make_float4(tf32_round(v.x - h.x), tf32_round(v.y - h.y), tf32_round(v.z - h.z), tf32_round(v.w - h.w));
      }
    }
  } else {
    constexpr int CH = ROWS_T * BK;
#pragma unroll 4
    for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CH % THREADS == 0 || c < CH) {
        const int row = c / BK, col = c % BK;
        float* p = S + row * LDS + col;
        const float v = *p, h = tf32_round(v);
        *p = h;
        if (PREC == 3) p[TILE_FLOATS] = tf32_round(v - h);
      }
    }
  }
}

// grid: (ceil_div(M, BM), ceil_div(N, BN)); block THREADS; dynamic smem STAGES * STAGE_FLOATS * 4 bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
lrd_mma_tf32(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
             float* __restrict__ y, long long M, long long N, long long K) {
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / WN, wn = warp % WN;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const bool kvec = (K & 3) == 0;
  const int nk = (int)((K + BK - 1) / BK);
  // ldmatrix lane addresses: A (rows 0-7 | 8-15) x (cols 0-3 | 4-7); B pairs of n-tiles.
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 4;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 4;

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nk) {
      float* st = smem + s * STAGE_FLOATS;
      load_tile<BM>(st, x, M, K, m0, (long long)s * BK, kvec);
      load_tile<BN>(st + BM * LDS, W, N, K, n0, (long long)s * BK, kvec);
    }
    cp_async_commit();
  }

  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<STAGES - 2>();
    float* cur = smem + (kt % STAGES) * STAGE_FLOATS;
    split_tile<BM>(cur, kvec);
    split_tile<BN>(cur + BM * LDS, kvec);
    __syncthreads();  // stage kt split by all threads; stage kt-1 no longer read
    {
      const int nt = kt + STAGES - 1;
      if (nt < nk) {
        float* st = smem + (nt % STAGES) * STAGE_FLOATS;
        load_tile<BM>(st, x, M, K, m0, (long long)nt * BK, kvec);
        load_tile<BN>(st + BM * LDS, W, N, K, n0, (long long)nt * BK, kvec);
      }
      cp_async_commit();
    }
    const float* Ab = cur + (wm * WTM) * LDS;
    const float* Bb = cur + BM * LDS + (wn * WTN) * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      unsigned ab[MT][4], bb[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldsm_x4(ab[i], Ab + (i * 16 + a_row) * LDS + kk + a_col);
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {
        unsigned r[4];
        ldsm_x4(r, Bb + (j * 16 + b_row) * LDS + kk + b_col);
        bb[2 * j][0] = r[0]; bb[2 * j][1] = r[1]; bb[2 * j + 1][0] = r[2]; bb[2 * j + 1][1] = r[3];
      }
#if PREC == 3
      unsigned as[MT][4], bs[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) ldsm_x4(as[i], Ab + TILE_FLOATS + (i * 16 + a_row) * LDS + kk + a_col);
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {
        unsigned r[4];
        ldsm_x4(r, Bb + TILE_FLOATS + (j * 16 + b_row) * LDS + kk + b_col);
        bs[2 * j][0] = r[0]; bs[2 * j][1] = r[1]; bs[2 * j + 1][0] = r[2]; bs[2 * j + 1][1] = r[3];
      }
#endif
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#if PREC == 3
          mma_tf32(acc[i][j], as[i], bb[j][0], bb[j][1]);
          mma_tf32(acc[i][j], ab[i], bs[j][0], bs[j][1]);
#endif
          mma_tf32(acc[i][j], ab[i], bb[j][0], bb[j][1]);
        }
    }
  }
  cp_async_wait<0>();

  // Epilogue: acc[i][j] = rows (g, g+8) x cols (2t, 2t+1) of the 16x8 tile (i, j).
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
        float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if (n < N) v0 = fmaxf(v0 + __ldg(bias + n), 0.f) * 0.5f;
        if (n + 1 < N) v1 = fmaxf(v1 + __ldg(bias + n + 1), 0.f) * 0.5f;
        if (nvec && n + 1 < N) {
          *reinterpret_cast<float2*>(y + m * N + n) = make_float2(v0, v1);
        } else {
          if (n < N) y[m * N + n] = v0;
          if (n + 1 < N) y[m * N + n + 1] = v1;
        }
      }
    }
}
