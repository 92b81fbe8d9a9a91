// The synthetic backend: a cost landscape over catalogue parameter spaces with noise, outliers,
// non-monotonic regions, performance cliffs, compile failures, crashes, wrong-at-odd-sizes
// candidates and a known optimum. Deterministic by seed; costs no device time (it is simulated).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rng.hpp"

namespace kernelbrain {

struct synthetic_config {
  std::uint64_t landscape_seed = 7;
  double noise = 0.03;         ///< lognormal sigma per timed sample
  double outlier_rate = 0.01;  ///< chance that a sample is 1.5-3x slower
  double compile_failure_rate = 0.04;
  double crash_rate = 0.02;
  double odd_size_bug_rate = 0.03;  ///< wrong only at the "odd" shape
  double ruggedness = 0.10;         ///< amplitude of the non-monotonic ripple
  double reference_factor = 2.5;    ///< reference cost relative to a typical candidate
};

/// The landscape: ground truth for the synthetic backend and for ablations (known optimum).
class synthetic_landscape {
 public:
  explicit synthetic_landscape(synthetic_config c = {}) : cfg_(c) {
    build_problem();
    find_optimum();
  }

  [[nodiscard]] problem const& get_problem() const noexcept { return problem_; }
  [[nodiscard]] synthetic_config const& config() const noexcept { return cfg_; }

  /// Noise-free time of candidate (family, params) at a shape, in seconds.
  [[nodiscard]] double true_seconds(std::string const& family, parameters const& p, std::size_t shape) const {
    const auto f = family_index(family);
    auto const& sp = problem_.catalogue[f].templ->space;
    double cost = family_base_[f] * work_[shape];
    for (std::size_t j = 0; j < sp.params.size(); ++j) {
      auto const& d = sp.params[j];
      const double x = position(d, p.at(d.name));
      // Larger shapes prefer later (larger) values: small-shape rungs are an imperfect proxy.
      const double opt = std::clamp(optimum_pos_[f][j] + 0.12 * (static_cast<double>(shape) - 1.5), 0.0, 1.0);
      cost *= 1.0 + curvature_[f][j] * (x - opt) * (x - opt);
    }
    // Non-monotonic ripple: a neighbour can be worse than both of its own neighbours.
    const double u =
        unit(hasher{}.integer(cfg_.landscape_seed).bytes("ripple").bytes(family).bytes(p.to_string()).digest());
    cost *= 1.0 + cfg_.ruggedness * u;
    // Register-pressure cliff.
    std::int64_t pressure = 1;
    for (auto const& d : sp.params)
      if (d.name != "STAGES") pressure *= p.at(d.name);
    if (pressure > cliff_[f]) cost *= 1.6;
    return cost;
  }
  /// Weighted geometric mean of true time over all shapes: what "within 2% of the optimum" compares.
  [[nodiscard]] double quality(std::string const& family, parameters const& p) const {
    double acc = 0, w = 0;
    for (std::size_t s = 0; s < problem_.shapes.size(); ++s) {
      acc += problem_.shapes[s].weight * std::log(true_seconds(family, p, s));
      w += problem_.shapes[s].weight;
    }
    return std::exp(acc / w);
  }
  /// How the candidate fails, if it does (deterministic per content).
  [[nodiscard]] std::optional<stage> failure(std::string const& family, parameters const& p) const {
    const auto h = [&](char const* what) {
      return unit(hasher{}.integer(cfg_.landscape_seed).bytes(what).bytes(family).bytes(p.to_string()).digest());
    };
    if (h("compile") < cfg_.compile_failure_rate) return stage::compile;
    if (p.find("BLOCK").value_or(0) >= 1024 && p.find("STAGES").value_or(0) >= 4) return stage::resources;
    if (h("crash") < cfg_.crash_rate) return stage::crash;
    if (h("odd") < cfg_.odd_size_bug_rate) return stage::correctness;
    return std::nullopt;
  }
  [[nodiscard]] double optimum_quality() const noexcept { return optimum_; }
  [[nodiscard]] std::size_t valid_points() const noexcept { return valid_points_; }
  [[nodiscard]] std::size_t odd_shape() const noexcept { return 1; }
  [[nodiscard]] double reference_seconds(std::size_t shape) const { return reference_[shape]; }

 private:
  static double unit(std::uint64_t h) noexcept { return static_cast<double>(h >> 11) * 0x1.0p-53; }
  static double position(parameter_def const& d, std::int64_t v) {
    for (std::size_t i = 0; i < d.values.size(); ++i)
      if (d.values[i] == v)
        return d.values.size() > 1 ? static_cast<double>(i) / static_cast<double>(d.values.size() - 1) : 0.0;
    return 0.0;
  }
  std::size_t family_index(std::string const& family) const {
    for (std::size_t i = 0; i < problem_.catalogue.size(); ++i)
      if (problem_.catalogue[i].name == family) return i;
    throw error("synthetic backend: unknown family '" + family + "'");
  }

  void build_problem() {
    rng r(derive_seed(cfg_.landscape_seed, "landscape"));
    problem_.name = "synthetic";
    problem_.signature = "void kernel(float const* x, float* y, int n)";
    // smoke / odd / medium / large: work grows ~10x per tier.
    const char* names[] = {"small", "odd", "medium", "large"};
    const char* tiers[] = {"smoke", "odd", "medium", "large"};
    const double works[] = {2e-5, 5e-5, 4e-4, 4e-3};
    for (int i = 0; i < 4; ++i) {
      shape s;
      s.name = names[i];
      s.tier = tiers[i];
      s.dims["N"] = static_cast<std::int64_t>(works[i] * 1e9) + (i == 1 ? 7 : 0);
      work_.push_back(works[i]);
      problem_.shapes.push_back(std::move(s));
    }
    const std::vector<parameter_def> common = {{"BLOCK", {32, 64, 128, 256, 512, 1024}},
                                               {"VEC", {1, 2, 4, 8}},
                                               {"UNROLL", {1, 2, 4, 8}},
                                               {"STAGES", {1, 2, 3, 4}}};
    struct fam {
      const char* name;
      const char* prose;
      double base;
      bool split;
    };
    const fam fams[] = {
        {"block-per-row", "one block per row, shared-memory tree reduction", 1.00, false},
        {"warp-per-row", "one warp per row, shuffle reduction, no shared memory", 0.85, false},
        {"split-row", "split each row across blocks, second pass combines partials", 0.92, true},
    };
    for (auto const& f : fams) {
      expert_hint h;
      h.name = f.name;
      h.prose = f.prose;
      kernel_template t;
      t.space.params = common;
      if (f.split) t.space.params.push_back({"SPLIT", {1, 2, 4, 8}});
      t.space.constraints = {"BLOCK * UNROLL <= 4096"};
      h.templ = std::move(t);
      problem_.catalogue.push_back(std::move(h));
      family_base_.push_back(f.base);
      auto const& sp = problem_.catalogue.back().templ->space;
      std::vector<double> opt, curv;
      for (std::size_t j = 0; j < sp.params.size(); ++j) {
        opt.push_back(0.2 + 0.6 * r.uniform());
        curv.push_back(0.6 + 1.8 * r.uniform());
      }
      optimum_pos_.push_back(std::move(opt));
      curvature_.push_back(std::move(curv));
      cliff_.push_back(f.split ? 8192 : 16384);
    }
  }

  void find_optimum() {
    optimum_ = std::numeric_limits<double>::infinity();
    std::vector<double> best_per_shape(problem_.shapes.size(), std::numeric_limits<double>::infinity());
    for (auto const& h : problem_.catalogue)
      for (auto const& p : h.templ->space.enumerate()) {
        if (failure(h.name, p)) continue;
        ++valid_points_;
        optimum_ = std::min(optimum_, quality(h.name, p));
        for (std::size_t s = 0; s < best_per_shape.size(); ++s)
          best_per_shape[s] = std::min(best_per_shape[s], true_seconds(h.name, p, s));
      }
    // A roofline floor safely under every valid point, and a reference well above the typical one.
    problem_.machine.bytes_per_second = 1e12;
    for (std::size_t s = 0; s < problem_.shapes.size(); ++s) {
      problem_.shapes[s].bytes = 0.6 * best_per_shape[s] * problem_.machine.bytes_per_second;
      reference_.push_back(cfg_.reference_factor * best_per_shape[s] * 1.6);
    }
  }

  synthetic_config cfg_;
  problem problem_;
  std::vector<double> work_, family_base_, reference_;
  std::vector<std::int64_t> cliff_;
  std::vector<std::vector<double>> optimum_pos_, curvature_;
  double optimum_ = 0;
  std::size_t valid_points_ = 0;
};

/// Evaluates candidates against a synthetic_landscape. Simulated device time is what the budget sees.
class synthetic_evaluator final : public evaluator {
 public:
  explicit synthetic_evaluator(synthetic_landscape const& l) : land_(&l) {}

  [[nodiscard]] std::string fingerprint() const override {
    auto const& c = land_->config();
    return "synthetic/v1/landscape=" + std::to_string(c.landscape_seed) + "/noise=" + std::to_string(c.noise);
  }
  [[nodiscard]] verdict build(candidate const& c) override {
    if (auto f = land_->failure(c.family, c.params); f == stage::compile || f == stage::resources)
      return verdict::reject(
          *f, *f == stage::compile ? "synthetic compile error" : "synthetic: shared memory over the limit");
    return verdict::pass();
  }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t) override {
    if (auto v = build(c); !v) return v;
    const auto f = land_->failure(c.family, c.params);
    for (auto s : shapes) {
      spent_ += trials * 2 * (land_->true_seconds(c.family, c.params, s) + launch_overhead);
      if (f == stage::crash) return verdict::reject(stage::crash, "synthetic crash (illegal address)");
      if (f == stage::correctness && s == land_->odd_shape())
        return verdict::reject(stage::correctness, "synthetic: wrong at odd size");
    }
    return verdict::pass();
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    measurement m;
    // Correctness is checked at every timed shape the candidate has not passed trials at (req.checked).
    std::vector<std::size_t> unchecked;
    for (auto s : r.shapes)
      if (req.needs_check(s)) unchecked.push_back(s);
    if (auto v = check(c, unchecked, std::max(1, r.correctness_trials), req.seed); !v) {
      m.result = v;
      return m;
    }
    rng noise(req.seed);
    for (auto s : r.shapes) {
      const double t = land_->true_seconds(c.family, c.params, s);
      shape_timing st;
      st.shape = s;
      for (int i = 0; i < r.samples; ++i) st.samples.push_back(t * sample_factor(noise));
      st.summarise();
      spent_ += (r.warmup + r.samples) * (t + launch_overhead);
      m.timings.push_back(std::move(st));
    }
    if (r.interleaved && req.incumbent) {
      std::vector<double> ratios;
      for (int i = 0; i < r.samples; ++i) {
        double a = 0, b = 0;
        for (auto s : r.shapes) {
          a += land_->true_seconds(c.family, c.params, s) * sample_factor(noise);
          b += land_->true_seconds(req.incumbent->family, req.incumbent->params, s) * sample_factor(noise);
          spent_ += land_->true_seconds(req.incumbent->family, req.incumbent->params, s) + launch_overhead;
        }
        ratios.push_back(a / b);
      }
      m.vs_incumbent = ab_comparison{req.incumbent->id.str(), median_with_ci(ratios)};
    }
    m.res = resources{static_cast<int>(16 + 4 * c.params.find("UNROLL").value_or(1) * c.params.find("VEC").value_or(1)),
                      0, 0, 0.5};
    return m;
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override {
    baseline b;
    for (std::size_t s = 0; s < p.shapes.size(); ++s) b.seconds.push_back(land_->reference_seconds(s));
    return b;
  }
  [[nodiscard]] double take_device_seconds() override { return std::exchange(spent_, 0.0); }

 private:
  static constexpr double launch_overhead = 5e-6;
  double sample_factor(rng& r) const {
    double f = std::exp(land_->config().noise * r.normal());
    if (r.uniform() < land_->config().outlier_rate) f *= 1.5 + 1.5 * r.uniform();
    return f;
  }
  synthetic_landscape const* land_;
  double spent_ = 0;
};

}  // namespace kernelbrain
