// y = A x with explicit SIMD: GCC vector types of ${VEC} floats, ${ROWS} rows at a time sharing
// each vector load of x, ${UNROLL} vector accumulators per row. Leftover rows run one at a time;
// columns past the last full vector step take a scalar loop.
#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int VEC = ${VEC};
constexpr int ROWS = ${ROWS};
constexpr int UNROLL = ${UNROLL};
constexpr long long STEP = static_cast<long long>(VEC) * UNROLL;

typedef float vf __attribute__((vector_size(sizeof(float) * VEC)));

// The same vector type for unaligned memory. Loads and stores go through a reference to it rather
// than a helper taking or returning a vector by value, which draws -Wpsabi where a 64-byte vector
// has no register (no AVX-512) and is no faster.
typedef float vf_mem __attribute__((vector_size(sizeof(float) * VEC), aligned(alignof(float)), may_alias));
inline vf_mem const& at(const float* p) { return *reinterpret_cast<vf_mem const*>(p); }

template <int NR>
void rows_dot(const float* a, const float* x, float* y, long long cols) {
  const long long main_cols = cols - cols % STEP;
  vf acc[NR][UNROLL];
  for (int i = 0; i < NR; ++i)
    for (int k = 0; k < UNROLL; ++k) acc[i][k] = vf{};
  for (long long c = 0; c < main_cols; c += STEP)
    for (int k = 0; k < UNROLL; ++k) {
      const vf xv = at(x + c + k * VEC);
      for (int i = 0; i < NR; ++i) acc[i][k] += at(a + i * cols + c + k * VEC) * xv;
    }
  for (int i = 0; i < NR; ++i) {
    vf t = acc[i][0];
    for (int k = 1; k < UNROLL; ++k) t += acc[i][k];
    float s = 0.0f;
    for (int l = 0; l < VEC; ++l) s += t[l];
    for (long long c = main_cols; c < cols; ++c) s += a[i * cols + c] * x[c];
    y[i] = s;
  }
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* a = args->inputs[0];
  const float* x = args->inputs[1];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  long long r = 0;
  for (; r + ROWS <= rows; r += ROWS) rows_dot<ROWS>(a + r * cols, x, y + r, cols);
  for (; r < rows; ++r) rows_dot<1>(a + r * cols, x, y + r, cols);
}
