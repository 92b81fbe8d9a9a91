// A candidate implementation, identified by a hash of its content.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/parameters.hpp"

namespace kernelbrain {

/// Content hash of (family, parameters, source, launch plan). Equal content, equal id.
struct candidate_id {
  std::uint64_t value = 0;
  friend constexpr bool operator==(candidate_id, candidate_id) = default;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 sees the 0 of a defaulted <=>'s rewrite
  friend constexpr auto operator<=>(candidate_id, candidate_id) = default;
  [[nodiscard]] std::string str() const { return to_hex(value); }
};

struct candidate {
  candidate_id id;
  std::string family;  ///< catalogue hint or template it came from ("" for free-form)
  parameters params;
  std::string source;                  ///< kernel source; empty for synthetic candidates
  std::string launch;                  ///< launch plan; backend-specific text
  std::optional<candidate_id> parent;  ///< lineage
  std::string origin;                  ///< "seed", "expert:<hint>", "llm", "mutation:<param>", ...

  /// Recomputes `id` from the content. Call after building or changing a candidate.
  candidate& seal() {
    id.value = hasher{}.bytes(family).bytes(params.to_string()).bytes(source).bytes(launch).digest();
    return *this;
  }
};

/// Convenience for templates and tests.
[[nodiscard]] inline candidate make_candidate(std::string family, parameters params, std::string origin,
                                              std::optional<candidate_id> parent = std::nullopt,
                                              std::string source = {}, std::string launch = {}) {
  candidate c{{},     std::move(family), std::move(params), std::move(source), std::move(launch),
              parent, std::move(origin)};
  c.seal();
  return c;
}

}  // namespace kernelbrain

template <>
struct std::hash<kernelbrain::candidate_id> {
  std::size_t operator()(kernelbrain::candidate_id id) const noexcept { return static_cast<std::size_t>(id.value); }
};
