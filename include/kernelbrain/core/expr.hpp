// Integer expressions over named symbols: parameter constraints ("BLOCK*VEC <= 4096") and
// launch-plan sizes ("ceil_div(N, BLOCK)").
//
// The evaluator is total: plans and constraints are written by models and people and evaluated in
// the trusted search process, so every input either gives a value or throws kernelbrain::error.
// Arithmetic is checked 64-bit (an overflow is an error, never a wrapped value or a trap), nesting is
// bounded (no input can exhaust the stack) and so is the text's length.
#pragma once
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include "kernelbrain/core/error.hpp"

namespace kernelbrain {

/// Looks a symbol up; returns nullopt when it is unknown.
using symbol_lookup = std::function<std::optional<std::int64_t>(std::string_view)>;

/// The longest expression text evaluate_expression accepts, in bytes.
inline constexpr std::size_t max_expression_length = 4096;
/// The deepest nesting evaluate_expression accepts: parentheses, function-argument lists and unary
/// operators each open one level ("-(-x)" is 3 levels deep, "min(1, (2))" 2).
inline constexpr int max_expression_depth = 64;

/// Evaluates `text` with C-like precedence: || && == != < <= > >= + - * / % unary - !,
/// parentheses, and the functions min, max, ceil_div, pow2 (is a power of two).
///
/// Semantics: 64-bit signed integers. Comparisons and logical operators give 0 or 1; || and &&
/// evaluate both sides (no short circuit, so an error on either side is an error). / and % truncate
/// toward zero as in C (the remainder has the dividend's sign). ceil_div(a, b) is the exact ceiling
/// of the rational a / b for every sign of a and b (ceil_div(7, 2) = 4, ceil_div(-7, 2) = -3,
/// ceil_div(7, -2) = -3, ceil_div(-7, -2) = 4). pow2(a) is 1 when a > 0 is a power of two, else 0.
///
/// Throws kernelbrain::error, whose message quotes the expression (shortened when long) and gives a
/// column, on: a syntax error, an unknown symbol or function, a wrong number of arguments, a division
/// (/, %, ceil_div) by zero, any result outside the 64-bit range (literals included; this makes
/// INT64_MIN / -1 and INT64_MIN % -1 overflows), nesting deeper than max_expression_depth, or a text
/// longer than max_expression_length.
[[nodiscard]] std::int64_t evaluate_expression(std::string_view text, symbol_lookup const& lookup);

namespace detail {

/// `s` for a message: at most `limit` bytes, bytes outside printable ASCII written as \xNN, and
/// "... (N bytes)" when it was shortened.
[[nodiscard]] inline std::string printable_excerpt(std::string_view s, std::size_t limit = 96) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  const std::size_t n = s.size() < limit ? s.size() : limit;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

class expression_parser {
 public:
  expression_parser(std::string_view text, symbol_lookup const& lookup) : text_(text), lookup_(lookup) {}

  std::int64_t parse() {
    if (text_.size() > max_expression_length)
      fail_at(0, "longer than " + std::to_string(max_expression_length) + " bytes");
    const std::int64_t v = parse_or();
    skip();
    if (pos_ != text_.size()) fail("unexpected '" + printable_excerpt(text_.substr(pos_, 1)) + "'");
    return v;
  }

 private:
  using limits = std::numeric_limits<std::int64_t>;

  [[noreturn]] void fail_at(std::size_t at, std::string const& what) const {
    throw error("expression \"" + printable_excerpt(text_) + "\": " + what + " at column " + std::to_string(at + 1));
  }
  [[noreturn]] void fail(std::string const& what) const { fail_at(pos_, what); }
  /// "a op b", or "ceil_div(a, b)".
  static std::string shown(std::int64_t a, std::string_view op, std::int64_t b) {
    if (op == "ceil_div") return "ceil_div(" + std::to_string(a) + ", " + std::to_string(b) + ")";
    return std::to_string(a) + " " + std::string(op) + " " + std::to_string(b);
  }
  [[noreturn]] void overflow(std::size_t at, std::int64_t a, std::string_view op, std::int64_t b) const {
    fail_at(at, "overflow: " + shown(a, op, b) + " is outside the 64-bit range");
  }

  /// One nesting level for as long as it lives; the depth limit bounds the recursion.
  class level {
   public:
    level(expression_parser& p, std::size_t at) : p_(p) {
      if (++p_.depth_ > max_expression_depth)
        p_.fail_at(at, "nesting depth exceeds " + std::to_string(max_expression_depth) +
                           " (parentheses, function arguments and unary operators)");
    }
    ~level() { --p_.depth_; }
    level(level const&) = delete;
    level& operator=(level const&) = delete;

   private:
    expression_parser& p_;
  };

  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  /// Skips white space; true (and consumes it) when `op` comes next. `at` receives its position.
  bool eat(std::string_view op, std::size_t* at = nullptr) {
    skip();
    if (text_.substr(pos_, op.size()) == op) {
      if (at) *at = pos_;
      pos_ += op.size();
      return true;
    }
    return false;
  }

  std::int64_t add(std::size_t at, std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r)) overflow(at, a, "+", b);
    return r;
  }
  std::int64_t sub(std::size_t at, std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) overflow(at, a, "-", b);
    return r;
  }
  std::int64_t mul(std::size_t at, std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) overflow(at, a, "*", b);
    return r;
  }
  /// The checks every division shares: by zero, and the one quotient that does not fit.
  void check_division(std::size_t at, std::int64_t a, std::string_view op, std::int64_t b) const {
    if (b == 0) fail_at(at, "division by zero (" + shown(a, op, b) + ")");
    if (a == limits::min() && b == -1) overflow(at, a, op, b);
  }

  std::int64_t parse_or() {
    std::int64_t v = parse_and();
    while (eat("||")) {
      const auto r = parse_and();
      v = (v != 0 || r != 0) ? 1 : 0;
    }
    return v;
  }
  std::int64_t parse_and() {
    std::int64_t v = parse_cmp();
    while (eat("&&")) {
      const auto r = parse_cmp();
      v = (v != 0 && r != 0) ? 1 : 0;
    }
    return v;
  }
  std::int64_t parse_cmp() {
    std::int64_t v = parse_add();
    for (;;) {
      if (eat("=="))
        v = v == parse_add();
      else if (eat("!="))
        v = v != parse_add();
      else if (eat("<="))
        v = v <= parse_add();
      else if (eat(">="))
        v = v >= parse_add();
      else if (eat("<"))
        v = v < parse_add();
      else if (eat(">"))
        v = v > parse_add();
      else
        return v;
    }
  }
  std::int64_t parse_add() {
    std::int64_t v = parse_mul();
    for (std::size_t at = 0;;) {
      if (eat("+", &at))
        v = add(at, v, parse_mul());
      else if (eat("-", &at))
        v = sub(at, v, parse_mul());
      else
        return v;
    }
  }
  std::int64_t parse_mul() {
    std::int64_t v = parse_unary();
    for (std::size_t at = 0;;) {
      if (eat("*", &at)) {
        v = mul(at, v, parse_unary());
      } else if (eat("/", &at)) {
        const auto d = parse_unary();
        check_division(at, v, "/", d);
        v /= d;
      } else if (eat("%", &at)) {
        const auto d = parse_unary();
        check_division(at, v, "%", d);
        v %= d;
      } else {
        return v;
      }
    }
  }
  std::int64_t parse_unary() {
    std::size_t at = 0;
    if (eat("-", &at)) {
      const level nest(*this, at);
      const auto v = parse_unary();
      if (v == limits::min()) fail_at(at, "overflow: -(" + std::to_string(v) + ") is outside the 64-bit range");
      return -v;
    }
    if (eat("!", &at)) {
      const level nest(*this, at);
      return parse_unary() == 0 ? 1 : 0;
    }
    return parse_primary();
  }
  std::int64_t parse_primary() {
    std::size_t at = 0;
    if (eat("(", &at)) {
      const level nest(*this, at);
      const auto v = parse_or();
      if (!eat(")")) fail("missing ')'");
      return v;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const std::size_t start = pos_;
      std::int64_t v = 0;
      bool fits = true;
      for (; pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); ++pos_)
        fits = fits && !__builtin_mul_overflow(v, 10, &v) && !__builtin_add_overflow(v, text_[pos_] - '0', &v);
      if (!fits)
        fail_at(start, "overflow: the literal " + printable_excerpt(text_.substr(start, pos_ - start), 40) +
                           " is outside the 64-bit range");
      return v;
    }
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_)
      fail(pos_ < text_.size() ? "unexpected '" + printable_excerpt(text_.substr(pos_, 1)) + "'" : "unexpected end");
    const std::string_view name = text_.substr(start, pos_ - start);
    if (eat("(", &at)) return call(name, start, at);
    if (auto v = lookup_ ? lookup_(name) : std::nullopt) return *v;
    fail_at(start, "unknown symbol '" + printable_excerpt(name, 64) + "'");
  }
  std::int64_t call(std::string_view name, std::size_t name_at, std::size_t paren_at) {
    if (name != "min" && name != "max" && name != "ceil_div" && name != "pow2")
      fail_at(name_at, "unknown function '" + printable_excerpt(name, 64) + "' (known: min, max, ceil_div, pow2)");
    const level nest(*this, paren_at);
    const auto a = parse_or();
    std::optional<std::int64_t> b;
    if (eat(",")) b = parse_or();
    if (!eat(")")) fail("missing ')' after arguments of " + std::string(name));
    if (name == "pow2") {
      if (b) fail_at(name_at, "pow2 takes one argument");
      return a > 0 && (a & (a - 1)) == 0;
    }
    if (!b) fail_at(name_at, std::string(name) + " needs two arguments");
    if (name == "min") return a < *b ? a : *b;
    if (name == "max") return a > *b ? a : *b;
    // ceil_div: the exact ceiling of a / b. The truncated quotient rounds toward zero, so it is one
    // short exactly when there is a remainder and the true quotient is positive (the remainder has
    // the dividend's sign: both signs agree). |q| <= 2^62 when rounding up, so ++q cannot overflow.
    check_division(name_at, a, "ceil_div", *b);
    std::int64_t q = a / *b;
    const std::int64_t r = a % *b;
    if (r != 0 && ((r > 0) == (*b > 0))) ++q;
    return q;
  }

  std::string_view text_;
  symbol_lookup const& lookup_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace detail

inline std::int64_t evaluate_expression(std::string_view text, symbol_lookup const& lookup) {
  return detail::expression_parser(text, lookup).parse();
}

}  // namespace kernelbrain
