// y = A x, column-blocked for cache: the columns are cut into blocks of ${CB}, so the block of x in
// use stays in L1 while every row's segment streams past; the rows' partial sums are added into y
// block after block (the first block writes y). ${ROWS} rows at a time share the x loads, with
// ${ACC} partial sums per row. Leftover rows and columns take shorter loops.
#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr long long CB = ${CB};
constexpr int ROWS = ${ROWS};
constexpr int ACC = ${ACC};

template <int NR>
void rows_block(const float* a, const float* x, float* y, long long cols, long long n, bool first) {
  const long long main_n = n - n % ACC;
  float acc[NR][ACC] = {};
  for (long long c = 0; c < main_n; c += ACC)
    for (int i = 0; i < NR; ++i)
      for (int k = 0; k < ACC; ++k) acc[i][k] += a[i * cols + c + k] * x[c + k];
  for (int i = 0; i < NR; ++i) {
    float s = 0.0f;
    for (int k = 0; k < ACC; ++k) s += acc[i][k];
    for (long long c = main_n; c < n; ++c) s += a[i * cols + c] * x[c];
    y[i] = first ? s : y[i] + s;
  }
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* a = args->inputs[0];
  const float* x = args->inputs[1];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long c0 = 0; c0 < cols; c0 += CB) {
    const long long n = cols - c0 < CB ? cols - c0 : CB;
    const bool first = c0 == 0;
    long long r = 0;
    for (; r + ROWS <= rows; r += ROWS) rows_block<ROWS>(a + r * cols + c0, x + c0, y + r, cols, n, first);
    for (; r < rows; ++r) rows_block<1>(a + r * cols + c0, x + c0, y + r, cols, n, first);
  }
}
