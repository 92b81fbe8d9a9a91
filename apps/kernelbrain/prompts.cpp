// kernelbrain prompts: write the shipped prompt templates to a folder, to edit and pass back with
// tune --prompt-templates DIR (or check a folder of edited ones).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <kernelbrain/generate/llm/prompt_builder.hpp>
#include <memory>
#include <string>
#include "commands.hpp"

namespace kernelbrain::cli {

subcommand register_prompts(CLI::App& app) {
  auto* cmd = app.add_subcommand("prompts", "write the shipped prompt templates to a folder (to edit), or check one");
  auto write = std::make_shared<std::string>();
  auto check = std::make_shared<std::string>();
  cmd->add_option("--write", *write, "write system.md, explore.md, mutate.md and repair.md to DIR")->type_name("DIR");
  cmd->add_option("--check", *check, "read the templates in DIR as tune --prompt-templates would")->type_name("DIR");
  return {cmd, [write, check] { return run_prompts(*write, *check); }};
}

int run_prompts(std::string const& write, std::string const& check) {
  if (write.empty() && check.empty()) throw usage_error("prompts: give --write DIR or --check DIR");
  if (!write.empty()) {
    llm::prompt_templates::write_defaults(write);
    fmt::print("wrote system.md, explore.md, mutate.md and repair.md to {}\nfields: {}\n", write,
               llm::prompt_templates::known_fields_text());
  }
  if (!check.empty()) {
    (void)llm::prompt_templates::from_directory(check);
    fmt::print("{}: the templates read cleanly\n", check);
  }
  std::fflush(stdout);
  return exit_ok;
}

}  // namespace kernelbrain::cli
