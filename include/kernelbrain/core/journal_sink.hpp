// Where a search writes what happened. Abstract so that search.hpp needs no JSON library;
// the JSONL implementation lives in kernelbrain/io/journal.hpp.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include "kernelbrain/core/evaluation.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/model_exchange.hpp"
#include "kernelbrain/core/search_view.hpp"

namespace kernelbrain {

/// What a run is; a resumed run must match the journal's header field by field.
struct run_header {
  std::string problem;
  std::string strategy;
  std::uint64_t seed = 0;
  std::string evaluator;  ///< evaluator fingerprint
  std::string ladder;     ///< digest of the rungs
  friend bool operator==(run_header const&, run_header const&) = default;
};

/// What a journal holds for a resumed run: finished evaluations and the last event written.
struct resume_state {
  run_header header;
  std::unordered_map<evaluation_key, evaluation_outcome> outcomes;
  std::uint64_t last_seq = 0;
  /// The reference timings the run was scored against. A resumed run reuses them: re-measuring would
  /// give slightly different numbers, different scores, and a different (no longer replayed) search.
  std::optional<baseline> reference;
  /// The baselines of the other pool members (slot >= 1), each measured on its own device: a resumed
  /// run scores their recorded measurements against them again.
  std::map<std::size_t, baseline> member_references;
  /// Evaluations in flight when the run died and retried by this resume (its resume line lists them).
  /// One that was in flight at two deaths is not retried: `outcomes` holds a crash verdict for it, so
  /// that a candidate that kills the search cannot stop a run from ever finishing.
  std::vector<evaluation_key> interrupted;
};

class journal_sink {
 public:
  virtual ~journal_sink() = default;
  /// A finished evaluation. Called from the evaluation plane as soon as it finishes, so a kill
  /// loses no finished measurement. Implementations must be thread-safe with write_event and must not
  /// throw (it runs on the evaluation thread): keep a failure and report it from write_event.
  virtual void write_outcome(evaluation_outcome const&) = 0;
  /// A search event (main thread). `view` gives context, e.g. the candidate of a `proposed` event.
  virtual void write_event(event const&, search_view const&) = 0;
  /// The baseline the run scores against, once, before any event.
  virtual void write_baseline(baseline const&) {}
  /// The baseline of pool member `slot` (label `member`), measured on its device; slot 0's is the
  /// run's baseline (write_baseline). Before any event.
  virtual void write_member_baseline(baseline const& b, std::size_t slot, std::string const& member) {
    (void)member;
    if (slot == 0) write_baseline(b);
  }
  /// A model exchange (main thread), written with the seq of its model_reply event: a resumed run
  /// does not write it again (the same rule as events).
  virtual void write_exchange(model_exchange const&, std::uint64_t /*seq*/) {}
};

/// Off-hot-path hooks for progress displays and reporters (virtual by design, taskflow-style).
class observer {
 public:
  virtual ~observer() = default;
  virtual void on_event(event const&, search_view const&) = 0;
};

}  // namespace kernelbrain
