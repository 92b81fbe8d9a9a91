// host_shapes: a problem as the host backend runs it. plan_shapes() checks that the problem suits
// the backend and resolves each shape once: its dims in dim_order, every tensor's element count and
// the arena layout; run_request_for() turns a planned shape into the worker's run request.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain::detail::host {

/// A shape, resolved: the dims in dim_order, every tensor's element count and the arena layout.
struct shape_plan {
  std::vector<std::int64_t> dims;
  std::vector<std::size_t> in_counts, out_counts;
  std::string label;  ///< "'odd' (R=5, C=37)"
  host::layout layout;
};

/// Every shape of `p`, resolved. Throws kernelbrain::error naming what does not suit the host backend.
inline std::vector<shape_plan> plan_shapes(problem const& p) {
  auto where = [&](std::string const& what) { return "problem '" + p.name + "' (host backend): " + what; };
  if (!p.backend.empty() && p.backend != "host")
    throw error(
        where("it is for backend '" + p.backend + "'; use that backend's evaluator or set backend to \"host\""));
  if (p.reference_source.empty())
    throw error(where("reference_source is empty: the host backend needs a trusted C++ reference"));
  if (p.outputs.empty())
    throw error(where("no outputs declared: the host backend checks every output, declare at least one"));
  for (auto const* list : {&p.inputs, &p.outputs})
    for (auto const& t : *list) {
      if (t.name.empty()) throw error(where("a tensor has no name"));
      if (list == &p.inputs && t.distribution != "normal" && t.distribution != "uniform" &&
          t.distribution != "positive")
        throw error(
            where("input '" + t.name + "' has distribution '" + t.distribution + "': use normal, uniform or positive"));
    }
  std::vector<shape_plan> plans;
  for (auto const& s : p.shapes) {
    shape_plan sp;
    sp.label = "'" + s.name + "' (";
    bool first = true;
    for (auto const& d : p.dim_order) {
      auto it = s.dims.find(d);
      if (it == s.dims.end())
        throw error(where("shape '" + s.name + "' has no dim '" + d + "' (dim_order lists it): add it to the shape"));
      sp.dims.push_back(it->second);
      sp.label += (first ? "" : ", ") + d + "=" + std::to_string(it->second);
      first = false;
    }
    sp.label += ")";
    if (p.dim_order.empty() && !s.dims.empty())
      throw error(
          where("shape '" + s.name + "' has dims but dim_order is empty: list the order kb_kernel receives them in"));
    auto lookup = [&s](std::string_view n) -> std::optional<std::int64_t> {
      auto it = s.dims.find(std::string(n));
      if (it == s.dims.end()) return std::nullopt;
      return it->second;
    };
    auto count = [&](tensor_spec const& t, char const* kind) {
      std::int64_t v = 0;
      try {
        v = evaluate_expression(t.size, lookup);
      } catch (error const& e) {
        throw error(where(std::string(kind) + " '" + t.name + "' at shape '" + s.name + "': " + e.what()));
      }
      if (v < 0 || v > (std::int64_t{1} << 33))
        throw error(where(std::string(kind) + " '" + t.name + "' at shape '" + s.name + "' has " + std::to_string(v) +
                          " elements: sizes must be between 0 and 2^33"));
      return static_cast<std::size_t>(v);
    };
    for (auto const& t : p.inputs) sp.in_counts.push_back(count(t, "input"));
    for (auto const& t : p.outputs) sp.out_counts.push_back(count(t, "output"));
    sp.layout = make_layout(p, sp.in_counts, sp.out_counts);
    plans.push_back(std::move(sp));
  }
  return plans;
}

/// The shape of `p` (planned as `plans`) where the adversarial trials run, as the CUDA backend picks
/// it: the smallest "odd" shape by tensor size, else the smallest correctness shape, else the first.
[[nodiscard]] inline std::size_t adversarial_shape(problem const& p, std::vector<shape_plan> const& plans) {
  auto elements = [&](std::size_t s) {  // every tensor is float32: elements order shapes as bytes do
    std::size_t n = 0;
    for (auto c : plans[s].in_counts) n += c;
    for (auto c : plans[s].out_counts) n += c;
    return n;
  };
  std::optional<std::size_t> odd, check;
  for (std::size_t s = 0; s < plans.size() && s < p.shapes.size(); ++s) {
    if (p.shapes[s].tier == "odd" && (!odd || elements(s) < elements(*odd))) odd = s;
    if (is_correctness_shape(p.shapes[s]) && (!check || elements(s) < elements(*check))) check = s;
  }
  return odd ? *odd : check ? *check : 0;
}

/// The worker's request to run `module` once on shape `s`'s buffers; `memory_allowance`: the address
/// space it may add (0 for the trusted reference: no limit).
inline host_protocol::run_request run_request_for(shape_plan const& s, std::string const& module,
                                                  std::uint64_t memory_allowance) {
  host_protocol::run_request q;
  q.module = module;
  q.arena_bytes = s.layout.bytes;
  q.memory_allowance = memory_allowance;
  q.inputs = refs(s.layout.inputs);
  q.outputs = refs(s.layout.outputs);
  q.dims = s.dims;
  return q;
}

}  // namespace kernelbrain::detail::host
