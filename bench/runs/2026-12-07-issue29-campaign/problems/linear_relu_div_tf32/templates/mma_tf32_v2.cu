// y = relu(x W^T + b) / 2 on the tensor cores: mma.sync.m16n8k8 TF32, fp32 accumulation (v2).
// PREC = 1: one MMA per product; RND = 0 feeds the fp32 bits as they are (the tensor core reads the
// top 19 bits: truncation), RND = 1 rounds each fragment register with cvt.rna.tf32 after loading.
// PREC = 3: 3xTF32 split precision: a = big + small, big = cvt.rna(a), small = cvt.rna(a - big),
// acc += a_small*b_big + a_big*b_small + a_big*b_big (small terms first); RND is ignored. The split
// happens in registers on the loaded fragments, so shared memory holds only the raw fp32 tiles.
// Block tile BM x BN x BK, WM x WN warps, warp tile (BM/WM) x (BN/WN) made of 16x8 MMA tiles.
// x [M,K] and W [N,K] are both K-contiguous (the row.col operand layout): tiles stream global ->
// shared with 16-byte cp.async (zero-filled by the source size at the M/N/K edges) into a
// STAGES-deep ring. Shared rows are BK floats (BK/4 16-byte chunks) with no padding; chunk c of row
// r lives at chunk c ^ swz(r) (XOR swizzle), which makes both the cp.async stores and the ldmatrix
// fragment loads bank-conflict-free. Fragments are loaded with ldmatrix.x4.b16 (an 8x4 tf32 block is
// an 8x8 b16 matrix): one instruction per 16x8 A fragment and per two 8x8 B fragments, double
// buffered in registers across k-steps (the next stage's first k-step is loaded before the last
// k-step's MMAs). Per-lane shared addresses are precomputed; the global side advances pointers.
// K % 4 != 0 (rows not 16-byte aligned) takes a 4-byte cp.async path with the same layout.
// Grid x walks the M tiles so the blocks sharing a W column block run together. Bias, ReLU and
// the halving are fused in the epilogue.
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
#define KS (BK / 8)              // k-steps per stage
#define CHR (BK / 4)             // 16-byte chunks per shared row
#define RSTEP (THREADS / CHR)    // rows between one thread's successive copies
#define A_CP (BM * CHR / THREADS)
#define B_CP (BN * CHR / THREADS)
#define ROW_BYTES (BK * 4)
#define A_BYTES (BM * ROW_BYTES)
#define STAGE_BYTES ((BM + BN) * ROW_BYTES)

// XOR swizzle of the chunk index by row: any 8 consecutive rows (from a multiple of 8) reading the
// same logical chunk hit 8 distinct 16-byte bank groups.
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

// cvt.rna.tf32.f32 on the bits (round to nearest, ties away: add half an ulp of the 10-bit mantissa
// to the magnitude, clear the 13 low bits): bit-identical to the PTX cvt for finite inputs, 2 SASS
// instructions instead of 3 (the PTX cvt adds a NaN/Inf guard).
__device__ __forceinline__ unsigned tf32_rna(unsigned f) { return (f + 0x1000u) & 0xffffe000u; }
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

// grid: (ceil_div(M, BM), ceil_div(N, BN)); block THREADS; dynamic smem STAGES * STAGE_BYTES.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
lrd_mma_tf32_v2(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                float* __restrict__ y, long long M, long long N, long long K) {
  extern __shared__ float4 smem4[];
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem4);
  const unsigned send = sbase + STAGES * STAGE_BYTES;
  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int wm = warp / WN, wn = warp % WN;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const bool kvec = (K & 3) == 0;
  const int nk = (int)((K + BK - 1) / BK);
  const bool interior = kvec && m0 + BM <= M && n0 + BN <= N;

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
      const long long k0 = (long long)s * BK;
      const bool fast = interior && k0 + BK <= K;
      load_tile<A_CP>(ws, x, ga, mleft, K, k0, r0, cc, dst, fast, kvec);
      load_tile<B_CP>(ws + A_BYTES, W, gb, nleft, K, k0, r0, cc, dst, fast, kvec);
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
        // Next stage must have landed (for this thread's copies: wait; for all: barrier). The barrier
        // also ends every warp's reads of the stage that the copy issued at s == 0 of kt+1 overwrites.
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
          fb[nxt][2 * j][0] = r[0]; fb[nxt][2 * j][1] = r[1]; fb[nxt][2 * j + 1][0] = r[2]; fb[nxt][2 * j + 1][1] = r[3];
        }
      }
      if (s == 0) {
        // Tile kt + STAGES - 1 into the stage read during kt - 1 (all warps passed the barrier since).
        if (kt + STAGES - 1 < nk) {
          const bool fast = interior && kload + BK <= K;
          load_tile<A_CP>(ws, x, ga, mleft, K, kload, r0, cc, dst, fast, kvec);
          load_tile<B_CP>(ws + A_BYTES, W, gb, nleft, K, kload, r0, cc, dst, fast, kvec);
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
#if RND
      unsigned bb[NT][2];
#pragma unroll
      for (int j = 0; j < NT; ++j) { bb[j][0] = tf32_rna(fb[cur][j][0]); bb[j][1] = tf32_rna(fb[cur][j][1]); }
#endif
#pragma unroll
      for (int i = 0; i < MT; ++i) {
#if RND
        unsigned a[4];
#pragma unroll
        for (int h = 0; h < 4; ++h) a[h] = tf32_rna(fa[cur][i][h]);
#else
        const unsigned* a = fa[cur][i];
        const unsigned (*bb)[2] = fb[cur];
#endif
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
}
