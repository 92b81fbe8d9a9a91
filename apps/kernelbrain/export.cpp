// kernelbrain export: the best kernel of each tuned shape (from a journal or a best.json) as a standalone
// CUDA source with a C++ header, and as a PyTorch package (docs/export.md). The library makes and writes
// the files (kernelbrain/export/export.hpp); this file parses the command line and prints what was written.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <kernelbrain/export/export.hpp>
#include <memory>
#include <string>
#include <vector>
#include "commands.hpp"
#include "validators.hpp"

namespace kernelbrain::cli {

namespace {

namespace fs = std::filesystem;

constexpr char const* export_footer =
    R"(INPUT is a journal (kernelbrain tune --journal) or a best.json (kernelbrain tune --best-out). For each
benchmark shape (not the smoke/odd/wide correctness shapes) the exported kernel is the one with the lowest
median time among the candidates that passed the top rung there. The problem comes from --problem, else
best.json's problem_dir or problem name, else the journal's problem name; only CUDA problems that
declare their PyTorch computation (problem.json's "pytorch", docs/problem-format.md) can be exported.

Writes DIR/cuda/<problem>.cu and .h (standalone CUDA + C++ API), DIR/cuda/example.cpp and Makefile,
DIR/torch/kb_<problem>/ (a PyTorch package, forward only, falling back to PyTorch for untuned calls),
DIR/README.md and DIR/manifest.json. See docs/export.md.

Examples:
  kernelbrain export state/softmax/journal.jsonl --to exported/softmax
  kernelbrain export best.json --to exported/sdpa_fp16 --problem sdpa_fp16 --force)";

struct export_options {
  std::string input;
  std::string to;
  std::string problem;
  bool force = false;
};

int run_export(export_options const& o) {
  auto model = exporting::load_model({o.input, o.problem});
  const std::string api = exporting::api_name(model);
  const auto files = exporting::package_files(model);
  const fs::path to(o.to);
  exporting::write_package(to, files, api, o.force);

  fmt::print("exported {} ({}): {} tuned shape{}, {} kernel source{}, for {}\n", model.prob.name, model.source,
             model.shapes.size(), model.shapes.size() == 1 ? "" : "s", model.blocks.size(),
             model.blocks.size() == 1 ? "" : "s", model.arch);
  for (auto const& t : model.shapes)
    fmt::print("  {:<24} {:>9}  {} {}\n", t.name, exporting::speedup_text(t.speedup), t.family, t.candidate);
  for (auto const& f : files) fmt::print("  {}\n", (to / f.path).string());
  return exit_ok;
}

}  // namespace

subcommand register_export(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "export", "write the best kernel of each tuned shape as standalone CUDA + a C++ header and a PyTorch module");
  cmd->footer(export_footer);
  auto o = std::make_shared<export_options>();
  cmd->add_option("input", o->input, "a journal (tune --journal) or a best.json (tune --best-out)")
      ->required()
      ->check(CLI::ExistingFile)
      ->type_name("INPUT");
  cmd->add_option("--to", o->to, "the directory to write (created; an existing one must be empty, or --force)")
      ->required()
      ->check(not_empty("a directory"))
      ->type_name("DIR");
  cmd->add_option("--problem", o->problem, "the problem: a directory or a CUDA problem's name (default: the input's)")
      ->check(not_empty("a problem directory or name"))
      ->type_name("DIR_OR_NAME");
  cmd->add_flag("--force", o->force, "write into an existing non-empty directory, replacing what export writes");
  return {cmd, [o] { return run_export(*o); }};
}

}  // namespace kernelbrain::cli
