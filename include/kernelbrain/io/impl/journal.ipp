// Bodies of kernelbrain/io/journal.hpp: journal lines to and from JSON with Boost.JSON.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/detail/json_reader.hpp"
#include "kernelbrain/io/journal.hpp"
#include "kernelbrain/io/json_codec.hpp"

namespace kernelbrain {
namespace detail::journal_json {

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

inline std::string header_line(run_header const& h, budget const& limits) {
  json::object o;
  o["type"] = "header";
  o["format"] = journal_format;
  o["kernelbrain"] = text(library_version);
  o["date"] = text(utc_now());
  o["problem"] = text(h.problem);
  o["strategy"] = text(h.strategy);
  o["seed"] = h.seed;
  o["evaluator"] = text(h.evaluator);
  o["ladder"] = text(h.ladder);
  o["budget"] = to_json(limits);
  return json::serialize(o);
}

inline std::string resume_line(std::uint64_t after_seq, budget const& limits,
                               std::vector<evaluation_key> const& interrupted = {}) {
  json::object o;
  o["type"] = "resume";
  o["after_seq"] = after_seq;
  if (!interrupted.empty()) {
    json::array a;
    for (auto const& k : interrupted) {
      json::object e;
      e["id"] = text(k.id.str());
      e["rung"] = k.rung;
      a.push_back(std::move(e));
    }
    o["interrupted"] = std::move(a);
  }
  o["kernelbrain"] = text(library_version);
  o["date"] = text(utc_now());
  o["budget"] = to_json(limits);
  return json::serialize(o);
}

inline std::string baseline_line(baseline const& b, std::size_t slot = 0, std::string const& member = {}) {
  json::object o;
  o["type"] = "baseline";
  for (auto& kv : baseline_json(b)) o[kv.key()] = std::move(kv.value());
  if (slot > 0 || !member.empty()) {  // a pool member's; a line without these is slot 0's
    o["slot"] = static_cast<std::uint64_t>(slot);
    o["member"] = text(member);
  }
  return json::serialize(o);
}

inline std::string outcome_line(evaluation_outcome const& out) {
  json::object o;
  o["type"] = "outcome";
  for (auto& kv : outcome_json(out)) o[kv.key()] = std::move(kv.value());
  return json::serialize(o);
}

inline std::string event_line(event const& e, candidate const* cand) {
  json::object o;
  o["type"] = "event";
  o["seq"] = e.seq;
  o["kind"] = text(to_string(e.kind));
  o["id"] = text(e.id.str());
  o["rung"] = static_cast<std::uint64_t>(e.rung);
  o["verdict"] = to_json(e.result);
  if (e.value) {
    json::object s;
    s["value"] = number(e.value->value);
    s["speedup"] = number(e.value->speedup);
    o["score"] = std::move(s);
  } else {
    o["score"] = nullptr;
  }
  o["note"] = text(e.note);
  if (cand) o["candidate"] = to_json(*cand);
  return json::serialize(o);
}

inline std::string exchange_line(model_exchange const& x, std::uint64_t seq) {
  json::object o;
  o["type"] = "exchange";
  o["seq"] = seq;
  o["key"] = text(x.key);
  o["occurrence"] = static_cast<std::uint64_t>(x.occurrence);
  o["purpose"] = text(x.purpose);
  o["system"] = text(x.system);
  o["user"] = text(x.user);
  o["reply"] = text(x.reply);
  o["status"] = text(x.status);
  o["input_tokens"] = x.input_tokens;
  o["output_tokens"] = x.output_tokens;
  o["estimated"] = x.estimated;
  o["cost"] = number(x.cost);
  o["latency_seconds"] = number(x.latency_seconds);
  o["attempts"] = static_cast<std::uint64_t>(x.attempts);
  o["model"] = text(x.model);
  o["finish_reason"] = text(x.finish_reason);
  o["error"] = text(x.error);
  o["parse_status"] = text(x.parse_status);
  json::array repairs;
  for (auto const& r : x.repairs) repairs.push_back(text(r));
  o["repairs"] = std::move(repairs);
  o["parse_message"] = text(x.parse_message);
  o["candidate"] = x.candidate ? text(x.candidate->str()) : json::value(nullptr);
  o["parent"] = x.parent ? text(x.parent->str()) : json::value(nullptr);
  return json::serialize(o);
}

// ---- reading -------------------------------------------------------------------------------------

inline event_kind kind_from(std::string const& name) {
  for (auto k : {event_kind::proposed, event_kind::duplicate, event_kind::dispatched, event_kind::promoted,
                 event_kind::rejected, event_kind::measured, event_kind::new_best, event_kind::generation_failed,
                 event_kind::model_reply, event_kind::suspended, event_kind::stopped})
    if (to_string(k) == name) return k;
  throw bad_line("unknown event kind '" + name + "'");
}

inline journal_event event_from(json::object const& o) {
  journal_event je;
  auto& e = je.e;
  e.seq = get_uint(o, "seq");
  e.kind = kind_from(get_string(o, "kind"));
  e.id = as_id(field(o, "id"), "id");
  e.rung = static_cast<std::size_t>(get_uint(o, "rung"));
  e.result = verdict_from(field(o, "verdict"), "verdict");
  if (auto const& s = field(o, "score"); !s.is_null()) {
    auto const& sj = as_object(s, "score");
    e.value = score{get_double(sj, "value"), get_double(sj, "speedup")};
  }
  e.note = get_string(o, "note");
  if (auto const* c = o.if_contains("candidate")) je.cand = candidate_from(as_object(*c, "candidate"), e.id);
  return je;
}

inline journal_exchange exchange_from(json::object const& o) {
  journal_exchange je;
  je.seq = get_uint(o, "seq");
  auto& x = je.x;
  x.key = get_string(o, "key");
  x.occurrence = static_cast<std::size_t>(get_uint(o, "occurrence"));
  x.purpose = get_string(o, "purpose");
  x.system = get_string(o, "system");
  x.user = get_string(o, "user");
  x.reply = get_string(o, "reply");
  x.status = get_string(o, "status");
  x.input_tokens = get_uint(o, "input_tokens");
  x.output_tokens = get_uint(o, "output_tokens");
  x.estimated = get_bool(o, "estimated");
  x.cost = get_double(o, "cost");
  x.latency_seconds = get_double(o, "latency_seconds");
  x.attempts = static_cast<unsigned>(get_uint(o, "attempts"));
  x.model = get_string(o, "model");
  x.finish_reason = get_string(o, "finish_reason");
  x.error = get_string(o, "error");
  x.parse_status = get_string(o, "parse_status");
  for (auto const& r : as_array(field(o, "repairs"), "repairs")) x.repairs.push_back(as_string(r, "repairs"));
  x.parse_message = get_string(o, "parse_message");
  if (auto const& c = field(o, "candidate"); !c.is_null()) x.candidate = as_id(c, "candidate");
  if (auto const& p = field(o, "parent"); !p.is_null()) x.parent = as_id(p, "parent");
  return je;
}

/// Applies one parsed line to what has been read so far.
inline void apply_line(journal_contents& c, json::value const& v) {
  if (!v.is_object()) throw bad_line("not a JSON object");
  auto const& o = v.get_object();
  const auto type = get_string(o, "type");
  if (type == "header") {
    if (c.has_header()) throw bad_line("a second header: two journals were joined, or two runs wrote one file");
    const auto format = as_int(field(o, "format"), "format");
    if (format > journal_format)
      throw bad_line("journal format " + std::to_string(format) + " is newer than this KernelBrain reads (" +
                     std::to_string(journal_format) + "): use a newer kernelbrain");
    c.header.problem = get_string(o, "problem");
    c.header.strategy = get_string(o, "strategy");
    c.header.seed = get_uint(o, "seed");
    c.header.evaluator = get_string(o, "evaluator");
    c.header.ladder = get_string(o, "ladder");
    c.limits = budget_from(field(o, "budget"));
    c.version = get_string(o, "kernelbrain");
    c.date = get_string(o, "date");
    c.segments = 1;
    return;
  }
  if (!c.has_header())
    throw bad_line("a '" + type + "' line before the header: not the start of a KernelBrain journal");
  if (type == "resume") {
    const auto after = get_uint(o, "after_seq");
    c.limits = budget_from(field(o, "budget"));
    std::erase_if(c.events, [after](journal_event const& je) { return je.e.seq > after; });
    std::erase_if(c.exchanges, [after](journal_exchange const& je) { return je.seq > after; });
    if (auto it = o.find("interrupted"); it != o.end())
      for (auto const& entry : as_array(it->value(), "interrupted")) {
        auto const& k = as_object(entry, "interrupted");
        c.interrupted.emplace_back(
            evaluation_key{as_id(field(k, "id"), "id"), static_cast<std::size_t>(get_uint(k, "rung"))}, after);
      }
    ++c.segments;
  } else if (type == "baseline") {
    // The first one of each pool slot is what the run scored against; a resumed run writes only those
    // of slots it did not have.
    const auto* sv = o.if_contains("slot");
    const std::size_t slot = sv ? static_cast<std::size_t>(as_uint(*sv, "slot")) : 0;
    if (slot == 0) {
      if (!c.reference) c.reference = baseline_from(o);
    } else if (!c.member_references.contains(slot)) {
      c.member_references.emplace(slot, baseline_from(o));
    }
  } else if (type == "outcome") {
    c.outcomes.push_back(outcome_from(o));
  } else if (type == "event") {
    auto je = event_from(o);
    if (!c.events.empty() && je.e.seq <= c.events.back().e.seq)
      throw bad_line("event seq " + std::to_string(je.e.seq) + " does not follow seq " +
                     std::to_string(c.events.back().e.seq) + ": two runs wrote to this journal at once?");
    je.segment = c.segments;
    c.events.push_back(std::move(je));
  } else if (type == "exchange") {
    c.exchanges.push_back(exchange_from(o));
    c.exchanges.back().segment = c.segments;
  }
  // Other types are from a newer minor version: nothing a resume needs.
}

inline std::string quoted(std::filesystem::path const& p) {
  std::string out = "'";  // built with += : GCC 12 -O3 warns falsely (-Wrestrict) on "'" + std::string&&
  out += p.string();
  out += '\'';
  return out;
}

/// "journal 'X' was written by a run with seed 3; this run has seed 4: use --seed 3 or a new journal"
inline void check_header(std::filesystem::path const& path, run_header const& was, run_header const& now) {
  auto differs = [&](std::string_view field_name, std::string const& a, std::string const& b, std::string const& todo) {
    if (a == b) return;
    throw error("journal " + quoted(path) + " was written by a run with " + std::string(field_name) + " " + a +
                "; this run has " + std::string(field_name) + " " + b + ": " + todo);
  };
  differs("problem", was.problem, now.problem, "tune " + was.problem + " or use a new journal");
  differs("strategy", was.strategy, now.strategy, "use --strategy " + was.strategy + " or a new journal");
  differs("seed", std::to_string(was.seed), std::to_string(now.seed),
          "use --seed " + std::to_string(was.seed) + " or a new journal");
  differs("evaluator", was.evaluator, now.evaluator,
          "the backend, device or compiler changed, so the recorded measurements do not apply: use a new journal");
  differs("ladder", was.ladder, now.ladder,
          "the fidelity ladder changed, so the recorded measurements do not apply: use a new journal");
}

inline bool same_budget(budget const& a, budget const& b) {
  return a.device_seconds == b.device_seconds && a.wall_seconds == b.wall_seconds && a.evaluations == b.evaluations &&
         a.candidates == b.candidates && a.llm_tokens == b.llm_tokens && a.llm_cost == b.llm_cost &&
         a.llm_answers == b.llm_answers;
}

/// The finished evaluations, baseline and header a resumed run needs, taken out of a read journal.
/// A later line for the same evaluation wins (there is none unless a journal was edited).
inline resume_state to_resume_state(journal_contents& c) {
  resume_state s;
  s.header = std::move(c.header);
  s.reference = std::move(c.reference);
  s.member_references = std::move(c.member_references);
  for (auto& o : c.outcomes) {
    evaluation_key key{o.id, o.rung};
    s.outcomes.insert_or_assign(key, std::move(o));
  }
  s.last_seq = c.last_seq;
  // A run that ended goes on past its `stopped` event when resumed: the resumed run writes what happens
  // at that seq, so the old stop is superseded. A suspended run goes on from where it was suspended:
  // the events after that (the drain of the evaluations then in flight) are superseded too, as the
  // resumed run does not stop there; their measurements are reused all the same.
  // (A suspended event still in the stream is the last segment's: a resumed run that went past one
  // superseded it.)
  auto suspended = std::find_if(c.events.begin(), c.events.end(),
                                [](journal_event const& je) { return je.e.kind == event_kind::suspended; });
  if (suspended != c.events.end())
    s.last_seq = suspended->e.seq - 1;
  else if (!c.events.empty() && c.events.back().e.kind == event_kind::stopped)
    s.last_seq = c.events.back().e.seq - 1;
  // Dispatched and never finished: in flight when the run died (a kill, a crash, or a candidate that
  // killed the search). Retried once; in flight at a second death, it gets a crash verdict instead.
  for (auto const& je : c.events) {
    if (je.e.kind != event_kind::dispatched) continue;
    const evaluation_key key{je.e.id, je.e.rung};
    if (s.outcomes.contains(key) || std::find(s.interrupted.begin(), s.interrupted.end(), key) != s.interrupted.end())
      continue;
    // Retried before, and a later segment got past the point where it had been in flight: the retry
    // was in flight when that segment died too.
    const bool died_twice = std::any_of(c.interrupted.begin(), c.interrupted.end(),
                                        [&](auto const& ki) { return ki.first == key && c.last_seq > ki.second; });
    if (!died_twice) {
      s.interrupted.push_back(key);
      continue;
    }
    evaluation_outcome o;
    o.id = key.id;
    o.rung = key.rung;
    o.m.result = verdict::reject(stage::crash,
                                 "in flight when the search process died, twice (the run was resumed and it was "
                                 "being evaluated again when the search died again): not retried");
    s.outcomes.insert_or_assign(key, std::move(o));
  }
  return s;
}

}  // namespace detail::journal_json

// ---- public functions ----------------------------------------------------------------------------

journal_contents read_journal(std::filesystem::path const& path) {
  namespace jj = detail::journal_json;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    throw error("cannot read journal " + jj::quoted(path) + ": " +
                (exists ? "the file exists but cannot be opened (check its permissions)" : "no such file"));
  }
  journal_contents c;
  detail::json_reader::document_parser parser;  // one parser for all lines of the file
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (in.eof()) {
      // No newline: the last line was being written when the run was killed. Ignore it.
      c.torn_bytes = line.size();
      break;
    }
    c.complete_bytes += line.size() + 1;
    ++c.lines;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto where = "journal " + jj::quoted(path) + ", line " + std::to_string(number);
    auto v = parser.parse(line);
    if (!v)
      throw error(where + " is corrupt (" + parser.error().message() + " at column " +
                  std::to_string(parser.stop() + 1) +
                  "). Only the last line of a journal may be incomplete (a killed "
                  "run); repair or remove that line, or start a new journal");
    try {
      jj::apply_line(c, *v);
    } catch (jj::bad_line const& b) {
      throw error(where + " is not a valid journal line: " + b.what());
    }
  }
  if (in.bad()) throw error("reading journal " + jj::quoted(path) + " failed (I/O error)");
  c.last_seq = c.events.empty() ? 0 : c.events.back().e.seq;
  return c;
}

resume_state load_journal(std::filesystem::path const& path) {
  auto c = read_journal(path);
  if (!c.has_header())
    throw error("journal " + detail::journal_json::quoted(path) +
                " has no header line: it is empty or not a KernelBrain journal");
  return detail::journal_json::to_resume_state(c);
}

jsonl_journal::jsonl_journal(std::filesystem::path path, run_header header, budget limits, journal_mode mode)
    : path_(std::move(path)), header_(std::move(header)) {
  if (mode == journal_mode::create)
    open_new(limits);
  else
    open_for_resume(limits);
}

jsonl_journal::~jsonl_journal() {
  if (file_) std::fclose(file_);
}

void jsonl_journal::open_new(budget const& limits) {
  namespace jj = detail::journal_json;
  std::error_code ec;
  if (std::filesystem::exists(path_, ec))
    throw error("journal " + jj::quoted(path_) +
                " already exists: pass --resume to continue that run, or choose "
                "another --journal path (a journal is never overwritten)");
  // "x": fail rather than overwrite, should another process create the file in between.
  file_ = std::fopen(path_.c_str(), "wx");
  if (!file_)
    throw error("cannot create journal " + jj::quoted(path_) + ": " + std::strerror(errno) +
                ": check that its directory exists and is writable");
  append_line(jj::header_line(header_, limits));
  throw_if_failed();
}

void jsonl_journal::open_for_resume(budget const& limits) {
  namespace jj = detail::journal_json;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec))
    throw error("journal " + jj::quoted(path_) +
                " does not exist, so there is no run to resume: drop --resume to "
                "start a new run, or check the --journal path");
  auto c = read_journal(path_);
  info_.torn_bytes = c.torn_bytes;
  if (c.torn_bytes > 0) {
    // Appending after a torn line would glue the next line to it: cut it off first.
    std::filesystem::resize_file(path_, c.complete_bytes, ec);
    if (ec)
      throw error("cannot cut the torn last line off journal " + jj::quoted(path_) + ": " + ec.message() +
                  ": check that the file is writable");
  }
  if (!c.has_header()) {
    // Killed before its header was written: nothing was recorded, so this is a fresh start.
    std::filesystem::resize_file(path_, 0, ec);
    file_ = std::fopen(path_.c_str(), "ab");
    if (!file_) throw error("cannot open journal " + jj::quoted(path_) + ": " + std::strerror(errno));
    append_line(jj::header_line(header_, limits));
    throw_if_failed();
    resumed_.emplace();
    resumed_->header = header_;
    return;
  }
  jj::check_header(path_, c.header, header_);
  info_.recorded_seq = c.last_seq;
  info_.previous_limits = c.limits;
  info_.budget_changed = !jj::same_budget(c.limits, limits);
  resume_state s = jj::to_resume_state(c);
  info_.outcomes = s.outcomes.size();
  if (info_.budget_changed) s.last_seq = 0;  // the events are written again from the start
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_)
    throw error("cannot open journal " + jj::quoted(path_) + " for appending: " + std::strerror(errno) +
                ": check that the file is writable");
  append_line(jj::resume_line(s.last_seq, limits, s.interrupted));
  throw_if_failed();
  resumed_ = std::move(s);
}

void jsonl_journal::write_outcome(evaluation_outcome const& o) {
  // The evaluation plane calls this and must not see an exception: keep a failure for later.
  try {
    append_line(detail::journal_json::outcome_line(o));
  } catch (std::exception const& ex) {
    std::lock_guard lk(mu_);
    fail_unlocked(std::string("cannot encode an outcome: ") + ex.what());
  }
}

void jsonl_journal::write_event(event const& e, search_view const& v) {
  throw_if_failed();
  candidate const* cand = nullptr;
  if (e.kind == event_kind::proposed)
    if (auto const* rec = v.find(e.id)) cand = &rec->cand;
  append_line(detail::journal_json::event_line(e, cand));
  throw_if_failed();
}

void jsonl_journal::write_exchange(model_exchange const& x, std::uint64_t seq) {
  throw_if_failed();
  append_line(detail::journal_json::exchange_line(x, seq));
  throw_if_failed();
}

void jsonl_journal::write_baseline(baseline const& b) {
  throw_if_failed();
  append_line(detail::journal_json::baseline_line(b));
  throw_if_failed();
}

void jsonl_journal::write_member_baseline(baseline const& b, std::size_t slot, std::string const& member) {
  throw_if_failed();
  append_line(detail::journal_json::baseline_line(b, slot, member));
  throw_if_failed();
}

void jsonl_journal::throw_if_failed() const {
  std::lock_guard lk(mu_);
  if (!failure_.empty()) throw error(failure_);
}

void jsonl_journal::append_line(std::string line) {
  line += '\n';
  std::lock_guard lk(mu_);
  if (!failure_.empty() || !file_) return;
  // One write and a flush per line: a kill leaves at most this line torn. No fsync: a killed
  // process loses nothing the kernel already holds, and an fsync per line would cost more than
  // a synthetic evaluation.
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    fail_unlocked(std::string("writing journal ") + detail::journal_json::quoted(path_) +
                  " failed: " + std::strerror(errno) + ": free some space or choose another --journal path");
}

void jsonl_journal::fail_unlocked(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
}

}  // namespace kernelbrain
