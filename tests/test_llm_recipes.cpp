// The command lines of docs/llm-clients.md ("Endpoints: command lines that work"), run as written
// against loopback servers that answer as each endpoint does (issue 25): OpenAI (a reasoning model
// that refuses max_tokens and temperatures), Anthropic (its headers and required max_tokens), vLLM
// and SGLang (max_model_len in /v1/models, prompts over it refused), llama.cpp's server (/props
// n_ctx), Ollama (/api/version, /api/ps) and an OpenAI-compatible router (a base path, its own key
// variable, context_length). Only the URL's scheme, host and port, the budget (two evaluations) and
// the backend (host) are changed. Each stand-in refuses what its endpoint refuses and validates every
// body against the provider's published schema (tests/schemas); a recipe passes when the search ran
// to its end with no refusal and no warning.
#ifdef KB_CLI_PATH
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "cli_helpers.hpp"
#include "json_schema.hpp"
#include "llm_loopback_server.hpp"
#include "scoped_env.hpp"
#include "temp_dir.hpp"

using kb_test::loopback_server;
using kb_test::received_request;
using kb_test::server_action;

namespace {

struct recipe {
  std::string name;
  std::map<std::string, std::string> exports;  ///< export VAR=VALUE lines
  std::vector<std::string> command;            ///< the kernelbrain line's words, without "kernelbrain"
};

/// The recipes of docs/llm-clients.md: a "<!-- recipe: NAME -->" line, then a ```sh block.
std::vector<recipe> read_recipes() {
  std::ifstream in(std::filesystem::path(KB_SOURCE_DIR) / "docs/llm-clients.md");
  REQUIRE(in);
  std::vector<recipe> out;
  std::string line;
  const std::string marker = "<!-- recipe: ";
  while (std::getline(in, line)) {
    if (!line.starts_with(marker)) continue;
    recipe r;
    r.name = line.substr(marker.size(), line.find(" -->") - marker.size());
    REQUIRE(std::getline(in, line));
    REQUIRE_MESSAGE(line == "```sh", r.name, ": the recipe marker is not followed by a ```sh block");
    while (std::getline(in, line) && line != "```") {
      REQUIRE_MESSAGE(line.find_first_of("\"'\\") == std::string::npos, r.name, ": quotes in a recipe: ", line);
      std::istringstream words(line);
      std::vector<std::string> w;
      for (std::string x; words >> x;) w.push_back(x);
      if (w.size() == 2 && w[0] == "export") {
        const auto eq = w[1].find('=');
        r.exports[w[1].substr(0, eq)] = w[1].substr(eq + 1);
      } else if (!w.empty() && w[0] == "kernelbrain") {
        REQUIRE_MESSAGE(r.command.empty(), r.name, ": two kernelbrain lines");
        r.command.assign(w.begin() + 1, w.end());
      }  // anything else starts the server the test stands in for
    }
    REQUIRE_MESSAGE(!r.command.empty(), r.name, ": no kernelbrain line");
    out.push_back(std::move(r));
  }
  return out;
}

/// What a stand-in endpoint checks and serves.
struct endpoint {
  bool anthropic = false;
  std::string chat_path = "/v1/chat/completions";
  std::string key_variable;                 ///< the key it wants (Bearer or x-api-key): that variable's test value
  std::string model;                        ///< the model it serves ("" = any)
  bool reasoning = false;                   ///< refuses max_tokens and temperatures but 1 (OpenAI's reasoning models)
  std::uint64_t context = 0;                ///< refuses prompt + reply limit over it (0 = no limit)
  std::map<std::string, std::string> gets;  ///< GET path -> JSON body
};

const std::string test_key = "sk-recipe-test-key-0123456789";

class stand_in {
 public:
  explicit stand_in(endpoint e)
      : e_(std::move(e)),
        schema_(
            kb_test::json_schema::from_file(std::filesystem::path(KB_SOURCE_DIR) /
                                            (e_.anthropic ? "tests/schemas/anthropic-messages-request.json"
                                                          : "tests/schemas/openai-chat-completions-request.json"))) {
    server_.set_handler([this](received_request const& r) { return answer(r); });
  }
  [[nodiscard]] loopback_server& server() { return server_; }
  [[nodiscard]] std::vector<std::string> refusals() const {
    const std::lock_guard lock(mu_);
    return refusals_;
  }
  [[nodiscard]] std::size_t chats() const {
    const std::lock_guard lock(mu_);
    return chats_;
  }

 private:
  server_action refuse(unsigned code, std::string const& why) {
    {
      const std::lock_guard lock(mu_);
      refusals_.push_back(why);
    }
    boost::json::object err{{"message", why}, {"type", "invalid_request_error"}};
    return server_action::status(code, boost::json::serialize(boost::json::object{{"error", err}}));
  }

  server_action answer(received_request const& r) {
    if (r.method == "GET") {
      if (auto it = e_.gets.find(r.target); it != e_.gets.end()) return server_action::status(200, it->second);
      return server_action::status(404, R"({"error":"not found"})");
    }
    if (r.target != e_.chat_path) return refuse(404, "no such path " + r.target);
    if (!e_.key_variable.empty()) {
      const std::string got = e_.anthropic ? r.header("x-api-key") : r.header("authorization");
      if (got != (e_.anthropic ? test_key : "Bearer " + test_key)) return refuse(401, "the key is missing or wrong");
    }
    if (e_.anthropic && r.header("anthropic-version").empty()) return refuse(400, "anthropic-version header missing");
    const auto body = boost::json::parse(r.body);
    if (auto wrong = schema_.violations(body); !wrong.empty()) return refuse(400, "schema: " + wrong.front());
    if (!e_.model.empty() && r.model() != e_.model) return refuse(404, "model " + r.model() + " is not served");
    if (e_.reasoning && r.number("max_tokens"))
      return refuse(400, "Unsupported parameter: 'max_tokens' is not supported with this model.");
    if (e_.reasoning && r.number("temperature") && *r.number("temperature") != 1.0)
      return refuse(400, "Unsupported value: 'temperature' does not support other values with this model.");
    const double limit = r.number("max_tokens").value_or(r.number("max_completion_tokens").value_or(0));
    if (e_.context > 0 && static_cast<double>(r.body.size()) / 4 + limit > static_cast<double>(e_.context))
      return refuse(400, "This model's maximum context length is " + std::to_string(e_.context) + " tokens.");
    {
      const std::lock_guard lock(mu_);
      ++chats_;
    }
    return server_action::reply("I would start from the reference and fuse the two passes.");
  }

  endpoint e_;
  kb_test::json_schema schema_;
  loopback_server server_;
  mutable std::mutex mu_;
  std::vector<std::string> refusals_;
  std::size_t chats_ = 0;
};

endpoint endpoint_for(std::string const& name) {
  endpoint e;
  const std::string none_context = R"({"object":"list","data":[]})";
  if (name == "openai") {
    e.key_variable = "OPENAI_API_KEY";
    e.model = "gpt-5";
    e.reasoning = true;
    e.gets["/v1/models"] = R"({"object":"list","data":[{"id":"gpt-5","object":"model","owned_by":"system"}]})";
  } else if (name == "anthropic") {
    e.anthropic = true;
    e.chat_path = "/v1/messages";
    e.key_variable = "ANTHROPIC_API_KEY";
  } else if (name == "vllm" || name == "sglang") {
    e.model = "Qwen/Qwen2.5-Coder-32B-Instruct";
    e.context = 32768;
    e.gets["/v1/models"] =
        R"({"object":"list","data":[{"id":"Qwen/Qwen2.5-Coder-32B-Instruct","object":"model","max_model_len":32768}]})";
  } else if (name == "llama.cpp") {
    e.context = 32768;
    e.gets["/v1/models"] =
        R"({"object":"list","data":[{"id":"qwen2.5-coder-7b-instruct-q4_k_m.gguf","owned_by":"llamacpp"}]})";
    e.gets["/props"] = R"({"default_generation_settings":{"n_ctx":32768},"total_slots":1})";
  } else if (name == "ollama") {
    e.model = "qwen2.5-coder:32b";
    e.gets["/v1/models"] =
        R"({"object":"list","data":[{"id":"qwen2.5-coder:32b","object":"model","owned_by":"library"}]})";
    e.gets["/api/version"] = R"({"version":"0.12.3"})";
    e.gets["/api/ps"] =
        R"({"models":[{"name":"qwen2.5-coder:32b","model":"qwen2.5-coder:32b","context_length":32768}]})";
  } else if (name == "router") {
    e.chat_path = "/api/v1/chat/completions";
    e.key_variable = "OPENROUTER_API_KEY";
    e.model = "qwen/qwen3-coder";
    e.gets["/api/v1/models"] = R"({"data":[{"id":"qwen/qwen3-coder","context_length":262144}]})";
  } else {
    FAIL("no stand-in for the recipe '", name, "'");
  }
  return e;
}

}  // namespace

TEST_CASE("recipes: the endpoint command lines of docs/llm-clients.md run against stand-ins of their endpoints") {
  const auto recipes = read_recipes();
  std::vector<std::string> names;
  for (auto const& r : recipes) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"openai", "anthropic", "vllm", "sglang", "llama.cpp", "ollama", "router"});
  for (auto const& r : recipes) {
    CAPTURE(r.name);
    stand_in endpoint(endpoint_for(r.name));
    const std::string origin = "http://127.0.0.1:" + std::to_string(endpoint.server().port());
    std::vector<std::string> args;
    bool url_given = false;
    for (std::size_t i = 0; i < r.command.size(); ++i) {
      std::string w = r.command[i];
      if (i > 0 && r.command[i - 1] == "--llm-url") {  // the scheme, host and port become the stand-in's
        const auto host = w.find("://");
        const auto path = w.find('/', host + 3);
        w = origin + (path == std::string::npos ? std::string{} : w.substr(path));
        url_given = true;
      }
      if (i > 0 && r.command[i - 1] == "--budget") w = "2evals";
      args.push_back(w);
    }
    const kb_test::temp_dir dir("recipe_" + r.name);
    args.insert(args.end(), {"--backend", "host", "--no-progress", "--journal", (dir / "run.jsonl").string()});
    std::vector<std::unique_ptr<kb_test::scoped_env>> env;
    for (auto const& [name, value] : r.exports) env.push_back(std::make_unique<kb_test::scoped_env>(name, test_key));
    // No --llm-url: the public endpoint, which the stand-in replaces through the variable the CLI reads.
    env.push_back(std::make_unique<kb_test::scoped_env>(
        "KERNELBRAIN_LLM_URL", url_given ? std::optional<std::string>{} : std::optional<std::string>{origin + "/v1"}));
    for (char const* other : {"KERNELBRAIN_LLM_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"})
      if (!r.exports.contains(other)) env.push_back(std::make_unique<kb_test::scoped_env>(other, std::nullopt));
    std::string command = "kernelbrain";
    for (auto const& a : args) command += " " + a;
    INFO(command);
    const auto run = kb_test::run_cli(args, dir);
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(endpoint.refusals().empty());
    if (!endpoint.refusals().empty()) MESSAGE("refused: ", endpoint.refusals().front());
    CHECK_FALSE(kb_test::contains(run.err, "warning"));
    CHECK(kb_test::contains(run.err, "model: http model client"));
    // The start-up check, which sends the search's request shape (its parameters, a prompt of its
    // size, streamed). The default composition asks the model about candidates that reached the
    // profiled rung, which two evaluations do not reach; tests/test_llm_endpoint.cpp runs searches
    // that prompt.
    CHECK(endpoint.chats() >= 1);
  }
}

#endif
