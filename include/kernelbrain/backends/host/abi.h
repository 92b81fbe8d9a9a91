/* The host backend's candidate ABI (C, so candidates need no KernelBrain headers).
 * A host candidate or reference is one C++ source file that defines
 *     extern "C" void kb_kernel(const kb_args* args);
 * Inputs and outputs are float32 buffers in the problem's declared order; dims are the shape's
 * values in the problem's dim_order. A candidate must write every output element, must not write
 * its inputs, and must compute the same function on any valid input. */
#ifndef KERNELBRAIN_HOST_ABI_H
#define KERNELBRAIN_HOST_ABI_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct kb_args {
  const float* const* inputs;
  float* const* outputs;
  const long long* dims;
  int n_inputs;
  int n_outputs;
  int n_dims;
} kb_args;

typedef void (*kb_kernel_fn)(const kb_args*);

#ifdef __cplusplus
}
#endif
#endif
