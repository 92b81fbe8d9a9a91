// The model client interface of the generation plane: a prompt goes in, a reply (text, token usage,
// latency, how it ended) comes out. Implementations: the HTTP client for OpenAI-compatible chat
// completions and Anthropic messages (generate/llm/http_client.hpp: Beast, Asio and OpenSSL, kept out
// of this header), the exchange client (prompt and answer files), and recorded answers (replies read
// back from a journal). This header needs only the standard library.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include "kernelbrain/core/hash.hpp"

namespace kernelbrain::llm {

/// One prompt: a system part (rules that do not change within a search) and a user part.
struct prompt {
  std::string system;
  std::string user;
  /// Content key: hex digest of system and user. Equal prompts, equal key.
  [[nodiscard]] std::string key() const { return to_hex(hasher{}.bytes(system).bytes(user).digest()); }
};

struct chat_request {
  llm::prompt prompt;
  /// Which asking of this prompt this is (0 for the first): a search may ask the same prompt again
  /// (sampling gives another answer), and recorded answers and exchange files are keyed by both.
  std::size_t occurrence = 0;
  std::size_t max_tokens = 8192;
  /// Sampling temperature; none: not sent, the endpoint's default (reasoning models accept no other).
  std::optional<double> temperature;
};

/// Tokens and cost of one exchange. `estimated` when the endpoint reported no usage (exchange files,
/// a server that omits it): the counts are then estimate_tokens() of the texts.
struct token_usage {
  std::uint64_t input = 0;
  std::uint64_t output = 0;
  bool estimated = false;
  double cost = 0;  ///< input * price_in + output * price_out, in the unit the prices were given in
  [[nodiscard]] std::uint64_t total() const noexcept { return input + output; }
};

enum class call_status {
  ok,         ///< a complete reply
  cut,        ///< a reply cut at the size or time limit, or ended by the model's token limit; text holds what came
  failed,     ///< no reply after the retries (the error says why); nothing to parse
  waiting,    ///< exchange in suspend mode: the answer does not exist yet
  cancelled,  ///< stopped at the client's deadline (the search's wall limit), sent or not
};

[[nodiscard]] constexpr std::string_view to_string(call_status s) noexcept {
  switch (s) {
    case call_status::ok:
      return "ok";
    case call_status::cut:
      return "cut";
    case call_status::failed:
      return "failed";
    case call_status::waiting:
      return "waiting";
    case call_status::cancelled:
      return "cancelled";
  }
  return "unknown";
}

struct chat_reply {
  call_status status = call_status::failed;
  std::string text;
  token_usage usage;
  double latency_seconds = 0;  ///< from the first attempt's start to the last byte, retries included
  unsigned attempts = 0;
  std::string finish_reason;  ///< as the endpoint said it ("stop", "length", "end_turn", ...), if it did
  std::string model;          ///< the model that answered, as the endpoint named it
  std::string error;          ///< failed / cut / waiting / cancelled: why, for people (never a key)
  /// failed for a reason that asking again will not fix (a refused key, an unknown model or path, a
  /// refused parameter, an exhausted quota, a prompt over the context): the search should stop, and
  /// `error` says what to change.
  bool permanent = false;
};

/// A rough token count for texts with no reported usage: one token per 4 bytes, rounded up. Labelled
/// as an estimate wherever it is shown.
[[nodiscard]] inline std::uint64_t estimate_tokens(std::string_view text) noexcept { return (text.size() + 3) / 4; }

/// The interface. complete() is thread-safe and reports remote trouble (timeouts, HTTP errors, resets,
/// bad JSON) in the reply's status and error, never by throwing; it throws kernelbrain::error only for
/// a misconfiguration it finds late. check() is the start-up check: a wrong key, host or model throws
/// kernelbrain::error there, before any device time is spent.
class model_client {
 public:
  virtual ~model_client() = default;
  virtual chat_reply complete(chat_request const& request) = 0;
  /// How many requests may be in flight at once.
  [[nodiscard]] virtual std::size_t concurrency() const { return 1; }
  /// For logs and the journal: kind, model and endpoint; never a key.
  [[nodiscard]] virtual std::string describe() const = 0;
  /// The start-up check, with a request shaped like the search's (`like`: its token limit and
  /// temperature, a prompt of its size), so that what the endpoint would refuse later is refused here;
  /// the model is asked for one word. Throws kernelbrain::error saying what to change. Returns
  /// warnings for the user (a server context that later, longer prompts may not fit, ...), one line each.
  virtual std::vector<std::string> check(chat_request const& like) {
    (void)like;
    return {};
  }
  /// No request runs past `deadline`: those sent after it are cancelled at once, those in flight are
  /// cut there, retries are not started (call_status::cancelled). A search sets its wall limit here.
  virtual void set_deadline(std::chrono::steady_clock::time_point deadline) { (void)deadline; }

  /// Sends every request, at most concurrency() at a time, and returns the replies in request order
  /// (whatever order they finished in), so that a search does not depend on the concurrency.
  virtual std::vector<chat_reply> complete_all(std::span<chat_request const> requests) {
    std::vector<chat_reply> out(requests.size());
    const std::size_t width = std::min(requests.size(), concurrency() == 0 ? std::size_t{1} : concurrency());
    if (width <= 1) {
      for (std::size_t i = 0; i < requests.size(); ++i) out[i] = complete(requests[i]);
      return out;
    }
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors(width);
    std::vector<std::thread> threads;
    threads.reserve(width);
    for (std::size_t w = 0; w < width; ++w)
      threads.emplace_back([&, w] {
        try {
          for (std::size_t i = next++; i < requests.size(); i = next++) out[i] = complete(requests[i]);
        } catch (...) {
          errors[w] = std::current_exception();
          next = requests.size();  // the others finish the request they hold and stop
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    return out;
  }
};

}  // namespace kernelbrain::llm
