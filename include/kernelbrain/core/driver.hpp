// search(): runs the engine with the evaluation plane on its own thread, so generation (LLM calls:
// seconds) and evaluation (device: milliseconds) overlap. Deterministic by default.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include "kernelbrain/core/engine.hpp"

namespace kernelbrain {

/// In which order finished evaluations are applied to the history.
enum class completion_order {
  issue,    ///< oldest first: the same seed gives the same search, whatever the timing (default)
  arrival,  ///< as they finish: reacts sooner, but timing can change the search
};

struct search_options {
  std::uint64_t seed = 1;
  budget limits;
  std::size_t max_in_flight = 4;  ///< evaluations queued ahead of the one running
  completion_order order = completion_order::issue;
  std::size_t fruitless_generation_limit = 16;
  journal_sink* journal = nullptr;
  std::optional<resume_state> resume;
  std::vector<observer*> observers;
};

/// What a search returns. `best` is a copy of the incumbent's record.
struct search_result {
  std::optional<candidate_record> best;
  std::optional<score> best_score;
  std::size_t best_rung = 0;
  std::string stop_reason;
  bool suspended = false;  ///< stopped by the generator until something outside happens (see search_suspended)
  budget_usage used;
  search_counters counters;
  std::size_t candidates = 0;
  baseline reference;
};

namespace detail {

/// The evaluation plane: one thread, a queue of tasks, and finished outcomes by ticket.
template <class Engine>
class evaluation_plane {
 public:
  evaluation_plane(Engine& eng, evaluator& ev) : eng_(eng), ev_(ev), worker_([this] { run(); }) {}
  ~evaluation_plane() {
    // Normally nothing is queued here (search() drains first); after an error, drop what is queued
    // rather than spend device time on results nobody will read.
    {
      std::lock_guard lk(mu_);
      closing_ = true;
      todo_.clear();
    }
    cv_.notify_all();
    worker_.join();
  }
  void submit(evaluation_task t) {
    {
      std::lock_guard lk(mu_);
      todo_.push_back(std::move(t));
    }
    cv_.notify_all();
  }
  void complete(std::uint64_t ticket, evaluation_outcome o) {
    {
      std::lock_guard lk(mu_);
      done_.emplace(ticket, std::move(o));
      finish_order_.push_back(ticket);
    }
    cv_.notify_all();
  }
  /// Blocks until `ticket` is finished and takes it.
  evaluation_outcome take(std::uint64_t ticket) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return done_.contains(ticket); });
    std::erase(finish_order_, ticket);
    auto node = done_.extract(ticket);
    return std::move(node.mapped());
  }
  /// Blocks until any ticket is finished and takes it.
  std::pair<std::uint64_t, evaluation_outcome> take_any() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return !finish_order_.empty(); });
    const std::uint64_t ticket = finish_order_.front();  // the one that finished first
    finish_order_.pop_front();
    auto node = done_.extract(ticket);
    return {ticket, std::move(node.mapped())};
  }

 private:
  void run() {
    for (;;) {
      evaluation_task t;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return closing_ || !todo_.empty(); });
        if (todo_.empty()) return;
        t = std::move(todo_.front());
        todo_.pop_front();
      }
      auto o = eng_.execute(t, ev_);
      complete(t.ticket, std::move(o));
    }
  }
  Engine& eng_;
  evaluator& ev_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<evaluation_task> todo_;
  std::unordered_map<std::uint64_t, evaluation_outcome> done_;
  std::deque<std::uint64_t> finish_order_;  ///< tickets in done_, in the order they finished
  bool closing_ = false;
  std::thread worker_;  // last: started after everything it uses exists
};

}  // namespace detail

/// Runs a search to its end. The evaluator measures the baseline first (unless resuming with one).
template <policy_set Policies>
search_result search(problem const& prob, Policies pol, evaluator& ev, search_options const& opt = {}) {
  engine<Policies> eng(prob, std::move(pol), engine_options{opt.seed, opt.limits, opt.fruitless_generation_limit});
  if (opt.resume && opt.resume->reference) {
    eng.set_baseline(*opt.resume->reference);
  } else {
    eng.set_baseline(ev.measure_baseline(eng.problem()));
    (void)ev.take_device_seconds();  // the baseline is not charged to the search
    if (opt.journal) opt.journal->write_baseline(eng.view().baseline());
  }
  if (opt.resume) eng.resume_from(*opt.resume);
  eng.set_journal(opt.journal);
  for (auto* o : opt.observers) eng.add_observer(o);

  {
    detail::evaluation_plane<engine<Policies>> plane(eng, ev);
    std::deque<std::uint64_t> pending;  // tickets in issue order
    const std::size_t depth = opt.max_in_flight > 0 ? opt.max_in_flight : 1;
    auto apply_one = [&] {
      if (opt.order == completion_order::issue) {
        eng.tell(plane.take(pending.front()));
        pending.pop_front();
      } else {
        auto [ticket, o] = plane.take_any();
        std::erase(pending, ticket);
        eng.tell(o);
      }
    };
    for (;;) {
      step s = eng.ask();
      // New proposals: let the backend start their compiles now, in parallel (a hint; may be a no-op).
      eng.take_proposed([&](candidate const& c) { ev.prefetch(c); });
      if (auto* t = std::get_if<evaluation_task>(&s)) {
        pending.push_back(t->ticket);
        if (auto hit = eng.cached(*t))
          plane.complete(t->ticket, std::move(*hit));
        else
          plane.submit(std::move(*t));
        if (pending.size() >= depth) apply_one();
      } else if (std::holds_alternative<waiting>(s)) {
        apply_one();
      } else {
        while (!pending.empty()) apply_one();  // already paid for: keep them
        break;
      }
    }
  }

  search_result r;
  const auto v = eng.view();
  if (auto const* b = v.best()) {
    r.best = *b;
    r.best_score = v.best_score();
    r.best_rung = v.best_rung();
  }
  r.stop_reason = eng.stop_reason();
  r.suspended = eng.suspended();
  r.used = eng.meter().usage();
  r.counters = v.counters();
  r.candidates = v.size();
  r.reference = v.baseline();
  return r;
}

/// Anything that is not a composition of the five policies: one readable message at the call.
template <class Policies>
requires(!policy_set<Policies>) search_result search(problem const&, Policies, evaluator&, search_options const& = {}) {
  static_assert(policy_set<Policies>,
                "kernelbrain::search needs a composition of the five policies: kernelbrain::policies<Generator, "
                "Gate, Ladder, Scorer, Scheduler>, e.g. kernelbrain::default_policies(problem).with_generator(...); "
                "each member must model its concept (the policies<...> type names the one that does not)");
  return {};
}

}  // namespace kernelbrain
