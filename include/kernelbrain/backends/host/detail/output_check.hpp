// host_output_check: what the parent of the host backend checks in the arena after a candidate ran,
// against the reference it trusts: nothing written outside the candidate's buffers (the canaries),
// the inputs untouched, every output element written, finite and within the tolerance; and that two
// runs on the same inputs agree. timing.hpp puts the same pieces together for a timing request.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_protocol.hpp"

namespace kernelbrain::detail::host {

/// A number for a message, to nine significant digits.
inline std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
inline std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline double max_abs(std::vector<float> const& v) {
  double m = 0;
  for (float x : v) m = std::max(m, static_cast<double>(std::fabs(x)));
  return m;
}

/// No byte of any gap between buffers changed: the canaries are intact.
inline verdict check_canaries(layout const& l, shared_arena const& arena, std::string const& when) {
  for (std::size_t g = 0; g < l.gaps.size(); ++g) {
    auto const* w = arena.at<std::uint32_t>(l.gaps[g].first);
    for (std::size_t i = 0; i < (l.gaps[g].second - l.gaps[g].first) / 4; ++i)
      if (w[i] != canary_bits)
        return verdict::reject(stage::correctness, "wrote outside its buffers (" + l.gap_names[g] + ") " + when +
                                                       ": a candidate may write only its outputs");
  }
  return verdict::pass();
}

/// Each of `slots` (input buffers, named "input 'x'...") still holds the values written there.
inline verdict check_unchanged(std::vector<slot> const& slots, shared_arena const& arena,
                               std::vector<std::vector<float>> const& values, std::string const& when) {
  for (std::size_t k = 0; k < values.size(); ++k) {
    float const* in = arena.at<float>(slots[k].offset);
    if (std::memcmp(in, values[k].data(), values[k].size() * 4) == 0) continue;
    std::size_t i = 0;
    while (i < values[k].size() && bits_of(in[i]) == bits_of(values[k][i])) ++i;
    return verdict::reject(stage::correctness, "wrote its " + slots[k].name + " " + when + " (element " +
                                                   std::to_string(i) + " changed from " + num(values[k][i]) + " to " +
                                                   num(in[i]) + "): inputs are read-only");
  }
  return verdict::pass();
}

/// Every element of the outputs in `slots` written, finite and within the tolerance of the
/// reference's `expected`; `poison`: what the outputs held before the call; `timed`: a timed call.
inline verdict check_values(problem const& p, std::vector<slot> const& slots, shared_arena const& arena,
                            std::vector<std::vector<float>> const& expected, std::uint32_t poison,
                            std::string const& when, bool timed) {
  for (std::size_t k = 0; k < slots.size(); ++k) {
    float const* out = arena.at<float>(slots[k].offset);
    auto const& ref_out = expected[k];
    const std::size_t n = slots[k].count;
    const double max_ref = max_abs(ref_out);
    const double bound = p.tol.atol + p.tol.rtol * max_ref;
    std::size_t unwritten = 0, nonfinite = 0, wrong = 0, first_u = 0, first_n = 0, first_w = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float o = out[i];
      if (bits_of(o) == poison) {
        if (!unwritten++) first_u = i;
      } else if (!std::isfinite(o)) {
        if (!nonfinite++) first_n = i;
      } else if (!(std::fabs(static_cast<double>(o) - ref_out[i]) <= bound)) {
        if (!wrong++) first_w = i;
      }
    }
    const std::string name = "output '" + p.outputs[k].name + "' " + when;
    if (unwritten)
      return verdict::reject(stage::correctness,
                             std::string(timed ? "output not written on a timed run: " : "output not written: ") +
                                 name + ": " + std::to_string(unwritten) + " of " + std::to_string(n) +
                                 " elements still hold the poison written before the call (first at index " +
                                 std::to_string(first_u) +
                                 "); a candidate must write every output element on every call");
    if (nonfinite)
      return verdict::reject(stage::correctness, "NaN or infinite output: " + name + ": " + std::to_string(nonfinite) +
                                                     " of " + std::to_string(n) + " elements (first at index " +
                                                     std::to_string(first_n) + ": " + num(out[first_n]) +
                                                     ", expected " + num(ref_out[first_n]) + ")");
    if (wrong)
      return verdict::reject(stage::correctness,
                             "wrong output: " + name + ": " + std::to_string(wrong) + " of " + std::to_string(n) +
                                 " elements differ from the reference by more than " + num(bound) + " = atol " +
                                 num(p.tol.atol) + " + rtol " + num(p.tol.rtol) + " x max|ref| " + num(max_ref) +
                                 " (first at index " + std::to_string(first_w) + ": got " + num(out[first_w]) +
                                 ", expected " + num(ref_out[first_w]) + ")");
  }
  return verdict::pass();
}

/// Everything checked after a candidate ran once on `arena`, staged from `rc` with outputs poisoned
/// with `poison`: the canary gaps, the inputs, every output element. `when` places the run in
/// messages ("at shape 'odd' (R=5), trial 1 of 2, first run").
inline verdict check_outputs(problem const& p, layout const& l, shared_arena const& arena, reference_case const& rc,
                             std::uint32_t poison, std::string const& when) {
  if (auto v = check_canaries(l, arena, when); !v) return v;
  if (auto v = check_unchanged(l.inputs, arena, rc.inputs, when); !v) return v;
  return check_values(p, l.outputs, arena, rc.outputs, poison, when, false);
}

/// A copy of every output in `arena`.
inline std::vector<std::vector<float>> copy_outputs(layout const& l, shared_arena const& arena) {
  std::vector<std::vector<float>> v;
  for (auto const& o : l.outputs) {
    float const* out = arena.at<float>(o.offset);
    v.emplace_back(out, out + o.count);
  }
  return v;
}

/// A second run on the same inputs against the first's outputs (`first`): bit for bit when `bitwise`,
/// else within the tolerance of the reference's outputs in `rc`. `where` places it in the message.
inline verdict check_repeat(problem const& p, layout const& l, shared_arena const& arena, reference_case const& rc,
                            std::vector<std::vector<float>> const& first, bool bitwise, std::string const& where) {
  for (std::size_t k = 0; k < l.outputs.size(); ++k) {
    auto const& o = l.outputs[k];
    float const* out = arena.at<float>(o.offset);
    const double bound = p.tol.atol + p.tol.rtol * max_abs(rc.outputs[k]);
    std::size_t differ = 0, at = 0;
    for (std::size_t i = 0; i < o.count; ++i) {
      const bool same = bitwise ? bits_of(out[i]) == bits_of(first[k][i])
                                : std::fabs(static_cast<double>(out[i]) - first[k][i]) <= bound;
      if (!same && !differ++) at = i;
    }
    if (differ)
      return verdict::reject(stage::correctness, "nondeterministic output: output '" + p.outputs[k].name + "' " +
                                                     where + " differs between two runs on the same inputs (" +
                                                     std::to_string(differ) + " of " + std::to_string(o.count) +
                                                     " elements; first at index " + std::to_string(at) + ": " +
                                                     num(first[k][at]) + " then " + num(out[at]) +
                                                     "); a candidate must compute the same result every time");
  }
  return verdict::pass();
}

}  // namespace kernelbrain::detail::host
