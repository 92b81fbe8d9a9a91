// kernelbrain list-strategies: every strategy --strategy accepts, with the options each one reads; and
// kernelbrain list-backends: every backend --backend accepts (the backend registry).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <kernelbrain/backends/builtin.hpp>
#include "commands.hpp"

namespace kernelbrain::cli {

subcommand register_list_strategies(CLI::App& app) {
  auto* cmd = app.add_subcommand("list-strategies", "list the strategies --strategy accepts, with their options");
  return {cmd, [] { return run_list_strategies(); }};
}

int run_list_strategies() {
  for (auto const& n : registry().names()) fmt::print("{:<18} {}\n", n, registry().description(n));
  std::fflush(stdout);
  return exit_ok;
}

subcommand register_list_backends(CLI::App& app) {
  auto* cmd = app.add_subcommand("list-backends", "list the backends --backend accepts");
  return {cmd, [] {
            fmt::print("{}", backends().listing());
            std::fflush(stdout);
            return exit_ok;
          }};
}

}  // namespace kernelbrain::cli
