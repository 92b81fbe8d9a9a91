// A Retry-After header's value: delta-seconds or an HTTP-date (IMF-fixdate, RFC 850, asctime), as
// seconds from now. Tests reach it through http_client.hpp; not an API.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::http_detail {

/// A Retry-After value in seconds from `now_unix`: delta-seconds or an HTTP-date
/// ("Sun, 06 Nov 1994 08:49:37 GMT"); a date in the past is 0. nullopt for anything else.
[[nodiscard]] KERNELBRAIN_DECL std::optional<double> parse_retry_after(std::string_view value, std::int64_t now_unix);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/http/impl/retry_after.ipp"
#endif
