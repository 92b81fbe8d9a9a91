// The HTTP client's small text helpers: ASCII lower case, trimming, control characters, percent
// decoding, and a URL with its password hidden for messages. Used by the client; not an API.
#pragma once
#include <string>
#include <string_view>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::http_detail {

/// `s` in ASCII lower case.
[[nodiscard]] KERNELBRAIN_DECL std::string lower(std::string_view s);

/// `s` without the white space at its ends.
[[nodiscard]] KERNELBRAIN_DECL std::string_view trim(std::string_view s);

/// Whether `s` holds a control character (below 0x20, or DEL).
[[nodiscard]] KERNELBRAIN_DECL bool has_control(std::string_view s);

/// `url` with a user:password part replaced, for messages.
[[nodiscard]] KERNELBRAIN_DECL std::string without_password(std::string_view text);

/// `s` with its %XX escapes decoded (a malformed one is kept as it is).
[[nodiscard]] KERNELBRAIN_DECL std::string percent_decode(std::string_view s);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/http/impl/text.ipp"
#endif
