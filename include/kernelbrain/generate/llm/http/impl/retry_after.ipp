// Bodies of kernelbrain/generate/llm/http/retry_after.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <string>
#include <system_error>
#include <vector>
#include "kernelbrain/generate/llm/http/retry_after.hpp"
#include "kernelbrain/generate/llm/http/text.hpp"

namespace kernelbrain::llm::http_detail {

inline int month_number(std::string_view m) {
  static constexpr std::string_view names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                               "jul", "aug", "sep", "oct", "nov", "dec"};
  const std::string l = lower(m);
  for (int i = 0; i < 12; ++i)
    if (l == names[i]) return i + 1;
  return 0;
}

inline bool parse_int(std::string_view s, int& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size() && !s.empty();
}

KERNELBRAIN_DECL std::optional<double> parse_retry_after(std::string_view value, std::int64_t now_unix) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    double seconds = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (r.ec != std::errc{} || r.ptr != value.data() + value.size() || !std::isfinite(seconds)) return std::nullopt;
    return seconds;
  }
  // HTTP-date: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT",
  // asctime "Sun Nov  6 08:49:37 1994".
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < value.size();) {
    const auto end = value.find_first_of(" ,", i);
    const auto w = value.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    if (!w.empty()) words.push_back(w);
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  int day = 0;
  int month = 0;
  int year = 0;
  std::string_view time;
  if (words.size() == 6 && lower(words[5]) == "gmt") {  // IMF-fixdate
    if (!parse_int(words[1], day) || !parse_int(words[3], year)) return std::nullopt;
    month = month_number(words[2]);
    time = words[4];
  } else if (words.size() == 4 && lower(words[3]) == "gmt") {  // RFC 850
    const auto d = words[1];
    const auto a = d.find('-');
    const auto b = d.rfind('-');
    if (a == std::string_view::npos || b == a) return std::nullopt;
    if (!parse_int(d.substr(0, a), day) || !parse_int(d.substr(b + 1), year)) return std::nullopt;
    month = month_number(d.substr(a + 1, b - a - 1));
    if (year < 100) year += year < 70 ? 2000 : 1900;
    time = words[2];
  } else if (words.size() == 5) {  // asctime
    month = month_number(words[1]);
    if (!parse_int(words[2], day) || !parse_int(words[4], year)) return std::nullopt;
    time = words[3];
  } else {
    return std::nullopt;
  }
  int hh = 0;
  int mm = 0;
  int ss = 0;
  if (time.size() != 8 || time[2] != ':' || time[5] != ':' || !parse_int(time.substr(0, 2), hh) ||
      !parse_int(time.substr(3, 2), mm) || !parse_int(time.substr(6, 2), ss))
    return std::nullopt;
  if (month == 0 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
  const std::int64_t when = days * 86400 + hh * 3600 + mm * 60 + ss;
  return static_cast<double>(std::max<std::int64_t>(0, when - now_unix));
}

}  // namespace kernelbrain::llm::http_detail
