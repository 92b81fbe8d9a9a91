// y = relu(x W^T + b) / 2 in strict fp32: a register-blocked shared-memory SGEMM (FFMA only).
// Block tile BM x BN, K in steps of BK; each thread computes TM x TN outputs as (TM/4) x (TN/4)
// sub-blocks of 4x4 spaced BM/(TM/4) apart, so its shared-memory fragment reads are float4. x and W
// are both K-major: tiles are read from global as float4 along K with consecutive lanes walking K
// first (whole 32-byte sectors per row), held in registers one K step ahead, and stored transposed
// (As[k][m], Bs[k][n]) into the other half of a double-buffered shared memory while the current
// half is computed: one barrier per K step. The transposed stores would hit the same banks for
// every K quad, so columns are XOR-swizzled by the K quad (m ^ swz(k), a multiple of 4, which keeps
// float4 reads contiguous) instead of padded. Grid x walks M tiles so that the blocks sharing a W
// column block run together (W, the large operand, is then read from HBM about once). Bias, ReLU and
// the halving are fused into the epilogue. With SPLITK > 1, blockIdx.z takes one of SPLITK K ranges
// and the raw partial sums go to scratch (out = partial[SPLITK][M][N]); lrd_splitk_epilogue adds
// them in order and applies the epilogue. Edges: tiles that are not fully inside (or K % 4 != 0)
// load with per-element guards and zero fill; stores are guarded.
#define BM ${BM}
#define BN ${BN}
#define BK ${BK}
#define TM ${TM}
#define TN ${TN}
#define SPLITK ${SPLITK}

#define NTX (BN / TN)
#define NTY (BM / TM)
#define THREADS (NTX * NTY)
#define SUBM (TM / 4)
#define SUBN (TN / 4)
#define LDA_S BM
#define LDB_S BN
// Column swizzle of shared row k: lanes storing one float4 of K (4 rows k) for BK/4 K quads and
// 128/BK rows land on distinct banks.
#define SWZ(k) ((((k) >> 2) & (BK / 4 - 1)) * (128 / BK))
#define LA (BM * BK / 4 / THREADS)
#define LB (BN * BK / 4 / THREADS)

// A ROWS_T x BK tile of a K-major matrix into registers, float4 along K; consecutive lanes walk K
// first, so each row's BK floats are read by BK/4 adjacent lanes (coalesced).
template <int ROWS_T, int L>
__device__ __forceinline__ void load_tile(const float* __restrict__ G, long long nrows, long long K, long long kbound,
                                          long long r0, long long k0, bool full, float4 (&p)[L]) {
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
      for (int j = 0; j < 4; ++j) v[j] = (gr < nrows && gk + j < kbound) ? __ldg(G + gr * K + gk + j) : 0.f;
      p[i] = make_float4(v[0], v[1], v[2], v[3]);
    }
  }
}
template <int ROWS_T, int LD, int L>
__device__ __forceinline__ void store_tile(float* __restrict__ S, const float4 (&p)[L]) {
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int f = threadIdx.x + i * THREADS;
    const int kq = f % (BK / 4), row = f / (BK / 4);
    const int col = row ^ SWZ(kq * 4);  // the 4 rows kq*4..kq*4+3 share one swizzle
    S[(kq * 4 + 0) * LD + col] = p[i].x;
    S[(kq * 4 + 1) * LD + col] = p[i].y;
    S[(kq * 4 + 2) * LD + col] = p[i].z;
    S[(kq * 4 + 3) * LD + col] = p[i].w;
  }
}

// grid: (ceil_div(M, BM), ceil_div(N, BN), SPLITK); block THREADS; dynamic smem 8*BK*(BM+BN) bytes.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
lrd_sgemm(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
          float* __restrict__ out, long long M, long long N, long long K) {
  extern __shared__ float4 smem4[];
  float* As = reinterpret_cast<float*>(smem4);  // [2][BK][LDA_S]
  float* Bs = As + 2 * BK * LDA_S;              // [2][BK][LDB_S]
  const int tid = threadIdx.x;
  const int tx = tid % NTX, ty = tid / NTX;
  const long long m0 = (long long)blockIdx.x * BM, n0 = (long long)blockIdx.y * BN;

  long long kbeg = 0, kend = K;
  if (SPLITK > 1) {
    const long long kc = ((K + SPLITK - 1) / SPLITK + BK - 1) / BK * BK;
    kbeg = min(K, (long long)blockIdx.z * kc);
    kend = min(K, kbeg + kc);
  }
  const int nk = (int)((kend - kbeg + BK - 1) / BK);
  const bool kvec = (K & 3) == 0;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  float4 pa[LA], pb[LB];
  if (nk > 0) {
    const bool full = kvec && kbeg + BK <= kend;
    load_tile<BM, LA>(x, M, K, kend, m0, kbeg, full && m0 + BM <= M, pa);
    load_tile<BN, LB>(W, N, K, kend, n0, kbeg, full && n0 + BN <= N, pb);
    store_tile<BM, LDA_S, LA>(As, pa);
    store_tile<BN, LDB_S, LB>(Bs, pb);
  }
  __syncthreads();

  for (int kt = 0; kt < nk; ++kt) {
    const int cur = kt & 1;
    const bool more = kt + 1 < nk;
    if (more) {
      const long long k0 = kbeg + (long long)(kt + 1) * BK;
      const bool full = kvec && k0 + BK <= kend;
      load_tile<BM, LA>(x, M, K, kend, m0, k0, full && m0 + BM <= M, pa);
      load_tile<BN, LB>(W, N, K, kend, n0, k0, full && n0 + BN <= N, pb);
    }
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
    if (more) {
      store_tile<BM, LDA_S, LA>(As + (cur ^ 1) * BK * LDA_S, pa);
      store_tile<BN, LDB_S, LB>(Bs + (cur ^ 1) * BK * LDB_S, pb);
    }
    __syncthreads();
  }

  // Epilogue. Row of acc[i]: (i/4)*(BM/SUBM) + ty*4 + i%4; columns of acc[.][4s..4s+3]: s*(BN/SUBN) + tx*4.
  float* dst = SPLITK > 1 ? out + (long long)blockIdx.z * M * N : out;
  const bool nvec = (N & 3) == 0;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const long long m = m0 + (i / 4) * (BM / SUBM) + ty * 4 + (i % 4);
    if (m >= M) continue;
#pragma unroll
    for (int s = 0; s < SUBN; ++s) {
      const long long n = n0 + s * (BN / SUBN) + tx * 4;
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        v[j] = acc[i][4 * s + j];
        if (SPLITK == 1) v[j] = fmaxf(v[j] + (n + j < N ? __ldg(bias + n + j) : 0.f), 0.f) * 0.5f;
      }
      if (nvec && n + 3 < N) {
        *reinterpret_cast<float4*>(dst + m * N + n) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (n + j < N) dst[m * N + n + j] = v[j];
      }
    }
  }
}

// y = relu(sum_s partial[s] + b) / 2, summed in split order. grid: ceil_div(M*N, 256), block 256.
extern "C" __global__ void lrd_splitk_epilogue(const float* __restrict__ partial, const float* __restrict__ bias,
                                               float* __restrict__ y, long long M, long long N) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < SPLITK; ++k) s += partial[k * M * N + i];
  y[i] = fmaxf(s + __ldg(bias + i % N), 0.f) * 0.5f;
}
