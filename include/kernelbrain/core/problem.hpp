// What is being optimised: signature, shapes, tolerance, roofline cost model, expert catalogue.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/parameters.hpp"

namespace kernelbrain {

/// One problem size. `dims` are the shape symbols (N, C, ...) that templates and launch plans use.
struct shape {
  std::string name;                          ///< e.g. "small", "4096x65536"
  std::map<std::string, std::int64_t> dims;  ///< shape symbols
  std::string tier = "default";              ///< smoke / small / medium / large ...
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

/// One input or output buffer of the kernel: float32 elements, `size` an expression over the shape's dims.
struct tensor_spec {
  std::string name;
  std::string size;                    ///< e.g. "R * C"
  std::string distribution = "normal"; ///< inputs: normal | uniform | positive (fresh values every trial)
  std::string dtype = "f32";           ///< element type: f32, or f16 (CUDA problems; raw 16-bit patterns)
};

/// A parameterised kernel: source text with ${NAME} placeholders, and the parameters it takes.
struct kernel_template {
  std::string source;        ///< ${PARAM} placeholders; empty for the synthetic backend
  std::string launch;        ///< launch plan text, same placeholders (backend-specific)
  parameter_space space;
};

/// A named expert hint: prose for an LLM and, where possible, a template for template search.
struct expert_hint {
  std::string name;   ///< e.g. "warp-per-row"
  std::string prose;  ///< what an expert would say about it
  std::optional<kernel_template> templ;
};

/// A problem. Built in code or loaded from a problem directory by a backend.
struct problem {
  std::string name;
  std::string signature;                 ///< the kernel's entry signature, as text
  std::vector<shape> shapes;             ///< ordered smallest first by convention
  tolerance tol;
  roofline machine;                      ///< ceilings for the floor; zeros disable the check
  std::vector<expert_hint> catalogue;
  std::optional<std::string> seed_source; ///< a known-correct starting candidate, if any
  std::vector<tensor_spec> inputs;       ///< kernel inputs, in argument order
  std::vector<tensor_spec> outputs;      ///< kernel outputs, in argument order
  std::vector<std::string> dim_order;    ///< the order dims are passed to the kernel
  std::string reference_source;          ///< trusted reference implementation (backend language)
  std::string reference_launch;          ///< the reference's launch plan as JSON text (CUDA); "" for host
  std::string description;               ///< prose for people and LLM prompts
  /// Backend settings from the problem file: "precision" (fp32, tf32, 3xtf32, fp16), "arch"
  /// (sm_90, or sm_90a for Hopper-only instructions such as wgmma: the NVRTC target),
  /// "nvrtc_check.max_spill_bytes", "nvrtc_check.max_registers".
  std::map<std::string, std::string> options;
  std::string backend;                   ///< "synthetic", "host", "cuda": which evaluator runs it
  std::string directory;                 ///< where it was loaded from ("" when built in code)

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
    if (!(tol.rtol >= 0) || !(tol.atol >= 0)) throw error("problem '" + name + "': negative tolerance");
    for (auto const& h : catalogue)
      if (h.templ) h.templ->space.validate("problem '" + name + "', hint '" + h.name + "'");
  }
};

/// `p` narrowed to the benchmark shapes named in `keep` plus every correctness shape (tiers "smoke"
/// and "odd"): a search that tunes for those sizes only, behind the same gate. Throws
/// kernelbrain::error for a name that is not one of its benchmark shapes, listing them.
[[nodiscard]] inline problem focused_on(problem p, std::vector<std::string> const& keep) {
  auto is_check = [](shape const& s) { return s.tier == "smoke" || s.tier == "odd"; };
  std::string known;
  for (auto const& s : p.shapes)
    if (!is_check(s)) known += (known.empty() ? "" : ", ") + s.name;
  for (auto const& k : keep) {
    auto it = std::find_if(p.shapes.begin(), p.shapes.end(), [&](shape const& s) { return s.name == k; });
    if (it == p.shapes.end() || is_check(*it))
      throw error("problem '" + p.name + "': '" + k + "' is not one of its benchmark shapes (" + known + ")");
  }
  std::erase_if(p.shapes, [&](shape const& s) {
    return !is_check(s) && std::find(keep.begin(), keep.end(), s.name) == keep.end();
  });
  return p;
}

}  // namespace kernelbrain
