// cuda_shapes: a problem's shapes as the CUDA worker receives them (dims in dim_order, every
// tensor's element count, type and distribution), and the two shapes the gate singles out: the
// smallest correctness shape (compute-sanitizer runs there) and the smallest "odd" one (adversarial
// inputs).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain::detail::cuda {

/// One shape's dims and tensors, as a request carries them.
struct shape_tensors {
  std::vector<std::int64_t> dims;
  std::vector<cuda_protocol::tensor> inputs, outputs;
};

struct shape_table {
  std::vector<shape_tensors> at;  ///< per problem shape
  std::size_t sanitize = 0;       ///< the smallest correctness shape (is_correctness_shape), by bytes
  std::size_t adversarial = 0;    ///< the smallest "odd" shape (else `sanitize`)
};

/// Every shape of `p`. Throws kernelbrain::error when a size does not evaluate.
inline shape_table plan_shapes(problem const& p) {
  shape_table t;
  std::uint64_t smallest = ~std::uint64_t{0}, smallest_odd = ~std::uint64_t{0};
  for (std::size_t s = 0; s < p.shapes.size(); ++s) {
    auto const& sh = p.shapes[s];
    auto lookup = [&sh](std::string_view n) -> std::optional<std::int64_t> {
      auto it = sh.dims.find(std::string(n));
      if (it == sh.dims.end()) return std::nullopt;
      return it->second;
    };
    shape_tensors st;
    for (auto const& n : p.dim_order) st.dims.push_back(sh.dims.at(n));
    std::uint64_t bytes = 0;
    for (auto const& in : p.inputs) {
      st.inputs.push_back({static_cast<std::uint64_t>(evaluate_expression(in.size, lookup)), in.dtype == "f16" ? 1 : 0,
                           in.distribution == "uniform"    ? 1
                           : in.distribution == "positive" ? 2
                                                           : 0});
      bytes += st.inputs.back().count * (st.inputs.back().dtype ? 2 : 4);
    }
    for (auto const& out : p.outputs) {
      st.outputs.push_back(
          {static_cast<std::uint64_t>(evaluate_expression(out.size, lookup)), out.dtype == "f16" ? 1 : 0, 0});
      bytes += st.outputs.back().count * (st.outputs.back().dtype ? 2 : 4);
    }
    t.at.push_back(std::move(st));
    if (is_correctness_shape(sh) && bytes < smallest) {
      smallest = bytes;
      t.sanitize = s;
    }
    if (sh.tier == "odd" && bytes < smallest_odd) {
      smallest_odd = bytes;
      t.adversarial = s;
    }
  }
  if (smallest_odd == ~std::uint64_t{0}) t.adversarial = t.sanitize;
  return t;
}

}  // namespace kernelbrain::detail::cuda
