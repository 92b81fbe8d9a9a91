// The HTTP model client (generate/llm/http_client.hpp) against the scripted loopback server
// (tests/llm_loopback_server.hpp): both wire formats, faults and retries, bounds, keys kept out of
// every message, concurrency and order, TLS (with an OpenSSL build) and proxies; and the parts with
// no network: URLs, NO_PROXY, Retry-After.
//
// Times: short timeouts and a 1 s Retry-After keep the file to a few seconds; elapsed-time checks
// are lower bounds, upper bounds only where they are generous (busy 2-core CI machines).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>
#include "llm_loopback_server.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
using namespace kernelbrain::llm;
using kb_test::loopback_server;
using kb_test::server_action;
using std::chrono::milliseconds;

namespace {

const std::string the_key = "sk-test-SECRET-5f1e2d3c4b5a69788796";

bool contains(std::string const& s, std::string const& part) { return s.find(part) != std::string::npos; }

/// Options for a loopback server: short timeouts, small backoff, no proxy from the environment.
http_client_options options_for(loopback_server const& s, wire_format f = wire_format::openai) {
  http_client_options o;
  o.format = f;
  o.base_url = s.url();
  o.model = "loopback-model";
  o.api_key = the_key;
  o.proxy = "none";
  o.connect_timeout_seconds = 5;
  o.request_timeout_seconds = 10;
  o.max_retries = 2;
  o.backoff_base_seconds = 0.01;
  o.backoff_max_seconds = 0.05;
  o.retry_after_cap_seconds = 5;
  o.max_reply_bytes = std::size_t{1} << 20;
  o.concurrency = 4;
  return o;
}

chat_request ask(std::string user, std::string system = "You write kernels.") {
  chat_request r;
  r.prompt.system = std::move(system);
  r.prompt.user = std::move(user);
  r.max_tokens = 256;
  r.temperature = 0.5;
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string check_message(model_client& c) {
  try {
    c.check(ask("Write a kernel."));
  } catch (kernelbrain::error const& e) {
    return e.what();
  }
  return "(no error)";
}

#if defined(KERNELBRAIN_HAVE_OPENSSL)
kb_test::tls_files const& test_certificate() {
  static const kb_test::tls_files files = kb_test::make_test_certificate(kb_test::process_dir("llm_tls"));
  return files;
}
#endif

}  // namespace

TEST_CASE("http_client: OpenAI format, the request on the wire and the reply read back") {
  loopback_server server;
  server.push(server_action::openai("```cuda\n__global__ void k() {}\n```", "stop", kb_test::usage_counts{120, 30}));
  auto o = options_for(server);
  o.price_per_input_token = 0.5;
  o.price_per_output_token = 2;
  auto client = make_http_client(o);
  const auto reply = client->complete(ask("make it fast"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "```cuda\n__global__ void k() {}\n```");
  CHECK(reply.finish_reason == "stop");
  CHECK(reply.model == "loopback-model");
  CHECK(reply.usage.input == 120);
  CHECK(reply.usage.output == 30);
  CHECK_FALSE(reply.usage.estimated);
  CHECK(reply.usage.cost == doctest::Approx(120 * 0.5 + 30 * 2));
  CHECK(reply.attempts == 1);
  CHECK(reply.latency_seconds > 0);
  CHECK(reply.error.empty());

  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  auto const& r = reqs[0];
  CHECK(r.method == "POST");
  CHECK(r.target == "/v1/chat/completions");
  CHECK(r.header("authorization") == "Bearer " + the_key);
  CHECK(contains(r.header("content-type"), "application/json"));
  CHECK(r.header("host") == "127.0.0.1:" + std::to_string(server.port()));
  CHECK_FALSE(r.has_header("x-api-key"));
  CHECK(r.model() == "loopback-model");
  CHECK(r.system_text() == "You write kernels.");
  CHECK(r.user_text() == "make it fast");
  CHECK(r.number("max_tokens") == 256);
  CHECK(r.number("temperature") == doctest::Approx(0.5));
  auto const body = r.json().as_object();
  CHECK(body.at("messages").as_array().size() == 2);
  CHECK(body.at("messages").as_array()[0].as_object().at("role").as_string() == "system");
}

TEST_CASE("http_client: Anthropic format, headers, system field and text parts concatenated") {
  loopback_server server;
  server.push(server_action::status(
      200, R"({"id":"m","type":"message","model":"claude-x","content":[{"type":"text","text":"first "},)"
           R"({"type":"tool_use","id":"t","name":"n","input":{}},{"type":"text","text":"second"}],)"
           R"("stop_reason":"end_turn","usage":{"input_tokens":40,"output_tokens":7}})"));
  auto o = options_for(server, wire_format::anthropic);
  o.temperature = 0.2;  // overrides the request's
  o.max_tokens = 100;   // caps the request's 256
  auto client = make_http_client(o);
  const auto reply = client->complete(ask("hello"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "first second");
  CHECK(reply.finish_reason == "end_turn");
  CHECK(reply.model == "claude-x");
  CHECK(reply.usage.input == 40);
  CHECK(reply.usage.output == 7);
  CHECK_FALSE(reply.usage.estimated);

  const auto r = server.requests().at(0);
  CHECK(r.target == "/v1/messages");
  CHECK(r.header("x-api-key") == the_key);
  CHECK(r.header("anthropic-version") == "2023-06-01");
  CHECK_FALSE(r.has_header("authorization"));
  auto const body = r.json().as_object();
  CHECK(body.at("system").as_string() == "You write kernels.");
  CHECK(body.at("messages").as_array().size() == 1);
  CHECK(r.user_text() == "hello");
  CHECK(r.number("max_tokens") == 100);
  CHECK(r.number("temperature") == doctest::Approx(0.2));

  // The default reply of the server follows the request's format.
  const auto echo = client->complete(ask("again"));
  CHECK(echo.status == call_status::ok);
  CHECK(echo.text == "ok");
}

TEST_CASE("http_client: a slow reply within the timeout is read, one beyond it and an endless drip time out") {
  loopback_server server;
  auto o = options_for(server);
  o.stream = false;  // whole replies: a total per attempt (streamed ones: tests/test_llm_endpoint.cpp)
  o.request_timeout_seconds = 3;
  server.push(server_action::reply("slow").after(milliseconds(300)));
  {
    auto client = make_http_client(o);
    const auto reply = client->complete(ask("x"));
    CHECK(reply.status == call_status::ok);
    CHECK(reply.text == "slow");
    CHECK(reply.latency_seconds >= 0.29);
  }
  o.request_timeout_seconds = 0.5;
  o.max_retries = 0;
  auto client = make_http_client(o);
  server.push(server_action::reply("too late").after(milliseconds(4000)));
  auto t0 = std::chrono::steady_clock::now();
  auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(contains(reply.error, "request_timeout_seconds"));
  CHECK(reply.attempts == 1);
  CHECK(seconds_since(t0) >= 0.49);
  CHECK(seconds_since(t0) < 3.5);

  server.push(server_action::drip(milliseconds(20)));
  t0 = std::chrono::steady_clock::now();
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(contains(reply.error, "did not finish within request_timeout_seconds"));
  CHECK(seconds_since(t0) >= 0.49);
  CHECK(seconds_since(t0) < 3.5);
}

TEST_CASE("http_client: 429 with Retry-After is retried after the wait it asks for") {
  loopback_server server;
  server.script({server_action::status(429, R"({"error":{"message":"slow down"}})", "1"),
                 server_action::reply("after the wait")});
  auto o = options_for(server);
  o.backoff_base_seconds = 0;  // only Retry-After can explain a wait
  auto client = make_http_client(o);
  const auto t0 = std::chrono::steady_clock::now();
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "after the wait");
  CHECK(reply.attempts == 2);
  CHECK(seconds_since(t0) >= 0.99);
  CHECK(reply.latency_seconds >= 0.99);
  CHECK(server.request_count() == 2);

  // Capped: a Retry-After of an hour waits retry_after_cap_seconds.
  o.retry_after_cap_seconds = 0.2;
  auto capped = make_http_client(o);
  server.script({server_action::status(503, "", "3600"), server_action::reply("soon")});
  const auto t1 = std::chrono::steady_clock::now();
  const auto r2 = capped->complete(ask("x"));
  CHECK(r2.status == call_status::ok);
  CHECK(seconds_since(t1) >= 0.19);
  CHECK(seconds_since(t1) < 5);
}

TEST_CASE("http_client: 500 and 503 then success are retried, 501 is not") {
  loopback_server server;
  server.script({server_action::status(500), server_action::status(503), server_action::reply("third time")});
  auto client = make_http_client(options_for(server));
  auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "third time");
  CHECK(reply.attempts == 3);

  server.script({server_action::status(500), server_action::status(500), server_action::status(502)});
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 3);
  CHECK(contains(reply.error, "server error (HTTP 502"));
  CHECK(contains(reply.error, "after 3 attempts"));

  server.push(server_action::status(501));
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 1);
  CHECK(contains(reply.error, "HTTP 501"));
}

TEST_CASE("http_client: a reset connection is retried") {
  loopback_server server;
  server.script({server_action::reset(), server_action::reply("after the reset")});
  auto client = make_http_client(options_for(server));
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "after the reset");
  CHECK(reply.attempts == 2);

  server.script({server_action::reset(), server_action::reset(), server_action::reset()});
  const auto failed = client->complete(ask("x"));
  CHECK(failed.status == call_status::failed);
  CHECK(failed.attempts == 3);
  CHECK((contains(failed.error, "reset") || contains(failed.error, "closed")));
}

TEST_CASE("http_client: malformed JSON and truncated bodies are retried, and fail clearly at the end") {
  loopback_server server;
  auto client = make_http_client(options_for(server));
  server.script({server_action::malformed(), server_action::reply("good")});
  auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.attempts == 2);

  server.script({server_action::malformed(), server_action::malformed(), server_action::malformed()});
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 3);
  CHECK(contains(reply.error, "not valid JSON"));

  server.script({server_action::truncated(), server_action::reply("whole")});
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "whole");
  CHECK(reply.attempts == 2);

  server.script({server_action::truncated(), server_action::truncated(), server_action::truncated()});
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(contains(reply.error, "closed mid-reply"));

  // A 200 whose JSON has no choices.
  server.script({server_action::status(200, R"({"object":"chat.completion"})"), server_action::reply("fine")});
  reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.attempts == 2);
}

TEST_CASE("http_client: no usage in the reply: estimated tokens, and the cost from them") {
  loopback_server server;
  const std::string text(400, 'a');
  server.push(server_action::openai(text).without_usage());
  auto o = options_for(server);
  o.price_per_input_token = 1;
  o.price_per_output_token = 10;
  auto client = make_http_client(o);
  const auto req = ask(std::string(80, 'u'), std::string(40, 's'));
  const auto reply = client->complete(req);
  CHECK(reply.status == call_status::ok);
  CHECK(reply.usage.estimated);
  CHECK(reply.usage.input == estimate_tokens(req.prompt.system) + estimate_tokens(req.prompt.user));
  CHECK(reply.usage.output == estimate_tokens(text));
  CHECK(reply.usage.cost == doctest::Approx(30 + 100 * 10));
}

TEST_CASE("http_client: the model's token limit gives a cut reply with its text") {
  loopback_server server;
  server.push(server_action::openai("half a ker", "length"));
  auto client = make_http_client(options_for(server));
  auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::cut);
  CHECK(reply.text == "half a ker");
  CHECK(reply.finish_reason == "length");
  CHECK(contains(reply.error, "token limit"));
  CHECK(reply.attempts == 1);

  loopback_server anthropic;
  anthropic.push(server_action::anthropic("half", "max_tokens"));
  auto aclient = make_http_client(options_for(anthropic, wire_format::anthropic));
  reply = aclient->complete(ask("x"));
  CHECK(reply.status == call_status::cut);
  CHECK(reply.text == "half");
}

TEST_CASE("http_client: a huge reply is bounded by max_reply_bytes, with Content-Length or chunked") {
  loopback_server server;
  auto o = options_for(server);
  o.max_reply_bytes = 64 * 1024;
  auto client = make_http_client(o);
  for (const bool chunked : {false, true}) {
    CAPTURE(chunked);
    server.push(server_action::huge(std::size_t{256} << 20, chunked));
    const auto t0 = std::chrono::steady_clock::now();
    const auto reply = client->complete(ask("x"));
    CHECK(reply.status == call_status::failed);
    CHECK(contains(reply.error, "reply over 65536 bytes"));
    CHECK(reply.attempts == 1);
    CHECK(seconds_since(t0) < 5);  // 256 MiB were not read
  }
}

TEST_CASE("http_client: 401 is not retried, says so clearly, and never shows the key") {
  loopback_server server;
  // A server that echoes the key it was given, as some do.
  server.push(server_action::status(401, R"({"error":{"message":"Incorrect API key provided: )" + the_key + R"(."}})"));
  auto client = make_http_client(options_for(server));
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 1);
  CHECK(server.request_count() == 1);
  CHECK(contains(reply.error, "the endpoint refused the key (HTTP 401"));
  CHECK(contains(reply.error, "Incorrect API key provided"));
  CHECK_FALSE(contains(reply.error, the_key));
  CHECK_FALSE(contains(reply.error, "SECRET"));
  CHECK_FALSE(contains(client->describe(), the_key));
  CHECK(contains(client->describe(), "loopback-model"));

  server.push(server_action::status(403, R"({"error":{"message":"key )" + the_key + R"( is not allowed"}})"));
  const std::string m = check_message(*client);
  CHECK(contains(m, "refused the key (HTTP 403"));
  CHECK_FALSE(contains(m, the_key));
  CHECK(server.request_count() == 2);

  // A long message is cut to a short excerpt.
  server.push(server_action::status(400, R"({"error":{"message":")" + std::string(5000, 'z') + R"("}})"));
  const auto bad = client->complete(ask("x"));
  CHECK(contains(bad.error, "rejected the request (HTTP 400"));
  CHECK(bad.error.size() < 600);
}

TEST_CASE("http_client: an unknown model (404) fails at once, at check() too") {
  loopback_server server([](kb_test::received_request const& r) {
    if (r.model() != "loopback-model")
      return server_action::status(404, R"({"error":{"message":"The model `)" + r.model() + R"(` does not exist"}})");
    return server_action::reply("ok");
  });
  auto o = options_for(server);
  o.model = "nope";
  auto client = make_http_client(o);
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 1);
  CHECK(contains(reply.error, "model 'nope' or path /v1/chat/completions not found at 127.0.0.1:"));
  CHECK(contains(reply.error, "(HTTP 404"));
  CHECK(reply.permanent);
  CHECK(contains(reply.error, "The model `nope` does not exist"));
  const std::string m = check_message(*client);
  CHECK(contains(m, "model check failed"));
  CHECK(contains(m, "model 'nope'"));
  CHECK(contains(m, "HTTP 404"));

  o.model = "loopback-model";
  auto good = make_http_client(o);
  CHECK_NOTHROW(good->check(ask("hi")));
  // The check's chat request (after it, the client asks the server what context it serves).
  const auto sent = server.requests();
  const auto last = std::find_if(sent.rbegin(), sent.rend(), [](auto const& r) { return r.method == "POST"; });
  REQUIRE(last != sent.rend());
  CHECK(last->number("max_tokens") == 256);  // the request it was given to look like
}

TEST_CASE("http_client: check() against a closed port says the connection was refused") {
  http_client_options o;
  o.base_url = "http://127.0.0.1:1/v1";
  o.model = "m";
  o.api_key = the_key;
  o.proxy = "none";
  o.max_retries = 1;
  o.backoff_base_seconds = 0.01;
  auto client = make_http_client(o);
  const std::string m = check_message(*client);
  CHECK(contains(m, "cannot connect to 127.0.0.1:1 (connection refused)"));
  CHECK_FALSE(contains(m, the_key));
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 2);
}

TEST_CASE("http_client: complete_all holds at most `concurrency` requests at once and keeps request order") {
  loopback_server server([](kb_test::received_request const& r) {
    // Later requests answer sooner, so they finish out of order.
    const int i = std::stoi(r.user_text().substr(8));
    return server_action::reply("answer " + std::to_string(i)).after(milliseconds(60 + 15 * (9 - i)));
  });
  auto o = options_for(server);
  o.concurrency = 3;
  auto client = make_http_client(o);
  CHECK(client->concurrency() == 3);
  std::vector<chat_request> reqs;
  for (int i = 0; i < 9; ++i) reqs.push_back(ask("request " + std::to_string(i)));
  const auto replies = client->complete_all(reqs);
  REQUIRE(replies.size() == 9);
  for (int i = 0; i < 9; ++i) {
    CHECK(replies[i].status == call_status::ok);
    CHECK(replies[i].text == "answer " + std::to_string(i));
  }
  CHECK(server.request_count() == 9);
  CHECK(server.max_concurrent() <= 3);
  CHECK(server.max_concurrent() > 1);

  // complete() from more threads than that waits for a slot.
  loopback_server second(
      [](kb_test::received_request const&) { return server_action::reply("x").after(milliseconds(50)); });
  o = options_for(second);
  o.concurrency = 2;
  auto narrow = make_http_client(o);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] { ok += narrow->complete(ask("y")).status == call_status::ok ? 1 : 0; });
  for (auto& t : threads) t.join();
  CHECK(ok == 6);
  CHECK(second.max_concurrent() <= 2);
}

TEST_CASE("http_client: an http target through an http proxy: absolute-form, proxy credentials never shown") {
  loopback_server proxy;  // answers as if it had forwarded the request
  auto o = options_for(proxy);
  o.base_url = "http://models.example.invalid:8080/v1";
  o.proxy = "http://kb:pa%3Ass-word@127.0.0.1:" + std::to_string(proxy.port());
  auto client = make_http_client(o);
  CHECK(contains(client->describe(), "via proxy 127.0.0.1:" + std::to_string(proxy.port())));
  CHECK_FALSE(contains(client->describe(), "pa%3Ass-word"));
  const auto reply = client->complete(ask("x"));
  CHECK(reply.status == call_status::ok);
  const auto r = proxy.requests().at(0);
  CHECK(r.target == "http://models.example.invalid:8080/v1/chat/completions");
  CHECK(r.header("host") == "models.example.invalid:8080");
  CHECK(r.header("proxy-authorization") == "Basic a2I6cGE6c3Mtd29yZA==");  // kb:pa:ss-word
  CHECK(r.header("authorization") == "Bearer " + the_key);

  proxy.push(server_action::status(502, R"({"error":{"message":"upstream kb:pa:ss-word failed"}})"));
  o.max_retries = 0;
  auto once = make_http_client(o);
  const auto bad = once->complete(ask("x"));
  CHECK(bad.status == call_status::failed);
  CHECK_FALSE(contains(bad.error, "pa:ss-word"));

  // NO_PROXY-style bypass through the option: "none" goes direct.
  loopback_server direct;
  auto d = options_for(direct);
  d.proxy = "none";
  CHECK(make_http_client(d)->complete(ask("x")).status == call_status::ok);
  CHECK(direct.request_count() == 1);
}

TEST_CASE("http_client: NO_PROXY matching and the proxy chosen from the environment") {
  using http_detail::no_proxy_matches;
  CHECK(no_proxy_matches("*", "api.openai.com"));
  CHECK(no_proxy_matches("localhost,127.0.0.1", "127.0.0.1"));
  CHECK(no_proxy_matches("example.com", "example.com"));
  CHECK(no_proxy_matches("example.com", "api.EXAMPLE.com"));
  CHECK(no_proxy_matches(".example.com", "api.example.com"));
  CHECK(no_proxy_matches(".example.com", "example.com"));
  CHECK(no_proxy_matches("*.example.com", "a.b.example.com"));
  CHECK_FALSE(no_proxy_matches("example.com", "badexample.com"));
  CHECK_FALSE(no_proxy_matches("example.com", "example.com.evil"));
  CHECK(no_proxy_matches(" foo , example.com:443 ", "example.com"));
  CHECK(no_proxy_matches("10.0.0.0/8", "10.1.2.3"));
  CHECK_FALSE(no_proxy_matches("10.0.0.0/8", "11.1.2.3"));
  CHECK(no_proxy_matches("[::1]", "::1"));
  CHECK(no_proxy_matches("fd00::/8", "fd12::5"));
  CHECK_FALSE(no_proxy_matches("", "example.com"));
  CHECK_FALSE(no_proxy_matches(",,", "example.com"));

  static std::map<std::string, std::string> env;
  const http_detail::env_lookup lookup = [](char const* name) -> char const* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  const auto https = http_detail::parse_url("https://api.openai.com/v1", "t");
  const auto http = http_detail::parse_url("http://10.0.0.5:8000/v1", "t");
  env = {{"HTTPS_PROXY", "http://proxy:3128"}, {"http_proxy", "proxy2:8080"}};
  CHECK(http_detail::proxy_for(https, "", lookup) == "http://proxy:3128");
  CHECK(http_detail::proxy_for(http, "", lookup) == "proxy2:8080");
  CHECK(http_detail::proxy_for(https, "none", lookup).empty());
  CHECK(http_detail::proxy_for(https, "http://mine:1", lookup) == "http://mine:1");
  env["NO_PROXY"] = "openai.com,10.0.0.0/8";
  CHECK(http_detail::proxy_for(https, "", lookup).empty());
  CHECK(http_detail::proxy_for(http, "", lookup).empty());
  env["no_proxy"] = "other.org";  // the lower-case one wins
  CHECK(http_detail::proxy_for(https, "", lookup) == "http://proxy:3128");
  // The environment's proxy is never for this machine; a proxy in the options is.
  for (char const* local :
       {"http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1", "http://127.1.2.3/v1"}) {
    CAPTURE(local);
    CHECK(http_detail::proxy_for(http_detail::parse_url(local, "t"), "", lookup).empty());
    CHECK(http_detail::proxy_for(http_detail::parse_url(local, "t"), "http://mine:1", lookup) == "http://mine:1");
  }
  env.clear();
  CHECK(http_detail::proxy_for(https, "", lookup).empty());
}

TEST_CASE("http_client: URLs, options and wire formats that make_http_client refuses") {
  const auto u = http_detail::parse_url("HTTPS://Api.Example.com:8443/v1/", "base_url");
  CHECK(u.scheme == "https");
  CHECK(u.host == "api.example.com");
  CHECK(u.port == 8443);
  CHECK(u.path == "/v1");
  CHECK(u.host_header() == "api.example.com:8443");
  const auto v6 = http_detail::parse_url("http://[::1]:8000", "base_url");
  CHECK(v6.host == "::1");
  CHECK(v6.authority() == "[::1]:8000");
  CHECK(v6.path.empty());
  CHECK(http_detail::parse_url("http://h/v1", "x").port == 80);
  CHECK(http_detail::parse_url("https://h/v1", "x").host_header() == "h");
  for (char const* bad : {"ftp://h/v1", "h:80/v1", "http://:80/v1", "http://h:0/", "http://h:99999/", "http://h:x/",
                          "http://h/v1?q=1", "http://h /v1", "http://[::1/v1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS((void)http_detail::parse_url(bad, "base_url"), kernelbrain::error);
  }
  try {
    (void)http_detail::parse_url("ftp://user:hunter2@h/v1", "proxy");
    FAIL("no error");
  } catch (kernelbrain::error const& e) {
    CHECK_FALSE(contains(e.what(), "hunter2"));
  }

  http_client_options o;
  o.model = "m";
  o.proxy = "none";
  o.base_url = "http://127.0.0.1:9/v1";
  CHECK_NOTHROW((void)make_http_client(o));
  o.model = "";
  CHECK_THROWS_WITH_AS((void)make_http_client(o), doctest::Contains("no model"), kernelbrain::error);
  o.model = "m";
  o.base_url = "http://user:" + the_key + "@127.0.0.1:9/v1";
  try {
    (void)make_http_client(o);
    FAIL("no error");
  } catch (kernelbrain::error const& e) {
    CHECK_FALSE(contains(e.what(), the_key));
  }
  o.base_url = "http://127.0.0.1:9/v1";
  o.api_key = "line\nbreak";
  CHECK_THROWS_AS((void)make_http_client(o), kernelbrain::error);
  o.api_key = the_key;
  o.concurrency = 0;
  CHECK_THROWS_AS((void)make_http_client(o), kernelbrain::error);
  o.concurrency = 1;
  o.request_timeout_seconds = 0;
  CHECK_THROWS_AS((void)make_http_client(o), kernelbrain::error);
  o.request_timeout_seconds = 5;
  o.proxy = "https://proxy:443";
  CHECK_THROWS_WITH_AS((void)make_http_client(o), doctest::Contains("http:// proxy"), kernelbrain::error);
  o.proxy = "none";
  // An empty base_url is the format's public endpoint; a full path is used as it is.
  o.base_url = "";
  o.format = wire_format::anthropic;
  if (http_client_has_tls()) CHECK(contains(make_http_client(o)->describe(), "https://api.anthropic.com/v1/messages"));
  o.base_url = "http://127.0.0.1:9/v1/messages";
  CHECK(contains(make_http_client(o)->describe(), "http://127.0.0.1:9/v1/messages,"));
  if (!http_client_has_tls()) {
    o.base_url = "https://127.0.0.1:9/v1";
    CHECK_THROWS_WITH_AS((void)make_http_client(o), doctest::Contains("built without OpenSSL"), kernelbrain::error);
  }

  CHECK(parse_wire_format("openai") == wire_format::openai);
  CHECK(parse_wire_format("Anthropic") == wire_format::anthropic);
  CHECK_THROWS_WITH_AS((void)parse_wire_format("gemini"), doctest::Contains("openai or anthropic"), kernelbrain::error);
  CHECK(to_string(wire_format::anthropic) == "anthropic");
}

TEST_CASE("http_client: Retry-After as seconds or an HTTP-date") {
  using http_detail::parse_retry_after;
  CHECK(parse_retry_after("1", 0) == 1.0);
  CHECK(parse_retry_after(" 120 ", 0) == 120.0);
  CHECK(parse_retry_after("0.5", 0) == 0.5);
  const std::int64_t t = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", t - 30) == 30.0);
  CHECK(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", t - 30) == 30.0);
  CHECK(parse_retry_after("Sun Nov  6 08:49:37 1994", t - 30) == 30.0);
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", t + 100) == 0.0);  // in the past
  CHECK_FALSE(parse_retry_after("", 0));
  CHECK_FALSE(parse_retry_after("soon", 0));
  CHECK_FALSE(parse_retry_after("-5", 0));
  CHECK_FALSE(parse_retry_after("Sun, 32 Nov 1994 08:49:37 GMT", 0));
}

#if defined(KERNELBRAIN_HAVE_OPENSSL)
TEST_CASE("http_client: TLS: trusted through ca_file, refused without it, accepted with verification off") {
  REQUIRE(http_client_has_tls());
  auto const& cert = test_certificate();
  loopback_server server(cert);
  REQUIRE(server.tls());

  auto o = options_for(server);
  o.ca_file = cert.cert.string();
  auto trusted = make_http_client(o);
  auto reply = trusted->complete(ask("over tls"));
  CHECK(reply.status == call_status::ok);
  CHECK(reply.text == "ok");
  CHECK_NOTHROW(trusted->check(ask("hi")));
  CHECK(server.requests().at(0).header("authorization") == "Bearer " + the_key);

  // By host name: SNI and the DNS name in the certificate.
  o.base_url = "https://localhost:" + std::to_string(server.port()) + "/v1";
  reply = make_http_client(o)->complete(ask("by name"));
  CHECK(reply.status == call_status::ok);

  o.base_url = server.url();
  o.ca_file.clear();
  auto untrusted = make_http_client(o);
  reply = untrusted->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(reply.attempts == 1);  // not retried
  CHECK(contains(reply.error, "is not trusted"));
  CHECK(contains(reply.error, "ca_file"));
  const std::string m = check_message(*untrusted);
  CHECK(contains(m, "not trusted"));
  CHECK_FALSE(contains(m, the_key));

  o.verify_tls = false;
  auto unverified = make_http_client(o);
  CHECK(contains(unverified->describe(), "TLS verification off"));
  CHECK(unverified->complete(ask("x")).status == call_status::ok);

  o.verify_tls = true;
  o.ca_file = (kb_test::process_dir("llm_tls") + "/missing.pem");
  CHECK_THROWS_WITH_AS((void)make_http_client(o), doctest::Contains("CA file"), kernelbrain::error);
}

TEST_CASE("http_client: TLS: a certificate for another name is refused") {
  kb_test::temp_dir dir("llm_tls_other");
  const auto other = kb_test::make_test_certificate(dir.path, "DNS:other.example");
  loopback_server server(other);
  auto o = options_for(server);
  o.ca_file = other.cert.string();
  const auto reply = make_http_client(o)->complete(ask("x"));
  CHECK(reply.status == call_status::failed);
  CHECK(contains(reply.error, "not trusted"));
  CHECK(contains(reply.error, "mismatch"));
}

TEST_CASE("http_client: an https target through an http proxy's CONNECT tunnel") {
  auto const& cert = test_certificate();
  loopback_server server(cert);
  loopback_server proxy;
  proxy.enable_tunnels();
  auto o = options_for(server);
  o.ca_file = cert.cert.string();
  o.proxy = "127.0.0.1:" + std::to_string(proxy.port());
  auto client = make_http_client(o);
  const auto reply = client->complete(ask("tunnelled"));
  CHECK(reply.status == call_status::ok);
  CHECK(proxy.tunnel_count() == 1);
  const auto connect = proxy.requests().at(0);
  CHECK(connect.method == "CONNECT");
  CHECK(connect.target == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(server.requests().at(0).target == "/v1/chat/completions");  // origin-form inside the tunnel
  CHECK(server.requests().at(0).user_text() == "tunnelled");
}
#endif
