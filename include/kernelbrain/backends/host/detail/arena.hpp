// host_arena: one shape's buffers in the shared arena of the host backend, and how the parent
// prepares them before a call: where each buffer lives (layout: inputs, outputs, the incumbent's
// outputs, the timing regions — a field per input and near-copies of windows of it — and the
// checked timed call's outputs, with canary-filled gaps between all of them), the poison values,
// and staging (inputs written, outputs poisoned, gaps filled).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/backends/host/detail/protocol.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/isolation/worker_protocol.hpp"

namespace kernelbrain::detail::host {

inline constexpr std::uint32_t nan_poison = 0x7fc0deadU;   ///< a quiet NaN whose payload arithmetic never produces
inline constexpr std::uint32_t big_poison = 0x7f7fdeadU;   ///< a huge finite value (about 3.4e38)
inline constexpr std::uint32_t canary_bits = 0x7fc0ca11U;  ///< fills the gaps between buffers
inline constexpr std::size_t gap_bytes = host_protocol::guard_bytes;  ///< at least this much canary around every buffer

/// Timing reads each input from a window of a larger random field: windows start at multiples of
/// `window_step` elements (64 bytes, so a window is as aligned as the buffers), one of
/// `window_starts` places, so a field holds `window_span` elements more than the input.
inline constexpr std::size_t window_step = 16, window_starts = 4096, window_span = window_step * (window_starts - 1);
/// How many calls in a row read near-copies of one window (timing.hpp's repeat probe).
inline constexpr std::size_t near_copies = 2;

struct slot {
  std::size_t offset = 0, count = 0;
  std::string name;
};

/// Where everything lives in an arena: inputs, outputs, the incumbent's outputs, the timing regions
/// (a field per input; near_copies sets of near-copies, input by input), the checked timed call's
/// outputs, and canary-filled gaps between all of them.
struct layout {
  std::vector<slot> inputs, outputs, outputs_b, fields, copies, checked;
  std::vector<std::pair<std::size_t, std::size_t>> gaps;  ///< [begin, end) byte ranges
  std::vector<std::string> gap_names;                     ///< "between input 'x' and output 'y'"
  std::size_t bytes = 0;
};

/// The layout for `p`'s tensors with these element counts (one per input, one per output).
inline layout make_layout(problem const& p, std::span<std::size_t const> in_counts,
                          std::span<std::size_t const> out_counts) {
  layout l;
  std::size_t pos = 0;
  std::string before = "the start of the arena";
  auto place = [&](std::vector<slot>& into, std::size_t count, std::string name) {
    const std::size_t start = (pos + gap_bytes + 63) / 64 * 64;
    l.gaps.emplace_back(pos, start);
    l.gap_names.push_back("between " + before + " and " + name);
    into.push_back({start, count, name});
    pos = start + count * sizeof(float);
    before = std::move(name);
  };
  for (std::size_t i = 0; i < in_counts.size(); ++i) place(l.inputs, in_counts[i], "input '" + p.inputs[i].name + "'");
  for (std::size_t i = 0; i < out_counts.size(); ++i)
    place(l.outputs, out_counts[i], "output '" + p.outputs[i].name + "'");
  for (std::size_t i = 0; i < out_counts.size(); ++i)
    place(l.outputs_b, out_counts[i], "the incumbent's output '" + p.outputs[i].name + "'");
  for (std::size_t i = 0; i < in_counts.size(); ++i)
    place(l.fields, in_counts[i] + window_span, "input '" + p.inputs[i].name + "' (its timing field)");
  for (std::size_t c = 0; c < near_copies; ++c)
    for (std::size_t i = 0; i < in_counts.size(); ++i)
      place(l.copies, in_counts[i], "input '" + p.inputs[i].name + "' (near-copy " + std::to_string(c + 1) + ")");
  for (std::size_t i = 0; i < out_counts.size(); ++i)
    place(l.checked, out_counts[i], "output '" + p.outputs[i].name + "' (kept from a checked timed call)");
  l.gaps.emplace_back(pos, pos + gap_bytes);
  l.gap_names.push_back("after " + before);
  l.bytes = pos + gap_bytes;
  return l;
}

/// Inputs for one (shape, seed) and the reference's outputs for them, kept in the parent's own memory.
struct reference_case {
  std::vector<std::vector<float>> inputs, outputs;
};

/// The slots as the protocol names them.
inline std::vector<host_protocol::tensor_ref> refs(std::vector<slot> const& v) {
  std::vector<host_protocol::tensor_ref> out;
  out.reserve(v.size());
  for (auto const& s : v) out.push_back({s.offset, s.count});
  return out;
}

/// Copies `values` (one vector per slot) into the slots.
inline void write_inputs(shared_arena& arena, std::vector<slot> const& slots,
                         std::vector<std::vector<float>> const& values) {
  for (std::size_t k = 0; k < slots.size(); ++k)
    if (slots[k].count) std::memcpy(arena.at<float>(slots[k].offset), values[k].data(), slots[k].count * 4);
}

/// Fills every output with `poison`: an element still holding it after a call was not written.
inline void poison_outputs(shared_arena& arena, layout const& l, std::uint32_t poison) {
  for (auto const& o : l.outputs) {
    auto* w = arena.at<std::uint32_t>(o.offset);
    std::fill(w, w + o.count, poison);
  }
}

/// Fills every gap between buffers with the canary.
inline void fill_gaps(shared_arena& arena, layout const& l) {
  for (auto const& [b, e] : l.gaps) {
    auto* w = arena.at<std::uint32_t>(b);
    for (std::size_t i = 0; i < (e - b) / 4; ++i) w[i] = canary_bits;
  }
}

/// Prepares `arena` for a call: canaries in the gaps, `inputs` in the input slots, `poison` in the outputs.
inline void stage_arena(shared_arena& arena, layout const& l, std::vector<std::vector<float>> const& inputs,
                        std::uint32_t poison) {
  arena.ensure(l.bytes);
  fill_gaps(arena, l);
  write_inputs(arena, l.inputs, inputs);
  poison_outputs(arena, l, poison);
}

}  // namespace kernelbrain::detail::host
