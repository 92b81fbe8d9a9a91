// The wire formats the HTTP model client speaks (wire_format: one per provider format, each an object
// in providers/) and how a request states its reply-token limit (token_parameter), with their names.
// Standard library only.
#pragma once
#include <string_view>

namespace kernelbrain::llm {

/// The wire format of the endpoint.
enum class wire_format {
  openai,     ///< POST {base_url}/chat/completions, Authorization: Bearer KEY
  anthropic,  ///< POST {base_url}/messages, x-api-key: KEY, anthropic-version
};

[[nodiscard]] constexpr std::string_view to_string(wire_format f) noexcept {
  return f == wire_format::anthropic ? "anthropic" : "openai";
}

/// How a request states its reply-token limit.
enum class token_parameter {
  automatic,              ///< anthropic: max_tokens; openai: max_completion_tokens at api.openai.com, else max_tokens
  max_tokens,             ///< "max_tokens" (Anthropic; most OpenAI-compatible servers; older OpenAI models)
  max_completion_tokens,  ///< "max_completion_tokens" (OpenAI's current name; reasoning models accept no other)
  none,                   ///< no limit sent (OpenAI format only: Anthropic requires max_tokens)
};
[[nodiscard]] constexpr std::string_view to_string(token_parameter t) noexcept {
  switch (t) {
    case token_parameter::max_tokens:
      return "max_tokens";
    case token_parameter::max_completion_tokens:
      return "max_completion_tokens";
    case token_parameter::none:
      return "none";
    case token_parameter::automatic:
      break;
  }
  return "auto";
}

}  // namespace kernelbrain::llm
