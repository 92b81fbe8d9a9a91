// Depthwise conv2d (NCHW, stride 1), streaming sweep through a per-warp cp.async row ring. A warp
// owns a 64*M-column segment of one (n, k) plane and a chunk of VH output rows; lane l owns the M
// output column pairs seg*64M + 64m + 2l (+0, +1), m < M, so each warp-wide float2 store covers
// 256 contiguous bytes (full sectors). Hot path (C/G == 1, R == 3, P == 0, W % 4 == 0, aligned
// pointers): each input row segment (64M columns plus one 16-byte halo chunk on the right) is
// copied global -> shared with 16-byte cp.async.cg (L2 only, no registers held while in flight)
// into a ring of PF + 1 row slots private to the warp, PF rows ahead of the arithmetic; a row
// step is wait_group + __syncwarp, 2M 8-byte shared loads (own pair, right neighbour pair), 18
// FMAs per pair folding the row into three running accumulators (output rows r-2, r-1, r: each
// input row is read once), and M streaming float2 stores (st.global.cs) of the finished row r-2.
// Shared offsets are 32-bit; global row pointers are 64-bit, advanced by W / OW per row. Every other
// case (grouped, R != 3, padding, other widths, misaligned pointers) takes a scalar generic loop
// over the same output assignment (correct, not fast).
#define M ${M}
#define VH ${VH}
#define PF ${PF}
#define WPB ${WPB}
#define NS (PF + 1)        // ring slots per warp
#define ROWF (64 * M + 4)  // floats per slot: the segment plus one halo chunk
#define NCH (16 * M + 1)   // 16-byte chunks per slot row
// Resident warps per SM the register budget must allow: 32 (<= 64 registers), 24 for M = 4.
#define MINW (M >= 4 ? 24 : 32)
#define MINB (MINW / WPB > 0 ? MINW / WPB : 1)

// 16-byte cp.async.cg (L2 only, no L1 allocation) global -> shared when on.
__device__ __forceinline__ void dws_cp16(unsigned s, const float* g, bool on) {
  asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q cp.async.cg.shared.global [%0], [%1], 16;\n\t}" ::"r"(s),
               "l"(g), "r"((int)on)
               : "memory");
}
__device__ __forceinline__ void dws_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void dws_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(PF - 1) : "memory"); }

// Generic path: any group size, kernel size, padding and width; same outputs per thread.
__device__ __forceinline__ void dws_generic(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                         long long C, long long H, long long W, long long K, long long G, long long R,
                                         long long P, long long plane, int oh0, int rows, int c0) {
  const long long OHl = H + 2 * P - R + 1, OWl = W + 2 * P - R + 1;
  const int OW = (int)OWl;
  const long long n = plane / K, k = plane % K;
  const long long CG = C / G, KG = K / G, g = k / KG;
  float* yp = y + (plane * OHl + oh0) * OWl + c0;
  const int Hi = (int)H, Wi = (int)W, Ri = (int)R, Pi = (int)P, CGi = (int)CG;
  const float* xg = x + (n * C + g * CG) * H * W;
  const float* wk = w + k * CG * R * R;
#pragma unroll 1
  for (int i = 0; i < rows; ++i) {
    const int oh = oh0 + i;
#pragma unroll 1
    for (int q = 0; q < 2 * M; ++q) {
      const int ow = c0 + 64 * (q >> 1) + (q & 1);
      if (ow >= OW) continue;
      float acc = 0.f;
#pragma unroll 1
      for (int ci = 0; ci < CGi; ++ci) {
        const float* xc = xg + (long long)ci * H * W;
        const float* wc = wk + ci * Ri * Ri;
#pragma unroll 1
        for (int rr = 0; rr < Ri; ++rr) {
          const int ih = oh - Pi + rr;
          if (ih < 0 || ih >= Hi) continue;
#pragma unroll 1
          for (int s = 0; s < Ri; ++s) {
            const int iw = ow - Pi + s;
            if (iw >= 0 && iw < Wi) acc = fmaf(__ldg(xc + ih * Wi + iw), __ldg(wc + rr * Ri + s), acc);
          }
        }
      }
      __stcs(yp + (long long)i * OWl + 64 * (q >> 1) + (q & 1), acc);
    }
  }
}

extern "C" __global__ void __launch_bounds__(WPB * 32, MINB)
groupconv_dw_stream(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, long long N,
                    long long C, long long H, long long W, long long K, long long G, long long R, long long P) {
  extern __shared__ float4 dws_smem[];
  const long long OHl = H + 2 * P - R + 1, OWl = W + 2 * P - R + 1;
  const int OH = (int)OHl, OW = (int)OWl;
  const int lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
  const int segs = (OW + 64 * M - 1) / (64 * M);
  const int wid = blockIdx.x * WPB + wib;
  const int chunk = wid / segs, seg = wid - chunk * segs;
  const int oh0 = chunk * VH;
  if (oh0 >= OH) return;  // whole warp: warps beyond the plane's last chunk
  const int rows = min(VH, OH - oh0);
  const int cs = seg * (64 * M);  // first column of the segment
  const int c0 = cs + 2 * lane;   // column of pair 0; pair m at c0 + 64 m
  const long long plane = blockIdx.y;
  const long long n = plane / K, k = plane % K;
  const long long CG = C / G, KG = K / G, g = k / KG;
  float* yp = y + (plane * OHl + oh0) * OWl + c0;

  const bool hot = CG == 1 && R == 3 && P == 0 && (W & 3) == 0 && (reinterpret_cast<unsigned long long>(x) & 15) == 0 &&
                   (reinterpret_cast<unsigned long long>(y) & 7) == 0;
  if (hot) {
    const float* wp = w + k * 9;
    float w0[3], w1[3], w2[3];
#pragma unroll
    for (int s = 0; s < 3; ++s) { w0[s] = __ldg(wp + s); w1[s] = __ldg(wp + 3 + s); w2[s] = __ldg(wp + 6 + s); }
    float* ring = reinterpret_cast<float*>(dws_smem) + wib * (NS * ROWF);
    const unsigned sring = (unsigned)__cvta_generic_to_shared(ring);
    // Copies: lane copies chunks q = lane + 32 u (columns cs + 4q .. +3) when inside the row.
    constexpr int NU = (NCH + 31) / 32;
    bool cpok[NU];
#pragma unroll
    for (int u = 0; u < NU; ++u) {
      const int q = lane + 32 * u;
      cpok[u] = q < NCH && cs + 4 * q < (int)W;
    }
    // Input rows oh0 .. oh0 + rows + 1, all inside the plane (P == 0).
    const float* gp = x + ((n * C + g) * H + oh0) * W + cs + 4 * lane;
    const long long Wl = W, OWs = OWl;
    const int nr = rows + 2;
    const unsigned sl = sring + 16u * lane;  // this lane's chunk 0 in slot 0
    // Copy the next input row into ring slot `slot`, then advance the row pointer.
    auto issue = [&](int slot, bool on) {
#pragma unroll
      for (int u = 0; u < NU; ++u) dws_cp16(sl + 4u * (unsigned)(slot * ROWF + 128 * u), gp + 128 * u, on && cpok[u]);
      dws_commit();
      gp += Wl;
    };
#pragma unroll
    for (int t = 0; t < PF; ++t) issue(t, t < nr);

    bool stok[M];
#pragma unroll
    for (int m = 0; m < M; ++m) stok[m] = c0 + 64 * m < OW;
    float A[M][2], B[M][2];  // A: partial of output row r-2 (input rows r-2, r-1 in), B: of row r-1
#pragma unroll
    for (int m = 0; m < M; ++m) A[m][0] = A[m][1] = B[m][0] = B[m][1] = 0.f;
    float* sp = yp;
    // Input row r lives in slot r % NS; step r waits for it, then refills slot (r + PF) % NS ==
    // (r - 1) % NS with row r + PF (every lane finished reading row r - 1 before the __syncwarp),
    // then folds row r into the accumulators and, from r = 2 on, stores output row r - 2.
    auto step = [&](int slot, bool refill, bool store) {
      dws_wait();
      __syncwarp();
      issue((slot + PF) % NS, refill);
      const float* row = ring + slot * ROWF + 2 * lane;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float2 v = *reinterpret_cast<const float2*>(row + 64 * m);
        const float2 h = *reinterpret_cast<const float2*>(row + 64 * m + 2);
        const float c0v = v.x, c1v = v.y, c2v = h.x, c3v = h.y;
        if (store) {
          float o0 = fmaf(c0v, w2[0], A[m][0]), o1 = fmaf(c1v, w2[0], A[m][1]);
          o0 = fmaf(c1v, w2[1], o0); o1 = fmaf(c2v, w2[1], o1);
          o0 = fmaf(c2v, w2[2], o0); o1 = fmaf(c3v, w2[2], o1);
          if (stok[m]) __stcs(reinterpret_cast<float2*>(sp + 64 * m), make_float2(o0, o1));
        }
        float a0 = fmaf(c0v, w1[0], B[m][0]), a1 = fmaf(c1v, w1[0], B[m][1]);
        a0 = fmaf(c1v, w1[1], a0); a1 = fmaf(c2v, w1[1], a1);
        A[m][0] = fmaf(c2v, w1[2], a0); A[m][1] = fmaf(c3v, w1[2], a1);
        float b0 = c0v * w0[0], b1 = c1v * w0[0];
        b0 = fmaf(c1v, w0[1], b0); b1 = fmaf(c2v, w0[1], b1);
        B[m][0] = fmaf(c2v, w0[2], b0); B[m][1] = fmaf(c3v, w0[2], b1);
      }
      if (store) sp += OWs;
    };
    step(0, PF < nr, false);  // rows 0 and 1 only start the accumulators
    step(1, 1 + PF < nr, false);
    // Rows 2 .. nr-1 (output rows 0 .. rows-1), NS at a time so slots are compile-time constants.
    // Steady state: groups whose refills are all needed rows (r + PF < nr for every step).
    int j = 0;  // output row of the group's first step; its input row is j + 2
    for (; j + NS + PF <= rows; j += NS) {
#pragma unroll
      for (int t = 0; t < NS; ++t) step((2 + t) % NS, true, true);
    }
    for (; j < rows; j += NS) {
#pragma unroll
      for (int t = 0; t < NS; ++t)
        if (j + t < rows) step((2 + t) % NS, j + t + PF < rows, true);
    }
    return;
  }
  dws_generic(x, w, y, C, H, W, K, G, R, P, plane, oh0, rows, c0);
}
