// The JSON forms of the journal's records (verdicts, candidates, outcomes, baselines, budgets),
// shared by the journal (io/impl/journal.ipp), recordings and the MPI evaluation pool
// (distribute/mpi_pool.hpp), which sends the same records between ranks. Inline; needs Boost.JSON's
// library source compiled once in the program (kernelbrain/src.hpp or kernelbrain::runtime).
#pragma once
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/evaluation.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/score.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/detail/json_reader.hpp"

namespace kernelbrain::detail::journal_json {

namespace json = boost::json;

/// A line that parses but is not a valid journal line; the reader adds the file and line number.
struct bad_line : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- writing -------------------------------------------------------------------------------------

inline json::value text(std::string_view s) { return json::value(json::string_view(s.data(), s.size())); }

/// JSON has no infinities or NaN: write them as strings so that the line stays valid JSON.
inline json::value number(double d) {
  if (std::isfinite(d)) return json::value(d);
  if (std::isnan(d)) return text("nan");
  return text(d > 0 ? "inf" : "-inf");
}

inline json::value to_json(verdict const& v) {
  json::object o;
  o["stage"] = text(to_string(v.where));
  o["detail"] = text(v.detail);
  return o;
}

inline json::value to_json(budget const& b) {
  json::object o;
  o["device_seconds"] = number(b.device_seconds);
  o["wall_seconds"] = number(b.wall_seconds);
  o["evaluations"] = b.evaluations;
  o["candidates"] = b.candidates;
  o["llm_tokens"] = b.llm_tokens;
  o["llm_cost"] = number(b.llm_cost);
  if (b.llm_answers > 0) o["llm_answers"] = b.llm_answers;  // only where set: older journals read the same
  return o;
}

inline json::value to_json(median_ci const& m) {
  json::object o;
  o["median"] = number(m.median);
  o["low"] = number(m.low);
  o["high"] = number(m.high);
  return o;
}

inline json::value to_json(candidate const& c) {
  json::object o;
  o["family"] = text(c.family);
  json::object params;
  for (auto const& [name, value] : c.params) params[json::string_view(name)] = value;
  o["params"] = std::move(params);
  o["source"] = text(c.source);
  o["launch"] = text(c.launch);
  o["parent"] = c.parent ? text(c.parent->str()) : json::value(nullptr);
  o["origin"] = text(c.origin);
  return o;
}

inline json::value to_json(std::vector<double> const& xs) {
  json::array a;
  a.reserve(xs.size());
  for (double x : xs) a.push_back(number(x));
  return a;
}

inline json::value to_json(pytorch_timing const& t) {
  json::object o;
  o["status"] = text(t.status);
  o["why"] = text(t.why);
  o["python"] = text(t.python);
  o["torch"] = text(t.torch_version);
  o["cuda"] = text(t.cuda_version);
  o["driver"] = t.driver_version;
  o["device"] = text(t.device);
  o["settings"] = text(t.settings);
  o["samples"] = t.samples;
  o["device_seconds"] = number(t.device_seconds);
  o["wall_seconds"] = number(t.wall_seconds);
  json::array shapes;
  for (auto const& s : t.shapes) {
    json::object r;
    r["shape"] = text(s.shape);
    r["index"] = s.index;
    r["eager_seconds"] = number(s.eager_seconds);
    r["compile_seconds"] = number(s.compile_seconds);
    r["checked"] = s.checked;
    r["eager_ok"] = s.eager_ok;
    r["compile_ok"] = s.compile_ok;
    r["eager_rel_err"] = number(s.eager_rel_err);
    r["compile_rel_err"] = number(s.compile_rel_err);
    r["eager_error"] = text(s.eager_error);
    r["compile_error"] = text(s.compile_error);
    r["detail"] = text(s.detail);
    shapes.push_back(std::move(r));
  }
  o["shapes"] = std::move(shapes);
  return o;
}

inline json::object baseline_json(baseline const& b) {
  json::object o;
  o["seconds"] = to_json(b.seconds);
  o["weights"] = to_json(b.weights);
  o["floor_seconds"] = to_json(b.floor_seconds);
  if (b.pytorch) o["pytorch"] = to_json(*b.pytorch);
  return o;
}

inline json::object outcome_json(evaluation_outcome const& out) {
  json::object o;
  o["id"] = text(out.id.str());
  o["rung"] = static_cast<std::uint64_t>(out.rung);
  o["gated"] = out.gated;
  o["gate"] = to_json(out.gate);
  auto const& m = out.m;
  o["verdict"] = to_json(m.result);
  json::array timings;
  for (auto const& t : m.timings) {
    json::object tj;
    tj["shape"] = static_cast<std::uint64_t>(t.shape);
    json::array samples;
    samples.reserve(t.samples.size());
    for (double s : t.samples) samples.push_back(number(s));
    tj["samples"] = std::move(samples);
    tj["median"] = number(t.stats.median);
    tj["low"] = number(t.stats.low);
    tj["high"] = number(t.stats.high);
    timings.push_back(std::move(tj));
  }
  o["timings"] = std::move(timings);
  if (m.res) {
    json::object r;
    r["registers"] = m.res->registers;
    r["spill_bytes"] = m.res->spill_bytes;
    r["shared_bytes"] = m.res->shared_bytes;
    r["occupancy"] = number(m.res->occupancy);
    o["resources"] = std::move(r);
  } else {
    o["resources"] = nullptr;
  }
  if (m.vs_incumbent) {
    json::object ab;
    ab["incumbent"] = text(m.vs_incumbent->incumbent);
    ab["ratio"] = to_json(m.vs_incumbent->ratio);
    o["vs_incumbent"] = std::move(ab);
  } else {
    o["vs_incumbent"] = nullptr;
  }
  json::object profile;
  for (auto const& [name, value] : m.profile) profile[json::string_view(name)] = number(value);
  o["profile"] = std::move(profile);
  o["diagnosis"] = text(m.diagnosis);
  o["device_seconds"] = number(m.device_seconds);
  o["wall_seconds"] = number(out.wall_seconds);
  o["slot"] = static_cast<std::uint64_t>(out.slot);
  o["member"] = text(out.member);
  return o;
}

// ---- reading -------------------------------------------------------------------------------------

inline json::value const& field(json::object const& o, std::string_view key) {
  auto const* v = json_reader::find(o, key);
  if (!v) throw bad_line("field '" + std::string(key) + "' is missing");
  return *v;
}
inline json::object const& as_object(json::value const& v, std::string_view what) {
  if (!v.is_object()) throw bad_line("'" + std::string(what) + "' is not an object");
  return v.get_object();
}
inline json::array const& as_array(json::value const& v, std::string_view what) {
  if (!v.is_array()) throw bad_line("'" + std::string(what) + "' is not an array");
  return v.get_array();
}
inline std::string as_string(json::value const& v, std::string_view what) {
  if (!v.is_string()) throw bad_line("'" + std::string(what) + "' is not a string");
  return std::string(v.get_string().data(), v.get_string().size());
}
inline std::string get_string(json::object const& o, std::string_view key) { return as_string(field(o, key), key); }
inline bool get_bool(json::object const& o, std::string_view key) {
  auto const& v = field(o, key);
  if (!v.is_bool()) throw bad_line("'" + std::string(key) + "' is not true or false");
  return v.get_bool();
}
inline std::uint64_t as_uint(json::value const& v, std::string_view what) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  throw bad_line("'" + std::string(what) + "' is not a non-negative integer");
}
inline std::uint64_t get_uint(json::object const& o, std::string_view key) { return as_uint(field(o, key), key); }
inline std::int64_t as_int(json::value const& v, std::string_view what) {
  if (const auto i = json_reader::to_int64(v)) return *i;
  throw bad_line("'" + std::string(what) + "' is not an integer");
}
inline int get_int(json::object const& o, std::string_view key) {
  const auto v = as_int(field(o, key), key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw bad_line("'" + std::string(key) + "' is out of range");
  return static_cast<int>(v);
}
inline double as_double(json::value const& v, std::string_view what) {
  if (const auto d = json_reader::to_double(v)) return *d;
  if (v.is_string()) {
    auto const& s = v.get_string();
    if (s == "inf") return HUGE_VAL;
    if (s == "-inf") return -HUGE_VAL;
    if (s == "nan") return std::nan("");
  }
  throw bad_line("'" + std::string(what) + "' is not a number");
}
inline double get_double(json::object const& o, std::string_view key) { return as_double(field(o, key), key); }

inline candidate_id as_id(json::value const& v, std::string_view what) {
  std::uint64_t raw = 0;
  if (!from_hex(as_string(v, what), raw)) throw bad_line("'" + std::string(what) + "' is not a 16-digit hex id");
  return candidate_id{raw};
}

inline verdict verdict_from(json::value const& v, std::string_view what) {
  auto const& o = as_object(v, what);
  verdict r;
  const auto name = get_string(o, "stage");
  if (!parse_stage(name, r.where)) throw bad_line("'" + std::string(what) + "' has unknown stage '" + name + "'");
  r.detail = get_string(o, "detail");
  return r;
}

inline budget budget_from(json::value const& v) {
  auto const& o = as_object(v, "budget");
  budget b;
  b.device_seconds = get_double(o, "device_seconds");
  b.wall_seconds = get_double(o, "wall_seconds");
  b.evaluations = get_uint(o, "evaluations");
  b.candidates = get_uint(o, "candidates");
  b.llm_tokens = get_uint(o, "llm_tokens");
  b.llm_cost = get_double(o, "llm_cost");
  if (o.contains("llm_answers")) b.llm_answers = get_uint(o, "llm_answers");
  return b;
}

inline std::vector<double> doubles_from(json::object const& o, std::string_view key) {
  std::vector<double> out;
  for (auto const& v : as_array(field(o, key), key)) out.push_back(as_double(v, key));
  return out;
}

inline pytorch_timing pytorch_timing_from(json::value const& v) {
  auto const& o = as_object(v, "pytorch");
  pytorch_timing t;
  t.status = get_string(o, "status");
  if (t.status != "measured" && t.status != "unavailable" && t.status != "failed")
    throw bad_line("'pytorch.status' is '" + t.status + "', not measured, unavailable or failed");
  t.why = get_string(o, "why");
  t.python = get_string(o, "python");
  t.torch_version = get_string(o, "torch");
  t.cuda_version = get_string(o, "cuda");
  t.driver_version = as_int(field(o, "driver"), "driver");
  t.device = get_string(o, "device");
  t.settings = get_string(o, "settings");
  t.samples = get_int(o, "samples");
  t.device_seconds = get_double(o, "device_seconds");
  t.wall_seconds = get_double(o, "wall_seconds");
  for (auto const& sv : as_array(field(o, "shapes"), "pytorch.shapes")) {
    auto const& r = as_object(sv, "pytorch.shapes[]");
    pytorch_shape s;
    s.shape = get_string(r, "shape");
    s.index = get_uint(r, "index");
    s.eager_seconds = get_double(r, "eager_seconds");
    s.compile_seconds = get_double(r, "compile_seconds");
    s.checked = get_bool(r, "checked");
    s.eager_ok = get_bool(r, "eager_ok");
    s.compile_ok = get_bool(r, "compile_ok");
    s.eager_rel_err = get_double(r, "eager_rel_err");
    s.compile_rel_err = get_double(r, "compile_rel_err");
    s.eager_error = get_string(r, "eager_error");
    s.compile_error = get_string(r, "compile_error");
    s.detail = get_string(r, "detail");
    t.shapes.push_back(std::move(s));
  }
  return t;
}

inline baseline baseline_from(json::object const& o) {
  baseline b;
  b.seconds = doubles_from(o, "seconds");
  b.weights = doubles_from(o, "weights");
  b.floor_seconds = doubles_from(o, "floor_seconds");
  if (auto const* p = o.if_contains("pytorch")) b.pytorch = pytorch_timing_from(*p);
  return b;
}

inline median_ci median_ci_from(json::object const& o) {
  return {get_double(o, "median"), get_double(o, "low"), get_double(o, "high")};
}

inline evaluation_outcome outcome_from(json::object const& o) {
  evaluation_outcome out;
  out.id = as_id(field(o, "id"), "id");
  out.rung = static_cast<std::size_t>(get_uint(o, "rung"));
  out.gated = get_bool(o, "gated");
  out.gate = verdict_from(field(o, "gate"), "gate");
  auto& m = out.m;
  m.result = verdict_from(field(o, "verdict"), "verdict");
  for (auto const& tv : as_array(field(o, "timings"), "timings")) {
    auto const& tj = as_object(tv, "timings[]");
    shape_timing t;
    t.shape = static_cast<std::size_t>(get_uint(tj, "shape"));
    for (auto const& s : as_array(field(tj, "samples"), "samples")) t.samples.push_back(as_double(s, "samples[]"));
    t.stats = median_ci_from(tj);
    m.timings.push_back(std::move(t));
  }
  if (auto const& r = field(o, "resources"); !r.is_null()) {
    auto const& rj = as_object(r, "resources");
    m.res = resources{get_int(rj, "registers"), get_int(rj, "spill_bytes"), get_int(rj, "shared_bytes"),
                      get_double(rj, "occupancy")};
  }
  if (auto const& a = field(o, "vs_incumbent"); !a.is_null()) {
    auto const& aj = as_object(a, "vs_incumbent");
    m.vs_incumbent = ab_comparison{get_string(aj, "incumbent"), median_ci_from(as_object(field(aj, "ratio"), "ratio"))};
  }
  for (auto const& kv : as_object(field(o, "profile"), "profile"))
    m.profile.emplace(std::string(kv.key()), as_double(kv.value(), "profile value"));
  m.diagnosis = get_string(o, "diagnosis");
  m.device_seconds = get_double(o, "device_seconds");
  out.wall_seconds = get_double(o, "wall_seconds");
  // Journals written before evaluator pools have neither: one evaluator, slot 0.
  if (auto const* v = o.if_contains("slot")) out.slot = static_cast<std::size_t>(as_uint(*v, "slot"));
  if (auto const* v = o.if_contains("member")) out.member = as_string(*v, "member");
  return out;
}

/// A candidate as to_json(candidate) wrote it; `id` is the one recorded with it.
inline candidate candidate_from(json::object const& cj, candidate_id id) {
  candidate cand;
  cand.id = id;  // as recorded: the id is what the rest of the journal refers to
  cand.family = get_string(cj, "family");
  for (auto const& kv : as_object(field(cj, "params"), "params"))
    cand.params.set(std::string_view(kv.key().data(), kv.key().size()), as_int(kv.value(), "params value"));
  cand.source = get_string(cj, "source");
  cand.launch = get_string(cj, "launch");
  if (auto const& p = field(cj, "parent"); !p.is_null()) cand.parent = as_id(p, "parent");
  cand.origin = get_string(cj, "origin");
  return cand;
}

}  // namespace kernelbrain::detail::journal_json
