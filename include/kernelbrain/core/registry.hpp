// Strategies by name: a registry of factories that build an any_policies composition for a problem,
// so the CLI and the ablation harness can run "sha" or "hyperband" without knowing their types.
// A strategy declares the options it takes once, in an option_table next to its options struct; the
// registry then reads them, refuses any other, and describes them (list-strategies, help).
//
// The pieces: strategy_options.hpp (the key=value settings), option_table.hpp (declared options);
// this header includes both.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include "kernelbrain/core/any_policy.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/option_table.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/strategy_options.hpp"

namespace kernelbrain {

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
