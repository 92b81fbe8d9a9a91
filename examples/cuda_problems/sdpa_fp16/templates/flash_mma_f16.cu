// Flash attention forward for fp16 Q, K, V, O: [B, H, S, D], D <= 128 and D % 8 == 0, no mask,
// fp32 accumulation and softmax statistics, on mma.sync.m16n8k16 (sm_90 without the sm_90a wgmma
// path). A block owns BQ query rows of one (b, h), one warp per 16 rows. The Q tile is staged once
// (cp.async) and kept in registers as A fragments (ldmatrix.x4). K/V tiles of BKV keys stream
// through a STAGES-deep cp.async ring. Per tile: S = Q K^T (B fragments by ldmatrix.x4 of K rows),
// online softmax in registers (row max / sum over the 4 lanes of a quad with shuffles, exp2 with the
// 1/sqrt(D)*log2(e) scale folded in), the O accumulator rescaled, P converted to fp16 A fragments in
// registers (the accumulator layout of m16n8k16 is the A layout), and O += P V with B fragments from
// ldmatrix.x4.trans of V rows. Shared rows are padded to DMAX + 8 halves (272 B = 17 x 16 B), so
// every ldmatrix is conflict-free. Keys >= S are masked; rows and columns outside the tensor are
// zero-filled by cp.async and not stored. D > 128 or D % 8 != 0 writes NaN (fails loudly).
#define BQ ${BQ}
#define BKV ${BKV}
#define STAGES ${STAGES}
#define DMAX 128
#define DP (DMAX + 8)
#define NWARPS (BQ / 16)
#define THREADS (32 * NWARPS)
#define NT (BKV / 8)
#define DT (DMAX / 8)
#define KD (DMAX / 16)

typedef unsigned short half_t;

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], const void* p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// c += a(16x16, row) * b(16x8, col), fp16 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats to an f16x2 register: lo in bits 0-15, hi in bits 16-31.
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// BR rows x DMAX halves of a [S][D] fp16 matrix (rows r0..) into T[BR][DP]; zero outside.
template <int BR>
__device__ __forceinline__ void load_rows(half_t* T, const half_t* __restrict__ G, long long S, long long D, long long r0) {
  constexpr int CH = BR * (DMAX / 8);
#pragma unroll
  for (int i = 0; i < (CH + THREADS - 1) / THREADS; ++i) {
    const int c = threadIdx.x + i * THREADS;
    if (CH % THREADS == 0 || c < CH) {
      const int row = c / (DMAX / 8), col = (c % (DMAX / 8)) * 8;
      const bool in = r0 + row < S && col < D;
      cp_async16(T + row * DP + col, in ? G + (r0 + row) * D + col : G, in ? 16 : 0);
    }
  }
}

// grid: (ceil_div(S, BQ), B*H); block THREADS; smem 2 * (BQ + 2*STAGES*BKV) * DP bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_flash_f16(const half_t* __restrict__ Q, const half_t* __restrict__ Kt, const half_t* __restrict__ V,
               half_t* __restrict__ O, long long B, long long H, long long S, long long D) {
  extern __shared__ float4 smem4[];
  half_t* Qs = reinterpret_cast<half_t*>(smem4);  // [BQ][DP]
  half_t* KVs = Qs + BQ * DP;                     // [STAGES][2][BKV][DP]
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const long long bh = blockIdx.y;
  const long long q0 = (long long)blockIdx.x * BQ;
  const half_t* Qg = Q + bh * S * D;
  const half_t* Kg = Kt + bh * S * D;
  const half_t* Vg = V + bh * S * D;
  half_t* Og = O + bh * S * D;

  if (D > DMAX || (D & 7) != 0) {  // unsupported head dimension: poison this block's rows
    for (long long i = threadIdx.x; i < (long long)BQ * D; i += THREADS) {
      const long long q = q0 + i / D;
      if (q < S) Og[q * D + i % D] = (half_t)0x7e00;
    }
    return;
  }
  const int nkv = (int)((S + BKV - 1) / BKV);
  const float sl2 = 1.4426950408889634f / sqrtf((float)D);

  load_rows<BQ>(Qs, Qg, S, D, q0);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkv) {
      half_t* buf = KVs + s * 2 * BKV * DP;
      load_rows<BKV>(buf, Kg, S, D, (long long)s * BKV);
      load_rows<BKV>(buf + BKV * DP, Vg, S, D, (long long)s * BKV);
    }
    cp_async_commit();
  }

  unsigned qf[KD][4];
  float o[DT][4];
#pragma unroll
  for (int i = 0; i < DT; ++i)
#pragma unroll
    for (int r = 0; r < 4; ++r) o[i][r] = 0.f;
  float m_lo = -1.0e30f, m_hi = -1.0e30f, l_lo = 0.f, l_hi = 0.f;  // rows g and g+8 (scaled log2 domain)

  for (int j = 0; j < nkv; ++j) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int nj = j + STAGES - 1;
      if (nj < nkv) {
        half_t* buf = KVs + (nj % STAGES) * 2 * BKV * DP;
        load_rows<BKV>(buf, Kg, S, D, (long long)nj * BKV);
        load_rows<BKV>(buf + BKV * DP, Vg, S, D, (long long)nj * BKV);
      }
      cp_async_commit();
    }
    if (j == 0) {
      // Q fragments: matrices (rows 0-7, d 0-7), (rows 8-15, d 0-7), (rows 0-7, d 8-15), (rows 8-15, d 8-15).
      const int r = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = (lane >> 4) * 8;
#pragma unroll
      for (int kd = 0; kd < KD; ++kd) ldsm_x4(qf[kd], Qs + r * DP + kd * 16 + c);
    }
    const half_t* Ks = KVs + (j % STAGES) * 2 * BKV * DP;
    const half_t* Vs = Ks + BKV * DP;

    // S = Q K^T for this warp's 16 rows and BKV keys.
    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) s[n][r] = 0.f;
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
      if (kd * 16 >= D) break;
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        // matrices: (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15)
        unsigned b[4];
        const int key = np * 16 + (lane & 7) + (lane >> 4) * 8, c = kd * 16 + ((lane >> 3) & 1) * 8;
        ldsm_x4(b, Ks + key * DP + c);
        mma_f16(s[2 * np], qf[kd], b[0], b[1]);
        mma_f16(s[2 * np + 1], qf[kd], b[2], b[3]);
      }
    }
    // Scale into the log2 domain and mask keys >= S.
    const long long kbase = (long long)j * BKV;
    const bool tail = kbase + BKV > S;
#pragma unroll
    for (int n = 0; n < NT; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        s[n][r] *= sl2;
        if (tail && kbase + n * 8 + 2 * t + (r & 1) >= S) s[n][r] = -1.0e30f;
      }
    // Online softmax: rows g (r = 0, 1) and g + 8 (r = 2, 3); a row lives in the 4 lanes of a quad.
    float mx_lo = m_lo, mx_hi = m_hi;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      mx_lo = fmaxf(mx_lo, fmaxf(s[n][0], s[n][1]));
      mx_hi = fmaxf(mx_hi, fmaxf(s[n][2], s[n][3]));
    }
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 1));
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, 2));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 1));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, 2));
    const float a_lo = exp2f(m_lo - mx_lo), a_hi = exp2f(m_hi - mx_hi);
    m_lo = mx_lo;
    m_hi = mx_hi;
    float rs_lo = 0.f, rs_hi = 0.f;
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      s[n][0] = exp2f(s[n][0] - m_lo);
      s[n][1] = exp2f(s[n][1] - m_lo);
      s[n][2] = exp2f(s[n][2] - m_hi);
      s[n][3] = exp2f(s[n][3] - m_hi);
      rs_lo += s[n][0] + s[n][1];
      rs_hi += s[n][2] + s[n][3];
    }
    l_lo = l_lo * a_lo + rs_lo;  // per-lane partial sums; the quad is reduced once at the end
    l_hi = l_hi * a_hi + rs_hi;
#pragma unroll
    for (int d = 0; d < DT; ++d) {
      o[d][0] *= a_lo; o[d][1] *= a_lo;
      o[d][2] *= a_hi; o[d][3] *= a_hi;
    }
    // O += P V, 16 keys per MMA; P's accumulator layout is the A-fragment layout.
#pragma unroll
    for (int kc = 0; kc < BKV / 16; ++kc) {
      unsigned pa[4];
      pa[0] = pack_f16x2(s[2 * kc][0], s[2 * kc][1]);
      pa[1] = pack_f16x2(s[2 * kc][2], s[2 * kc][3]);
      pa[2] = pack_f16x2(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      pa[3] = pack_f16x2(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        if (dp * 16 >= D) break;
        // matrices (transposed): (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)
        unsigned b[4];
        const int key = kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, c = dp * 16 + (lane >> 4) * 8;
        ldsm_x4_trans(b, Vs + key * DP + c);
        mma_f16(o[2 * dp], pa, b[0], b[1]);
        mma_f16(o[2 * dp + 1], pa, b[2], b[3]);
      }
    }
  }
  cp_async_wait<0>();

  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 1);
  l_lo += __shfl_xor_sync(0xffffffffu, l_lo, 2);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 1);
  l_hi += __shfl_xor_sync(0xffffffffu, l_hi, 2);
  const float inv_lo = 1.0f / l_lo, inv_hi = 1.0f / l_hi;
  const long long r_lo = q0 + warp * 16 + g, r_hi = r_lo + 8;
#pragma unroll
  for (int d = 0; d < DT; ++d) {
    const int c = d * 8 + 2 * t;
    if (c >= D) break;
    if (r_lo < S) *reinterpret_cast<unsigned*>(Og + r_lo * D + c) = pack_f16x2(o[d][0] * inv_lo, o[d][1] * inv_lo);
    if (r_hi < S) *reinterpret_cast<unsigned*>(Og + r_hi * D + c) = pack_f16x2(o[d][2] * inv_hi, o[d][3] * inv_hi);
  }
}
