// A correct, naive starting candidate: one float dot product per row.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* args) {
  const float* a = args->inputs[0];
  const float* x = args->inputs[1];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  for (long long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long long c = 0; c < cols; ++c) sum += a[r * cols + c] * x[c];
    y[r] = sum;
  }
}
