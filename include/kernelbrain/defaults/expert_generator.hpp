// The default generator without an LLM: expert catalogue templates, coarse-to-fine.
// Explore covers every hint first (its expert default point, then spread-out points);
// mutate moves one parameter of a promoted parent, preferring parameters not yet tried around it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/generate/template_space.hpp"

namespace kernelbrain {

class expert_generator {
 public:
  void reseed(std::uint64_t seed) { rng_.reseed(seed); }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    auto hints = template_hints(v.problem());
    if (hints.empty())
      throw error("problem '" + v.problem().name + "' has no catalogue hint with a template: the expert "
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
    std::stable_sort(moves.begin(), moves.end(), [&](auto const& a, auto const& b) {
      return std::make_pair(tried[a.first], std::abs(a.second)) < std::make_pair(tried[b.first], std::abs(b.second));
    });
    for (auto [which, st] : moves) {
      auto p = step_parameter(space, parent->cand.params, which, st);
      if (!p) continue;
      auto c = instantiate(*h, std::move(*p), "mutation:" + space.params[which].name, parent_id);
      if (known(v, out, c.id)) continue;
      ++tried[which];
      return c;
    }
    return std::nullopt;
  }

  rng rng_{0};
  bool seeded_ = false;
  std::size_t next_hint_ = 0;
  std::vector<std::string> defaults_done_;
  std::unordered_map<candidate_id, std::vector<int>> tried_;
};

}  // namespace kernelbrain
