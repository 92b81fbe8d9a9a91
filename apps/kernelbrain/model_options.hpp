// kernelbrain tune: the model options (--model, --llm-*, --exchange, --recorded-answers, --prompt-templates)
// and the model they configure: an HTTP endpoint, an exchange folder, or recorded answers, wrapped in a
// journal's recorded answers when a run resumes (nothing answered before is asked again).
#pragma once
#include <filesystem>
#include <kernelbrain/strategies/all.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace kernelbrain::cli {

/// What the model options said, checked.
struct model_options {
  std::string model;                  ///< --model: the endpoint's model name
  std::string url;                    ///< --llm-url (or KERNELBRAIN_LLM_URL)
  std::string api;                    ///< --llm-api openai|anthropic ("" = from the URL)
  std::string key_env;                ///< --llm-key-env: the variable holding the key
  std::optional<double> temperature;  ///< --llm-temperature (none: not sent, the model's default)
  std::string token_param;            ///< --llm-token-param auto|max_tokens|max_completion_tokens|none
  std::size_t max_failures = 8;       ///< --llm-max-failures: failed requests in a row that stop the search
  std::size_t max_tokens = 16384;
  std::size_t concurrency = 4;
  std::size_t lag = 1;                ///< --llm-lag: propose() calls between sending a batch and taking its kernels
  std::size_t max_waiting = 0;        ///< --llm-max-waiting: prompts sent and not yet taken (0: no limit)
  double timeout_seconds = 300;       ///< --llm-timeout: whole replies, per attempt
  double idle_timeout_seconds = 120;  ///< --llm-idle-timeout: streamed replies, the longest silence
  bool stream = true;                 ///< not --llm-no-stream
  unsigned retries = 4;
  double price_in_per_million = 0;  ///< --llm-price IN,OUT (per million tokens)
  double price_out_per_million = 0;
  std::string ca_file;
  std::optional<std::filesystem::path> exchange;  ///< --exchange DIR
  std::optional<double> exchange_wait;  ///< --exchange-wait [SECONDS]: wait instead of suspending (0 = for ever)
  std::optional<std::filesystem::path> recorded;   ///< --recorded-answers JOURNAL
  std::optional<std::filesystem::path> templates;  ///< --prompt-templates DIR

  [[nodiscard]] bool any() const noexcept { return !model.empty() || exchange || recorded; }
};

/// Adds the model options to `cmd`; `finish` converts what was given (usage_error on a bad combination).
class model_arguments {
 public:
  explicit model_arguments(CLI::App& cmd);
  model_arguments(model_arguments const&) = delete;
  model_arguments& operator=(model_arguments const&) = delete;
  [[nodiscard]] model_options finish() const;

 private:
  std::string model_, url_, api_, key_env_, temperature_, token_param_,
      max_failures_ = "8", max_tokens_ = "16384", concurrency_ = "4", lag_ = "1", max_waiting_ = "0", timeout_ = "300",
      idle_timeout_ = "120", retries_ = "4", price_, ca_file_, exchange_, exchange_wait_, recorded_, templates_;
  bool exchange_wait_given_ = false;
  bool no_stream_ = false;
};

/// The model a search of `p` uses (null when none was configured). `resumed` holds the exchanges of the
/// journal being resumed: they answer first. Runs the client's start-up check with a request shaped
/// like the search's (a wrong key, host, model or parameter is an error here, before any device time).
/// `describe` receives one line saying what answers.
[[nodiscard]] std::shared_ptr<model_setup const> make_model(model_options const& o,
                                                            std::span<model_exchange const> resumed,
                                                            std::string& describe, problem const& p);

}  // namespace kernelbrain::cli
