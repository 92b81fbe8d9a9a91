// expect: signature
// detail: kb_kernel must be declared
// Takes raw pointers instead of kb_args.
extern "C" void kb_kernel(const float* x, float* y, long long n) {
  for (long long i = 0; i < n; ++i) y[i] = x[i];
}
