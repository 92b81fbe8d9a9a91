// Bodies of kernelbrain/generate/llm/http_client.hpp: the HTTP model client on Boost.Beast and Asio,
// Boost.JSON for the bodies, and asio::ssl on OpenSSL where KERNELBRAIN_HAVE_OPENSSL is defined: the
// transport (an attempt's connection and exchange) and the retry loop. The provider's wire format
// (request body, headers, reply and stream reading) is an object from providers/; URL, proxy, base64
// and Retry-After parsing are in http/.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
//
// Shape: each complete() takes one of `concurrency` slots, then makes attempts; each attempt has its
// own io_context and connection (resolve, connect, proxy CONNECT, TLS handshake, write, read), every
// asynchronous step run to completion or to its deadline on the calling thread (run_until below).
// No state is shared between calls but the immutable options, the TLS context and the jitter RNG.
#pragma once
#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/generate/llm/detail/stream_decoder.hpp"
#include "kernelbrain/generate/llm/http/base64.hpp"
#include "kernelbrain/generate/llm/http/proxy.hpp"
#include "kernelbrain/generate/llm/http/retry_after.hpp"
#include "kernelbrain/generate/llm/http/text.hpp"
#include "kernelbrain/generate/llm/http/url.hpp"
#include "kernelbrain/generate/llm/http_client.hpp"
#include "kernelbrain/generate/llm/providers/registry.hpp"
#include "kernelbrain/version.hpp"
#if defined(KERNELBRAIN_HAVE_OPENSSL)
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#endif

namespace kernelbrain::llm {

namespace http_detail {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using steady = std::chrono::steady_clock;

inline bool is_ip_literal(std::string const& host) {
  error_code ec;
  (void)net::ip::make_address(host, ec);
  return !ec;
}

// ---- pieces of an exchange -----------------------------------------------------------------------

inline steady::duration to_duration(double seconds) {
  const double s = std::clamp(seconds, 0.0, 1e7);
  return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(s));
}

/// The shortest text of a number (0.5, 120, 1e-05).
inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, r.ptr};
}
/// Seconds for messages: "0.5 s".
inline std::string seconds_text(double s) { return number_text(s) + " s"; }

/// A short, printable, bounded excerpt of a server's message: the JSON error message where there is
/// one (OpenAI, Anthropic, vLLM, FastAPI shapes), else the start of the body.
inline std::string excerpt(std::string_view body, std::size_t limit = 300) {
  std::string msg;
  error_code ec;
  const json::value v = json::parse(json::string_view(body.data(), body.size()), ec);
  if (!ec) {
    if (auto const* o = v.if_object()) {
      auto const* e = o->if_contains("error");
      if (e != nullptr && e->is_object()) e = e->as_object().if_contains("message");
      if (e == nullptr || !e->is_string()) e = o->if_contains("message");
      if (e == nullptr || !e->is_string()) e = o->if_contains("detail");
      if (e != nullptr && e->is_string()) msg = std::string(e->as_string().data(), e->as_string().size());
    }
  }
  if (msg.empty()) msg = std::string(body.substr(0, limit * 2));
  std::string out;
  bool space = false;
  for (char c : msg) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
    if (out.size() >= limit) break;
  }
  if (out.size() >= limit) {
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0U) == 0x80U) out.pop_back();  // UTF-8
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0U) out.pop_back();
    out += "...";
  }
  return out;
}

/// Where an asynchronous operation puts its result.
struct done {
  std::optional<error_code>* out;
  void operator()(error_code ec) const { *out = ec; }
};

/// Runs the operation that `initiate` starts (it is given a `done` to call with the operation's error)
/// on `ioc` until it completes or `deadline` passes. At the deadline `cancel` closes what the operation
/// waits on, the operation is drained, and the result is net::error::timed_out.
template <class Initiate, class Cancel>
error_code run_until(net::io_context& ioc, steady::time_point deadline, Initiate&& initiate, Cancel&& cancel) {
  std::optional<error_code> result;
  std::forward<Initiate>(initiate)(done{&result});
  ioc.restart();
  while (!result) {
    if (ioc.run_one_until(deadline) != 0) continue;
    if (result) break;
    if (steady::now() < deadline) return net::error::operation_aborted;  // out of work: not expected
    std::forward<Cancel>(cancel)();
    ioc.restart();
    while (!result && ioc.run_one() != 0) {
    }
    return net::error::timed_out;
  }
  return *result;
}

inline void close_socket(tcp::socket& s) {
  error_code ec;
  s.close(ec);
}

inline std::string lower_message(error_code const& ec) {
  std::string m = ec.message();
  if (!m.empty() && m.size() > 1 && std::isupper(static_cast<unsigned char>(m[0])) != 0 &&
      std::islower(static_cast<unsigned char>(m[1])) != 0)
    m[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(m[0])));
  return m;
}

/// One attempt's outcome: the reply (ok, cut or failed) and whether a failure may be retried.
struct attempt_result {
  chat_reply reply;  ///< a probe's (not a chat request's) reply: its body in text
  bool retry = false;
  std::optional<double> retry_after;
  unsigned code = 0;  ///< the HTTP status, when one came
};

/// One HTTP exchange: a chat request (its reply decoded as one) or a probe of the server (a GET or
/// a small POST whose status and body are returned as they came).
struct http_call {
  bhttp::verb method = bhttp::verb::post;
  std::string path;  ///< the request path (absolute-form to an http proxy is derived from it)
  std::string body;  ///< JSON; empty for a GET
  bool chat = true;
  bool stream = false;  ///< a streamed chat reply was asked for: reads are limited by the idle timeout
  std::uint64_t prompt_estimate = 0;
  std::string total_limit;  ///< names the total limit in messages ("request_timeout_seconds = 300")
};

inline attempt_result fault(std::string why, bool retry) {
  attempt_result r;
  r.reply.status = call_status::failed;
  r.reply.error = std::move(why);
  r.retry = retry;
  return r;
}
/// A failure that asking again will not fix (chat_reply::permanent): never retried.
inline attempt_result permanent_fault(std::string why) {
  attempt_result r = fault(std::move(why), false);
  r.reply.permanent = true;
  return r;
}

/// What an error body says: its message, the parameter it names and its code or type (OpenAI:
/// {"error": {"message", "param", "code", "type"}}; Anthropic: {"error": {"type", "message"}}).
struct endpoint_error {
  std::string message, param, code;
};
inline endpoint_error read_endpoint_error(std::string const& body) {
  endpoint_error e;
  error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return e;
  auto const* err = v.get_object().if_contains("error");
  if (err == nullptr) return e;
  if (err->is_string()) {
    e.message = std::string(err->get_string());
    return e;
  }
  if (!err->is_object()) return e;
  auto const& o = err->get_object();
  auto str = [&](char const* key) {
    auto const* x = o.if_contains(key);
    return x != nullptr && x->is_string() ? std::string(x->get_string()) : std::string();
  };
  e.message = str("message");
  e.param = str("param");
  e.code = str("code");
  if (e.code.empty()) e.code = str("type");
  return e;
}

// ---- the client ----------------------------------------------------------------------------------

class http_model_client final : public model_client {
 public:
  explicit http_model_client(http_client_options o)
      : options_(std::move(o)), provider_(provider_for(options_.format)), rng_(options_.jitter_seed) {
    const auto fail = [](std::string const& why) { throw error("http model client: " + why); };
    if (trim(options_.model).empty()) fail("no model given (http_client_options::model)");
    if (has_control(options_.model)) fail("the model name holds control characters");
    if (has_control(options_.api_key))
      fail("the api key holds a line break or control character (check how it was read)");
    if (has_control(options_.anthropic_version)) fail("anthropic_version holds control characters");
    if (options_.concurrency == 0) fail("concurrency must be at least 1");
    const auto positive = [&](double v, char const* name) {
      if (!(v > 0) || !std::isfinite(v)) fail(std::string(name) + " must be a positive number of seconds");
    };
    positive(options_.connect_timeout_seconds, "connect_timeout_seconds");
    positive(options_.request_timeout_seconds, "request_timeout_seconds");
    positive(options_.idle_timeout_seconds, "idle_timeout_seconds");
    const auto non_negative = [&](double v, char const* name) {
      if (!(v >= 0) || !std::isfinite(v)) fail(std::string(name) + " must be 0 or more");
    };
    non_negative(options_.backoff_base_seconds, "backoff_base_seconds");
    non_negative(options_.backoff_max_seconds, "backoff_max_seconds");
    non_negative(options_.retry_after_cap_seconds, "retry_after_cap_seconds");
    non_negative(options_.price_per_input_token, "price_per_input_token");
    non_negative(options_.price_per_output_token, "price_per_output_token");
    if (options_.max_reply_bytes == 0) fail("max_reply_bytes must be at least 1");
    positive(options_.check_timeout_seconds, "check_timeout_seconds");
    if (auto why = provider_.token_parameter_refusal(options_.token_limit)) fail(*why);

    if (options_.temperature >= 0) {
      if (auto why = temperature_refusal(options_.temperature)) fail(*why);
    }
    options_.base_url = normalize_base_url(options_.base_url, options_.format);
    target_ = parse_url(options_.base_url, "http model client: base_url");
    if (!target_.userinfo.empty())
      fail("base_url must not carry a user or password; give the key in http_client_options::api_key");
    const std::string suffix(provider_.endpoint_suffix());
    for (provider const* other : all_providers())
      if (other != &provider_ && target_.path.ends_with(other->endpoint_suffix()))
        fail("base_url " + options_.base_url + " is an endpoint of the " + std::string(other->name()) +
             " format, but the format is " + std::string(to_string(options_.format)) + " (--llm-api)");
    path_ = target_.path.ends_with(suffix) ? target_.path : target_.path + suffix;
    endpoint_ = target_.scheme + "://" + target_.host_header() + path_;
    token_field_ = options_.token_limit;
    if (token_field_ == token_parameter::automatic) token_field_ = provider_.automatic_token_parameter(target_);
#if !defined(KERNELBRAIN_HAVE_OPENSSL)
    if (target_.scheme == "https")
      fail("base_url " + endpoint_ +
           " is https://, but KernelBrain was built without OpenSSL: only http:// works (install OpenSSL's "
           "development headers, e.g. libssl-dev, and rebuild)");
#endif

    const std::string proxy = proxy_for(target_, options_.proxy, [](char const* n) -> char const* {
      return std::getenv(n);  // NOLINT(concurrency-mt-unsafe): read once, at construction
    });
    if (!proxy.empty()) {
      proxy_ =
          parse_url(proxy.find("://") == std::string::npos ? "http://" + proxy : proxy, "http model client: proxy");
      if (proxy_->scheme != "http")
        fail("the proxy " + proxy_->authority() + " must be an http:// proxy (TLS to the proxy is not supported)");
      if (!proxy_->userinfo.empty()) {
        secrets_.push_back(proxy_->userinfo);
        const std::string decoded = percent_decode(proxy_->userinfo);
        if (const auto colon = decoded.find(':'); colon != std::string::npos && colon + 1 < decoded.size())
          secrets_.push_back(decoded.substr(colon + 1));
        proxy_authorization_ = "Basic " + base64(decoded);
        secrets_.push_back(proxy_authorization_.substr(6));
      }
    }
    if (!options_.api_key.empty()) secrets_.insert(secrets_.begin(), options_.api_key);

#if defined(KERNELBRAIN_HAVE_OPENSSL)
    if (target_.scheme == "https") {
      tls_ = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
      SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
      if (options_.verify_tls) {
        error_code ec;
        tls_->set_default_verify_paths(ec);  // a system without a CA store still has ca_file
        if (!options_.ca_file.empty()) {
          std::error_code fec;
          if (!std::filesystem::is_regular_file(options_.ca_file, fec))
            fail("the CA file '" + options_.ca_file + "' does not exist or is not a file");
          tls_->load_verify_file(options_.ca_file, ec);
          if (ec) fail("cannot read the CA file '" + options_.ca_file + "': " + ec.message());
        }
        tls_->set_verify_mode(net::ssl::verify_peer);
      } else {
        tls_->set_verify_mode(net::ssl::verify_none);
      }
    }
#endif
  }

  chat_reply complete(chat_request const& request) override {
    const slot s(*this);
    return run(request, options_.max_retries);
  }

  [[nodiscard]] std::size_t concurrency() const override { return options_.concurrency; }

  [[nodiscard]] std::string describe() const override {
    std::string d =
        "http model client: " + std::string(to_string(options_.format)) + " format, model '" + options_.model +
        "', endpoint " + endpoint_ + ", concurrency " + std::to_string(options_.concurrency) + ", reply limit as " +
        std::string(to_string(token_field_)) +
        (options_.stream ? ", streamed (idle timeout " + seconds_text(options_.idle_timeout_seconds) + ")"
                         : ", whole replies (timeout " + seconds_text(options_.request_timeout_seconds) + ")");
    if (proxy_) d += ", via proxy " + proxy_->authority();
    if (target_.scheme == "https") {
      if (!options_.verify_tls)
        d += ", TLS verification off";
      else if (!options_.ca_file.empty())
        d += ", CA file " + options_.ca_file;
    }
    return redact(std::move(d));
  }

  std::vector<std::string> check(chat_request const& like) override {
    // The search's request shape: its token limit and temperature, its system prompt and a user
    // message of its size; the model is asked for one word, so the check costs the prompt's tokens.
    chat_request r = like;
    r.prompt.user = "This is a start-up check of the connection, not a task: reply with the single word ok.\n\n" +
                    like.prompt.user + "\n\n(Start-up check: reply with the single word ok.)";
    const slot s(*this);
    const bool check_limits = options_.stream || options_.check_timeout_seconds <= options_.request_timeout_seconds;
    const chat_reply reply = run(r, std::min(options_.max_retries, 2U),
                                 check_limits ? options_.check_timeout_seconds : options_.request_timeout_seconds,
                                 check_limits ? "check_timeout_seconds" : "request_timeout_seconds");
    const std::uint64_t prompt_tokens = reply.usage.input > 0 && !reply.usage.estimated
                                            ? reply.usage.input
                                            : estimate_tokens(r.prompt.system) + estimate_tokens(r.prompt.user);
    if (reply.status == call_status::failed || reply.status == call_status::cancelled)
      throw error(redact("model check failed (" + std::string(to_string(options_.format)) + " endpoint " + endpoint_ +
                         ", model '" + options_.model +
                         "', a request like the search's: " + std::to_string(prompt_tokens) + " prompt tokens" +
                         (reply.usage.input > 0 && !reply.usage.estimated ? ", " : " (estimated), ") +
                         std::string(to_string(token_field_)) + " " + std::to_string(effective_max_tokens(r)) +
                         (temperature_of(r) ? ", temperature " + number_text(*temperature_of(r)) : std::string()) +
                         "): " + reply.error));
    std::vector<std::string> warnings;
    if (provider_.probes_context()) {
      try {
        if (auto w = context_warning(prompt_tokens, effective_max_tokens(r))) warnings.push_back(redact(*w));
      } catch (std::exception const&) {  // the probe is advice: a server that cannot answer it is not an error
      }
    }
    return warnings;
  }

  /// Tokens a later prompt may hold beyond the check's: a kernel's source and its diagnosis.
  static constexpr std::uint64_t later_prompt_headroom_tokens = 4096;

  /// What the server says of the model's context (vLLM and SGLang: /v1/models max_model_len; a
  /// router's context_length; llama.cpp's server: /props n_ctx; Ollama: /api/show num_ctx, else its
  /// default), and a warning when the search's prompts and reply limit may not fit it.
  [[nodiscard]] std::optional<std::string> context_warning(std::uint64_t prompt_tokens, std::size_t max_tokens) {
    const std::string base = path_.substr(0, path_.size() - provider_.endpoint_suffix().size());
    std::optional<std::uint64_t> context;
    std::string source;
    bool llama_cpp = false;
    if (auto models = probe(bhttp::verb::get, base + "/models", {})) {
      json::object const* entry = nullptr;
      if (auto const* data = models->if_contains("data"); data != nullptr && data->is_array()) {
        for (auto const& m : data->get_array())
          if (m.is_object() && string_of(m.get_object().if_contains("id")) == options_.model) entry = &m.get_object();
        if (entry == nullptr && data->get_array().size() == 1 && data->get_array()[0].is_object())
          entry = &data->get_array()[0].get_object();
      }
      if (entry != nullptr) {
        for (char const* key : {"max_model_len", "context_length", "context_window", "max_context_length"})
          if (auto n = count_of(*entry, key); n && !context) {
            context = n;
            source = std::string(base) + "/models " + key;
          }
        llama_cpp = string_of(entry->if_contains("owned_by")) == "llamacpp";
      }
    }
    if (!context && llama_cpp) {
      if (auto props = probe(bhttp::verb::get, "/props", {})) {
        auto const* settings = props->if_contains("default_generation_settings");
        if (settings != nullptr && settings->is_object()) context = count_of(settings->get_object(), "n_ctx");
        if (!context) context = count_of(*props, "n_ctx");
        source = "/props n_ctx";
      }
    }
    const std::uint64_t need = prompt_tokens + later_prompt_headroom_tokens + max_tokens;
    const std::string fit = "prompts of about " + std::to_string(prompt_tokens) + " tokens (the start-up check's; " +
                            "later ones carry a kernel and its diagnosis, up to about " +
                            std::to_string(prompt_tokens + later_prompt_headroom_tokens) + ") and a reply limit of " +
                            std::to_string(max_tokens) + " tokens need about " + std::to_string(need);
    if (!context) {
      auto version = probe(bhttp::verb::get, "/api/version", {});
      if (!version || string_of(version->if_contains("version")).empty()) return std::nullopt;  // not Ollama
      context = ollama_context(source);
      if (!context)
        return "Ollama (version " + string_of(version->if_contains("version")) + ") runs '" + options_.model +
               "' with its default context (2048 to 4096 tokens, depending on the version, unless the server was "
               "started with OLLAMA_CONTEXT_LENGTH) and silently cuts prompts that do not fit: " +
               fit + ". Start it with OLLAMA_CONTEXT_LENGTH=" + std::to_string(round_up_power_of_two(need)) +
               " ollama serve, or give the model a longer context (a Modelfile with PARAMETER num_ctx " +
               std::to_string(round_up_power_of_two(need)) + ")";
    }
    if (!context || *context >= need) return std::nullopt;
    const std::uint64_t room = *context > prompt_tokens + later_prompt_headroom_tokens
                                   ? *context - prompt_tokens - later_prompt_headroom_tokens
                                   : 0;
    return "the server reports a context of " + std::to_string(*context) + " tokens for '" + options_.model + "' (" +
           source + "), and " + fit + ": " +
           (room >= 1024 ? "give --llm-max-tokens " + std::to_string(room) + " or less, or "
                         : std::string("later prompts may be refused or cut; ")) +
           "serve the model with a longer context (vLLM and SGLang: --max-model-len / --context-length; llama.cpp: "
           "-c; Ollama: num_ctx)";
  }

  /// The context an Ollama server runs the model with: /api/ps context_length (the model is loaded:
  /// the check asked it), else the num_ctx its Modelfile sets (/api/show); `source` names which.
  [[nodiscard]] std::optional<std::uint64_t> ollama_context(std::string& source) {
    if (auto ps = probe(bhttp::verb::get, "/api/ps", {}))
      if (auto const* models = ps->if_contains("models"); models != nullptr && models->is_array())
        for (auto const& m : models->get_array()) {
          if (!m.is_object()) continue;
          auto const& o = m.get_object();
          if (string_of(o.if_contains("name")) != options_.model && string_of(o.if_contains("model")) != options_.model)
            continue;
          if (auto n = count_of(o, "context_length"); n && *n > 0) {
            source = "Ollama's /api/ps context_length";
            return n;
          }
        }
    json::object show_request;
    show_request["model"] = text(options_.model);
    auto show = probe(bhttp::verb::post, "/api/show", json::serialize(show_request));
    const std::string parameters = show ? string_of(show->if_contains("parameters")) : std::string{};
    for (std::size_t at = parameters.find("num_ctx"); at != std::string::npos;
         at = parameters.find("num_ctx", at + 1)) {
      std::uint64_t n = 0;
      const char* p = parameters.c_str() + at + 7;
      while (*p == ' ' || *p == '\t') ++p;
      if (std::from_chars(p, parameters.c_str() + parameters.size(), n).ec == std::errc{} && n > 0) {
        source = "Ollama's num_ctx for the model";
        return n;
      }
    }
    return std::nullopt;
  }

  [[nodiscard]] static std::uint64_t round_up_power_of_two(std::uint64_t n) {
    std::uint64_t p = 1024;
    while (p < n) p *= 2;
    return p;
  }

  /// One GET or small POST to `path` on the endpoint's server, answered within 3 s: its body as a
  /// JSON object when it answered 200 with one; nothing otherwise. A server that does not answer
  /// one probe is not sent another (`probes_unanswered_`).
  [[nodiscard]] std::optional<json::object> probe(bhttp::verb method, std::string path, std::string body) {
    if (probes_unanswered_) return std::nullopt;
    http_call call;
    call.method = method;
    call.path = std::move(path);
    call.body = std::move(body);
    call.chat = false;
    call.total_limit = "the probe's 3 s";
    const attempt_result r = attempt(call, std::min(3.0, options_.check_timeout_seconds), deadline());
    probes_unanswered_ = r.reply.status != call_status::ok;
    if (r.reply.status != call_status::ok || r.code != 200) return std::nullopt;
    error_code ec;
    json::value v = json::parse(r.reply.text, ec);
    if (ec || !v.is_object()) return std::nullopt;
    return std::move(v.get_object());
  }

  void set_deadline(steady::time_point deadline) override {
    const std::lock_guard lock(deadline_mu_);
    deadline_ = deadline;
  }

 private:
  /// One of the `concurrency` places for a request in flight.
  class slot {
   public:
    explicit slot(http_model_client& c) : c_(c) {
      std::unique_lock lock(c_.slots_mu_);
      c_.slots_cv_.wait(lock, [this] { return c_.in_flight_ < c_.options_.concurrency; });
      ++c_.in_flight_;
    }
    ~slot() {
      {
        const std::lock_guard lock(c_.slots_mu_);
        --c_.in_flight_;
      }
      c_.slots_cv_.notify_one();
    }
    slot(slot const&) = delete;
    slot& operator=(slot const&) = delete;

   private:
    http_model_client& c_;
  };

  [[nodiscard]] std::string redact(std::string s) const {
    for (auto const& secret : secrets_) {
      if (secret.size() < 4) continue;  // too short to find without mangling the text (and to matter)
      for (auto at = s.find(secret); at != std::string::npos; at = s.find(secret, at + 9))
        s.replace(at, secret.size(), "[api key]");
    }
    return s;
  }

  double backoff(unsigned retry) {
    const double ceiling =
        std::min(options_.backoff_max_seconds,
                 options_.backoff_base_seconds * std::ldexp(1.0, static_cast<int>(std::min(retry, 60U))));
    std::uint64_t bits = 0;
    {
      const std::lock_guard lock(rng_mu_);
      bits = rng_();
    }
    return ceiling * (static_cast<double>(bits >> 11U) * 0x1.0p-53);
  }

  /// Why a temperature cannot be sent: outside what the wire format's API allows (OpenAI: 0 to 2;
  /// Anthropic: 0 to 1), or not a number.
  [[nodiscard]] std::optional<std::string> temperature_refusal(double t) const {
    const double most = provider_.max_temperature();
    if (std::isfinite(t) && t >= 0 && t <= most) return std::nullopt;
    return "temperature " + number_text(t) + " is outside 0 to " + number_text(most) + ", the range the " +
           std::string(to_string(options_.format)) + " API allows (--llm-temperature)";
  }

  [[nodiscard]] std::optional<double> temperature_of(chat_request const& request) const {
    if (options_.temperature >= 0) return options_.temperature;
    return request.temperature;
  }
  [[nodiscard]] std::size_t effective_max_tokens(chat_request const& request) const {
    std::size_t max_tokens = request.max_tokens;
    if (options_.max_tokens > 0) max_tokens = std::min(max_tokens, options_.max_tokens);
    return std::max<std::size_t>(max_tokens, 1);
  }
  [[nodiscard]] steady::time_point deadline() const {
    const std::lock_guard lock(deadline_mu_);
    return deadline_;
  }

  [[nodiscard]] std::string request_body(chat_request const& request) const {
    request_fields f;
    f.model = options_.model;
    f.system = request.prompt.system;
    f.user = request.prompt.user;
    f.token_field = token_field_;
    f.max_tokens = effective_max_tokens(request);
    f.temperature = temperature_of(request);
    f.stream = options_.stream;
    return provider_.request_body(f);
  }

  /// A reply cancelled at the deadline, `started` seconds after the request began.
  [[nodiscard]] static chat_reply cancelled(std::string const& what) {
    chat_reply r;
    r.status = call_status::cancelled;
    r.error = "cancelled at the client's deadline (the search's wall limit)" + what;
    return r;
  }

  /// The request with retries. `total_seconds` limits each attempt in all (the check's); 0: the
  /// options' (request_timeout_seconds for whole replies, none for streamed ones).
  chat_reply run(chat_request const& request, unsigned max_retries, double total_seconds = 0,
                 std::string const& total_name = {}) {
    if (auto t = temperature_of(request)) {
      if (auto why = temperature_refusal(*t)) {
        chat_reply refused;
        refused.status = call_status::failed;
        refused.permanent = true;
        refused.error = *why + ": not sent";
        return refused;
      }
    }
    http_call call;
    call.path = path_;
    call.body = request_body(request);
    call.stream = options_.stream;
    call.prompt_estimate = estimate_tokens(request.prompt.system) + estimate_tokens(request.prompt.user);
    double timeout_seconds = total_seconds;
    if (timeout_seconds > 0) {
      call.total_limit = total_name + " = " + seconds_text(total_seconds);
    } else if (!options_.stream) {
      timeout_seconds = options_.request_timeout_seconds;
      call.total_limit = "request_timeout_seconds = " + seconds_text(timeout_seconds);
    }
    const auto start = steady::now();
    const auto cut = deadline();
    chat_reply reply;
    if (start >= cut) {
      reply = cancelled(": not sent");
    } else {
      for (unsigned k = 0;; ++k) {
        attempt_result r;
        try {
          r = attempt(call, timeout_seconds, cut);
        } catch (std::exception const& e) {
          r = fault(std::string("internal error: ") + e.what(), false);
        }
        reply = std::move(r.reply);
        reply.attempts = k + 1;
        if (reply.status == call_status::failed && steady::now() >= cut) {
          reply = cancelled(" during attempt " + std::to_string(k + 1) + ", " +
                            seconds_text(std::chrono::duration<double>(steady::now() - start).count()) +
                            " after the request began");
          reply.attempts = k + 1;
          break;
        }
        if (!r.retry || k >= max_retries) break;
        const double wait = r.retry_after ? std::min(*r.retry_after, options_.retry_after_cap_seconds) : backoff(k);
        if (steady::now() + to_duration(wait) >= cut) {
          reply.status = call_status::cancelled;
          reply.error = "cancelled at the client's deadline (the search's wall limit) before retry " +
                        std::to_string(k + 1) + " (" + reply.error + ")";
          break;
        }
        if (wait > 0) std::this_thread::sleep_for(to_duration(wait));
      }
    }
    reply.latency_seconds = std::chrono::duration<double>(steady::now() - start).count();
    if (reply.status == call_status::failed && reply.attempts > 1)
      reply.error += " (after " + std::to_string(reply.attempts) + " attempts)";
    reply.error = redact(std::move(reply.error));
    return reply;
  }

  /// One attempt at `call`: a new connection, limited in all by `timeout_seconds` (0: no total) and `cut`.
  attempt_result attempt(http_call const& call, double timeout_seconds, steady::time_point cut) {
    const auto start = steady::now();
    const auto deadline = timeout_seconds > 0 ? std::min(cut, start + to_duration(timeout_seconds)) : cut;
    const auto whole_deadline = std::min(deadline, start + to_duration(options_.request_timeout_seconds));
    const auto connect_deadline = std::min(deadline, start + to_duration(options_.connect_timeout_seconds));
    const std::string connect_limit = "connect_timeout_seconds = " + seconds_text(options_.connect_timeout_seconds);
    net::io_context ioc{1};
    tcp::socket socket(ioc);
    url const& hop = proxy_ ? *proxy_ : target_;
    const std::string where = (proxy_ ? "proxy " : "") + hop.authority();

    // Resolve (IP literals need no resolver) and connect.
    std::vector<tcp::endpoint> endpoints;
    error_code ec;
    if (const auto address = net::ip::make_address(hop.host, ec); !ec) endpoints.emplace_back(address, hop.port);
    if (endpoints.empty()) {
      tcp::resolver resolver(ioc);
      ec = run_until(
          ioc, connect_deadline,
          [&](done d) {
            resolver.async_resolve(hop.host, std::to_string(hop.port),
                                   [d, &endpoints](error_code e, tcp::resolver::results_type const& results) {
                                     for (auto const& entry : results) endpoints.push_back(entry.endpoint());
                                     d(e);
                                   });
          },
          [&] { resolver.cancel(); });
      if (ec == net::error::timed_out)
        return fault("cannot resolve host '" + hop.host + "' within " + connect_limit, true);
      if (ec == net::error::host_not_found || ec == net::error::no_data)
        return fault("cannot resolve host '" + hop.host + "': " + lower_message(ec), false);
      if (ec || endpoints.empty())
        return fault("cannot resolve host '" + hop.host + "': " + (ec ? lower_message(ec) : "no address"), true);
    }
    ec = run_until(
        ioc, connect_deadline,
        [&](done d) { net::async_connect(socket, endpoints, [d](error_code e, tcp::endpoint const&) { d(e); }); },
        [&] { close_socket(socket); });
    if (ec == net::error::timed_out) return fault("cannot connect to " + where + " within " + connect_limit, true);
    if (ec) return fault("cannot connect to " + where + " (" + lower_message(ec) + ")", true);
    socket.set_option(tcp::no_delay(true), ec);

    // A tunnel through the proxy for https://.
    if (proxy_ && target_.scheme == "https") {
      bhttp::request<bhttp::empty_body> req{bhttp::verb::connect, target_.authority(), 11};
      req.set(bhttp::field::host, target_.authority());
      req.set(bhttp::field::user_agent, user_agent());
      if (!proxy_authorization_.empty()) req.set(bhttp::field::proxy_authorization, proxy_authorization_);
      ec = run_until(
          ioc, connect_deadline,
          [&](done d) { bhttp::async_write(socket, req, [d](error_code e, std::size_t) { d(e); }); },
          [&] { close_socket(socket); });
      boost::beast::flat_buffer buffer;
      bhttp::response_parser<bhttp::empty_body> parser;
      parser.skip(true);  // a 2xx answer to CONNECT has no body
      if (!ec)
        ec = run_until(
            ioc, connect_deadline,
            [&](done d) { bhttp::async_read_header(socket, buffer, parser, [d](error_code e, std::size_t) { d(e); }); },
            [&] { close_socket(socket); });
      if (ec == net::error::timed_out)
        return fault("no tunnel through " + where + " to " + target_.authority() + " within " + connect_limit, true);
      if (ec)
        return fault("no tunnel through " + where + " to " + target_.authority() + " (" + lower_message(ec) + ")",
                     true);
      const unsigned code = parser.get().result_int();
      if (code / 100 != 2)
        return fault(where + " refused the tunnel to " + target_.authority() + " (HTTP " + std::to_string(code) + " " +
                         std::string(bhttp::obsolete_reason(parser.get().result())) + ")",
                     code >= 500 || code == 429);
    }

    if (target_.scheme == "https") {
#if defined(KERNELBRAIN_HAVE_OPENSSL)
      net::ssl::stream<tcp::socket> tls(std::move(socket), *tls_);
      SSL* ssl = tls.native_handle();
      const bool literal = is_ip_literal(target_.host);
      if (!literal) SSL_set_tlsext_host_name(ssl, target_.host.c_str());  // SNI (never for an address)
      if (options_.verify_tls) {
        if (literal)
          X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), target_.host.c_str());
        else
          SSL_set1_host(ssl, target_.host.c_str());
      }
      ec = run_until(
          ioc, connect_deadline, [&](done d) { tls.async_handshake(net::ssl::stream_base::client, d); },
          [&] { close_socket(tls.next_layer()); });
      if (ec == net::error::timed_out)
        return fault("the TLS handshake with " + target_.authority() + " did not finish within " + connect_limit, true);
      if (ec) {
        const long verify = SSL_get_verify_result(ssl);
        if (options_.verify_tls && verify != X509_V_OK)
          return fault("the TLS certificate of " + target_.authority() +
                           " is not trusted: " + X509_verify_cert_error_string(verify) +
                           " (give its CA certificate in ca_file, or set verify_tls = false)",
                       false);
        return fault("the TLS handshake with " + target_.authority() + " failed: " + lower_message(ec) +
                         " (does it speak https?)",
                     ec.category() != net::error::get_ssl_category());
      }
      return exchange(
          ioc, tls, [&] { close_socket(tls.next_layer()); }, deadline, whole_deadline, call);
#else
      return fault("https:// needs a build with OpenSSL", false);  // make_http_client refuses it first
#endif
    }
    return exchange(
        ioc, socket, [&] { close_socket(socket); }, deadline, whole_deadline, call);
  }

  [[nodiscard]] static std::string user_agent() { return "kernelbrain/" + std::string(library_version); }

  template <class Stream, class Cancel>
  attempt_result exchange(net::io_context& ioc, Stream& stream, Cancel cancel, steady::time_point deadline,
                          steady::time_point whole_deadline, http_call const& call) {
    // Every step is bounded by `deadline` (the wall, and the attempt's total where it has one).
    // Streamed: sending, the wait for the headers and each read of events also by the idle timeout
    // from the step's start; a whole reply that comes instead by request_timeout_seconds from the
    // attempt's start (`whole_deadline`), since nothing shows its progress.
    const auto idle = to_duration(options_.idle_timeout_seconds);
    const std::string idle_limit = "idle_timeout_seconds = " + seconds_text(options_.idle_timeout_seconds);
    const std::string whole_limit = "request_timeout_seconds = " + seconds_text(options_.request_timeout_seconds);
    std::string limit_hit;  // names the limit that bounds the step under way
    const auto idle_step = [&] {
      const auto d = std::min(deadline, steady::now() + idle);
      limit_hit = d < deadline || call.total_limit.empty() ? idle_limit : call.total_limit;
      return d;
    };
    const auto whole_step = [&] {
      limit_hit = whole_deadline < deadline ? whole_limit : call.total_limit.empty() ? idle_limit : call.total_limit;
      return std::min(deadline, whole_deadline);
    };
    const auto next_deadline = [&](bool events) { return call.stream && events ? idle_step() : whole_step(); };
    const std::string request_target =
        proxy_ && target_.scheme == "http" ? target_.scheme + "://" + target_.host_header() + call.path : call.path;
    bhttp::request<bhttp::string_body> req{call.method, request_target, 11};
    req.set(bhttp::field::host, target_.host_header());
    req.set(bhttp::field::user_agent, user_agent());
    if (!call.body.empty()) req.set(bhttp::field::content_type, "application/json");
    req.set(bhttp::field::accept,
            call.chat && call.stream ? "text/event-stream, application/json" : "application/json");
    for (auto const& [name, value] : provider_.headers({options_.api_key, options_.anthropic_version}))
      req.set(name, value);
    if (proxy_ && target_.scheme == "http" && !proxy_authorization_.empty())
      req.set(bhttp::field::proxy_authorization, proxy_authorization_);
    req.keep_alive(false);
    req.body() = call.body;
    req.prepare_payload();

    error_code ec = run_until(
        ioc, next_deadline(true),
        [&](done d) { bhttp::async_write(stream, req, [d](error_code e, std::size_t) { d(e); }); }, cancel);
    if (ec == net::error::timed_out) return fault("could not send the request within " + limit_hit, true);
    if (ec) return fault("sending the request to " + target_.authority() + " failed (" + lower_message(ec) + ")", true);

    boost::beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.header_limit(64U * 1024U);
    parser.body_limit(static_cast<std::uint64_t>(options_.max_reply_bytes));
    ec = run_until(
        ioc, next_deadline(true),
        [&](done d) { bhttp::async_read_header(stream, buffer, parser, [d](error_code e, std::size_t) { d(e); }); },
        cancel);
    auto& res = parser.get();
    const unsigned code = parser.is_header_done() ? res.result_int() : 0;
    const auto content_type = parser.is_header_done() ? lower(res[bhttp::field::content_type]) : std::string{};
    const bool events = !ec && call.chat && code / 100 == 2 && content_type.starts_with("text/event-stream");
    stream_decoder decoder(provider_);
    if (events) parser.body_limit(static_cast<std::uint64_t>(options_.max_reply_bytes) * 32U);
    std::uint64_t event_bytes = 0;
    while (!ec && !parser.is_done()) {
      ec = run_until(
          ioc, next_deadline(events),
          [&](done d) { bhttp::async_read_some(stream, buffer, parser, [d](error_code e, std::size_t) { d(e); }); },
          cancel);
      if (!events) continue;
      event_bytes += res.body().size();
      decoder.feed(res.body());
      res.body().clear();
      if (decoder.text().size() > options_.max_reply_bytes)
        return fault("streamed reply over " + std::to_string(options_.max_reply_bytes) +
                         " bytes of text (max_reply_bytes); it was not read further",
                     false);
      if (decoder.ended()) break;  // [DONE] or message_stop: whatever the server does with the connection
    }
    if (events) return streamed(decoder, ec, event_bytes, limit_hit, call.prompt_estimate);
    if (ec) {
      const std::size_t got = res.body().size();
      if (ec == bhttp::error::body_limit)
        return fault("reply over " + std::to_string(options_.max_reply_bytes) +
                         " bytes (max_reply_bytes); it was not read further",
                     false);
      if (ec == bhttp::error::header_limit) return fault("reply headers over 64 KiB", false);
      if (ec == net::error::timed_out)
        return fault(parser.is_header_done() ? "the reply (HTTP " + std::to_string(code) + ") did not finish within " +
                                                   limit_hit + " (" + std::to_string(got) + " bytes of body by then)"
                                             : "no reply from " + target_.authority() + " within " + limit_hit,
                     true);
      if (ec == bhttp::error::partial_message || ec == net::error::eof || ec == bhttp::error::end_of_stream ||
          is_truncation(ec))
        return fault(parser.is_header_done() || got > 0
                         ? "the connection closed mid-reply (truncated after " + std::to_string(got) + " bytes of body)"
                         : "the connection closed without a reply",
                     true);
      if (ec == net::error::connection_reset || ec == net::error::broken_pipe)
        return fault("the connection was reset by " + target_.authority() + " before the reply was complete", true);
      return fault("bad reply from " + target_.authority() + " (" + lower_message(ec) + ")", true);
    }
    if (!call.chat) {
      attempt_result r;
      r.code = code;
      r.reply.status = call_status::ok;
      r.reply.text = std::move(res.body());
      return r;
    }
    auto const retry_after = res.find(bhttp::field::retry_after);
    const auto known = bhttp::obsolete_reason(res.result());  // the standard phrase, whatever the server said
    attempt_result r = interpret(code, known == "<unknown-status>" ? std::string(res.reason()) : std::string(known),
                                 retry_after == res.end() ? std::string{} : std::string(retry_after->value()),
                                 res.body(), call.prompt_estimate);
    r.code = code;
    return r;
  }

  /// A streamed reply's outcome: what the events said, or why they stopped (`ec`, after
  /// `bytes` bytes of events; `limit` names the limit a timeout hit).
  [[nodiscard]] attempt_result streamed(stream_decoder const& d, error_code const& ec, std::uint64_t bytes,
                                        std::string const& limit, std::uint64_t prompt_estimate) const {
    if (d.failed()) return fault(d.error(), true);
    const std::string so_far = " after " + std::to_string(d.events()) + " events (" + std::to_string(bytes) +
                               " bytes; " + std::to_string(d.text().size()) + " bytes of text)";
    // A server may close after the last chunk (its finish reason) without its end marker, where the
    // format allows it (OpenAI's "[DONE]").
    const bool finished = d.complete() || (provider_.ends_at_finish_reason() && !d.finish_reason().empty() &&
                                           ec != net::error::timed_out);
    if (!finished) {
      if (ec == bhttp::error::body_limit)
        return fault("streamed reply over " + std::to_string(options_.max_reply_bytes * 32U) +
                         " bytes of events (32 x max_reply_bytes); it was not read further",
                     false);
      if (ec == net::error::timed_out) return fault("the stream stalled: nothing within " + limit + so_far, true);
      if (!ec)
        return fault("the stream ended without its end marker (" + std::string(provider_.end_marker()) + ")" + so_far,
                     true);
      return fault("the stream was cut (" + lower_message(ec) + ")" + so_far, true);
    }
    return finish(d.text(), d.finish_reason(), d.model(), d.input_tokens(), d.output_tokens(), prompt_estimate);
  }

  [[nodiscard]] static bool is_truncation(error_code const& ec) {
#if defined(KERNELBRAIN_HAVE_OPENSSL)
    return ec == net::ssl::error::stream_truncated;
#else
    (void)ec;
    return false;
#endif
  }

  [[nodiscard]] attempt_result interpret(unsigned code, std::string const& reason, std::string const& retry_after,
                                         std::string const& body, std::uint64_t prompt_estimate) const {
    if (code >= 200 && code < 300) return parse_reply(body, prompt_estimate);
    const std::string said = excerpt(body);
    const std::string tail = said.empty() ? std::string{} : ": " + said;
    const std::string status = "HTTP " + std::to_string(code) + (reason.empty() ? "" : " " + reason);
    attempt_result r;
    const endpoint_error said_as = read_endpoint_error(body);
    const std::string text =
        lower(said_as.message + " " + said_as.code + " " + said_as.param + " " + body.substr(0, 2000));
    if (code == 401 || code == 403) {
      r = permanent_fault(options_.api_key.empty()
                              ? "the endpoint wants a key and none was given (" + status + ")" + tail
                              : "the endpoint refused the key (" + status + ")" + tail +
                                    " (the key is read from --llm-key-env, else KERNELBRAIN_LLM_KEY, OPENAI_API_KEY or "
                                    "ANTHROPIC_API_KEY)");
    } else if (code == 404) {
      const bool versioned = target_.path.find("/v1") != std::string::npos;
      r = permanent_fault("model '" + options_.model + "' or path " + path_ + " not found at " + target_.authority() +
                          " (" + status + ")" + tail +
                          " (check the model's name; OpenAI-compatible servers answer at BASE/v1/chat/completions, " +
                          "Anthropic at BASE/v1/messages" + (versioned ? "" : ": is /v1 missing from the base URL?") +
                          std::string(provider_.not_found_hint()) + ")");
    } else if (code == 429 &&
               (text.find("insufficient_quota") != std::string::npos ||
                text.find("exceeded your current quota") != std::string::npos ||
                text.find("credit balance") != std::string::npos || text.find("billing") != std::string::npos)) {
      r = permanent_fault("the account's quota or credit is spent (" + status + ")" + tail +
                          ": asking again will not help until it is topped up");
    } else if (code == 429) {
      r = fault("rate limited (" + status + ")" + tail, true);
    } else if (code == 408) {
      r = fault("the server timed out reading the request (" + status + ")" + tail, true);
    } else if (code >= 500 && code != 501) {
      r = fault("server error (" + status + ")" + tail, true);
    } else if (code == 400 || code == 422) {
      r = permanent_fault(refusal(said_as, text, status, tail));
    } else {
      r = permanent_fault("unexpected answer (" + status + ")" + tail);
    }
    if (r.retry && !retry_after.empty())
      r.retry_after = parse_retry_after(retry_after, static_cast<std::int64_t>(std::time(nullptr)));
    return r;
  }

  /// What a 400 (or 422) says, and the option that changes it: a refused parameter, a prompt and
  /// reply over the model's context, or another refusal.
  [[nodiscard]] std::string refusal(endpoint_error const& e, std::string const& text, std::string const& status,
                                    std::string const& tail) const {
    auto names = [&](std::string_view p) {
      return e.param == p || text.find("'" + std::string(p) + "'") != std::string::npos ||
             text.find("\"" + std::string(p) + "\"") != std::string::npos ||
             text.find("`" + std::string(p) + "`") != std::string::npos;
    };
    const bool unsupported =
        text.find("unsupported") != std::string::npos || text.find("not supported") != std::string::npos ||
        text.find("does not support") != std::string::npos || text.find("unrecognized") != std::string::npos ||
        text.find("extra inputs are not permitted") != std::string::npos || text.find("unknown") != std::string::npos;
    if (text.find("context length") != std::string::npos || text.find("context window") != std::string::npos ||
        text.find("maximum context") != std::string::npos || text.find("prompt is too long") != std::string::npos ||
        text.find("too many tokens") != std::string::npos)
      return "the prompt and the reply limit do not fit the model's context (" + status + ")" + tail +
             ": lower --llm-max-tokens (http_client_options::max_tokens), or serve the model with a longer context";
    if (options_.stream && (text.find("stream_options") != std::string::npos || names("stream")))
      return "the endpoint refused streaming (" + status + ")" + tail +
             ": give --llm-no-stream (http_client_options::stream = false) for whole replies";
    if (names("temperature"))
      return "the endpoint refused the parameter 'temperature' (" + status + ")" + tail +
             ": leave --llm-temperature out (then none is sent: the model's default), or give one it accepts";
    for (token_parameter t : {token_parameter::max_tokens, token_parameter::max_completion_tokens})
      if (names(to_string(t)) && (unsupported || e.param == to_string(t))) {
        const token_parameter other =
            t == token_parameter::max_tokens ? token_parameter::max_completion_tokens : token_parameter::max_tokens;
        return "the endpoint refused the parameter '" + std::string(to_string(t)) + "' (" + status + ")" + tail +
               ": give --llm-token-param " + std::string(to_string(other)) +
               (!provider_.token_parameter_refusal(token_parameter::none) ? " (or none: no reply limit sent)" : "") +
               " (http_client_options::token_limit)";
      }
    if (!e.param.empty()) return "the endpoint refused the parameter '" + e.param + "' (" + status + ")" + tail;
    return "the endpoint rejected the request (" + status + ")" + tail;
  }

  [[nodiscard]] attempt_result parse_reply(std::string const& body, std::uint64_t prompt_estimate) const {
    error_code ec;
    const json::value v = json::parse(body, ec);
    if (ec) return fault("the reply is not valid JSON (" + ec.message() + "): " + excerpt(body, 120), true);
    auto const* o = v.if_object();
    if (o == nullptr) return fault("the reply is not a JSON object: " + excerpt(body, 120), true);
    if (auto const* e = o->if_contains("error"); e != nullptr && !e->is_null())
      return fault("the reply holds an error: " + excerpt(body), true);
    reply_parts parts;
    if (auto missing = provider_.read_reply(*o, parts)) return fault(*missing + ": " + excerpt(body, 120), true);
    return finish(std::move(parts.text), std::move(parts.finish_reason), std::move(parts.model), parts.input_tokens,
                  parts.output_tokens, prompt_estimate);
  }

  /// A reply from its parts, whole or streamed: usage as reported (else estimated), its cost, and
  /// whether the model's token limit cut it.
  [[nodiscard]] attempt_result finish(std::string text, std::string finish_reason, std::string model,
                                      std::optional<std::uint64_t> input, std::optional<std::uint64_t> output,
                                      std::uint64_t prompt_estimate) const {
    attempt_result r;
    chat_reply& reply = r.reply;
    reply.text = std::move(text);
    reply.finish_reason = std::move(finish_reason);
    reply.model = std::move(model);
    if (input && output) {
      reply.usage.input = *input;
      reply.usage.output = *output;
    } else {
      reply.usage.input = prompt_estimate;
      reply.usage.output = estimate_tokens(reply.text);
      reply.usage.estimated = true;
    }
    reply.usage.cost = static_cast<double>(reply.usage.input) * options_.price_per_input_token +
                       static_cast<double>(reply.usage.output) * options_.price_per_output_token;
    if (reply.finish_reason == "length" || reply.finish_reason == "max_tokens") {
      reply.status = call_status::cut;
      reply.error = "the model stopped at its token limit (finish reason '" + reply.finish_reason + "')";
    } else {
      reply.status = call_status::ok;
    }
    return r;
  }

  http_client_options options_;
  provider const& provider_;  ///< the wire format of options_.format
  url target_;
  std::string path_;      ///< the request path: base path + /chat/completions or /messages
  std::string endpoint_;  ///< scheme://host[:port]path, for messages
  std::optional<url> proxy_;
  std::string proxy_authorization_;   ///< "Basic ...": a secret
  std::vector<std::string> secrets_;  ///< never in a message: the key, the proxy's credentials
#if defined(KERNELBRAIN_HAVE_OPENSSL)
  std::unique_ptr<net::ssl::context> tls_;
#endif
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
  std::mutex slots_mu_;
  std::condition_variable slots_cv_;
  std::size_t in_flight_ = 0;
  token_parameter token_field_ = token_parameter::max_tokens;  ///< how the reply limit is sent
  bool probes_unanswered_ = false;                             ///< a probe of the server went unanswered (check() only)
  mutable std::mutex deadline_mu_;
  steady::time_point deadline_ = steady::time_point::max();  ///< set_deadline's
};

}  // namespace http_detail

KERNELBRAIN_DECL token_parameter parse_token_parameter(std::string_view text) {
  const std::string l = http_detail::lower(http_detail::trim(text));
  for (token_parameter t : {token_parameter::automatic, token_parameter::max_tokens,
                            token_parameter::max_completion_tokens, token_parameter::none})
    if (l == to_string(t)) return t;
  throw error("unknown reply-limit parameter '" + std::string(text) +
              "': expected auto, max_tokens, max_completion_tokens or none");
}

KERNELBRAIN_DECL std::string normalize_base_url(std::string_view base_url, wire_format format) {
  std::string u(http_detail::trim(base_url));
  if (u.empty()) return std::string(http_detail::provider_for(format).public_base_url());
  while (u.size() > 1 && u.back() == '/') u.pop_back();
  const auto scheme = u.find("://");
  const auto path = scheme == std::string::npos ? std::string::npos : u.find('/', scheme + 3);
  if (scheme != std::string::npos && path == std::string::npos) u += "/v1";  // no path at all: the SDKs' base URL
  return u;
}

KERNELBRAIN_DECL std::optional<wire_format> infer_wire_format(std::string_view base_url) {
  const std::string l = http_detail::lower(http_detail::trim(base_url));
  std::string u = l;
  while (!u.empty() && u.back() == '/') u.pop_back();
  for (http_detail::provider const* p : http_detail::all_providers())
    if (u.ends_with(p->endpoint_suffix())) return p->format();
  const auto scheme = l.find("://");
  const auto host_start = scheme == std::string::npos ? 0 : scheme + 3;
  const auto host_end = l.find_first_of("/:?", host_start);
  const std::string host =
      l.substr(host_start, host_end == std::string::npos ? std::string::npos : host_end - host_start);
  for (http_detail::provider const* p : http_detail::all_providers())
    if (host == p->domain() || host.ends_with("." + std::string(p->domain()))) return p->format();
  return std::nullopt;
}

KERNELBRAIN_DECL wire_format parse_wire_format(std::string_view text) {
  const std::string l = http_detail::lower(http_detail::trim(text));
  std::string names;  // "openai or anthropic"
  auto const providers = http_detail::all_providers();
  for (std::size_t i = 0; i < providers.size(); ++i) {
    if (l == providers[i]->name()) return providers[i]->format();
    names += (i == 0 ? "" : i + 1 == providers.size() ? " or " : ", ") + std::string(providers[i]->name());
  }
  throw error("unknown wire format '" + std::string(text) + "': expected " + names);
}

KERNELBRAIN_DECL std::unique_ptr<model_client> make_http_client(http_client_options options) {
  return std::make_unique<http_detail::http_model_client>(std::move(options));
}

KERNELBRAIN_DECL bool http_client_has_tls() noexcept {
#if defined(KERNELBRAIN_HAVE_OPENSSL)
  return true;
#else
  return false;
#endif
}

}  // namespace kernelbrain::llm
