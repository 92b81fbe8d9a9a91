// The default generator without an LLM: expert catalogue templates, coarse-to-fine.
// Explore covers every hint first (its expert default point, then spread-out points);
// mutate moves one parameter of a promoted parent, preferring parameters not yet tried around it,
// and among those the moves (family, parameter, direction) that paid off before: every measured
// mutation credits its move with log(child / parent) of the smoke-rung speedup (observe()).
// The parent's diagnosis (its measurement's kernel findings, core/diagnosis_tags.hpp) steers both:
// a move its family declares for one of the findings (expert_hint::diagnosis_moves) comes first,
// once per parent; and each move is also credited per finding the parent had, so that for a parent
// with findings the move's mean gain under them replaces its gain over all parents where known.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/diagnosis_tags.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/template_space.hpp"

namespace kernelbrain {

class expert_generator {
 public:
  void reseed(std::uint64_t seed) { rng_.reseed(seed); }

  /// Learns which mutations paid: a smoke-rung measurement of a mutated child credits its move, over
  /// all parents and under each finding its parent's diagnosis had when the move was made.
  void observe(event const& e) {
    if (e.kind != event_kind::measured || e.rung != 0 || !e.value || !(e.value->speedup > 0)) return;
    auto m = moves_.find(e.id);
    if (m == moves_.end()) return;
    const double g = std::log(e.value->speedup / m->second.parent_speedup);
    gains_[m->second.key].add(g);
    for (auto const& f : m->second.findings) conditioned_[conditioned_key(m->second.key, f)].add(g);
    moves_.erase(m);
  }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    auto hints = template_hints(v.problem());
    if (hints.empty())
      throw error("problem '" + v.problem().name +
                  "' has no catalogue hint with a template: the expert "
                  "generator needs at least one (or use an LLM generator)");
    std::vector<candidate> out;
    if (req.mode == generation_mode::mutate && !req.parents.empty()) {
      for (std::size_t i = 0; i < req.count; ++i)
        if (auto c = mutate(v, req.parents[i % req.parents.size()], out)) out.push_back(std::move(*c));
      if (!out.empty()) return out;
    }
    // Explore: the seed, then each hint's expert default, then random points, hint by hint.
    if (!seeded_ && v.problem().seed_source) {
      seeded_ = true;
      out.push_back(make_candidate("seed", {}, "seed", std::nullopt, *v.problem().seed_source));
    }
    for (int guard = 0; out.size() < req.count && guard < static_cast<int>(req.count) * 16; ++guard) {
      expert_hint const* h = req.hint.empty() ? hints[next_hint_++ % hints.size()] : find_hint(v.problem(), req.hint);
      if (!h || !h->templ) throw error("unknown catalogue hint '" + req.hint + "'");
      std::optional<parameters> p;
      if (std::find(defaults_done_.begin(), defaults_done_.end(), h->name) == defaults_done_.end()) {
        defaults_done_.push_back(h->name);
        p = central_point(h->templ->space);
      }
      if (!p) p = random_point(h->templ->space, rng_);
      if (!p) continue;
      auto c = instantiate(*h, std::move(*p), "expert:" + h->name);
      if (!known(v, out, c.id)) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  static bool known(search_view const& v, std::vector<candidate> const& out, candidate_id id) {
    return v.contains(id) || std::any_of(out.begin(), out.end(), [&](candidate const& c) { return c.id == id; });
  }

  std::optional<candidate> mutate(search_view const& v, candidate_id parent_id, std::vector<candidate> const& out) {
    auto const* parent = v.find(parent_id);
    if (!parent) return std::nullopt;
    auto const* h = find_hint(v.problem(), parent->cand.family);
    if (!h || !h->templ) return std::nullopt;
    auto const& space = h->templ->space;
    const std::size_t np = space.params.size();
    auto& around = parents_[parent_id];
    around.tried.resize(np, 0);
    const auto findings = findings_of(*parent);
    // Untried parameters first, then single steps before double steps, in random order.
    std::vector<std::pair<std::size_t, int>> moves;
    for (std::size_t i = 0; i < np; ++i)
      for (int st : {-1, 1, -2, 2}) moves.emplace_back(i, st);
    for (std::size_t i = moves.size(); i > 1; --i) std::swap(moves[i - 1], moves[rng_.below(i)]);
    // Before them all: the moves the family declares for a finding of the parent's diagnosis, each
    // until it has been proposed once for this parent (then it takes its place among the others).
    std::vector<std::string const*> answers(moves.size(), nullptr);  // the finding a move answers
    for (std::size_t k = 0; k < moves.size(); ++k) {
      auto [which, st] = moves[k];
      const int dir = value_direction(space.params[which], parent->cand.params, st);
      if (dir == 0 || around.answered.contains(answer_key(which, dir))) continue;
      for (auto const& dm : h->diagnosis_moves)
        if (dm.param == space.params[which].name && dm.direction == dir &&
            std::find(findings.begin(), findings.end(), dm.tag) != findings.end()) {
          answers[k] = &dm.tag;
          break;
        }
    }
    // Among parameters tried equally often: moves that paid before first, then single steps. What a
    // move paid under the parent's findings counts where known, else what it paid under any parent.
    const std::uint64_t family_key = hasher{}.bytes(parent->cand.family).digest();
    auto key_of = [&](std::size_t which, int st) {
      return family_key ^ (which * 0x9E3779B97F4A7C15ULL) ^ (st > 0 ? 1u : 2u);
    };
    std::vector<double> gain(moves.size(), 0.0);
    for (std::size_t k = 0; k < moves.size(); ++k) gain[k] = gain_of(key_of(moves[k].first, moves[k].second), findings);
    std::vector<std::size_t> order(moves.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::make_tuple(answers[a] == nullptr, around.tried[moves[a].first], -gain[a], std::abs(moves[a].second)) <
             std::make_tuple(answers[b] == nullptr, around.tried[moves[b].first], -gain[b], std::abs(moves[b].second));
    });
    // The parent's smoke-rung speedup, against which its children are credited.
    const double parent_speedup = !parent->scores.empty() && parent->scores[0] ? parent->scores[0]->speedup : 0.0;
    for (auto k : order) {
      auto [which, st] = moves[k];
      auto p = step_parameter(space, parent->cand.params, which, st);
      if (!p) continue;
      std::string origin = "mutation:" + space.params[which].name;
      if (answers[k]) origin += "(diagnosis: " + *answers[k] + ")";
      auto c = instantiate(*h, std::move(*p), std::move(origin), parent_id);
      if (known(v, out, c.id)) continue;
      ++around.tried[which];
      if (answers[k])
        around.answered.insert(answer_key(which, value_direction(space.params[which], parent->cand.params, st)));
      if (parent_speedup > 0) moves_[c.id] = move{key_of(which, st), parent_speedup, findings};
      return c;
    }
    return std::nullopt;
  }

  /// The kernel findings of the parent's highest passing measurement with a diagnosis; none without.
  static std::vector<std::string> findings_of(candidate_record const& r) {
    for (std::size_t i = r.results.size(); i-- > 0;)
      if (r.results[i] && r.results[i]->result.passed() && !r.results[i]->diagnosis.empty())
        return diagnosis_findings(r.results[i]->diagnosis);
    return {};
  }

  /// +1 when stepping `st` positions from the current value of `d` in `p` gives a larger value, -1 a
  /// smaller one, 0 when the step leaves the list (or the parameter is not set).
  static int value_direction(parameter_def const& d, parameters const& p, int st) {
    auto cur = p.find(d.name);
    if (!cur) return 0;
    for (std::size_t i = 0; i < d.values.size(); ++i) {
      if (d.values[i] != *cur) continue;
      const auto next = static_cast<std::ptrdiff_t>(i) + st;
      if (next < 0 || next >= static_cast<std::ptrdiff_t>(d.values.size())) return 0;
      return d.values[static_cast<std::size_t>(next)] > *cur ? 1 : -1;  // values are distinct
    }
    return 0;
  }
  static std::uint64_t answer_key(std::size_t which, int dir) { return which * 2 + (dir > 0 ? 1 : 0); }
  static std::uint64_t conditioned_key(std::uint64_t key, std::string const& finding) {
    return hasher{}.integer(key).bytes(finding).digest();
  }

  /// A move's mean gain: over the parent's findings with credit under them (the mean of their means),
  /// else over every parent; 0 when it has no credit.
  double gain_of(std::uint64_t key, std::vector<std::string> const& findings) const {
    double sum = 0;
    int n = 0;
    for (auto const& f : findings)
      if (auto it = conditioned_.find(conditioned_key(key, f)); it != conditioned_.end() && it->second.n > 0) {
        sum += it->second.mean();
        ++n;
      }
    if (n > 0) return sum / static_cast<double>(n);
    if (auto it = gains_.find(key); it != gains_.end() && it->second.n > 0) return it->second.mean();
    return 0.0;
  }

  struct move {
    std::uint64_t key = 0;              ///< (family, parameter, direction)
    double parent_speedup = 0;          ///< the parent's smoke-rung speedup
    std::vector<std::string> findings;  ///< the parent's diagnosis when the move was made
  };
  struct gain_stat {
    double sum = 0;  ///< of log(child / parent) smoke-rung speedups
    int n = 0;
    void add(double g) {
      sum += g;
      ++n;
    }
    [[nodiscard]] double mean() const { return sum / static_cast<double>(n); }
  };
  /// What has been done around one parent.
  struct around_parent {
    std::vector<int> tried;                      ///< mutations proposed, per parameter
    std::unordered_set<std::uint64_t> answered;  ///< declared moves proposed (answer_key)
  };
  std::unordered_map<candidate_id, move> moves_;              ///< proposed mutations not yet measured at the smoke rung
  std::unordered_map<std::uint64_t, gain_stat> gains_;        ///< per move
  std::unordered_map<std::uint64_t, gain_stat> conditioned_;  ///< per move and finding (conditioned_key)

  rng rng_{0};
  bool seeded_ = false;
  std::size_t next_hint_ = 0;
  std::vector<std::string> defaults_done_;
  std::unordered_map<candidate_id, around_parent> parents_;
};

}  // namespace kernelbrain
