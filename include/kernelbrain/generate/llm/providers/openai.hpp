// The OpenAI chat-completions wire format (OpenAI and OpenAI-compatible servers: vLLM, SGLang,
// llama.cpp, Ollama, routers): POST {base_url}/chat/completions with Authorization: Bearer KEY, the
// system prompt as a message, choices[0].message.content in a whole reply, chat-completion chunks
// ending in "data: [DONE]" in a streamed one. Used by the HTTP model client; not an API.
#pragma once
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/providers/provider.hpp"

namespace kernelbrain::llm::http_detail {

class openai_format final : public provider {
 public:
  [[nodiscard]] wire_format format() const noexcept override { return wire_format::openai; }
  [[nodiscard]] std::string_view endpoint_suffix() const noexcept override { return "/chat/completions"; }
  [[nodiscard]] std::string_view public_base_url() const noexcept override { return "https://api.openai.com/v1"; }
  [[nodiscard]] std::string_view domain() const noexcept override { return "openai.com"; }
  [[nodiscard]] double max_temperature() const noexcept override { return 2.0; }
  [[nodiscard]] std::optional<std::string> token_parameter_refusal(token_parameter) const override {
    return std::nullopt;
  }
  /// max_completion_tokens at api.openai.com (its reasoning models accept no other), else max_tokens.
  [[nodiscard]] KERNELBRAIN_DECL token_parameter automatic_token_parameter(url const& target) const override;
  [[nodiscard]] std::string_view not_found_hint() const noexcept override {
    return "; for an Anthropic endpoint give --llm-api anthropic";
  }
  [[nodiscard]] bool probes_context() const noexcept override { return true; }

  /// model, messages (the system prompt first, as a "system" message), the token limit, temperature,
  /// stream and stream_options.include_usage.
  [[nodiscard]] KERNELBRAIN_DECL std::string request_body(request_fields const& f) const override;
  [[nodiscard]] KERNELBRAIN_DECL std::vector<std::pair<std::string, std::string>> headers(
      credentials const& c) const override;
  /// choices[0].message.content (a string, or content parts), finish_reason, usage.prompt_tokens and
  /// completion_tokens.
  [[nodiscard]] KERNELBRAIN_DECL std::optional<std::string> read_reply(boost::json::object const& reply,
                                                                       reply_parts& out) const override;

  [[nodiscard]] bool is_end_of_stream(std::string_view data) const noexcept override { return data == "[DONE]"; }
  /// A chat-completion chunk: choices[0].delta.content, a finish_reason on the last, usage in a final
  /// chunk when stream_options.include_usage was asked for.
  KERNELBRAIN_DECL void read_event(boost::json::object const& data, std::string_view event,
                                   reply_parts& out) const override;
  [[nodiscard]] std::string_view end_marker() const noexcept override { return "data: [DONE]"; }
  /// A server may close after the last chunk (its finish reason) without "[DONE]".
  [[nodiscard]] bool ends_at_finish_reason() const noexcept override { return true; }
};

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/providers/impl/openai.ipp"
#endif
