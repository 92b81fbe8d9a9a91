// search(): runs the engine with the evaluation plane on its own thread, so generation (LLM calls:
// seconds) and evaluation (device: milliseconds) overlap. Deterministic by default.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>
#include "kernelbrain/core/engine.hpp"
#include "kernelbrain/core/evaluator_pool.hpp"

namespace kernelbrain {

/// In which order finished evaluations are applied to the history.
enum class completion_order {
  issue,    ///< oldest first: the same seed gives the same search, whatever the timing (default)
  arrival,  ///< as they finish: reacts sooner, but timing can change the search
};

struct search_options {
  std::uint64_t seed = 1;
  budget limits;
  /// Evaluations issued and not yet applied to the history: the search's decisions depend on it (what a
  /// scheduler knows when it picks), never on timing. A pool of N > 1 members uses at least 2N (see
  /// effective_in_flight), so that every member has work.
  std::size_t max_in_flight = 4;
  completion_order order = completion_order::issue;
  std::size_t fruitless_generation_limit = 16;
  journal_sink* journal = nullptr;
  std::optional<resume_state> resume;
  std::vector<observer*> observers;
  /// Told when a pool member is lost and its evaluation re-queued (any thread; must not throw).
  std::function<void(std::string const&)> on_pool_note;
};

/// The in-flight depth a search over `members` evaluators uses: max_in_flight (at least 1) for one
/// evaluator, and at least 2 x members for a pool of several, so that every member has work while the
/// oldest outcome is awaited. The same depth gives the same decisions on 1 or N members (with the
/// default 4: up to 2 members).
[[nodiscard]] inline std::size_t effective_in_flight(search_options const& opt, std::size_t members) {
  const std::size_t asked = std::max<std::size_t>(opt.max_in_flight, 1);
  return members > 1 ? std::max(asked, 2 * members) : asked;
}

/// What a search returns. `best` is a copy of the incumbent's record.
struct search_result {
  std::optional<candidate_record> best;
  std::optional<score> best_score;
  std::size_t best_rung = 0;
  std::string stop_reason;
  bool suspended = false;     ///< stopped by the generator until something outside happens (see search_suspended)
  bool model_failed = false;  ///< ...because the model endpoint failed (model_endpoint_failed): a failure
  budget_usage used;
  search_counters counters;
  std::size_t candidates = 0;
  baseline reference;
};

namespace detail {

/// Members of a pool that name the same device take turns in measure() and measure_baseline(): two
/// worker processes on one GPU overlap their gates and compiles, never their timings.
class device_turns final : public forwarding_evaluator {
 public:
  device_turns(evaluator& inner, std::shared_ptr<std::mutex> turn)
      : forwarding_evaluator(inner), turn_(std::move(turn)) {}
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    const std::lock_guard lk(*turn_);
    return inner().measure(c, r, req);
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override {
    const std::lock_guard lk(*turn_);
    return inner().measure_baseline(p);
  }

 private:
  std::shared_ptr<std::mutex> turn_;
};

/// The pool's members as the evaluation plane uses them: members sharing a device wrapped in
/// device_turns, and the nodes (processes or machines with a compile cache of their own). Each
/// candidate has a home node, from its id: its background compile starts there, and its evaluations
/// go to a member there when one is free, so that a node compiles its share of the candidates, not
/// every one, and finds the cubin in its cache at every rung.
class pool_members {
 public:
  explicit pool_members(evaluator_pool const& pool) {
    if (pool.empty()) throw error("search: the evaluator pool has no members");
    std::map<std::string, std::shared_ptr<std::mutex>> turns;
    std::map<std::string, std::size_t> devices;
    for (auto const& m : pool.members())
      if (!m.device.empty()) ++devices[m.device];
    std::vector<std::string> nodes;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      auto const& m = pool[i];
      if (m.ev == nullptr) throw error("search: pool member " + std::to_string(i) + " has no evaluator");
      evaluator* e = m.ev;
      if (!m.device.empty() && devices[m.device] > 1) {
        auto& t = turns[m.device];
        if (!t) t = std::make_shared<std::mutex>();
        wrapped_.push_back(std::make_unique<device_turns>(*m.ev, t));
        e = wrapped_.back().get();
      }
      ev_.push_back(e);
      labels_.push_back(m.label);
      auto at = std::find(nodes.begin(), nodes.end(), m.node);
      if (at == nodes.end()) {
        nodes.push_back(m.node);
        compilers_.push_back(i);
        at = std::prev(nodes.end());
      }
      node_of_.push_back(static_cast<std::size_t>(at - nodes.begin()));
    }
  }
  [[nodiscard]] std::size_t size() const noexcept { return ev_.size(); }
  [[nodiscard]] evaluator& at(std::size_t i) const { return *ev_.at(i); }
  [[nodiscard]] std::string const& label(std::size_t i) const { return labels_.at(i); }
  [[nodiscard]] std::size_t nodes() const noexcept { return compilers_.size(); }
  [[nodiscard]] std::size_t node_of(std::size_t member) const { return node_of_.at(member); }
  /// The node where `id` is compiled and, when a member there is free, evaluated.
  [[nodiscard]] std::size_t home_of(candidate_id id) const noexcept {
    return static_cast<std::size_t>(hasher::mix(id.value) % compilers_.size());
  }
  /// A background compile of `c` on its home node (a hint: the evaluation builds it anyway).
  void prefetch(candidate const& c) const {
    try {
      ev_[compilers_[home_of(c.id)]]->prefetch(c);
    } catch (std::exception const&) {
      // a lost member's node, or a failing hint: the evaluation compiles it
    }
  }

 private:
  std::vector<std::unique_ptr<device_turns>> wrapped_;
  std::vector<evaluator*> ev_;
  std::vector<std::string> labels_;
  std::vector<std::size_t> compilers_;  ///< per node, the member that gets its prefetches
  std::vector<std::size_t> node_of_;    ///< per member, its node
};

/// The evaluation plane: one thread per pool member, one queue of tasks (a member takes the next as
/// it frees up), and finished outcomes by ticket. A member whose evaluator is lost (evaluator_lost)
/// retires; the task it held goes back to the front of the queue for another member, once; when no
/// member is left, what is queued or comes later is recorded with an infrastructure verdict.
template <class Engine>
class evaluation_plane {
 public:
  evaluation_plane(Engine& eng, pool_members const& members, std::function<void(std::string const&)> note)
      : eng_(eng), members_(members), note_(std::move(note)), alive_(members.size()) {
    threads_.reserve(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) threads_.emplace_back([this, i] { run(i); });
  }
  ~evaluation_plane() {
    // Normally nothing is queued here (search() drains first); after an error, drop what is queued
    // rather than spend device time on results nobody will read.
    {
      std::lock_guard lk(mu_);
      closing_ = true;
      todo_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  evaluation_plane(evaluation_plane const&) = delete;
  evaluation_plane& operator=(evaluation_plane const&) = delete;

  void submit(evaluation_task t) {
    {
      std::lock_guard lk(mu_);
      if (alive_ > 0) {
        todo_.push_back(queued{std::move(t), 0});
        cv_.notify_all();
        return;
      }
    }
    record_lost(std::move(t), "no pool member left: " + last_loss());
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
  /// Members still evaluating.
  [[nodiscard]] std::size_t alive() const {
    std::lock_guard lk(mu_);
    return alive_;
  }
  /// Why the last member was lost (empty while none was).
  [[nodiscard]] std::string last_loss() const {
    std::lock_guard lk(mu_);
    return last_loss_;
  }

 private:
  struct queued {
    evaluation_task task;
    unsigned requeued = 0;
    std::size_t skipped = 0;  ///< times a member took a later task for its node instead
  };

  void run(std::size_t slot) {
    evaluator& ev = members_.at(slot);
    for (;;) {
      queued q;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return closing_ || !todo_.empty(); });
        if (todo_.empty()) return;
        q = take_for(slot);
      }
      evaluation_outcome o;
      try {
        o = eng_.evaluate(q.task, ev);
      } catch (evaluator_lost const& ex) {
        retire(slot, std::move(q), ex.what());
        return;
      }
      o.slot = slot;
      o.member = members_.label(slot);
      eng_.journal_outcome(o);
      complete(q.task.ticket, std::move(o));
    }
  }

  /// The next task for member `slot` (mu_ held, queue not empty): the oldest whose candidate's home is
  /// this member's node, else the oldest. A task passed over as many times as there are nodes is taken
  /// by the next member that asks, wherever its home: nothing waits long for a busy node.
  queued take_for(std::size_t slot) {
    auto pick = todo_.begin();
    if (members_.nodes() > 1 && todo_.front().skipped < members_.nodes()) {
      const auto mine = members_.node_of(slot);
      auto home = std::find_if(todo_.begin(), todo_.end(),
                               [&](queued const& t) { return members_.home_of(t.task.cand.id) == mine; });
      if (home != todo_.end()) {
        pick = home;
        for (auto it = todo_.begin(); it != home; ++it) ++it->skipped;
      }
    }
    queued q = std::move(*pick);
    todo_.erase(pick);
    return q;
  }

  /// Member `slot` is gone: its task goes back to the queue for another member (once), or is recorded
  /// lost; with no member left, so is everything queued.
  void retire(std::size_t slot, queued q, std::string const& why) {
    note("pool member " + members_.label(slot) + " lost: " + why);
    std::vector<std::pair<evaluation_task, std::string>> lost;
    {
      std::lock_guard lk(mu_);
      --alive_;
      last_loss_ = members_.label(slot) + ": " + why;
      if (alive_ > 0 && q.requeued == 0) {
        ++q.requeued;
        todo_.push_front(std::move(q));
      } else {
        lost.emplace_back(std::move(q.task), q.requeued > 0 ? "lost twice: " + why : "no pool member left: " + why);
      }
      if (alive_ == 0) {
        for (auto& left : todo_) lost.emplace_back(std::move(left.task), "no pool member left: " + why);
        todo_.clear();
      }
    }
    cv_.notify_all();
    for (auto& [t, reason] : lost) record_lost(std::move(t), reason);
  }

  /// Records `t` with an infrastructure verdict: no member could evaluate it.
  void record_lost(evaluation_task t, std::string const& why) {
    evaluation_outcome o;
    o.id = t.cand.id;
    o.rung = t.rung;
    o.m.result = verdict::reject(stage::infrastructure, why);
    eng_.journal_outcome(o);
    complete(t.ticket, std::move(o));
  }

  void note(std::string const& text) {
    if (!note_) return;
    try {
      note_(text);
    } catch (...) {
    }
  }

  Engine& eng_;
  pool_members const& members_;
  std::function<void(std::string const&)> note_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<queued> todo_;
  std::unordered_map<std::uint64_t, evaluation_outcome> done_;
  std::deque<std::uint64_t> finish_order_;  ///< tickets in done_, in the order they finished
  std::size_t alive_;
  std::string last_loss_;
  bool closing_ = false;
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

/// Each member's baseline, measured on its own device, at once: from the journal where it recorded
/// one (a resumed run), else measured now and journaled. Not charged to the search.
template <class Engine>
void set_baselines(Engine& eng, pool_members const& members, search_options const& opt) {
  const std::size_t n = members.size();
  std::vector<std::optional<baseline>> got(n);
  if (opt.resume && opt.resume->reference) got[0] = *opt.resume->reference;
  if (opt.resume)
    for (auto const& [slot, b] : opt.resume->member_references)
      if (slot < n) got[slot] = b;
  std::vector<std::exception_ptr> failed(n);
  {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i) {
      if (got[i]) continue;
      threads.emplace_back([&, i] {
        try {
          got[i] = members.at(i).measure_baseline(eng.problem());
          (void)members.at(i).take_device_seconds();
        } catch (...) {
          failed[i] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  for (std::size_t i = 0; i < n; ++i)
    if (failed[i]) {
      try {
        std::rethrow_exception(failed[i]);
      } catch (std::exception const& ex) {
        throw error("measuring the baseline on pool member " + members.label(i) + " failed: " + ex.what());
      }
    }
  const bool had_reference = opt.resume && opt.resume->reference;
  for (std::size_t i = 0; i < n; ++i) {
    eng.set_member_baseline(i, *got[i]);
    const bool recorded = i == 0 ? had_reference : opt.resume && opt.resume->member_references.contains(i);
    if (opt.journal && !recorded) {
      if (n == 1)
        opt.journal->write_baseline(eng.baseline_of(0));
      else
        opt.journal->write_member_baseline(eng.baseline_of(i), i, members.label(i));
    }
  }
}

}  // namespace detail

/// Runs a search to its end over a pool of evaluators: one evaluation thread per member, each
/// candidate gated and timed on one member, scored against that member's own baseline (measured
/// first, on every member at once, unless the journal being resumed recorded it).
template <policy_set Policies>
search_result search(problem const& prob, Policies pol, evaluator_pool const& pool, search_options const& opt = {}) {
  engine<Policies> eng(prob, std::move(pol), engine_options{opt.seed, opt.limits, opt.fruitless_generation_limit});
  const detail::pool_members members(pool);
  detail::set_baselines(eng, members, opt);
  if (opt.resume) eng.resume_from(*opt.resume);
  eng.set_journal(opt.journal);
  for (auto* o : opt.observers) eng.add_observer(o);

  {
    detail::evaluation_plane<engine<Policies>> plane(eng, members, opt.on_pool_note);
    std::deque<std::uint64_t> pending;  // tickets in issue order
    const std::size_t depth = effective_in_flight(opt, members.size());
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
      if (plane.alive() == 0) {  // nothing can evaluate: keep what is in flight (recorded lost), stop
        while (!pending.empty()) apply_one();
        break;
      }
      step s = eng.ask();
      // New proposals: let the backend start their compiles now, in parallel (a hint; may be a no-op).
      eng.take_proposed([&](candidate const& c) { members.prefetch(c); });
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
    if (plane.alive() == 0)
      throw error("every evaluator of the pool was lost (last: " + plane.last_loss() +
                  "); the journal keeps what was measured: --resume continues the search");
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
  r.model_failed = eng.model_failed();
  r.used = eng.meter().usage();
  r.counters = v.counters();
  r.candidates = v.size();
  r.reference = v.baseline();
  return r;
}

/// Runs a search to its end with one evaluator. The evaluator measures the baseline first (unless
/// resuming with one).
template <policy_set Policies>
search_result search(problem const& prob, Policies pol, evaluator& ev, search_options const& opt = {}) {
  return search(prob, std::move(pol), evaluator_pool(ev), opt);
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
