// The Anthropic messages wire format: POST {base_url}/messages with x-api-key: KEY and
// anthropic-version, the system prompt as a "system" field, text content blocks in a whole reply,
// message events (message_start, content_block_delta, message_delta, message_stop) in a streamed one.
// Used by the HTTP model client; not an API.
#pragma once
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/providers/provider.hpp"

namespace kernelbrain::llm::http_detail {

class anthropic_format final : public provider {
 public:
  [[nodiscard]] wire_format format() const noexcept override { return wire_format::anthropic; }
  [[nodiscard]] std::string_view endpoint_suffix() const noexcept override { return "/messages"; }
  [[nodiscard]] std::string_view public_base_url() const noexcept override { return "https://api.anthropic.com/v1"; }
  [[nodiscard]] std::string_view domain() const noexcept override { return "anthropic.com"; }
  [[nodiscard]] double max_temperature() const noexcept override { return 1.0; }
  /// max_completion_tokens and none: the messages API requires max_tokens.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<std::string> token_parameter_refusal(token_parameter t) const override;
  [[nodiscard]] token_parameter automatic_token_parameter(url const&) const override {
    return token_parameter::max_tokens;
  }
  [[nodiscard]] std::string_view not_found_hint() const noexcept override { return {}; }
  [[nodiscard]] bool probes_context() const noexcept override { return false; }

  /// model, system, messages, the token limit, temperature and stream.
  [[nodiscard]] KERNELBRAIN_DECL std::string request_body(request_fields const& f) const override;
  [[nodiscard]] KERNELBRAIN_DECL std::vector<std::pair<std::string, std::string>> headers(
      credentials const& c) const override;
  /// The text content blocks, stop_reason, usage.input_tokens and output_tokens.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<std::string> read_reply(boost::json::object const& reply,
                                                                       reply_parts& out) const override;

  [[nodiscard]] bool is_end_of_stream(std::string_view) const noexcept override { return false; }
  /// A message event, by its type (else the SSE event field): message_start (model, usage),
  /// content_block_start and content_block_delta text_delta (text), message_delta (stop reason,
  /// usage), message_stop (the end).
  KERNELBRAIN_DECL void read_event(boost::json::object const& data, std::string_view event,
                                   reply_parts& out) const override;
  [[nodiscard]] std::string_view end_marker() const noexcept override { return "message_stop"; }
  [[nodiscard]] bool ends_at_finish_reason() const noexcept override { return false; }
};

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/providers/impl/anthropic.ipp"
#endif
