// FlashAttention-3-lite forward for fp16 Q, K, V, O: [B, H, S, D], D <= 128 and D % 8 == 0, no mask,
// fp32 accumulation and softmax statistics, on Hopper warpgroup MMA (wgmma.mma_async, sm_90a).
//
// Work split. A block owns BQ = 64 * NWG query rows of one (b, h); NWG consumer warpgroups of 128
// threads, warpgroup w owning rows 64w .. 64w + 63 (wgmma M = 64). All threads load: Q once, K / V
// tiles of BKV keys through a STAGES-deep cp.async ring (16-byte copies, src-size 0 zero-fills rows
// >= S and columns >= D, so the hot loop has no D- or S-dependent control flow except the key mask
// of the last partial tile). No TMA, no warp specialisation, no mbarriers: one __syncthreads per tile.
//
// GEMMs. S = Q K^T: wgmma m64n{BKV}k16 with A = Q and B = K both read from shared memory through
// matrix descriptors (both K-major: contiguous along D), 8 k-steps over the 128-wide D tile.
// O += P V: wgmma m64n128k16 with A = P from registers (fp16x2, packed straight from the S
// accumulators) and B = V from shared memory, MN-major (V is contiguous along D = N), imm-trans-b = 1,
// BKV / 16 k-steps. Accumulator fragment (per warp of the warpgroup: rows 16 * warp .. + 15; per
// 8-column chunk n, registers 4n + {0, 1}: row lane / 4, columns 8n + 2 (lane % 4) + {0, 1};
// 4n + {2, 3}: row lane / 4 + 8) equals the mma.sync m16n8 layout, and the register A fragment of
// m64k16 equals two such chunks packed as f16x2, so P needs no data movement.
//
// Shared layout (all tiles): the canonical 128-byte-swizzle layout. A tile of R rows x 128 halves is
// two column halves of 64 halves (128 B per row), half h at h * R * 128 bytes; inside a half, row r
// at r * 128 and its 16-byte chunk c (halves 8c .. 8c + 7) at chunk c ^ (r & 7). Tile bases are
// 1024-byte aligned (the dynamic smem base is rounded up; the launch asks for 1 KB extra), so the
// hardware's 128B swizzle (address bits 4-6 ^= bits 7-9) reproduces exactly this placement and the
// descriptor base offset is 0.
//  * K-major operand (Q as A, K as B): canonical ((8, m), (8, 2)) : ((64, SBO), (1, 8)) halves, i.e.
//    8 rows of 128 B form a 1 KB swizzle atom, atoms along M / N at SBO = 1024 B, LBO unused (1).
//    k-step kk (16 halves of D) lives in half kk / 4 at byte (kk % 4) * 32 of each row: the
//    descriptor start address is tile + (kk / 4) * R * 128 + (kk % 4) * 32 (as CUTLASS advances
//    K-major SW128 descriptors inside the swizzle atom).
//  * MN-major operand (V as B, N = D, K = keys): canonical ((8, 8, m), (8, k)) : ((1, 8, LBO), (64, SBO))
//    halves: 64 contiguous D per 128 B row, 8 keys per 1 KB atom, the next 64 D (the other column
//    half) at LBO = BKV * 128 B, the next 8 keys at SBO = 1024 B. k-step kc (keys 16 kc .. 16 kc + 15)
//    starts at tile + kc * 2048. The same row-major-by-key placement as K, so one loader serves both.
// Descriptor: bits 0-13 start >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 49-51 base offset (0), 62-63
// swizzle mode (1 = 128B).
//
// Ordering. cp.async writes (generic proxy) are made visible to wgmma (async proxy) by
// cp.async.wait_group, then fence.proxy.async.shared::cta by every writing thread, then __syncthreads.
// wgmma.fence before each batch (registers touched since), commit_group per GEMM, wait_group before
// the results (or the smem stage / the P registers) are reused; accumulators are pinned after each
// wait by empty asm "+f" fences so the compiler cannot hoist their reads above the wait.
//
// Schedule. OVERLAP = 0: per tile S GEMM, wait, softmax, O rescale, PV GEMM, wait.
// OVERLAP = 1 (FA3 intra-warpgroup overlap): tile j issues S_j = Q K_j^T, then O += P_{j-1} V_{j-1},
// waits only for S_j, runs the softmax of S_j while the PV GEMM runs, then waits for it, rescales O
// and packs P_j; the last PV runs after the loop. V_{j-1} is still read during tile j, so the ring
// prefetches STAGES - 2 tiles ahead instead of STAGES - 1 (STAGES - OVERLAP >= 2).
//
// Softmax: raw-score row max (quad shuffles once per tile), p = ex2.approx(s * c - m * c) with
// c = log2(e) / sqrt(D), per-lane partial row sums reduced at the end. The epilogue normalises O,
// stages it in the warp's own (swizzled) Q rows and writes 16-byte coalesced stores of rows < S,
// columns < D. D > 128 or D % 8 != 0 writes NaN (fails loudly).
#define NWG ${NWG}
#define BKV ${BKV}
#define STAGES ${STAGES}
#define OVERLAP ${OVERLAP}
#define BQ (64 * NWG)
#define THREADS (128 * NWG)
#define RPP (THREADS / 16)        // rows per load pass (16 threads x 16 B = one 256 B global row)
#define QB (BQ * 256)             // bytes of the Q tile
#define KVB (BKV * 256)           // bytes of one K (or V) tile
#define STB (2 * KVB)             // bytes of one stage (K then V)
#define LA (STAGES - 1 - OVERLAP) // tiles in flight ahead of the one being consumed
#define NS (BKV / 2)              // S accumulator registers per thread
#define SW128 (1ull << 62)

typedef unsigned short half_t;

static_assert(NWG == 1 || NWG == 2, "NWG");
static_assert(BKV == 64 || BKV == 128, "BKV");
static_assert(LA >= 1, "STAGES - OVERLAP >= 2");
static_assert(BKV % RPP == 0 && BQ % RPP == 0 && RPP % 8 == 0, "tile sizes");

__device__ __forceinline__ void cp_async16(unsigned s, const void* g, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
template <int N>
__device__ __forceinline__ void pin(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
__device__ __forceinline__ void pin_u(unsigned (&r)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
// 128B-swizzle descriptor for a 1024-aligned operand at shared address a (start field advanced later).
__device__ __forceinline__ unsigned long long make_desc(unsigned a, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | SW128;
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

#if BKV == 64
// d(64 x 64, fp32) (+)= A(64 x 16, smem desc da, K-major) * B(16 x 64, smem desc db, K-major); scale_d 0: d = A B.
template <int SCALE_D>
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "n"(SCALE_D));
}
#else
// d(64 x 128, fp32) (+)= A(64 x 16, smem desc da, K-major) * B(16 x 128, smem desc db, K-major); scale_d 0: d = A B.
template <int SCALE_D>
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "n"(SCALE_D));
}
#endif
// d(64 x 128, fp32) += A(64 x 16, f16 registers a0..a3) * B(16 x 128, smem desc db, MN-major: imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n128_tb(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// BR rows of a [S][D] matrix into a swizzled [2][BR][64] shared tile. s: this thread's first shared
// address (row lrow, swizzled chunk), g: its first global element (row r0 + lrow, chunk column or 0),
// pstride: RPP * D, nbytes: 16 when the thread's chunk is inside D else 0 (zero-fill), rows_left:
// S - r0 - lrow (rows past S are zero-filled from a safe address). Pass i adds RPP rows = RPP * 128 B
// (RPP % 8 == 0 keeps the swizzle phase).
template <int BR>
__device__ __forceinline__ void load_rows(unsigned s, const half_t* g, int pstride, int nbytes, int rows_left,
                                          const half_t* safe) {
#pragma unroll
  for (int i = 0; i < BR / RPP; ++i) {
    const bool in = i * RPP < rows_left;
    cp_async16(s + i * RPP * 128, in ? g + i * pstride : safe, in ? nbytes : 0);
  }
}

// One K tile and one V tile (keys r0 .. r0 + BKV - 1) into the stage at shared address s (this
// thread's offset included). Hot path (D == 128, whole tile inside S): no checks.
__device__ __forceinline__ void load_kv(unsigned s, const half_t* kg, const half_t* vg, bool fast, int pstride,
                                        int nbytes, int rows_left, const half_t* safe) {
  if (fast) {
#pragma unroll
    for (int i = 0; i < BKV / RPP; ++i) cp_async16(s + i * RPP * 128, kg + i * RPP * 128, 16);
#pragma unroll
    for (int i = 0; i < BKV / RPP; ++i) cp_async16(s + KVB + i * RPP * 128, vg + i * RPP * 128, 16);
  } else {
    load_rows<BKV>(s, kg, pstride, nbytes, rows_left, safe);
    load_rows<BKV>(s + KVB, vg, pstride, nbytes, rows_left, safe);
  }
}

// S (registers) = Q K^T for the K tile at descriptor dK (stage base; K-major, SBO 1 KB), one commit.
__device__ __forceinline__ void gemm_qk(float (&s)[NS], unsigned long long dQ, unsigned long long dK) {
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    const unsigned qo = ((kk >> 2) * (BQ * 128) + (kk & 3) * 32) >> 4;
    const unsigned ko = ((kk >> 2) * (BKV * 128) + (kk & 3) * 32) >> 4;
#if BKV == 64
    if (kk == 0) wgmma_ss_n64<0>(s, dQ + qo, dK + ko);
    else wgmma_ss_n64<1>(s, dQ + qo, dK + ko);
#else
    if (kk == 0) wgmma_ss_n128<0>(s, dQ + qo, dK + ko);
    else wgmma_ss_n128<1>(s, dQ + qo, dK + ko);
#endif
  }
  wgmma_commit();
}
// O += P V for the V tile at descriptor dV (MN-major, LBO = BKV * 128, SBO 1 KB), one commit.
__device__ __forceinline__ void gemm_pv(float (&o)[64], const unsigned (&pa)[BKV / 16][4], unsigned long long dV) {
#pragma unroll
  for (int kc = 0; kc < BKV / 16; ++kc) wgmma_rs_n128_tb(o, pa[kc], dV + ((kc * 2048) >> 4));
  wgmma_commit();
}

// grid: (ceil_div(S, BQ), B*H); block THREADS; smem 256 * (BQ + 2 * STAGES * BKV) + 1024 bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_wgmma_f16(const half_t* __restrict__ Q, const half_t* __restrict__ Kt, const half_t* __restrict__ V,
               half_t* __restrict__ O, long long B, long long H, long long S, long long D) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const int tid = threadIdx.x, lane = tid & 31;
  const int wg = tid >> 7, wq = (tid >> 5) & 3;  // warpgroup, warp inside the warpgroup
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
  const unsigned sQ = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
  const unsigned sKV = sQ + QB;

  // Loader: thread -> (row lrow + i * RPP, 16-byte chunk lch of the 256 B row); the swizzle phase
  // lrow & 7 is constant per thread.
  const int lch = tid & 15, lrow = tid >> 4;
  const bool colok = lch * 8 < (int)D;
  const int nbytes = colok ? 16 : 0;
  const unsigned swz = lrow * 128 + (((lch & 7) ^ (lrow & 7)) << 4);
  const unsigned lsQ = (lch >> 3) * (BQ * 128) + swz;
  const unsigned lsKV = (lch >> 3) * (BKV * 128) + swz;
  const long long goff = (long long)lrow * D + (colok ? lch * 8 : 0);
  const bool d128 = D == 128;
  const int pstride = RPP * (int)D;  // a head (S * D elements) is assumed to fit in 31 bits
  const long long tstride = BKV * D;
  const half_t* kg = Kt + hoff + goff;
  const half_t* vg = V + hoff + goff;
  const half_t* safe = Kt + hoff;
  const int nkv = (Si + BKV - 1) / BKV;
  const float sl2 = 1.4426950408889634f / sqrtf((float)D);

  load_rows<BQ>(sQ + lsQ, Q + hoff + (long long)q0 * D + goff, pstride, nbytes, Si - q0 - lrow, Q + hoff);
  int ld_row = 0;  // first key of the next tile to load
#pragma unroll
  for (int s = 0; s < LA; ++s) {
    if (s < nkv) {
      const bool full = ld_row + BKV <= Si;
      load_kv(sKV + s * STB + lsKV, kg, vg, d128 && full, pstride, nbytes, Si - ld_row - lrow, safe);
      kg += tstride;
      vg += tstride;
      ld_row += BKV;
    }
    cp_async_commit();
  }

  // Descriptors (start field advanced by (byte offset >> 4) below; addresses < 2^18 never carry).
  const unsigned long long dQ = make_desc(sQ + wg * (64 * 128), 16, 1024);
  const unsigned long long dK0 = make_desc(sKV, 16, 1024);
  const unsigned long long dV0 = make_desc(sKV + KVB, BKV * 128, 1024);

  float o[64], s[NS];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < NS; ++i) s[i] = 0.f;
  unsigned pa[BKV / 16][4];
  float m0 = -__int_as_float(0x7f800000), m1 = m0;  // raw-score row max, rows g and g + 8
  float l0 = 0.f, l1 = 0.f;                          // per-lane partial row sums

  unsigned rd = 0, wr = LA * STB;  // stage byte offsets (read, write)
  // Start of tile j: its cp.async group has landed (wait, proxy fence, barrier), then the load of tile
  // j + LA into the stage freed by the previous tile(s); returns the stage offset of tile j.
  auto begin_tile = [&](int j) -> unsigned {
    cp_async_wait<LA - 1>();
    fence_proxy_async();
    __syncthreads();
    if (j + LA < nkv) {
      const bool full = ld_row + BKV <= Si;
      load_kv(sKV + wr + lsKV, kg, vg, d128 && full, pstride, nbytes, Si - ld_row - lrow, safe);
      kg += tstride;
      vg += tstride;
      ld_row += BKV;
    }
    cp_async_commit();
    wr = (wr + STB == STAGES * STB) ? 0u : wr + STB;
    const unsigned cur = rd;
    rd = (rd + STB == STAGES * STB) ? 0u : rd + STB;
    return cur;
  };
  // Online softmax of the scores of tile j in s (masked, exponentiated in place, row sums into l);
  // returns the rescale factors of the old O rows in a0, a1. A row lives in the 4 lanes of a quad.
  auto softmax = [&](int j, float& a0, float& a1) {
    const int kbase = j * BKV;
    if (kbase + BKV > Si) {  // mask keys >= S (last partial tile only)
#pragma unroll
      for (int n = 0; n < BKV / 8; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          if (kbase + n * 8 + 2 * t + (r & 1) >= Si) s[4 * n + r] = -__int_as_float(0x7f800000);
    }
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int n = 0; n < BKV / 8; ++n) {
      mx0 = fmaxf(mx0, fmaxf(s[4 * n], s[4 * n + 1]));
      mx1 = fmaxf(mx1, fmaxf(s[4 * n + 2], s[4 * n + 3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    a0 = ex2((m0 - mx0) * sl2);  // ex2(-inf) = 0 on the first tile
    a1 = ex2((m1 - mx1) * sl2);
    m0 = mx0;
    m1 = mx1;
    const float ms0 = mx0 * sl2, ms1 = mx1 * sl2;
    float rs0 = 0.f, rs1 = 0.f;
#pragma unroll
    for (int n = 0; n < BKV / 8; ++n) {
      s[4 * n] = ex2(fmaf(s[4 * n], sl2, -ms0));
      s[4 * n + 1] = ex2(fmaf(s[4 * n + 1], sl2, -ms0));
      s[4 * n + 2] = ex2(fmaf(s[4 * n + 2], sl2, -ms1));
      s[4 * n + 3] = ex2(fmaf(s[4 * n + 3], sl2, -ms1));
      rs0 += s[4 * n] + s[4 * n + 1];
      rs1 += s[4 * n + 2] + s[4 * n + 3];
    }
    l0 = fmaf(l0, a0, rs0);
    l1 = fmaf(l1, a1, rs1);
  };
  // O *= alpha per row; P (fp16 A fragments): k-step kc covers S chunks 2 kc (keys +0..7, registers
  // a0 / a1 = rows g / g + 8) and 2 kc + 1 (keys +8..15, registers a2 / a3).
  auto rescale_pack = [&](float a0, float a1) {
#pragma unroll
    for (int d = 0; d < 16; ++d) {
      o[4 * d] *= a0;
      o[4 * d + 1] *= a0;
      o[4 * d + 2] *= a1;
      o[4 * d + 3] *= a1;
    }
#pragma unroll
    for (int kc = 0; kc < BKV / 16; ++kc) {
      pa[kc][0] = pack_f16x2(s[8 * kc], s[8 * kc + 1]);
      pa[kc][1] = pack_f16x2(s[8 * kc + 2], s[8 * kc + 3]);
      pa[kc][2] = pack_f16x2(s[8 * kc + 4], s[8 * kc + 5]);
      pa[kc][3] = pack_f16x2(s[8 * kc + 6], s[8 * kc + 7]);
    }
  };

#if OVERLAP
  // Tile 0 peeled, so the steady-state body issues both GEMMs unconditionally (no wgmma under a
  // branch: ptxas then keeps the S / PV pipeline without serialising it).
  unsigned prv = begin_tile(0);
  {
    wgmma_fence();
    gemm_qk(s, dQ, dK0 + (prv >> 4));
    wgmma_wait<0>();
    pin(s);
    float a0, a1;
    softmax(0, a0, a1);
    rescale_pack(a0, a1);
  }
  for (int j = 1; j < nkv; ++j) {
    const unsigned cur = begin_tile(j);
    wgmma_fence();
    gemm_qk(s, dQ, dK0 + (cur >> 4));     // S_j
    gemm_pv(o, pa, dV0 + (prv >> 4));     // O += P_{j-1} V_{j-1}, still running during the softmax
    wgmma_wait<1>();                      // S_j done
    pin(s);
    float a0, a1;
    softmax(j, a0, a1);
    wgmma_wait<0>();                      // PV done: O and the P registers are free
    pin(o);
    rescale_pack(a0, a1);
    prv = cur;
  }
  wgmma_fence();
  gemm_pv(o, pa, dV0 + (prv >> 4));
  wgmma_wait<0>();
  pin(o);
#else
  for (int j = 0; j < nkv; ++j) {
    const unsigned cur = begin_tile(j);
    wgmma_fence();
    gemm_qk(s, dQ, dK0 + (cur >> 4));
    wgmma_wait<0>();
    pin(s);
    float a0, a1;
    softmax(j, a0, a1);
    rescale_pack(a0, a1);
    wgmma_fence();
    gemm_pv(o, pa, dV0 + (cur >> 4));
    wgmma_wait<0>();
    pin(o);
  }
#endif
  cp_async_wait<0>();

  // Epilogue: normalise, stage in this warp's own Q rows (same swizzled layout), 16-byte stores.
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  const float i0 = 1.0f / l0, i1 = 1.0f / l1;
  const int wr0 = wg * 64 + wq * 16;  // this warp's first row in the block
  {
    const unsigned r0 = sQ + (wr0 + g) * 128 + 4 * t;
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      const unsigned c = (n >> 3) * (BQ * 128) + ((((unsigned)n & 7u) ^ (unsigned)g) << 4);  // row & 7 == g
      st_shared_b32(r0 + c, pack_f16x2(o[4 * n] * i0, o[4 * n + 1] * i0));
      st_shared_b32(r0 + 8 * 128 + c, pack_f16x2(o[4 * n + 2] * i1, o[4 * n + 3] * i1));
    }
  }
  __syncwarp();
  const int wq0 = q0 + wr0;
#pragma unroll
  for (int it = 0; it < 8; ++it) {
    const int idx = it * 32 + lane, row = idx >> 4, ch = idx & 15;
    const uint4 v = ld_shared_v4(sQ + (ch >> 3) * (BQ * 128) + (wr0 + row) * 128 + (((ch & 7) ^ (row & 7)) << 4));
    if (wq0 + row < Si && ch * 8 < (int)D)
      *reinterpret_cast<uint4*>(Og + (long long)(wq0 + row) * D + ch * 8) = v;
  }
}
