// The default scheduler: asynchronous successive halving over the ladder (ASHA): a candidate in the top
// 1/eta of its rung is promoted as soon as that is known. (promotion=balanced: by spend instead, the best
// candidate of a rung not yet measured at the next promoted whenever the rung below has spent at least
// what the next has plus one of its measurements, so that nothing is dropped for good; measured against
// ASHA on the recordings in docs/design-notes.md, and slower there once the ladder was lean.) A promotion
// to a rung above the first also asks the generator to mutate the promoted candidate (coarse-to-fine): at
// once, or, for a rung that profiles, when that measurement is in, so that the diagnosis steers the moves
// and the prompts. Exploration gives way to refinement as the budget is spent. Under a device-second
// budget the promotion rate follows the ladder's cost ratio (eta_max), and the first promotion is not kept
// waiting behind first-rung measurements it does not need. Once the generator has run dry,
// the best candidate not yet promoted goes up, one at a time, so that nothing is dropped for good. Stops
// on stagnation or on reaching a fraction of the roofline.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/statistics.hpp"
#include "kernelbrain/detail/ranked_set.hpp"

namespace kernelbrain {

struct coarse_to_fine_options {
  std::size_t eta = 3;               ///< keep the top 1/eta of each rung
  std::size_t explore_batch = 8;     ///< candidates per explore request
  std::size_t mutate_batch = 2;      ///< children per promoted parent
  double final_explore_share = 0.1;  ///< share of generations that still explore at the end of the budget
  std::size_t stagnation_limit = 0;  ///< stop after this many evaluations without a new best (0 = never)
  double roofline_target = 0;        ///< stop when the incumbent reaches this fraction of the floor (0 = never)
  std::string promotion = "asha";    ///< "asha" (top 1/eta as soon as known) or "balanced" (by spend)
  /// Under a device-second budget, ASHA keeps the top 1/eta' of rung r, where eta' is what one
  /// measurement at rung r+1 costs over one at rung r (the means so far; before rung r+1 has one, rung
  /// r's mean plus the extra runs rung r+1 times, at the baseline's times), rounded and held within [eta,
  /// eta_max]: each rung then spends about what the next does (Hyperband's rule), in the unit the budget
  /// counts. Until the first promotion out of rung 0, no more rung-0 measurements are started than it
  /// needs. Under other budgets every evaluation counts one, and eta holds. 0: eta always. (8: chosen
  /// leave-one-problem-out on the recordings; docs/design-notes.md, "The promotion rate".)
  std::size_t eta_max = 8;

  /// The options "default" and its ablations take ("default:eta=4,explore_batch=16").
  [[nodiscard]] static option_table<coarse_to_fine_options> describe() {
    using o = coarse_to_fine_options;
    return option_table<o>{}
        .add("eta", &o::eta, 2, "keep the top 1/eta of each rung")
        .add("explore_batch", &o::explore_batch, 1, "candidates per explore request")
        .add("mutate_batch", &o::mutate_batch, 1, "children per promoted parent")
        .add("final_explore_share", &o::final_explore_share,
             "share of generations that still explore at the end of the budget")
        .add("stagnation_limit", &o::stagnation_limit,
             "stop after this many evaluations without a new best (0 = never)")
        .add("roofline_target", &o::roofline_target,
             "stop when the incumbent reaches this fraction of the roofline floor (0 = never)")
        .add("eta_max", &o::eta_max,
             "0: eta fixed; else under a device-second budget eta per rung is the next rung's cost over this "
             "one's, within [eta, eta_max]")
        .add("promotion", &o::promotion,
             "asha (top 1/eta of each rung, as soon as known) or balanced (when the rung below has spent as much as "
             "the next)");
  }
};

class coarse_to_fine_scheduler {
 public:
  explicit coarse_to_fine_scheduler(coarse_to_fine_options o = {}) : opt_(std::move(o)) {
    if (opt_.eta < 2) opt_.eta = 2;
    if (opt_.promotion != "balanced" && opt_.promotion != "asha")
      throw error("strategy option 'promotion' is '" + opt_.promotion + "', which is not asha or balanced");
    balanced_ = opt_.promotion == "balanced";
  }

  void reseed(std::uint64_t seed) { rng_.reseed(seed); }

  /// The settings in use (eta raised to 2 where less was given).
  [[nodiscard]] coarse_to_fine_options const& options() const noexcept { return opt_; }

  void observe(event const& e) {
    switch (e.kind) {
      case event_kind::measured:
        if (e.rung == 0) ++probes_done_;
        on_measured(e);
        break;
      case event_kind::new_best:
        last_improvement_ = evaluations_;
        break;
      case event_kind::rejected:
        if (e.rung == 0) ++probes_done_;
        ++evaluations_;
        after_profile_.erase(e.id);
        if (balanced_ || opt_.eta_max > 0) to_charge_.emplace_back(e.id, e.rung);
        break;
      case event_kind::proposed:
        dry_generations_ = 0;
        break;
      default:
        break;
    }
  }

  action next(search_view const& v) {
    if (opt_.stagnation_limit && evaluations_ - last_improvement_ >= opt_.stagnation_limit && v.best())
      return stop("no improvement in " + std::to_string(opt_.stagnation_limit) + " evaluations");
    if (opt_.roofline_target > 0 && v.best() && v.best_rung() + 1 == v.rungs().size() &&
        roofline_fraction(v) >= opt_.roofline_target)
      return stop("incumbent reached " + std::to_string(opt_.roofline_target) + " of the roofline");
    if (balanced_ || opt_.eta_max > 0) charge(v);
    if (opt_.eta_max > 0) {
      device_budget_ = v.meter().limit().device_seconds > 0;
      if (!work_) work_ = baseline_work(v);
    }
    if (balanced_) {
      if (auto r = balanced_promotion(v)) {
        auto id = waiting_[*r - 1].begin()->second;
        waiting_[*r - 1].erase(waiting_[*r - 1].begin());
        promotions_.emplace_front(candidate_id{id}, *r);
      }
    }
    if (promotions_.empty() && mutations_.empty() && v.fresh().empty() && dry_generations_ >= 2) promote_next(v);
    while (!promotions_.empty()) {
      auto [id, r] = promotions_.front();
      promotions_.pop_front();
      auto const* rec = v.find(id);
      if (!rec || rec->state != candidate_state::measured) continue;
      if (r >= v.rungs().size()) {
        // Out of the top rung. Above a lower rung, the candidate was refined when it reached the top; on a
        // ladder of one rung nothing else refines it, so the top 1/eta are refined here (measured and
        // profiled already).
        if (v.rungs().size() == 1) mutations_.push_back(id);
        continue;
      }
      // Every promotion (to rung 1 and up) refines the promoted candidate: at once, or, to a rung that
      // profiles, once that measurement (and its diagnosis) is in, so that the moves can follow it.
      if (v.rungs()[r].profile)
        after_profile_.emplace(id, r);
      else
        mutations_.push_back(id);
      return evaluate(id, r);
    }
    if (hold_for_first_promotion()) return wait();
    if (!mutations_.empty()) {
      auto id = mutations_.front();
      mutations_.pop_front();
      return generate(generation_mode::mutate, opt_.mutate_batch, {id});
    }
    if (!v.fresh().empty()) {
      // A model's kernel first (its tokens are spent; template points are cheap), else the oldest.
      for (auto i : v.fresh())
        if (v[i].cand.origin.starts_with("llm")) return probe(v[i].cand.id);
      return probe(v[v.fresh().front()].cand.id);
    }
    // Nothing queued: explore while the budget is young, refine the incumbent as it is spent.
    const double spent = v.meter().progress();  // not the wall clock: decisions must replay
    const double explore_share = 1.0 - (1.0 - opt_.final_explore_share) * std::min(1.0, spent);
    ++dry_generations_;
    if (!v.best() || generations_++ < 1 || rng_.uniform() < explore_share)
      return generate(generation_mode::explore, opt_.explore_batch);
    return generate(generation_mode::mutate, opt_.mutate_batch, {v.best()->cand.id});
  }

 private:
  /// Adds the device seconds of the evaluations told since the last call to their rungs' spend.
  void charge(search_view const& v) {
    if (spend_.size() < v.rungs().size()) {
      spend_.resize(v.rungs().size());
      count_.resize(v.rungs().size());
      waiting_.resize(v.rungs().size());
    }
    for (auto [id, r] : to_charge_) {
      auto const* rec = v.find(id);
      if (!rec || r >= rec->results.size() || !rec->results[r]) continue;
      spend_[r] += rec->results[r]->device_seconds;
      ++count_[r];
    }
    to_charge_.clear();
  }
  /// Device seconds one measurement at rung `r` is expected to cost: the mean of those made there (0
  /// before the first: the first promotion waits only for the candidates proposed so far to be probed).
  [[nodiscard]] double expected_cost(std::size_t r) const {
    return count_[r] > 0 ? spend_[r] / static_cast<double>(count_[r]) : 0.0;
  }
  /// The rung to promote into now (the highest that may), if any: one with a candidate waiting below it
  /// whose rung below has spent at least what it has plus one of its measurements, or any with a
  /// candidate waiting once nothing new can be probed.
  [[nodiscard]] std::optional<std::size_t> balanced_promotion(search_view const& v) const {
    const bool starved = v.fresh().empty() && dry_generations_ >= 2;
    for (std::size_t r = v.rungs().size(); r-- > 1;) {
      if (waiting_[r - 1].empty()) continue;
      if (starved || (spend_[r - 1] >= spend_[r] + expected_cost(r) && (count_[r] > 0 || v.fresh().empty()))) return r;
    }
    return std::nullopt;
  }

  void on_measured(event const& e) {
    ++evaluations_;
    if (balanced_ || opt_.eta_max > 0) to_charge_.emplace_back(e.id, e.rung);
    if (auto it = after_profile_.find(e.id); it != after_profile_.end() && it->second == e.rung) {
      after_profile_.erase(it);
      mutations_.push_back(e.id);
    }
    if (!e.value) return;
    const std::size_t r = e.rung;
    if (balanced_) {
      if (waiting_.size() <= r + 1) waiting_.resize(r + 2);
      if (r > 0) waiting_[r - 1].erase({waiting_score_[e.id.value], e.id.value});
      waiting_score_[e.id.value] = e.value->value;
      waiting_[r].emplace(e.value->value, e.id.value);
      return;
    }
    if (ranks_.size() <= r) {
      ranks_.resize(r + 1);
      promoted_.resize(r + 1);
    }
    auto& set = ranks_[r];
    set.insert({e.value->value, e.id.value});
    // The promotable top: all of it goes up (promote() skips who went already), since eta may have changed.
    const std::size_t k = set.size() / eta_at(r);
    for (std::size_t i = 0; i < k; ++i) promote(candidate_id{set.at(i).second}, r);
  }
  action probe(candidate_id id) {
    ++probes_started_;
    return evaluate(id, 0);
  }
  /// ASHA under a device-second budget, until the first promotion out of the first rung: start no more
  /// first-rung measurements than that promotion needs (eta' results; eta before the first result says
  /// what one costs). What is in flight beyond them would be charged before the first top-rung answer. (On
  /// one device this should cost little wall time: the next candidates compile meanwhile, and one device
  /// times one measurement at a time; not measured.) Balanced promotion keeps no such first promotion.
  [[nodiscard]] bool hold_for_first_promotion() const {
    if (balanced_ || !device_budget_ || opt_.eta_max == 0 || count_.size() < 2) return false;
    if (!promoted_.empty() && !promoted_[0].empty()) return false;
    const std::size_t in_flight = probes_started_ > probes_done_ ? probes_started_ - probes_done_ : 0;
    if (in_flight == 0) return false;
    const std::size_t have = ranks_.empty() ? 0 : ranks_[0].size();
    return have + in_flight >= eta_at(0);  // eta until a first-rung result says what one costs
  }
  /// The promotion rate out of rung r: eta, or with eta_max, the cost ratio of rung r+1 to rung r: the mean
  /// costs so far, or before rung r+1 has a measurement, rung r's mean cost plus the extra runs rung r+1
  /// would time for the baseline (what surrounds a measurement, the gate's checks and the launches, is most
  /// of a cheap rung's cost, and the rung above pays it too). eta before rung r has a measurement.
  [[nodiscard]] std::size_t eta_at(std::size_t r) const {
    if (opt_.eta_max == 0 || !device_budget_ || r + 1 >= count_.size() || count_[r] == 0 || !work_) return opt_.eta;
    const double here = std::max(expected_cost(r), 1e-12);
    const double next = count_[r + 1] > 0 ? expected_cost(r + 1) : here + std::max(0.0, (*work_)[r + 1] - (*work_)[r]);
    return std::clamp<std::size_t>(static_cast<std::size_t>(std::lround(next / here)), opt_.eta,
                                   std::max(opt_.eta, opt_.eta_max));
  }
  /// The generator has run dry and nothing is queued: nothing is dropped for good, so the best candidate
  /// not yet sent up from the highest rung that has one goes up now (ASHA's top 1/eta widened one at a time).
  void promote_next(search_view const& v) {
    for (std::size_t r = std::min(ranks_.size(), v.rungs().size() - 1); r-- > 0;)
      for (std::size_t i = 0; i < ranks_[r].size(); ++i) {
        const candidate_id id{ranks_[r].at(i).second};
        auto const* rec = v.find(id);
        if (promoted_[r].contains(id) || !rec || rec->state != candidate_state::measured) continue;
        promote(id, r);
        return;
      }
  }
  /// Per rung, the device seconds of its runs for the baseline (every shape's warm-up and samples, and
  /// the correctness trials of the shapes no rung below ran, at the reference's times).
  static std::vector<double> baseline_work(search_view const& v) {
    std::vector<double> out;
    std::unordered_set<std::size_t> seen;
    auto const& b = v.baseline().seconds;
    for (auto const& r : v.rungs()) {
      double c = 0;
      for (auto s : r.shapes) {
        const double t = s < b.size() ? b[s] : 0.0;
        c += (r.warmup + r.samples) * t;
        if (seen.insert(s).second) c += r.correctness_trials * t;
      }
      out.push_back(c);
    }
    return out;
  }
  void promote(candidate_id id, std::size_t from) {
    if (!promoted_[from].insert(id).second) return;
    promotions_.emplace_back(id, from + 1);
  }
  static double roofline_fraction(search_view const& v) {
    auto const* b = v.best();
    auto const& m = b->results[v.best_rung()];
    if (!m) return 0;
    std::vector<double> fr, w;
    for (auto const& t : m->timings) {
      const double floor = v.baseline().floor_seconds.empty() ? 0 : v.baseline().floor_seconds[t.shape];
      if (floor <= 0 || t.stats.median <= 0) return 0;
      fr.push_back(floor / t.stats.median);
      w.push_back(1.0);
    }
    return fr.empty() ? 0 : weighted_geomean(fr, w);
  }

  coarse_to_fine_options opt_;
  rng rng_{0};
  std::vector<detail::ranked_set> ranks_;
  std::vector<std::unordered_set<candidate_id>> promoted_;
  std::deque<std::pair<candidate_id, std::size_t>> promotions_;
  std::deque<candidate_id> mutations_;
  std::unordered_map<candidate_id, std::size_t> after_profile_;  ///< promoted to a profiling rung: refine when measured
  std::size_t evaluations_ = 0, last_improvement_ = 0, generations_ = 0;
  // Balanced promotion: device seconds and evaluations per rung, the evaluations not yet charged, and
  // per rung the candidates measured there and not yet sent higher, best first.
  bool balanced_ = false;
  std::vector<double> spend_;
  std::vector<std::size_t> count_;
  std::vector<std::pair<candidate_id, std::size_t>> to_charge_;
  std::vector<std::set<std::pair<double, std::uint64_t>, std::greater<>>> waiting_;
  std::unordered_map<std::uint64_t, double> waiting_score_;
  std::size_t dry_generations_ = 0;
  std::size_t probes_started_ = 0, probes_done_ = 0;  ///< first-rung measurements started and answered
  bool device_budget_ = false;                        ///< the budget counts device seconds (eta_max applies)
  /// per rung, its runs' device seconds for the baseline (eta_max; computed at the first next())
  std::optional<std::vector<double>> work_;
};

}  // namespace kernelbrain
