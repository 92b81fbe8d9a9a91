// The HTTP model client: OpenAI-compatible chat completions (POST {base_url}/chat/completions) and
// Anthropic messages (POST {base_url}/messages), over http:// and, where KernelBrain was built with
// OpenSSL, https://. Retries with seeded, jittered exponential backoff and Retry-After; bounded
// replies; per-attempt timeouts; HTTP proxies (absolute-form for http://, CONNECT tunnels for
// https://) with NO_PROXY. The guide is docs/llm-clients.md.
//
// The wire formats (wire_format.hpp) are objects in providers/, one file per provider format; URL,
// proxy and Retry-After parsing are in http/. This header and those it includes need only the
// standard library. The bodies (Boost.Beast, Asio, Boost.JSON and, with
// KERNELBRAIN_HAVE_OPENSSL defined, asio::ssl on OpenSSL) are in impl/http_client.ipp: header-only
// form, included at the end (compile Boost.JSON's source once, link OpenSSL's ssl and crypto where
// the macro is defined); separately compiled, kernelbrain::runtime (see kernelbrain/config.hpp),
// which defines KERNELBRAIN_HAVE_OPENSSL and links OpenSSL where CMake found it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/http/proxy.hpp"  // the parts tests reach (http_detail): not an API
#include "kernelbrain/generate/llm/http/retry_after.hpp"
#include "kernelbrain/generate/llm/http/url.hpp"
#include "kernelbrain/generate/llm/model_client.hpp"
#include "kernelbrain/generate/llm/wire_format.hpp"

namespace kernelbrain::llm {

/// "openai" or "anthropic" (any case); anything else throws kernelbrain::error naming both.
[[nodiscard]] KERNELBRAIN_DECL wire_format parse_wire_format(std::string_view text);

/// "auto", "max_tokens", "max_completion_tokens" or "none"; anything else throws kernelbrain::error.
[[nodiscard]] KERNELBRAIN_DECL token_parameter parse_token_parameter(std::string_view text);

/// The base URL as the client uses it: a URL without a path gets "/v1" (the SDKs' convention is a
/// base URL without it: https://api.anthropic.com, http://127.0.0.1:8000); one with a path, or
/// ending in /chat/completions or /messages, is kept. Empty: the format's public endpoint.
[[nodiscard]] KERNELBRAIN_DECL std::string normalize_base_url(std::string_view base_url, wire_format format);

/// The wire format a base URL implies: anthropic for an anthropic.com host or a URL ending in
/// /messages, openai for one ending in /chat/completions; nothing otherwise.
[[nodiscard]] KERNELBRAIN_DECL std::optional<wire_format> infer_wire_format(std::string_view base_url);

/// What make_http_client needs. Every field has a usable default but `model` (and `api_key` for a
/// hosted endpoint); times are seconds.
struct http_client_options {
  wire_format format = wire_format::openai;
  /// Scheme, host, optional port and path prefix: https://api.openai.com/v1,
  /// http://127.0.0.1:8000/v1, https://api.anthropic.com (a URL without a path gets /v1: see
  /// normalize_base_url). Empty: the format's public endpoint. A URL that already ends in
  /// /chat/completions or /messages is used as it is.
  std::string base_url;
  std::string model;  ///< required: the model name the endpoint knows
  /// The key's value. Empty: no key header is sent (local servers). Never logged, never in an error
  /// text or describe(): any echo of it in a server's message is replaced by "[api key]".
  std::string api_key;
  /// Sampling temperature sent with every request. Negative (the default): each request's own
  /// chat_request::temperature, and none when the request has none (the endpoint's default: OpenAI's
  /// reasoning models refuse any other).
  double temperature = -1;
  /// A cap on each request's chat_request::max_tokens. 0 (the default): no cap.
  std::size_t max_tokens = 0;
  /// How the reply-token limit is sent (see token_parameter).
  token_parameter token_limit = token_parameter::automatic;
  /// Seconds the start-up check waits for its one-word reply, per attempt, in all (streamed or not;
  /// at most request_timeout_seconds): a server that accepts and never answers fails the check this
  /// soon.
  double check_timeout_seconds = 120;
  /// Requests in flight at once (complete_all's width; complete() from more threads waits). >= 1.
  std::size_t concurrency = 4;
  /// Ask for the reply as a stream of server-sent events ("stream": true; OpenAI format also
  /// "stream_options": {"include_usage": true}), read as it is generated, so that a long generation
  /// is limited by idle_timeout_seconds rather than by a total. A server that answers with a whole
  /// JSON reply instead is read as such. false: whole replies, limited by request_timeout_seconds.
  bool stream = true;
  /// Streamed replies (stream = true), per attempt: the longest wait for the reply's headers and
  /// between any two reads of its body (a stalled stream is retried); there is no total.
  double idle_timeout_seconds = 120;
  double connect_timeout_seconds = 10;   ///< resolve, connect, proxy CONNECT and TLS handshake, per attempt
  double request_timeout_seconds = 300;  ///< stream = false: per attempt, the exchange from connect to last byte
  unsigned max_retries = 4;              ///< attempts after the first, on retryable faults only
  double backoff_base_seconds = 1;       ///< retry k (from 0) waits uniform(0, min(max, base * 2^k)) ("full jitter")
  double backoff_max_seconds = 30;
  double retry_after_cap_seconds = 120;  ///< a server's Retry-After is honoured up to this
  /// Reply body limit (8 MiB); a larger one is not read. A streamed reply's text is held to it, and
  /// its events (framing, JSON and all) to 32 times it.
  std::size_t max_reply_bytes = std::size_t{8} << 20;
  /// A PEM file of CA certificates trusted in addition to the system's default paths.
  std::string ca_file;
  /// Verify the server's certificate chain and host name (the default). false: any certificate is
  /// accepted; describe() then says "TLS verification off".
  bool verify_tls = true;
  double price_per_input_token = 0;  ///< usage.cost = input * this + output * price_per_output_token
  double price_per_output_token = 0;
  /// An http:// proxy, "host:port" or "http://[user:password@]host:port", used for every request.
  /// Empty (the default): from the environment (https targets: https_proxy, HTTPS_PROXY; http
  /// targets: http_proxy, HTTP_PROXY), unless no_proxy / NO_PROXY names the host or the host is
  /// localhost or a loopback address. "none": no proxy, whatever the environment says.
  std::string proxy;
  std::uint64_t jitter_seed = 0;  ///< seeds the backoff jitter: equal seeds, equal waits for equal faults
  std::string anthropic_version = "2023-06-01";  ///< the anthropic-version header
};

/// The client. Throws kernelbrain::error for options it cannot use (no model, a bad URL or proxy,
/// https:// in a build without OpenSSL, an unreadable ca_file, ...); never with the key in the text.
[[nodiscard]] KERNELBRAIN_DECL std::unique_ptr<model_client> make_http_client(http_client_options options);

/// Whether this build of the client speaks TLS (https://): KernelBrain built with OpenSSL.
[[nodiscard]] KERNELBRAIN_DECL bool http_client_has_tls() noexcept;

}  // namespace kernelbrain::llm

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/impl/http_client.ipp"
#endif
