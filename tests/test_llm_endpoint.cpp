// A model endpoint as a new user meets it (issue 25), against the loopback server: the request
// parameters a reasoning model accepts (no temperature unless asked for, max_completion_tokens) and a
// refusal that names the option fixing it; a start-up check shaped like the search's requests; base
// URLs with or without /v1; and, through the CLI, a search that stops loudly on a permanent error or
// on many failures in a row, a --wall that holds against a silent server, and a budget in evaluations
// that bounds how many prompts a model that never writes code is sent.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "cli_helpers.hpp"
#include "llm_client_helpers.hpp"
#include "llm_loopback_server.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
using namespace kernelbrain::llm;
using kb_test::loopback_server;
using kb_test::received_request;
using kb_test::server_action;

namespace {

http_client_options options_for(loopback_server const& server, wire_format f = wire_format::openai) {
  return kb_test::loopback_options(server, f);
}
using kb_test::ask;

bool has_field(received_request const& r, std::string_view key) {
  const auto v = r.json();
  return v.is_object() && v.get_object().if_contains(boost::json::string_view(key.data(), key.size())) != nullptr;
}

/// Answers as OpenAI's reasoning models do: max_tokens and any temperature but 1 are refused (the
/// error bodies as the API writes them), max_completion_tokens is taken.
server_action reasoning_model(received_request const& r) {
  if (has_field(r, "max_tokens"))
    return server_action::status(
        400, R"({"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use )"
             R"('max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens",)"
             R"("code":"unsupported_parameter"}})");
  if (auto t = r.number("temperature"); t && *t != 1.0)
    return server_action::status(
        400, R"({"error":{"message":"Unsupported value: 'temperature' does not support 0.7 with this model. Only )"
             R"(the default (1) value is supported.","type":"invalid_request_error","param":"temperature",)"
             R"("code":"unsupported_value"}})");
  return server_action::openai("ok");
}

bool contains(std::string const& text, std::string const& needle) { return text.find(needle) != std::string::npos; }

std::string read_file(std::filesystem::path const& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("endpoint: no temperature unless asked for, and the reply limit as the endpoint names it") {
  loopback_server server;
  server.set_handler(reasoning_model);
  auto o = options_for(server);
  // Not api.openai.com: "auto" sends max_tokens, which this model refuses, naming the option.
  auto plain = make_http_client(o);
  auto r = plain->complete(ask("hello"));
  CHECK(r.status == call_status::failed);
  CHECK(r.permanent);
  CHECK(r.attempts == 1);  // a refusal is not retried
  CHECK(contains(r.error, "refused the parameter 'max_tokens'"));
  CHECK(contains(r.error, "--llm-token-param max_completion_tokens"));
  CHECK_FALSE(has_field(server.requests().back(), "temperature"));  // none was asked for

  o.token_limit = token_parameter::max_completion_tokens;
  auto fixed = make_http_client(o);
  r = fixed->complete(ask("hello", 333));
  CHECK(r.status == call_status::ok);
  CHECK(server.requests().back().number("max_completion_tokens") == 333);
  CHECK_FALSE(has_field(server.requests().back(), "max_tokens"));

  // A temperature the model refuses: the error names it and the way out.
  auto warm = ask("hello");
  warm.temperature = 0.7;
  r = fixed->complete(warm);
  CHECK(r.status == call_status::failed);
  CHECK(r.permanent);
  CHECK(contains(r.error, "refused the parameter 'temperature'"));
  CHECK(contains(r.error, "--llm-temperature"));

  // "none": no limit sent at all (OpenAI format only).
  o.token_limit = token_parameter::none;
  r = make_http_client(o)->complete(ask("hello"));
  CHECK(r.status == call_status::ok);
  CHECK_FALSE(has_field(server.requests().back(), "max_tokens"));
  CHECK_FALSE(has_field(server.requests().back(), "max_completion_tokens"));
  auto a = options_for(server, wire_format::anthropic);
  a.token_limit = token_parameter::none;
  CHECK_THROWS_WITH_AS(make_http_client(a), doctest::Contains("requires max_tokens"), kernelbrain::error);

  // At api.openai.com, auto means max_completion_tokens (nothing is sent here: describe() says it).
  http_client_options hosted;
  hosted.model = "gpt-5";
  hosted.proxy = "none";
  if (http_client_has_tls())
    CHECK(contains(make_http_client(hosted)->describe(), "reply limit as max_completion_tokens"));
  CHECK(parse_token_parameter("MAX_COMPLETION_TOKENS") == token_parameter::max_completion_tokens);
  CHECK_THROWS_AS((void)parse_token_parameter("max_new_tokens"), kernelbrain::error);
}

TEST_CASE("endpoint: the start-up check sends the search's request shape and fails as the search would") {
  loopback_server server;
  // A vLLM server with a 4096-token context: prompt (about 4 bytes a token) + max_tokens must fit.
  server.set_handler([](received_request const& r) {
    const double prompt = static_cast<double>(r.body.size()) / 4;
    const double limit = r.number("max_tokens").value_or(0);
    if (prompt + limit > 4096)
      return server_action::status(
          400, R"({"object":"error","message":"This model's maximum context length is 4096 tokens. However, you )"
               R"(requested )" +
                   std::to_string(static_cast<int>(prompt + limit)) +
                   R"( tokens. Please reduce the length of the messages or completion.","type":"BadRequestError",)"
                   R"("param":null,"code":400})");
    return server_action::openai("ok");
  });
  auto client = make_http_client(options_for(server));
  auto like = ask(std::string(6000, 'x'), 16384);  // the search's: a prompt of its size, its reply limit
  like.temperature = 0.4;
  std::string message;
  try {
    client->check(like);
  } catch (kernelbrain::error const& e) {
    message = e.what();
  }
  CHECK(contains(message, "do not fit the model's context"));
  CHECK(contains(message, "--llm-max-tokens"));
  CHECK(contains(message, "max_tokens 16384"));
  // What it sent is the search's request, the prompt included.
  const auto sent = server.requests().back();
  INFO("sent ", sent.target, ", ", sent.body.size(), " bytes: ", sent.body.substr(0, 300));
  CHECK(sent.number("max_tokens") == 16384);
  CHECK(sent.number("temperature") == doctest::Approx(0.4));
  CHECK(contains(sent.user_text(), std::string(6000, 'x')));
  CHECK(sent.system_text() == "You write kernels.");
  // With a reply limit that fits, it passes.
  like.max_tokens = 1024;
  CHECK_NOTHROW(client->check(like));
}

TEST_CASE("endpoint: a silent server fails the check within its timeout, not the request timeout") {
  loopback_server server;
  server.set_handler([](received_request const&) { return server_action::openai("ok").after(std::chrono::hours(1)); });
  auto o = options_for(server);
  o.request_timeout_seconds = 600;
  o.check_timeout_seconds = 2;
  o.max_retries = 0;
  auto client = make_http_client(o);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(client->check(ask("hi")), kernelbrain::error);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(took < 10);
}

TEST_CASE("endpoint: a deadline cancels requests in flight and those sent after it") {
  loopback_server server;
  server.set_handler([](received_request const&) { return server_action::openai("ok").after(std::chrono::hours(1)); });
  auto o = options_for(server);
  o.request_timeout_seconds = 600;
  o.max_retries = 4;
  auto client = make_http_client(o);
  const auto start = std::chrono::steady_clock::now();
  client->set_deadline(start + std::chrono::seconds(2));
  const auto r = client->complete(ask("hi"));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.status == call_status::cancelled);
  CHECK(contains(r.error, "deadline"));
  CHECK(took < 5);
  const auto late = client->complete(ask("again"));
  CHECK(late.status == call_status::cancelled);
  CHECK(contains(late.error, "not sent"));
}

TEST_CASE("endpoint: base URLs with or without /v1, and the format a URL implies") {
  CHECK(normalize_base_url("https://api.anthropic.com", wire_format::anthropic) == "https://api.anthropic.com/v1");
  CHECK(normalize_base_url("https://api.anthropic.com/", wire_format::anthropic) == "https://api.anthropic.com/v1");
  CHECK(normalize_base_url("https://api.anthropic.com/v1", wire_format::anthropic) == "https://api.anthropic.com/v1");
  CHECK(normalize_base_url("http://127.0.0.1:8000", wire_format::openai) == "http://127.0.0.1:8000/v1");
  CHECK(normalize_base_url("https://openrouter.ai/api/v1", wire_format::openai) == "https://openrouter.ai/api/v1");
  CHECK(normalize_base_url("", wire_format::openai) == "https://api.openai.com/v1");
  CHECK(infer_wire_format("https://api.anthropic.com") == wire_format::anthropic);
  CHECK(infer_wire_format("https://gateway.example/v1/messages") == wire_format::anthropic);
  CHECK(infer_wire_format("http://127.0.0.1:8000/v1/chat/completions") == wire_format::openai);
  CHECK_FALSE(infer_wire_format("http://127.0.0.1:8000/v1").has_value());

  loopback_server server;
  for (std::string base : {server.url(""), server.url("/v1")})
    for (auto f : {wire_format::openai, wire_format::anthropic}) {
      CAPTURE(base);
      auto o = options_for(server, f);
      o.base_url = base;
      const auto r = make_http_client(o)->complete(ask("hi"));
      CHECK(r.status == call_status::ok);
      CHECK(server.requests().back().target == (f == wire_format::openai ? "/v1/chat/completions" : "/v1/messages"));
    }
  // A path the server does not serve: a 404 that says what to check.
  server.push(server_action::status(404, R"({"error":{"message":"not found"}})"));
  auto o = options_for(server);
  o.base_url = server.url("/api");
  const auto r = make_http_client(o)->complete(ask("hi"));
  CHECK(r.status == call_status::failed);
  CHECK(r.permanent);
  CHECK(contains(r.error, "is /v1 missing from the base URL?"));
  CHECK(contains(r.error, "--llm-api anthropic"));
}

#ifdef KB_CLI_PATH

namespace {

/// `kernelbrain tune softmax` on the host backend with the model at `server` (llm-only: the model is
/// the only generator), `extra` appended.
kb_test::cli_run tune_with(loopback_server const& server, kb_test::temp_dir const& dir,
                           std::vector<std::string> const& extra) {
  std::vector<std::string> args = {"tune",
                                   "softmax",
                                   "--backend",
                                   "host",
                                   "--strategy",
                                   "llm-only",
                                   "--model",
                                   "loopback-model",
                                   "--llm-url",
                                   server.url(),
                                   "--llm-retries",
                                   "0",
                                   "--no-progress",
                                   "--seed",
                                   "1",
                                   "--journal",
                                   (dir / "run.jsonl").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return kb_test::run_cli(args, dir);
}

/// Chat requests (POSTs) the server received: not the client's GETs of what the server serves.
std::size_t chat_requests(loopback_server const& server) {
  const auto all = server.requests();
  return static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(), [](auto const& r) { return r.method == "POST"; }));
}

/// The start-up check (the first request) answered, probes of the server refused as a server that
/// serves nothing but chat completions would, then `then`.
loopback_server::handler check_then(loopback_server::handler then) {
  return [then](received_request const& r) {
    if (r.method != "POST") return server_action::status(404, R"({"error":{"message":"no such path"}})");
    return r.index == 0 ? server_action::openai("ok") : then(r);
  };
}

}  // namespace

TEST_CASE("endpoint CLI: a permanent error stops the search at once, loudly, with the journal kept") {
  const kb_test::temp_dir dir("endpoint_quota");
  loopback_server server;
  server.set_handler(check_then([](received_request const&) {
    return server_action::status(
        429, R"({"error":{"message":"You exceeded your current quota, please check your plan and billing details.",)"
             R"("type":"insufficient_quota","param":null,"code":"insufficient_quota"}})");
  }));
  const auto r = tune_with(server, dir, {"--budget", "40evals"});
  INFO(r.err);
  CHECK(r.exit_code == 4);
  CHECK(contains(r.err, "model request failed: "));
  CHECK(contains(r.err, "quota or credit is spent"));
  CHECK(contains(r.err, "the search stopped"));
  CHECK(contains(r.err, "--resume"));
  // Stopped after the first batch: no more prompts to an endpoint that refuses them all.
  CHECK(chat_requests(server) <= 1 + 8);
  const std::string journal = read_file(dir / "run.jsonl");
  CHECK(contains(journal, "\"status\":\"failed\""));
  CHECK(contains(journal, "\"kind\":\"suspended\""));

  // The quota topped up: --resume continues the same journal to the end of its budget, asking again
  // what failed (a failed exchange is not an answer).
  const std::size_t before = chat_requests(server);
  server.set_handler([](received_request const& q) {
    return q.method == "POST" ? server_action::openai("No code this time.")
                              : server_action::status(404, R"({"error":{"message":"no such path"}})");
  });
  const auto resumed = tune_with(server, dir, {"--budget", "40evals", "--resume"});
  INFO(resumed.err);
  CHECK(resumed.exit_code == 0);
  CHECK(chat_requests(server) > before + 1);  // the check, then the search's prompts
  const std::string after = read_file(dir / "run.jsonl");
  CHECK(after.starts_with(journal));  // appended to, nothing lost
  CHECK(contains(after.substr(journal.size()), "\"status\":\"ok\""));
}

TEST_CASE("endpoint CLI: failures in a row stop the search with a non-zero exit") {
  const kb_test::temp_dir dir("endpoint_overloaded");
  loopback_server server;
  server.set_handler(check_then([](received_request const&) {
    return server_action::status(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  }));
  const auto r = tune_with(server, dir, {"--budget", "40evals", "--llm-max-failures", "5"});
  INFO(r.err);
  CHECK(r.exit_code == 4);
  CHECK(contains(r.err, "model requests in a row failed"));
  // One line per kind as they happen, with counts, not one per failure.
  CHECK(contains(r.err, "times so far"));
  CHECK(chat_requests(server) <= 1 + 5 + 8);  // the check, the failures, at most one more batch in flight
}

TEST_CASE("endpoint CLI: --wall holds against a server that stops answering") {
  const kb_test::temp_dir dir("endpoint_silent");
  loopback_server server;
  server.set_handler(
      check_then([](received_request const&) { return server_action::openai("ok").after(std::chrono::hours(1)); }));
  const auto start = std::chrono::steady_clock::now();
  // Focused on the medium shape (not the large one), so that the baseline (timed before the search starts asking) is
  // short on a busy machine too and the model's requests are in flight when the wall comes.
  const auto r =
      tune_with(server, dir, {"--budget", "1000evals", "--wall", "20", "--llm-timeout", "600", "--focus", "256x4096"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.err);
  MESSAGE("--wall 20 against a silent server ended after ", took, " s");
  CHECK(took < 20 + 8);  // start-up (the check, the baseline), the search's wind-down
  const std::string journal = read_file(dir / "run.jsonl");
  INFO(journal.substr(journal.size() > 3000 ? journal.size() - 3000 : 0));
  // Requests the search sent (besides the start-up check) were in flight when the wall came: each is
  // journaled as cancelled. On a machine busy enough that start-up took the whole wall, none was sent.
  if (chat_requests(server) > 1)
    CHECK(contains(journal, "\"status\":\"cancelled\""));
  else
    MESSAGE("start-up took the whole --wall on this machine: no model request was in flight to cancel");
}

TEST_CASE("endpoint CLI: a budget in evaluations bounds the prompts a model that never writes code is sent") {
  const kb_test::temp_dir dir("endpoint_no_code");
  loopback_server server;
  // Replies with realistic token counts (4 bytes a token) and never any code.
  server.set_handler(check_then([](received_request const& r) {
    return server_action::openai("I am sorry, I cannot help with that.", "stop",
                                 kb_test::usage_counts{r.body.size() / 4, 10});
  }));
  const auto r = tune_with(server, dir, {"--budget", "8evals"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "model spending capped at "));
  CHECK(contains(r.err, "32 candidates"));
  CHECK(contains(r.err, "8 evaluations x"));
  // At most four prompts per evaluation the budget allows, and what was in flight at the stop.
  MESSAGE("prompts sent with --budget 8evals: ", chat_requests(server) - 1);
  CHECK(chat_requests(server) - 1 <= 4 * 8 + 16);
}

TEST_CASE(
    "endpoint CLI: a context too short for the search is a warning before the first prompt, and --llm-no-stream asks "
    "for whole replies") {
  const kb_test::temp_dir dir("endpoint_context");
  loopback_server server;
  // A vLLM server serving the model with an 8192-token context: the default 16384-token reply
  // limit cannot fit.
  server.set_handler([](received_request const& r) {
    if (r.method == "GET" && r.target == "/v1/models")
      return server_action::status(
          200, R"({"object":"list","data":[{"id":"loopback-model","object":"model","max_model_len":8192}]})");
    if (r.method != "POST") return server_action::status(404, R"({"error":{"message":"no such path"}})");
    return server_action::openai("no code here");
  });
  auto r = tune_with(server, dir, {"--budget", "2evals"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto warning = r.err.find("kernelbrain tune: warning: the server reports a context of 8192 tokens");
  CHECK(warning != std::string::npos);
  CHECK(contains(r.err, "--llm-max-tokens"));
  // Before the first prompt of the search: the check is the only chat request before the warning.
  const auto all = server.requests();
  CHECK(all.front().wants_stream());
  CHECK(all.front().method == "POST");

  // --llm-no-stream: whole replies asked for, and said so.
  const kb_test::temp_dir dir2("endpoint_no_stream");
  r = tune_with(server, dir2, {"--budget", "2evals", "--llm-no-stream", "--llm-max-tokens", "2048"});
  CHECK(r.exit_code == 0);
  CHECK_FALSE(contains(r.err, "warning: the server reports a context"));  // 2048 out fits
  CHECK_FALSE(server.requests().back().wants_stream());
  CHECK(contains(r.out + r.err, "whole replies"));
}

#endif
