// The MPI evaluation pool's messages: their tags, what each carries, and their JSON encoding (see
// mpi_pool.hpp).
#pragma once
#include <boost/json/serialize.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/detail/json_reader.hpp"
#include "kernelbrain/io/json_codec.hpp"

namespace kernelbrain::mpi {

// ---- the messages ---------------------------------------------------------------------------------
//
// Each message is one MPI_BYTE message whose tag says what it is. Bodies are JSON text, written with
// the journal's encoders (io/json_codec.hpp), so doubles travel exactly and NaN and infinities
// survive. Heartbeats and acknowledgements have an empty body.

namespace wire {

namespace json = boost::json;
namespace jj = kernelbrain::detail::journal_json;

/// Raised when a change makes one rank unable to read another's messages.
inline constexpr int protocol_version = 1;

enum tag : int {
  tag_hello = 0x4b50,  ///< serving rank -> rank 0, once: who it is and what it serves (or why not)
  tag_request,         ///< rank 0 -> serving rank: call one member's method
  tag_reply,           ///< serving rank -> rank 0: the result of one request
  tag_heartbeat,       ///< both ways, every heartbeat_seconds
  tag_stop,            ///< rank 0 -> serving rank: stop serving (body: why)
  tag_stop_ack,        ///< serving rank -> rank 0: stopping; nothing more will come
};

enum class method { inspect, prefetch, build, check, measure, measure_baseline, assure };

[[nodiscard]] constexpr std::string_view to_string(method m) noexcept {
  switch (m) {
    case method::inspect:
      return "inspect";
    case method::prefetch:
      return "prefetch";
    case method::build:
      return "build";
    case method::check:
      return "check";
    case method::measure:
      return "measure";
    case method::measure_baseline:
      return "measure_baseline";
    case method::assure:
      return "assure";
  }
  return "unknown";
}

[[nodiscard]] constexpr bool parse_method(std::string_view name, method& out) noexcept {
  for (method m : {method::inspect, method::prefetch, method::build, method::check, method::measure,
                   method::measure_baseline, method::assure})
    if (to_string(m) == name) {
      out = m;
      return true;
    }
  return false;
}

/// One member a serving rank offers.
struct member_info {
  std::string label;  ///< "cuda:0", "host"
  std::string device;
  std::string fingerprint;
  friend bool operator==(member_info const&, member_info const&) = default;
};

/// A serving rank's first message.
struct hello {
  int protocol = protocol_version;
  std::string node;     ///< its processor name
  std::string problem;  ///< the problem it loaded, by name
  std::vector<member_info> members;
  std::optional<std::string> refused;  ///< set by refuse(): why this rank cannot serve
  friend bool operator==(hello const&, hello const&) = default;
};

/// A call of one member's method, with its arguments (those the method takes; the rest stay empty).
struct request {
  std::uint64_t call = 0;  ///< rank 0's id for the reply
  std::size_t member = 0;  ///< index into the rank's members
  method what = method::build;
  candidate cand;                      ///< all but measure_baseline
  std::vector<std::size_t> shapes;     ///< check: the shapes; measure: those already checked
  int trials = 0;                      ///< check
  std::uint64_t seed = 0;              ///< check, measure, assure
  rung at;                             ///< measure
  std::optional<candidate> incumbent;  ///< measure
};

/// The answer to a request (prefetch has none).
struct reply {
  std::uint64_t call = 0;
  method what = method::build;
  double device_seconds = 0;         ///< the member's take_device_seconds() right after the call
  std::optional<std::string> error;  ///< the serving evaluator threw this; no result then
  verdict v;                         ///< inspect, build, check, assure
  measurement m;                     ///< measure
  baseline b;                        ///< measure_baseline
};

/// The methods whose request carries the seed of their fresh inputs.
[[nodiscard]] constexpr bool carries_seed(method m) noexcept {
  return m == method::check || m == method::measure || m == method::assure;
}

using jj::to_json;

inline json::value to_json(rung const& r) {
  json::object o;
  o["name"] = jj::text(r.name);
  json::array shapes;
  for (auto s : r.shapes) shapes.push_back(static_cast<std::uint64_t>(s));
  o["shapes"] = std::move(shapes);
  o["samples"] = r.samples;
  o["warmup"] = r.warmup;
  o["correctness_trials"] = r.correctness_trials;
  o["interleaved"] = r.interleaved;
  o["profile"] = r.profile;
  o["assure"] = r.assure;
  return o;
}

inline std::vector<std::size_t> indices_from(json::object const& o, std::string_view key) {
  std::vector<std::size_t> out;
  for (auto const& v : jj::as_array(jj::field(o, key), key))
    out.push_back(static_cast<std::size_t>(jj::as_uint(v, key)));
  return out;
}

inline rung rung_from(json::object const& o) {
  rung r;
  r.name = jj::get_string(o, "name");
  r.shapes = indices_from(o, "shapes");
  r.samples = jj::get_int(o, "samples");
  r.warmup = jj::get_int(o, "warmup");
  r.correctness_trials = jj::get_int(o, "correctness_trials");
  r.interleaved = jj::get_bool(o, "interleaved");
  r.profile = jj::get_bool(o, "profile");
  if (o.if_contains("assure")) r.assure = jj::get_bool(o, "assure");  // absent from an older rank 0: assured
  return r;
}

/// A candidate with its id: the serving side refers to it by the id rank 0 knows (a journal's, as
/// recorded), not by one it would recompute.
inline json::value candidate_json(candidate const& c) {
  auto v = to_json(c);
  v.get_object()["id"] = jj::text(c.id.str());
  return v;
}
inline candidate candidate_from_json(json::value const& v, std::string_view what) {
  auto const& o = jj::as_object(v, what);
  return jj::candidate_from(o, jj::as_id(jj::field(o, "id"), "id"));
}

/// `text` as a JSON object; `what` names the message in the error.
inline json::object parse_object(std::string_view text, std::string_view what) {
  kernelbrain::detail::json_reader::document_parser parser;
  auto v = parser.parse(text);
  if (!v)
    throw error(std::string(what) + " is not JSON (" + parser.error().message() + " at byte " +
                std::to_string(parser.stop()) + "): every rank must run the same KernelBrain build");
  if (parser.trailing(text) != std::string_view::npos || !v->is_object())
    throw error(std::string(what) + " is not one JSON object: every rank must run the same KernelBrain build");
  return std::move(v->get_object());
}

/// Runs a decoder, turning the codec's complaint into an error that names the message.
template <class F>
auto decoding(std::string_view what, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (jj::bad_line const& e) {
    throw error(std::string(what) + " cannot be read: " + e.what() +
                ": every rank must run the same KernelBrain build");
  }
}

inline std::string encode(hello const& h) {
  json::object o;
  o["protocol"] = h.protocol;
  o["node"] = jj::text(h.node);
  o["problem"] = jj::text(h.problem);
  json::array members;
  for (auto const& m : h.members) {
    json::object mj;
    mj["label"] = jj::text(m.label);
    mj["device"] = jj::text(m.device);
    mj["fingerprint"] = jj::text(m.fingerprint);
    members.push_back(std::move(mj));
  }
  o["members"] = std::move(members);
  o["refused"] = h.refused ? jj::text(*h.refused) : json::value(nullptr);
  return json::serialize(o);
}

inline hello decode_hello(std::string_view text) {
  return decoding("an MPI hello", [&] {
    const auto o = parse_object(text, "an MPI hello");
    hello h;
    h.protocol = jj::get_int(o, "protocol");
    // A rank of another protocol may write the rest differently: stop at the version, which rank 0
    // reports as such.
    if (h.protocol != protocol_version) return h;
    h.node = jj::get_string(o, "node");
    h.problem = jj::get_string(o, "problem");
    for (auto const& mv : jj::as_array(jj::field(o, "members"), "members")) {
      auto const& mj = jj::as_object(mv, "members[]");
      h.members.push_back(
          {jj::get_string(mj, "label"), jj::get_string(mj, "device"), jj::get_string(mj, "fingerprint")});
    }
    if (auto const& r = jj::field(o, "refused"); !r.is_null()) h.refused = jj::as_string(r, "refused");
    return h;
  });
}

inline std::string encode(request const& r) {
  json::object o;
  o["call"] = r.call;
  o["member"] = static_cast<std::uint64_t>(r.member);
  o["method"] = jj::text(to_string(r.what));
  if (r.what != method::measure_baseline) o["candidate"] = candidate_json(r.cand);
  if (r.what == method::check) {
    json::array shapes;
    for (auto s : r.shapes) shapes.push_back(static_cast<std::uint64_t>(s));
    o["shapes"] = std::move(shapes);
    o["trials"] = r.trials;
  }
  if (carries_seed(r.what)) o["seed"] = r.seed;
  if (r.what == method::measure) {
    o["rung"] = to_json(r.at);
    json::array checked;
    for (auto s : r.shapes) checked.push_back(static_cast<std::uint64_t>(s));
    o["checked"] = std::move(checked);
    o["incumbent"] = r.incumbent ? candidate_json(*r.incumbent) : json::value(nullptr);
  }
  return json::serialize(o);
}

/// The call id of a request, when even that much can be read: the serving rank answers a request it
/// cannot otherwise read with an error for that call.
inline std::optional<std::uint64_t> request_call(std::string_view text) {
  try {
    const auto o = parse_object(text, "an MPI request");
    if (auto const* v = o.if_contains("call"); v && v->is_uint64()) return v->get_uint64();
    if (auto const* v = o.if_contains("call"); v && v->is_int64() && v->get_int64() >= 0)
      return static_cast<std::uint64_t>(v->get_int64());
  } catch (error const&) {
  }
  return std::nullopt;
}

inline request decode_request(std::string_view text) {
  return decoding("an MPI request", [&] {
    const auto o = parse_object(text, "an MPI request");
    request r;
    r.call = jj::get_uint(o, "call");
    r.member = static_cast<std::size_t>(jj::get_uint(o, "member"));
    const auto name = jj::get_string(o, "method");
    if (!parse_method(name, r.what)) throw jj::bad_line("unknown method '" + name + "'");
    if (r.what != method::measure_baseline) r.cand = candidate_from_json(jj::field(o, "candidate"), "candidate");
    if (r.what == method::check) {
      r.shapes = indices_from(o, "shapes");
      r.trials = jj::get_int(o, "trials");
    }
    if (carries_seed(r.what)) r.seed = jj::get_uint(o, "seed");
    if (r.what == method::measure) {
      r.at = rung_from(jj::as_object(jj::field(o, "rung"), "rung"));
      if (o.if_contains("checked")) r.shapes = indices_from(o, "checked");
      if (auto const& inc = jj::field(o, "incumbent"); !inc.is_null())
        r.incumbent = candidate_from_json(inc, "incumbent");
    }
    return r;
  });
}

inline std::string encode(reply const& r) {
  json::object o;
  o["call"] = r.call;
  o["method"] = jj::text(to_string(r.what));
  o["device_seconds"] = jj::number(r.device_seconds);
  o["error"] = r.error ? jj::text(*r.error) : json::value(nullptr);
  if (!r.error) switch (r.what) {
      case method::measure: {
        // An evaluation outcome carries a measurement in the journal's form; the rest of it is unused.
        evaluation_outcome out;
        out.m = r.m;
        o["result"] = jj::outcome_json(out);
        break;
      }
      case method::measure_baseline:
        o["result"] = jj::baseline_json(r.b);
        break;
      default:
        o["result"] = to_json(r.v);
        break;
    }
  return json::serialize(o);
}

inline reply decode_reply(std::string_view text) {
  return decoding("an MPI reply", [&] {
    const auto o = parse_object(text, "an MPI reply");
    reply r;
    r.call = jj::get_uint(o, "call");
    const auto name = jj::get_string(o, "method");
    if (!parse_method(name, r.what)) throw jj::bad_line("unknown method '" + name + "'");
    r.device_seconds = jj::get_double(o, "device_seconds");
    if (auto const& e = jj::field(o, "error"); !e.is_null()) {
      r.error = jj::as_string(e, "error");
      return r;
    }
    auto const& result = jj::field(o, "result");
    switch (r.what) {
      case method::measure:
        r.m = jj::outcome_from(jj::as_object(result, "result")).m;
        break;
      case method::measure_baseline:
        r.b = jj::baseline_from(jj::as_object(result, "result"));
        break;
      default:
        r.v = jj::verdict_from(result, "result");
        break;
    }
    return r;
  });
}

inline std::string encode_stop(std::string const& why) {
  json::object o;
  o["why"] = jj::text(why);
  return json::serialize(o);
}

inline std::string decode_stop(std::string_view text) {
  return decoding("an MPI stop", [&] { return jj::get_string(parse_object(text, "an MPI stop"), "why"); });
}

}  // namespace wire

}  // namespace kernelbrain::mpi
