// sanitizer_memory: which candidates a backend's sanitizer stage runs, and what it concluded. A
// memory checker is slow, so it runs on the first admitted point of each template family (a
// candidate whose source and launch plan are exactly its family's template at its parameters: the
// family's code, which every other instance shares) and on every candidate that is not a template
// instance (model-written code, hand edits). Verdicts are kept per candidate id, and a pass of a
// template instance covers its whole family. The CUDA backend (compute-sanitizer) and the host
// backend (AddressSanitizer and UndefinedBehaviorSanitizer) use it alike.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::detail {

class sanitizer_memory {
 public:
  /// `p` must outlive this object: its catalogue says which candidates are template instances.
  explicit sanitizer_memory(problem const& p) : prob_(p) {}

  /// What is already known of `c`: its own verdict, or a pass when it is an instance of a family
  /// whose template passed; nothing when the sanitizer must run.
  [[nodiscard]] std::optional<verdict> known(candidate const& c) const {
    if (auto it = verdicts_.find(c.id.value); it != verdicts_.end()) return it->second;
    if (passed_families_.count(c.family) && template_instance(c)) return verdict::pass();
    return std::nullopt;
  }

  /// Keeps the verdict of a sanitizer run on `c` (an infrastructure failure is not kept: the next
  /// evaluation tries again); a pass of a template instance covers its family from now on.
  void record(candidate const& c, verdict const& v) {
    ++runs_;
    if (v.where == stage::infrastructure) return;
    verdicts_.emplace(c.id.value, v);
    if (v && template_instance(c)) passed_families_.insert(c.family);
  }

  /// Sanitizer runs so far.
  [[nodiscard]] std::size_t runs() const noexcept { return runs_; }

 private:
  /// Is `c` exactly its family's template at its parameters (so the family's run covers it)?
  [[nodiscard]] bool template_instance(candidate const& c) const {
    auto const* h = find_hint(prob_, c.family);
    return h && h->templ && substitute(h->templ->source, c.params) == c.source &&
           substitute(h->templ->launch, c.params) == c.launch;
  }

  problem const& prob_;
  std::set<std::string> passed_families_;                ///< families whose template instance passed
  std::unordered_map<std::uint64_t, verdict> verdicts_;  ///< per candidate id
  std::size_t runs_ = 0;
};

}  // namespace kernelbrain::detail
