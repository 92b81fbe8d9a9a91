// The MPI evaluation pool: one search process (MPI rank 0) dispatches evaluations to evaluators that
// live on the other ranks (their GPUs, or the host backend), and sees each of them as an ordinary
// kernelbrain::evaluator, a member of its evaluator_pool. Header-only and not part of search.hpp:
// include it where MPI is linked (the CMake target kernelbrain::mpi). The messages are JSON, so the
// program needs Boost.JSON's library source once (kernelbrain::runtime, or kernelbrain/src.hpp).
//
// Threads and MPI. On rank 0 one communication thread makes every MPI call after MPI_Init, so
// MPI_THREAD_SERIALIZED is enough; evaluator calls, from many threads, post their request to it and
// wait for the reply. On a serving rank the thread in serve() makes every MPI call, and one thread per
// member runs that member's calls, so the rank's GPUs work at once. Nothing waits inside MPI: sends
// are MPI_Isend, their buffers kept until MPI_Test says they are done, and a message is received only
// after MPI_Iprobe saw it arrive; an idle loop sleeps half a millisecond. Blocking sends of large
// messages in both directions deadlock, and Open MPI's blocking calls spin a core, which would starve
// the evaluators of ranks that share a machine.
//
// Faults. A serving rank sends a heartbeat every heartbeat_seconds, even while its members are busy
// (a three-minute compute-sanitizer run is not a dead rank). Rank 0 declares a rank lost when it has
// heard nothing from it for lost_after_seconds: the calls waiting on it, and every later call to its
// members, throw evaluator_lost, and the pool re-queues those evaluations on other members. Rank 0
// also sends heartbeats, and a serving rank that hears nothing from rank 0 for that long stops with
// an error rather than wait for ever.
//
// Ending. MPI_Finalize waits for every rank, so a program that cannot end normally (remote_pool's
// constructor threw because a rank never said hello, serve() threw) should end the job with
// environment::abort() rather than return.
#pragma once
// The C API only: Open MPI's C++ bindings are deprecated and need libmpi_cxx at link time.
#if !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1
#endif
#if !defined(MPICH_SKIP_MPICXX)
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <atomic>
#include <boost/json/serialize.hpp>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/evaluator_pool.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/detail/json_reader.hpp"
#include "kernelbrain/io/json_codec.hpp"

namespace kernelbrain::mpi {

struct options {
  double heartbeat_seconds = 1;  ///< serving ranks (and rank 0) send a heartbeat this often
  /// Rank 0 declares a rank lost after this long without any message from it; a serving rank stops
  /// after this long without any message from rank 0.
  double lost_after_seconds = 60;
  /// Rank 0 waits this long for every rank's hello. A serving rank waits this long plus
  /// lost_after_seconds for rank 0's first message: construct the remote_pool early on rank 0.
  double connect_timeout_seconds = 120;
  /// Tests only: while this returns true the rank sends nothing (messages are dropped), but it still
  /// reads what comes and a serving rank obeys rank 0's stop: a rank behind a dead link, as the other
  /// side sees it. Called on the thread that makes the MPI calls (serve()'s; rank 0's pool thread).
  std::function<bool()> test_silence;
};

namespace detail {

/// Throws kernelbrain::error with MPI's own words for a failed call (errors return rather than abort:
/// environment sets MPI_ERRORS_RETURN).
inline void check(int rc, char const* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) n = 0;
  throw error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(n)) +
              " (an MPI failure ends the evaluation pool: see the MPI library's messages, and check that "
              "every rank is still running)");
}

}  // namespace detail

/// RAII for MPI: MPI_Init_thread (MPI_THREAD_SERIALIZED or better) ... MPI_Finalize. One per process,
/// made before anything else uses MPI and destroyed after the remote_pool (or serve()) is done.
class environment {
 public:
  environment(int* argc, char*** argv) {
    int already = 0;
    detail::check(MPI_Initialized(&already), "MPI_Initialized");
    if (already)
      throw error(
          "mpi::environment: MPI is already initialised: make one mpi::environment, before anything "
          "else in the program uses MPI");
    int provided = MPI_THREAD_SINGLE;
    detail::check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw error("the MPI library provides thread level " + std::to_string(provided) +
                  ", below MPI_THREAD_SERIALIZED, which the MPI evaluation pool needs (its communication "
                  "thread is not the main thread): use an MPI built with thread support (Open MPI and MPICH "
                  "are by default)");
    }
    // Failures become kernelbrain::error with MPI's message instead of aborting the job unexplained.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int n = 0;
    if (MPI_Get_processor_name(name, &n) == MPI_SUCCESS && n > 0) node_.assign(name, static_cast<std::size_t>(n));
    if (node_.empty()) node_ = "unknown";
  }
  ~environment() { MPI_Finalize(); }
  environment(environment const&) = delete;
  environment& operator=(environment const&) = delete;

  // Read once at construction: callable from any thread while the pool's thread owns MPI.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] std::string node() const { return node_; }  ///< MPI_Get_processor_name

  /// Ends every rank of the job (MPI_Abort on MPI_COMM_WORLD). For a fatal error only: it does not
  /// wait for the pool's thread, which may be inside MPI at that moment.
  [[noreturn]] void abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return; if it does, do not run destructors that use MPI
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string node_;
};

/// The device key of a member on `node` (a processor name): members that time on the same device of
/// the same machine, whichever rank they belong to, must share it (evaluator_pool makes them take
/// turns), and those of different machines must not. Empty stays empty: a device of its own.
[[nodiscard]] inline std::string device_key(std::string const& node, std::string const& device) {
  return device.empty() ? std::string() : node + "/" + device;
}

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

enum class method { inspect, prefetch, build, check, measure, measure_baseline };

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
  }
  return "unknown";
}

[[nodiscard]] constexpr bool parse_method(std::string_view name, method& out) noexcept {
  for (method m :
       {method::inspect, method::prefetch, method::build, method::check, method::measure, method::measure_baseline})
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
  std::vector<std::size_t> shapes;     ///< check
  int trials = 0;                      ///< check
  std::uint64_t seed = 0;              ///< check, measure
  rung at;                             ///< measure
  std::optional<candidate> incumbent;  ///< measure
};

/// The answer to a request (prefetch has none).
struct reply {
  std::uint64_t call = 0;
  method what = method::build;
  double device_seconds = 0;         ///< the member's take_device_seconds() right after the call
  std::optional<std::string> error;  ///< the serving evaluator threw this; no result then
  verdict v;                         ///< inspect, build, check
  measurement m;                     ///< measure
  baseline b;                        ///< measure_baseline
};

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
  if (r.what == method::check || r.what == method::measure) o["seed"] = r.seed;
  if (r.what == method::measure) {
    o["rung"] = to_json(r.at);
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
    if (r.what == method::check || r.what == method::measure) r.seed = jj::get_uint(o, "seed");
    if (r.what == method::measure) {
      r.at = rung_from(jj::as_object(jj::field(o, "rung"), "rung"));
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

// ---- transport ------------------------------------------------------------------------------------

namespace detail {

using clock = std::chrono::steady_clock;

[[nodiscard]] inline clock::duration seconds(double s) {
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
}

/// "60", "2.5": seconds in messages.
[[nodiscard]] inline std::string show_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

/// How long an idle MPI loop sleeps: short enough for latency, long enough not to spin a core.
inline constexpr auto idle_wait = std::chrono::microseconds(500);

/// Sends in flight. Each body lives in a list node, which never moves, until MPI_Test says its send
/// is done.
class outbox {
 public:
  outbox() = default;
  outbox(outbox const&) = delete;
  outbox& operator=(outbox const&) = delete;
  ~outbox() { abandon(); }

  void send(int dest, int tag, std::string body) {
    if (body.size() > static_cast<std::size_t>(INT_MAX))
      throw error("an MPI message of " + std::to_string(body.size()) +
                  " bytes is over MPI's 2 GiB count limit (a candidate's source this large is a mistake)");
    auto& e = sends_.emplace_back();
    e.body = std::move(body);
    const int rc =
        MPI_Isend(e.body.data(), static_cast<int>(e.body.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &e.request);
    if (rc != MPI_SUCCESS) sends_.pop_back();
    check(rc, "MPI_Isend");
  }

  /// Retires the sends that are done.
  void progress() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      it = done ? sends_.erase(it) : std::next(it);
    }
  }
  [[nodiscard]] bool empty() const noexcept { return sends_.empty(); }

  /// Waits up to `limit` for the sends to be done (a receiver that is gone never takes a large one),
  /// then abandons the rest.
  void drain(clock::duration limit) {
    const auto until = clock::now() + limit;
    while (!sends_.empty() && clock::now() < until) {
      progress();
      if (!sends_.empty()) std::this_thread::sleep_for(idle_wait);
    }
    for (auto& e : sends_) MPI_Request_free(&e.request);  // MPI completes them on its own
    abandon();
  }

 private:
  struct entry {
    std::string body;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  /// Sends still in flight when the loop ends keep their buffers until the process ends (after
  /// MPI_Finalize): MPI may still read them, and freeing them now would be a use after free in MPI.
  void abandon() noexcept {
    if (sends_.empty()) return;
    static std::mutex mu;
    static std::list<entry> kept;
    std::lock_guard lk(mu);
    kept.splice(kept.end(), sends_);  // moves no buffer: list nodes stay where they are
  }
  std::list<entry> sends_;
};

struct message {
  int source = 0;
  int tag = 0;
  std::string body;
};

/// The next message from `source` (or MPI_ANY_SOURCE) that has arrived, or nothing: never waits for
/// one to come.
inline std::optional<message> poll(int source) {
  int arrived = 0;
  MPI_Status st{};
  check(MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &st), "MPI_Iprobe");
  if (!arrived) return std::nullopt;
  int n = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
  message m{st.MPI_SOURCE, st.MPI_TAG, std::string(static_cast<std::size_t>(n), '\0')};
  check(MPI_Recv(m.body.data(), n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  return m;
}

// ---- rank 0 -------------------------------------------------------------------------------------

/// Rank 0's side: the communication thread, the calls waiting on it, and what it knows of each rank.
class hub {
 public:
  hub(environment const& env, options o) : o_(std::move(o)), ranks_(static_cast<std::size_t>(env.size())) {
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].rank = static_cast<int>(r);
    thread_ = std::thread([this] { run(); });
  }
  ~hub() { shutdown(); }
  hub(hub const&) = delete;
  hub& operator=(hub const&) = delete;

  /// Every rank's hello, once all have said it or connect_timeout_seconds have passed (nothing for a
  /// rank that did not say it in time). Index: rank; [0] is empty.
  std::vector<std::optional<wire::hello>> await_hellos() {
    std::unique_lock lk(mu_);
    const auto all = [&] {
      for (std::size_t r = 1; r < ranks_.size(); ++r)
        if (!ranks_[r].said) return false;
      return true;
    };
    changed_.wait_until(lk, clock::now() + seconds(o_.connect_timeout_seconds), [&] { return all() || finished_; });
    if (!broken_.empty()) throw error(broken_);
    std::vector<std::optional<wire::hello>> out(ranks_.size());
    for (std::size_t r = 1; r < ranks_.size(); ++r) out[r] = ranks_[r].said;
    return out;
  }

  /// "rank R (node X)", X as rank R named its node in its hello: for messages.
  [[nodiscard]] std::string where(int r) const {
    std::lock_guard lk(mu_);
    return where_locked(r);
  }

  /// Sends `req` to rank `r` and waits for its reply. Throws evaluator_lost when the rank is lost
  /// (before or while waiting), kernelbrain::error once the pool is shut down.
  wire::reply call(int r, wire::request req) {
    req.call = next_call_.fetch_add(1);
    auto body = wire::encode(req);
    std::future<wire::reply> f;
    {
      std::lock_guard lk(mu_);
      refuse_if_closed(r);
      std::promise<wire::reply> p;
      f = p.get_future();
      pending_.emplace(req.call, pending{r, std::move(p)});
      queue_.push_back({r, wire::tag_request, std::move(body)});
    }
    wake_.notify_one();
    return f.get();
  }

  /// Sends `req` without waiting for anything (prefetch: a hint, dropped when the rank is lost).
  void post(int r, wire::request req) {
    req.call = next_call_.fetch_add(1);
    auto body = wire::encode(req);
    {
      std::lock_guard lk(mu_);
      if (ranks_.at(static_cast<std::size_t>(r)).lost || stop_asked_ || finished_) return;
      queue_.push_back({r, wire::tag_request, std::move(body)});
    }
    wake_.notify_one();
  }

  [[nodiscard]] std::size_t lost_ranks() const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (auto const& r : ranks_) n += r.lost ? 1 : 0;
    return n;
  }

  /// Tells every rank to stop and waits for the acknowledgements of those still alive (at most
  /// lost_after_seconds), then ends the communication thread. Idempotent.
  void shutdown() {
    std::call_once(shut_, [this] {
      {
        std::lock_guard lk(mu_);
        stop_asked_ = true;
      }
      wake_.notify_one();
      if (thread_.joinable()) thread_.join();
    });
  }

 private:
  struct rank_state {
    int rank = 0;
    // Guarded by mu_:
    std::optional<wire::hello> said;
    bool lost = false;
    std::string lost_why;
    // The communication thread's own:
    clock::time_point last_heard{};
    bool stop_sent = false;
    bool acked = false;
  };
  struct pending {
    int rank = 0;
    std::promise<wire::reply> reply;
  };
  struct outgoing {
    int rank = 0;
    int tag = 0;
    std::string body;
  };

  [[nodiscard]] std::string where_locked(int r) const {
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    return "rank " + std::to_string(r) + " (node " + (s.said ? s.said->node : std::string("unknown")) + ")";
  }

  void refuse_if_closed(int r) const {
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    if (s.lost) throw evaluator_lost(s.lost_why);
    if (stop_asked_ || finished_)
      throw error("the MPI evaluation pool is shut down: " + where_locked(r) +
                  " takes no more calls (finish the search before remote_pool::shutdown())");
  }

  /// The communication thread: the only one that calls MPI on rank 0 once the pool exists.
  void run() {
    outbox out;
    try {
      auto last_beat = clock::now();
      std::optional<clock::time_point> stop_at;
      for (;;) {
        bool busy = false;
        const auto now = clock::now();
        for (int i = 0; i < 64; ++i) {  // bounded, so that sends and liveness still get their turn
          auto m = poll(MPI_ANY_SOURCE);
          if (!m) break;
          busy = true;
          on_message(*m, now, out);
        }
        std::deque<outgoing> todo;
        bool stop = false;
        {
          std::lock_guard lk(mu_);
          todo.swap(queue_);
          stop = stop_asked_;
        }
        for (auto& t : todo) {
          busy = true;
          if (!alive(t.rank)) continue;  // its callers already have their evaluator_lost
          send(out, t.rank, t.tag, std::move(t.body));
        }
        if (stop && !stop_at) {
          begin_stop(out);
          stop_at = now;
        }
        if (!stop_at && now - last_beat >= seconds(o_.heartbeat_seconds)) {
          for (std::size_t r = 1; r < ranks_.size(); ++r)
            if (alive(static_cast<int>(r))) send(out, static_cast<int>(r), wire::tag_heartbeat, {});
          last_beat = now;
        }
        check_liveness(now, out);
        out.progress();
        if (stop_at && stopped(now, *stop_at)) break;
        if (!busy) {
          std::unique_lock lk(mu_);
          wake_.wait_for(lk, idle_wait, [&] { return !queue_.empty() || (stop_asked_ && !stop_at); });
        }
      }
      out.drain(seconds(std::min(5.0, o_.lost_after_seconds)));
    } catch (std::exception const& e) {
      fail_everything(std::string("the MPI evaluation pool's communication thread failed: ") + e.what());
    } catch (...) {
      fail_everything("the MPI evaluation pool's communication thread failed with an unknown exception");
    }
    {
      std::lock_guard lk(mu_);
      finished_ = true;
    }
    changed_.notify_all();
  }

  /// Every send of the communication thread: none while options::test_silence says so.
  void send(outbox& out, int r, int tag, std::string body) {
    if (!(o_.test_silence && o_.test_silence())) out.send(r, tag, std::move(body));
  }

  /// Said hello and not lost.
  bool alive(int r) {
    std::lock_guard lk(mu_);
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    return s.said && !s.lost;
  }

  void on_message(message& m, clock::time_point now, outbox& out) {
    if (m.source <= 0 || static_cast<std::size_t>(m.source) >= ranks_.size()) return;
    auto& s = ranks_[static_cast<std::size_t>(m.source)];
    s.last_heard = now;  // any message at all shows the rank is alive
    switch (m.tag) {
      case wire::tag_hello: {
        wire::hello h;
        try {
          h = wire::decode_hello(m.body);
        } catch (error const& e) {
          h.refused = std::string("its hello cannot be read: ") + e.what();
        }
        {
          std::lock_guard lk(mu_);
          s.said = std::move(h);
        }
        changed_.notify_all();
        break;
      }
      case wire::tag_reply: {
        if (!alive(m.source)) break;  // a late reply from a lost rank: its calls were re-queued
        wire::reply r;
        try {
          r = wire::decode_reply(m.body);
        } catch (error const& e) {
          lose(
              s,
              where(m.source) + " sent a reply this rank cannot read (" + e.what() + "): its evaluations are re-queued",
              out);
          break;
        }
        std::optional<std::promise<wire::reply>> p;
        {
          std::lock_guard lk(mu_);
          if (auto it = pending_.find(r.call); it != pending_.end() && it->second.rank == m.source) {
            p = std::move(it->second.reply);
            pending_.erase(it);
          }
        }
        if (p) p->set_value(std::move(r));
        break;
      }
      case wire::tag_stop_ack:
        s.acked = true;
        break;
      default:  // heartbeats, and anything else, only show that the rank is alive
        break;
    }
  }

  void check_liveness(clock::time_point now, outbox& out) {
    for (std::size_t r = 1; r < ranks_.size(); ++r) {
      auto& s = ranks_[r];
      if (!alive(s.rank) || s.acked || now - s.last_heard <= seconds(o_.lost_after_seconds)) continue;
      lose(s,
           where(s.rank) + " sent nothing for " + show_seconds(o_.lost_after_seconds) +
               " s: its evaluations are re-queued on the other members (if that rank was only busy, not gone, "
               "raise the lost-after time)",
           out);
    }
  }

  /// Rank `s` is gone: its waiting calls throw evaluator_lost, later ones too, and it is told to stop
  /// in case it is only slow.
  void lose(rank_state& s, std::string const& why, outbox& out) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      if (s.lost) return;
      s.lost = true;
      s.lost_why = why;
      for (auto it = pending_.begin(); it != pending_.end();)
        if (it->second.rank == s.rank) {
          failed.push_back(std::move(it->second.reply));
          it = pending_.erase(it);
        } else {
          ++it;
        }
    }
    for (auto& p : failed) p.set_exception(std::make_exception_ptr(evaluator_lost(why)));
    if (!s.stop_sent) {
      s.stop_sent = true;
      send(out, s.rank, wire::tag_stop, wire::encode_stop("rank 0 gave up on this rank: " + why));
    }
    changed_.notify_all();
  }

  void begin_stop(outbox& out) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      for (auto& [id, p] : pending_) failed.push_back(std::move(p.reply));
      pending_.clear();
    }
    for (auto& p : failed)
      p.set_exception(std::make_exception_ptr(
          error("the MPI evaluation pool was shut down while this call waited for its reply (finish the search "
                "before remote_pool::shutdown())")));
    for (std::size_t r = 1; r < ranks_.size(); ++r) {
      auto& s = ranks_[r];
      if (s.stop_sent) continue;
      s.stop_sent = true;
      send(out, s.rank, wire::tag_stop, wire::encode_stop("the search is over"));
    }
  }

  /// Every rank that is alive has acknowledged the stop, or it has waited long enough. Ranks that
  /// never said hello are not waited for: they have their stop message when they come.
  bool stopped(clock::time_point now, clock::time_point since) {
    if (now - since > seconds(o_.lost_after_seconds)) return true;
    for (std::size_t r = 1; r < ranks_.size(); ++r)
      if (alive(static_cast<int>(r)) && !ranks_[r].acked) return false;
    return true;
  }

  void fail_everything(std::string const& why) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      broken_ = why;
      for (auto& s : ranks_)
        if (s.rank != 0 && !s.lost) {
          s.lost = true;
          s.lost_why = why;
        }
      for (auto& [id, p] : pending_) failed.push_back(std::move(p.reply));
      pending_.clear();
    }
    for (auto& p : failed) p.set_exception(std::make_exception_ptr(evaluator_lost(why)));
  }

  options o_;
  mutable std::mutex mu_;
  std::condition_variable wake_;     ///< the communication thread: work queued, or stop asked
  std::condition_variable changed_;  ///< a hello came, or the communication thread ended
  std::vector<rank_state> ranks_;    ///< by rank; [0] is this one, unused
  std::deque<outgoing> queue_;
  std::map<std::uint64_t, pending> pending_;
  std::atomic<std::uint64_t> next_call_{1};
  bool stop_asked_ = false;
  bool finished_ = false;
  std::string broken_;  ///< why the communication thread failed
  std::once_flag shut_;
  std::thread thread_;  // last: started once everything it uses exists
};

/// One member of a serving rank, as rank 0's evaluators see it.
class remote_evaluator final : public evaluator {
 public:
  remote_evaluator(hub& h, int rank, std::size_t member, std::string fingerprint)
      : hub_(&h), rank_(rank), member_(member), fingerprint_(std::move(fingerprint)) {}

  [[nodiscard]] std::string fingerprint() const override { return fingerprint_; }
  [[nodiscard]] verdict inspect(candidate const& c) override { return call(with(wire::method::inspect, c)).v; }
  void prefetch(candidate const& c) override { hub_->post(rank_, with(wire::method::prefetch, c)); }
  [[nodiscard]] verdict build(candidate const& c) override { return call(with(wire::method::build, c)).v; }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    auto r = with(wire::method::check, c);
    r.shapes.assign(shapes.begin(), shapes.end());
    r.trials = trials;
    r.seed = seed;
    return call(std::move(r)).v;
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& at, measure_request const& req) override {
    auto r = with(wire::method::measure, c);
    r.at = at;
    r.seed = req.seed;
    if (req.incumbent) r.incumbent = *req.incumbent;
    return std::move(call(std::move(r)).m);
  }
  /// The serving member times the reference of its own problem (every rank loads the same one; the
  /// hello's problem name is checked).
  [[nodiscard]] baseline measure_baseline(problem const&) override {
    wire::request r;
    r.what = wire::method::measure_baseline;
    return std::move(call(std::move(r)).b);
  }
  [[nodiscard]] double take_device_seconds() override {
    std::lock_guard lk(mu_);
    return std::exchange(device_seconds_, 0.0);
  }

 private:
  [[nodiscard]] wire::request with(wire::method m, candidate const& c) const {
    wire::request r;
    r.member = member_;
    r.what = m;
    r.cand = c;
    return r;
  }
  wire::reply call(wire::request r) {
    r.member = member_;
    auto rep = hub_->call(rank_, std::move(r));
    {
      std::lock_guard lk(mu_);
      device_seconds_ += rep.device_seconds;  // charged even when the call failed: the device was used
    }
    if (rep.error) throw error(*rep.error);
    return rep;
  }

  hub* hub_;
  int rank_;
  std::size_t member_;
  std::string fingerprint_;
  std::mutex mu_;
  double device_seconds_ = 0;
};

// ---- serving ranks ------------------------------------------------------------------------------

/// A serving rank: its MPI loop on the calling thread, one thread per member, one for prefetches.
class server {
 public:
  server(environment const& env, std::span<pool_member const> members, problem const* prob, std::string problem_name,
         std::optional<std::string> refused, options o)
      : env_(&env),
        members_(members.begin(), members.end()),
        prob_(prob),
        problem_name_(std::move(problem_name)),
        refused_(std::move(refused)),
        o_(std::move(o)),
        queues_(members_.size()) {}
  server(server const&) = delete;
  server& operator=(server const&) = delete;
  ~server() { stop_threads(); }

  void run() {
    if (env_->rank() == 0)
      throw error(
          "mpi::serve() and mpi::refuse() are for ranks 1 and up: rank 0 runs the search with a "
          "mpi::remote_pool");
    wire::hello h;
    h.node = env_->node();
    h.problem = problem_name_;
    h.refused = refused_;
    if (!refused_ && members_.empty()) h.refused = "it has no evaluators to serve";
    if (!h.refused) {
      try {
        for (auto const& m : members_) {
          if (!m.ev) throw error("pool member '" + m.label + "' has no evaluator");
          h.members.push_back({m.label, m.device, m.ev->fingerprint()});
        }
      } catch (std::exception const& e) {
        h.members.clear();
        h.refused = std::string("its evaluators cannot say what they are: ") + e.what();
      }
    }
    refused_ = h.refused;
    if (!refused_) start_threads();

    outbox out;
    if (!silent()) out.send(0, wire::tag_hello, wire::encode(h));
    const auto hello_at = clock::now();
    std::optional<clock::time_point> last_heard;
    auto last_beat = hello_at;
    std::string failure;
    for (;;) {
      bool busy = false;
      bool stop = false;
      while (auto m = poll(0)) {
        busy = true;
        last_heard = clock::now();
        if (m->tag == wire::tag_stop) {
          stop = true;
          break;
        }
        if (m->tag == wire::tag_request) on_request(m->body, out);
      }
      std::vector<std::string> replies;
      {
        std::lock_guard lk(mu_);
        replies.swap(replies_);
      }
      for (auto& r : replies)
        if (!silent()) out.send(0, wire::tag_reply, std::move(r));
      busy = busy || !replies.empty();
      const auto now = clock::now();
      if (now - last_beat >= seconds(o_.heartbeat_seconds)) {
        if (!silent()) out.send(0, wire::tag_heartbeat, {});
        last_beat = now;
      }
      out.progress();
      if (stop) {
        if (!silent()) out.send(0, wire::tag_stop_ack, {});  // before the members finish: rank 0 need not wait
        break;
      }
      const auto limit =
          last_heard ? seconds(o_.lost_after_seconds) : seconds(o_.connect_timeout_seconds + o_.lost_after_seconds);
      if (now - last_heard.value_or(hello_at) > limit) {
        failure =
            "rank " + std::to_string(env_->rank()) + " (node " + env_->node() + "): rank 0 sent nothing for " +
            show_seconds(last_heard ? o_.lost_after_seconds : o_.connect_timeout_seconds + o_.lost_after_seconds) +
            " s (" + (last_heard ? "it is gone or stuck" : "it never started its remote_pool") +
            "), so this rank stops serving; see rank 0's output";
        break;
      }
      if (!busy) {
        std::unique_lock lk(mu_);
        replied_.wait_for(lk, idle_wait, [&] { return !replies_.empty(); });
      }
    }
    // A member inside a call finishes it (the evaluator is the caller's); meanwhile this thread keeps
    // MPI moving: rank 0 may be receiving a large reply of ours, which needs this side's progress.
    begin_stopping();
    for (;;) {
      {
        std::lock_guard lk(mu_);
        if (running_ == 0) break;
      }
      out.progress();
      std::this_thread::sleep_for(idle_wait);
    }
    stop_threads();
    out.drain(seconds(std::min(5.0, o_.lost_after_seconds)));
    if (!failure.empty()) throw error(failure);
  }

 private:
  [[nodiscard]] bool silent() const { return o_.test_silence && o_.test_silence(); }

  void on_request(std::string const& body, outbox& out) {
    wire::request r;
    try {
      r = wire::decode_request(body);
    } catch (error const& e) {
      const auto call = wire::request_call(body);
      if (!call) throw error(std::string("rank 0 sent a request without a call id: ") + e.what());
      answer_now(*call, wire::method::build, e.what(), out);
      return;
    }
    if (refused_) {
      if (r.what != wire::method::prefetch)
        answer_now(r.call, r.what, "rank " + std::to_string(env_->rank()) + " refused to serve: " + *refused_, out);
      return;
    }
    if (r.member >= members_.size()) {
      if (r.what != wire::method::prefetch)
        answer_now(r.call, r.what,
                   "rank " + std::to_string(env_->rank()) + " has no member " + std::to_string(r.member) +
                       " (it serves " + std::to_string(members_.size()) + "): every rank must run the same build",
                   out);
      return;
    }
    {
      std::lock_guard lk(mu_);
      (r.what == wire::method::prefetch ? prefetches_ : queues_[r.member]).push_back(std::move(r));
    }
    work_.notify_all();
  }

  void answer_now(std::uint64_t call, wire::method what, std::string why, outbox& out) {
    wire::reply rep;
    rep.call = call;
    rep.what = what;
    rep.error = std::move(why);
    if (!silent()) out.send(0, wire::tag_reply, wire::encode(rep));
  }

  void start_threads() {
    running_ = members_.size() + 1;
    const auto ended = [this] {
      std::lock_guard lk(mu_);
      --running_;
    };
    for (std::size_t i = 0; i < members_.size(); ++i)
      threads_.emplace_back([this, i, ended] {
        serve_member(i);
        ended();
      });
    threads_.emplace_back([this, ended] {
      serve_prefetches();
      ended();
    });
  }

  /// Queued calls are dropped; the threads end once their current call is done.
  void begin_stopping() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
      for (auto& q : queues_) q.clear();
      prefetches_.clear();
    }
    work_.notify_all();
  }

  void stop_threads() {
    begin_stopping();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  void serve_member(std::size_t i) {
    auto& ev = *members_[i].ev;
    for (;;) {
      wire::request r;
      {
        std::unique_lock lk(mu_);
        work_.wait(lk, [&] { return stopping_ || !queues_[i].empty(); });
        if (stopping_) return;
        r = std::move(queues_[i].front());
        queues_[i].pop_front();
      }
      auto body = wire::encode(execute(ev, r));
      {
        std::lock_guard lk(mu_);
        if (stopping_) return;
        replies_.push_back(std::move(body));
      }
      replied_.notify_one();
    }
  }

  wire::reply execute(evaluator& ev, wire::request const& r) {
    wire::reply out;
    out.call = r.call;
    out.what = r.what;
    try {
      switch (r.what) {
        case wire::method::inspect:
          out.v = ev.inspect(r.cand);
          break;
        case wire::method::build:
          out.v = ev.build(r.cand);
          break;
        case wire::method::check:
          out.v = ev.check(r.cand, r.shapes, r.trials, r.seed);
          break;
        case wire::method::measure:
          out.m = ev.measure(r.cand, r.at, measure_request{r.seed, r.incumbent ? &*r.incumbent : nullptr});
          break;
        case wire::method::measure_baseline:
          if (!prob_)
            throw error("rank " + std::to_string(env_->rank()) +
                        " cannot measure the baseline: it serves with mpi::serve(env, members, problem_name), "
                        "which has no problem to time; call mpi::serve(env, members, problem_name, problem) there");
          out.b = ev.measure_baseline(*prob_);
          break;
        case wire::method::prefetch:
          break;
      }
    } catch (std::exception const& e) {
      out.error = e.what();
    } catch (...) {
      out.error = "the evaluator of rank " + std::to_string(env_->rank()) + " threw an unknown exception";
    }
    try {
      out.device_seconds = ev.take_device_seconds();
    } catch (std::exception const& e) {
      if (!out.error) out.error = e.what();
    }
    return out;
  }

  void serve_prefetches() {
    for (;;) {
      wire::request r;
      {
        std::unique_lock lk(mu_);
        work_.wait(lk, [&] { return stopping_ || !prefetches_.empty(); });
        if (stopping_) return;
        r = std::move(prefetches_.front());
        prefetches_.pop_front();
      }
      try {
        members_[r.member].ev->prefetch(r.cand);
      } catch (...) {  // a hint: the build that follows reports what went wrong
      }
    }
  }

  environment const* env_;
  std::vector<pool_member> members_;
  problem const* prob_;
  std::string problem_name_;
  std::optional<std::string> refused_;
  options o_;
  std::mutex mu_;
  std::condition_variable work_;                   ///< member and prefetch threads: a request came, or stop
  std::condition_variable replied_;                ///< the MPI loop: a reply is ready
  std::vector<std::deque<wire::request>> queues_;  ///< per member
  std::deque<wire::request> prefetches_;
  std::vector<std::string> replies_;  ///< encoded, for the MPI loop to send
  bool stopping_ = false;
  std::size_t running_ = 0;  ///< threads not yet ended
  std::vector<std::thread> threads_;
};

}  // namespace detail

/// Serves this rank's members to rank 0 until rank 0 says stop, then returns (after the calls in
/// progress have finished). One thread per member runs its calls, so the rank's GPUs work at once.
/// `problem_name` goes in the hello, so that rank 0 can refuse a rank that loaded another problem
/// (remote_pool compares it with its own, as given). `prob`: this rank's problem (every rank loads the
/// same), whose reference the members time when rank 0 asks for their baseline. Throws
/// kernelbrain::error when rank 0 goes silent for lost_after_seconds.
inline void serve(environment& env, std::span<pool_member const> members, std::string const& problem_name,
                  problem const& prob, options o = {}) {
  detail::server(env, members, &prob, problem_name, std::nullopt, std::move(o)).run();
}

/// As above, for a rank that knows its problem by name only: its members cannot measure the
/// baseline then (the remote evaluator's measure_baseline throws, naming this overload). A search
/// measures every member's baseline: pass the problem as well.
inline void serve(environment& env, std::span<pool_member const> members, std::string const& problem_name,
                  options o = {}) {
  detail::server(env, members, nullptr, problem_name, std::nullopt, std::move(o)).run();
}

/// For a serving rank that could not set up (no GPU, a bad problem file): answers the hello with
/// `why`, so that rank 0 fails with a message naming this rank and its node, then waits for rank 0's
/// stop. Throws kernelbrain::error when rank 0 goes silent.
inline void refuse(environment& env, std::string const& why, options o = {}) {
  detail::server(env, {}, nullptr, {}, why.empty() ? std::string("no reason given") : why, std::move(o)).run();
}

/// Rank 0's view of the other ranks: one remote evaluator per member of each, to add to the search's
/// evaluator_pool. Must outlive the search that uses them, and be destroyed before the environment.
class remote_pool {
 public:
  /// Waits for every other rank's hello (connect_timeout_seconds). Throws kernelbrain::error naming
  /// each rank (and node) that refused, did not say hello in time, or loaded another problem; every
  /// rank that did say hello has been told to stop by then.
  remote_pool(environment& env, std::string const& problem_name, options o = {}) {
    if (env.rank() != 0)
      throw error("mpi::remote_pool is rank 0's; rank " + std::to_string(env.rank()) + " serves with mpi::serve()");
    const double connect = o.connect_timeout_seconds;
    hub_ = std::make_unique<detail::hub>(env, std::move(o));
    const auto hellos = hub_->await_hellos();
    std::string wrong;
    const auto complain = [&](std::string what) { wrong += (wrong.empty() ? "" : "; ") + std::move(what); };
    for (std::size_t r = 1; r < hellos.size(); ++r) {
      auto const& h = hellos[r];
      const auto who = "rank " + std::to_string(r);
      if (!h) {
        complain(who + " did not say hello within " + detail::show_seconds(connect) +
                 " s: see its output for why it did not start serving, or allow it more time to set up");
        continue;
      }
      const auto at = who + " (node " + h->node + ")";
      if (h->protocol != wire::protocol_version)
        complain(at + " speaks protocol " + std::to_string(h->protocol) + ", this rank " +
                 std::to_string(wire::protocol_version) + ": run the same KernelBrain build on every rank");
      else if (h->refused)
        complain(at + " refused to serve: " + *h->refused);
      else if (h->problem != problem_name)
        complain(at + " loaded problem '" + h->problem + "', rank 0 '" + problem_name +
                 "': give every rank the same command line");
    }
    if (!wrong.empty()) {
      hub_->shutdown();
      throw error("the MPI evaluation pool cannot start: " + wrong);
    }
    for (std::size_t r = 1; r < hellos.size(); ++r)
      for (std::size_t i = 0; i < hellos[r]->members.size(); ++i) {
        auto const& m = hellos[r]->members[i];
        const auto rank = std::to_string(r);
        members_.push_back({std::make_unique<detail::remote_evaluator>(*hub_, static_cast<int>(r), i, m.fingerprint),
                            "rank " + rank + " " + m.label, device_key(hellos[r]->node, m.device),
                            hellos[r]->node + "/rank " + rank});
      }
  }
  ~remote_pool() { shutdown(); }
  remote_pool(remote_pool const&) = delete;
  remote_pool& operator=(remote_pool const&) = delete;

  /// Adds every remote member to `pool`: label "rank R <label>" ("rank 2 cuda:1"), device key
  /// device_key(node, device), node "<processor name>/rank R" (a rank shares one compile cache).
  void add_to(evaluator_pool& pool) {
    for (auto& m : members_) pool.add(*m.ev, m.label, m.device, m.node);
  }

  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }  ///< remote members
  [[nodiscard]] std::size_t lost_ranks() const { return hub_->lost_ranks(); }

  /// Tells every rank to stop serving and waits (at most lost_after_seconds) for the acknowledgement
  /// of each that is not lost. Idempotent; calls after it throw kernelbrain::error.
  void shutdown() { hub_->shutdown(); }

 private:
  struct member {
    std::unique_ptr<detail::remote_evaluator> ev;
    std::string label, device, node;
  };
  std::unique_ptr<detail::hub> hub_;
  std::vector<member> members_;
};

}  // namespace kernelbrain::mpi
