// Bodies of kernelbrain/io/recording.hpp: recording lines to and from JSON (Boost.JSON), gzip through
// zlib. Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation).
#pragma once
#include <zlib.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/detail/json_reader.hpp"
#include "kernelbrain/io/impl/journal.ipp"  // the journal's JSON helpers (detail::journal_json)
#include "kernelbrain/io/recording.hpp"

namespace kernelbrain {
namespace detail::recording_json {

namespace json = boost::json;
using namespace detail::journal_json;  // NOLINT(google-build-using-namespace): the shared readers/writers

/// A timing rounded to 5 significant digits: far below any run-to-run noise, and a third of the bytes.
inline json::value timing(double s) {
  if (!std::isfinite(s) || s == 0) return number(s);
  char b[32];
  std::snprintf(b, sizeof b, "%.5g", s);
  return json::value(std::strtod(b, nullptr));
}
inline json::array timings(std::vector<double> const& xs) {
  json::array a;
  a.reserve(xs.size());
  for (double x : xs) a.push_back(timing(x));
  return a;
}
inline std::vector<double> doubles(json::value const& v, std::string_view what) {
  std::vector<double> out;
  for (auto const& x : as_array(v, what)) out.push_back(as_double(x, what));
  return out;
}
inline std::vector<std::size_t> indices(json::value const& v, std::string_view what) {
  std::vector<std::size_t> out;
  for (auto const& x : as_array(v, what)) out.push_back(static_cast<std::size_t>(as_uint(x, what)));
  return out;
}

/// Reads a whole file, gunzipping it when it starts with gzip's magic bytes (zlib reads plain files as they are).
inline std::string slurp(std::filesystem::path const& file) {
  gzFile f = gzopen(file.c_str(), "rb");
  if (!f) {
    std::error_code ec;
    throw error("cannot read recording '" + file.string() +
                "': " + (std::filesystem::exists(file, ec) ? "the file cannot be opened" : "no such file"));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(f, &code);
      gzclose(f);
      throw error("cannot read recording '" + file.string() + "': " + why);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  gzclose(f);
  return out;
}

inline recording_header header_from(json::object const& o) {
  recording_header h;
  h.format = get_string(o, "format");
  if (h.format != recording_format)
    throw bad_line("format '" + h.format + "' is not " + recording_format + " (re-record, or use a matching release)");
  h.problem = get_string(o, "problem");
  std::uint64_t d = 0;
  if (!from_hex(get_string(o, "problem_digest"), d)) throw bad_line("'problem_digest' is not a hex digest");
  h.problem_digest = d;
  h.fingerprint = get_string(o, "fingerprint");
  h.recorded = get_string(o, "recorded");
  h.command = get_string(o, "command");
  h.samples = get_int(o, "samples");
  h.warmup = get_int(o, "warmup");
  h.gate_shapes = indices(field(o, "gate_shapes"), "gate_shapes");
  h.gate_trials = get_int(o, "gate_trials");
  h.space_points = get_uint(o, "space_points");
  h.sample_seed = get_uint(o, "sample_seed");
  for (auto const& n : as_array(field(o, "shape_names"), "shape_names"))
    h.shape_names.push_back(as_string(n, "shape_names"));
  for (auto const& b : as_array(field(o, "baseline_samples"), "baseline_samples"))
    h.baseline_samples.push_back(doubles(b, "baseline_samples"));
  if (h.baseline_samples.size() != h.shape_names.size())
    throw bad_line("'baseline_samples' has " + std::to_string(h.baseline_samples.size()) + " shapes, 'shape_names' " +
                   std::to_string(h.shape_names.size()));
  return h;
}

inline recorded_point point_from(json::object const& o, std::size_t shapes) {
  recorded_point p;
  p.family = get_string(o, "family");
  for (auto const& kv : as_object(field(o, "params"), "params"))
    p.params.set(std::string_view(kv.key().data(), kv.key().size()), as_int(kv.value(), "params value"));
  if (!from_hex(get_string(o, "content"), p.content)) throw bad_line("'content' is not a hex key");
  p.gate = verdict_from(field(o, "gate"), "gate");
  p.compile_seconds = get_double(o, "compile_seconds");
  p.gate_seconds = get_double(o, "gate_seconds");
  if (auto const& r = field(o, "resources"); !r.is_null()) {
    auto const& rj = as_object(r, "resources");
    p.res = resources{get_int(rj, "registers"), get_int(rj, "spill_bytes"), get_int(rj, "shared_bytes"),
                      get_double(rj, "occupancy")};
  }
  p.diagnosis = get_string(o, "diagnosis");
  for (auto const& kv : as_object(field(o, "profile"), "profile"))
    p.profile.emplace(std::string(kv.key()), as_double(kv.value(), "profile value"));
  for (auto const& sv : as_array(field(o, "shapes"), "shapes")) {
    auto const& sj = as_object(sv, "shapes[]");
    recorded_shape s;
    s.shape = static_cast<std::size_t>(get_uint(sj, "shape"));
    if (s.shape >= shapes) throw bad_line("shape index " + std::to_string(s.shape) + " is out of range");
    s.result = verdict_from(field(sj, "verdict"), "verdict");
    s.samples = doubles(field(sj, "samples"), "samples");
    for (double x : s.samples)
      if (!(x > 0) || !std::isfinite(x)) throw bad_line("a timed sample is not a positive number");
    if (s.result.passed() && s.samples.empty()) throw bad_line("a passing shape without samples");
    s.check_seconds = get_double(sj, "check_seconds");
    s.measure_seconds = get_double(sj, "measure_seconds");
    p.shapes.push_back(std::move(s));
  }
  return p;
}

}  // namespace detail::recording_json

KERNELBRAIN_DECL std::uint64_t problem_digest(problem const& p) {
  hasher h;
  h.bytes(p.name).bytes(p.reference_source).bytes(p.reference_launch);
  h.integer(static_cast<std::uint64_t>(std::llround(p.tol.rtol * 1e12)))
      .integer(static_cast<std::uint64_t>(std::llround(p.tol.atol * 1e15)));
  for (auto const& s : p.shapes) {
    h.bytes(s.name).bytes(s.tier).integer(static_cast<std::uint64_t>(std::llround(s.weight * 1e6)));
    for (auto const& [k, v] : s.dims) h.bytes(k).integer(static_cast<std::uint64_t>(v));
  }
  for (auto const& c : p.catalogue) {
    // An adopted kernel (kernelbrain adopt: a fixed entry with provenance) is added after the recordings
    // were made and is no change to what they measured: it stays out, and replay finds its point only if
    // a recording holds its content.
    if (!c.provenance.empty()) continue;
    h.bytes(c.name);
    if (!c.templ) continue;
    h.bytes(c.templ->source).bytes(c.templ->launch);
    for (auto const& d : c.templ->space.params) {
      h.bytes(d.name);
      for (auto v : d.values) h.integer(static_cast<std::uint64_t>(v));
    }
    for (auto const& k : c.templ->space.constraints) h.bytes(k);
  }
  return h.digest();
}

KERNELBRAIN_DECL std::uint64_t content_key(candidate const& c) {
  return hasher{}.bytes(c.source).bytes("\n--launch--\n").bytes(c.launch).digest();
}

KERNELBRAIN_DECL std::string header_line(recording_header const& h) {
  namespace jj = detail::journal_json;
  namespace rj = detail::recording_json;
  boost::json::object o;
  o["format"] = jj::text(h.format);
  o["problem"] = jj::text(h.problem);
  o["problem_digest"] = jj::text(to_hex(h.problem_digest));
  o["fingerprint"] = jj::text(h.fingerprint);
  o["recorded"] = jj::text(h.recorded);
  o["command"] = jj::text(h.command);
  o["samples"] = h.samples;
  o["warmup"] = h.warmup;
  boost::json::array gs;
  for (auto s : h.gate_shapes) gs.push_back(static_cast<std::uint64_t>(s));
  o["gate_shapes"] = std::move(gs);
  o["gate_trials"] = h.gate_trials;
  o["space_points"] = h.space_points;
  o["sample_seed"] = h.sample_seed;
  boost::json::array names, base;
  for (auto const& n : h.shape_names) names.push_back(jj::text(n));
  for (auto const& b : h.baseline_samples) base.push_back(rj::timings(b));
  o["shape_names"] = std::move(names);
  o["baseline_samples"] = std::move(base);
  return boost::json::serialize(o);
}

KERNELBRAIN_DECL std::string point_line(recorded_point const& p) {
  namespace jj = detail::journal_json;
  namespace rj = detail::recording_json;
  boost::json::object o;
  o["family"] = jj::text(p.family);
  boost::json::object params;
  for (auto const& [name, value] : p.params) params[boost::json::string_view(name)] = value;
  o["params"] = std::move(params);
  o["content"] = jj::text(to_hex(p.content));
  o["gate"] = jj::to_json(p.gate);
  o["compile_seconds"] = rj::timing(p.compile_seconds);
  o["gate_seconds"] = rj::timing(p.gate_seconds);
  if (p.res) {
    boost::json::object r;
    r["registers"] = p.res->registers;
    r["spill_bytes"] = p.res->spill_bytes;
    r["shared_bytes"] = p.res->shared_bytes;
    r["occupancy"] = jj::number(p.res->occupancy);
    o["resources"] = std::move(r);
  } else {
    o["resources"] = nullptr;
  }
  o["diagnosis"] = jj::text(p.diagnosis);
  boost::json::object profile;
  for (auto const& [name, value] : p.profile) profile[boost::json::string_view(name)] = jj::number(value);
  o["profile"] = std::move(profile);
  boost::json::array shapes;
  for (auto const& s : p.shapes) {
    boost::json::object sj;
    sj["shape"] = static_cast<std::uint64_t>(s.shape);
    sj["verdict"] = jj::to_json(s.result);
    sj["samples"] = rj::timings(s.samples);
    sj["check_seconds"] = rj::timing(s.check_seconds);
    sj["measure_seconds"] = rj::timing(s.measure_seconds);
    shapes.push_back(std::move(sj));
  }
  o["shapes"] = std::move(shapes);
  return boost::json::serialize(o);
}

KERNELBRAIN_DECL recording read_recording(std::filesystem::path const& file) {
  namespace jj = detail::journal_json;
  namespace rj = detail::recording_json;
  const std::string text = rj::slurp(file);
  recording r;
  detail::json_reader::document_parser parser;
  std::size_t number = 0;
  bool have_header = false;
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    if (nl == std::string::npos) break;  // a last line without its newline: a part killed mid-write
    const std::string_view line(text.data() + at, nl - at);
    at = nl + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto where = "recording '" + file.string() + "', line " + std::to_string(number);
    auto v = parser.parse(line);
    if (!v || parser.trailing(line) != std::string_view::npos)
      throw error(where + " is not one JSON object (" + (v ? std::string("text after it") : parser.error().message()) +
                  ")");
    try {
      auto const& o = jj::as_object(*v, "line");
      if (!have_header) {
        r.header = rj::header_from(o);
        have_header = true;
      } else {
        r.points.push_back(rj::point_from(o, r.header.shape_names.size()));
      }
    } catch (jj::bad_line const& e) {
      throw error(where + ": " + e.what());
    }
  }
  if (!have_header) throw error("recording '" + file.string() + "' is empty (no header line)");
  return r;
}

}  // namespace kernelbrain
