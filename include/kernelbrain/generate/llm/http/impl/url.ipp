// Bodies of kernelbrain/generate/llm/http/url.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <charconv>
#include <system_error>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/generate/llm/http/text.hpp"
#include "kernelbrain/generate/llm/http/url.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::string url::authority() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

KERNELBRAIN_DECL std::string url::host_header() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  const std::uint16_t default_port = scheme == "https" ? 443 : 80;
  if (port != default_port) h += ":" + std::to_string(port);
  return h;
}

KERNELBRAIN_DECL url parse_url(std::string_view text, std::string_view what) {
  const auto fail = [&](std::string const& why) {
    throw error(std::string(what) + " '" + without_password(text) + "': " + why);
  };
  text = trim(text);
  url u;
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) fail("expected http://host[:port][/path] or https://...");
  u.scheme = lower(text.substr(0, scheme_end));
  if (u.scheme != "http" && u.scheme != "https") fail("the scheme must be http or https");
  std::string_view rest = text.substr(scheme_end + 3);
  const auto authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view path = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (path.find_first_of("?#") != std::string_view::npos) fail("a query or fragment is not allowed");
  if (has_control(text) || text.find(' ') != std::string_view::npos) fail("spaces or control characters");
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    u.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) fail("an IPv6 address without its closing ']'");
    u.host = std::string(authority.substr(1, close - 1));
    const auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') fail("unexpected text after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) fail("an empty port");
    }
  } else {
    const auto colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) fail("an empty port");
    }
  }
  if (u.host.empty()) fail("no host");
  u.host = lower(u.host);
  if (port_text.empty()) {
    u.port = u.scheme == "https" ? 443 : 80;
  } else {
    unsigned p = 0;
    const auto r = std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (r.ec != std::errc{} || r.ptr != port_text.data() + port_text.size() || p == 0 || p > 65535)
      fail("the port must be a number from 1 to 65535");
    u.port = static_cast<std::uint16_t>(p);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  u.path = std::string(path);
  return u;
}

}  // namespace kernelbrain::llm::http_detail
