// Streamed model replies (issue 25): server-sent events decoded for both wire formats, whatever
// their framing; a long generation limited by the idle timeout, not a total; stalled, cut and
// failed streams retried; a server that ignores "stream" read as a whole reply; a server that
// refuses streaming named with the option that fixes it; and the start-up check's warning when the
// context a server reports (vLLM's max_model_len, llama.cpp's n_ctx, Ollama's num_ctx or its
// default) is too short for the search's prompts and reply limit.
#include <doctest/doctest.h>

#include <chrono>
#include <kernelbrain/generate/llm/detail/stream_decoder.hpp>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <string>
#include <vector>
#include "llm_client_helpers.hpp"
#include "llm_loopback_server.hpp"

using namespace kernelbrain;
using namespace kernelbrain::llm;
using kb_test::loopback_server;
using kb_test::received_request;
using kb_test::server_action;
using std::chrono::milliseconds;

namespace {

http_client_options options_for(loopback_server const& server, wire_format f = wire_format::openai) {
  return kb_test::loopback_options(server, f);
}
using kb_test::ask;

bool contains(std::string const& text, std::string const& needle) { return text.find(needle) != std::string::npos; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

const std::string kernel_text = "```cpp\n__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n```\nDone.";

}  // namespace

TEST_CASE("stream decoder: events split anywhere, CRLF or CR line ends, comments and multi-line data") {
  const std::string openai =
      ": keep-alive\r\n\r\n"
      "data: {\"model\":\"m1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\\u00e9llo \"}}]}\r\r"
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other choice\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"world\"},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\n"
      "data: \"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"after the end\"}}]}\n\n";
  // Fed whole, then one byte at a time: the same reply.
  for (std::size_t piece : {openai.size(), std::size_t{1}, std::size_t{7}}) {
    CAPTURE(piece);
    http_detail::stream_decoder d(false);
    for (std::size_t at = 0; at < openai.size(); at += piece) d.feed(std::string_view(openai).substr(at, piece));
    CHECK(d.complete());
    CHECK_FALSE(d.failed());
    CHECK(d.text() == "h\xc3\xa9llo world");
    CHECK(d.finish_reason() == "stop");
    CHECK(d.model() == "m1");
    CHECK(d.input_tokens() == 12);
    CHECK(d.output_tokens() == 3);
  }

  http_detail::stream_decoder a(true);
  a.feed(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":"
      "{\"input_tokens\":40,\"output_tokens\":1}}}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
      "{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
      "\"thinking_delta\",\"thinking\":\"not the answer\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
      "\"text_delta\",\"text\":\"the answer\"}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},"
      "\"usage\":{\"output_tokens\":256}}\n\n");
  CHECK_FALSE(a.complete());
  a.feed("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
  CHECK(a.complete());
  CHECK(a.text() == "the answer");
  CHECK(a.finish_reason() == "max_tokens");
  CHECK(a.model() == "claude-x");
  CHECK(a.input_tokens() == 40);
  CHECK(a.output_tokens() == 256);

  http_detail::stream_decoder e(true);
  e.feed(
      "event: error\ndata: "
      "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
  CHECK(e.failed());
  CHECK(contains(e.error(), "overloaded_error"));
  CHECK(contains(e.error(), "Overloaded"));
  http_detail::stream_decoder bad(false);
  bad.feed("data: {not json\n\n");
  CHECK(bad.failed());
  CHECK(contains(bad.error(), "not a JSON object"));
}

TEST_CASE("streaming: both formats ask for a stream and assemble the reply, its usage and its finish reason") {
  for (auto f : {wire_format::openai, wire_format::anthropic}) {
    CAPTURE(to_string(f));
    loopback_server server;
    server.push(server_action::reply(kernel_text));
    server.push(server_action::reply("cut short").without_usage());
    auto client = make_http_client(options_for(server, f));
    auto r = client->complete(ask("write a kernel"));
    REQUIRE(r.status == call_status::ok);
    CHECK(r.text == kernel_text);
    CHECK(r.usage.input == 10);
    CHECK(r.usage.output == 5);
    CHECK_FALSE(r.usage.estimated);
    CHECK(r.model == "loopback-model");
    const auto sent = server.requests().back();
    CHECK(sent.wants_stream());
    CHECK(sent.wants_stream_usage() == (f == wire_format::openai));
    CHECK(contains(sent.header("accept"), "text/event-stream"));
    CHECK(contains(client->describe(), "streamed (idle timeout 5 s)"));
    // No usage in the stream: estimated, and said so.
    r = client->complete(ask("again"));
    REQUIRE(r.status == call_status::ok);
    CHECK(r.text == "cut short");
    CHECK(r.usage.estimated);
  }
  // The model's token limit, streamed: cut, with what came.
  loopback_server server;
  server.push(server_action::openai("half a kern", "length"));
  const auto r = make_http_client(options_for(server))->complete(ask("x"));
  CHECK(r.status == call_status::cut);
  CHECK(r.text == "half a kern");
  CHECK(r.finish_reason == "length");
}

TEST_CASE(
    "streaming: a generation longer than the idle timeout is read, and a stalled stream times out and is retried") {
  loopback_server server;
  // 48 events 100 ms apart: about 5 s in all, against an idle timeout of 1 s.
  server.push(server_action::reply(std::string(16 * 44, 'k')).paced(milliseconds(100)));
  auto o = options_for(server);
  o.idle_timeout_seconds = 1;
  o.request_timeout_seconds = 1;  // whole replies only: not a limit on a stream
  auto client = make_http_client(o);
  auto t0 = std::chrono::steady_clock::now();
  auto r = client->complete(ask("long"));
  CHECK(r.status == call_status::ok);
  CHECK(r.text == std::string(16 * 44, 'k'));
  CHECK(r.attempts == 1);
  CHECK(seconds_since(t0) > 3);

  // Half the events, then silence: the attempt ends one idle timeout later and the retry answers.
  server.push(server_action::stream_stall(kernel_text));
  server.push(server_action::reply("second attempt"));
  t0 = std::chrono::steady_clock::now();
  r = client->complete(ask("stall"));
  CHECK(r.status == call_status::ok);
  CHECK(r.text == "second attempt");
  CHECK(r.attempts == 2);
  CHECK(seconds_since(t0) >= 0.99);
  CHECK(seconds_since(t0) < 8);
  // And when every attempt stalls, the error says so.
  o.max_retries = 0;
  server.push(server_action::stream_stall(kernel_text));
  r = make_http_client(o)->complete(ask("stall"));
  CHECK(r.status == call_status::failed);
  CHECK(contains(r.error, "the stream stalled: nothing within idle_timeout_seconds = 1"));
  CHECK(contains(r.error, "events"));

  // A server that does not stream and sends nothing: the idle timeout bounds the wait for the reply.
  server.push(server_action::reply("late").after(milliseconds(5000)));
  t0 = std::chrono::steady_clock::now();
  r = make_http_client(o)->complete(ask("silent"));
  CHECK(r.status == call_status::failed);
  CHECK(contains(r.error, "no reply from 127.0.0.1:"));
  CHECK(contains(r.error, "idle_timeout_seconds = 1"));
  CHECK(seconds_since(t0) < 4);
}

TEST_CASE("streaming: cut streams, error events and a stream without its end marker are retried") {
  for (auto f : {wire_format::openai, wire_format::anthropic}) {
    CAPTURE(to_string(f));
    loopback_server server;
    auto o = options_for(server, f);
    o.max_retries = 0;
    auto client = make_http_client(o);
    server.push(server_action::stream_cut(kernel_text));
    auto r = client->complete(ask("x"));
    CHECK(r.status == call_status::failed);
    CHECK_FALSE(r.permanent);
    CHECK(contains(r.error, "the stream was cut"));

    const std::string error_event =
        f == wire_format::anthropic
            ? "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
              "\"Overloaded\"}}\n\n"
            : "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":"
              "\"server_error\"}}\n\n";
    server.push(server_action::events(error_event));
    r = client->complete(ask("x"));
    CHECK(r.status == call_status::failed);
    CHECK(contains(r.error, "the stream reported an error"));

    // The retry answers.
    o.max_retries = 1;
    server.push(server_action::events(error_event));
    r = make_http_client(o)->complete(ask("x"));
    CHECK(r.status == call_status::ok);
    CHECK(r.attempts == 2);

    // Every event but the end marker, and a proper end of the body.
    o.max_retries = 0;
    auto events = kb_test::stream_events(f == wire_format::anthropic, "no end", "", std::nullopt, "m", false);
    events.pop_back();
    std::string joined;
    for (auto const& e : events) joined += e;
    server.push(server_action::events(joined));
    r = make_http_client(o)->complete(ask("x"));
    if (f == wire_format::anthropic) {
      CHECK(r.status == call_status::failed);
      CHECK(contains(r.error, "without its end marker (message_stop)"));
    } else {  // the finish reason came: an OpenAI-compatible server may close without [DONE]
      CHECK(r.status == call_status::ok);
      CHECK(r.text == "no end");
    }
  }
}

TEST_CASE("streaming: a server that ignores stream is read whole, and one that refuses it names --llm-no-stream") {
  loopback_server server;
  server.set_streaming(false);
  auto r = make_http_client(options_for(server))->complete(ask("x"));
  CHECK(r.status == call_status::ok);
  CHECK(r.text == "ok");
  CHECK(server.requests().back().wants_stream());

  loopback_server strict([](received_request const& q) {
    if (const auto v = q.json(); v.is_object() && v.get_object().contains("stream_options"))
      return server_action::status(
          400, R"({"error":{"message":"Unrecognized request argument supplied: stream_options","type":)"
               R"("invalid_request_error","param":null,"code":null}})");
    return server_action::reply("fine");
  });
  auto o = options_for(strict);
  r = make_http_client(o)->complete(ask("x"));
  CHECK(r.status == call_status::failed);
  CHECK(r.permanent);
  CHECK(contains(r.error, "refused streaming"));
  CHECK(contains(r.error, "--llm-no-stream"));
  o.stream = false;
  auto whole = make_http_client(o);
  r = whole->complete(ask("x"));
  CHECK(r.status == call_status::ok);
  CHECK(r.text == "fine");
  CHECK_FALSE(strict.requests().back().wants_stream());
  CHECK(contains(whole->describe(), "whole replies"));
}

namespace {

/// A server for the context checks: chat requests answered, GETs of /v1/models, /props,
/// /api/version and POSTs of /api/show answered by `info` (404 when it gives nothing).
loopback_server::handler serving(std::function<std::optional<std::string>(received_request const&)> info) {
  return [info](received_request const& r) {
    if (r.target.ends_with("/chat/completions")) return server_action::openai("ok");
    if (auto body = info(r)) return server_action::status(200, *body);
    return server_action::status(404, R"({"error":"not found"})");
  };
}

std::vector<std::string> check_warnings(loopback_server const& server, std::size_t max_tokens) {
  return make_http_client(options_for(server))->check(ask(std::string(8000, 'p'), max_tokens));
}

}  // namespace

TEST_CASE("context: the check warns when the context a server reports cannot hold prompts and the reply limit") {
  // vLLM: /v1/models has max_model_len. 16384 cannot hold a 2k-token prompt, 4k of headroom and 16k out.
  loopback_server vllm(serving([](received_request const& r) -> std::optional<std::string> {
    if (r.target == "/v1/models")
      return R"({"object":"list","data":[{"id":"other","max_model_len":131072},)"
             R"({"id":"loopback-model","object":"model","owned_by":"vllm","max_model_len":16384}]})";
    return std::nullopt;
  }));
  auto w = check_warnings(vllm, 16384);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "reports a context of 16384 tokens for 'loopback-model'"));
  CHECK(contains(w[0], "max_model_len"));
  CHECK(contains(w[0], "give --llm-max-tokens "));
  CHECK(check_warnings(vllm, 4096).empty());  // fits

  // llama.cpp's server: owned_by llamacpp, the context in /props.
  loopback_server llama(serving([](received_request const& r) -> std::optional<std::string> {
    if (r.target == "/v1/models")
      return R"({"object":"list","data":[{"id":"model.gguf","owned_by":"llamacpp","meta":{"n_ctx_train":32768}}]})";
    if (r.target == "/props") return R"({"default_generation_settings":{"n_ctx":4096},"total_slots":1})";
    return std::nullopt;
  }));
  w = check_warnings(llama, 8192);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "context of 4096 tokens"));
  CHECK(contains(w[0], "/props n_ctx"));

  // Ollama without num_ctx: its default context silently cuts prompts.
  std::string num_ctx;
  std::string running;  // /api/ps: the models loaded, with the context each runs with
  loopback_server ollama(serving([&num_ctx, &running](received_request const& r) -> std::optional<std::string> {
    if (r.target == "/v1/models")
      return R"({"object":"list","data":[{"id":"loopback-model","object":"model","owned_by":"library"}]})";
    if (r.target == "/api/version") return R"({"version":"0.6.2"})";
    if (r.target == "/api/ps") return R"({"models":[)" + running + "]}";
    if (r.target == "/api/show" && r.model() == "loopback-model")
      return R"({"parameters":")" + num_ctx + R"(stop \"<|im_end|>\"","model_info":{"qwen2.context_length":32768}})";
    return std::nullopt;
  }));
  w = check_warnings(ollama, 8192);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "Ollama (version 0.6.2)"));
  CHECK(contains(w[0], "OLLAMA_CONTEXT_LENGTH="));
  CHECK(contains(w[0], "num_ctx"));
  num_ctx = "num_ctx                        32768\\n";
  CHECK(check_warnings(ollama, 8192).empty());
  num_ctx = "num_ctx 8192\\n";
  w = check_warnings(ollama, 8192);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "context of 8192 tokens"));
  // Started with OLLAMA_CONTEXT_LENGTH: /api/ps says what the loaded model runs with, and that wins.
  running = R"({"name":"other:7b","context_length":2048},{"name":"loopback-model","context_length":32768})";
  CHECK(check_warnings(ollama, 8192).empty());
  running = R"({"name":"loopback-model","model":"loopback-model","context_length":4096})";
  w = check_warnings(ollama, 8192);
  REQUIRE(w.size() == 1);
  CHECK(contains(w[0], "context of 4096 tokens"));
  CHECK(contains(w[0], "/api/ps"));

  // A server that reports nothing: no warning, and one that does not answer probes costs seconds, not more.
  loopback_server plain(serving([](received_request const&) -> std::optional<std::string> { return std::nullopt; }));
  CHECK(check_warnings(plain, 16384).empty());
  loopback_server silent([](received_request const& r) {
    return r.method == "POST" ? server_action::openai("ok") : server_action::openai("x").after(std::chrono::hours(1));
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(check_warnings(silent, 16384).empty());
  CHECK(seconds_since(t0) < 6);  // one probe of 3 s, then no more
}
