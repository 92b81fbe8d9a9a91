// Which expert hint a mutate prompt carries. A hint is a catalogue family's prose: the design of a family
// the search may already have measured. Offered to improve a kernel that is already faster than that family,
// it points backwards: in issue 29's sdpa_fp16 campaign all six prompts answered in the seventh session that
// asked to improve a warpgroup-MMA kernel (the family's best: 95.6x at the smoke) carried the mma.sync family
// flash2-mma-lean's prose (71.8x at the smoke, its best), and every one of the six answers said it set the
// hint aside. So a family measured slower than the parent, at the highest rung where both were measured, is
// not offered; the rest are ranked by the words their prose shares with the parent's diagnosis.
#pragma once
#include <cctype>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/search_view.hpp"

namespace kernelbrain::llm {

/// What a mutate prompt says where every hint was excluded: the model improves the kernel on its own design.
inline constexpr char const* no_hint_text =
    "No hint this time: every expert family of the catalogue is this kernel's own or was measured slower than "
    "it, so none would move it forward. Improve it on its own design: the measurements and the diagnosis "
    "above say where its time goes.";

/// The best score of `family`'s candidates measured at `rung`, if any was.
[[nodiscard]] inline std::optional<double> family_best_at(search_view const& v, std::string const& family,
                                                          std::size_t rung) {
  std::optional<double> best;
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto const& r = v[i];
    if (r.cand.family != family || rung >= r.scores.size() || !r.scores[rung]) continue;
    if (!best || r.scores[rung]->value > *best) best = r.scores[rung]->value;
  }
  return best;
}

/// Whether `family` was measured slower than `parent`: its best score is below the parent's at the highest
/// rung where both have one. A family not measured at any rung the parent was is not behind: nothing says so.
[[nodiscard]] inline bool family_behind(search_view const& v, std::string const& family,
                                        candidate_record const& parent) {
  for (auto r = static_cast<std::ptrdiff_t>(parent.scores.size()) - 1; r >= 0; --r) {
    auto const& mine = parent.scores[static_cast<std::size_t>(r)];
    if (!mine) continue;
    if (const auto fam = family_best_at(v, family, static_cast<std::size_t>(r))) return *fam < mine->value;
  }
  return false;
}

/// The words of at least five letters of `text`, lower-cased.
[[nodiscard]] inline std::set<std::string> hint_words(std::string const& text) {
  std::set<std::string> out;
  std::string w;
  for (char ch : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      if (w.size() >= 5) out.insert(w);
      w.clear();
    }
  }
  return out;
}

/// The hint for a mutate prompt about `parent`: among the hints that are not the parent's own family nor
/// behind it, the one whose prose shares most words with the parent's diagnosis; ties (and no diagnosis)
/// go to the first from `start` on (the caller rotates it per parent). Null when every hint is excluded.
[[nodiscard]] inline expert_hint const* mutate_hint(std::vector<expert_hint> const& hints, search_view const& v,
                                                    candidate_record const& parent, std::size_t start) {
  std::string diagnosis;
  for (auto const& m : parent.results)
    if (m && !m->diagnosis.empty()) diagnosis = m->diagnosis;
  const auto dwords = hint_words(diagnosis);
  expert_hint const* best = nullptr;
  std::size_t best_score = 0;
  for (std::size_t k = 0; k < hints.size(); ++k) {
    auto const& h = hints[(start + k) % hints.size()];
    if (h.name == parent.cand.family) continue;  // a template's own hint says nothing new
    if (family_behind(v, h.name, parent)) continue;
    std::size_t score = 0;
    for (auto const& w : hint_words(h.prose + " " + h.name)) score += dwords.contains(w) ? 1 : 0;
    if (best == nullptr || score > best_score) {
      best = &h;
      best_score = score;
    }
  }
  return best;
}

}  // namespace kernelbrain::llm
