// kernelbrain tune: the model options and the model they configure.
#include "model_options.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <kernelbrain/generate/llm/exchange_client.hpp>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <kernelbrain/generate/llm/recorded_client.hpp>
#include <kernelbrain/io/journal.hpp>
#include <vector>
#include "arguments.hpp"

namespace kernelbrain::cli {

namespace {

double positive_number(std::string const& text, std::string_view option, bool zero_ok = false) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || !end || *end || !std::isfinite(v) || v < 0 || (!zero_ok && v == 0))
    throw usage_error(fmt::format("{}: '{}' is not a {} number", option, text, zero_ok ? "non-negative" : "positive"));
  return v;
}

std::string env_or(char const* name) {
  char const* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

model_arguments::model_arguments(CLI::App& cmd) {
  auto* g = "Model (an LLM writes kernels; docs/llm.md)";
  cmd.add_option("--model", model_, "the model's name at --llm-url (e.g. gpt-5, claude-sonnet-4-5, qwen3-coder)")
      ->group(g)
      ->type_name("NAME");
  cmd.add_option("--llm-url", url_,
                 "base URL of an OpenAI-compatible (vLLM, SGLang, llama.cpp, Ollama, hosted)\n"
                 "or Anthropic endpoint, e.g. http://127.0.0.1:8000/v1 (default:\n"
                 "$KERNELBRAIN_LLM_URL, else the --llm-api's public endpoint)")
      ->group(g)
      ->type_name("URL");
  cmd.add_option("--llm-api", api_,
                 "wire format: openai or anthropic (default: anthropic for an anthropic.com\n"
                 "URL or one ending in /messages, else openai)")
      ->group(g)
      ->type_name("FORMAT");
  cmd.add_option("--llm-key-env", key_env_,
                 "environment variable holding the API key (default KERNELBRAIN_LLM_KEY,\n"
                 "then OPENAI_API_KEY or ANTHROPIC_API_KEY); the key is never written anywhere")
      ->group(g)
      ->type_name("VAR");
  cmd.add_option("--llm-temperature", temperature_,
                 "sampling temperature (default: none sent, the model's own; OpenAI's\n"
                 "reasoning models accept no other)")
      ->group(g)
      ->type_name("T");
  cmd.add_option("--llm-token-param", token_param_,
                 "how the reply limit is sent: auto (default: max_completion_tokens at\n"
                 "api.openai.com, else max_tokens), max_tokens, max_completion_tokens, or\n"
                 "none (no limit sent; OpenAI format only)")
      ->group(g)
      ->type_name("NAME");
  cmd.add_option("--llm-max-failures", max_failures_,
                 "stop the search after this many failed model requests in a row (default\n"
                 "8; 0 = never for that reason); a refused key, model or parameter, or a\n"
                 "spent quota, stops it at once")
      ->group(g)
      ->type_name("N");
  cmd.add_option("--llm-max-tokens", max_tokens_, "most tokens per reply (default 16384)")->group(g)->type_name("N");
  cmd.add_option("--llm-concurrency", concurrency_, "requests in flight at once (default 4)")->group(g)->type_name("N");
  cmd.add_option("--llm-lag", lag_,
                 "generation requests between sending prompts and taking their kernels:\n"
                 "the GPU measures meanwhile (default 1; 0 = wait for each reply; the\n"
                 "search does not depend on the model's latency either way)")
      ->group(g)
      ->type_name("N");
  cmd.add_option("--llm-max-waiting", max_waiting_,
                 "the most prompts sent and not yet taken (default 0: no limit); past it\n"
                 "the search waits for the oldest replies (an exchange round writes at\n"
                 "most about N prompts)")
      ->group(g)
      ->type_name("N");
  cmd.add_option("--llm-idle-timeout", idle_timeout_,
                 "streamed replies: most seconds without a byte, waiting for the reply or\n"
                 "within it, before the attempt is retried (default 120; no total limit)")
      ->group(g)
      ->type_name("S");
  cmd.add_flag("--llm-no-stream", no_stream_,
               "ask for whole replies, not streamed ones (for a server that refuses\n"
               "\"stream\"); --llm-timeout then limits each attempt")
      ->group(g);
  cmd.add_option("--llm-timeout", timeout_, "seconds per request attempt for whole replies (default 300)")
      ->group(g)
      ->type_name("S");
  cmd.add_option("--llm-retries", retries_, "retries on 429, 5xx, resets and timeouts (default 4)")
      ->group(g)
      ->type_name("N");
  cmd.add_option("--llm-price", price_, "price per million input and output tokens, charged to a $ budget")
      ->group(g)
      ->type_name("IN,OUT");
  cmd.add_option("--llm-ca-file", ca_file_, "PEM file of CA certificates for a private endpoint")
      ->group(g)
      ->type_name("FILE");
  cmd.add_option("--exchange", exchange_,
                 "no API: write each prompt to DIR/prompt-*.md and read the answer from\n"
                 "DIR/answer-*.md (anyone may answer); without --exchange-wait the search\n"
                 "stops with \"waiting for N answers\" and --resume continues it")
      ->group(g)
      ->type_name("DIR");
  cmd.add_option("--exchange-wait", exchange_wait_,
                 "wait for answer files this long instead of stopping (0 = for ever)")
      ->group(g)
      ->type_name("SECONDS");
  cmd.add_option("--recorded-answers", recorded_,
                 "answer every prompt from the exchanges recorded in JOURNAL: re-runs a past\n"
                 "search with no model (same prompts, proposals and verdicts)")
      ->group(g)
      ->type_name("JOURNAL");
  cmd.add_option("--prompt-templates", templates_,
                 "read system.md, explore.md, mutate.md and repair.md from DIR instead of the\n"
                 "shipped prompt templates (kernelbrain prompts --write DIR gives a copy)")
      ->group(g)
      ->type_name("DIR");
}

model_options model_arguments::finish() const {
  model_options o;
  o.model = model_;
  o.url = url_.empty() ? env_or("KERNELBRAIN_LLM_URL") : url_;
  o.api = api_;
  o.key_env = key_env_;
  if (!temperature_.empty()) o.temperature = positive_number(temperature_, "--llm-temperature", true);
  if (!token_param_.empty()) (void)llm::parse_token_parameter(token_param_);  // a usage error now, not at start-up
  o.token_param = token_param_;
  o.max_failures = static_cast<std::size_t>(parse_count(max_failures_, "--llm-max-failures 8"));
  o.max_tokens = static_cast<std::size_t>(parse_count(max_tokens_, "--llm-max-tokens 8192"));
  o.concurrency = static_cast<std::size_t>(parse_count(concurrency_, "--llm-concurrency 4"));
  if (o.concurrency == 0 || o.max_tokens == 0)
    throw usage_error("--llm-concurrency and --llm-max-tokens must be at least 1");
  o.lag = static_cast<std::size_t>(std::min<std::uint64_t>(parse_count(lag_, "--llm-lag 1"), 64));
  o.max_waiting = static_cast<std::size_t>(parse_count(max_waiting_, "--llm-max-waiting 16"));
  o.timeout_seconds = positive_number(timeout_, "--llm-timeout");
  o.idle_timeout_seconds = positive_number(idle_timeout_, "--llm-idle-timeout");
  o.stream = !no_stream_;
  o.retries = static_cast<unsigned>(std::min<std::uint64_t>(parse_count(retries_, "--llm-retries 4"), 100));
  if (!price_.empty()) {
    const auto comma = price_.find(',');
    if (comma == std::string::npos)
      throw usage_error(fmt::format("--llm-price: '{}': give IN,OUT (e.g. 3,15)", price_));
    o.price_in_per_million = positive_number(price_.substr(0, comma), "--llm-price", true);
    o.price_out_per_million = positive_number(price_.substr(comma + 1), "--llm-price", true);
  }
  o.ca_file = ca_file_;
  if (!exchange_.empty()) o.exchange = std::filesystem::path(exchange_);
  if (!exchange_wait_.empty()) {
    if (!o.exchange) throw usage_error("--exchange-wait needs --exchange DIR");
    o.exchange_wait = positive_number(exchange_wait_, "--exchange-wait", true);
  }
  if (!recorded_.empty()) o.recorded = std::filesystem::path(recorded_);
  if (!templates_.empty()) o.templates = std::filesystem::path(templates_);
  const int sources = (o.model.empty() ? 0 : 1) + (o.exchange ? 1 : 0) + (o.recorded ? 1 : 0);
  if (sources > 1)
    throw usage_error("give one model: --model (an endpoint), --exchange DIR or --recorded-answers JOURNAL");
  if (o.model.empty() && (!url_.empty() || !api_.empty() || !key_env_.empty() || !ca_file_.empty()))
    throw usage_error("--llm-url, --llm-api, --llm-key-env and --llm-ca-file configure --model: give --model NAME");
  return o;
}

std::shared_ptr<model_setup const> make_model(model_options const& o, std::span<model_exchange const> resumed,
                                              std::string& describe, problem const& p) {
  if (!o.any()) return nullptr;
  auto setup = std::make_shared<model_setup>();
  setup->options.temperature = o.temperature;
  setup->options.max_tokens = o.max_tokens;
  setup->options.lag = o.lag;
  setup->options.max_waiting = o.max_waiting;
  setup->options.max_failed_in_a_row = o.max_failures;
  if (o.templates) setup->templates = llm::prompt_templates::from_directory(*o.templates);
  std::shared_ptr<llm::model_client> client;
  if (o.recorded) {
    auto contents = read_journal(*o.recorded);
    std::vector<model_exchange> xs;
    for (auto const& je : contents.exchanges) xs.push_back(je.x);
    if (xs.empty())
      throw usage_error(
          fmt::format("--recorded-answers: journal '{}' records no model exchange", o.recorded->string()));
    client = std::make_shared<llm::recorded_client>(xs, nullptr, o.recorded->string());
  } else if (o.exchange) {
    llm::exchange_options e;
    e.folder = *o.exchange;
    e.suspend = !o.exchange_wait.has_value();
    e.wait_timeout_seconds = o.exchange_wait.value_or(0);
    client = std::make_shared<llm::exchange_client>(e);
  } else {
    llm::http_client_options h;
    h.model = o.model;
    h.base_url = o.url;
    h.format = !o.api.empty() ? llm::parse_wire_format(o.api)
                              : llm::infer_wire_format(o.url).value_or(llm::wire_format::openai);
    if (!o.token_param.empty()) h.token_limit = llm::parse_token_parameter(o.token_param);
    std::vector<std::string> vars;
    if (!o.key_env.empty()) {
      vars.push_back(o.key_env);
    } else {
      vars.emplace_back("KERNELBRAIN_LLM_KEY");
      vars.emplace_back(h.format == llm::wire_format::anthropic ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
    }
    for (auto const& v : vars)
      if (h.api_key = env_or(v.c_str()); !h.api_key.empty()) break;
    if (!o.key_env.empty() && h.api_key.empty())
      throw usage_error(fmt::format("--llm-key-env: the variable {} is not set or empty", o.key_env));
    h.concurrency = o.concurrency;
    h.request_timeout_seconds = o.timeout_seconds;
    h.idle_timeout_seconds = o.idle_timeout_seconds;
    h.stream = o.stream;
    h.max_retries = o.retries;
    h.ca_file = o.ca_file;
    h.price_per_input_token = o.price_in_per_million / 1e6;
    h.price_per_output_token = o.price_out_per_million / 1e6;
    client = llm::make_http_client(std::move(h));
  }
  if (!resumed.empty()) client = std::make_shared<llm::recorded_client>(resumed, client, "the resumed journal");
  // The start-up check sends what the search will: its token limit and temperature, a prompt of its size.
  llm::chat_request like;
  like.prompt = llm::prompt_builder(setup->templates).sample(p);
  like.max_tokens = o.max_tokens;
  like.temperature = o.temperature;
  for (auto const& warning : client->check(like)) fmt::print(stderr, "kernelbrain tune: warning: {}\n", warning);
  describe = client->describe();
  setup->client = std::move(client);
  return setup;
}

}  // namespace kernelbrain::cli
