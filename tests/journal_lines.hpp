// Journal lines written by hand, in the journal's own line format (docs/journal.md), for tests that need a
// journal with a shape no search on this machine makes: model exchanges, measurements at several rungs,
// resumes. Used by test_adopt_cli.cpp and test_report_data.cpp.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <kernelbrain/core/candidate.hpp>
#include <string>

namespace kb_test::journal_lines {

namespace json = boost::json;

inline json::object candidate_json(kernelbrain::candidate const& c) {
  json::object params;
  for (auto const& [name, value] : c.params) params[name] = value;
  return {{"family", c.family},
          {"params", std::move(params)},
          {"source", c.source},
          {"launch", c.launch},
          {"parent", c.parent ? json::value(c.parent->str()) : json::value(nullptr)},
          {"origin", c.origin}};
}

/// An event line; `measured` and `new_best` carry `value` as their score (value and speed-up alike).
inline std::string event_line(std::uint64_t seq, std::string const& kind, kernelbrain::candidate const& c,
                              std::size_t rung, double value = 0) {
  json::object o{{"type", "event"},  {"seq", seq},
                 {"kind", kind},     {"id", c.id.str()},
                 {"rung", rung},     {"verdict", json::object{{"stage", "pass"}, {"detail", ""}}},
                 {"score", nullptr}, {"note", kind == "proposed" ? c.origin : ""}};
  if (kind == "measured" || kind == "new_best") o["score"] = json::object{{"value", value}, {"speedup", value}};
  if (kind == "proposed") o["candidate"] = candidate_json(c);
  return json::serialize(o) + "\n";
}

/// What an exchange line says beyond its prompt key and model.
struct exchange_facts {
  std::string status = "ok";  ///< ok, cut or failed
  std::uint64_t input_tokens = 10, output_tokens = 20;
};

/// The exchange whose reply became `c` (its model_reply event has seq `seq`).
inline std::string exchange_line(std::uint64_t seq, std::string const& key, std::string const& model,
                                 kernelbrain::candidate const& c, exchange_facts const& f = {}) {
  const bool answered = f.status != "failed";
  json::object o{{"type", "exchange"},
                 {"seq", seq},
                 {"key", key},
                 {"occurrence", 0},
                 {"purpose", "explore:x"},
                 {"system", "sys"},
                 {"user", "usr"},
                 {"reply", answered ? "```cuda\n" + c.source + "\n```" : ""},
                 {"status", f.status},
                 {"input_tokens", f.input_tokens},
                 {"output_tokens", f.output_tokens},
                 {"estimated", model == "exchange"},
                 {"cost", 0.0},
                 {"latency_seconds", 1.0},
                 {"attempts", 1},
                 {"model", model},
                 {"finish_reason", answered ? "stop" : ""},
                 {"error", answered ? "" : "the endpoint did not answer"},
                 {"parse_status", answered ? "ok" : ""},
                 {"repairs", json::array{}},
                 {"parse_message", ""},
                 {"candidate", answered ? json::value(c.id.str()) : json::value(nullptr)},
                 {"parent", nullptr}};
  return json::serialize(o) + "\n";
}

inline json::object budget_json() {
  return {{"device_seconds", 60.0}, {"wall_seconds", 0.0}, {"evaluations", 0},
          {"candidates", 0},        {"llm_tokens", 0},     {"llm_cost", 0.0}};
}

inline std::string header_line(std::string const& problem, std::string const& strategy = "default") {
  json::object o{{"type", "header"},
                 {"format", 1},
                 {"kernelbrain", "0.0"},
                 {"date", "2026-11-30T08:15:00Z"},
                 {"problem", problem},
                 {"strategy", strategy},
                 {"seed", 1},
                 {"evaluator", "cuda/test"},
                 {"ladder", "smoke,screen,confirm/0123abcd"},
                 {"budget", budget_json()}};
  return json::serialize(o) + "\n";
}

/// A resume line: the next run segment goes on after event `after_seq`.
inline std::string resume_line(std::uint64_t after_seq) {
  json::object o{{"type", "resume"}, {"after_seq", after_seq}, {"kernelbrain", "0.0"}, {"budget", budget_json()}};
  return json::serialize(o) + "\n";
}

}  // namespace kb_test::journal_lines
