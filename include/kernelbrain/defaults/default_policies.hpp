// The paper's composition: expert generator, policy gate, smoke(/screen)/confirm ladder,
// speedup scorer, coarse-to-fine (ASHA) scheduler. Replace one axis with .with_xxx(...).
#pragma once
#include <utility>
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/defaults/coarse_to_fine_scheduler.hpp"
#include "kernelbrain/defaults/expert_generator.hpp"
#include "kernelbrain/defaults/multi_rung_ladder.hpp"
#include "kernelbrain/defaults/policy_gate.hpp"
#include "kernelbrain/defaults/speedup_scorer.hpp"

namespace kernelbrain {

using default_policies_t =
    policies<expert_generator, policy_gate, multi_rung_ladder, speedup_scorer, coarse_to_fine_scheduler>;

[[nodiscard]] inline default_policies_t default_policies(problem const& p, coarse_to_fine_options o = {},
                                                         ladder_options const& l = {}) {
  return {expert_generator{}, policy_gate::for_problem(p), multi_rung_ladder::standard(p, l), speedup_scorer{},
          coarse_to_fine_scheduler{std::move(o)}};
}

}  // namespace kernelbrain
