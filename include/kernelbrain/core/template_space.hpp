// Drawing, moving and instantiating points of a catalogue template's parameter space.
// Shared by the expert generator and the alternative strategies, so they differ only in policy.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rng.hpp"

namespace kernelbrain {

/// Replaces every ${NAME} in `text` with the parameter's value; unknown names are left alone.
[[nodiscard]] inline std::string substitute(std::string const& text, parameters const& p) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '{') {
      const auto close = text.find('}', i + 2);
      if (close != std::string::npos) {
        const auto name = std::string_view(text).substr(i + 2, close - i - 2);
        if (auto v = p.find(name)) {
          out += std::to_string(*v);
          i = close + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

/// A candidate of hint `h` at parameters `p`.
[[nodiscard]] inline candidate instantiate(expert_hint const& h, parameters p, std::string origin,
                                           std::optional<candidate_id> parent = std::nullopt) {
  std::string src, launch;
  if (h.templ) {
    src = substitute(h.templ->source, p);
    launch = substitute(h.templ->launch, p);
  }
  return make_candidate(h.name, std::move(p), std::move(origin), parent, std::move(src), std::move(launch));
}

/// A uniformly random admitted point, or nullopt after `tries` rejections by the constraints. A space
/// narrowed to a list of points (parameter_space::points) draws from that list.
[[nodiscard]] inline std::optional<parameters> random_point(parameter_space const& s, rng& r, int tries = 64) {
  if (!s.points.empty()) {
    for (int i = 0; i < tries; ++i)
      if (auto const& p = s.points[r.below(s.points.size())]; s.admits(p)) return p;
    return std::nullopt;
  }
  const auto n = s.cardinality();
  if (n == 0) return std::nullopt;
  for (int i = 0; i < tries; ++i)
    if (auto p = s.at(r.below(n)); s.admits(p)) return p;
  return std::nullopt;
}

/// The "expert default": every parameter at its middle value, if admitted.
[[nodiscard]] inline std::optional<parameters> central_point(parameter_space const& s) {
  parameters p;
  for (auto const& d : s.params) p.set(d.name, d.values[(d.values.size() - 1) / 2]);
  if (s.admits(p)) return p;
  return std::nullopt;
}

/// Moves parameter `which` of `p` by `step` positions in its value list; nullopt when that leaves
/// the list or breaks a constraint.
[[nodiscard]] inline std::optional<parameters> step_parameter(parameter_space const& s, parameters p, std::size_t which,
                                                              int step) {
  auto const& d = s.params[which];
  auto cur = p.find(d.name);
  if (!cur) return std::nullopt;
  std::ptrdiff_t pos = -1;
  for (std::size_t i = 0; i < d.values.size(); ++i)
    if (d.values[i] == *cur) pos = static_cast<std::ptrdiff_t>(i);
  const auto next = pos + step;
  if (pos < 0 || next < 0 || next >= static_cast<std::ptrdiff_t>(d.values.size())) return std::nullopt;
  p.set(d.name, d.values[static_cast<std::size_t>(next)]);
  if (!s.admits(p)) return std::nullopt;
  return p;
}

/// The catalogue hint named `name`, or null.
[[nodiscard]] inline expert_hint const* find_hint(problem const& p, std::string_view name) {
  for (auto const& h : p.catalogue)
    if (h.name == name) return &h;
  return nullptr;
}

/// Hints that carry a template (a template without parameters is one point): what template search can draw from.
[[nodiscard]] inline std::vector<expert_hint const*> template_hints(problem const& p) {
  std::vector<expert_hint const*> out;
  for (auto const& h : p.catalogue)
    if (h.templ && h.templ->space.cardinality() > 0) out.push_back(&h);
  return out;
}

}  // namespace kernelbrain
