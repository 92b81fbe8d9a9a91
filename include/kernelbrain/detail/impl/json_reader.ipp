// Bodies of kernelbrain/detail/json_reader.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <limits>
#include "kernelbrain/detail/json_reader.hpp"

namespace kernelbrain::detail::json_reader {

document_parser::document_parser(json::parse_options const& options, repeated_keys keys) : parser_(options, keys) {}

std::optional<json::value> document_parser::parse(std::string_view text) {
  parser_.reset();
  parser_.handler().repeated.clear();
  ec_ = {};
  stop_ = parser_.write_some(false, text.data(), text.size(), ec_);
  if (!ec_ && !parser_.done()) ec_ = json::error::incomplete;
  if (ec_) return std::nullopt;
  return parser_.handler().st.release();
}

std::size_t document_parser::trailing(std::string_view text) const { return text.find_first_not_of(" \t\r\n", stop_); }

json::value const* find(json::object const& o, std::string_view key) {
  return o.if_contains(json::string_view(key.data(), key.size()));
}

std::optional<std::int64_t> to_int64(json::value const& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return static_cast<std::int64_t>(v.get_uint64());
  return std::nullopt;
}

std::optional<double> to_double(json::value const& v) {
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return std::nullopt;
}

std::string line_column(std::string_view text, std::size_t at) {
  at = std::min(at, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else
      ++col;
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

std::string_view kind_name(json::value const& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "true/false";
    case json::kind::int64:
    case json::kind::uint64:
      return "an integer";
    case json::kind::double_:
      return "a number with a fraction or exponent";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "something else";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0U : 1U)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_field(json::object const& o, std::initializer_list<std::string_view> known,
                          std::string (*show)(std::string_view)) {
  for (auto const& kv : o) {
    const std::string_view k(kv.key().data(), kv.key().size());
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string list, guess;
    std::size_t best = 3;  // suggest only near misses
    for (auto const& n : known) {
      if (!list.empty()) list += ", ";
      list += n;
      // The distance is at least the difference in length: a long key (a plan may hold one of
      // kilobytes) costs no quadratic work when it cannot be a near miss.
      const std::size_t gap = k.size() > n.size() ? k.size() - n.size() : n.size() - k.size();
      if (gap < best)
        if (const auto d = edit_distance(k, n); d < best) {
          best = d;
          guess = std::string(n);
        }
    }
    std::string out =
        "unknown field '";  // built with += : GCC 12 -O3 warns falsely (-Wrestrict) on "'" + std::string&&
    out += show ? show(k) : std::string(k);
    out += '\'';
    if (!guess.empty()) out += " (did you mean '" + guess + "'?)";
    out += " (known: " + list + ")";
    return out;
  }
  return {};
}

}  // namespace kernelbrain::detail::json_reader
