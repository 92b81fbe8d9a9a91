// CLI11 checks shared by the subcommands' option parsers (arguments.cpp, ablate.cpp): every value is
// validated while CLI11 parses, so a bad one is reported as "--option: what is wrong".
#pragma once
#include <CLI/CLI.hpp>
#include <kernelbrain/core/error.hpp>
#include <string>
#include <utility>

namespace kernelbrain::cli {

/// A CLI11 check that runs one of the parse_* functions and reports its usage_error (or any other
/// kernelbrain::error, e.g. a malformed strategy option) as the option's validation error.
template <class Parse>
CLI::Validator checked_by(Parse parse) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& text) -> std::string {
        try {
          (void)parse(text);
          return {};
        } catch (error const& e) {
          return e.what();
        }
      },
      /*validator_desc=*/"");
}

/// A CLI11 check refusing an empty value: "give <what>".
inline CLI::Validator not_empty(std::string what) {
  return CLI::Validator(
      [what = std::move(what)](std::string& text) -> std::string { return text.empty() ? "give " + what : ""; }, "");
}

}  // namespace kernelbrain::cli
