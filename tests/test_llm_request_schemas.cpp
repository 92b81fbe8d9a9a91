// Every request body the HTTP model client can send, validated against the providers' published
// request schemas (issue 25): OpenAI's OpenAPI spec for chat completions and the Anthropic messages
// API as its official SDK types it, transcribed in tests/schemas/ (see their $comment). Every
// combination of what changes a body: wire format, reply-limit parameter, a cap on it, temperature
// (none, per request, per client, at the ends of the range), streaming, a system prompt or none,
// the start-up check's request beside the search's. A temperature outside the format's range is
// refused before anything is sent. The validator is shown to fail on bodies that break each rule.
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <optional>
#include <string>
#include <vector>
#include "json_schema.hpp"
#include "llm_client_helpers.hpp"
#include "llm_loopback_server.hpp"

using namespace kernelbrain;
using namespace kernelbrain::llm;
using kb_test::json_schema;
using kb_test::loopback_server;

namespace {

json_schema const& schema_for(wire_format f) {
  static const json_schema openai = json_schema::from_file(std::filesystem::path(KB_SOURCE_DIR) /
                                                           "tests/schemas/openai-chat-completions-request.json");
  static const json_schema anthropic =
      json_schema::from_file(std::filesystem::path(KB_SOURCE_DIR) / "tests/schemas/anthropic-messages-request.json");
  return f == wire_format::anthropic ? anthropic : openai;
}

std::string joined(std::vector<std::string> const& v) {
  std::string out;
  for (auto const& s : v) out += s + "\n";
  return out;
}

}  // namespace

TEST_CASE("request schemas: every request the client can send conforms to the provider's published schema") {
  loopback_server server;
  std::size_t validated = 0;
  for (auto f : {wire_format::openai, wire_format::anthropic}) {
    const double most = f == wire_format::anthropic ? 1.0 : 2.0;
    std::vector<token_parameter> limits = {token_parameter::automatic, token_parameter::max_tokens};
    if (f == wire_format::openai) {
      limits.push_back(token_parameter::max_completion_tokens);
      limits.push_back(token_parameter::none);
    }
    for (auto limit : limits)
      for (std::size_t cap : {std::size_t{0}, std::size_t{100}})
        for (double client_temperature : {-1.0, 0.0, most})
          for (std::optional<double> request_temperature : {std::optional<double>{}, std::optional<double>{0.0},
                                                            std::optional<double>{0.7}, std::optional<double>{most}})
            for (bool stream : {true, false})
              for (bool system : {true, false}) {
                auto o = kb_test::loopback_options(server, f);
                o.max_retries = 0;
                o.token_limit = limit;
                o.max_tokens = cap;
                o.temperature = client_temperature;
                o.stream = stream;
                auto client = make_http_client(o);
                chat_request r;
                r.prompt.system = system ? "You write kernels." : "";
                r.prompt.user = "Write a kernel: \"quotes\", \\backslashes\\, a tab\t, a newline\n, and \xc3\xa9.";
                r.max_tokens = 4096;
                r.temperature = request_temperature;
                const auto before = server.request_count();
                const auto reply = client->complete(r);
                REQUIRE(reply.status == call_status::ok);
                (void)client->check(r);
                const auto sent = server.requests();
                for (std::size_t i = before; i < sent.size(); ++i) {
                  if (sent[i].method != "POST") continue;  // the check's GETs of what the server serves
                  const auto body = boost::json::parse(sent[i].body);
                  const auto wrong = schema_for(f).violations(body);
                  CAPTURE(sent[i].body);
                  CHECK_MESSAGE(wrong.empty(), joined(wrong));
                  // One reply limit at most, never both names.
                  CHECK_FALSE((sent[i].number("max_tokens") && sent[i].number("max_completion_tokens")));
                  ++validated;
                }
              }
  }
  MESSAGE("request bodies validated: ", validated);
  CHECK(validated == 2 * (4 + 2) * 2 * 3 * 4 * 2 * 2);  // complete() and check() for every combination
}

TEST_CASE("request schemas: a temperature outside the format's range is refused before anything is sent") {
  loopback_server server;
  http_client_options o;
  o.base_url = server.url();
  o.model = "loopback-model";
  o.proxy = "none";
  o.temperature = 2.5;
  CHECK_THROWS_WITH_AS(make_http_client(o), doctest::Contains("outside 0 to 2"), kernelbrain::error);
  o.format = wire_format::anthropic;
  o.temperature = 1.5;
  CHECK_THROWS_WITH_AS(make_http_client(o), doctest::Contains("outside 0 to 1"), kernelbrain::error);
  o.temperature = -1;
  auto client = make_http_client(o);
  chat_request r;
  r.prompt.user = "x";
  r.temperature = 1.5;
  const auto reply = client->complete(r);
  CHECK(reply.status == call_status::failed);
  CHECK(reply.permanent);
  CHECK(reply.error.find("--llm-temperature") != std::string::npos);
  CHECK(server.request_count() == 0);
}

TEST_CASE("request schemas: the validator refuses bodies that break the published schemas") {
  auto const& openai = schema_for(wire_format::openai);
  auto const& anthropic = schema_for(wire_format::anthropic);
  const auto bad = [](json_schema const& s, char const* body) {
    return !s.violations(boost::json::parse(body)).empty();
  };
  CHECK_FALSE(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":5})"));
  CHECK(bad(openai, R"({"model":"m","messages":[]})"));                                // minItems
  CHECK(bad(openai, R"({"messages":[{"role":"user","content":"x"}]})"));               // model required
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"robot","content":"x"}]})"));  // role enum
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user"}]})"));                 // content required
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"temperature":2.5})"));
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":1.5})"));
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"stream":"yes"})"));
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"max_new_tokens":5})"));
  CHECK(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"usage":true}})"));
  CHECK_FALSE(bad(openai, R"({"model":"m","messages":[{"role":"user","content":"x"}],"temperature":null})"));
  CHECK_FALSE(
      bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"system":"s"})"));
  CHECK(bad(anthropic, R"({"model":"m","messages":[{"role":"user","content":"x"}]})"));  // max_tokens required
  CHECK(bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})"));
  CHECK(bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"temperature":1.5})"));
  CHECK(bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[],"max_completion_tokens":5})"));
  CHECK(bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[],"stream_options":{"include_usage":true}})"));
  CHECK(bad(anthropic, R"({"model":"m","max_tokens":5,"messages":[],"temperature":null})"));
}
