// Trusted reference: y = A x for a row-major (R, C) matrix A and a vector x of C elements.
// Each dot product accumulated in double, one rounding to float at the end.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* args) {
  const float* a = args->inputs[0];
  const float* x = args->inputs[1];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long r = 0; r < rows; ++r) {
    const float* ar = a + r * cols;
    double sum = 0;
    for (long long c = 0; c < cols; ++c) sum += static_cast<double>(ar[c]) * x[c];
    y[r] = static_cast<float>(sum);
  }
}
