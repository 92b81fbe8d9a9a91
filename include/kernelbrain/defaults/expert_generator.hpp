// The default generator without an LLM: expert catalogue templates, coarse-to-fine.
// Explore covers every hint first (its expert default point, then spread-out points);
// mutate moves one parameter of a promoted parent, preferring parameters not yet tried around it,
// and among those the moves (family, parameter, direction) that paid off before: every measured
// mutation credits its move with log(child / parent) of the smoke-rung speedup (observe()).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/generate/template_space.hpp"

namespace kernelbrain {

class expert_generator {
 public:
  void reseed(std::uint64_t seed) { rng_.reseed(seed); }

  /// Learns which mutations paid: a smoke-rung measurement of a mutated child credits its move.
  void observe(event const& e) {
    if (e.kind != event_kind::measured || e.rung != 0 || !e.value || !(e.value->speedup > 0)) return;
    auto m = moves_.find(e.id);
    if (m == moves_.end()) return;
    auto& g = gains_[m->second.key];
    g.sum += std::log(e.value->speedup / m->second.parent_speedup);
    ++g.n;
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
    auto& tried = tried_[parent_id];
    tried.resize(np, 0);
    // Untried parameters first, then single steps before double steps, in random order.
    std::vector<std::pair<std::size_t, int>> moves;
    for (std::size_t i = 0; i < np; ++i)
      for (int st : {-1, 1, -2, 2}) moves.emplace_back(i, st);
    for (std::size_t i = moves.size(); i > 1; --i) std::swap(moves[i - 1], moves[rng_.below(i)]);
    // Among parameters tried equally often: moves that paid before first, then single steps.
    const std::uint64_t family_key = hasher{}.bytes(parent->cand.family).digest();
    auto key_of = [&](std::size_t which, int st) {
      return family_key ^ (which * 0x9E3779B97F4A7C15ULL) ^ (st > 0 ? 1u : 2u);
    };
    std::vector<double> gain(moves.size(), 0.0);
    for (std::size_t k = 0; k < moves.size(); ++k)
      if (auto it = gains_.find(key_of(moves[k].first, moves[k].second)); it != gains_.end() && it->second.n > 0)
        gain[k] = it->second.sum / it->second.n;
    std::vector<std::size_t> order(moves.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::make_tuple(tried[moves[a].first], -gain[a], std::abs(moves[a].second)) <
             std::make_tuple(tried[moves[b].first], -gain[b], std::abs(moves[b].second));
    });
    // The parent's smoke-rung speedup, against which its children are credited.
    const double parent_speedup = !parent->scores.empty() && parent->scores[0] ? parent->scores[0]->speedup : 0.0;
    for (auto k : order) {
      auto [which, st] = moves[k];
      auto p = step_parameter(space, parent->cand.params, which, st);
      if (!p) continue;
      auto c = instantiate(*h, std::move(*p), "mutation:" + space.params[which].name, parent_id);
      if (known(v, out, c.id)) continue;
      ++tried[which];
      if (parent_speedup > 0) moves_[c.id] = move{key_of(which, st), parent_speedup};
      return c;
    }
    return std::nullopt;
  }

  struct move {
    std::uint64_t key = 0;      ///< (family, parameter, direction)
    double parent_speedup = 0;  ///< the parent's smoke-rung speedup
  };
  struct gain_stat {
    double sum = 0;  ///< of log(child / parent) smoke-rung speedups
    int n = 0;
  };
  std::unordered_map<candidate_id, move> moves_;  ///< proposed mutations not yet measured at the smoke rung
  std::unordered_map<std::uint64_t, gain_stat> gains_;

  rng rng_{0};
  bool seeded_ = false;
  std::size_t next_hint_ = 0;
  std::vector<std::string> defaults_done_;
  std::unordered_map<candidate_id, std::vector<int>> tried_;
};

}  // namespace kernelbrain
