// Generators that ask a model for kernels.
//
// llm_generator: every proposal is a prompt to a model_client (generate/llm/model_client.hpp) and its
// parsed reply. Explore requests cycle over the problem's catalogue hints (prose hints included: a model
// needs no template) with the incumbent shown; mutate requests send a measured parent with its per-shape
// numbers, static resources and profiler diagnosis, and the hint whose words best match that diagnosis;
// a candidate of the model's that is rejected for a compile error, a wrong answer or a bad signature
// becomes a repair prompt (once per lineage). All prompts of one propose() go out together as a batch,
// at most the client's concurrency at a time, and come back in prompt order, so the search is the same
// at any concurrency. Blind mode (the paper's ablation) sends no hint, no measurements, no diagnosis and
// no failures: the problem, the reference, and for mutation the parent's source only.
//
// Overlap: with lag L >= 1 (the default is 1) a batch is sent on a thread of its own and its kernels are
// taken L propose() calls later (waiting there if the replies are not in yet), or earlier by a call that
// would otherwise leave the search idle (nothing to propose and no candidate waiting to be measured), so
// the GPU measures what is queued while the model writes, and the model writes while the GPU measures.
// Which call takes a batch depends on the call count and the search's state only, never on when the
// replies arrive: the search is the same whatever the
// model's latency. What is still in flight when the search stops is taken by settle() (the engine records
// those kernels and their exchanges; they are not evaluated). lag = 0 waits for each batch in propose().
//
// hybrid_generator: the default composition's generator when a model is configured: the expert
// catalogue's template moves and the model's kernels side by side, each request split between them by
// which of the two has produced new incumbents so far.
//
// A reply with nothing usable is journaled with its typed parse status and proposes nothing. An exchange
// answer that does not exist yet (call_status::waiting) suspends the search (search_suspended).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/model_exchange.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/defaults/expert_generator.hpp"
#include "kernelbrain/generate/llm/hint_choice.hpp"
#include "kernelbrain/generate/llm/model_client.hpp"
#include "kernelbrain/generate/llm/prompt_builder.hpp"
#include "kernelbrain/generate/llm/reply_parser.hpp"

namespace kernelbrain::llm {

struct llm_generator_options {
  std::size_t max_tokens = 16384;     ///< per reply
  std::optional<double> temperature;  ///< sampling temperature sent with every prompt; none: the model's default
  /// The search stops (model_endpoint_failed) after this many failed model requests in a row (0:
  /// never for that reason); a failure that asking again will not fix stops it at once.
  std::size_t max_failed_in_a_row = 8;
  bool blind = false;              ///< no hints, measurements, diagnosis or failures (ablation)
  bool repair = true;              ///< turn compile / wrong-answer / signature rejects into repair prompts
  std::size_t failures_shown = 3;  ///< recent failures of a lineage shown in a prompt
  std::size_t max_reply_bytes = std::size_t{1} << 20;  ///< the parser's limit
  /// propose() calls between sending a batch and taking its kernels (0: wait for the replies in the
  /// same call). See "Overlap" above; recorded answers re-run a search only at the lag it ran with.
  std::size_t lag = 1;
  /// The most prompts sent and not yet taken (0: no limit). A call whose batch would go past it takes the
  /// oldest batches first (waiting for their replies; with an exchange, suspending the search), and a
  /// batch larger than the limit alone sends that many and keeps the rest for the next call; so an
  /// exchange round writes at most this many prompts. Like the lag, a re-run must use the same.
  std::size_t max_waiting = 0;
};

class llm_generator {
 public:
  llm_generator(std::shared_ptr<model_client> client, llm_generator_options o = {},
                prompt_templates templates = prompt_templates::defaults())
      : client_(std::move(client)), opt_(o), builder_(std::move(templates)) {
    if (!client_) throw error("llm_generator: no model client");
  }

  void observe(event const& e) {
    if (e.kind != event_kind::rejected || !mine_.contains(e.id) || opt_.blind) return;
    const auto it = parent_of_.find(e.id);
    const candidate_id lineage = it != parent_of_.end() && it->second ? *it->second : e.id;
    auto& list = failures_[lineage];
    list.push_back({e.id, origin_[e.id], e.result});
    if (list.size() > opt_.failures_shown) list.erase(list.begin());
    const bool fixable = e.result.where == stage::compile || e.result.where == stage::correctness ||
                         e.result.where == stage::signature || e.result.where == stage::resources;
    if (opt_.repair && fixable && !repaired_.contains(lineage) && !is_repair_.contains(e.id)) {
      repaired_.insert(lineage);
      repairs_.push_back(e.id);
    }
  }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    return propose_all(v, std::span<proposal_request const>(&req, 1));
  }

  /// Several requests' prompts as one batch (hybrid_generator: its share of a request and its deferred
  /// parents): the kernels of batches that are due, then this batch sent (or, with lag 0, answered).
  /// When the search would otherwise be idle (no batch due, `others` false: the caller has nothing else
  /// to give, and no candidate waits to be measured), the oldest batch in flight is taken early. While
  /// candidates wait, the search measures them instead: with an exchange, taking a batch whose answers
  /// are not written yet suspends the search, and a round would end with measurable work left (a blind
  /// campaign's round stopped after 4 of its 8 answered kernels). Both depend on the search's state
  /// only, never on when replies arrive.
  std::vector<candidate> propose_all(search_view const& v, std::span<proposal_request const> reqs,
                                     bool others = false) {
    ++calls_;
    if (stop_) throw model_endpoint_failed(*stop_);
    std::vector<candidate> out;
    const bool waiting_work = others || !v.fresh().empty();
    while (!in_flight_.empty() && (in_flight_.front().due <= calls_ || (out.empty() && !waiting_work))) {
      batch b = std::move(in_flight_.front());
      in_flight_.pop_front();
      take(b, out, true);
    }
    if (stop_) {  // no new prompts to a failing endpoint; what came back is proposed, then the search stops
      if (out.empty()) throw model_endpoint_failed(*stop_);
      return out;
    }
    batch b;
    // Prompts an earlier call held back (max_waiting) go first, in the order they were built.
    b.requests = std::exchange(held_.requests, {});
    b.why = std::exchange(held_.why, {});
    b.expect = held_.expect;  // how their replies are parsed, should no new prompt set it below
    for (auto const& r : reqs) add_prompts(v, r, b);
    if (b.requests.empty()) return out;
    if (opt_.max_waiting > 0) {
      while (!in_flight_.empty() && waiting_prompts() + b.requests.size() > opt_.max_waiting) {
        batch oldest = std::move(in_flight_.front());
        in_flight_.pop_front();
        take(oldest, out, true);
      }
      // A batch larger than the limit on its own: the rest waits for a later call (nothing is dropped).
      if (b.requests.size() > opt_.max_waiting) {
        const auto keep = static_cast<std::ptrdiff_t>(opt_.max_waiting);
        held_.requests.assign(std::make_move_iterator(b.requests.begin() + keep),
                              std::make_move_iterator(b.requests.end()));
        held_.why.assign(std::make_move_iterator(b.why.begin() + keep), std::make_move_iterator(b.why.end()));
        held_.expect = b.expect;
        b.requests.resize(opt_.max_waiting);
        b.why.resize(opt_.max_waiting);
      }
    }
    if (opt_.lag == 0) {
      b.replies = std::async(std::launch::deferred, [c = client_, rs = b.requests] { return c->complete_all(rs); });
      take(b, out, true);
      return out;
    }
    b.due = calls_ + opt_.lag;
    b.replies = std::async(std::launch::async, [c = client_, rs = b.requests] { return c->complete_all(rs); });
    in_flight_.push_back(std::move(b));
    return out;
  }

  /// The kernels of every batch still in flight (waiting for their replies); answers an exchange does not
  /// have yet are dropped (the prompt files stay). For the engine, when the search stops.
  std::vector<candidate> settle() {
    std::vector<candidate> out;
    while (!in_flight_.empty()) {
      batch b = std::move(in_flight_.front());
      in_flight_.pop_front();
      take(b, out, false);
    }
    return out;
  }
  /// Batches sent and not yet taken.
  [[nodiscard]] std::size_t batches_in_flight() const noexcept { return in_flight_.size(); }
  /// Prompts sent and not yet taken.
  [[nodiscard]] std::size_t waiting_prompts() const noexcept {
    std::size_t n = 0;
    for (auto const& b : in_flight_) n += b.requests.size();
    return n;
  }

  /// The exchanges since the last call (the engine charges and journals them).
  std::vector<model_exchange> take_exchanges() { return std::exchange(exchanges_, {}); }

  /// Whether `id` was written by the model (for hybrid_generator's bookkeeping).
  [[nodiscard]] bool wrote(candidate_id id) const { return mine_.contains(id); }
  [[nodiscard]] model_client& client() noexcept { return *client_; }

 private:
  /// One batch of prompts: what was asked, why, and the replies to come.
  struct asked {
    std::string purpose;
    std::optional<candidate_id> parent;
    std::string hint;  ///< the hint's name, if the prompt carried one
    bool repair = false;
  };
  struct batch {
    std::vector<chat_request> requests;
    std::vector<asked> why;
    reply_expectations expect;
    std::future<std::vector<chat_reply>> replies;
    std::size_t due = 0;  ///< the propose() call that takes it
  };

  /// Prompts that may still be sent under an answers budget (budget::llm_answers): the limit, less the
  /// answers charged, those taken and not yet charged, and every prompt built or sent and not answered
  /// yet (each may become one answer). So the search never asks for more answers than it may take, and a
  /// search that stops on the budget ends at the limit exactly (unless calls fail, which frees their
  /// share). Without a limit: any number. Depends on the search's state only, as the prompts must.
  [[nodiscard]] std::size_t answers_left(search_view const& v, batch const& b) const {
    const auto limit = v.meter().limit().llm_answers;
    if (limit == 0) return std::numeric_limits<std::size_t>::max();
    std::uint64_t committed = v.meter().usage().llm_answers + b.requests.size();
    for (auto const& x : exchanges_) committed += answered(x) ? 1 : 0;
    for (auto const& f : in_flight_) committed += f.requests.size();
    return committed >= limit ? 0 : static_cast<std::size_t>(limit - committed);
  }

  /// Builds the prompts of one request into `b`.
  void add_prompts(search_view const& v, proposal_request const& req, batch& b) {
    auto const& p = v.problem();
    const auto traits = backends().traits_of(p);
    if (traits.language.empty())
      throw error("problem '" + p.name + "' runs on the " + traits.name +
                  " backend, whose candidates have no source: a model cannot write them");
    b.expect = expectations_for(traits);
    b.expect.max_reply_bytes = opt_.max_reply_bytes;
    std::vector<prompt_subject> subjects;
    std::vector<asked> why;
    const std::size_t count = std::min(req.count, answers_left(v, b));
    // Repairs first: a rejected kernel of the model's, with its verdict.
    while (!opt_.blind && !repairs_.empty() && subjects.size() < count) {
      const auto id = repairs_.front();
      repairs_.erase(repairs_.begin());
      auto const* rec = v.find(id);
      if (!rec) continue;
      prompt_subject s;
      s.what = prompt_subject::kind::repair;
      s.parent = rec;
      s.failures = lineage_failures(id);
      subjects.push_back(std::move(s));
      why.push_back({"repair:" + id.str(), id, {}, true});
    }
    auto const& hints = p.catalogue;
    for (std::size_t k = 0; subjects.size() < count; ++k) {
      prompt_subject s;
      s.blind = opt_.blind;
      candidate_record const* parent = nullptr;
      if (req.mode == generation_mode::mutate && !req.parents.empty()) {
        parent = v.find(req.parents[k % req.parents.size()]);
        if (parent && parent->state == candidate_state::rejected) parent = nullptr;
      }
      if (parent) {
        s.what = prompt_subject::kind::mutate;
        s.parent = parent;
        if (!opt_.blind) {
          // A hint from the catalogue, not the parent's own family nor one measured slower than it
          // (hint_choice.hpp); the start rotates per parent so that ties take turns.
          s.hint = mutate_hint(hints, v, *parent, rotation_[parent->cand.id]++);
          if (!hints.empty() && s.hint == nullptr) s.no_hint = no_hint_text;
          s.failures = lineage_failures(parent->cand.id);
        }
        why.push_back({"mutate:" + parent->cand.id.str() + (s.hint ? ":" + s.hint->name : std::string()),
                       parent->cand.id, s.hint ? s.hint->name : std::string(), false});
      } else {
        s.what = prompt_subject::kind::explore;
        if (!opt_.blind && !hints.empty()) {
          s.hint = req.hint.empty() ? &hints[next_hint_++ % hints.size()] : find_hint(p, req.hint);
          s.incumbent = v.best();
        }
        why.push_back({std::string("explore") + (s.hint ? ":" + s.hint->name : std::string()), std::nullopt,
                       s.hint ? s.hint->name : std::string(), false});
      }
      subjects.push_back(std::move(s));
    }
    // The prompts, each with how often it was asked before (recorded answers key on both).
    for (std::size_t i = 0; i < subjects.size(); ++i) {
      chat_request r;
      r.prompt = builder_.build(v, subjects[i]);
      r.occurrence = asked_[r.prompt.key()]++;
      r.max_tokens = opt_.max_tokens;
      r.temperature = opt_.temperature;  // none: not sent
      b.requests.push_back(std::move(r));
      b.why.push_back(std::move(why[i]));
    }
  }

  /// Waits for `b`'s replies and parses them into `out`, each exchange kept for take_exchanges(). When
  /// `suspend`, an answer that does not exist yet stops the search (search_suspended); else such replies
  /// are dropped.
  void take(batch& b, std::vector<candidate>& out, bool suspend) {
    auto replies = b.replies.get();
    std::optional<std::string> stop;  // the failure policy's reason to stop
    std::size_t waiting = 0;
    std::string first_wait;
    for (auto const& r : replies)
      if (r.status == call_status::waiting && waiting++ == 0) first_wait = r.error;
    if (waiting > 0 && suspend)
      throw search_suspended("waiting for " + std::to_string(waiting) + " answer" + (waiting == 1 ? "" : "s") +
                             (first_wait.empty() ? std::string() : " (" + first_wait + ")"));
    for (std::size_t i = 0; i < replies.size() && i < b.requests.size(); ++i) {
      auto const& r = replies[i];
      if (r.status == call_status::waiting) continue;
      auto const& why = b.why[i];
      model_exchange x;
      x.key = b.requests[i].prompt.key();
      x.occurrence = b.requests[i].occurrence;
      x.purpose = why.purpose;
      x.system = b.requests[i].prompt.system;
      x.user = b.requests[i].prompt.user;
      x.reply = r.text;
      x.status = std::string(to_string(r.status));
      x.input_tokens = r.usage.input;
      x.output_tokens = r.usage.output;
      x.estimated = r.usage.estimated;
      x.cost = r.usage.cost;
      x.latency_seconds = r.latency_seconds;
      x.attempts = r.attempts;
      x.model = r.model;
      x.finish_reason = r.finish_reason;
      x.error = r.error;
      x.parent = why.parent;
      if (r.status == call_status::ok || r.status == call_status::cut) {
        auto parsed = parse_reply(r.text, b.expect);
        x.parse_status = std::string(to_string(parsed.status));
        x.repairs = parsed.repairs;
        x.parse_message = parsed.message;
        if (parsed.ok()) {
          const std::string kind = why.purpose.substr(0, why.purpose.find(':'));
          std::string origin = "llm:" + kind;
          if (!why.hint.empty()) origin += ":" + why.hint;
          if (opt_.blind) origin = "llm-blind:" + kind;
          auto c = make_candidate("llm", {}, origin, why.parent, std::move(parsed.source), std::move(parsed.plan));
          x.candidate = c.id;
          mine_.insert(c.id);
          origin_[c.id] = c.origin;
          parent_of_[c.id] = lineage_of(why.parent);
          if (why.repair) is_repair_.insert(c.id);
          out.push_back(std::move(c));
        }
      }
      exchanges_.push_back(std::move(x));
      // The failure policy: a permanent failure stops the search; so do many failures in a row.
      if (r.status == call_status::failed) {
        ++failed_in_a_row_;
        if (!stop && r.permanent) stop = "the model endpoint refused a request: " + r.error;
        if (!stop && opt_.max_failed_in_a_row > 0 && failed_in_a_row_ >= opt_.max_failed_in_a_row)
          stop = std::to_string(failed_in_a_row_) + " model requests in a row failed; the last: " + r.error;
      } else if (r.status == call_status::ok || r.status == call_status::cut) {
        failed_in_a_row_ = 0;
      }
    }
    // Raised by the next propose_all(), after this batch's kernels and exchanges are recorded.
    if (stop && !stop_)
      stop_ = *stop +
              " (everything so far is in the journal: --resume continues once the "
              "endpoint is fixed)";
  }

  /// The lineage a child belongs to: its parent's lineage when the parent is the model's, else the parent.
  std::optional<candidate_id> lineage_of(std::optional<candidate_id> parent) const {
    if (!parent) return std::nullopt;
    if (auto it = parent_of_.find(*parent); it != parent_of_.end() && it->second) return it->second;
    return parent;
  }
  std::vector<failure_note> lineage_failures(candidate_id id) const {
    if (auto it = parent_of_.find(id); it != parent_of_.end() && it->second) id = *it->second;
    if (auto it = failures_.find(id); it != failures_.end()) return it->second;
    return {};
  }

  std::shared_ptr<model_client> client_;
  llm_generator_options opt_;
  prompt_builder builder_;
  std::size_t next_hint_ = 0;
  std::size_t failed_in_a_row_ = 0;  ///< failed model requests since the last reply
  std::optional<std::string> stop_;  ///< the failure policy's reason to stop the search, once it has one
  std::unordered_map<std::string, std::size_t> asked_;
  std::vector<model_exchange> exchanges_;
  std::unordered_set<candidate_id> mine_, is_repair_, repaired_;
  std::unordered_map<candidate_id, std::string> origin_;
  std::unordered_map<candidate_id, std::optional<candidate_id>> parent_of_;  ///< lineage root of each child
  std::unordered_map<candidate_id, std::vector<failure_note>> failures_;     ///< by lineage
  std::vector<candidate_id> repairs_;
  std::unordered_map<candidate_id, std::size_t> rotation_;
  std::deque<batch> in_flight_;  ///< sent, oldest first
  batch held_;                   ///< built but not sent: past max_waiting in one batch (sent by the next call)
  std::size_t calls_ = 0;        ///< propose() calls so far
};

/// Template moves and model-written kernels in one generator, the paper's split: cheap template moves
/// cover the catalogue, and the model is asked about candidates that earned it, those measured at a
/// profiled rung or the top rung (the standard ladder's confirm rung profiles), whose prompts then carry the
/// profiler's diagnosis.
/// A mutate request for such a parent, and an explore request once the incumbent is such a candidate,
/// is split by the model's share, which follows who produced new incumbents: (model wins + 1) / (all
/// wins + 2), kept in [0.25, 0.75]. What the templates cannot supply in an explore request (an exhausted
/// space), and every request about a model-written parent or for a problem without templates, goes to
/// the model: with a model the search space is open.
class hybrid_generator {
 public:
  hybrid_generator(expert_generator templates, llm_generator model)
      : templates_(std::move(templates)), model_(std::move(model)) {}

  void reseed(std::uint64_t seed) {
    templates_.reseed(derive_seed(seed, "templates"));  // the model's choices are rng-free
  }
  void observe(event const& e) {
    templates_.observe(e);
    model_.observe(e);
    if (e.kind == event_kind::new_best) ++(model_.wrote(e.id) ? model_wins_ : template_wins_);
  }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    const bool has_templates = std::any_of(v.problem().catalogue.begin(), v.problem().catalogue.end(),
                                           [](expert_hint const& h) { return h.templ.has_value(); });
    bool parent_is_models = false;
    bool parent_profiled = false;
    for (auto id : req.parents) {
      parent_is_models = parent_is_models || model_.wrote(id);
      if (auto const* r = v.find(id)) parent_profiled = parent_profiled || profiled(v, *r);
    }
    const bool earned = req.mode == generation_mode::mutate && !req.parents.empty()
                            ? parent_profiled
                            : v.best() != nullptr && profiled(v, *v.best());
    std::size_t for_model = 0;
    if (!has_templates || parent_is_models) {
      for_model = req.count;
    } else if (earned) {
      for_model =
          std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(share() * static_cast<double>(req.count))));
      for_model = std::min(for_model, req.count);
    }
    // A parent on its way to the profiled rung has not earned the model yet: its share waits until its
    // measurement (and diagnosis) is in, and is asked for then, with whatever request comes next.
    if (!earned && !parent_is_models && has_templates && req.mode == generation_mode::mutate && req.parents.size() == 1)
      if (auto const* r = v.find(req.parents.front()); r && heading_to_profile(v, *r))
        deferred_.push_back({r->cand.id, std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(
                                                                      share() * static_cast<double>(req.count))))});
    std::vector<candidate> out;
    if (for_model < req.count) {
      proposal_request t = req;
      t.count = req.count - for_model;
      out = templates_.propose(v, t);
      // The model fills what the templates could not where it may be asked at all: a new kernel (explore:
      // with a model the space is open) or a parent that earned it; an unearned parent gets fewer children.
      const bool may_fill = earned || req.mode == generation_mode::explore || req.parents.empty();
      if (out.size() < t.count && may_fill) for_model += t.count - out.size();
    }
    // The model's share and the deferred parents whose profiled measurement is in (or that were rejected on
    // the way: dropped) go out as one batch (an exchange search waits for all of them at once).
    std::vector<proposal_request> asks;
    if (for_model > 0) {
      proposal_request m = req;
      m.count = for_model;
      asks.push_back(std::move(m));
    }
    proposal_request ready;
    ready.mode = generation_mode::mutate;
    for (std::size_t i = 0; i < deferred_.size();) {
      auto const* r = v.find(deferred_[i].first);
      if (!r || r->state == candidate_state::rejected) {
        deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (r->state != candidate_state::in_flight && profiled(v, *r)) {
        for (std::size_t k = 0; k < deferred_[i].second; ++k) ready.parents.push_back(r->cand.id);
        deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      ++i;
    }
    if (!ready.parents.empty()) {
      ready.count = ready.parents.size();  // parents[k % size]: each parent its own number of children
      asks.push_back(std::move(ready));
    }
    // Called even with nothing to ask: batches sent earlier may be due.
    auto more = model_.propose_all(v, asks, !out.empty());
    for (auto& c : more) out.push_back(std::move(c));
    return out;
  }

  /// The model's kernels still in flight when the search stops (see llm_generator::settle).
  std::vector<candidate> settle() { return model_.settle(); }
  std::vector<model_exchange> take_exchanges() { return model_.take_exchanges(); }
  [[nodiscard]] llm_generator& model() noexcept { return model_; }

 private:
  [[nodiscard]] double share() const {
    return std::clamp(
        (static_cast<double>(model_wins_) + 1.0) / (static_cast<double>(model_wins_ + template_wins_) + 2.0), 0.25,
        0.75);
  }
  /// In flight to the first rung that profiles (or the top rung).
  static bool heading_to_profile(search_view const& v, candidate_record const& r) {
    if (r.state != candidate_state::in_flight) return false;
    const std::size_t next = r.top_rung < 0 ? 0 : static_cast<std::size_t>(r.top_rung) + 1;
    return next < v.rungs().size() && (v.rungs()[next].profile || next + 1 == v.rungs().size());
  }
  /// Passed a measurement at a rung that profiles (where the backend can, with a diagnosis) or at the
  /// ladder's top rung.
  static bool profiled(search_view const& v, candidate_record const& r) {
    for (std::size_t i = 0; i < r.results.size() && i < v.rungs().size(); ++i)
      if ((v.rungs()[i].profile || i + 1 == v.rungs().size()) && r.results[i] && r.results[i]->result.passed())
        return true;
    return false;
  }

  expert_generator templates_;
  llm_generator model_;
  std::size_t model_wins_ = 0, template_wins_ = 0;
  std::vector<std::pair<candidate_id, std::size_t>>
      deferred_;  ///< parents waiting for their profile, and how many children
};

}  // namespace kernelbrain::llm
