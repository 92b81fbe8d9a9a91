// y = A x, row-blocked: ${ROWS} rows at a time share each load of x, and every row keeps ${ACC}
// independent partial sums (columns unrolled by ACC) so the adds do not wait on each other.
// Leftover rows run one at a time; leftover columns take a scalar loop.
#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int ROWS = ${ROWS};
constexpr int ACC = ${ACC};

template <int NR>
void rows_dot(const float* a, const float* x, float* y, long long cols) {
  const long long main_cols = cols - cols % ACC;
  float acc[NR][ACC] = {};
  for (long long c = 0; c < main_cols; c += ACC)
    for (int i = 0; i < NR; ++i)
      for (int k = 0; k < ACC; ++k) acc[i][k] += a[i * cols + c + k] * x[c + k];
  for (int i = 0; i < NR; ++i) {
    float s = 0.0f;
    for (int k = 0; k < ACC; ++k) s += acc[i][k];
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
