// What is being optimised: signature, shapes, tolerance, roofline cost model, expert catalogue.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/core/diagnosis_tags.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/parameters.hpp"

namespace kernelbrain {

/// One problem size. `dims` are the shape symbols (N, C, ...) that templates and launch plans use.
struct shape {
  std::string name;                          ///< e.g. "small", "4096x65536"
  std::map<std::string, std::int64_t> dims;  ///< shape symbols
  std::string tier = "default";              ///< smoke / odd / wide / small / medium / large ...
  double weight = 1.0;                       ///< weight in the aggregate score
  double bytes = 0;                          ///< fewest bytes moved (each input read once, output written once)
  double flops = 0;                          ///< arithmetic operations
};

/// Magnitude-aware tolerance: |out - ref| <= atol + rtol * max|ref|.
struct tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};

/// The machine's ceilings used for the roofline floor of a shape.
struct roofline {
  double bytes_per_second = 0;  ///< 0: unknown
  double flops_per_second = 0;  ///< 0: unknown
  /// max(bytes / bandwidth, flops / rate): no correct implementation is faster.
  [[nodiscard]] double floor_seconds(shape const& s) const noexcept {
    double t = 0;
    if (bytes_per_second > 0) t = s.bytes / bytes_per_second;
    if (flops_per_second > 0 && s.flops / flops_per_second > t) t = s.flops / flops_per_second;
    return t;
  }
};

/// Shapes whose job is correctness, not a place in the score: tiers "smoke" and "odd" (small sizes,
/// sizes off every block multiple) and "wide" (see is_timed_shape). The default gate checks them.
[[nodiscard]] inline bool is_correctness_shape(shape const& s) {
  return s.tier == "smoke" || s.tier == "odd" || s.tier == "wide";
}

/// False for tier "wide": a correctness-only shape wider than every benchmark shape (a longer row, a
/// larger reduction), for kernels that size a buffer for the sizes they were timed at. The gate
/// checks it; no rung times a candidate there and it counts in no score (the baseline still times
/// the reference there, which `kernelbrain check` compares with the floor), so it can be kept cheap:
/// few rows, long ones.
[[nodiscard]] inline bool is_timed_shape(shape const& s) { return s.tier != "wide"; }

/// An adversarial transform of an input's fresh random values, tried in extra correctness trials at
/// one correctness shape (the smallest of tier "odd", else the smallest correctness shape) so that
/// numerics which hold only for gentle inputs fail the gate. Written "kind" or "kind:value" in
/// problem.json; the transforms themselves: backends/common/input_cases.hpp.
struct input_case {
  enum class kind : std::int32_t {
    scaled = 1,        ///< v * value (large magnitudes: exp overflows without max subtraction); default 64
    offset = 2,        ///< v + value (every value far from zero); default 1000
    constant = 3,      ///< every element = value (constant rows, all-equal maxima); default 1.5
    ties = 4,          ///< round(v * value) / value (many exact ties, and -0.0 from small negatives); default 2
    spikes = 5,        ///< about one element in 256 becomes +-value, the rest unchanged; default 1000
    signed_zeros = 6,  ///< about half the elements become +0.0 or -0.0
  };
  kind what = kind::scaled;
  double value = 0;

  /// "scaled:64" and so on; "" for a name that is not a kind or a value that does not parse.
  [[nodiscard]] static std::optional<input_case> parse(std::string_view text);
  [[nodiscard]] std::string str() const;
};

/// One input or output buffer of the kernel: float32 elements, `size` an expression over the shape's dims.
struct tensor_spec {
  std::string name;
  std::string size;                     ///< e.g. "R * C"
  std::string distribution = "normal";  ///< inputs: normal | uniform | positive (fresh values every trial)
  std::string dtype = "f32";            ///< element type: f32, or f16 (CUDA problems; raw 16-bit patterns)
  /// Inputs: adversarial cases (both backends; host_options and cuda_options::adversarial_inputs turn
  /// them off). Loaded problems get default_cases(distribution) unless problem.json lists its own
  /// ([] for none); problems built in code start with none.
  std::vector<input_case> adversarial = {};
};

/// The cases an input gets unless its problem says otherwise: large magnitudes and ties for every
/// input, signed zeros where zero is a valid value (not for "positive" inputs). Not `constant`: in a
/// dot product over a constant operand every output is one sum, whose cancellation the magnitude-aware
/// tolerance cannot absorb (honest matvec kernels failed it on the H200); problems declare it where it
/// is safe and telling (softmax, norms).
[[nodiscard]] inline std::vector<input_case> default_cases(std::string_view distribution) {
  using k = input_case::kind;
  std::vector<input_case> v{{k::scaled, 64}, {k::ties, 2}};
  if (distribution != "positive") v.push_back({k::signed_zeros, 0});
  return v;
}

inline std::optional<input_case> input_case::parse(std::string_view text) {
  using k = input_case::kind;
  struct entry {
    std::string_view name;
    k what;
    double value;
  };
  static constexpr entry kinds[] = {{"scaled", k::scaled, 64},      {"offset", k::offset, 1000},
                                    {"constant", k::constant, 1.5}, {"ties", k::ties, 2},
                                    {"spikes", k::spikes, 1000},    {"signed_zeros", k::signed_zeros, 0}};
  const auto colon = text.find(':');
  const auto name = text.substr(0, colon);
  for (auto const& e : kinds) {
    if (e.name != name) continue;
    input_case c{e.what, e.value};
    if (colon == std::string_view::npos) return c;
    if (e.what == k::signed_zeros) return std::nullopt;  // takes no value
    const std::string v(text.substr(colon + 1));
    char* end = nullptr;
    c.value = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(c.value) || std::fabs(c.value) > 1e30)
      return std::nullopt;
    if (e.what == k::ties && !(c.value > 0)) return std::nullopt;
    return c;
  }
  return std::nullopt;
}

inline std::string input_case::str() const {
  char b[64];
  switch (what) {
    case kind::scaled:
      std::snprintf(b, sizeof b, "scaled:%g", value);
      break;
    case kind::offset:
      std::snprintf(b, sizeof b, "offset:%g", value);
      break;
    case kind::constant:
      std::snprintf(b, sizeof b, "constant:%g", value);
      break;
    case kind::ties:
      std::snprintf(b, sizeof b, "ties:%g", value);
      break;
    case kind::spikes:
      std::snprintf(b, sizeof b, "spikes:%g", value);
      break;
    case kind::signed_zeros:
      return "signed_zeros";
  }
  return b;
}

/// A parameterised kernel: source text with ${NAME} placeholders, and the parameters it takes.
struct kernel_template {
  std::string source;  ///< ${PARAM} placeholders; empty for the synthetic backend
  std::string launch;  ///< launch plan text, same placeholders (backend-specific)
  parameter_space space;
};

/// What an expert would change in a template's kernel when the profiler reports one tag: move one
/// parameter up or down (problem.json: a hint's "diagnosis_moves", {TAG: {PARAM: +1 or -1}}). The
/// expert generator tries such a move first on a parent whose diagnosis holds the tag.
struct diagnosis_move {
  std::string tag;    ///< a kernel finding of diagnosis_vocabulary (core/diagnosis_tags.hpp)
  std::string param;  ///< one of the hint's template parameters
  int direction = 0;  ///< +1: a larger value; -1: a smaller one (by value, whatever the list's order)
  friend bool operator==(diagnosis_move const&, diagnosis_move const&) = default;
};

/// A named expert hint: prose for an LLM and, where possible, a template for template search.
struct expert_hint {
  std::string name;   ///< e.g. "warp-per-row"
  std::string prose;  ///< what an expert would say about it
  std::optional<kernel_template> templ;
  std::vector<diagnosis_move> diagnosis_moves;  ///< template moves per diagnosis tag, in file order
  /// problem.json's "provenance" of the hint, as compact JSON text ("" when none): where an adopted
  /// kernel came from (`kernelbrain adopt`: journal, candidate, model, score, dates). Kept for people and
  /// tools; the search never reads it.
  std::string provenance = {};
};

/// What a problem computes in PyTorch terms (problem.json's "pytorch": inline, or the file it names).
/// problem.json describes flat buffers; this gives each tensor its logical sizes and the PyTorch
/// expression over them, so that the search can time PyTorch eager and torch.compile at every timed
/// shape, and `export` can write a package whose fallback is that expression (docs/problem-format.md).
struct pytorch_declaration {
  std::string file;        ///< where it was read: problem.json, or the file problem.json names
  std::string function;    ///< a Python name for the operation, e.g. "softmax" (the export's alias)
  std::string expression;  ///< one line of Python over the tensor and attribute names, e.g. "torch.softmax(x, dim=1)"
  /// Where `expression` needs a newer PyTorch: the attribute path it needs ("torch.nn.functional.
  /// scaled_dot_product_attention") and the expression used where that is missing. Both empty when none.
  std::string compat_requires, compat_expression;
  std::vector<std::pair<std::string, std::vector<std::string>>> views;  ///< tensor -> sizes (expressions over dims)
  std::vector<std::pair<std::string, std::string>> attributes;          ///< (dim, keyword argument name), in file order
  std::string note;                                                     ///< prose, may be empty
  /// The sizes of `tensor`'s view (nullptr when it has none).
  [[nodiscard]] std::vector<std::string> const* view(std::string_view tensor) const {
    for (auto const& [name, sizes] : views)
      if (name == tensor) return &sizes;
    return nullptr;
  }
};

/// A problem. Built in code or loaded from a problem directory by a backend.
struct problem {
  std::string name;
  std::string signature;      ///< the kernel's entry signature, as text
  std::vector<shape> shapes;  ///< ordered smallest first by convention
  tolerance tol;
  roofline machine;  ///< ceilings for the floor; zeros disable the check
  std::vector<expert_hint> catalogue;
  std::optional<std::string> seed_source;      ///< a known-correct starting candidate, if any
  std::vector<tensor_spec> inputs;             ///< kernel inputs, in argument order
  std::vector<tensor_spec> outputs;            ///< kernel outputs, in argument order
  std::vector<std::string> dim_order;          ///< the order dims are passed to the kernel
  std::string reference_source;                ///< trusted reference implementation (backend language)
  std::string reference_launch;                ///< the reference's launch plan as JSON text (CUDA); "" for host
  std::string description;                     ///< prose for people and LLM prompts
  std::optional<pytorch_declaration> pytorch;  ///< what it computes in PyTorch terms, if declared
  /// Backend settings from the problem file: "precision" (fp32, tf32, 3xtf32, fp16), "arch"
  /// (sm_90, or sm_90a for Hopper-only instructions such as wgmma: the NVRTC target),
  /// "nvrtc_check.max_spill_bytes", "nvrtc_check.max_registers".
  std::map<std::string, std::string> options;
  std::string backend;    ///< "synthetic", "host", "cuda": which evaluator runs it
  std::string directory;  ///< where it was loaded from ("" when built in code)

  [[nodiscard]] std::size_t shape_index(std::string_view shape_name) const {
    for (std::size_t i = 0; i < shapes.size(); ++i)
      if (shapes[i].name == shape_name) return i;
    throw error("problem '" + name + "': no shape named '" + std::string(shape_name) + "'");
  }
  /// Throws kernelbrain::error naming the first thing wrong.
  void validate() const {
    if (name.empty()) throw error("problem: 'name' is empty");
    if (shapes.empty()) throw error("problem '" + name + "': no shapes");
    for (auto const& s : shapes)
      if (!(s.weight > 0)) throw error("problem '" + name + "': shape '" + s.name + "' has weight <= 0");
    if (std::none_of(shapes.begin(), shapes.end(), [](shape const& s) { return is_timed_shape(s); }))
      throw error("problem '" + name + "': every shape is of tier 'wide', which is never timed: add a benchmark shape");
    if (!(tol.rtol >= 0) || !(tol.atol >= 0)) throw error("problem '" + name + "': negative tolerance");
    for (auto const& h : catalogue) {
      const std::string where = "problem '" + name + "', hint '" + h.name + "'";
      if (h.templ) h.templ->space.validate(where);
      for (auto const& m : h.diagnosis_moves) {
        if (!is_kernel_finding(m.tag))
          throw error(where + ": diagnosis move for '" + m.tag + "', which is not a diagnosis finding");
        auto const* params = h.templ ? &h.templ->space.params : nullptr;
        if (!params ||
            std::none_of(params->begin(), params->end(), [&](parameter_def const& d) { return d.name == m.param; }))
          throw error(where + ": diagnosis move of '" + m.param + "', which is not one of its parameters");
        if (m.direction != 1 && m.direction != -1)
          throw error(where + ": diagnosis move of '" + m.param + "' with direction " + std::to_string(m.direction) +
                      " (+1 or -1)");
      }
    }
  }
};

/// `p` narrowed to the benchmark shapes named in `keep` plus every correctness shape (tiers "smoke",
/// "odd" and "wide"): a search that tunes for those sizes only, behind the same gate. Throws
/// kernelbrain::error for a name that is not one of its benchmark shapes, listing them.
[[nodiscard]] inline problem focused_on(problem p, std::vector<std::string> const& keep) {
  std::string known;
  for (auto const& s : p.shapes)
    if (!is_correctness_shape(s)) known += (known.empty() ? "" : ", ") + s.name;
  for (auto const& k : keep) {
    auto it = std::find_if(p.shapes.begin(), p.shapes.end(), [&](shape const& s) { return s.name == k; });
    if (it == p.shapes.end() || is_correctness_shape(*it))
      throw error("problem '" + p.name + "': '" + k + "' is not one of its benchmark shapes (" + known + ")");
  }
  std::erase_if(p.shapes, [&](shape const& s) {
    return !is_correctness_shape(s) && std::find(keep.begin(), keep.end(), s.name) == keep.end();
  });
  return p;
}

}  // namespace kernelbrain
