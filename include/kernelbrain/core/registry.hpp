// Strategies by name: a registry of factories that build an any_policies composition for a problem,
// so the CLI and the ablation harness can run "sha" or "hyperband" without knowing their types.
#pragma once
#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>
#include "kernelbrain/core/any_policy.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/problem.hpp"

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
  /// A non-negative integer of at least `min`.
  [[nodiscard]] std::size_t get_size(std::string const& key, std::size_t fallback, std::size_t min = 0) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    std::size_t out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "a non-negative integer");
    if (out < min) throw malformed(key, *v, "an integer of at least " + std::to_string(min));
    return out;
  }
  [[nodiscard]] std::int64_t get_int(std::string const& key, std::int64_t fallback) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    std::int64_t out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "an integer");
    return out;
  }
  [[nodiscard]] double get_double(std::string const& key, double fallback) const {
    auto const* v = lookup(key);
    if (!v) return fallback;
    double out = 0;
    if (!parse_number(*v, out)) throw malformed(key, *v, "a number");
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

/// Named strategies: each a description and a factory building the composition for a problem.
class strategy_registry {
 public:
  using factory = std::function<any_policies(problem const&, strategy_options const&)>;
  struct entry {
    std::string description;
    factory make;
  };

  /// Registers `name`; throws kernelbrain::error if it is empty, taken, or has no factory.
  strategy_registry& add(std::string name, std::string description, factory make) {
    if (name.empty()) throw error("strategy_registry: a strategy needs a non-empty name");
    if (!make) throw error("strategy_registry: strategy '" + name + "' has no factory");
    if (entries_.contains(name)) throw error("strategy_registry: strategy '" + name + "' is already registered");
    entries_.emplace(std::move(name), entry{std::move(description), std::move(make)});
    return *this;
  }

  [[nodiscard]] bool contains(std::string const& name) const { return entries_.contains(name); }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /// Every registered name, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (auto const& [n, e] : entries_) out.push_back(n);
    return out;
  }
  [[nodiscard]] std::string const& description(std::string const& name) const { return get(name).description; }

  /// Builds strategy `name` for `p`. Throws kernelbrain::error for an unknown name (listing the
  /// known ones), for a malformed option, and for an option the strategy does not use.
  [[nodiscard]] any_policies make(std::string const& name, problem const& p, strategy_options const& opts = {}) const {
    auto const& e = get(name);
    strategy_options seen;  // a fresh copy: the caller's options keep no trace, and no earlier reads count
    seen.values = opts.values;
    any_policies pol = e.make(p, seen);
    if (auto extra = seen.unused(); !extra.empty()) {
      std::string list;
      for (auto const& k : extra) list += (list.empty() ? "'" : ", '") + k + "'";
      throw error("strategy '" + name + "' does not use option " + list + " (check the spelling)");
    }
    return pol;
  }

 private:
  entry const& get(std::string const& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    std::string known;
    for (auto const& [n, e] : entries_) known += (known.empty() ? "" : ", ") + n;
    throw error("unknown strategy '" + name + "'; known strategies: " + (known.empty() ? "(none registered)" : known));
  }
  std::map<std::string, entry> entries_;  // a map: names() comes out sorted
};

}  // namespace kernelbrain
