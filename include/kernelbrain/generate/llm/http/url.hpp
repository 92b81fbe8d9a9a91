// An http:// or https:// URL as the HTTP client uses it (scheme, credentials, host, port, path), and
// its parsing, whose errors never repeat a password. Tests reach it through http_client.hpp; not an
// API.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::http_detail {

/// A parsed http:// or https:// URL.
struct url {
  std::string scheme;    ///< "http" or "https"
  std::string userinfo;  ///< "user:password" before '@' (proxies only), else empty
  std::string host;      ///< without brackets for IPv6
  std::uint16_t port = 0;
  std::string path;                                                ///< "" or "/..." without a trailing '/'
  [[nodiscard]] KERNELBRAIN_DECL std::string authority() const;    ///< host:port, [v6]:port
  [[nodiscard]] KERNELBRAIN_DECL std::string host_header() const;  ///< host, and :port if not the scheme's
};

/// Parses `text`; `what` names it in the message of the kernelbrain::error thrown for a bad one
/// (which never repeats a password).
[[nodiscard]] KERNELBRAIN_DECL url parse_url(std::string_view text, std::string_view what);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/http/impl/url.ipp"
#endif
