// The model in the loop, end to end on the host backend: a scripted model behind the loopback HTTP
// server (tests/llm_loopback_server.hpp) writes real candidates, some broken, for the default
// composition through the real HTTP client; the journal records every exchange, tokens are charged to
// the budget, broken kernels become repair prompts; a re-run from the recorded answers asks the same
// prompts and proposes the same candidates in the same order, and its gate gives the same verdicts; an
// exchange search answered by another process completes; a suspended exchange search resumes without
// re-running anything.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/generate/llm/exchange_client.hpp>
#include <kernelbrain/generate/llm/hint_choice.hpp>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <kernelbrain/generate/llm/recorded_client.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include "cli_helpers.hpp"
#include "journal_helpers.hpp"
#include "llm_loopback_server.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
using kb_test::loopback_server;
using kb_test::received_request;
using kb_test::server_action;
using kb_test::usage_counts;
namespace fs = std::filesystem;

namespace {

std::string softmax_dir() { return std::string(KB_SOURCE_DIR) + "/examples/problems/softmax"; }

std::string seed_source() { return kb_test::slurp(softmax_dir() + "/seed.cpp"); }

/// The scripted model: what it answers depends only on the prompt's text (never on arrival order), so
/// that the search is the same at any concurrency. Repair prompts get a correct kernel; others get,
/// by a hash of the prompt, a correct kernel (unique per prompt), one missing an include (repaired by
/// the parser), one that does not compile, one that is wrong, or prose without code.
std::string scripted_answer(std::string const& prompt_text) {
  const auto h = hasher{}.bytes(prompt_text).digest();
  const std::string tag = "// variant " + to_hex(h) + "\n";
  auto fenced = [](std::string const& code) { return "Here is my kernel.\n\n```cpp\n" + code + "```\n"; };
  if (prompt_text.find("was rejected; the verdict says why") != std::string::npos) return fenced(tag + seed_source());
  switch (h % 5) {
    case 0:
      return fenced(tag + seed_source());
    case 1: {  // no #include <cmath>: the parser adds it
      auto src = seed_source();
      src.erase(src.find("#include <cmath>"), 16);
      return fenced(tag + src);
    }
    case 2:
      return fenced(tag +
                    "#include \"kernelbrain/evaluate/host_abi.h\"\nextern \"C\" void kb_kernel(const kb_args* a) { "
                    "this is not C++ }\n");
    case 3:  // compiles, wrong: writes zeros
      return fenced(tag +
                    "#include <cstring>\n#include \"kernelbrain/evaluate/host_abi.h\"\nextern \"C\" void "
                    "kb_kernel(const kb_args* a) { std::memset(a->outputs[0], 0, sizeof(float) * a->dims[0] * "
                    "a->dims[1]); }\n");
    default:
      return "I would rather not write code today.";
  }
}

host_options fast_host() {
  host_options o;
  o.cache_dir = kb_test::process_dir("llm-search");
  o.run_timeout = 2.0;
  o.compile_timeout = 120;
  return o;
}

struct run_record {
  search_result result;
  journal_contents journal;
};

run_record run_search(problem const& p, std::shared_ptr<llm::model_client> client, fs::path const& journal_path,
                      std::optional<resume_state> measurements = std::nullopt, std::uint64_t evals = 48,
                      std::uint64_t answers = 0) {
  auto setup = std::make_shared<model_setup>();
  setup->client = std::move(client);
  auto policies = builtin_strategies(setup).make("default", p, strategy_options::parse("explore_batch=4"));
  host_evaluator ev(p, fast_host());
  search_options so;
  so.seed = 3;
  so.limits.evaluations = evals;
  so.limits.llm_answers = answers;
  const auto rungs = policies.ladder.rungs();
  const run_header header{p.name, "default+model", so.seed, ev.fingerprint(),
                          ladder_digest(std::vector<rung>(rungs.begin(), rungs.end()))};
  jsonl_journal j(journal_path, header, so.limits, journal_mode::create);
  so.journal = &j;
  if (measurements) {
    measurements->last_seq = 0;  // a new journal: write every event
    so.resume = std::move(measurements);
  }
  run_record r;
  r.result = search(p, std::move(policies), ev, so);
  j.throw_if_failed();
  r.journal = read_journal(journal_path);
  return r;
}

std::vector<std::string> exchange_keys(journal_contents const& j) {
  std::vector<std::string> out;
  for (auto const& x : j.exchanges) out.push_back(x.x.key + "#" + std::to_string(x.x.occurrence));
  return out;
}
std::vector<std::string> proposals(journal_contents const& j) {
  std::vector<std::string> out;
  for (auto const& e : j.events)
    if (e.e.kind == event_kind::proposed) out.push_back(e.e.id.str() + " " + e.e.note);
  return out;
}
std::vector<std::string> rejections(journal_contents const& j) {
  std::vector<std::string> out;
  for (auto const& e : j.events)
    if (e.e.kind == event_kind::rejected) out.push_back(e.e.id.str() + " " + std::string(to_string(e.e.result.where)));
  return out;
}

}  // namespace

TEST_CASE(
    "a host search through the HTTP client: a scripted model's kernels are parsed, repaired, gated and "
    "measured, and a re-run from recorded answers asks and proposes the same, and its gate agrees") {
  kb_test::temp_dir dir("llm-search");
  const auto p = load_problem(softmax_dir());
  std::atomic<int> requests{0};
  loopback_server server([&](received_request const& r) {
    ++requests;
    return server_action::openai(scripted_answer(r.prompt_text()), "stop", usage_counts{1000, 200});
  });
  llm::http_client_options h;
  h.base_url = server.url();
  h.model = "scripted";
  h.concurrency = 4;
  auto live = run_search(p, llm::make_http_client(h), dir / "live.jsonl");

  auto const& xs = live.journal.exchanges;
  REQUIRE_MESSAGE(xs.size() >= 2, "the model was asked too little to test anything: ", xs.size());
  CHECK(static_cast<int>(xs.size()) == requests.load());
  // Tokens as the endpoint reported them, charged to the budget.
  CHECK(live.result.used.llm_tokens == 1200 * xs.size());
  std::set<std::string> parse;
  bool repaired = false, repair_prompt = false;
  for (auto const& x : xs) {
    parse.insert(x.x.parse_status);
    CHECK(x.x.status == "ok");
    CHECK(x.x.model == "loopback-model");
    CHECK_FALSE(x.x.estimated);
    repaired = repaired || !x.x.repairs.empty();
    repair_prompt = repair_prompt || x.x.purpose.starts_with("repair:");
    if (x.x.parse_status == "ok") CHECK(x.x.candidate.has_value());
    if (x.x.parse_status == "no_code") CHECK_FALSE(x.x.candidate.has_value());
  }
  INFO("parse statuses seen: ", parse.size());
  CHECK(parse.contains("ok"));
  // Every model-written candidate is in the history with its origin, and the gate judged it.
  std::size_t written = 0, measured = 0, rejected = 0;
  for (auto const& e : live.journal.events) {
    if (e.e.kind == event_kind::proposed && e.e.note.starts_with("llm:")) ++written;
    if (e.e.kind == event_kind::model_reply) CHECK(e.e.note.find(':') != std::string::npos);
  }
  std::set<candidate_id> llm_ids;
  for (auto const& x : xs)
    if (x.x.candidate) llm_ids.insert(*x.x.candidate);
  for (auto const& o : live.journal.outcomes) {
    if (!llm_ids.contains(o.id)) continue;
    if (o.passed())
      ++measured;
    else
      ++rejected;
  }
  CHECK(written >= 1);
  INFO("model candidates measured ", measured, ", rejected ", rejected, "; repaired ", repaired, ", repair prompt ",
       repair_prompt);
  CHECK(measured + rejected >= 1);

  // Re-run with no model: the recorded answers, and the recorded measurements (timings on a live CPU
  // are noise, and a promotion that flips asks another prompt). The prompts and proposals must be the
  // same, in the same order, at concurrency 1.
  std::vector<model_exchange> recorded;
  for (auto const& x : xs) recorded.push_back(x.x);
  auto replay_client = std::make_shared<llm::recorded_client>(recorded);
  auto replay = run_search(p, replay_client, dir / "replay.jsonl", load_journal(dir / "live.jsonl"));
  CHECK(replay.result.stop_reason == live.result.stop_reason);
  CHECK(exchange_keys(replay.journal) == exchange_keys(live.journal));
  CHECK(proposals(replay.journal) == proposals(live.journal));
  CHECK(rejections(replay.journal) == rejections(live.journal));
  // The gate itself, run again for real on every model-written candidate, gives the recorded verdicts.
  host_evaluator ev(p, fast_host());
  auto gate = policy_gate::for_problem(p);
  std::map<candidate_id, stage> recorded_gate;
  for (auto const& o : live.journal.outcomes)
    if (o.gated) recorded_gate[o.id] = o.gate.where;
  std::size_t rechecked = 0;
  for (auto const& e : replay.journal.events) {
    if (e.e.kind != event_kind::proposed || !e.cand || !llm_ids.contains(e.e.id)) continue;
    auto it = recorded_gate.find(e.e.id);
    if (it == recorded_gate.end()) continue;  // never dispatched within the budget
    candidate c = *e.cand;
    CHECK_MESSAGE(gate.admit(c, ev).where == it->second, "candidate ", e.e.id.str());
    ++rechecked;
  }
  CHECK(rechecked >= 1);
}

namespace {

/// Counts dispatches (called on the main thread, read by the model's thread).
struct dispatch_counter final : observer {
  std::atomic<std::size_t> n{0};
  void on_event(event const& e, search_view const&) override {
    if (e.kind == event_kind::dispatched) ++n;
  }
};

/// A model that answers like scripted_answer, but first waits (at most `patience`) for an evaluation to
/// be dispatched while its request is in flight, and counts the requests during which that happened.
class watching_client final : public llm::model_client {
 public:
  watching_client(dispatch_counter const& d, std::chrono::milliseconds patience) : d_(d), patience_(patience) {}
  llm::chat_reply complete(llm::chat_request const& r) override {
    const auto start = d_.n.load();
    const auto until = std::chrono::steady_clock::now() + patience_;
    while (d_.n.load() == start && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (d_.n.load() != start) ++overlapped;
    ++asked;
    llm::chat_reply out;
    out.status = llm::call_status::ok;
    out.text = scripted_answer(r.prompt.user);
    out.usage = {100, 100, false, 0};
    return out;
  }
  [[nodiscard]] std::string describe() const override { return "watching"; }
  [[nodiscard]] std::size_t concurrency() const override { return 16; }  // a batch waits once, not per prompt
  std::atomic<std::size_t> overlapped{0}, asked{0};

 private:
  dispatch_counter const& d_;
  std::chrono::milliseconds patience_;
};

}  // namespace

TEST_CASE("model requests are in flight while evaluations are dispatched, and the search stops with none lost") {
  const auto p = load_problem(softmax_dir());
  auto run = [&](std::size_t lag, std::chrono::milliseconds patience) {
    dispatch_counter d;
    auto client = std::make_shared<watching_client>(d, patience);
    auto setup = std::make_shared<model_setup>();
    setup->client = client;
    setup->options.lag = lag;
    // The model-only default: every proposal asks the model, so how many requests a 16-evaluation search
    // makes does not hang on which kernel the host's timings crown (the hybrid asks only once a
    // measurement has earned it, and a loaded machine made the lag-0 run ask once).
    auto policies = builtin_strategies(setup).make("llm-only", p, strategy_options::parse("explore_batch=4"));
    host_evaluator ev(p, fast_host());
    search_options so;
    so.seed = 5;
    so.limits.evaluations = 16;
    so.max_in_flight = 1;  // the main thread waits for each evaluation: only the model's thread can overlap
    so.observers.push_back(&d);
    const auto r = search(p, std::move(policies), ev, so);
    return std::tuple{r, client->asked.load(), client->overlapped.load()};
  };
  // Lag 1 (the default): the model's batch is sent on its own thread and the search goes on.
  const auto [r1, asked1, overlapped1] = run(1, std::chrono::seconds(1));
  INFO("lag 1: asked ", asked1, ", overlapped ", overlapped1, ", stop: ", r1.stop_reason);
  REQUIRE(asked1 >= 2);
  CHECK(overlapped1 >= 1);
  CHECK(r1.stop_reason == "evaluation budget spent");
  // Every request made was charged, those still in flight at the stop included (settle()).
  CHECK(r1.used.llm_tokens == 200 * asked1);
  // Lag 0, the control: the search waits in propose(), so nothing is dispatched during a request.
  const auto [r0, asked0, overlapped0] = run(0, std::chrono::milliseconds(300));
  INFO("lag 0: asked ", asked0, ", overlapped ", overlapped0);
  REQUIRE(asked0 >= 2);
  CHECK(overlapped0 == 0);
  CHECK(r0.used.llm_tokens == 200 * asked0);
}

namespace {
/// A baseline of 2 ms at every shape with a floor of 0.1 ms (the prompt tests' numbers).
baseline flat_baseline(problem const& p) {
  baseline b;
  for (auto const& s : p.shapes) {
    b.seconds.push_back(2e-3);
    b.weights.push_back(s.weight);
    b.floor_seconds.push_back(1e-4);
  }
  return b;
}
/// An exchange whose answers are not written: every reply waits, and taking the batch suspends the search.
struct unanswered final : llm::model_client {
  llm::chat_reply complete(llm::chat_request const&) override {
    llm::chat_reply r;
    r.status = llm::call_status::waiting;
    r.error = "no answer yet";
    return r;
  }
  [[nodiscard]] std::string describe() const override { return "unanswered"; }
};
/// A search of softmax at one smoke rung whose only candidate, the seed, waits to be measured.
struct seed_waiting {
  problem p = load_problem(softmax_dir());
  budget_meter meter;
  std::vector<rung> rungs{rung{"smoke", {0}, 3, 1, 1, false, false}};
  baseline b = flat_baseline(p);
  detail::search_history h{p, rungs, b, meter};
  std::optional<std::size_t> seed = h.add(make_candidate("seed", {}, "seed", std::nullopt, seed_source()));
  search_view v{h};
};
}  // namespace

TEST_CASE("a batch without its answers is taken early only when no candidate waits to be measured") {
  seed_waiting f;
  auto [v, h, seed] = std::tie(f.v, f.h, f.seed);  // references into f
  llm::llm_generator_options o;
  o.lag = 3;  // the first batch is due at the fourth call
  llm::llm_generator g(std::make_shared<unanswered>(), o);
  proposal_request req;
  req.mode = generation_mode::explore;
  req.count = 2;
  // The seed waits to be measured: nothing is taken, the batches stay in flight, the search goes on.
  CHECK(g.propose(v, req).empty());
  CHECK(g.propose(v, req).empty());
  CHECK(g.batches_in_flight() == 2);
  // Once nothing waits, a call that would return nothing takes the oldest batch before it is due: its
  // answers are missing, so the search suspends (it used to, with the seed still unmeasured).
  REQUIRE(seed);
  h.take_fresh(*seed);
  CHECK_THROWS_AS(g.propose(v, req), search_suspended);
}

TEST_CASE("max_waiting: a batch that would put more prompts in flight takes the oldest first") {
  seed_waiting f;                                  // the seed waits: no early take
  auto [v, h, seed] = std::tie(f.v, f.h, f.seed);  // references into f
  REQUIRE(seed);
  proposal_request req;
  req.mode = generation_mode::explore;
  req.count = 2;
  for (std::size_t cap : {0, 5}) {
    CAPTURE(cap);
    llm::llm_generator_options o;
    o.lag = 8;  // nothing is due within these calls
    o.max_waiting = cap;
    llm::llm_generator g(std::make_shared<unanswered>(), o);
    CHECK(g.propose(v, req).empty());
    CHECK(g.propose(v, req).empty());
    CHECK(g.waiting_prompts() == 4);
    if (cap == 0) {  // no limit: a third batch goes out too
      CHECK(g.propose(v, req).empty());
      CHECK(g.waiting_prompts() == 6);
    } else {  // 4 + 2 > 5: the oldest batch is taken first, and its answers are missing
      CHECK_THROWS_AS(g.propose(v, req), search_suspended);
    }
  }
  // A batch larger than the limit on its own sends that many prompts; the rest go out with the next call.
  llm::llm_generator_options o;
  o.lag = 8;
  o.max_waiting = 3;
  llm::llm_generator g(std::make_shared<unanswered>(), o);
  req.count = 5;
  CHECK(g.propose(v, req).empty());
  CHECK(g.waiting_prompts() == 3);
  req.count = 0;  // nothing new: the two held back are sent once there is room (here: after the first batch)
  CHECK_THROWS_AS(g.propose(v, req), search_suspended);

  // With answers: the held-back prompts go out with a later call that asks nothing new, and their replies
  // are parsed as the backend's (a batch of held prompts alone once lost the reply format: no code).
  struct answering final : llm::model_client {  // a correct kernel, a different one every time
    std::atomic<int> n{0};
    llm::chat_reply complete(llm::chat_request const&) override {
      llm::chat_reply out;
      out.status = llm::call_status::ok;
      out.text = "```cpp\n// answer " + std::to_string(n++) + "\n" + seed_source() + "```\n";
      return out;
    }
    [[nodiscard]] std::string describe() const override { return "answering"; }
  };
  llm::llm_generator a(std::make_shared<answering>(), o);
  req.count = 5;
  CHECK(a.propose(v, req).empty());  // 3 sent, 2 held
  // No request at all (as the hybrid generator calls when the model has no share): the first 3 are taken
  // to make room, and the 2 held are sent.
  CHECK(a.propose_all(v, {}).size() == 3);
  CHECK(a.waiting_prompts() == 2);
  h.take_fresh(*seed);  // nothing waits now: the next call takes the held pair early
  CHECK(a.propose_all(v, {}).size() == 2);
  for (auto const& x : a.take_exchanges()) CHECK(x.parse_status == "ok");
}

TEST_CASE("recorded answers: a prompt the recording lacks suspends the search with the reason") {
  auto c = std::make_shared<llm::recorded_client>(std::vector<model_exchange>{});
  llm::chat_request r;
  r.prompt.user = "anything";
  const auto reply = c->complete(r);
  CHECK(reply.status == llm::call_status::waiting);
  CHECK(reply.error.find("no recorded answer") != std::string::npos);
}

#ifdef KB_CLI_PATH
namespace {

/// Answers every prompt file in `folder` that has no answer yet; returns how many it answered.
std::size_t answer_all(fs::path const& folder) {
  std::size_t n = 0;
  for (auto const& e : fs::directory_iterator(folder)) {
    const auto name = e.path().filename().string();
    if (!name.starts_with("prompt-") || !name.ends_with(".md")) continue;
    const auto answer = folder / ("answer-" + name.substr(7));
    if (fs::exists(answer)) continue;
    const auto text = kb_test::slurp(e.path());
    kb_test::spit(answer.string() + ".tmp", scripted_answer(text));
    fs::rename(answer.string() + ".tmp", answer);
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("an exchange search answered by another process completes") {
  kb_test::temp_dir dir("llm-exchange-wait");
  const auto folder = dir / "exchange";
  fs::create_directories(folder);
  const pid_t answerer = ::fork();
  REQUIRE(answerer >= 0);
  if (answerer == 0) {  // the other process: answers whatever appears, until killed
    for (;;) {
      try {
        (void)answer_all(folder);
      } catch (...) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const auto r = kb_test::run_cli(
      {"tune", softmax_dir(), "--budget", "12evals", "--strategy", "default-one-rung:explore_batch=4,samples=3",
       "--exchange", folder.string(), "--exchange-wait", "300", "--no-progress"},
      dir);
  ::kill(answerer, SIGKILL);
  ::waitpid(answerer, nullptr, 0);
  INFO(r.out, r.err);
  CHECK(r.exit_code == 0);
  CHECK(kb_test::summary(r.out, "stop reason") == "evaluation budget spent");
  CHECK(kb_test::contains(kb_test::summary(r.out, "model tokens"), "estimated"));
  CHECK(kb_test::summary(r.out, "model replies") != "0 (0 usable)");
}

TEST_CASE("a suspended exchange search resumes without re-running anything") {
  kb_test::temp_dir dir("llm-exchange-suspend");
  const auto folder = dir / "exchange";
  const auto journal = dir / "run.jsonl";
  std::vector<std::string> args{"tune",           softmax_dir(),   "--budget",
                                "12evals",        "--strategy",    "default-one-rung:explore_batch=4,samples=3",
                                "--exchange",     folder.string(), "--journal",
                                journal.string(), "--no-progress"};
  auto r = kb_test::run_cli(args, dir);
  INFO(r.out, r.err);
  REQUIRE(r.exit_code == 75);
  CHECK(kb_test::contains(kb_test::summary(r.out, "stop reason"), "waiting for"));
  args.emplace_back("--resume");
  int rounds = 0;
  while (r.exit_code == 75 && rounds < 8) {
    ++rounds;
    REQUIRE(answer_all(folder) >= 1);
    const auto before = read_journal(journal);
    r = kb_test::run_cli(args, dir);
    INFO("round ", rounds, "\n", r.out, r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 75));
    // Every evaluation the journal held came from it, none was run again.
    CHECK(std::stoul(kb_test::summary(r.out, "cache hits")) == before.outcomes.size());
    const auto after = read_journal(journal);
    std::set<std::pair<candidate_id, std::size_t>> seen;
    for (auto const& o : after.outcomes)
      CHECK_MESSAGE(seen.insert({o.id, o.rung}).second, "evaluated twice: ", o.id.str());
    // Exchanges answered in an earlier round were not written again.
    std::set<std::string> keys;
    for (auto const& x : after.exchanges)
      CHECK_MESSAGE(keys.insert(x.x.key + "#" + std::to_string(x.x.occurrence)).second, "exchange twice: ", x.x.key);
  }
  CHECK(r.exit_code == 0);
  CHECK(rounds >= 1);
  // Every answer the rounds gave is in the journal, once.
  const auto final_journal = read_journal(journal);
  std::size_t answers = 0;
  for (auto const& e : fs::directory_iterator(folder)) answers += e.path().filename().string().starts_with("answer-");
  CHECK(final_journal.exchanges.size() == answers);
  for (auto const& x : final_journal.exchanges) CHECK(x.x.estimated);
  CHECK(kb_test::summary(r.out, "stop reason") == "evaluation budget spent");
}
#endif

TEST_CASE("the budget meter stops on model answers, and only answered prompts count") {
  budget b;
  b.llm_answers = 2;
  budget_meter m(b);
  m.charge_llm(500, 0);  // a call that failed: tokens, no answer
  CHECK(m.exhausted().empty());
  m.charge_answer();
  CHECK(m.exhausted().empty());
  CHECK(m.progress() == doctest::Approx(0.5));
  m.charge_answer();
  CHECK(m.exhausted() == "model-answer budget spent");
  model_exchange x;
  for (auto [status, yes] :
       {std::pair{"ok", true}, {"cut", true}, {"failed", false}, {"waiting", false}, {"cancelled", false}}) {
    x.status = status;
    CHECK_MESSAGE(answered(x) == yes, status);
  }
}

TEST_CASE("a search with a model answer budget stops there, with the answers journaled") {
  kb_test::temp_dir dir("llm-answer-budget");
  const auto p = load_problem(softmax_dir());
  loopback_server server([&](received_request const& r) {
    return server_action::openai(scripted_answer(r.prompt_text()), "stop", usage_counts{100, 20});
  });
  llm::http_client_options h;
  h.base_url = server.url();
  h.model = "scripted";
  h.concurrency = 4;
  const std::uint64_t limit = 3;
  auto run = run_search(p, llm::make_http_client(h), dir / "answers.jsonl", std::nullopt, 400, limit);
  CHECK(run.result.stop_reason == "model-answer budget spent");
  std::uint64_t answers = 0;
  for (auto const& x : run.journal.exchanges) answers += answered(x.x) ? 1 : 0;
  CHECK(run.result.used.llm_answers == answers);
  // No more prompts are sent than answers may be taken (each prompt in flight counts), so the search ends
  // at the limit exactly, however its replies are timed (here every call succeeds).
  CHECK(answers == limit);
  CHECK(run.journal.exchanges.size() == limit);
  CHECK(run.journal.limits.llm_answers == limit);  // the journal's budget says so, for a resume
}

TEST_CASE("the budget meter stops on LLM tokens") {
  budget b;
  b.llm_tokens = 100;
  budget_meter m(b);
  CHECK(m.exhausted().empty());
  m.charge_llm(60, 0.1);
  CHECK(m.exhausted().empty());
  m.charge_llm(40, 0.1);
  CHECK(m.exhausted() == "LLM token budget spent");
}

TEST_CASE(
    "mutate hints: never the parent's own family nor one measured slower than it, and with none left the prompt says "
    "so") {
  const auto p = load_problem(softmax_dir());
  budget_meter meter;
  const baseline b = flat_baseline(p);
  std::vector<rung> rungs{rung{"smoke", {0}, 3, 1, 1, false, false}, rung{"confirm", {0, 1}, 3, 1, 1, true, true}};
  detail::search_history h(p, rungs, b, meter);
  // One candidate per family, with its scores per rung (nullopt: not measured there).
  const auto add = [&](std::string const& family, std::optional<double> smoke, std::optional<double> confirm) {
    const auto i = *h.add(make_candidate(family, {}, "expert:" + family, std::nullopt, "src " + family));
    auto& r = h.at(i);
    if (smoke) r.scores[0] = score{*smoke, *smoke};
    if (confirm) r.scores[1] = score{*confirm, *confirm};
    r.top_rung = confirm ? 1 : (smoke ? 0 : -1);
    r.state = candidate_state::measured;
    return i;
  };
  const auto parent = add("mine", 10.0, 5.0);
  add("slower-at-smoke", 8.0, std::nullopt);     // behind: slower at the highest rung both were measured
  add("faster-at-smoke", 12.0, std::nullopt);    // not behind
  add("slower-smoke-faster-confirm", 9.0, 6.0);  // the confirm decides: not behind
  add("slower-at-confirm", 20.0, 4.0);           // the confirm decides: behind
  search_view v(h);
  const auto hint = [](std::string name) { return expert_hint{name, "prose of " + name, std::nullopt, {}}; };
  const std::vector<expert_hint> hints{hint("mine"),
                                       hint("slower-at-smoke"),
                                       hint("faster-at-smoke"),
                                       hint("slower-smoke-faster-confirm"),
                                       hint("slower-at-confirm"),
                                       hint("never-measured")};
  std::set<std::string> offered;
  for (std::size_t start = 0; start < hints.size(); ++start) {
    auto const* chosen = llm::mutate_hint(hints, v, v[parent], start);
    REQUIRE(chosen != nullptr);
    offered.insert(chosen->name);
  }
  // Rotating the start offers each family that is neither the parent's nor slower, and only those.
  CHECK(offered == std::set<std::string>{"faster-at-smoke", "slower-smoke-faster-confirm", "never-measured"});

  // Only excluded families left: no hint, and the prompt says why instead of asking to follow one.
  const std::vector<expert_hint> behind{hint("mine"), hint("slower-at-smoke"), hint("slower-at-confirm")};
  CHECK(llm::mutate_hint(behind, v, v[parent], 0) == nullptr);
  llm::prompt_builder builder;
  llm::prompt_subject s;
  s.what = llm::prompt_subject::kind::mutate;
  s.parent = &v[parent];
  s.no_hint = llm::no_hint_text;
  const auto none = builder.build(v, s);
  CHECK(none.user.find("## Expert hint: none") != std::string::npos);
  CHECK(none.user.find("the expert hint says what to try") == std::string::npos);
  s.hint = &hints[2];
  s.no_hint.clear();
  const auto with = builder.build(v, s);
  CHECK(with.user.find("## Expert hint: faster-at-smoke") != std::string::npos);
  CHECK(with.user.find("the expert hint says what to try") != std::string::npos);
}

TEST_CASE("prompts: a mutate prompt carries the parent's numbers and diagnosis, a blind one carries neither") {
  const auto p = load_problem(softmax_dir());
  budget_meter meter;
  const baseline b = flat_baseline(p);
  std::vector<rung> rungs{rung{"smoke", {0}, 3, 1, 1, false, false}, rung{"confirm", {0, 1}, 3, 1, 1, true, true}};
  detail::search_history h(p, rungs, b, meter);
  (void)h.add(make_candidate("seed", {}, "seed", std::nullopt, seed_source()));
  auto& rec = h.at(0);
  measurement m;
  m.timings.push_back({0, {1e-3}, median_ci{1e-3, 1e-3, 1e-3}});
  m.res = resources{40, 0, 0, 0.5};
  m.diagnosis = "far below bandwidth [10]: 10% of the roofline floor's speed";
  rec.results[1] = m;
  rec.top_rung = 1;
  rec.state = candidate_state::measured;
  search_view v(h);
  llm::prompt_builder builder;
  llm::prompt_subject s;
  s.what = llm::prompt_subject::kind::mutate;
  s.parent = &v[0];
  s.hint = &p.catalogue.front();
  s.failures.push_back({candidate_id{7}, "llm:mutate", verdict::reject(stage::compile, "error: expected ';'")});
  const auto full = builder.build(v, s);
  CHECK(full.user.find("far below bandwidth [10]") != std::string::npos);
  CHECK(full.user.find("| 1000 | 10.0 | 2x |") != std::string::npos);  // median us, % of floor, speedup
  CHECK(full.user.find("40 registers/thread") != std::string::npos);
  CHECK(full.user.find("## Expert hint: " + p.catalogue.front().name) != std::string::npos);
  CHECK(full.user.find("error: expected ';'") != std::string::npos);
  CHECK(full.system.find("kb_kernel") != std::string::npos);  // the host answer format
  CHECK(full.key() == builder.build(v, s).key());             // deterministic
  s.blind = true;
  const auto blind = builder.build(v, s);
  CHECK(blind.user.find("far below bandwidth") == std::string::npos);
  CHECK(blind.user.find("Expert hint") == std::string::npos);
  CHECK(blind.user.find("expected ';'") == std::string::npos);
  CHECK(blind.user.find(seed_source().substr(0, 40)) != std::string::npos);  // the parent's source only

  // Templates from a folder; a misspelt field is an error naming it.
  kb_test::temp_dir dir("prompt-templates");
  llm::prompt_templates::write_defaults(dir.path);
  kb_test::spit((dir / "mutate.md").string(), "MUTATE {{parent}} {{hint}}");
  const auto edited = llm::prompt_builder(llm::prompt_templates::from_directory(dir.path)).build(v, s);
  CHECK(edited.user.starts_with("MUTATE ## The kernel to improve"));
  kb_test::spit((dir / "explore.md").string(), "{{problme}}");
  CHECK_THROWS_WITH_AS(llm::prompt_templates::from_directory(dir.path), doctest::Contains("{{problme}}"), error);
}

TEST_CASE("prompts: what a prompt says of a missing diagnosis and unknown resources is true for the backend") {
  // A kernel measured at the top rung with no diagnosis: on the host (no profiler) the prompt says there is
  // none to come; on CUDA, below the profiling rung, it names the rung; at it, that the profiler found nothing.
  auto prompt_for = [](problem const& p, std::size_t measured_at, resources res) {
    budget_meter meter;
    const baseline b = flat_baseline(p);
    std::vector<rung> rungs{rung{"smoke", {0}, 3, 1, 1, false, false}, rung{"screen", {0}, 3, 1, 1, false, false},
                            rung{"confirm", {0, 1}, 3, 1, 1, true, true}};
    detail::search_history h(p, rungs, b, meter);
    (void)h.add(make_candidate("seed", {}, "seed", std::nullopt, "// a kernel"));
    auto& rec = h.at(0);
    measurement m;
    m.timings.push_back({0, {1e-3}, median_ci{1e-3, 1e-3, 1e-3}});
    m.res = res;
    rec.results[measured_at] = m;
    rec.top_rung = static_cast<int>(measured_at);
    rec.state = candidate_state::measured;
    search_view v(h);
    llm::prompt_subject s;
    s.what = llm::prompt_subject::kind::mutate;
    s.parent = &v[0];
    const auto built = llm::prompt_builder{}.build(v, s);
    return built.system + "\n" + built.user;
  };
  const auto host = prompt_for(load_problem(softmax_dir()), 2, resources{-1, -1, -1, -1});
  CHECK(host.find("-O3 -march=native") != std::string::npos);  // how it is built, so no run-time dispatch
  CHECK(host.find("at the problem's ceilings of 2000 GB/s and 1000 GFLOP/s") != std::string::npos);
  CHECK(host.find("the host backend has no profiler") != std::string::npos);
  CHECK(host.find("promoted to") == std::string::npos);
  CHECK(host.find("Static resources") == std::string::npos);  // nothing known: no line of question marks
  const auto cuda = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  const auto low = prompt_for(cuda, 1, resources{40, 0, 0, 0.5});
  CHECK(low.find("none yet (the profiler runs on candidates promoted to rung 'confirm')") != std::string::npos);
  CHECK(low.find("40 registers/thread") != std::string::npos);
  const auto top = prompt_for(cuda, 2, resources{40, -1, -1, -1});
  CHECK(top.find("none for this kernel (the profiler gave no finding)") != std::string::npos);
  CHECK(top.find("promoted to") == std::string::npos);
}
