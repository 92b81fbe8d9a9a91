// The ask/tell core of the driver: turns scheduler actions into work and results into history.
// Single-threaded by contract except execute(), which the evaluation plane calls (see driver.hpp).
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/concepts.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluation.hpp"
#include "kernelbrain/core/evaluator_pool.hpp"
#include "kernelbrain/core/journal_sink.hpp"
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/core/search_view.hpp"

namespace kernelbrain {

struct engine_options {
  std::uint64_t seed = 1;
  budget limits;
  /// Stop after this many generations in a row that added nothing while nothing else was pending.
  std::size_t fruitless_generation_limit = 16;
};

/// A median below the roofline floor is a measurement bug or a cheat, never a record: rejects `m`
/// (stage::impossible) when one of its timings is more than 2% below its shape's floor.
inline void reject_below_floor(measurement& m, problem const& p, baseline const& b) {
  for (auto const& tm : m.timings) {
    const double floor = tm.shape < b.floor_seconds.size() ? b.floor_seconds[tm.shape] : 0.0;
    if (floor > 0 && tm.stats.median < floor * 0.98)
      m.result = verdict::reject(stage::impossible, "median " + std::to_string(tm.stats.median) + " s at shape '" +
                                                        p.shapes[tm.shape].name + "' is below the roofline floor " +
                                                        std::to_string(floor) + " s");
  }
}

/// Fills what a measured baseline may leave out: the shapes' weights and roofline floors, from `p`.
inline void complete_baseline(baseline& b, problem const& p) {
  if (b.weights.empty())
    for (auto const& s : p.shapes) b.weights.push_back(s.weight);
  if (b.floor_seconds.empty())
    for (auto const& s : p.shapes) b.floor_seconds.push_back(p.machine.floor_seconds(s));
}

/// What ask() hands back: an evaluation to run, a wait for one in flight, or the end.
struct waiting {};
struct finished {
  std::string reason;
};
using step = std::variant<evaluation_task, waiting, finished>;

template <class Policies>
class engine {
 public:
  engine(kernelbrain::problem p, Policies pol, engine_options opt)
      : problem_(std::move(p)),
        pol_(std::move(pol)),
        opt_(opt),
        meter_(opt.limits),
        rungs_(owned_rungs(pol_.ladder)),
        history_(problem_, rungs_, baseline_, meter_) {
    problem_.validate();
    if (rungs().empty()) throw error("fidelity ladder has no rungs");
    for (auto const& r : rungs())
      for (auto s : r.shapes)
        if (s >= problem_.shapes.size())
          throw error("rung '" + r.name + "' names shape " + std::to_string(s) + " but problem '" + problem_.name +
                      "' has " + std::to_string(problem_.shapes.size()));
    reseed_if_able(pol_.generator, derive_seed(opt_.seed, "generator"));
    reseed_if_able(pol_.gate, derive_seed(opt_.seed, "gate"));
    reseed_if_able(pol_.scorer, derive_seed(opt_.seed, "scorer"));
    reseed_if_able(pol_.scheduler, derive_seed(opt_.seed, "scheduler"));
  }
  engine(engine const&) = delete;
  engine& operator=(engine const&) = delete;

  void set_baseline(baseline b) { set_member_baseline(0, std::move(b)); }
  /// The baseline of pool member `slot` (measured on its own device): its measurements are scored
  /// against it. Slot 0's is set_baseline()'s, the one the view shows; a slot without one of its own
  /// is scored against slot 0's.
  void set_member_baseline(std::size_t slot, baseline b) {
    if (b.seconds.size() != problem_.shapes.size())
      throw error((slot == 0 ? std::string("baseline") : "baseline of pool member " + std::to_string(slot)) + " has " +
                  std::to_string(b.seconds.size()) + " shapes, problem has " + std::to_string(problem_.shapes.size()));
    complete_baseline(b, problem_);
    if (slot == 0) {
      baseline_ = std::move(b);
      return;
    }
    if (member_baselines_.size() <= slot) member_baselines_.resize(slot + 1);
    member_baselines_[slot] = std::move(b);
  }
  /// What a measurement by pool member `slot` is scored against.
  [[nodiscard]] baseline const& baseline_of(std::size_t slot) const noexcept {
    if (slot > 0 && slot < member_baselines_.size() && member_baselines_[slot]) return *member_baselines_[slot];
    return baseline_;
  }
  void set_journal(journal_sink* j) noexcept { journal_ = j; }
  void add_observer(observer* o) { observers_.push_back(o); }
  /// Serve these evaluations from the cache and do not re-write events up to `last_seq`.
  void resume_from(resume_state state) {
    cache_ = std::move(state.outcomes);
    resume_seq_ = state.last_seq;
  }

  [[nodiscard]] search_view view() const noexcept { return search_view(history_); }
  /// The ladder's rungs, copied once at construction (a ladder may return a temporary).
  [[nodiscard]] std::span<rung const> rungs() const noexcept { return rungs_; }
  [[nodiscard]] kernelbrain::problem const& problem() const noexcept { return problem_; }
  [[nodiscard]] budget_meter const& meter() const noexcept { return meter_; }
  [[nodiscard]] Policies& policies() noexcept { return pol_; }

  /// The next evaluation to run, a wait, or the end. Generation requests are served inline.
  step ask() {
    for (;;) {
      if (stopped_) return finished{stop_reason_};
      if (auto why = meter_.exhausted(); !why.empty()) return finish(std::move(why));
      // Evaluations in flight will count: do not start more than the budget allows.
      if (opt_.limits.evaluations > 0 &&
          meter_.usage().evaluations + history_.in_flight_evaluations() >= opt_.limits.evaluations)
        return waiting{};
      // Likewise device seconds, each evaluation in flight expected to cost the mean so far: a budget is
      // overshot by what the last evaluations cost, not by every one queued behind them (issue 28).
      if (opt_.limits.device_seconds > 0 && history_.in_flight_evaluations() > 0) {
        const auto u = meter_.usage();
        const double mean = u.evaluations > 0 ? u.device_seconds / static_cast<double>(u.evaluations) : 0.0;
        if (u.device_seconds + static_cast<double>(history_.in_flight_evaluations()) * mean >=
            opt_.limits.device_seconds)
          return waiting{};
      }
      action a = pol_.scheduler.next(view());
      if (auto* s = std::get_if<stop_request>(&a)) return finish(s->reason.empty() ? "scheduler stopped" : s->reason);
      if (std::holds_alternative<wait_request>(a)) {
        if (history_.in_flight_evaluations() == 0)
          return finish("scheduler waited with nothing in flight (a scheduler bug, or nothing left to do)");
        return waiting{};
      }
      if (auto* g = std::get_if<proposal_request>(&a)) {
        if (run_generation(*g)) continue;
        // Nothing new: let the evaluation plane report before asking again, or give up when idle.
        if (history_.in_flight_evaluations() > 0) return waiting{};
        if (fruitless_ >= opt_.fruitless_generation_limit) {
          if (view().fresh().empty())
            return finish("generator proposed nothing new " + std::to_string(fruitless_) +
                          " times in a row with nothing else to do (search space exhausted?)");
          return finish("scheduler asked for new candidates " + std::to_string(fruitless_) + " times in a row while " +
                        std::to_string(view().fresh().size()) +
                        " proposed ones wait to be evaluated, and the generator had nothing new (a scheduler bug?)");
        }
        continue;
      }
      return dispatch(std::get<evaluate_request>(a));
    }
  }

  /// Calls `f(candidate const&)` for each candidate proposed since the last call (in proposal
  /// order) and forgets them: how the driver lets a backend start compiling a batch early.
  template <class F>
  void take_proposed(F&& f) {
    for (auto i : proposed_) f(history_.at(i).cand);
    proposed_.clear();
  }

  /// An answer from the journal for this task, if the run is resuming (counted as a cache hit).
  [[nodiscard]] std::optional<evaluation_outcome> cached(evaluation_task const& t) {
    auto it = cache_.find({t.cand.id, t.rung});
    if (it == cache_.end()) return std::nullopt;
    ++history_.counters().cache_hits;
    return it->second;
  }

  /// Runs gate and measurement. Evaluation plane only: touches the gate and the evaluator, never the
  /// history, so it may run on another thread while the main thread generates (with a pool, on one
  /// thread per member at once: a gate must then be safe to call concurrently, as the default is).
  /// Writes nothing; throws evaluator_lost when the evaluator's device or rank is gone for good (the
  /// pool re-queues the task), and turns every other failure into a verdict.
  evaluation_outcome evaluate(evaluation_task const& t, evaluator& e) {
    evaluation_outcome o;
    o.id = t.cand.id;
    o.rung = t.rung;
    const auto start = std::chrono::steady_clock::now();
    try {
      if (t.run_gate) {
        o.gated = true;
        o.gate = pol_.gate.admit(t.cand, e);
      }
      if (o.gate.passed()) {
        // The memory-safety tools before a rung that needs them (rung::assure): a refusal there is this
        // rung's verdict, as a failed check would be.
        if (auto const& r = rungs()[t.rung]; r.assure) o.m.result = e.assure(t.cand, derive_seed(t.seed, "assure"));
        if (o.m.result.passed()) {
          measure_request req{t.seed, t.incumbent ? &*t.incumbent : nullptr, t.checked};
          o.m = e.measure(t.cand, rungs()[t.rung], req);
          if (o.m.result.passed()) reject_below_floor(o.m, problem_, baseline_);
        }
      }
    } catch (evaluator_lost const&) {
      throw;
    } catch (std::exception const& ex) {
      o.m.result = verdict::reject(stage::infrastructure, std::string("evaluator threw: ") + ex.what());
    } catch (...) {
      o.m.result = verdict::reject(stage::infrastructure, "evaluator threw a non-standard exception");
    }
    // Nothing but evaluator_lost may escape the evaluation thread (it would end the process): the cost
    // read is guarded too.
    try {
      o.m.device_seconds += e.take_device_seconds();
    } catch (evaluator_lost const&) {
      throw;
    } catch (...) {
    }
    o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return o;
  }

  /// Journals a finished evaluation (evaluation plane: as soon as it finishes, so that a kill loses
  /// nothing measured). A sink keeps its own failure and reports it on the main thread.
  void journal_outcome(evaluation_outcome const& o) noexcept {
    if (!journal_) return;
    try {
      journal_->write_outcome(o);
    } catch (...) {
    }
  }

  /// evaluate() and journal_outcome() for a single evaluator: a lost evaluator is an infrastructure verdict.
  evaluation_outcome execute(evaluation_task const& t, evaluator& e) {
    evaluation_outcome o;
    try {
      o = evaluate(t, e);
    } catch (evaluator_lost const& ex) {
      o.id = t.cand.id;
      o.rung = t.rung;
      o.m.result = verdict::reject(stage::infrastructure, ex.what());
    }
    journal_outcome(o);
    return o;
  }

  /// Applies a finished evaluation: charge the meter, score, update the incumbent, notify.
  void tell(evaluation_outcome const& o) {
    record(o);
    announce_stop_when_drained();
  }

  [[nodiscard]] bool stopped() const noexcept { return stopped_; }
  /// The search stopped because the generator suspended it (search_suspended): --resume continues it.
  [[nodiscard]] bool suspended() const noexcept { return suspended_; }
  /// ...because its model endpoint failed (model_endpoint_failed): a failure, not a wait.
  [[nodiscard]] bool model_failed() const noexcept { return model_failed_; }
  [[nodiscard]] std::string const& stop_reason() const noexcept { return stop_reason_; }
  [[nodiscard]] std::uint64_t last_seq() const noexcept { return seq_; }

 private:
  template <class L>
  static std::vector<rung> owned_rungs(L const& ladder) {
    auto const& rs = ladder.rungs();
    return std::vector<rung>(std::begin(rs), std::end(rs));
  }

  void record(evaluation_outcome const& o) {
    auto idx = history_.find(o.id);
    if (!idx) throw error("tell: unknown candidate " + o.id.str());
    auto& rec = history_.at(*idx);
    if (rec.state != candidate_state::in_flight || o.rung >= rungs_.size())
      throw error("tell: candidate " + o.id.str() + " has no evaluation in flight at rung " + std::to_string(o.rung));
    history_.evaluation_finished();
    meter_.charge_device(o.m.device_seconds);
    meter_.charge_evaluation();
    ++history_.counters().evaluations;
    rec.results[o.rung] = o.m;
    if (!o.passed()) {
      rec.state = candidate_state::rejected;
      rec.last = o.reason();
      ++history_.counters().rejected;
      history_.forget_best_if(*idx);
      note_event(event_kind::rejected, o.id, o.rung, rec.last, std::nullopt, std::string{});
      return;
    }
    const score s = pol_.scorer.score(o.m, baseline_of(o.slot));
    rec.scores[o.rung] = s;
    rec.state = candidate_state::measured;
    rec.last = verdict::pass();
    if (static_cast<int>(o.rung) > rec.top_rung) rec.top_rung = static_cast<int>(o.rung);
    note_event(event_kind::measured, o.id, o.rung, verdict{}, s, std::string{});
    if (history_.offer_best(*idx, o.rung, s))
      note_event(event_kind::new_best, o.id, o.rung, verdict{}, s, std::string{});
  }

  /// Stops the search (once). `settle`: first record what the generator still has in flight (not when
  /// the generator itself suspended the search: it has nothing more to give until answers exist).
  finished finish(std::string why, bool settle = true) {
    if (!stopped_) {
      if (settle) settle_generation();
      stopped_ = true;
      stop_reason_ = std::move(why);
      announce_stop_when_drained();
    }
    return finished{stop_reason_};
  }
  /// `stopped` is the last event: it waits until the evaluations in flight have been told.
  void announce_stop_when_drained() {
    if (stopped_ && !stop_announced_ && history_.in_flight_evaluations() == 0) {
      stop_announced_ = true;
      note_event(event_kind::stopped, candidate_id{}, 0, verdict{}, std::nullopt, stop_reason_);
    }
  }

  /// Returns true when the generator added at least one new candidate.
  bool run_generation(proposal_request const& req) {
    std::vector<candidate> proposals;
    try {
      proposals = pol_.generator.propose(view(), req);
    } catch (search_suspended const& ex) {
      // Marks where the search left off: a resumed run replays to here and goes on (what the drain of
      // the evaluations in flight writes after it is superseded then; its measurements are reused).
      // The exchanges the generator finished before it stopped are journaled first.
      record_exchanges();
      if (!stopped_) {
        suspended_ = true;
        model_failed_ = dynamic_cast<model_endpoint_failed const*>(&ex) != nullptr;
        note_event(event_kind::suspended, candidate_id{}, 0, verdict{}, std::nullopt, ex.what());
      }
      (void)finish(ex.what(), false);
      return false;
    } catch (std::exception const& ex) {
      ++history_.counters().generation_failures;
      note_event(event_kind::generation_failed, candidate_id{}, 0, verdict{}, std::nullopt, ex.what());
    }
    const std::size_t added = add_proposals(std::move(proposals), true);
    record_exchanges();
    // A fruitless generation counts towards "nothing new N times in a row" only with nothing in flight: while
    // evaluations run, the scheduler may ask again at every free slot, and there is still something to do.
    if (added > 0)
      fruitless_ = 0;
    else if (history_.in_flight_evaluations() == 0)
      ++fruitless_;
    return added > 0;
  }

  /// Adds new candidates to the history (duplicates are counted and noted); `prefetch`: hand them to
  /// take_proposed(). Returns how many were new.
  std::size_t add_proposals(std::vector<candidate> proposals, bool prefetch) {
    std::size_t added = 0;
    for (auto& c : proposals) {
      c.seal();
      const auto id = c.id;
      std::string origin = c.origin;
      if (history_.add(std::move(c))) {
        meter_.charge_candidate();
        if (auto i = history_.find(id); i && prefetch) proposed_.push_back(*i);
        ++added;
        note_event(event_kind::proposed, id, 0, verdict{}, std::nullopt, std::move(origin));
      } else {
        ++history_.counters().duplicates;
        note_event(event_kind::duplicate, id, 0, verdict{}, std::nullopt, std::move(origin));
      }
    }
    return added;
  }

  /// When the search stops: what the generator still had in flight (model requests sent ahead) is
  /// recorded, candidates and exchanges, though never evaluated: its tokens were spent.
  void settle_generation() {
    std::vector<candidate> late;
    try {
      late = settle_if_able(pol_.generator);
    } catch (std::exception const& ex) {
      ++history_.counters().generation_failures;
      note_event(event_kind::generation_failed, candidate_id{}, 0, verdict{}, std::nullopt, ex.what());
    }
    (void)add_proposals(std::move(late), false);
    record_exchanges();
  }

  /// Charges the model's tokens and cost, and notes and journals each exchange (after its candidates
  /// were proposed, so that the event names a candidate the journal already holds).
  void record_exchanges() {
    std::vector<model_exchange> xs;
    try {
      xs = take_exchanges_if_able(pol_.generator);
    } catch (std::exception const& ex) {
      note_event(event_kind::generation_failed, candidate_id{}, 0, verdict{}, std::nullopt, ex.what());
      return;
    }
    for (auto const& x : xs) {
      meter_.charge_llm(x.input_tokens + x.output_tokens, x.cost);
      if (answered(x)) meter_.charge_answer();
      // An exchange counts against the candidate limit: one that gave a kernel through its proposal,
      // one that gave none here (else a model that never writes code would be asked for ever).
      if (!x.candidate) meter_.charge_candidate();
      std::string note = x.purpose + ": " + x.status;
      if (!x.parse_status.empty()) note += "/" + x.parse_status;
      if (x.estimated) note += " (tokens estimated)";
      if ((x.status == "failed" || x.status == "cancelled") && !x.error.empty())  // why, for a progress display
        note += " - " + x.error.substr(0, std::min<std::size_t>(x.error.find('\n'), 300));
      note_event(event_kind::model_reply, x.candidate.value_or(candidate_id{}), 0, verdict{}, std::nullopt,
                 std::move(note));
      if (journal_ && seq_ > resume_seq_) journal_->write_exchange(x, seq_);
    }
  }

  step dispatch(evaluate_request const& r) {
    auto idx = history_.find(r.id);
    if (!idx) throw error("scheduler asked to evaluate unknown candidate " + r.id.str());
    if (r.rung >= rungs().size())
      throw error("scheduler asked for rung " + std::to_string(r.rung) + " but the ladder has " +
                  std::to_string(rungs().size()));
    auto& rec = history_.at(*idx);
    if (rec.state == candidate_state::rejected)
      throw error("scheduler asked to evaluate rejected candidate " + r.id.str());
    if (rec.state == candidate_state::in_flight)
      throw error("scheduler asked to evaluate candidate " + r.id.str() + " which is already in flight");
    fruitless_ = 0;  // "nothing new N times in a row": generations with no evaluation between them
    evaluation_task t;
    t.ticket = ++ticket_;
    t.cand = rec.cand;
    t.rung = r.rung;
    t.run_gate = rec.state == candidate_state::fresh;
    t.seed = derive_seed(opt_.seed, "measure", r.id.value ^ (static_cast<std::uint64_t>(r.rung) << 56));
    // The A/B partner runs in the same worker: at an assured rung it must have passed the memory-safety tools
    // itself (a provisional incumbent from the smoke has not), else the candidate is timed alone.
    if (auto const& at = rungs()[r.rung]; at.interleaved)
      if (auto const* b = view().best(); b && b->cand.id != r.id && (!at.assure || rungs()[view().best_rung()].assure))
        t.incumbent = b->cand;
    // Where the candidate passed correctness trials already: the gate's shapes (it runs first, and a
    // candidate it refuses is never measured) and every rung it passed.
    t.checked = gate_checked_shapes_if_able(pol_.gate);
    for (std::size_t k = 0; k < rec.results.size(); ++k)
      if (rec.results[k] && rec.results[k]->result.passed())
        t.checked.insert(t.checked.end(), rungs()[k].shapes.begin(), rungs()[k].shapes.end());
    if (rec.state == candidate_state::fresh) history_.take_fresh(*idx);
    if (rec.top_rung >= 0 && static_cast<int>(r.rung) > rec.top_rung) {
      ++history_.counters().promotions;
      note_event(event_kind::promoted, r.id, r.rung, verdict{}, std::nullopt, std::string{});
    }
    rec.state = candidate_state::in_flight;
    history_.evaluation_started();
    note_event(event_kind::dispatched, r.id, r.rung, verdict{}, std::nullopt, std::string{});
    return t;
  }

  /// Builds the event field by field (GCC 12 -O3 warns falsely on a braced temporary here).
  void note_event(event_kind kind, candidate_id id, std::size_t rung, verdict result, std::optional<score> value,
                  std::string note) {
    event e;
    e.kind = kind;
    e.id = id;
    e.rung = rung;
    e.result = std::move(result);
    e.value = value;
    e.note = std::move(note);
    emit(std::move(e));
  }

  void emit(event e) {
    e.seq = ++seq_;
    observe_if_able(pol_.scheduler, e);
    observe_if_able(pol_.generator, e);
    observe_if_able(pol_.scorer, e);
    const auto v = view();
    for (auto* o : observers_) o->on_event(e, v);
    if (journal_ && e.seq > resume_seq_) journal_->write_event(e, v);
  }

  kernelbrain::problem problem_;
  Policies pol_;
  engine_options opt_;
  budget_meter meter_;
  kernelbrain::baseline baseline_;
  std::vector<std::optional<kernelbrain::baseline>> member_baselines_;  ///< by pool slot; [0] unused
  std::vector<rung> rungs_;
  detail::search_history history_;
  journal_sink* journal_ = nullptr;
  std::vector<observer*> observers_;
  std::unordered_map<evaluation_key, evaluation_outcome> cache_;
  std::uint64_t resume_seq_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t ticket_ = 0;
  std::size_t fruitless_ = 0;
  std::vector<std::size_t> proposed_;  ///< history indices proposed since take_proposed()
  bool stopped_ = false;
  bool suspended_ = false;
  bool model_failed_ = false;
  bool stop_announced_ = false;
  std::string stop_reason_;
};

}  // namespace kernelbrain
