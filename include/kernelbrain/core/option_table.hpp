// The options a strategy takes, declared once next to its options struct (option_table): read from
// strategy_options into the struct, refused when unknown, and described (option_info) for
// list-strategies and help.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/strategy_options.hpp"

namespace kernelbrain {

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

}  // namespace kernelbrain
