// expect: compile
// detail: compile error
// Does not compile.
#include "kernelbrain/evaluate/host_abi.h"

extern "C" void kb_kernel(const kb_args* a) { a->outputs[1][0] = undefined_name; }
