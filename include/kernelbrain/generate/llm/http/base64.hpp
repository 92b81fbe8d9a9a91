// Base64 (RFC 4648, with padding), for a proxy's Basic credentials. Used by the HTTP client; not an
// API.
#pragma once
#include <string>
#include <string_view>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::http_detail {

/// `in` in base64, with '=' padding.
[[nodiscard]] KERNELBRAIN_DECL std::string base64(std::string_view in);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/http/impl/base64.ipp"
#endif
