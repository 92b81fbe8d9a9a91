// Integer expressions over named symbols: parameter constraints ("BLOCK*VEC <= 4096") and,
// later, launch-plan sizes ("ceil_div(N, BLOCK)").
#pragma once
#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include "kernelbrain/core/error.hpp"

namespace kernelbrain {

/// Looks a symbol up; returns nullopt when it is unknown.
using symbol_lookup = std::function<std::optional<std::int64_t>(std::string_view)>;

/// Evaluates `text` with C-like precedence: || && == != < <= > >= + - * / % unary - !,
/// parentheses, and the functions min, max, ceil_div, pow2 (is a power of two).
/// Throws kernelbrain::error naming the expression on a syntax error, an unknown symbol
/// or a division by zero.
[[nodiscard]] std::int64_t evaluate_expression(std::string_view text, symbol_lookup const& lookup);

namespace detail {

class expression_parser {
 public:
  expression_parser(std::string_view text, symbol_lookup const& lookup) : text_(text), lookup_(lookup) {}

  std::int64_t parse() {
    const std::int64_t v = parse_or();
    skip();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(text_.substr(pos_, 1)) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string const& what) const {
    throw error("expression \"" + std::string(text_) + "\": " + what + " at column " + std::to_string(pos_ + 1));
  }
  void skip() { while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_; }
  bool eat(std::string_view op) {
    skip();
    if (text_.substr(pos_, op.size()) == op) { pos_ += op.size(); return true; }
    return false;
  }
  std::int64_t parse_or() {
    std::int64_t v = parse_and();
    while (eat("||")) { const auto r = parse_and(); v = (v != 0 || r != 0) ? 1 : 0; }
    return v;
  }
  std::int64_t parse_and() {
    std::int64_t v = parse_cmp();
    while (eat("&&")) { const auto r = parse_cmp(); v = (v != 0 && r != 0) ? 1 : 0; }
    return v;
  }
  std::int64_t parse_cmp() {
    std::int64_t v = parse_add();
    for (;;) {
      if (eat("==")) v = v == parse_add();
      else if (eat("!=")) v = v != parse_add();
      else if (eat("<=")) v = v <= parse_add();
      else if (eat(">=")) v = v >= parse_add();
      else if (eat("<")) v = v < parse_add();
      else if (eat(">")) v = v > parse_add();
      else return v;
    }
  }
  std::int64_t parse_add() {
    std::int64_t v = parse_mul();
    for (;;) {
      if (eat("+")) v += parse_mul();
      else if (eat("-")) v -= parse_mul();
      else return v;
    }
  }
  std::int64_t parse_mul() {
    std::int64_t v = parse_unary();
    for (;;) {
      if (eat("*")) v *= parse_unary();
      else if (eat("/")) { const auto d = parse_unary(); if (d == 0) fail("division by zero"); v /= d; }
      else if (eat("%")) { const auto d = parse_unary(); if (d == 0) fail("division by zero"); v %= d; }
      else return v;
    }
  }
  std::int64_t parse_unary() {
    if (eat("-")) return -parse_unary();
    if (eat("!")) return parse_unary() == 0 ? 1 : 0;
    return parse_primary();
  }
  std::int64_t parse_primary() {
    skip();
    if (eat("(")) {
      const auto v = parse_or();
      if (!eat(")")) fail("missing ')'");
      return v;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      std::int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        v = v * 10 + (text_[pos_++] - '0');
      return v;
    }
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) fail(pos_ < text_.size() ? "unexpected '" + std::string(1, text_[pos_]) + "'" : "unexpected end");
    const std::string_view name = text_.substr(start, pos_ - start);
    if (eat("(")) return call(name);
    if (auto v = lookup_ ? lookup_(name) : std::nullopt) return *v;
    pos_ = start;
    fail("unknown symbol '" + std::string(name) + "'");
  }
  std::int64_t call(std::string_view name) {
    const auto a = parse_or();
    std::optional<std::int64_t> b;
    if (eat(",")) b = parse_or();
    if (!eat(")")) fail("missing ')' after arguments of " + std::string(name));
    if (name == "pow2" && !b) return a > 0 && (a & (a - 1)) == 0;
    if (!b) fail(std::string(name) + " needs two arguments");
    if (name == "min") return a < *b ? a : *b;
    if (name == "max") return a > *b ? a : *b;
    if (name == "ceil_div") { if (*b == 0) fail("division by zero"); return (a + *b - 1) / *b; }
    fail("unknown function '" + std::string(name) + "'");
  }

  std::string_view text_;
  symbol_lookup const& lookup_;
  std::size_t pos_ = 0;
};

}  // namespace detail

inline std::int64_t evaluate_expression(std::string_view text, symbol_lookup const& lookup) {
  return detail::expression_parser(text, lookup).parse();
}

}  // namespace kernelbrain
