// Lean FlashAttention-2 forward for fp16 Q, K, V, O: [B, H, S, D], D <= 128 and D % 8 == 0, no mask,
// fp32 accumulation and softmax statistics, on mma.sync.m16n8k16 (sm_90 without the sm_90a wgmma
// path). A block owns BQ query rows of one (b, h); WARPS warps, each owning MI = BQ / (16 * WARPS)
// row tiles of 16 rows (MI = 2 shares every K / V B fragment between two row tiles, as FA2 does).
// The head dimension is a compile-time 128-column tile: columns >= D are zero-filled by cp.async
// (src-size 0), so the hot loop has no D-dependent control flow and D < 128 stays exact.
// Shared rows are 256 B (16 chunks of 16 B) with the XOR swizzle chunk' = chunk ^ (row & 7): cp.async
// stores and every ldmatrix are conflict-free, and each 16 consecutive threads load one whole 256 B
// global row (fully coalesced). Q stays in shared memory (ldmatrix.x4 per 16 columns), K / V tiles of
// BKV keys stream through a STAGES-deep cp.async ring with one __syncthreads per tile. Softmax:
// raw-score row max (quad shuffles once per tile), p = ex2.approx(s * c - m * c) with
// c = log2(e) / sqrt(D) (one FFMA + MUFU per score), O rescaled once per tile, per-lane row sums
// reduced once at the end; keys >= S are masked only in the last partial tile. P is packed into
// fp16x2 A fragments straight from the S accumulators. The epilogue normalises O, stages it in the
// warp's own (swizzled) Q rows and writes 16-byte coalesced stores. Rows >= S are never stored.
// D > 128 or D % 8 != 0 writes NaN (fails loudly).
#define BQ ${BQ}
#define WARPS ${WARPS}
#define BKV ${BKV}
#define STAGES ${STAGES}
#define MI (BQ / (16 * WARPS))
#define THREADS (32 * WARPS)
#define NT (BKV / 8)   // 8-key score tiles
#define RPP (THREADS / 16)  // rows per load pass (16 threads x 16 B = one 256 B row)
#define ROWB 256            // bytes per shared row (128 halves)
#define KVB (BKV * ROWB)    // bytes of one K (or V) tile
#define STB (2 * KVB)       // bytes of one stage (K then V)
#if MI == 2
#define MINB (THREADS == 128 ? 2 : 1)
#else
#define MINB (THREADS == 128 ? 3 : 1)
#endif

typedef unsigned short half_t;

static_assert(BQ % (16 * WARPS) == 0 && (MI == 1 || MI == 2), "BQ / (16 * WARPS) must be 1 or 2");
static_assert(BKV % 16 == 0 && BKV % RPP == 0 && BQ % RPP == 0, "tile sizes");

__device__ __forceinline__ void cp_async16(unsigned s, const void* g, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// c += a(16x16, row) * b(16x8, col), fp16 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_f16(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats to an f16x2 register: lo in bits 0-15, hi in bits 16-31.
__device__ __forceinline__ unsigned pack_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ void st_shared_b32(unsigned a, unsigned v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4(unsigned a) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
  return v;
}

// BR rows of a [S][D] matrix into a swizzled [BR][128] shared tile. s: this thread's first shared
// address (row lrow, swizzled chunk), g: its first global element (row r0 + lrow, chunk column or 0),
// pstride: RPP * D, nbytes: 16 when the thread's chunk is inside D else 0 (zero-fill), rows_left:
// S - r0 - lrow (rows past S are zero-filled from a safe address).
template <int BR>
__device__ __forceinline__ void load_rows(unsigned s, const half_t* g, int pstride, int nbytes, int rows_left,
                                          const half_t* safe) {
#pragma unroll
  for (int i = 0; i < BR / RPP; ++i) {
    const bool in = i * RPP < rows_left;
    cp_async16(s + i * RPP * ROWB, in ? g + i * pstride : safe, in ? nbytes : 0);
  }
}

// One K tile and one V tile (keys r0 .. r0 + BKV - 1) into the stage at shared address s. Hot path
// (D == 128, whole tile inside S): compile-time row stride, immediate offsets, no checks.
__device__ __forceinline__ void load_kv(unsigned s, const half_t* kg, const half_t* vg, bool fast, int pstride,
                                        int nbytes, int rows_left, const half_t* safe) {
  if (fast) {
#pragma unroll
    for (int i = 0; i < BKV / RPP; ++i) cp_async16(s + i * RPP * ROWB, kg + i * RPP * 128, 16);
#pragma unroll
    for (int i = 0; i < BKV / RPP; ++i) cp_async16(s + KVB + i * RPP * ROWB, vg + i * RPP * 128, 16);
  } else {
    load_rows<BKV>(s, kg, pstride, nbytes, rows_left, safe);
    load_rows<BKV>(s + KVB, vg, pstride, nbytes, rows_left, safe);
  }
}

// grid: (ceil_div(S, BQ), B*H); block THREADS; smem 256 * (BQ + 2 * STAGES * BKV) bytes.
extern "C" __global__ void __launch_bounds__(THREADS, MINB)
sdpa_flash2_f16(const half_t* __restrict__ Q, const half_t* __restrict__ Kt, const half_t* __restrict__ V,
                half_t* __restrict__ O, long long B, long long H, long long S, long long D) {
  extern __shared__ float4 smem4[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const long long hoff = (long long)blockIdx.y * S * D;
  const int q0 = blockIdx.x * BQ;
  const int Si = (int)S;
  half_t* Og = O + hoff;

  if (D > 128 || (D & 7) != 0) {  // unsupported head dimension: poison this block's rows
    for (long long i = tid; i < (long long)BQ * D; i += THREADS) {
      const long long q = q0 + i / D;
      if (q < S) Og[q * D + i % D] = (half_t)0x7e00;
    }
    return;
  }
  const unsigned sQ = (unsigned)__cvta_generic_to_shared(smem4);
  const unsigned sKV = sQ + BQ * ROWB;

  // Loader: thread -> (row lrow + i * RPP, chunk lch); the swizzle is constant per thread (RPP % 8 == 0).
  const int lch = tid & 15, lrow = tid >> 4;
  const bool colok = lch * 8 < (int)D;
  const int nbytes = colok ? 16 : 0;
  const unsigned lsoff = lrow * ROWB + ((lch ^ (lrow & 7)) << 4);
  const long long goff = (long long)lrow * D + (colok ? lch * 8 : 0);
  const bool d128 = D == 128;
  const int pstride = RPP * (int)D;      // a head (S * D elements) is assumed to fit in 31 bits
  const long long tstride = BKV * D;
  const half_t* kg = Kt + hoff + goff;
  const half_t* vg = V + hoff + goff;
  const half_t* safe = Kt + hoff;
  const int nkv = (Si + BKV - 1) / BKV;
  const float sl2 = 1.4426950408889634f / sqrtf((float)D);

  load_rows<BQ>(sQ + lsoff, Q + hoff + (long long)q0 * D + goff, pstride, nbytes, Si - q0 - lrow, Q + hoff);
  int ld_row = 0;  // first key of the next tile to load
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkv) {
      const bool full = ld_row + BKV <= Si;
      load_kv(sKV + s * STB + lsoff, kg, vg, d128 && full, pstride, nbytes, Si - ld_row - lrow, safe);
      kg += tstride;
      vg += tstride;
      ld_row += BKV;
    }
    cp_async_commit();
  }

  // ldmatrix lane offsets. "A" pattern: row (lane & 7) + ((lane >> 3) & 1) * 8, chunk 2j + (lane >> 4)
  // (Q A fragments and V trans B fragments); "B" pattern: row (lane & 7) + (lane >> 4) * 8, chunk
  // 2j + ((lane >> 3) & 1) (K B fragments). Swizzled chunk = chunk ^ (lane & 7); j = 4..7 adds 128 B.
  unsigned offA[4], offB[4];
  {
    const int ra = (lane & 7) + ((lane >> 3) & 1) * 8, rb = (lane & 7) + (lane >> 4) * 8;
    const int xa = (lane >> 4) ^ (lane & 7), xb = ((lane >> 3) & 1) ^ (lane & 7);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      offA[j] = ra * ROWB + (((2 * j) ^ xa) << 4);
      offB[j] = rb * ROWB + (((2 * j) ^ xb) << 4);
    }
  }
  const unsigned sQw = sQ + warp * (16 * MI) * ROWB;

  float o[MI][16][4];
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int i = 0; i < 16; ++i)
#pragma unroll
      for (int r = 0; r < 4; ++r) o[mi][i][r] = 0.f;
  float m[MI][2], l[MI][2];  // raw-score row max and per-lane partial row sums, rows g and g + 8
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    m[mi][0] = m[mi][1] = -__int_as_float(0x7f800000);
    l[mi][0] = l[mi][1] = 0.f;
  }

  unsigned rd = 0, wr = (STAGES - 1) * STB;  // stage byte offsets (read, write)
  for (int j = 0; j < nkv; ++j) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    if (j + STAGES - 1 < nkv) {
      const bool full = ld_row + BKV <= Si;
      load_kv(sKV + wr + lsoff, kg, vg, d128 && full, pstride, nbytes, Si - ld_row - lrow, safe);
      kg += tstride;
      vg += tstride;
      ld_row += BKV;
    }
    cp_async_commit();
    wr = (wr + STB == STAGES * STB) ? 0u : wr + STB;
    const unsigned sK = sKV + rd, sV = sK + KVB;
    rd = (rd + STB == STAGES * STB) ? 0u : rd + STB;

    // S = Q K^T: MI x 16 rows by BKV keys.
    float s[MI][NT][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r) s[mi][n][r] = 0.f;
#pragma unroll
    for (int kd = 0; kd < 8; ++kd) {
      unsigned qf[MI][4];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) ldsm_x4(qf[mi], sQw + mi * 16 * ROWB + offA[kd & 3] + (kd >> 2) * 128);
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        unsigned b[4];
        ldsm_x4(b, sK + np * 16 * ROWB + offB[kd & 3] + (kd >> 2) * 128);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          mma_f16(s[mi][2 * np], qf[mi], b[0], b[1]);
          mma_f16(s[mi][2 * np + 1], qf[mi], b[2], b[3]);
        }
      }
    }
    // Mask keys >= S (last partial tile only).
    const int kbase = j * BKV;
    if (kbase + BKV > Si) {
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (kbase + n * 8 + 2 * t + (r & 1) >= Si)
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) s[mi][n][r] = -__int_as_float(0x7f800000);
    }
    // Online softmax; a row lives in the 4 lanes of a quad.
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      float mx0 = m[mi][0], mx1 = m[mi][1];
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        mx0 = fmaxf(mx0, fmaxf(s[mi][n][0], s[mi][n][1]));
        mx1 = fmaxf(mx1, fmaxf(s[mi][n][2], s[mi][n][3]));
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float a0 = ex2((m[mi][0] - mx0) * sl2), a1 = ex2((m[mi][1] - mx1) * sl2);
      m[mi][0] = mx0;
      m[mi][1] = mx1;
      const float ms0 = mx0 * sl2, ms1 = mx1 * sl2;
      float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
      for (int n = 0; n < NT; ++n) {
        s[mi][n][0] = ex2(fmaf(s[mi][n][0], sl2, -ms0));
        s[mi][n][1] = ex2(fmaf(s[mi][n][1], sl2, -ms0));
        s[mi][n][2] = ex2(fmaf(s[mi][n][2], sl2, -ms1));
        s[mi][n][3] = ex2(fmaf(s[mi][n][3], sl2, -ms1));
        rs0 += s[mi][n][0] + s[mi][n][1];
        rs1 += s[mi][n][2] + s[mi][n][3];
      }
      l[mi][0] = fmaf(l[mi][0], a0, rs0);
      l[mi][1] = fmaf(l[mi][1], a1, rs1);
#pragma unroll
      for (int d = 0; d < 16; ++d) {
        o[mi][d][0] *= a0;
        o[mi][d][1] *= a0;
        o[mi][d][2] *= a1;
        o[mi][d][3] *= a1;
      }
    }
    // O += P V, 16 keys per MMA; the S accumulator layout is the A-fragment layout.
#pragma unroll
    for (int kc = 0; kc < BKV / 16; ++kc) {
      unsigned pa[MI][4];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        pa[mi][0] = pack_f16x2(s[mi][2 * kc][0], s[mi][2 * kc][1]);
        pa[mi][1] = pack_f16x2(s[mi][2 * kc][2], s[mi][2 * kc][3]);
        pa[mi][2] = pack_f16x2(s[mi][2 * kc + 1][0], s[mi][2 * kc + 1][1]);
        pa[mi][3] = pack_f16x2(s[mi][2 * kc + 1][2], s[mi][2 * kc + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < 8; ++dp) {
        unsigned b[4];
        ldsm_x4_trans(b, sV + kc * 16 * ROWB + offA[dp & 3] + (dp >> 2) * 128);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi) {
          mma_f16(o[mi][2 * dp], pa[mi], b[0], b[1]);
          mma_f16(o[mi][2 * dp + 1], pa[mi], b[2], b[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  // Epilogue: normalise, stage in this warp's own Q rows (swizzled), 16-byte coalesced stores.
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    float l0 = l[mi][0], l1 = l[mi][1];
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float i0 = 1.0f / l0, i1 = 1.0f / l1;
    const unsigned r0 = sQw + (mi * 16 + g) * ROWB + 4 * t;
#pragma unroll
    for (int d = 0; d < 16; ++d) {
      const unsigned c = (unsigned)((d ^ g) << 4);  // row & 7 == g for both rows g and g + 8
      st_shared_b32(r0 + c, pack_f16x2(o[mi][d][0] * i0, o[mi][d][1] * i0));
      st_shared_b32(r0 + 8 * ROWB + c, pack_f16x2(o[mi][d][2] * i1, o[mi][d][3] * i1));
    }
  }
  __syncwarp();
  const int wq0 = q0 + warp * 16 * MI;
#pragma unroll
  for (int it = 0; it < MI * 8; ++it) {
    const int idx = it * 32 + lane, row = idx >> 4, ch = idx & 15;
    const uint4 v = ld_shared_v4(sQw + row * ROWB + ((ch ^ (row & 7)) << 4));
    if (wq0 + row < Si && ch * 8 < (int)D)
      *reinterpret_cast<uint4*>(Og + (long long)(wq0 + row) * D + ch * 8) = v;
  }
}
