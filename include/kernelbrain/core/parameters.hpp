// Tuning parameters: a candidate's values, and the space a template draws them from.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/hash.hpp"

namespace kernelbrain {

/// A small sorted map from parameter name to integer value. Integer-only on purpose:
/// every tuning knob we know (tile sizes, vector widths, stages, enum choices) is an integer.
class parameters {
 public:
  using value_type = std::pair<std::string, std::int64_t>;
  parameters() = default;
  parameters(std::initializer_list<value_type> init) {
    for (auto const& [k, v] : init) set(k, v);
  }

  void set(std::string_view name, std::int64_t value) {
    auto it = lower(name);
    if (it != items_.end() && it->first == name)
      it->second = value;
    else
      items_.insert(it, value_type{std::string(name), value});
  }
  [[nodiscard]] std::optional<std::int64_t> find(std::string_view name) const noexcept {
    auto it = lower(name);
    if (it != items_.end() && it->first == name) return it->second;
    return std::nullopt;
  }
  [[nodiscard]] std::int64_t at(std::string_view name) const {
    if (auto v = find(name)) return *v;
    throw error("parameter '" + std::string(name) + "' is not set");
  }
  [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
  [[nodiscard]] auto end() const noexcept { return items_.end(); }
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  friend bool operator==(parameters const&, parameters const&) = default;

  /// "A=1,B=2": canonical, so equal parameters give equal text and equal hashes.
  [[nodiscard]] std::string to_string() const {
    std::string out;
    for (auto const& [k, v] : items_) {
      if (!out.empty()) out += ',';
      out += k;
      out += '=';
      out += std::to_string(v);
    }
    return out;
  }
  [[nodiscard]] symbol_lookup lookup() const {
    return [this](std::string_view n) { return find(n); };
  }

 private:
  [[nodiscard]] std::vector<value_type>::const_iterator lower(std::string_view name) const noexcept {
    return std::lower_bound(items_.begin(), items_.end(), name,
                            [](value_type const& a, std::string_view b) { return a.first < b; });
  }
  std::vector<value_type>::iterator lower(std::string_view name) noexcept {
    return std::lower_bound(items_.begin(), items_.end(), name,
                            [](value_type const& a, std::string_view b) { return a.first < b; });
  }
  std::vector<value_type> items_;
};

/// One tuning knob and the values it may take, in their natural order (neighbours are adjacent).
struct parameter_def {
  std::string name;
  std::vector<std::int64_t> values;
};

/// The Cartesian product of parameter_defs, filtered by constraint expressions.
struct parameter_space {
  std::vector<parameter_def> params;
  std::vector<std::string> constraints;  ///< each must evaluate non-zero, e.g. "BLOCK*VEC <= 4096"
  /// When not empty, the only points admitted (those of them the values and constraints also admit):
  /// a recorded sample of the space, as the replay backend searches it (backends/replay/evaluator.hpp).
  std::vector<parameters> points;

  /// A space without parameters has one point (a fixed template), not zero.
  [[nodiscard]] std::uint64_t cardinality() const noexcept {
    std::uint64_t n = 1;
    for (auto const& p : params) {
      const std::uint64_t k = p.values.size();
      if (k != 0 && n > UINT64_MAX / k) return UINT64_MAX;  // saturate: validate() rejects such spaces
      n *= k;
    }
    return n;
  }
  [[nodiscard]] bool admits(parameters const& p) const {
    if (p.size() != params.size()) return false;
    for (auto const& d : params) {
      auto v = p.find(d.name);
      if (!v || std::find(d.values.begin(), d.values.end(), *v) == d.values.end()) return false;
    }
    if (!points.empty() && std::find(points.begin(), points.end(), p) == points.end()) return false;
    auto look = p.lookup();
    // A constraint that cannot be evaluated here (an overflow at extreme values) admits nothing.
    for (auto const& c : constraints) {
      try {
        if (evaluate_expression(c, look) == 0) return false;
      } catch (error const&) {
        return false;
      }
    }
    return true;
  }
  /// The point with mixed-radix index `i` (0 <= i < cardinality()), constraints not applied.
  [[nodiscard]] parameters at(std::uint64_t i) const {
    parameters p;
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
      const auto n = it->values.size();
      p.set(it->name, it->values[i % n]);
      i /= n;
    }
    return p;
  }
  /// Every admitted point, in index order (in the order of `points` when that is not empty).
  [[nodiscard]] std::vector<parameters> enumerate() const {
    std::vector<parameters> out;
    if (!points.empty()) {
      for (auto const& p : points)
        if (admits(p)) out.push_back(p);
      return out;
    }
    for (std::uint64_t i = 0, n = cardinality(); i < n; ++i)
      if (auto p = at(i); admits(p)) out.push_back(std::move(p));
    return out;
  }
  /// Throws kernelbrain::error if a constraint does not parse or names an unknown symbol.
  void validate(std::string_view owner) const {
    if (params.empty()) return;
    for (auto const& d : params)
      if (d.values.empty()) throw error(std::string(owner) + ": parameter '" + d.name + "' has no values");
    if (cardinality() == UINT64_MAX)
      throw error(std::string(owner) + ": the parameter space has more than 2^64 points; split the template");
    parameters probe = at(0);
    for (auto const& c : constraints) {
      try {
        (void)evaluate_expression(c, probe.lookup());
      } catch (error const& e) {
        throw error(std::string(owner) + ": " + e.what());
      }
    }
  }
};

}  // namespace kernelbrain
