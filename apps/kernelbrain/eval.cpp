// kernelbrain eval: one candidate through the whole gate and every shape of a problem, with its verdict
// and per-shape timings against the reference: the first thing anyone writing a problem, a red-team
// case or a kernel by hand wants. The candidate is a source file (with --plan for a CUDA launch plan) or
// a reply as a model would write it (.md: fenced source and launch plan, read by the reply parser, so an
// exchange answer file can be evaluated as it is).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <kernelbrain/core/evaluator.hpp>
#include <kernelbrain/generate/llm/reply_parser.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <memory>
#include <sstream>
#include <string>
#include "commands.hpp"
#include "progress.hpp"

namespace kernelbrain::cli {

namespace {

std::string read_file(std::string const& path, std::string const& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw usage_error(fmt::format("{} '{}' cannot be read", what, path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The candidate the file holds (a reply or bare source), with how it was read.
candidate read_candidate(eval_options const& o, std::string const& backend) {
  std::string text = read_file(o.candidate, "candidate");
  std::string source, plan;
  if (std::filesystem::path(o.candidate).extension() == ".md") {
    auto ex = llm::expectations_for(backends().traits(backend));
    ex.plan_required = ex.launch_plan && o.plan.empty();
    auto parsed = llm::parse_reply(text, ex);
    if (!parsed.ok())
      throw usage_error(fmt::format("candidate '{}': no usable kernel in the reply ({}: {})", o.candidate,
                                    llm::to_string(parsed.status), parsed.message));
    for (auto const& r : parsed.repairs) fmt::print("  reply repaired: {}\n", r);
    source = std::move(parsed.source);
    plan = std::move(parsed.plan);
  } else {
    source = std::move(text);
  }
  if (!o.plan.empty()) plan = read_file(o.plan, "launch plan");
  if (backends().traits(backend).launch_plan && plan.empty())
    throw usage_error(
        fmt::format("candidate '{}': a {} candidate needs a launch plan: give --plan FILE, or a reply "
                    "(.md) with a ```json launch plan",
                    o.candidate, backends().traits(backend).language));
  return make_candidate("eval", {}, "eval:" + std::filesystem::path(o.candidate).filename().string(), std::nullopt,
                        std::move(source), std::move(plan));
}

void print_verdict(char const* what, verdict const& v) {
  fmt::print("  {:<16} {}{}\n", what, to_string(v.where), v.detail.empty() ? std::string() : ": " + v.detail);
}

}  // namespace

subcommand register_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "eval", "one candidate through the gate and every shape: its verdict and timings against the reference");
  auto o = std::make_shared<eval_options>();
  cmd->add_option("problem", o->problem, "a problem directory or a built-in problem's name")->required();
  cmd->add_option("candidate", o->candidate,
                  "the candidate: a source file, or a reply as a model writes it (.md: fenced\n"
                  "source and, for CUDA, a ```json launch plan), e.g. an exchange answer file")
      ->required();
  cmd->add_option("--plan", o->plan, "CUDA: the launch plan (JSON) for a bare source file")->type_name("FILE");
  cmd->add_option("--backend", o->backend, "host or cuda (default: the problem's)")->type_name("NAME");
  cmd->add_option("--seed", o->seed, "seed of the fresh inputs (default 1)")->type_name("N");
  cmd->add_flag("--no-pytorch", o->no_pytorch,
                "do not time PyTorch eager and torch.compile beside the reference (by default the\n"
                "CUDA backend does, with $KERNELBRAIN_PYTHON or python3 when it has torch)");
  cmd->footer(
      "Exit status: 0 the candidate passed, 3 it was rejected (the verdict says at which stage and why),\n"
      "2 a usage error (a missing file, a reply without code, a problem for another backend).");
  return {cmd, [o] { return run_eval(*o); }};
}

int run_eval(eval_options const& o) {
  const auto prob = load_problem(problem_directory(o.problem, o.backend));
  const std::string backend = problem_backend(prob, o.backend, "eval");
  const auto cand = read_candidate(o, backend);
  auto ev = make_backend_evaluator(prob, backend, {}, {}, false, !o.no_pytorch);
  fmt::print("kernelbrain eval {} (backend {}): {}\n", prob.name, backend, o.candidate);
  if (auto iso = backends().isolation(backend); !iso.empty()) fmt::print("  sandbox          {}\n", iso);
  std::fflush(stdout);

  baseline base = ev->measure_baseline(prob);
  (void)ev->take_device_seconds();
  complete_baseline(base, prob);

  // The gate the search runs, the memory-safety tools (evaluator::assure, before the top rung), then the
  // ladder's top rung: every shape, the most samples.
  auto gate = policy_gate::for_problem(prob);
  verdict admitted = gate.admit(cand, *ev);
  if (admitted.passed()) admitted = ev->assure(cand, derive_seed(o.seed, "assure"));
  print_verdict("gate", admitted);
  if (!admitted.passed()) {
    print_verdict("verdict", admitted);
    std::fflush(stdout);
    return exit_rejected;
  }
  const auto ladder = multi_rung_ladder::standard(prob);
  auto const& top = ladder.rungs().back();
  measurement m = ev->measure(cand, top, measure_request{derive_seed(o.seed, "eval"), nullptr});
  if (m.result.passed()) reject_below_floor(m, prob, base);
  m.device_seconds += ev->take_device_seconds();
  print_verdict("verdict", m.result);
  fmt::print("  {:<16} {} ({} shapes, {} samples)\n", "rung", top.name, top.shapes.size(), top.samples);
  fmt::print("  {:<16} {:.3f}\n", "device seconds", m.device_seconds);
  auto const* torch = base.pytorch ? &*base.pytorch : nullptr;
  if (!m.timings.empty()) print_shape_table(prob, m.timings, base.seconds, "candidate", torch);
  if (m.result.passed()) {
    fmt::print("\n  {:<16} {:.3f}x over the reference\n", "speedup", speedup_scorer{}.score(m, base).speedup);
    print_pytorch_rows(torch, m.timings);
  } else if (torch && !torch->measured()) {
    print_pytorch_rows(torch, m.timings);
  }
  if (!m.diagnosis.empty()) fmt::print("\n  diagnosis\n    {}\n", m.diagnosis);
  std::fflush(stdout);
  return m.result.passed() ? exit_ok : exit_rejected;
}

}  // namespace kernelbrain::cli
