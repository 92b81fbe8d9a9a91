// Everything that happens in a search, as seen by observers, schedulers and the journal.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

enum class event_kind {
  proposed,           ///< a new candidate entered the history
  duplicate,          ///< a proposal repeated a known candidate and was dropped
  dispatched,         ///< an evaluation was started (id, rung)
  promoted,           ///< a candidate was sent to a higher rung than it had reached
  rejected,           ///< gate or measurement refused the candidate (verdict says where)
  measured,           ///< a passing measurement was scored (score set)
  new_best,           ///< the incumbent changed (score set)
  generation_failed,  ///< the generator threw or returned nothing usable (note says why)
  model_reply,        ///< a model answered a prompt (id: the candidate it became, or zero; note: purpose and outcome)
  suspended,          ///< the generator suspended the search (note says why); evaluations in flight still finish
  stopped,            ///< the search ended (note says why)
};

[[nodiscard]] constexpr std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::proposed:
      return "proposed";
    case event_kind::duplicate:
      return "duplicate";
    case event_kind::dispatched:
      return "dispatched";
    case event_kind::promoted:
      return "promoted";
    case event_kind::rejected:
      return "rejected";
    case event_kind::measured:
      return "measured";
    case event_kind::new_best:
      return "new_best";
    case event_kind::generation_failed:
      return "generation_failed";
    case event_kind::model_reply:
      return "model_reply";
    case event_kind::suspended:
      return "suspended";
    case event_kind::stopped:
      return "stopped";
  }
  return "unknown";
}

struct event {
  event_kind kind = event_kind::proposed;
  std::uint64_t seq = 0;  ///< position in the search's deterministic event order
  candidate_id id;        ///< zero for search-level events
  std::size_t rung = 0;
  verdict result;              ///< for rejected
  std::optional<score> value;  ///< for measured / new_best
  std::string note;            ///< origin for proposed; reason for stopped / generation_failed
};

}  // namespace kernelbrain
