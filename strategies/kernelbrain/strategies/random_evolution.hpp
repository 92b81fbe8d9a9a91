// Classic (mu+lambda) random evolution at a single fidelity: a baseline without expert knowledge.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/action.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/policies.hpp"
#include "kernelbrain/core/registry.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/defaults/policy_gate.hpp"
#include "kernelbrain/defaults/speedup_scorer.hpp"
#include "kernelbrain/strategies/null_policies.hpp"

namespace kernelbrain {

/// Random points and random mutations of catalogue templates, with no expert preferences:
/// explore draws a template uniformly, then a point uniformly; mutate changes each parameter of a
/// parent with probability 1/(number of parameters) (at least one), to a neighbouring value half of
/// the time and to any value otherwise. Proposes only points the template's space admits.
class evolution_generator {
 public:
  void reseed(std::uint64_t seed) { rng_.reseed(seed); }

  std::vector<candidate> propose(search_view const& v, proposal_request const& req) {
    const auto hints = template_hints(v.problem());
    if (hints.empty())
      throw error("problem '" + v.problem().name +
                  "' has no catalogue hint with a template: random evolution needs one");
    std::vector<candidate> out;
    for (std::size_t i = 0; i < req.count; ++i) {
      std::optional<candidate> c;
      if (req.mode == generation_mode::mutate && !req.parents.empty())
        c = mutate(v, req.parents[i % req.parents.size()], out);
      else
        c = random_candidate(v, hints, out);
      if (c) out.push_back(std::move(*c));
    }
    return out;
  }

 private:
  static constexpr int tries = 32;

  static bool known(search_view const& v, std::vector<candidate> const& out, candidate_id id) {
    return v.contains(id) || std::any_of(out.begin(), out.end(), [&](candidate const& c) { return c.id == id; });
  }

  std::optional<candidate> random_candidate(search_view const& v, std::vector<expert_hint const*> const& hints,
                                            std::vector<candidate> const& out) {
    for (int t = 0; t < tries; ++t) {
      auto const* h = hints[rng_.below(hints.size())];
      auto p = random_point(h->templ->space, rng_);
      if (!p) continue;
      auto c = instantiate(*h, std::move(*p), "random:" + h->name);
      if (!known(v, out, c.id)) return c;
    }
    return std::nullopt;
  }

  std::optional<candidate> mutate(search_view const& v, candidate_id parent_id, std::vector<candidate> const& out) {
    auto const* parent = v.find(parent_id);
    if (!parent) return std::nullopt;
    auto const* h = find_hint(v.problem(), parent->cand.family);
    if (!h || !h->templ || h->templ->space.params.empty()) return std::nullopt;
    auto const& space = h->templ->space;
    const std::size_t np = space.params.size();
    for (int t = 0; t < tries; ++t) {
      parameters p = parent->cand.params;
      std::vector<bool> change(np, false);
      change[rng_.below(np)] = true;
      for (std::size_t j = 0; j < np; ++j)
        if (rng_.below(np) == 0) change[j] = true;
      for (std::size_t j = 0; j < np; ++j) {
        if (!change[j]) continue;
        auto const& d = space.params[j];
        const auto cur = p.find(d.name);
        const auto it = cur ? std::find(d.values.begin(), d.values.end(), *cur) : d.values.end();
        std::size_t pos =
            it == d.values.end() ? rng_.below(d.values.size()) : static_cast<std::size_t>(it - d.values.begin());
        if (rng_.uniform() < 0.5) {
          if (pos + 1 < d.values.size() && (pos == 0 || rng_.uniform() < 0.5))
            ++pos;
          else if (pos > 0)
            --pos;
        } else {
          pos = rng_.below(d.values.size());
        }
        p.set(d.name, d.values[pos]);
      }
      if (p == parent->cand.params || !space.admits(p)) continue;
      std::string changed;  // origin "mutation:<param>[+<param>...]", as the design's lineage expects
      for (std::size_t j = 0; j < np; ++j)
        if (p.find(space.params[j].name) != parent->cand.params.find(space.params[j].name))
          changed += (changed.empty() ? "" : "+") + space.params[j].name;
      auto c = instantiate(*h, std::move(p), "mutation:" + changed, parent_id);
      if (!known(v, out, c.id)) return c;
    }
    return std::nullopt;
  }

  rng rng_{0};
};

struct evolution_options {
  std::size_t population = 16;  ///< mu: the best measured candidates kept as parents
  std::size_t offspring = 8;    ///< lambda: children per generation
  std::size_t tournament = 3;   ///< entrants per tournament (parent selection pressure)

  /// The options "random" takes ("random:population=32,offspring=16").
  [[nodiscard]] static option_table<evolution_options> describe() {
    using o = evolution_options;
    return option_table<o>{}
        .add("population", &o::population, 1, "the best measured candidates kept as parents (mu)")
        .add("offspring", &o::offspring, 1, "children per generation (lambda)")
        .add("tournament", &o::tournament, 1, "entrants per tournament (parent selection pressure)");
  }
};

/// (mu+lambda) evolution, generation by generation at the top rung: fill a random population of mu,
/// then breed lambda children from tournament-selected parents, measure them all, and keep the best
/// mu of parents and children (elitist). When a generation brings nothing new, the next one explores
/// (random immigrants) so the search keeps moving instead of stalling on an exhausted neighbourhood.
class evolution_scheduler {
 public:
  explicit evolution_scheduler(evolution_options o = {}) : opt_(o) {
    opt_.population = std::max<std::size_t>(opt_.population, 1);
    opt_.offspring = std::max<std::size_t>(opt_.offspring, 1);
    opt_.tournament = std::max<std::size_t>(opt_.tournament, 1);
  }

  void reseed(std::uint64_t seed) {
    rng_.reseed(seed);
    population_.clear();
    asked_ = false;
    fruitless_ = false;
  }

  /// Every passing measurement is a potential parent (this scheduler only measures at one rung).
  void observe(event const& e) {
    if (e.kind != event_kind::measured || !e.value) return;
    const entry x{e.value->value, e.id};
    population_.insert(std::upper_bound(population_.begin(), population_.end(), x, better), x);
    if (population_.size() > opt_.population) population_.pop_back();
  }

  action next(search_view const& v) {
    const std::size_t top = v.rungs().size() - 1;
    if (!v.fresh().empty()) return evaluate(v[v.fresh().front()].cand.id, top);
    // Generational: select only once the whole generation has been measured.
    if (v.in_flight_evaluations() > 0) return wait();
    if (asked_) {
      fruitless_ = v.size() == size_at_request_;
      asked_ = false;
    }
    asked_ = true;
    size_at_request_ = v.size();
    if (population_.size() < opt_.population || fruitless_)
      return generate(generation_mode::explore,
                      population_.size() < opt_.population ? opt_.population - population_.size() : opt_.offspring);
    std::vector<candidate_id> parents;
    for (std::size_t i = 0; i < opt_.offspring; ++i) {
      std::size_t winner = rng_.below(population_.size());
      for (std::size_t k = 1; k < opt_.tournament; ++k)
        winner = std::min<std::size_t>(winner, rng_.below(population_.size()));
      parents.push_back(population_[winner].id);
    }
    return generate(generation_mode::mutate, opt_.offspring, std::move(parents));
  }

  /// The settings in use.
  [[nodiscard]] evolution_options const& options() const noexcept { return opt_; }

  /// The current parents, best first.
  [[nodiscard]] std::vector<candidate_id> population() const {
    std::vector<candidate_id> out;
    for (auto const& x : population_) out.push_back(x.id);
    return out;
  }

 private:
  struct entry {
    double value;
    candidate_id id;
  };
  static bool better(entry const& a, entry const& b) {
    return a.value > b.value || (a.value == b.value && a.id < b.id);
  }

  evolution_options opt_;
  rng rng_{0};
  std::vector<entry> population_;  // best first; index order is rank order, so a tournament takes the lowest index
  std::size_t size_at_request_ = 0;
  bool asked_ = false, fruitless_ = false;
};

using random_evolution_policies_t =
    policies<evolution_generator, policy_gate, one_rung_ladder, speedup_scorer, evolution_scheduler>;

/// Random evolution as a whole strategy: default gate, the standard ladder's confirm rung alone
/// (every shape), speedup scorer.
[[nodiscard]] inline random_evolution_policies_t random_evolution_policies(problem const& p, evolution_options o = {}) {
  return {evolution_generator{}, policy_gate::for_problem(p), one_rung_ladder::confirm(p), speedup_scorer{},
          evolution_scheduler{o}};
}

}  // namespace kernelbrain
