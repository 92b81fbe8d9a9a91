// The replay backend: answers build, check and measure from a recording (io/recording.hpp) instead of
// a device, so that strategies can be compared on real GPU landscapes many times over at no device
// cost. What replay approximates, and what it cannot: docs/evaluation-plane.md ("Replay").
//
// - The search space is the recorded points: replay_problem() narrows each template's space to them.
// - A candidate is found by its content (source and launch plan), so a template edited since the
//   recording is not found (stage::infrastructure, "not recorded"); a problem whose shapes, reference
//   or templates changed is refused when the evaluator is made (problem_digest).
// - Timed samples are drawn with replacement from the recorded ones, by a generator seeded from the
//   measurement's seed: two searches with different seeds see different noise, the same seed the same.
// - Interleaved A/B at a rung is rebuilt by pairing draws of the candidate's and the incumbent's
//   recorded samples, sample by sample.
// - Device seconds are the recorded costs, scaled to the rung: per shape, correctness trials times the
//   recorded cost of one, plus warm-up and samples times the recorded mean time per run; and the tools
//   the recording ran without (replay_options): the sanitizer once per family at its first assured rung
//   (evaluator::assure), an ncu run for a profiling rung's fastest measurement so far, as the CUDA backend runs them.
// Bodies: impl/replay.ipp.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/option_table.hpp"
#include "kernelbrain/io/recording.hpp"

namespace kernelbrain {

/// `p` with each template's space narrowed to the points `r` holds (parameter_space::points). Hints
/// without a recorded point lose their template. Throws kernelbrain::error when `r` was recorded from
/// another problem or another version of it (problem_digest).
[[nodiscard]] KERNELBRAIN_DECL problem replay_problem(problem p, recording const& r);

/// The device seconds of what the CUDA backend does in a search and a recording leaves out (it is made
/// with the sanitizer and the profiler off): charged where the CUDA backend would run them, so that a
/// replayed search spends as a real one does. The defaults are what an H100 measured in searches with
/// the default (docs/evaluation-plane.md, "Replay"; issue 28).
struct replay_options {
  double sanitizer_seconds = 1.3;  ///< compute-sanitizer, once per template family (its first point at an assured rung)
  double profile_seconds = 2.3;    ///< one ncu run, where the CUDA backend would make one (cuda_options::profile_share)
  double profile_share = 0.1;      ///< as cuda_options::profile_share
  bool profile_all = false;  ///< as cuda_options::profile_all: an ncu run for every measurement at a profiling rung

  /// The keys of $KERNELBRAIN_REPLAY_TOOLS ("sanitizer=1.3,profile=2.3,share=0.1,all=false").
  [[nodiscard]] static option_table<replay_options> describe() {
    using o = replay_options;
    return option_table<o>{}
        .add("sanitizer", &o::sanitizer_seconds, 0.0, "device seconds of compute-sanitizer, once per template family")
        .add("profile", &o::profile_seconds, 0.0, "device seconds of one ncu run")
        .add("share", &o::profile_share, 0.0, "the most of the device seconds that ncu runs may take (at most 1)")
        .add("all", &o::profile_all, "an ncu run for every measurement at a profiling rung");
  }
};

/// replay_options from "sanitizer=1.3,profile=2.3,share=0.1,all=false" (replay_options::describe()'s keys,
/// any of them, in any order; the others keep their defaults): what $KERNELBRAIN_REPLAY_TOOLS sets for
/// the built-in replay backend. Throws kernelbrain::error for an unknown key or a value out of range.
[[nodiscard]] KERNELBRAIN_DECL replay_options parse_replay_options(std::string const& spec);

class replay_evaluator final : public evaluator {
 public:
  /// `p`: the problem as replay_problem() returned it. Throws kernelbrain::error as replay_problem does.
  KERNELBRAIN_DECL replay_evaluator(recording const& r, problem const& p, replay_options o = {});
  KERNELBRAIN_DECL ~replay_evaluator() override;
  replay_evaluator(replay_evaluator const&) = delete;
  replay_evaluator& operator=(replay_evaluator const&) = delete;

  /// "replay/" and the recording's fingerprint.
  [[nodiscard]] KERNELBRAIN_DECL std::string fingerprint() const override;
  [[nodiscard]] KERNELBRAIN_DECL verdict inspect(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict build(candidate const& c) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                                               std::uint64_t seed) override;
  [[nodiscard]] KERNELBRAIN_DECL verdict assure(candidate const& c, std::uint64_t seed) override;
  [[nodiscard]] KERNELBRAIN_DECL measurement measure(candidate const& c, rung const& r,
                                                     measure_request const& req) override;
  [[nodiscard]] KERNELBRAIN_DECL baseline measure_baseline(problem const& p) override;
  [[nodiscard]] KERNELBRAIN_DECL double take_device_seconds() override;

  /// The candidate's recorded quality: the weighted geometric-mean speedup over the reference of the
  /// medians of its recorded samples at every timed shape (what the top rung estimates, without
  /// noise). nullopt when it is not recorded or was refused anywhere.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<double> true_speedup(candidate const& c) const;
  /// The best true_speedup of any recorded point.
  [[nodiscard]] KERNELBRAIN_DECL double best_true_speedup() const;
  /// Compile seconds the candidates built so far would have cost (the recorded NVRTC times, each once).
  [[nodiscard]] KERNELBRAIN_DECL double compile_seconds() const;

 private:
  struct state;
  std::unique_ptr<state> s_;
};

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/replay/impl/evaluator.ipp"
#endif
