// expect: compile
// detail: compile exceeded
// compile_timeout: 3
// A compile bomb: a binary tree of template instantiations, 2^40 of them, each a distinct type.
#include "kernelbrain/evaluate/host_abi.h"

template <int Depth, long Index>
struct node {
  static constexpr long value = node<Depth - 1, 2 * Index>::value + node<Depth - 1, 2 * Index + 1>::value;
};
template <long Index>
struct node<0, Index> {
  static constexpr long value = Index & 1;
};

extern "C" void kb_kernel(const kb_args* a) { a->outputs[1][0] = static_cast<float>(node<40, 0>::value); }
