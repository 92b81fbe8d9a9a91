// A provider's wire format as an object: how the HTTP model client builds a request's body and headers
// for that provider's API, and how it reads a whole reply and the events of a streamed one. One file
// per format beside this one (openai.hpp, anthropic.hpp), registered in registry.hpp; the client and
// the stream decoder ask the registry for the options' format. Boost.JSON. Used by the client; not an
// API.
#pragma once
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/http/url.hpp"
#include "kernelbrain/generate/llm/wire_format.hpp"

namespace kernelbrain::llm::http_detail {

/// What a reply says, whole or streamed.
struct reply_parts {
  std::string text;
  std::string finish_reason;
  std::string model;
  std::optional<std::uint64_t> input_tokens;
  std::optional<std::uint64_t> output_tokens;
  bool complete = false;  ///< streamed: the stream's end marker came
};

/// A chat request's body as the client settles it from the options and the request.
struct request_fields {
  std::string_view model;
  std::string_view system;  ///< empty: none
  std::string_view user;
  token_parameter token_field = token_parameter::max_tokens;  ///< never automatic
  std::size_t max_tokens = 1;
  std::optional<double> temperature;
  bool stream = false;
};

/// What the key and version headers are made of.
struct credentials {
  std::string_view api_key;  ///< empty: no key header
  std::string_view anthropic_version;
};

/// One provider's wire format.
class provider {
 public:
  provider() = default;
  provider(provider const&) = delete;
  provider& operator=(provider const&) = delete;
  provider(provider&&) = delete;
  provider& operator=(provider&&) = delete;
  virtual ~provider() = default;

  [[nodiscard]] virtual wire_format format() const noexcept = 0;
  /// "openai": what parse_wire_format reads and messages say.
  [[nodiscard]] std::string_view name() const noexcept { return to_string(format()); }
  /// The chat endpoint's path after the base URL: "/chat/completions".
  [[nodiscard]] virtual std::string_view endpoint_suffix() const noexcept = 0;
  /// The base URL when none is given: the provider's public endpoint.
  [[nodiscard]] virtual std::string_view public_base_url() const noexcept = 0;
  /// A base URL whose host is this domain or one of its subdomains implies the format.
  [[nodiscard]] virtual std::string_view domain() const noexcept = 0;
  /// The largest temperature the API allows (the least is 0).
  [[nodiscard]] virtual double max_temperature() const noexcept = 0;
  /// Why the API cannot take the reply limit as `t` says (a refusal of the options), or nothing.
  [[nodiscard]] virtual std::optional<std::string> token_parameter_refusal(token_parameter t) const = 0;
  /// What token_parameter::automatic means for an endpoint at `target`.
  [[nodiscard]] virtual token_parameter automatic_token_parameter(url const& target) const = 0;
  /// Added to the message of a 404 (the likely mistake), or empty.
  [[nodiscard]] virtual std::string_view not_found_hint() const noexcept = 0;
  /// Whether the start-up check asks the server of the model's context (OpenAI-compatible servers:
  /// /models, /props, Ollama's /api/...).
  [[nodiscard]] virtual bool probes_context() const noexcept = 0;

  /// The request's JSON text.
  [[nodiscard]] virtual std::string request_body(request_fields const& f) const = 0;
  /// The headers that carry the key and the API's version, in order: name, value.
  [[nodiscard]] virtual std::vector<std::pair<std::string, std::string>> headers(credentials const& c) const = 0;
  /// A whole reply's parts from its JSON object (one without an error); what it lacks ("the reply has
  /// no choices") when it is not of the format's shape.
  [[nodiscard]] virtual std::optional<std::string> read_reply(boost::json::object const& reply,
                                                              reply_parts& out) const = 0;

  /// Whether an event's data is the stream's end marker that is not JSON (OpenAI's "[DONE]").
  [[nodiscard]] virtual bool is_end_of_stream(std::string_view data) const noexcept = 0;
  /// Reads one event of a stream (its data a JSON object without an error; `event` the SSE event
  /// field, possibly empty) into `out`; sets out.complete at the end marker.
  virtual void read_event(boost::json::object const& data, std::string_view event, reply_parts& out) const = 0;
  /// The end marker, for messages: "data: [DONE]".
  [[nodiscard]] virtual std::string_view end_marker() const noexcept = 0;
  /// Whether a stream that closes after its finish reason, without its end marker, is complete.
  [[nodiscard]] virtual bool ends_at_finish_reason() const noexcept = 0;
};

// ---- reading JSON fields, shared by the formats and the client ------------------------------------

/// A JSON string's text; empty for anything else or nothing.
[[nodiscard]] KERNELBRAIN_DECL std::string string_of(boost::json::value const* v);
/// A whole reply's token count at `key`: a non-negative integer or number; nothing otherwise.
[[nodiscard]] KERNELBRAIN_DECL std::optional<std::uint64_t> count_of(boost::json::object const& o,
                                                                     std::string_view key);
/// A streamed event's token count: a non-negative integer; nothing otherwise.
[[nodiscard]] KERNELBRAIN_DECL std::optional<std::uint64_t> event_count_of(boost::json::value const* v);
/// The object at `key`, or nullptr.
[[nodiscard]] KERNELBRAIN_DECL boost::json::object const* object_at(boost::json::object const& o, std::string_view key);
/// `s` as a JSON string.
[[nodiscard]] KERNELBRAIN_DECL boost::json::value text(std::string_view s);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/providers/impl/provider.ipp"
#endif
