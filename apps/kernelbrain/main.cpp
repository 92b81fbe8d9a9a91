// kernelbrain: the command-line tuner. Builds the CLI11 app from the subcommands of commands.hpp,
// runs the one the user chose, and maps what went wrong to an exit code (docs/cli.md):
//   0  done (also --help and --version)
//   1  internal error: a bug or the machine, not the command line
//   2  usage error: bad arguments, unknown strategy or backend, bad budget, journal mismatch
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <kernelbrain/version.hpp>
#include <string>
#include <vector>
#include "arguments.hpp"
#include "commands.hpp"

namespace {

using namespace kernelbrain::cli;

constexpr char const* app_footer =
    R"(Backends: cuda (NVRTC + the CUDA driver API, a worker process per GPU), host (C++ on this
CPU, in isolated worker processes), synthetic (a simulated cost landscape).
Budgets: 120s, 2m or 1h of (simulated) device time, or 500evals.

Exit codes: 0 done; 1 internal error; 2 usage error (bad arguments, unknown strategy, bad budget,
a journal that does not match the run).
Run 'kernelbrain <command> --help' for a command's options.)";

std::string command_names(CLI::App& app) {
  std::string names;
  for (auto const* sub : app.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

/// -h,--help, acted on as soon as it is read: it wins over everything else on the command line.
/// (CLI11's own help flag is looked at after the values are checked, so `kernelbrain tune x --budget 300
/// --help` would report the budget instead of printing tune's help.)
void add_help_flag(CLI::App& app) {
  app.set_help_flag();                                 // removes CLI11's
  auto print_help = [] { throw CLI::CallForHelp(); };  // CLI::App::exit prints the chosen subcommand's help
  app.add_flag_callback("-h,--help", print_help, "Print this help message and exit")->trigger_on_parse();
}

/// Reports a command line CLI11 refused (exit 2), or prints --help / --version (exit 0).
int report_parse_error(CLI::App& app, CLI::ParseError const& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
  std::string message = e.what();
  std::string help = "kernelbrain --help";
  const auto chosen = app.get_subcommands();
  if (!chosen.empty()) {
    help = "kernelbrain " + chosen.back()->get_name() + " --help";
  } else if (const auto rest = app.remaining(); !rest.empty()) {
    // CLI11 reports "A subcommand is required" before what it could not place: name that instead.
    message = rest.front().starts_with("-")
                  ? fmt::format("unknown option '{}'", rest.front())
                  : fmt::format("unknown command '{}': the commands are {}", rest.front(), command_names(app));
  } else {
    message = fmt::format("{}: the commands are {}", message, command_names(app));
  }
  std::fflush(stdout);
  fmt::print(stderr, "kernelbrain: error: {}\nRun '{}' for more information.\n", message, help);
  return exit_usage;
}

int run(int argc, char** argv) {
  add_builtin_problem_roots();
  CLI::App app{"kernelbrain: budget-aware search over GPU kernel implementations", "kernelbrain"};
  add_help_flag(app);
  app.set_version_flag("--version", "kernelbrain " + std::string(kernelbrain::library_version),
                       "Print the version and exit")
      ->trigger_on_parse();
  app.require_subcommand(1);
  const std::vector<subcommand> commands{
      register_tune(app),   register_list_strategies(app), register_prompts(app), register_eval(app),
      register_check(app),  register_record(app),          register_ablate(app),  register_fidelity(app),
      register_report(app), register_export(app),          register_adopt(app),   register_list_backends(app)};
  for (auto const& c : commands) add_help_flag(*c.app);
  app.footer(app_footer);  // after the subcommands: they would inherit it
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return report_parse_error(app, e);
  }
  for (auto const& c : commands)
    if (app.got_subcommand(c.app)) return c.run();
  return exit_internal;  // require_subcommand(1): unreachable
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (kernelbrain::error const& e) {
    std::fflush(stdout);
    fmt::print(stderr, "kernelbrain: error: {}\n", e.what());
    return exit_usage;
  } catch (std::exception const& e) {
    std::fflush(stdout);
    fmt::print(stderr, "kernelbrain: internal error: {}\n", e.what());
    return exit_internal;
  } catch (...) {
    fmt::print(stderr, "kernelbrain: internal error (unknown exception)\n");
    return exit_internal;
  }
}
