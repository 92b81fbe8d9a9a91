// Bodies of kernelbrain/backends/replay/evaluator.hpp. Included by its header (header-only form) or by
// kernelbrain/src.hpp (separate compilation).
#pragma once
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include "kernelbrain/backends/common/profile_rationing.hpp"
#include "kernelbrain/backends/replay/evaluator.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/core/strategy_options.hpp"

namespace kernelbrain {

namespace detail::replay {

inline void check_matches(problem const& p, recording const& r) {
  auto const& h = r.header;
  if (h.problem != p.name) throw error("replay: the recording is of problem '" + h.problem + "', not '" + p.name + "'");
  if (h.problem_digest != problem_digest(p))
    throw error("replay: problem '" + p.name +
                "' changed since it was recorded (its shapes, reference or templates differ): re-record it (" +
                (h.command.empty() ? std::string("kernelbrain record") : h.command) + ")");
  if (h.shape_names.size() != p.shapes.size()) throw error("replay: the recording's shapes are not the problem's");
}

inline double median_of(std::vector<double> xs) {
  if (xs.empty()) return 0;
  return median_with_ci(std::move(xs)).median;
}

}  // namespace detail::replay

KERNELBRAIN_DECL problem replay_problem(problem p, recording const& r) {
  detail::replay::check_matches(p, r);
  for (auto& h : p.catalogue) {
    if (!h.templ) continue;
    std::vector<parameters> pts;
    for (auto const& pt : r.points)
      if (pt.family == h.name) pts.push_back(pt.params);
    if (pts.empty()) {
      h.templ.reset();
      h.diagnosis_moves.clear();
      continue;
    }
    std::sort(pts.begin(), pts.end(),
              [](parameters const& a, parameters const& b) { return a.to_string() < b.to_string(); });
    pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    h.templ->space.points = std::move(pts);
  }
  return p;
}

KERNELBRAIN_DECL replay_options parse_replay_options(std::string const& spec) {
  const auto table = replay_options::describe();
  auto keys = [&] {
    std::string out;
    for (auto const& i : table.info()) out += (out.empty() ? "" : ", ") + i.line();
    return out;
  };
  try {
    const auto given = strategy_options::parse(spec);
    auto o = table.read(given);
    // What the table did not read is no key of it (as strategy_registry refuses an unknown option).
    if (auto unknown = given.unused(); !unknown.empty()) throw error("unknown key '" + unknown.front() + "'");
    if (o.profile_share > 1) throw error("share is " + strategy_options::number_text(o.profile_share) + ", above 1");
    return o;
  } catch (error const& e) {
    throw error("replay tools '" + spec + "': " + e.what() + " (keys: " + keys() + ")");
  }
}

struct replay_evaluator::state {
  recording rec;
  problem prob;
  std::unordered_map<std::uint64_t, std::size_t> by_content;  ///< content_key -> point index
  std::vector<double> reference;                              ///< baseline median per shape
  std::vector<std::optional<double>> truth;                   ///< per point
  double best = 0;
  std::unordered_set<std::size_t> built;
  double spent = 0, compile = 0;
  replay_options opt;
  std::unordered_set<std::string> sanitized;   ///< families charged a compute-sanitizer run (assure)
  std::unordered_set<std::uint64_t> profiled;  ///< points charged an ncu run
  detail::profile_rationing rationing;         ///< which measurements the CUDA backend would profile

  recorded_point const* find(candidate const& c) const {
    auto it = by_content.find(content_key(c));
    return it == by_content.end() ? nullptr : &rec.points[it->second];
  }
  static verdict not_recorded(candidate const& c) {
    return verdict::reject(stage::infrastructure, "replay: candidate " + c.id.str() + " (" + c.family +
                                                      (c.params.empty() ? "" : " " + c.params.to_string()) +
                                                      ") is not in the recording");
  }
  /// Device seconds of one timed run at a shape (warm-up or sample), from the recorded measurement.
  double per_run(recorded_shape const& s) const {
    const double runs = static_cast<double>(rec.header.warmup) + static_cast<double>(s.samples.size());
    double mean = 0;
    for (double x : s.samples) mean += x;
    mean = s.samples.empty() ? 0 : mean / static_cast<double>(s.samples.size());
    const double from_cost = runs > 0 ? (s.measure_seconds - s.check_seconds) / runs : 0;
    return std::max(mean, from_cost);
  }
  /// The recorded outcome at shape `s` for a point: the shape's record, or the verdict that stands for
  /// it (the gate's, when the gate refused the point and no shape was measured).
  std::pair<recorded_shape const*, verdict> at(recorded_point const& p, std::size_t s) const {
    if (auto const* r = p.at_shape(s)) return {r, r->result};
    if (!p.gate) return {nullptr, p.gate};
    // A shape not measured after an earlier shape failed: the point fails there too.
    for (auto const& r : p.shapes)
      if (!r.result) return {nullptr, r.result};
    return {nullptr, verdict::reject(stage::infrastructure, "replay: shape '" + prob.shapes[s].name +
                                                                "' of this point is not in the recording")};
  }
};

KERNELBRAIN_DECL replay_evaluator::replay_evaluator(recording const& r, problem const& p, replay_options o)
    : s_(std::make_unique<state>()) {
  if (!(o.sanitizer_seconds >= 0) || !(o.profile_seconds >= 0) || !(o.profile_share >= 0 && o.profile_share <= 1))
    throw error(
        "replay_options: sanitizer_seconds and profile_seconds must be seconds, 0 or more, and profile_share "
        "a share from 0 to 1");
  s_->opt = o;
  s_->rationing = detail::profile_rationing(o.profile_share, o.profile_seconds);
  // `p` is replay_problem()'s, which checked the digest before it dropped templates without points.
  if (r.header.problem != p.name)
    throw error("replay: the recording is of problem '" + r.header.problem + "', not '" + p.name + "'");
  if (r.header.shape_names.size() != p.shapes.size())
    throw error("replay: the recording's shapes are not those of problem '" + p.name + "'");
  for (std::size_t i = 0; i < p.shapes.size(); ++i)
    if (r.header.shape_names[i] != p.shapes[i].name)
      throw error("replay: shape " + std::to_string(i) + " of problem '" + p.name + "' is '" + p.shapes[i].name +
                  "', the recording's '" + r.header.shape_names[i] + "'");
  auto& s = *s_;
  s.rec = r;
  s.prob = p;
  for (std::size_t i = 0; i < s.rec.points.size(); ++i) s.by_content.emplace(s.rec.points[i].content, i);
  for (auto const& b : s.rec.header.baseline_samples) s.reference.push_back(detail::replay::median_of(b));
  // Each point's quality: the weighted geometric-mean speedup of its sample medians at every timed shape.
  s.truth.resize(s.rec.points.size());
  for (std::size_t i = 0; i < s.rec.points.size(); ++i) {
    auto const& pt = s.rec.points[i];
    if (!pt.gate) continue;
    double acc = 0, w = 0;
    bool ok = true;
    for (std::size_t sh = 0; sh < p.shapes.size() && ok; ++sh) {
      if (!is_timed_shape(p.shapes[sh])) continue;
      auto const* rs = pt.at_shape(sh);
      if (!rs || !rs->result || !(s.reference[sh] > 0)) {
        ok = false;
        break;
      }
      acc += p.shapes[sh].weight * std::log(s.reference[sh] / detail::replay::median_of(rs->samples));
      w += p.shapes[sh].weight;
    }
    if (ok && w > 0) {
      s.truth[i] = std::exp(acc / w);
      s.best = std::max(s.best, *s.truth[i]);
    }
  }
}

KERNELBRAIN_DECL replay_evaluator::~replay_evaluator() = default;

KERNELBRAIN_DECL std::string replay_evaluator::fingerprint() const { return "replay/" + s_->rec.header.fingerprint; }

KERNELBRAIN_DECL verdict replay_evaluator::inspect(candidate const& c) {
  auto const* p = s_->find(c);
  if (!p) return state::not_recorded(c);
  if (p->gate.where == stage::policy) return p->gate;
  return verdict::pass();
}

KERNELBRAIN_DECL verdict replay_evaluator::build(candidate const& c) {
  auto const* p = s_->find(c);
  if (!p) return state::not_recorded(c);
  if (s_->built.insert(static_cast<std::size_t>(p - s_->rec.points.data())).second) s_->compile += p->compile_seconds;
  switch (p->gate.where) {
    case stage::policy:
    case stage::compile:
    case stage::signature:
    case stage::resources:
      return p->gate;
    default:
      return verdict::pass();
  }
}

KERNELBRAIN_DECL verdict replay_evaluator::check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                                                 std::uint64_t) {
  auto& s = *s_;
  auto const* p = s.find(c);
  if (!p) return state::not_recorded(c);
  if (auto v = build(c); !v) return v;
  auto const& gs = s.rec.header.gate_shapes;
  const double gate_trial = s.rec.header.gate_trials > 0 && !gs.empty()
                                ? p->gate_seconds / (s.rec.header.gate_trials * static_cast<double>(gs.size()))
                                : 0;
  for (auto sh : shapes) {
    if (std::find(gs.begin(), gs.end(), sh) != gs.end()) {
      s.spent += gate_trial * trials;
      if (!p->gate) return p->gate;
      continue;
    }
    auto [r, v] = s.at(*p, sh);
    if (r) s.spent += r->check_seconds * trials;
    if (!v) return v;
  }
  return verdict::pass();
}

// The CUDA backend's compute-sanitizer: once per family, on its first point that reaches an assured rung.
KERNELBRAIN_DECL verdict replay_evaluator::assure(candidate const& c, std::uint64_t) {
  auto& s = *s_;
  auto const* p = s.find(c);
  if (!p) return state::not_recorded(c);
  if (auto v = build(c); !v) return v;
  if (s.sanitized.insert(p->family).second) s.spent += s.opt.sanitizer_seconds;
  return verdict::pass();
}

// The cost is reported once, through take_device_seconds(), as the CUDA backend reports its workers'
// replies: m.device_seconds stays 0 (the engine adds the two, so setting both charged it twice; issue 28).
KERNELBRAIN_DECL measurement replay_evaluator::measure(candidate const& c, rung const& r, measure_request const& req) {
  auto& s = *s_;
  measurement m;
  auto const* p = s.find(c);
  if (!p) {
    m.result = state::not_recorded(c);
    return m;
  }
  if (auto v = build(c); !v) {
    m.result = v;
    return m;
  }
  double cost = 0;
  std::vector<recorded_shape const*> recs;
  for (auto sh : r.shapes) {
    auto [rs, v] = s.at(*p, sh);
    if (rs && req.needs_check(sh)) cost += rs->check_seconds * std::max(1, r.correctness_trials);
    if (!v) {
      m.result = v;
      s.spent += cost;
      return m;
    }
    recs.push_back(rs);
  }
  // Fresh noise per measurement: the driver derives req.seed from the search seed and the evaluation.
  rng draw(derive_seed(req.seed, "replay", p->content));
  auto pick = [&draw](recorded_shape const& rs) { return rs.samples[draw.below(rs.samples.size())]; };
  for (auto const* rs : recs) {
    shape_timing t;
    t.shape = rs->shape;
    for (int i = 0; i < r.samples; ++i) t.samples.push_back(pick(*rs));
    t.summarise();
    cost += (r.warmup + r.samples) * s.per_run(*rs);
    m.timings.push_back(std::move(t));
  }
  if (r.interleaved && req.incumbent) {
    auto const* inc = s.find(*req.incumbent);
    std::vector<recorded_shape const*> inc_recs;
    for (auto sh : r.shapes)
      if (inc && inc->at_shape(sh) && inc->at_shape(sh)->result) inc_recs.push_back(inc->at_shape(sh));
    if (inc && inc_recs.size() == recs.size()) {
      std::vector<double> ratios;
      for (int i = 0; i < r.samples; ++i) {
        double a = 0, b = 0;
        for (std::size_t k = 0; k < recs.size(); ++k) {
          a += pick(*recs[k]);
          b += pick(*inc_recs[k]);
          cost += s.per_run(*inc_recs[k]);
        }
        ratios.push_back(a / b);
      }
      m.vs_incumbent = ab_comparison{req.incumbent->id.str(), median_with_ci(ratios)};
    }
  }
  m.res = p->res;
  if (r.profile) {
    m.profile = p->profile;
    m.diagnosis = p->diagnosis;
    // An ncu run where the CUDA backend would make one (at the same shape, by the same rule), once per point.
    const std::size_t sh = detail::profiled_shape(s.prob, r);
    double median = 0;
    for (auto const& t : m.timings)
      if (t.shape == sh) median = t.stats.median;
    if (s.rationing.should_profile(r.name, sh, median, s.spent + cost, s.opt.profile_all) &&
        s.profiled.insert(p->content).second) {
      cost += s.opt.profile_seconds;
      s.rationing.ran(s.opt.profile_seconds);
    }
  }
  s.spent += cost;
  return m;
}

KERNELBRAIN_DECL baseline replay_evaluator::measure_baseline(problem const& p) {
  if (p.shapes.size() != s_->reference.size())
    throw error("replay backend: measure_baseline was given another problem");
  baseline b;
  b.seconds = s_->reference;
  for (double t : s_->reference) s_->spent += 6 * t;  // the CUDA backend's 1 warm-up and 5 samples per shape
  return b;
}

KERNELBRAIN_DECL double replay_evaluator::take_device_seconds() {
  s_->rationing.charged(s_->spent);
  return std::exchange(s_->spent, 0.0);
}

KERNELBRAIN_DECL std::optional<double> replay_evaluator::true_speedup(candidate const& c) const {
  auto it = s_->by_content.find(content_key(c));
  if (it == s_->by_content.end()) return std::nullopt;
  return s_->truth[it->second];
}

KERNELBRAIN_DECL double replay_evaluator::best_true_speedup() const { return s_->best; }

KERNELBRAIN_DECL double replay_evaluator::compile_seconds() const { return s_->compile; }

}  // namespace kernelbrain
