// host_inputs: the input values of the host backend and where its calls read them. draw_inputs()
// makes the fresh inputs of a correctness trial (with an adversarial case, when asked); a
// timing_inputs is the plan of one timing request: a random field per input, larger than the input,
// from which every call reads its own window (other values at other addresses, nothing rewritten
// between calls), and the repeat probe: the calls before a randomly chosen checked call read near-
// copies of an earlier call's window (the same values but for a few elements). A kernel that keys a
// shortcut on sampled input values sees a repeat there and returns a stale answer at the checked
// call; one that keys it on addresses never sees a repeat at all.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>
#include "kernelbrain/backends/common/input_cases.hpp"
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/backends/host/detail/shapes.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rng.hpp"

namespace kernelbrain::detail::host {

/// `count` fresh values of input `k` of `p` with its declared distribution, from `r`.
inline std::vector<float> draw_values(problem const& p, std::size_t k, std::size_t count, rng& r) {
  auto const& t = p.inputs[k];
  std::vector<float> v(count);
  if (t.distribution == "uniform")
    for (auto& x : v) x = static_cast<float>(2.0 * r.uniform() - 1.0);
  else if (t.distribution == "positive")
    for (auto& x : v) x = static_cast<float>(0.5 + 1.5 * r.uniform());
  else
    for (auto& x : v) x = static_cast<float>(r.normal());
  return v;
}

/// Fresh input values for shape `s` of `p`, drawn from `seed` (each input from its own stream, with
/// its declared distribution); with `adversarial`, its input's values transformed by its case (the
/// elements that spikes and signed zeros pick come from a stream of their own).
inline std::vector<std::vector<float>> draw_inputs(problem const& p, shape_plan const& s, std::uint64_t seed,
                                                   adversarial_trial const* adversarial = nullptr) {
  std::vector<std::vector<float>> inputs;
  for (std::size_t k = 0; k < p.inputs.size(); ++k) {
    rng r(derive_seed(seed, p.inputs[k].name, k));
    auto v = draw_values(p, k, s.in_counts[k], r);
    if (adversarial && adversarial->input == k) {
      rng g(derive_seed(seed, "input-case", k));
      const auto kind = static_cast<int>(adversarial->what.what);
      const auto a = static_cast<float>(adversarial->what.value);
      for (auto& x : v) x = kb_input_case(kind, a, x, g());
    }
    inputs.push_back(std::move(v));
  }
  return inputs;
}

/// Where each call of one timing request reads its inputs, and the values it finds there.
struct timing_inputs {
  std::vector<std::vector<float>> fields;  ///< per input: layout::fields' values
  std::vector<std::vector<float>> copies;  ///< as layout::copies: near-copy by near-copy, input by input
  /// Per call and side (call * sides + side), per input: the region (0 field, 1 + c near-copy c)
  /// and the element where the read starts in it.
  struct place {
    std::size_t region = 0, start = 0;
  };
  std::vector<std::vector<place>> reads;
  int sides = 1, calls = 0;
  int checked = -1;  ///< the call besides the last whose outputs are checked; -1: none

  /// The index in `reads` of call `call` of side `side`.
  [[nodiscard]] std::size_t at(int call, int side) const noexcept {
    return static_cast<std::size_t>(call) * static_cast<std::size_t>(sides) + static_cast<std::size_t>(side);
  }

  /// The values call `call` of side `side` (0: the module timed, 1: the interleaved one) reads.
  [[nodiscard]] std::vector<std::vector<float>> inputs_of(shape_plan const& s, int call, int side) const {
    std::vector<std::vector<float>> out;
    auto const& r = reads[at(call, side)];
    for (std::size_t k = 0; k < r.size(); ++k) {
      auto const& from = r[k].region == 0 ? fields[k] : copies[(r[k].region - 1) * fields.size() + k];
      auto const b = from.begin() + static_cast<std::ptrdiff_t>(r[k].start);
      out.emplace_back(b, b + static_cast<std::ptrdiff_t>(s.in_counts[k]));
    }
    return out;
  }

  /// Arena offsets of every read, in host_protocol::time_request::reads' order.
  [[nodiscard]] std::vector<std::uint64_t> offsets(layout const& l) const {
    std::vector<std::uint64_t> v;
    for (auto const& call : reads)
      for (std::size_t k = 0; k < call.size(); ++k) {
        auto const& slot = call[k].region == 0 ? l.fields[k] : l.copies[(call[k].region - 1) * l.inputs.size() + k];
        v.push_back(slot.offset + call[k].start * sizeof(float));
      }
    return v;
  }
};

/// The plan of a timing request at shape `s` with `warmup` + `samples` calls of `sides` modules,
/// drawn from `seed`. Every call of a side reads another window of the fields (distinct while there
/// are enough of them). With `probe`, when the request has room (a checked call that is timed, two
/// calls before it, and the last call after it), the checked call and the one before it read
/// near-copies of the window of the call two before: each a copy with a few elements redrawn.
inline timing_inputs plan_timing_inputs(problem const& p, shape_plan const& s, std::uint64_t seed, int warmup,
                                        int samples, int sides, bool probe) {
  timing_inputs t;
  const std::size_t n = p.inputs.size();
  t.sides = sides;
  t.calls = warmup + samples;
  for (std::size_t k = 0; k < n; ++k) {
    rng r(derive_seed(seed, "host-field", k));
    t.fields.push_back(draw_values(p, k, s.in_counts[k] + window_span, r));
  }
  // Window starts: a shuffled deck per input and side, dealt call by call (reshuffled when it runs out).
  rng pick(derive_seed(seed, "host-windows", 0));
  std::vector<std::size_t> deck(window_starts);
  auto shuffle = [&] {  // Fisher-Yates with the project's generator: the same plan everywhere
    for (std::size_t i = 0; i < deck.size(); ++i) deck[i] = i;
    for (std::size_t i = deck.size() - 1; i > 0; --i) std::swap(deck[i], deck[pick.below(i + 1)]);
  };
  t.reads.assign(t.at(t.calls, 0), std::vector<timing_inputs::place>(n));
  for (std::size_t k = 0; k < n; ++k)
    for (int side = 0; side < sides; ++side) {
      std::size_t dealt = deck.size();
      for (int call = 0; call < t.calls; ++call) {
        if (dealt == deck.size()) {
          shuffle();
          dealt = 0;
        }
        t.reads[t.at(call, side)][k] = {0, deck[dealt++] * window_step};
      }
    }
  // The checked call: timed, not the last, with near_copies calls before it reading near-copies of
  // an earlier window when there is room; else any timed call but the last, reading its own window.
  const int lo = std::max(warmup, static_cast<int>(near_copies)), hi = t.calls - 2;
  if (probe && lo <= hi) {
    t.checked = lo + static_cast<int>(pick.below(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1));
    const int base = t.checked - static_cast<int>(near_copies);
    for (std::size_t c = 0; c < near_copies; ++c) {
      const int call = base + 1 + static_cast<int>(c);
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t start = t.reads[t.at(base, 0)][k].start;
        auto const b = t.fields[k].begin() + static_cast<std::ptrdiff_t>(start);
        std::vector<float> v(b, b + static_cast<std::ptrdiff_t>(s.in_counts[k]));
        // A few elements redrawn (one in 4096, at least one), each by at least 0.25: a sample of a
        // few dozen values most likely misses them all, the outputs most likely do not.
        rng r(derive_seed(seed, "host-near-copy", c * n + k));
        const std::size_t changes = v.empty() ? 0 : std::max<std::size_t>(1, v.size() / 4096);
        for (std::size_t i = 0; i < changes; ++i) {
          float& x = v[r.below(v.size())];
          float y = x;
          for (int tries = 0; tries < 16 && !(std::fabs(y - x) >= 0.25f); ++tries) y = draw_values(p, k, 1, r)[0];
          x = y != x ? y : std::nextafter(x, std::numeric_limits<float>::infinity());
        }
        t.copies.push_back(std::move(v));
        t.reads[t.at(call, 0)][k] = {1 + c, 0};
      }
    }
  } else if (probe && warmup <= hi) {
    t.checked =
        warmup + static_cast<int>(pick.below(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(warmup) + 1));
  }
  return t;
}

/// Prepares `arena` for a timing request planned as `t`: canaries in the gaps, the fields and
/// near-copies written, `poison` in the outputs (the worker poisons again before every call).
inline void stage_timing(shared_arena& arena, layout const& l, timing_inputs const& t, std::uint32_t poison) {
  arena.ensure(l.bytes);
  fill_gaps(arena, l);
  write_inputs(arena, l.fields, t.fields);
  write_inputs(arena,
               std::vector<slot>(l.copies.begin(), l.copies.begin() + static_cast<std::ptrdiff_t>(t.copies.size())),
               t.copies);
  poison_outputs(arena, l, poison);
}

/// The time request for `t` at shape `s`: `module` timed (its outputs layout::outputs), `module_b`
/// interleaved when not empty (layout::outputs_b); every region staged is copied back at the end.
inline host_protocol::time_request timing_request(shape_plan const& s, timing_inputs const& t,
                                                  std::string const& module, std::uint64_t memory_allowance,
                                                  std::string const& module_b = {}) {
  auto const& l = s.layout;
  host_protocol::time_request q;
  q.a = run_request_for(s, module, memory_allowance);
  q.module_b = module_b;
  if (!module_b.empty()) q.outputs_b = refs(l.outputs_b);
  q.regions = refs(l.fields);
  for (std::size_t i = 0; i < t.copies.size(); ++i) q.regions.push_back({l.copies[i].offset, l.copies[i].count});
  q.reads = t.offsets(l);
  q.checked_call = t.checked;
  if (t.checked >= 0) q.checked_outputs = refs(l.checked);
  return q;
}

}  // namespace kernelbrain::detail::host
