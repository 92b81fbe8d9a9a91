// A strategy's key=value settings ("eta=4,samples=10") with typed getters that remember which keys
// were read, so that the registry can refuse a setting no factory understood.
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"

namespace kernelbrain {

/// key=value settings for a strategy factory ("eta=4", "samples=10"), with typed getters.
/// A getter remembers that its key was read, so the registry can reject settings no factory
/// understood (a typo such as "eat=4" must not be silently ignored).
class strategy_options {
 public:
  strategy_options() = default;
  strategy_options(std::initializer_list<std::pair<const std::string, std::string>> init) : values(init) {}

  /// Parses "key=value,key=value" (spaces around items are ignored; an empty text gives no settings).
  [[nodiscard]] static strategy_options parse(std::string_view text) {
    strategy_options o;
    while (!text.empty()) {
      const auto comma = text.find(',');
      const auto item = trim(text.substr(0, comma));
      text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
      if (item.empty()) continue;
      const auto eq = item.find('=');
      if (eq == std::string_view::npos || trim(item.substr(0, eq)).empty())
        throw error("strategy option '" + std::string(item) + "' is not of the form key=value");
      o.set(std::string(trim(item.substr(0, eq))), std::string(trim(item.substr(eq + 1))));
    }
    return o;
  }

  strategy_options& set(std::string key, std::string value) {
    values[std::move(key)] = std::move(value);
    return *this;
  }
  [[nodiscard]] bool contains(std::string const& key) const { return values.contains(key); }

  [[nodiscard]] std::string get(std::string const& key, std::string fallback) const {
    if (auto const* v = lookup(key)) return *v;
    return fallback;
  }
  /// A non-negative integer of at least `min` (and at most `max`).
  [[nodiscard]] std::size_t get_size(std::string const& key, std::size_t fallback, std::size_t min = 0,
                                     std::size_t max = std::numeric_limits<std::size_t>::max()) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    std::size_t out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "a non-negative integer");
    if (out < min) throw malformed(key, *v, "an integer of at least " + std::to_string(min));
    if (out > max) throw malformed(key, *v, "an integer of at most " + std::to_string(max));
    return out;
  }
  /// An integer of at least `min` (and at most `max`).
  [[nodiscard]] std::int64_t get_int(std::string const& key, std::int64_t fallback,
                                     std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                                     std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    std::int64_t out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "an integer");
    if (out < min) throw malformed(key, *v, "an integer of at least " + std::to_string(min));
    if (out > max) throw malformed(key, *v, "an integer of at most " + std::to_string(max));
    return out;
  }
  /// A number (of at least `min`, where one is given).
  [[nodiscard]] double get_double(std::string const& key, double fallback,
                                  std::optional<double> min = std::nullopt) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    double out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "a number");
    if (min && !(out >= *min)) throw malformed(key, *v, "a number of at least " + number_text(*min));
    return out;
  }
  [[nodiscard]] bool get_bool(std::string const& key, bool fallback) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    if (*v == "1" || *v == "true" || *v == "yes" || *v == "on") return true;
    if (*v == "0" || *v == "false" || *v == "no" || *v == "off") return false;
    throw malformed(key, *v, "true or false");
  }

  /// Keys set but never read by a getter.
  [[nodiscard]] std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (auto const& [k, v] : values)
      if (!read_.contains(k)) out.push_back(k);
    return out;
  }

  std::map<std::string, std::string> values;

  /// A number as the shortest text that reads back as the same number ("0.1", "3", "1e-06").
  [[nodiscard]] static std::string number_text(double x) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
    return ec == std::errc{} ? std::string(buf, end) : std::to_string(x);
  }

 private:
  static std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }
  template <class N>
  static bool parse_number(std::string const& text, N& out) {
    auto const* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && p == end && !text.empty();
  }
  static error malformed(std::string const& key, std::string const& value, std::string const& what) {
    return error("strategy option '" + key + "' is '" + value + "', which is not " + what);
  }
  std::string const* lookup(std::string const& key) const {
    read_.insert(key);  // bookkeeping only; the settings themselves never change through a getter
    auto it = values.find(key);
    return it == values.end() ? nullptr : &it->second;
  }
  mutable std::set<std::string> read_;
};

}  // namespace kernelbrain
