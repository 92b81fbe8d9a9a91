// The read-only history every policy sees: candidates, their results per rung, the incumbent, the meter.
#pragma once
#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/score.hpp"

namespace kernelbrain {

enum class candidate_state {
  fresh,      ///< proposed, never sent to evaluation
  in_flight,  ///< an evaluation is running
  measured,   ///< at least one passing measurement, none running
  rejected,   ///< the gate or a measurement refused it; it is out of the search
};

/// One candidate and everything learned about it.
struct candidate_record {
  candidate cand;
  std::size_t index = 0;  ///< position in the history
  candidate_state state = candidate_state::fresh;
  int top_rung = -1;                                ///< highest rung with a passing measurement
  std::vector<std::optional<score>> scores;         ///< per rung
  std::vector<std::optional<measurement>> results;  ///< per rung, passing or not
  verdict last;                                     ///< the last verdict (why it was rejected, if it was)
};

/// Counters a progress line or a scheduler may want.
struct search_counters {
  std::size_t evaluations = 0;  ///< finished evaluations, cached ones included
  std::size_t rejected = 0;     ///< candidates rejected
  std::size_t promotions = 0;   ///< evaluations at a rung above the candidate's previous best
  std::size_t duplicates = 0;   ///< proposals dropped as already known
  std::size_t generation_failures = 0;
  std::size_t cache_hits = 0;  ///< evaluations answered from the journal
};

class search_view;

namespace detail {

/// The history itself. Owned by the engine, which alone changes it; policies get a search_view over
/// it (tests build one directly to hand a policy a prepared view).
class search_history {
 public:
  search_history(problem const& p, std::span<rung const> rungs, baseline const& b, budget_meter const& m)
      : problem_(&p), rungs_(rungs), baseline_(&b), meter_(&m) {}

  /// Adds a candidate; returns nullopt if its id is already known.
  std::optional<std::size_t> add(candidate c) {
    if (index_.contains(c.id)) return std::nullopt;
    const std::size_t i = records_.size();
    index_.emplace(c.id, i);
    candidate_record r;
    r.cand = std::move(c);
    r.index = i;
    r.scores.resize(rungs_.size());
    r.results.resize(rungs_.size());
    records_.push_back(std::move(r));
    fresh_.push_back(i);
    return i;
  }
  candidate_record& at(std::size_t i) { return records_[i]; }
  [[nodiscard]] candidate_record const& at(std::size_t i) const { return records_[i]; }
  [[nodiscard]] std::optional<std::size_t> find(candidate_id id) const {
    auto it = index_.find(id);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  /// Marks a fresh candidate as sent to evaluation.
  void take_fresh(std::size_t i) {
    if (!fresh_.empty() && fresh_.front() == i) {
      fresh_.pop_front();
      return;
    }
    for (auto it = fresh_.begin(); it != fresh_.end(); ++it)
      if (*it == i) {
        fresh_.erase(it);
        return;
      }
  }
  /// Offers a scored passing measurement as the incumbent; returns true if it became one.
  /// Higher rungs beat lower ones (stronger evidence); within a rung, the higher score wins.
  bool offer_best(std::size_t i, std::size_t rung, score s) {
    if (best_ && (rung < best_rung_ || (rung == best_rung_ && s.value <= best_score_.value))) return false;
    best_ = i;
    best_rung_ = rung;
    best_score_ = s;
    return true;
  }
  /// Re-derives the incumbent when the current one was demoted (rejected at a higher rung).
  void forget_best_if(std::size_t i) {
    if (!best_ || *best_ != i) return;
    best_.reset();
    for (auto const& r : records_) {
      if (r.state == candidate_state::rejected || r.top_rung < 0) continue;
      const auto tr = static_cast<std::size_t>(r.top_rung);
      (void)offer_best(r.index, tr, *r.scores[tr]);
    }
  }

  [[nodiscard]] search_counters& counters() noexcept { return counters_; }
  [[nodiscard]] search_counters const& counters() const noexcept { return counters_; }
  /// Evaluations handed out and not yet told: the engine counts them as it dispatches and receives.
  void evaluation_started() noexcept { ++in_flight_; }
  void evaluation_finished() noexcept { --in_flight_; }
  [[nodiscard]] std::size_t in_flight_evaluations() const noexcept { return in_flight_; }

 private:
  friend class kernelbrain::search_view;
  search_counters counters_;
  std::size_t in_flight_ = 0;
  problem const* problem_;
  std::span<rung const> rungs_;
  baseline const* baseline_;
  budget_meter const* meter_;
  std::vector<candidate_record> records_;
  std::unordered_map<candidate_id, std::size_t> index_;
  std::deque<std::size_t> fresh_;
  std::optional<std::size_t> best_;
  std::size_t best_rung_ = 0;
  score best_score_;
};

}  // namespace detail

/// Read-only view handed to policies. Cheap to copy; valid while the search runs.
class search_view {
 public:
  explicit search_view(detail::search_history const& h) noexcept : h_(&h) {}

  [[nodiscard]] kernelbrain::problem const& problem() const noexcept { return *h_->problem_; }
  [[nodiscard]] std::span<rung const> rungs() const noexcept { return h_->rungs_; }
  [[nodiscard]] kernelbrain::baseline const& baseline() const noexcept { return *h_->baseline_; }
  [[nodiscard]] budget_meter const& meter() const noexcept { return *h_->meter_; }
  [[nodiscard]] search_counters const& counters() const noexcept { return h_->counters_; }

  [[nodiscard]] std::size_t size() const noexcept { return h_->records_.size(); }
  [[nodiscard]] candidate_record const& operator[](std::size_t i) const { return h_->records_[i]; }
  [[nodiscard]] candidate_record const* find(candidate_id id) const {
    auto i = h_->find(id);
    return i ? &h_->records_[*i] : nullptr;
  }
  [[nodiscard]] bool contains(candidate_id id) const { return h_->index_.contains(id); }
  /// Candidates proposed but never evaluated, oldest first.
  [[nodiscard]] std::deque<std::size_t> const& fresh() const noexcept { return h_->fresh_; }
  [[nodiscard]] std::size_t in_flight_evaluations() const noexcept { return h_->in_flight_; }
  /// The incumbent: best score at the highest rung anyone has passed.
  [[nodiscard]] candidate_record const* best() const noexcept {
    return h_->best_ ? &h_->records_[*h_->best_] : nullptr;
  }
  [[nodiscard]] std::size_t best_rung() const noexcept { return h_->best_rung_; }
  [[nodiscard]] std::optional<score> best_score() const noexcept {
    return h_->best_ ? std::optional<score>(h_->best_score_) : std::nullopt;
  }

 private:
  detail::search_history const* h_;
};

}  // namespace kernelbrain
