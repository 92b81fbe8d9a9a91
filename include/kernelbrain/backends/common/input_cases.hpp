// input_cases: the adversarial transforms of problem.hpp's input_case, as both backends apply them.
// The transform of one value is written once, in KERNELBRAIN_INPUT_CASE_FUNCTION: the host backend
// compiles it here (kb_input_case below) and the CUDA worker compiles the same text, made a
// __device__ function, into its trusted device code with NVRTC (input_case_device_source), so the
// two backends cannot drift apart. Also the list of adversarial trials of a problem and the words
// that name one in a verdict.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/core/problem.hpp"

// One fresh value `v` transformed by case `kind` (input_case::kind as an int; 0 leaves it as drawn)
// with the case's value `a`; `g`: 64 random bits of this element's own, independent of `v` (spikes
// and signed zeros pick their elements with them). `QUALIFIERS`: inline, or __device__ ... for
// CUDA. Plain C that is also CUDA: no std::, no host-only calls (rintf is in both), so that its text
// compiles on either side.
#define KERNELBRAIN_INPUT_CASE_FUNCTION(QUALIFIERS)                                  \
  QUALIFIERS float kb_input_case(int kind, float a, float v, unsigned long long g) { \
    if (kind == 1) return v * a;                                                     \
    if (kind == 2) return v + a;                                                     \
    if (kind == 3) return a;                                                         \
    if (kind == 4) return rintf(v * a) / a;                                          \
    if (kind == 5) return (g & 255) == 0 ? ((g & 256) ? a : -a) : v;                 \
    if (kind == 6) return (g & 1) ? ((g & 2) ? 0.f : -0.f) : v;                      \
    return v;                                                                        \
  }
#define KERNELBRAIN_INPUT_CASE_TEXT_(...) #__VA_ARGS__
#define KERNELBRAIN_INPUT_CASE_TEXT(...) KERNELBRAIN_INPUT_CASE_TEXT_(__VA_ARGS__)

namespace kernelbrain::detail {

static_assert(static_cast<int>(input_case::kind::scaled) == 1 && static_cast<int>(input_case::kind::offset) == 2 &&
                  static_cast<int>(input_case::kind::constant) == 3 && static_cast<int>(input_case::kind::ties) == 4 &&
                  static_cast<int>(input_case::kind::spikes) == 5 &&
                  static_cast<int>(input_case::kind::signed_zeros) == 6,
              "KERNELBRAIN_INPUT_CASE_FUNCTION numbers the kinds as input_case::kind does");

/// The transform, compiled for the host.
KERNELBRAIN_INPUT_CASE_FUNCTION(inline)

/// The same transform as CUDA source, a __device__ function for the CUDA worker's trusted code.
inline constexpr char const* input_case_device_source =
    KERNELBRAIN_INPUT_CASE_TEXT(KERNELBRAIN_INPUT_CASE_FUNCTION(__device__ __forceinline__)) "\n";

/// One adversarial trial: `what` applied to input `input`, the other inputs as drawn.
struct adversarial_trial {
  std::size_t input = 0;
  input_case what;
};

/// The adversarial trials of `p`: one per case of each input, inputs in argument order.
[[nodiscard]] inline std::vector<adversarial_trial> adversarial_trials(problem const& p) {
  std::vector<adversarial_trial> out;
  for (std::size_t k = 0; k < p.inputs.size(); ++k)
    for (auto const& c : p.inputs[k].adversarial) out.push_back({k, c});
  return out;
}

/// "adversarial inputs: input 'x' scaled:64", for verdicts.
[[nodiscard]] inline std::string trial_text(problem const& p, adversarial_trial const& t) {
  return "adversarial inputs: input '" + p.inputs[t.input].name + "' " + t.what.str();
}

}  // namespace kernelbrain::detail
