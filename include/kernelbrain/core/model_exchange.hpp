// One prompt to a model and what came of it, as the journal records it: the texts, how the call ended,
// tokens and cost, what the parser made of the reply and which candidate it became. Standard library
// only: the engine charges the budget and journals these without knowing any model client.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/core/candidate.hpp"

namespace kernelbrain {

struct model_exchange {
  std::string key;             ///< the prompt's content key (llm::prompt::key())
  std::size_t occurrence = 0;  ///< which asking of that prompt (0 for the first)
  std::string purpose;         ///< "explore:<hint>", "mutate:<parent id>", "repair:<parent id>"
  std::string system;          ///< the prompt, as sent
  std::string user;
  std::string reply;               ///< the reply text, as received (bounded by the client)
  std::string status;              ///< llm::call_status as text: ok, cut, failed
  std::uint64_t input_tokens = 0;  ///< as the endpoint reported them, or estimated
  std::uint64_t output_tokens = 0;
  bool estimated = false;  ///< token counts are estimates (no usage reported)
  double cost = 0;
  double latency_seconds = 0;
  unsigned attempts = 0;
  std::string model;  ///< who answered, as the client names it (never a key)
  std::string finish_reason;
  std::string error;                 ///< why a call failed or was cut
  std::string parse_status;          ///< llm::reply_status as text ("" when the call failed)
  std::vector<std::string> repairs;  ///< repairs the parser applied
  std::string parse_message;
  std::optional<candidate_id> candidate;  ///< what the reply became (it may repeat a known candidate)
  std::optional<candidate_id> parent;     ///< whom the prompt asked to improve or repair
};

/// A prompt the model answered: a reply came (complete, or cut at a limit). A failed, cancelled or
/// waiting call asked and got nothing. What the `answers` budget and the report's answer axis count.
[[nodiscard]] inline bool answered(model_exchange const& x) noexcept { return x.status == "ok" || x.status == "cut"; }

}  // namespace kernelbrain
