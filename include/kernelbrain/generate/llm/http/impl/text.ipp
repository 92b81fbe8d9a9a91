// Bodies of kernelbrain/generate/llm/http/text.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <system_error>
#include "kernelbrain/generate/llm/http/text.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

KERNELBRAIN_DECL std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

KERNELBRAIN_DECL bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

KERNELBRAIN_DECL std::string without_password(std::string_view text) {
  const auto scheme_end = text.find("://");
  const std::size_t from = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  const auto authority_end = text.find_first_of("/?#", from);
  const auto at = text.substr(0, authority_end).rfind('@');
  if (at == std::string_view::npos || at < from) return std::string(text);
  return std::string(text.substr(0, from)) + "***@" + std::string(text.substr(at + 1));
}

KERNELBRAIN_DECL std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      unsigned v = 0;
      const auto r = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (r.ec == std::errc{} && r.ptr == s.data() + i + 3) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace kernelbrain::llm::http_detail
