// Scaled dot-product attention in strict fp32 (FFMA only) as three launches: scores = (Q K^T)/sqrt(D)
// into scratch (batched SGEMM, B operand K-major), an in-place row softmax, then O = P V (batched
// SGEMM, B operand N-major). For large head dimensions (D = 1024) attention is compute-bound and
// the S x S scratch costs little (1 GB of traffic against 16 ms of FMAs at 32x32x512x1024), while a
// fused flash kernel would have to recompute Q K^T once per D chunk of the output. Both GEMMs use
// the same register-blocked core: BM x BN block tile, TM x TN per thread as 4x4 sub-blocks (float4
// fragment reads), K-major tiles read with lanes walking K first (coalesced) and stored transposed,
// N-major tiles stored as they are, shared columns XOR-swizzled by the K quad so the transposed
// stores are conflict-free, double-buffered shared memory with register prefetch, one barrier per
// K step; edges zero-filled.
#define BM ${BM}
#define BN ${BN}
#define BK ${BK}
#define TM ${TM}
#define TN ${TN}
#define SMB ${SMB}

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

// K-major operand (rows r, K contiguous): ROWS_T x BK tile as float4 along K, lanes walk K first.
template <int ROWS_T, int L>
__device__ __forceinline__ void load_kmajor(const float* __restrict__ G, long long nrows, long long K, long long r0,
                                            long long k0, bool full, float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int kq = f % (BK / 4), row = f / (BK / 4);
    const long long gr = r0 + row, gk = k0 + kq * 4;
    if (full) {
      p[i] = __ldg(reinterpret_cast<const float4*>(G + gr * K + gk));
    } else {
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = (gr < nrows && gk + j < K) ? __ldg(G + gr * K + gk + j) : 0.f;
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
// N-major operand (B[k][n], N contiguous): BK x BN tile as float4 along N, stored as is.
template <int L>
__device__ __forceinline__ void load_nmajor(const float* __restrict__ G, long long N, long long K, long long n0,
                                            long long k0, bool full, float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int k = f / (BN / 4), nq = f % (BN / 4);
    const long long gk = k0 + k, gn = n0 + nq * 4;
    if (full) {
      p[i] = __ldg(reinterpret_cast<const float4*>(G + gk * N + gn));
    } else {
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = (gk < K && gn + j < N) ? __ldg(G + gk * N + gn + j) : 0.f;
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

// C[M][N] = alpha * A[M][K] . op(B), A K-major; B_KMAJOR: B is [N][K], else [K][N]. One block tile.
template <bool B_KMAJOR>
__device__ __forceinline__ void gemm_block(const float* __restrict__ A, const float* __restrict__ Bm,
                                           float* __restrict__ Cm, long long M, long long N, long long K, float alpha,
                                           float* smem) {
  float* As = smem;                  // [2][BK][LDA_S]
  float* Bs = smem + 2 * BK * LDA_S;  // [2][BK][LDB_S]
  const int tid = threadIdx.x;
  const int tx = tid % NTX, ty = tid / NTX;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;
  const int nk = (int)((K + BK - 1) / BK);
  const bool avec = (K & 3) == 0;
  const bool bvec = B_KMAJOR ? avec : (N & 3) == 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  float4 pa[LA], pb[LB];
  auto load = [&](long long k0) {
    const bool kfull = k0 + BK <= K;
    load_kmajor<BM, LA>(A, M, K, m0, k0, avec && kfull && m0 + BM <= M, pa);
    if (B_KMAJOR) load_kmajor<BN, LB>(Bm, N, K, n0, k0, bvec && kfull && n0 + BN <= N, pb);
    else load_nmajor<LB>(Bm, N, K, n0, k0, bvec && kfull && n0 + BN <= N, pb);
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

// P[bh] = (Q[bh] K[bh]^T) / sqrt(D). grid: (ceil_div(S, BM), ceil_div(S, BN), B*H).
extern "C" __global__ void __launch_bounds__(THREADS, 1)
sdpa_scores(const float* __restrict__ Q, const float* __restrict__ Kt, float* __restrict__ P, long long B, long long H,
            long long S, long long D) {
  extern __shared__ float4 smem4[];
  const long long z = blockIdx.z;
  gemm_block<true>(Q + z * S * D, Kt + z * S * D, P + z * S * S, S, S, D, 1.0f / sqrtf((float)D),
                   reinterpret_cast<float*>(smem4));
}

// O[bh] = P[bh] V[bh]. grid: (ceil_div(S, BM), ceil_div(D, BN), B*H).
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
