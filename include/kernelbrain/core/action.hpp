// What a scheduler asks the driver to do next.
#pragma once
#include <cstddef>
#include <string>
#include <variant>
#include <vector>
#include "kernelbrain/core/candidate.hpp"

namespace kernelbrain {

enum class generation_mode {
  explore,  ///< broad coverage: new families, spread-out parameters (coarse)
  mutate,   ///< refine the given parents (fine); profile-informed where a profile exists
};

/// Ask the generator for `count` new candidates.
struct proposal_request {
  generation_mode mode = generation_mode::explore;
  std::vector<candidate_id> parents;  ///< for mutate: whom to refine
  std::size_t count = 1;
  std::string hint;  ///< optional catalogue hint to follow ("" = generator's choice)
};

/// Evaluate a known candidate at a rung (gate first when it has never been evaluated).
struct evaluate_request {
  candidate_id id;
  std::size_t rung = 0;
};

/// Nothing to do until an in-flight task completes.
struct wait_request {};

/// End the search.
struct stop_request {
  std::string reason;
};

using action = std::variant<proposal_request, evaluate_request, wait_request, stop_request>;

[[nodiscard]] inline action generate(generation_mode mode, std::size_t count, std::vector<candidate_id> parents = {},
                                     std::string hint = {}) {
  return proposal_request{mode, std::move(parents), count, std::move(hint)};
}
[[nodiscard]] inline action evaluate(candidate_id id, std::size_t rung) { return evaluate_request{id, rung}; }
[[nodiscard]] inline action wait() { return wait_request{}; }
[[nodiscard]] inline action stop(std::string reason) { return stop_request{std::move(reason)}; }

}  // namespace kernelbrain
