// host_reference: the trusted reference of the host backend, in a worker of its own. It draws the
// inputs of each (shape, seed) and, for an adversarial trial, transforms one input by its case
// (backends/common/input_cases.hpp), runs the reference on them and keeps the expected outputs (for one
// measurement: forget() between them), and times the reference for the baseline. The reference is
// trusted code: whatever goes wrong with it is a reference_failure or an error, never a verdict on
// a candidate.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/input_cases.hpp"
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/backends/host/detail/compiler.hpp"
#include "kernelbrain/backends/host/detail/inputs.hpp"
#include "kernelbrain/backends/host/detail/output_check.hpp"
#include "kernelbrain/backends/host/detail/shapes.hpp"
#include "kernelbrain/backends/host/detail/worker.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rng.hpp"

namespace kernelbrain::detail::host {

/// The reference failed: not the candidate's fault.
struct reference_failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class reference_oracle {
 public:
  /// `shapes` must outlive this object (they are planned once, by the evaluator).
  reference_oracle(std::string const& executable, problem const& p, std::vector<shape_plan> const& shapes,
                   watchdog limits)
      : prob_(p), shapes_(shapes), worker_(executable, p, limits, nullptr) {}

  /// Loads the compiled reference in the reference worker. Throws kernelbrain::error when it did not
  /// compile or cannot be loaded.
  void load(compile_result const& r) {
    if (!r.result)
      throw error("problem '" + prob_.name + "': reference_source failed to build (" +
                  std::string(to_string(r.result.where)) + "): " + r.result.detail);
    artifact_ = r.artifact;
    if (auto v = worker_.load(artifact_, 0, "loading the reference"); !v)
      throw error("problem '" + prob_.name + "': reference_source cannot be used: " + v.detail);
  }

  /// Inputs drawn from `seed` at shape `s` (with `adversarial`, transformed by its case) and the
  /// reference's outputs for them, computed once until forget(). Throws reference_failure when the
  /// reference fails or leaves an output non-finite.
  reference_case const& at(std::size_t s, std::uint64_t seed, adversarial_trial const* adversarial = nullptr) {
    // The case is part of the key: the expected outputs are always the reference's on these very inputs.
    const auto key = adversarial ? case_key{s, seed, adversarial->input, static_cast<int>(adversarial->what.what),
                                            adversarial->what.value}
                                 : case_key{s, seed, 0, 0, 0.0};
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    auto const& sp = shapes_[s];
    const std::string where = sp.label + (adversarial ? " (" + trial_text(prob_, *adversarial) + ")" : "");
    return cache_.emplace(key, on(s, draw_inputs(prob_, sp, seed, adversarial), where)).first->second;
  }

  /// The reference's outputs on `inputs` at shape `s` (not remembered); `where` names the shape and
  /// the inputs in messages. Throws reference_failure as at() does.
  reference_case on(std::size_t s, std::vector<std::vector<float>> inputs, std::string const& where) {
    auto const& sp = shapes_[s];
    reference_case rc;
    rc.inputs = std::move(inputs);
    stage_arena(worker_.arena(), sp.layout, rc.inputs, nan_poison);
    if (auto v = worker_.run(run_request_for(sp, artifact_, 0), "the reference at shape " + where); !v)
      throw reference_failure(v.detail + " (the reference is trusted code: fix problem.reference_source)");
    for (std::size_t k = 0; k < sp.layout.outputs.size(); ++k) {
      auto const& o = sp.layout.outputs[k];
      float const* out = worker_.arena().at<float>(o.offset);
      for (std::size_t i = 0; i < o.count; ++i)
        if (!std::isfinite(out[i]))
          throw reference_failure("the reference left output '" + prob_.outputs[k].name + "' at shape " + where +
                                  (bits_of(out[i]) == nan_poison ? " unwritten" : " non-finite") + " at index " +
                                  std::to_string(i) + ": fix problem.reference_source");
      rc.outputs.emplace_back(out, out + o.count);
    }
    return rc;
  }

  /// Forgets the cases computed so far (each measurement draws its own).
  void forget() noexcept { cache_.clear(); }

  /// Times the reference at shape `s` as candidates are timed (each call on its own window of fields
  /// drawn from `seed`; trusted, so no call is checked): the reply holds the samples. Throws
  /// kernelbrain::error when the reference fails.
  host_protocol::reply time(std::size_t s, std::uint64_t seed, int warmup, int samples, std::uint64_t flush_bytes) {
    auto const& sp = shapes_[s];
    const auto plan = plan_timing_inputs(prob_, sp, seed, warmup, samples, 1, false);
    stage_timing(worker_.arena(), sp.layout, plan, nan_poison);
    auto q = timing_request(sp, plan, artifact_, 0);
    q.warmup = warmup;
    q.samples = samples;
    q.flush_bytes = flush_bytes;
    q.poison_bits = nan_poison;
    host_worker::timed out;
    if (auto v = worker_.time(q, "timing the reference at shape " + sp.label, out); !v)
      throw error("host backend: " + v.detail + " (fix problem.reference_source, or raise host_options::run_timeout)");
    return std::move(out.reply);
  }

 private:
  problem const& prob_;
  std::vector<shape_plan> const& shapes_;
  host_worker worker_;  ///< trusted: its time is charged to nobody
  std::string artifact_;
  /// (shape, seed, adversarial input, kind, value); kind 0: as drawn.
  using case_key = std::tuple<std::size_t, std::uint64_t, std::size_t, int, double>;
  std::map<case_key, reference_case> cache_;
};

}  // namespace kernelbrain::detail::host
