// The report's data model: the page's data computed from journals (report/data.hpp, docs/report.md).
#include "kernelbrain/report/data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/array.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/backends/cuda/diagnosis.hpp>
#include <kernelbrain/backends/registry.hpp>
#include <kernelbrain/io/json_codec.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/version.hpp>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kernelbrain::report {

namespace {

namespace json = boost::json;

using eval_key = std::pair<std::uint64_t, std::size_t>;  // (candidate id, rung)

/// JSON has no infinities or NaNs: those become null (the page shows "–").
json::value number(double x) { return std::isfinite(x) ? json::value(x) : json::value(nullptr); }

std::string budget_text(budget const& b) {
  std::vector<std::string> parts;
  if (b.device_seconds > 0) parts.push_back(fmt::format("{:g} s device time", b.device_seconds));
  if (b.wall_seconds > 0) parts.push_back(fmt::format("{:g} s wall time", b.wall_seconds));
  if (b.evaluations > 0) parts.push_back(fmt::format("{} evaluations", b.evaluations));
  if (b.candidates > 0) parts.push_back(fmt::format("{} candidates", b.candidates));
  if (b.llm_tokens > 0) parts.push_back(fmt::format("{} LLM tokens", b.llm_tokens));
  if (b.llm_answers > 0) parts.push_back(fmt::format("{} model answers", b.llm_answers));
  if (b.llm_cost > 0) parts.push_back(fmt::format("{:g} LLM cost", b.llm_cost));
  if (parts.empty()) return "unlimited";
  std::string out;
  for (auto const& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

/// One candidate of one journal, as the table, the best-kernel block and the lineage show it.
struct candidate_facts {
  candidate const* cand = nullptr;                            ///< its content (from its `proposed` event)
  std::map<std::size_t, evaluation_outcome const*> outcomes;  ///< by rung; the journal's last line for a rung
  std::optional<score> latest;                                ///< its latest `measured` score
  std::optional<score> best;  ///< its best `measured` score at the highest rung it was measured at
  std::size_t best_rung = 0;
  std::vector<model_exchange const*> written_by;  ///< exchanges whose reply became this candidate
  std::vector<model_exchange const*> attempts;    ///< exchanges that asked to improve it and gave no candidate
  std::size_t children = 0;                       ///< candidates of the journal whose parent it is
  double device_seconds = 0;                      ///< over its outcomes, each (rung) once
};

/// What a progress curve is drawn against: device seconds, or the model's side of a run (tokens spent,
/// prompts answered, rounds: run segments, one per resume, as a campaign steps).
enum class progress_axis { device_seconds, tokens, answers, rounds };

/// A point on an axis, or a run's extent along it.
struct axis_values {
  double device_seconds = 0, tokens = 0, answers = 0, rounds = 0;
  [[nodiscard]] double at(progress_axis a) const {
    switch (a) {
      case progress_axis::tokens:
        return tokens;
      case progress_axis::answers:
        return answers;
      case progress_axis::rounds:
        return rounds;
      case progress_axis::device_seconds:
        break;
    }
    return device_seconds;
  }
};

/// A new incumbent: when (on every axis, cumulative), its speed-up, and the rung it was measured at.
struct progress_point {
  axis_values when;
  double y = 0;
  std::size_t rung = 0;
};

/// What the report takes out of one journal.
struct analysis {
  std::size_t index = 0;
  loaded_journal const* journal = nullptr;
  std::vector<std::string> rungs;
  std::vector<candidate_id> order;  ///< candidates in the order they were proposed
  std::unordered_map<candidate_id, candidate_facts> facts;
  std::vector<progress_point> progress;  ///< one per new_best
  axis_values end;                       ///< the run's extent: device seconds at the last event, all its
                                         ///< exchanges' tokens and answers, its segments
  std::optional<event> incumbent;        ///< the last new_best: the run's best when it ended
  std::string stop;                      ///< the note of the last stopped or suspended event
  std::size_t gated = 0, gate_passed = 0, promoted = 0, new_bests = 0;
  std::vector<std::size_t> measured;  ///< distinct candidates with a `measured` event, per rung

  [[nodiscard]] std::string rung_name(std::size_t r) const {
    return r < rungs.size() ? rungs[r] : fmt::format("rung {}", r);
  }
  [[nodiscard]] journal_contents const& contents() const { return journal->contents; }
};

/// `timings` over PyTorch (`over`: "eager" or "compile"): the geometric mean of PyTorch's time / the
/// kernel's over the shapes where both were measured; nothing when there are none.
std::optional<double> over_pytorch(pytorch_timing const& pt, std::vector<shape_timing> const& timings,
                                   std::string_view over) {
  const auto c = compare_with_pytorch(pt, timings);
  auto const& side = over == "compile" ? c.compile : c.eager;
  if (side.shapes == 0) return std::nullopt;
  return side.geomean;
}

analysis analyse(loaded_journal const& j, std::size_t index, std::string_view over) {
  analysis a;
  a.index = index;
  a.journal = &j;
  auto const& c = j.contents;
  a.rungs = rung_names(c.header.ladder);

  std::map<eval_key, evaluation_outcome const*> by_key;  // a later line for an evaluation wins
  for (auto const& o : c.outcomes) by_key[{o.id.value, o.rung}] = &o;

  for (auto const& je : c.events)
    if (je.e.kind == event_kind::proposed) {
      auto [it, fresh] = a.facts.try_emplace(je.e.id);
      if (fresh) a.order.push_back(je.e.id);
      if (je.cand && !it->second.cand) it->second.cand = &*je.cand;
    }
  for (auto const& [key, o] : by_key)
    if (auto it = a.facts.find(candidate_id{key.first}); it != a.facts.end()) {
      it->second.outcomes[key.second] = o;
      it->second.device_seconds += o->m.device_seconds;
    }

  std::set<eval_key> counted, promoted;
  std::map<std::size_t, std::set<std::uint64_t>> measured_at;
  double cumulative = 0;
  // The model's side, by seq: an exchange counts from its model_reply event on; answered() as the
  // budget's answer axis counts (a failed call asked and was not answered).
  axis_values model;
  std::size_t next_exchange = 0;
  const auto take_exchanges = [&](std::uint64_t up_to) {
    for (; next_exchange < c.exchanges.size() && c.exchanges[next_exchange].seq <= up_to; ++next_exchange) {
      auto const& x = c.exchanges[next_exchange].x;
      model.tokens += static_cast<double>(x.input_tokens + x.output_tokens);
      model.answers += answered(x) ? 1 : 0;
    }
  };
  for (auto const& je : c.events) {
    auto const& e = je.e;
    take_exchanges(e.seq);
    const eval_key key{e.id.value, e.rung};
    switch (e.kind) {
      case event_kind::measured:
      case event_kind::rejected: {
        if (auto it = by_key.find(key); it != by_key.end() && counted.insert(key).second)
          cumulative += it->second->m.device_seconds;
        auto f = a.facts.find(e.id);
        if (e.kind != event_kind::measured || f == a.facts.end()) break;
        measured_at[e.rung].insert(e.id.value);
        if (!e.value) break;
        auto& facts = f->second;
        facts.latest = e.value;
        if (!facts.best || e.rung > facts.best_rung ||
            (e.rung == facts.best_rung && e.value->value > facts.best->value)) {
          facts.best = e.value;
          facts.best_rung = e.rung;
        }
        break;
      }
      case event_kind::promoted:
        promoted.insert(key);
        break;
      case event_kind::new_best:
        if (e.value) {
          std::optional<double> y = e.value->speedup;
          if (over != "reference") {
            // The incumbent's speed-up over PyTorch at the rung it was measured at (nothing to plot where
            // that rung timed no shape PyTorch was timed at).
            y.reset();
            pytorch_timing const* pt = c.reference && c.reference->pytorch ? &*c.reference->pytorch : nullptr;
            if (auto it = by_key.find(key); pt && pt->measured() && it != by_key.end())
              y = over_pytorch(*pt, it->second->m.timings, over);
          }
          if (y) {
            axis_values when = model;
            when.device_seconds = cumulative;
            when.rounds = static_cast<double>(je.segment);
            a.progress.push_back({when, *y, e.rung});
          }
          a.incumbent = e;
          ++a.new_bests;
        }
        break;
      case event_kind::stopped:
      case event_kind::suspended:
        a.stop = fmt::format("{}: {}", to_string(e.kind), e.note);
        break;
      default:
        break;
    }
  }
  take_exchanges(std::numeric_limits<std::uint64_t>::max());
  a.end = model;
  a.end.device_seconds = cumulative;
  a.end.rounds = static_cast<double>(c.segments);
  a.promoted = promoted.size();
  for (auto const& [rung, ids] : measured_at) {
    if (a.measured.size() <= rung) a.measured.resize(rung + 1, 0);
    a.measured[rung] = ids.size();
  }
  for (auto& [id, f] : a.facts) {
    const bool gated = std::any_of(f.outcomes.begin(), f.outcomes.end(), [](auto const& o) { return o.second->gated; });
    const bool passed = std::any_of(f.outcomes.begin(), f.outcomes.end(),
                                    [](auto const& o) { return o.second->gated && o.second->gate.passed(); });
    a.gated += gated ? 1 : 0;
    a.gate_passed += passed ? 1 : 0;
    if (f.cand && f.cand->parent)
      if (auto p = a.facts.find(*f.cand->parent); p != a.facts.end()) ++p->second.children;
  }
  for (auto const& je : c.exchanges) {
    auto const& x = je.x;
    if (x.candidate) {
      if (auto it = a.facts.find(*x.candidate); it != a.facts.end()) it->second.written_by.push_back(&x);
    } else if (x.parent) {
      if (auto it = a.facts.find(*x.parent); it != a.facts.end()) it->second.attempts.push_back(&x);
    }
  }
  return a;
}

// ---- JSON pieces ------------------------------------------------------------------------------

/// The profile metrics worth a glance: those the CUDA backend asks Nsight Compute for, in that order;
/// for another profiler, its first 40 metrics that are not device attributes.
json::object compact_profile(std::map<std::string, double> const& profile) {
  json::object out;
  for (auto name : ncu_metrics)
    if (auto it = profile.find(std::string(name)); it != profile.end()) out[name] = number(it->second);
  if (out.empty())
    for (auto const& [name, value] : profile) {
      if (name.starts_with("device__attribute")) continue;
      out[name] = number(value);
      if (out.size() >= 40) break;
    }
  return out;
}

/// The outcome at the highest rung that has `what` (a diagnosis, a profile), if any.
template <class Has>
evaluation_outcome const* highest_with(candidate_facts const& f, Has has) {
  for (auto it = f.outcomes.rbegin(); it != f.outcomes.rend(); ++it)
    if (has(*it->second)) return it->second;
  return nullptr;
}

/// The verdict of a candidate: that of its outcome at the highest rung it reached.
void put_verdict(json::object& o, analysis const& a, candidate_facts const& f) {
  if (f.outcomes.empty()) {
    o["rung"] = "";
    o["rung_index"] = -1;
    o["stage"] = "not evaluated";
    o["detail"] = "";
    o["at_gate"] = false;
    return;
  }
  auto const& [rung, out] = *f.outcomes.rbegin();
  o["rung"] = a.rung_name(rung);
  o["rung_index"] = rung;
  o["stage"] = to_string(out->reason().where);
  o["detail"] = out->reason().detail;
  o["at_gate"] = !out->gate.passed();
}

json::object candidate_fields(analysis const& a, candidate_id id, candidate_facts const& f) {
  json::object o;
  o["j"] = a.index;
  o["id"] = id.str();
  o["origin"] = f.cand ? f.cand->origin : "";
  o["family"] = f.cand ? f.cand->family : "";
  o["params"] = f.cand ? f.cand->params.to_string() : "";
  o["model"] = !f.written_by.empty();
  put_verdict(o, a, f);
  o["speedup"] = f.latest ? number(f.latest->speedup) : json::value(nullptr);
  o["best_speedup"] = f.best ? number(f.best->speedup) : json::value(nullptr);
  o["best_rung"] = f.best ? json::value(a.rung_name(f.best_rung)) : json::value(nullptr);
  o["device_seconds"] = number(f.device_seconds);
  auto const* diag = highest_with(f, [](evaluation_outcome const& x) { return !x.m.diagnosis.empty(); });
  o["diagnosis"] = diag ? diag->m.diagnosis : "";
  o["diagnosis_rung"] = diag ? json::value(a.rung_name(diag->rung)) : json::value(nullptr);
  auto const* prof = highest_with(f, [](evaluation_outcome const& x) { return !x.m.profile.empty(); });
  o["profile"] = prof ? json::value(compact_profile(prof->m.profile)) : json::value(nullptr);
  o["profile_rung"] = prof ? json::value(a.rung_name(prof->rung)) : json::value(nullptr);
  return o;
}

json::object exchange_json(model_exchange const& x) {
  json::object o;
  o["purpose"] = x.purpose;
  o["model"] = x.model;
  o["status"] = x.status;
  o["error"] = x.error;
  o["finish_reason"] = x.finish_reason;
  o["parse_status"] = x.parse_status;
  o["parse_message"] = x.parse_message;
  json::array repairs;
  for (auto const& r : x.repairs) repairs.emplace_back(r);
  o["repairs"] = std::move(repairs);
  o["input_tokens"] = x.input_tokens;
  o["output_tokens"] = x.output_tokens;
  o["estimated"] = x.estimated;
  o["cost"] = number(x.cost);
  o["latency_seconds"] = number(x.latency_seconds);
  o["system"] = x.system;
  o["user"] = x.user;
  o["reply"] = x.reply;
  o["candidate"] = x.candidate ? json::value(x.candidate->str()) : json::value(nullptr);
  o["parent"] = x.parent ? json::value(x.parent->str()) : json::value(nullptr);
  return o;
}

/// A kernel in full: the table's fields, its source and launch plan, and its measurement at its best
/// rung (per-shape times against the reference, resources, diagnosis, profile).
json::object kernel_json(analysis const& a, candidate_id id) {
  auto const& f = a.facts.at(id);
  json::object o = candidate_fields(a, id, f);
  o["source"] = f.cand ? f.cand->source : "";
  o["launch"] = f.cand ? f.cand->launch : "";
  o["score_value"] = f.best ? number(f.best->value) : json::value(nullptr);
  o["strategy"] = a.contents().header.strategy;
  o["seed"] = std::to_string(a.contents().header.seed);
  evaluation_outcome const* out = nullptr;
  if (auto it = f.outcomes.find(f.best_rung); f.best && it != f.outcomes.end()) out = it->second;
  if (!out && !f.outcomes.empty()) out = f.outcomes.rbegin()->second;
  json::array timings;
  if (out) {
    auto const& ref = a.contents().reference;
    for (auto const& t : out->m.timings) {
      json::object row;
      row["shape"] = t.shape;
      auto const& names = a.journal->shape_names;
      if (t.shape < names.size()) row["shape_name"] = names[t.shape];
      if (t.shape < a.journal->shape_tiers.size()) row["tier"] = a.journal->shape_tiers[t.shape];
      row["seconds"] = number(t.stats.median);
      row["low"] = number(t.stats.low);
      row["high"] = number(t.stats.high);
      row["reference"] = ref && t.shape < ref->seconds.size() ? number(ref->seconds[t.shape]) : json::value(nullptr);
      row["floor"] = ref && t.shape < ref->floor_seconds.size() && ref->floor_seconds[t.shape] > 0
                         ? number(ref->floor_seconds[t.shape])
                         : json::value(nullptr);
      pytorch_shape const* ps = ref && ref->pytorch ? ref->pytorch->at_index(t.shape) : nullptr;
      if (ps && ps->shape.size() > 0 && !row.contains("shape_name")) row["shape_name"] = ps->shape;
      row["eager"] = ps && ps->eager_seconds > 0 ? number(ps->eager_seconds) : json::value(nullptr);
      row["compile"] = ps && ps->compile_seconds > 0 ? number(ps->compile_seconds) : json::value(nullptr);
      timings.push_back(std::move(row));
    }
    if (ref && ref->pytorch && ref->pytorch->measured()) {
      const auto c = compare_with_pytorch(*ref->pytorch, out->m.timings);
      auto side = [](pytorch_comparison::side const& s) -> json::value {
        if (s.shapes == 0) return nullptr;
        json::object so;
        so["geomean"] = number(s.geomean);
        so["min"] = number(s.min);
        so["max"] = number(s.max);
        so["shapes"] = s.shapes;
        so["slower"] = s.slower;
        so["out_of_tolerance"] = s.out_of_tolerance;
        return so;
      };
      json::object pc;
      pc["eager"] = side(c.eager);
      pc["compile"] = side(c.compile);
      o["vs_pytorch"] = std::move(pc);
    }
    o["timings_rung"] = a.rung_name(out->rung);
    if (auto const& r = out->m.res) {
      json::object res;
      res["registers"] = r->registers;
      res["spill_bytes"] = r->spill_bytes;
      res["shared_bytes"] = r->shared_bytes;
      res["occupancy"] = number(r->occupancy);
      o["resources"] = std::move(res);
    }
  }
  o["timings"] = std::move(timings);
  return o;
}

/// The chain of parents from the root to `leaf` (within the journal), with what each node is.
json::object lineage_json(analysis const& a, candidate_id leaf) {
  std::vector<candidate_id> chain;
  std::set<std::uint64_t> seen;
  std::optional<candidate_id> at = leaf;
  json::value missing = nullptr;
  while (at && seen.insert(at->value).second) {
    auto it = a.facts.find(*at);
    if (it == a.facts.end()) {
      missing = at->str();  // a parent this journal never proposed
      break;
    }
    chain.push_back(*at);
    at = it->second.cand ? it->second.cand->parent : std::nullopt;
  }
  std::reverse(chain.begin(), chain.end());
  json::array nodes;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    auto const& f = a.facts.at(chain[i]);
    json::object n = candidate_fields(a, chain[i], f);
    n["other_children"] = f.children - (i + 1 < chain.size() ? 1 : 0);
    json::array written, attempts;
    for (auto const* x : f.written_by) written.push_back(exchange_json(*x));
    for (auto const* x : f.attempts) attempts.push_back(exchange_json(*x));
    n["exchanges"] = std::move(written);
    n["attempts"] = std::move(attempts);
    nodes.push_back(std::move(n));
  }
  json::object o;
  o["j"] = a.index;
  o["nodes"] = std::move(nodes);
  o["missing_parent"] = std::move(missing);
  return o;
}

bool lineage_has_model_node(analysis const& a, candidate_id leaf) {
  std::set<std::uint64_t> seen;
  for (std::optional<candidate_id> at = leaf; at && seen.insert(at->value).second;) {
    auto it = a.facts.find(*at);
    if (it == a.facts.end()) return false;
    if (!it->second.written_by.empty()) return true;
    at = it->second.cand ? it->second.cand->parent : std::nullopt;
  }
  return false;
}

// ---- curves and funnels -----------------------------------------------------------------------

/// A run's best-so-far at `x` on `axis`: its last new_best at or before x (every axis grows with seq).
std::optional<double> value_at(analysis const& a, progress_axis axis, double x) {
  std::optional<double> v;
  for (auto const& p : a.progress) {
    if (p.when.at(axis) > x) break;
    v = p.y;
  }
  return v;
}

/// Points {x, y}; a marked one (a change of the line) gets m: 1, and r: the rung when `rungs` names it.
json::array points(std::vector<std::pair<double, double>> const& xy, std::vector<bool> const& marks,
                   std::vector<std::string> const& rungs) {
  json::array out;
  for (std::size_t i = 0; i < xy.size(); ++i) {
    json::object p;
    p["x"] = number(xy[i].first);
    p["y"] = number(xy[i].second);
    if (i < marks.size() && marks[i]) p["m"] = 1;
    if (i < rungs.size() && !rungs[i].empty()) p["r"] = rungs[i];
    out.push_back(std::move(p));
  }
  return out;
}

/// The group's step functions: over the union of its runs' change points (and their ends), the
/// median, lowest and highest best-so-far of the runs that have one there. Each level is held until
/// the next change point, drawn as a vertical step. A run that ended keeps its last best.
json::object progress_json(std::vector<analysis const*> const& runs, progress_axis axis) {
  std::vector<double> xs;
  for (auto const* r : runs) {
    for (auto const& p : r->progress) xs.push_back(p.when.at(axis));
    if (!r->progress.empty()) xs.push_back(r->end.at(axis));
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  // The three lines share their x values (the filler draws the band between two of them).
  std::vector<std::pair<double, double>> med, lo, hi;
  std::vector<bool> med_marks;
  std::vector<std::string> med_rungs;  // one run: the rung of each new incumbent (for the tooltip)
  auto rung_at = [&](double x) {
    std::string name;
    if (runs.size() == 1)
      for (auto const& p : runs.front()->progress)
        if (p.when.at(axis) <= x) name = runs.front()->rung_name(p.rung);
    return name;
  };
  bool started = false;
  for (double x : xs) {
    std::vector<double> v;
    for (auto const* r : runs)
      if (auto y = value_at(*r, axis, x)) v.push_back(*y);
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    const bool changed =
        !started || median != med.back().second || v.front() != lo.back().second || v.back() != hi.back().second;
    if (!changed) continue;
    if (started) {  // the vertical step: the previous levels up to x
      med.emplace_back(x, med.back().second);
      lo.emplace_back(x, lo.back().second);
      hi.emplace_back(x, hi.back().second);
      med_marks.push_back(false);
      med_rungs.emplace_back();
    }
    med_marks.push_back(!started || median != med.back().second);
    med_rungs.push_back(rung_at(x));
    med.emplace_back(x, median);
    lo.emplace_back(x, v.front());
    hi.emplace_back(x, v.back());
    started = true;
  }
  // Hold the last levels to the end of the longest run.
  double end = 0;
  for (auto const* r : runs) end = std::max(end, r->end.at(axis));
  if (!med.empty() && med.back().first < end) {
    med.emplace_back(end, med.back().second);
    lo.emplace_back(end, lo.back().second);
    hi.emplace_back(end, hi.back().second);
    med_marks.push_back(false);
  }
  json::object o;
  o["median"] = points(med, med_marks, med_rungs);
  if (runs.size() > 1) {
    o["min"] = points(lo, {}, {});
    o["max"] = points(hi, {}, {});
  }
  return o;
}

json::object funnel_json(std::vector<analysis const*> const& runs) {
  std::size_t rungs = 0;
  for (auto const* r : runs) rungs = std::max({rungs, r->rungs.size(), r->measured.size()});
  std::size_t proposed = 0, gated = 0, passed = 0, promoted = 0, bests = 0;
  std::vector<std::size_t> measured(rungs, 0);
  for (auto const* r : runs) {
    proposed += r->facts.size();
    gated += r->gated;
    passed += r->gate_passed;
    promoted += r->promoted;
    bests += r->new_bests;
    for (std::size_t i = 0; i < r->measured.size(); ++i) measured[i] += r->measured[i];
  }
  json::array labels, values;
  auto add = [&](std::string const& label, std::size_t value) {
    labels.emplace_back(label);
    values.emplace_back(value);
  };
  add("proposed", proposed);
  add("gated", gated);
  add("passed the gate", passed);
  for (std::size_t i = 0; i < rungs; ++i) add("measured at " + runs.front()->rung_name(i), measured[i]);
  add("promoted", promoted);
  add("new bests", bests);
  json::object o;
  o["labels"] = std::move(labels);
  o["values"] = std::move(values);
  return o;
}

json::object journal_json(analysis const& a) {
  auto const& c = a.contents();
  json::object o;
  o["file"] = a.journal->file.string();
  o["problem"] = c.header.problem;
  o["strategy"] = c.header.strategy;
  o["seed"] = std::to_string(c.header.seed);
  o["evaluator"] = c.header.evaluator;
  o["ladder"] = c.header.ladder;
  o["date"] = c.date;
  o["version"] = c.version;
  o["budget"] = budget_text(c.limits);
  o["segments"] = c.segments;
  o["torn_bytes"] = c.torn_bytes;
  o["candidates"] = a.facts.size();
  o["evaluations"] = c.outcomes.size();
  o["exchanges"] = c.exchanges.size();
  o["device_seconds"] = number(a.end.device_seconds);
  o["stop"] = a.stop;
  o["baseline"] = c.reference.has_value();
  o["pytorch"] = nullptr;
  if (c.reference && c.reference->pytorch)
    o["pytorch"] = kernelbrain::detail::journal_json::to_json(*c.reference->pytorch);
  if (a.incumbent) {
    json::object b;
    b["id"] = a.incumbent->id.str();
    b["speedup"] = number(a.incumbent->value->speedup);
    b["rung"] = a.rung_name(a.incumbent->rung);
    o["best"] = std::move(b);
  } else {
    o["best"] = nullptr;
  }
  return o;
}

/// A problem's best kernel: each journal's incumbent when it ended (its last new_best), the one at the
/// highest rung, then with the highest score value (scores at different rungs cover different shapes).
analysis const* best_run(std::vector<analysis const*> const& runs) {
  analysis const* best = nullptr;
  for (auto const* r : runs) {
    if (!r->incumbent) continue;
    if (!best || r->incumbent->rung > best->incumbent->rung ||
        (r->incumbent->rung == best->incumbent->rung && r->incumbent->value->value > best->incumbent->value->value))
      best = r;
  }
  return best;
}

/// The best candidate a model wrote: highest rung measured, then highest score value there.
std::optional<std::pair<analysis const*, candidate_id>> best_model_written(std::vector<analysis const*> const& runs) {
  std::optional<std::pair<analysis const*, candidate_id>> best;
  candidate_facts const* bf = nullptr;
  for (auto const* r : runs)
    for (auto id : r->order) {
      auto const& f = r->facts.at(id);
      if (f.written_by.empty() || !f.best) continue;
      if (!bf || f.best_rung > bf->best_rung || (f.best_rung == bf->best_rung && f.best->value > bf->best->value)) {
        best.emplace(r, id);
        bf = &f;
      }
    }
  return best;
}

json::object problem_json(std::string const& name, std::vector<analysis const*> const& runs) {
  json::object o;
  o["name"] = name;
  json::array journals;
  for (auto const* r : runs) journals.emplace_back(r->index);
  o["journals"] = std::move(journals);

  std::vector<std::string> strategies;
  for (auto const* r : runs)
    if (std::find(strategies.begin(), strategies.end(), r->contents().header.strategy) == strategies.end())
      strategies.push_back(r->contents().header.strategy);
  json::array groups;
  for (auto const& s : strategies) {
    std::vector<analysis const*> members;
    for (auto const* r : runs)
      if (r->contents().header.strategy == s) members.push_back(r);
    json::object g;
    g["strategy"] = s;
    json::array seeds, idx;
    for (auto const* r : members) {
      seeds.emplace_back(std::to_string(r->contents().header.seed));
      idx.emplace_back(r->index);
    }
    g["seeds"] = std::move(seeds);
    g["journals"] = std::move(idx);
    g["progress"] = progress_json(members, progress_axis::device_seconds);
    // With a model in the loop, the same curves against what the model spent: tokens, answered prompts
    // and rounds (run segments), for comparing strategies at equal model effort (docs/report.md).
    if (std::any_of(members.begin(), members.end(),
                    [](analysis const* r) { return !r->contents().exchanges.empty(); })) {
      json::object by;
      by["tokens"] = progress_json(members, progress_axis::tokens);
      by["answers"] = progress_json(members, progress_axis::answers);
      by["rounds"] = progress_json(members, progress_axis::rounds);
      g["progress_model"] = std::move(by);
    }
    g["funnel"] = funnel_json(members);
    groups.push_back(std::move(g));
  }
  o["groups"] = std::move(groups);

  o["best"] = nullptr;
  o["lineage"] = nullptr;
  o["model_best"] = nullptr;
  if (auto const* b = best_run(runs)) {
    const auto id = b->incumbent->id;
    if (b->facts.contains(id)) {
      json::object best = kernel_json(*b, id);
      best["incumbent_speedup"] = number(b->incumbent->value->speedup);
      best["incumbent_rung"] = b->rung_name(b->incumbent->rung);
      o["best"] = std::move(best);
      o["lineage"] = lineage_json(*b, id);
      // The best kernel's lineage holds no model-written node: show the best one a model wrote too.
      if (!lineage_has_model_node(*b, id))
        if (auto m = best_model_written(runs)) {
          json::object mb;
          mb["kernel"] = kernel_json(*m->first, m->second);
          mb["lineage"] = lineage_json(*m->first, m->second);
          o["model_best"] = std::move(mb);
        }
    }
  }

  json::array rows;
  for (auto const* r : runs)
    for (auto id : r->order) rows.push_back(candidate_fields(*r, id, r->facts.at(id)));
  o["rows"] = std::move(rows);
  return o;
}

}  // namespace

namespace {

/// The shapes of the problem a journal's header names, where it is found with as many shapes as the
/// journal's baseline (see shape_names).
std::vector<shape> journal_shapes(journal_contents const& j) {
  auto const& fp = j.header.evaluator;
  const auto backend = backends().for_fingerprint(fp);
  if (!backend || !backend->problem_files || !j.reference) return {};
  try {
    auto prob = load_problem(backends().problem_directory(j.header.problem, backend->name));
    if (prob.shapes.size() != j.reference->seconds.size()) return {};
    return std::move(prob.shapes);
  } catch (std::exception const&) {
    return {};
  }
}

}  // namespace

std::vector<std::string> shape_names(journal_contents const& j) {
  std::vector<std::string> names;
  for (auto const& s : journal_shapes(j)) names.push_back(s.name);
  return names;
}

std::vector<loaded_journal> read_journals(std::vector<std::string> const& files) {
  namespace fs = std::filesystem;
  const auto quoted = [](fs::path const& p) { return "'" + p.string() + "'"; };
  std::vector<loaded_journal> out;
  std::set<fs::path> seen;
  for (auto const& f : files) {
    const fs::path p(f);
    std::error_code ec;
    if (fs::is_directory(p, ec)) throw error(fmt::format("journal {} is a folder: give its journal.jsonl", quoted(p)));
    const auto canonical = fs::weakly_canonical(p, ec);
    if (!ec && !seen.insert(canonical).second)
      throw error(fmt::format("journal {} is given twice: each journal is one seed of a run", quoted(p)));
    auto contents = read_journal(p);  // throws kernelbrain::error naming the file (and line)
    if (!contents.has_header())
      throw error(fmt::format(
          "{} is not a KernelBrain journal: it has no header line (an empty file, or a run killed before it "
          "wrote one)",
          quoted(p)));
    std::vector<std::string> names, tiers;
    for (auto const& s : journal_shapes(contents)) {
      names.push_back(s.name);
      tiers.push_back(s.tier);
    }
    out.push_back({p, std::move(contents), std::move(names), std::move(tiers)});
  }
  return out;
}

std::vector<std::string> problem_names(std::vector<loaded_journal> const& journals) {
  std::vector<std::string> problems;
  for (auto const& j : journals)
    if (std::find(problems.begin(), problems.end(), j.contents.header.problem) == problems.end())
      problems.push_back(j.contents.header.problem);
  return problems;
}

std::string default_title(std::vector<loaded_journal> const& journals) {
  const auto problems = problem_names(journals);
  std::string title = "KernelBrain report: ";
  for (std::size_t i = 0; i < problems.size(); ++i) title += (i ? ", " : "") + problems[i];
  return title;
}

std::vector<std::string> rung_names(std::string const& ladder) {
  std::vector<std::string> names;
  const std::string_view list = std::string_view(ladder).substr(0, ladder.find('/'));
  if (list.empty()) return names;
  std::size_t start = 0;
  while (true) {
    const auto comma = list.find(',', start);
    names.emplace_back(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

json::object report_data(std::vector<loaded_journal> const& journals, std::string const& title,
                         std::string const& generated, std::string const& chartjs_version, std::string const& over) {
  if (over != "reference" && over != "eager" && over != "compile")
    throw error("the progress curves are over 'reference', 'eager' or 'compile', not '" + over + "'");
  if (over != "reference")
    for (auto const& j : journals)
      if (!j.contents.reference || !j.contents.reference->pytorch || !j.contents.reference->pytorch->measured())
        throw error(
            fmt::format("{}: the journal holds no PyTorch measurement ({}), so its progress cannot be drawn over {}",
                        j.file.string(),
                        j.contents.reference && j.contents.reference->pytorch ? j.contents.reference->pytorch->why
                                                                              : "written without one",
                        over == "eager" ? "PyTorch eager" : "torch.compile"));
  std::vector<analysis> runs;
  runs.reserve(journals.size());
  for (std::size_t i = 0; i < journals.size(); ++i) runs.push_back(analyse(journals[i], i, over));

  json::object o;
  o["over"] = over;
  o["title"] = title;
  o["generated"] = generated;
  o["version"] = std::string(library_version);
  o["chartjs"] = chartjs_version;
  json::array js;
  for (auto const& r : runs) js.push_back(journal_json(r));
  o["journals"] = std::move(js);

  std::vector<std::string> names;  // problems in the order their first journal was given
  for (auto const& r : runs)
    if (std::find(names.begin(), names.end(), r.contents().header.problem) == names.end())
      names.push_back(r.contents().header.problem);
  json::array problems;
  for (auto const& name : names) {
    std::vector<analysis const*> members;
    for (auto const& r : runs)
      if (r.contents().header.problem == name) members.push_back(&r);
    problems.push_back(problem_json(name, members));
  }
  o["problems"] = std::move(problems);
  return o;
}

namespace {

std::optional<double> num(json::value const* v) {
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nullopt;
}
std::string str(json::value const* v) { return v && v->is_string() ? std::string(v->get_string()) : std::string(); }
std::string ms(std::optional<double> s) { return s ? fmt::format("{:.4g}", *s * 1e3) : std::string("–"); }
std::string times(std::optional<double> a, std::optional<double> b) {
  return a && b && *b > 0 ? fmt::format("{:.2f}x", *a / *b) : std::string("–");
}
/// Markdown table cells take no '|' and no line breaks.
std::string cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

std::string markdown_tables(json::object const& data, std::string const& command) {
  std::string md;
  md += fmt::format("<!-- made by: {} -->\n", command);
  md += fmt::format("Made from journals by `{}` (KernelBrain {}).\n", command, str(data.if_contains("version")));
  auto const& journals = data.at("journals").as_array();
  for (auto const& pv : data.at("problems").as_array()) {
    auto const& p = pv.as_object();
    md += fmt::format("\n### {}\n\n", cell(str(p.if_contains("name"))));
    auto const* bv = p.if_contains("best");
    if (!bv || !bv->is_object()) {
      md += "No candidate passed: nothing to tabulate.\n";
      continue;
    }
    auto const& b = bv->as_object();
    auto const& j = journals.at(static_cast<std::size_t>(num(b.if_contains("j")).value_or(0))).as_object();
    md += fmt::format("Best kernel `{}` ({}{}), measured at {}; strategy {}, seed {}, journal `{}`, evaluator `{}`.\n",
                      str(b.if_contains("id")), cell(str(b.if_contains("family"))),
                      str(b.if_contains("origin")).empty() ? "" : ", " + cell(str(b.if_contains("origin"))),
                      str(b.if_contains("timings_rung")), cell(str(b.if_contains("strategy"))),
                      str(b.if_contains("seed")), cell(str(j.if_contains("file"))),
                      cell(str(j.if_contains("evaluator"))));
    auto const* ptv = j.if_contains("pytorch");
    const bool torch = ptv && ptv->is_object() && str(ptv->as_object().if_contains("status")) == "measured";
    if (torch) {
      auto const& pt = ptv->as_object();
      md += fmt::format("PyTorch: torch {} (CUDA {}, driver {}) on {}, {} samples a shape ({}).\n",
                        cell(str(pt.if_contains("torch"))), cell(str(pt.if_contains("cuda"))),
                        num(pt.if_contains("driver")).value_or(0), cell(str(pt.if_contains("device"))),
                        num(pt.if_contains("samples")).value_or(0), cell(str(pt.if_contains("settings"))));
    } else {
      md += fmt::format("PyTorch: not measured ({}).\n", ptv && ptv->is_object()
                                                             ? cell(str(ptv->as_object().if_contains("why")))
                                                             : std::string("the journal was written without it"));
    }
    md += "\n| shape | reference (ms) | best (ms) |";
    if (torch) md += " eager (ms) | torch.compile (ms) |";
    md += " vs reference |";
    if (torch) md += " vs eager | vs torch.compile |";
    md += " % of floor |\n|---|---:|---:|";
    if (torch) md += "---:|---:|";
    md += "---:|";
    if (torch) md += "---:|---:|";
    md += "---:|\n";
    std::size_t left_out = 0;
    for (auto const& rv : b.at("timings").as_array()) {
      auto const& r = rv.as_object();
      // The correctness shapes are checked, not tuned for speed: the tables are about the benchmark shapes.
      if (const auto tier = str(r.if_contains("tier")); tier == "smoke" || tier == "odd" || tier == "wide") {
        ++left_out;
        continue;
      }
      const auto mine = num(r.if_contains("seconds")), ref = num(r.if_contains("reference"));
      const auto eager = num(r.if_contains("eager")), compile = num(r.if_contains("compile"));
      const auto floor = num(r.if_contains("floor"));
      std::string name = str(r.if_contains("shape_name"));
      if (name.empty()) name = fmt::format("#{}", num(r.if_contains("shape")).value_or(0));
      md += fmt::format("| {} | {} | {} |", cell(name), ms(ref), ms(mine));
      if (torch) md += fmt::format(" {} | {} |", ms(eager), ms(compile));
      md += fmt::format(" {} |", times(ref, mine));
      if (torch) md += fmt::format(" {} | {} |", times(eager, mine), times(compile, mine));
      md += fmt::format(" {} |\n", floor && mine ? fmt::format("{:.1f}%", 100.0 * *floor / *mine) : std::string("–"));
    }
    if (left_out > 0)
      md += fmt::format("\n({} correctness shape{} (tiers smoke, odd) left out: checked, not tuned for speed.)\n",
                        left_out, left_out == 1 ? "" : "s");
    if (auto const* vs = b.if_contains("vs_pytorch"); torch && vs && vs->is_object()) {
      md += "\n";
      for (auto const* key : {"eager", "compile"}) {
        auto const* sv = vs->as_object().if_contains(key);
        if (!sv || !sv->is_object()) continue;
        auto const& s = sv->as_object();
        const auto shapes = num(s.if_contains("shapes")).value_or(0), slower = num(s.if_contains("slower")).value_or(0);
        // One shape: its ratio alone (a geometric mean of one, and a range from a number to itself, say nothing).
        const std::string over =
            shapes > 1 ? fmt::format(" (geometric mean of {} shapes, {:.2f}x to {:.2f}x)", shapes,
                                     num(s.if_contains("min")).value_or(0), num(s.if_contains("max")).value_or(0))
                       : std::string(" (1 shape)");
        md += fmt::format("- Over {}: {:.2f}x{}{}{}.",
                          std::string_view(key) == "eager" ? "PyTorch eager" : "torch.compile",
                          num(s.if_contains("geomean")).value_or(0), over,
                          slower == 0        ? std::string(": faster at every shape")
                          : slower == shapes ? std::string(": **slower than PyTorch at every shape**")
                                             : fmt::format(": **slower at {} of {} shapes**", slower, shapes),
                          s.if_contains("out_of_tolerance") && s.at("out_of_tolerance").as_bool()
                              ? " (PyTorch's output failed the problem's tolerance)"
                              : "");
        md += "\n";
      }
    }
  }
  return md;
}

}  // namespace kernelbrain::report
