// Strategies by name: a registry of factories that build an any_policies composition for a problem,
// so the CLI and the ablation harness can run "sha" or "hyperband" without knowing their types.
// A strategy declares the options it takes once, in an option_table next to its options struct; the
// registry then reads them, refuses any other, and describes them (list-strategies, help).
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
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

/// One option a strategy takes, as the registry reports it (list-strategies, help, error messages).
struct option_info {
  std::string name;      ///< as written after the strategy's name: "eta" in "sha:eta=4"
  std::string help;      ///< one line for people
  std::string accepts;   ///< "an integer of at least 2", "a non-negative integer", "a number", "true or false", "text"
  std::string minimum;   ///< the least value accepted, as text; empty where none was declared
  std::string fallback;  ///< the value when the option is not given, as text

  /// "eta: keep the top 1/eta of each rung [an integer of at least 2, default 3]".
  [[nodiscard]] std::string line() const { return name + ": " + help + " [" + accepts + ", default " + fallback + "]"; }
};

namespace detail {
/// One declared option of an option_table: what it is, and how it reads into a struct O.
template <class O>
struct option_item {
  option_info info;
  std::function<void(strategy_options const&, O&)> read;
};
}  // namespace detail

/// The options a strategy reads into its options structs, declared once: each option's name, the
/// member it sets, the least value it accepts where there is one, and a line of help. The struct's
/// own member initialisers are the defaults.
///
///     struct greedy_options {
///       std::size_t batch = 8;
///       double bias = 0.5;
///       static kernelbrain::option_table<greedy_options> describe() {
///         return kernelbrain::option_table<greedy_options>{}
///             .add("batch", &greedy_options::batch, 1, "candidates per request")
///             .add("bias", &greedy_options::bias, "chance of mutating rather than exploring");
///       }
///     };
///
/// Members may be bool, integers (read with their type's range), floating-point numbers or
/// std::string; a minimum applies to numbers. Tables of different structs combine into one,
/// `option_table(a_options::describe(), b_options::describe())`, whose read() gives a tuple.
/// strategy_registry::add takes a table and a factory taking the structs it reads.
template <class... Options>
class option_table {
  static_assert((std::is_class_v<Options> && ...), "option_table: each Options is a struct of settings");
  static_assert((std::is_default_constructible_v<Options> && ...),
                "option_table: an options struct needs a default constructor (its initialisers are the defaults)");

  template <class O>
  static constexpr std::size_t count = (std::size_t{std::is_same_v<O, Options>} + ... + 0);
  static_assert(((count<Options> == 1) && ...), "option_table: each options struct may appear once");
  template <class O>
  static constexpr bool listed = count<O> == 1;

 public:
  using values_type = std::tuple<Options...>;

  option_table() = default;

  /// The options of several structs, each table's in its order (an option name may appear once).
  template <class... Parts>
  requires(sizeof...(Parts) >= 2 && std::is_same_v<std::tuple<Parts...>, std::tuple<Options...>>) explicit option_table(
      option_table<Parts> const&... parts) {
    (take(parts), ...);
  }

  /// Declares option `name`, which sets `member`; any value of the member's type is accepted.
  template <class T, class O>
  option_table& add(std::string name, T O::*member, std::string help) {
    return declare(std::move(name), member, std::optional<T>{}, std::move(help));
  }
  /// Declares option `name`, which sets `member` to a number of at least `min`.
  template <class T, class O>
  option_table& add(std::string name, T O::*member, std::type_identity_t<T> min, std::string help) {
    static_assert(!std::is_same_v<T, bool> && (std::is_integral_v<T> || std::is_floating_point_v<T>),
                  "option_table::add: a minimum applies to a numeric member only");
    return declare(std::move(name), member, std::optional<T>{min}, std::move(help));
  }

  /// Reads `o` into default-constructed structs, option by option in declaration order: the struct
  /// itself for a table of one struct, a std::tuple of them otherwise. Throws kernelbrain::error for
  /// a malformed value or one below its minimum. Options the table does not declare are left alone
  /// (strategy_registry refuses them).
  [[nodiscard]] auto read(strategy_options const& o) const {
    values_type out{};
    read_each(o, out, std::index_sequence_for<Options...>{});
    if constexpr (sizeof...(Options) == 1)
      return std::get<0>(std::move(out));
    else
      return out;
  }

  /// Every declared option, in declaration order.
  [[nodiscard]] std::vector<option_info> info() const {
    std::vector<option_info> out;
    std::apply([&](auto const&... lists) { (append_info(lists, out), ...); }, items_);
    return out;
  }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (auto& i : info()) out.push_back(std::move(i.name));
    return out;
  }

 private:
  template <class...>
  friend class option_table;

  template <class O>
  using item = detail::option_item<O>;

  template <class T>
  static std::string text(T const& v) {
    if constexpr (std::is_same_v<T, bool>)
      return v ? "true" : "false";
    else if constexpr (std::is_integral_v<T>)
      return std::to_string(v);
    else if constexpr (std::is_floating_point_v<T>)
      return strategy_options::number_text(static_cast<double>(v));
    else
      return std::string(v);
  }

  template <class T, class O>
  option_table& declare(std::string const& name, T O::*member, std::optional<T> min, std::string help) {
    static_assert(listed<O>, "option_table::add: the member belongs to a struct this table does not read");
    static_assert(std::is_same_v<T, bool> || std::is_integral_v<T> || std::is_floating_point_v<T> ||
                      std::is_same_v<T, std::string>,
                  "option_table::add: a member must be bool, an integer, a floating-point number or std::string");
    if (!member) throw error("option_table: option '" + name + "' sets no member");
    if (name.empty() || name.find_first_of("=, \t") != std::string::npos)
      throw error("option_table: '" + name + "' is not an option name (non-empty, without '=', ',' or spaces)");
    for (auto const& n : names())
      if (n == name) throw error("option_table: option '" + name + "' is declared twice");

    option_info i;
    i.name = name;
    i.help = std::move(help);
    i.fallback = text(O{}.*member);
    if (min) i.minimum = text(*min);
    if constexpr (std::is_same_v<T, bool>)
      i.accepts = "true or false";
    else if constexpr (std::is_same_v<T, std::string>)
      i.accepts = "text";
    else if constexpr (std::is_floating_point_v<T>)
      i.accepts = min ? "a number of at least " + i.minimum : "a number";
    else if constexpr (std::is_unsigned_v<T>)
      i.accepts = min && *min > 0 ? "an integer of at least " + i.minimum : "a non-negative integer";
    else
      i.accepts = min ? "an integer of at least " + i.minimum : "an integer";

    std::function<void(strategy_options const&, O&)> read = [name, member, min](strategy_options const& o, O& s) {
      (void)min;  // bool and string options have no minimum
      T& field = s.*member;
      if constexpr (std::is_same_v<T, bool>) {
        field = o.get_bool(name, field);
      } else if constexpr (std::is_same_v<T, std::string>) {
        field = o.get(name, field);
      } else if constexpr (std::is_floating_point_v<T>) {
        field = static_cast<T>(o.get_double(name, static_cast<double>(field),
                                            min ? std::optional<double>(static_cast<double>(*min)) : std::nullopt));
      } else if constexpr (std::is_unsigned_v<T>) {
        field = static_cast<T>(o.get_size(name, static_cast<std::size_t>(field),
                                          static_cast<std::size_t>(min ? *min : T{0}),
                                          static_cast<std::size_t>(std::numeric_limits<T>::max())));
      } else {
        field = static_cast<T>(o.get_int(name, static_cast<std::int64_t>(field),
                                         static_cast<std::int64_t>(min ? *min : std::numeric_limits<T>::min()),
                                         static_cast<std::int64_t>(std::numeric_limits<T>::max())));
      }
    };
    std::get<std::vector<item<O>>>(items_).push_back(item<O>{std::move(i), std::move(read)});
    return *this;
  }

  template <class O>
  void take(option_table<O> const& part) {
    for (auto const& n : part.names())
      for (auto const& mine : names())
        if (n == mine) throw error("option_table: option '" + n + "' is declared by two of the combined tables");
    std::get<std::vector<item<O>>>(items_) = std::get<0>(part.items_);
  }

  template <std::size_t... I>
  void read_each(strategy_options const& o, values_type& out, std::index_sequence<I...>) const {
    (read_list(o, std::get<I>(items_), std::get<I>(out)), ...);
  }
  template <class O>
  static void read_list(strategy_options const& o, std::vector<item<O>> const& list, O& s) {
    for (auto const& i : list) i.read(o, s);
  }
  template <class O>
  static void append_info(std::vector<item<O>> const& list, std::vector<option_info>& out) {
    for (auto const& i : list) out.push_back(i.info);
  }

  std::tuple<std::vector<item<Options>>...> items_;
};

template <class... Parts>
option_table(option_table<Parts> const&...) -> option_table<Parts...>;

/// Named strategies: each a description, the options it takes and a factory building the composition.
class strategy_registry {
 public:
  using factory = std::function<any_policies(problem const&, strategy_options const&)>;
  struct entry {
    std::string description;  ///< as registered, plus " (options: ...)" where the options are declared
    factory make;
    /// The options the strategy takes, where declared with an option_table; nullopt for a factory
    /// that reads strategy_options itself (then an option it never reads is refused after building).
    std::optional<std::vector<option_info>> options;
  };

  /// Registers `name` with a factory that reads `strategy_options` itself. Throws kernelbrain::error
  /// if the name is empty or taken, or there is no factory.
  strategy_registry& add(std::string name, std::string description, factory make) {
    if (!make) throw error("strategy_registry: strategy '" + name + "' has no factory");
    return insert(std::move(name), entry{std::move(description), std::move(make), std::nullopt});
  }

  /// Registers `name` with the options `table` declares: make(problem, structs...) receives the
  /// structs the table reads (defaults where an option is not given); an option the table does not
  /// declare is refused, naming those it does. The description gets " (options: a, b, ...)" appended.
  /// make may return any_policies or a concrete policies<...> (erased here).
  template <class... Options, class F>
  strategy_registry& add(std::string name, std::string description, option_table<Options...> table, F make) {
    static_assert(std::is_invocable_v<F const&, problem const&, Options const&...>,
                  "strategy_registry::add: the factory must be callable as make(problem const&, Options const&...), "
                  "one argument per options struct of the table, in the table's order");
    auto info = table.info();
    if (!info.empty()) {
      std::string list;
      for (auto const& i : info) list += (list.empty() ? "" : ", ") + i.name;
      description += (description.empty() ? "(options: " : " (options: ") + list + ")";
    }
    factory f = [table = std::move(table), make = std::move(make)](problem const& p, strategy_options const& o) {
      auto values = table.read(o);
      auto build = [&](Options const&... structs) -> any_policies {
        using result = std::invoke_result_t<F const&, problem const&, Options const&...>;
        if constexpr (std::is_convertible_v<result, any_policies>)
          return make(p, structs...);
        else
          return erase(make(p, structs...));
      };
      if constexpr (sizeof...(Options) == 1)
        return build(values);
      else
        return std::apply(build, values);
    };
    return insert(std::move(name), entry{std::move(description), std::move(f), std::move(info)});
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

  /// The options strategy `name` declares, in declaration order (empty for one registered without a table).
  [[nodiscard]] std::vector<option_info> options(std::string const& name) const {
    auto const& e = get(name);
    return e.options ? *e.options : std::vector<option_info>{};
  }
  /// Whether strategy `name` declares its options (registered with an option_table).
  [[nodiscard]] bool declares_options(std::string const& name) const { return get(name).options.has_value(); }

  /// One line per option of strategy `name`, "  eta: keep the top 1/eta of each rung [an integer of at
  /// least 2, default 3]"; a line saying so where it takes none or does not declare them.
  [[nodiscard]] std::string help(std::string const& name) const {
    auto const& e = get(name);
    if (!e.options) return "  (options not declared)\n";
    if (e.options->empty()) return "  (no options)\n";
    std::string out;
    for (auto const& i : *e.options) out += "  " + i.line() + "\n";
    return out;
  }

  /// Builds strategy `name` for `p`. Throws kernelbrain::error for an unknown name (listing the
  /// known ones), for an option the strategy does not take (listing those it takes), and for a
  /// malformed option.
  [[nodiscard]] any_policies make(std::string const& name, problem const& p, strategy_options const& opts = {}) const {
    auto const& e = get(name);
    if (e.options) {  // declared: refuse an unknown option before building anything
      std::vector<std::string> unknown;
      for (auto const& [k, v] : opts.values)
        if (!declares(*e.options, k)) unknown.push_back(k);
      if (!unknown.empty()) throw unused_options(name, e, unknown);
    }
    strategy_options seen;  // a fresh copy: the caller's options keep no trace, and no earlier reads count
    seen.values = opts.values;
    any_policies pol = e.make(p, seen);
    if (auto extra = seen.unused(); !extra.empty()) throw unused_options(name, e, extra);
    return pol;
  }

 private:
  strategy_registry& insert(std::string name, entry e) {
    if (name.empty()) throw error("strategy_registry: a strategy needs a non-empty name");
    if (entries_.contains(name)) throw error("strategy_registry: strategy '" + name + "' is already registered");
    entries_.emplace(std::move(name), std::move(e));
    return *this;
  }
  static bool declares(std::vector<option_info> const& list, std::string const& key) {
    for (auto const& i : list)
      if (i.name == key) return true;
    return false;
  }
  static error unused_options(std::string const& name, entry const& e, std::vector<std::string> const& keys) {
    std::string list;
    for (auto const& k : keys) list += (list.empty() ? "'" : ", '") + k + "'";
    std::string msg = "strategy '" + name + "' does not use option " + list + " (check the spelling)";
    if (e.options) {
      std::string takes;
      for (auto const& i : *e.options) takes += (takes.empty() ? "" : ", ") + i.name;
      msg += takes.empty() ? "; it takes no options" : "; its options are " + takes;
    }
    return error(msg);
  }
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
