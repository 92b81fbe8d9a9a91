// host_trials: the host backend's correctness trials. Each trial draws fresh inputs, runs the
// candidate twice on them (outputs poisoned with NaN, then with a huge finite value), checks each
// run completely against the reference (host_output_check) and requires the two runs to agree. At
// one shape (adversarial_shape) the plain trials are followed by one trial per adversarial case of
// each input (host_options::adversarial_inputs), as the CUDA backend does.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/backends/common/input_cases.hpp"
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/backends/host/detail/output_check.hpp"
#include "kernelbrain/backends/host/detail/reference.hpp"
#include "kernelbrain/backends/host/detail/shapes.hpp"
#include "kernelbrain/backends/host/detail/worker.hpp"
#include "kernelbrain/backends/host/options.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::detail::host {

class correctness_trials {
 public:
  /// Everything passed in must outlive this object.
  correctness_trials(problem const& p, host_options const& opt, std::vector<shape_plan> const& shapes,
                     reference_oracle& ref, host_worker& cand)
      : prob_(p), opt_(opt), shapes_(shapes), ref_(ref), cand_(cand) {}

  /// The seed of trial `t` at shape `s` of a check seeded with `seed`.
  [[nodiscard]] static std::uint64_t seed_of(std::uint64_t seed, std::size_t s, int t) {
    return derive_seed(seed, "host-trial", (static_cast<std::uint64_t>(s) << 32) | static_cast<std::uint32_t>(t));
  }

  /// `trials` trials of `artifact` at each of `shapes`, and at the adversarial shape, when it is one
  /// of them, one trial per adversarial case of each input (unless host_options::adversarial_inputs
  /// is off); the first failure is the verdict. Throws kernelbrain::error for a shape index out of
  /// range, reference_failure when the reference fails.
  /// `sanitizer_runtimes`: `artifact` is a sanitized build, run with these runtimes preloaded.
  verdict run(std::string const& artifact, std::span<std::size_t const> shapes, int trials, std::uint64_t seed,
              std::string const& sanitizer_runtimes = {}) {
    runtimes_ = &sanitizer_runtimes;
    for (auto s : shapes) {
      if (s >= shapes_.size())
        throw error("host backend: shape index " + std::to_string(s) + " out of range: problem '" + prob_.name +
                    "' has " + std::to_string(shapes_.size()) + " shapes");
      for (int t = 0; t < trials; ++t)
        if (auto v = trial(artifact, s, seed_of(seed, s, t),
                           "trial " + std::to_string(t + 1) + " of " + std::to_string(trials));
            !v)
          return v;
      if (!opt_.adversarial_inputs || s != adversarial_shape(prob_, shapes_)) continue;
      const auto cases = adversarial_trials(prob_);
      for (std::size_t i = 0; i < cases.size(); ++i)
        if (auto v = trial(artifact, s, seed_of(seed, s, trials + static_cast<int>(i)), trial_text(prob_, cases[i]),
                           &cases[i]);
            !v)
          return v;
    }
    return verdict::pass();
  }

 private:
  /// One fresh-input trial: two runs (NaN poison, then a huge sentinel), each fully checked, and the
  /// two must agree. `adversarial`: one input transformed by its case.
  verdict trial(std::string const& artifact, std::size_t s, std::uint64_t seed, std::string const& label,
                adversarial_trial const* adversarial = nullptr) {
    auto const& sp = shapes_[s];
    auto const& rc = ref_.at(s, seed, adversarial);
    auto& arena = cand_.arena();
    cand_.admit({&artifact}, opt_.modules_per_worker);
    stage_arena(arena, sp.layout, rc.inputs, nan_poison);
    auto q = run_request_for(sp, artifact, opt_.candidate_memory);
    q.sanitizer_runtimes = *runtimes_;
    const std::string where = "at shape " + sp.label + ", " + label;
    std::vector<std::vector<float>> first;
    for (int run = 0; run < 2; ++run) {
      const std::uint32_t poison = run == 0 ? nan_poison : big_poison;
      if (run == 1) poison_outputs(arena, sp.layout, poison);
      const std::string when = where + (run == 0 ? ", first run" : ", second run");
      if (auto v = cand_.run(q, "kb_kernel " + when); !v) return v;
      if (auto v = check_outputs(prob_, sp.layout, arena, rc, poison, when); !v) return v;
      if (run == 0)
        first = copy_outputs(sp.layout, arena);
      else if (auto v = check_repeat(prob_, sp.layout, arena, rc, first, opt_.bitwise_repeat, where); !v)
        return v;
    }
    return verdict::pass();
  }

  problem const& prob_;
  host_options const& opt_;
  std::vector<shape_plan> const& shapes_;
  reference_oracle& ref_;
  host_worker& cand_;
  std::string const* runtimes_ = nullptr;  ///< of the run in progress
};

}  // namespace kernelbrain::detail::host
