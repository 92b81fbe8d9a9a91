// kernelbrain check: what a problem author wants to know before any search. Loads the problem (the
// loader's errors name the JSON path), measures the reference on every shape against its roofline floor
// (a reference faster than its floor means the cost model or the machine figures are wrong), says what
// the gate checks and what each rung of the default ladder will time and why, and gates the seed and
// each catalogue template's expert default point, so that a template that does not compile or is wrong
// shows up here rather than as a search that finds nothing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <kernelbrain/core/evaluator.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include "commands.hpp"

namespace kernelbrain::cli {

namespace {

std::string shape_list(problem const& p, std::vector<std::size_t> const& shapes) {
  std::string out;
  for (auto i : shapes) out += (out.empty() ? "" : ", ") + p.shapes[i].name;
  return out;
}

std::string dims_text(shape const& s) {
  std::string out;
  for (auto const& [k, v] : s.dims) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

/// A verdict's detail on one line: compile logs run to many; the first two lines say what failed.
std::string first_lines(std::string const& text) {
  std::string out;
  int lines = 0;
  for (char ch : text) {
    if (ch == '\n') {
      if (++lines == 2) return out + " ...";
      out += " | ";
    } else {
      out += ch;
    }
  }
  return out;
}

std::string time_text(double seconds) {
  if (seconds <= 0) return "-";
  if (seconds < 1e-3) return fmt::format("{:.2f} us", seconds * 1e6);
  return fmt::format("{:.3f} ms", seconds * 1e3);
}

}  // namespace

subcommand register_check(CLI::App& app) {
  auto* cmd = app.add_subcommand("check",
                                 "check a problem before searching it: the reference on every shape against its "
                                 "roofline floor, the gate, the ladder, and the seed and catalogue defaults gated");
  auto o = std::make_shared<check_options>();
  cmd->add_option("problem", o->problem, "a problem directory or a built-in problem's name")->required();
  cmd->add_option("--backend", o->backend, "host or cuda (default: the problem's)")->type_name("NAME");
  cmd->add_flag("--no-catalogue", o->no_catalogue, "do not gate the catalogue templates' default points");
  cmd->footer(
      "Exit status: 0 nothing found, 3 a finding (a reference below its floor, a seed or template default\n"
      "rejected: each is printed with the reason), 2 a usage error (the problem does not load).");
  return {cmd, [o] { return run_check(*o); }};
}

int run_check(check_options const& o) {
  const auto dir = problem_directory(o.problem, o.backend);
  const auto prob = load_problem(dir);
  const std::string backend = problem_backend(prob, o.backend, "check");
  int findings = 0;
  auto finding = [&](std::string const& what) {
    ++findings;
    fmt::print("  FINDING: {}\n", what);
  };
  fmt::print("kernelbrain check {} (backend {}): {}\n", prob.name, backend, dir.string());
  fmt::print("  signature   {}\n  tolerance   rtol {} atol {} (|out - ref| <= atol + rtol * max|ref|)\n",
             prob.signature, prob.tol.rtol, prob.tol.atol);
  if (auto iso = backends().isolation(backend); !iso.empty()) fmt::print("  sandbox     {}\n", iso);
  if (prob.pytorch)
    fmt::print("  pytorch     {} (declared in {}; the CUDA search times it beside the reference)\n",
               prob.pytorch->expression, prob.pytorch->file);
  else
    fmt::print("  pytorch     not declared: speed-ups are over the reference only (docs/problem-format.md)\n");
  std::fflush(stdout);

  // The reference on every shape, against the floor.
  auto ev = make_backend_evaluator(prob, backend);
  const baseline base = ev->measure_baseline(prob);
  fmt::print("\n  {:<14} {:<24} {:<7} {:>6} {:>13} {:>13} {:>11}\n", "shape", "dims", "tier", "weight", "floor",
             "reference", "% of floor");
  for (std::size_t i = 0; i < prob.shapes.size(); ++i) {
    auto const& s = prob.shapes[i];
    const double floor = prob.machine.floor_seconds(s), ref = i < base.seconds.size() ? base.seconds[i] : 0;
    fmt::print("  {:<14} {:<24} {:<7} {:>6} {:>13} {:>13} {:>11}\n", s.name, dims_text(s), s.tier, s.weight,
               time_text(floor), time_text(ref),
               floor > 0 && ref > 0 ? fmt::format("{:.1f}%", 100 * floor / ref) : "-");
    if (floor > 0 && ref > 0 && ref < floor * 0.98)
      finding(
          fmt::format("the reference's median at '{}' is below the roofline floor: the problem's cost (bytes, "
                      "flops) or machine figures are wrong, or the reference skips work",
                      s.name));
  }
  if (prob.machine.bytes_per_second <= 0 && prob.machine.flops_per_second <= 0)
    fmt::print("  (no machine figures: no floors, so no %-of-floor and no impossible-time check)\n");

  // The gate and the ladder.
  const auto gate = policy_gate::for_problem(prob);
  fmt::print("\n  gate        static source policy, build, then {} trials on fresh inputs at: {}\n", gate.trials(),
             shape_list(prob, gate.shapes()));
  const bool adversarial =
      std::any_of(prob.inputs.begin(), prob.inputs.end(), [](tensor_spec const& t) { return !t.adversarial.empty(); });
  fmt::print(
      "              (the first shape and every 'odd' and 'wide' tier shape; inputs: {})\n",
      adversarial ? "random, then the problem's adversarial distributions at the smallest 'odd' shape" : "random");
  const auto ladder = multi_rung_ladder::standard(prob);
  for (auto const& r : ladder.rungs())
    fmt::print("  rung        {:<8} {} samples ({} warm-up){}{}: {}\n", r.name, r.samples, r.warmup,
               r.interleaved ? ", interleaved A/B with the incumbent" : "", r.profile ? ", profiled" : "",
               shape_list(prob, r.shapes));
  fmt::print(
      "              (smoke and screen leave out 'smoke'/'odd' tier shapes weighing under half the heaviest:\n"
      "               their timings are launch overhead; confirm times every shape but the 'wide' ones,\n"
      "               which are checked, never timed)\n");
  fmt::print("  float64     {}\n", backends().traits(backend).float64_note);
  std::fflush(stdout);

  // The seed and each template's expert default point, through the gate.
  auto gate_one = [&](candidate const& c, std::string const& what, std::string_view indent) {
    auto g = gate;
    verdict v = g.admit(c, *ev);
    // And the backend's memory-safety tools, which a search runs where a family first reaches the top rung.
    if (v.passed()) v = ev->assure(c, 1);
    fmt::print("  {:<40} {}{}\n", std::string(indent) + what, to_string(v.where),
               v.detail.empty() ? "" : ": " + first_lines(v.detail));
    if (!v.passed()) finding(what + " is rejected by the gate");
    std::fflush(stdout);
  };
  if (prob.seed_source || (!o.no_catalogue && !prob.catalogue.empty())) fmt::print("\n");
  if (prob.seed_source) gate_one(make_candidate("seed", {}, "seed", std::nullopt, *prob.seed_source), "seed", "");
  if (!o.no_catalogue)
    for (auto const& h : prob.catalogue) {
      if (!h.templ) {
        fmt::print("  {:<40} prose only (for a model)\n", h.name);
        continue;
      }
      auto const& space = h.templ->space;
      const auto n = space.cardinality();
      std::uint64_t admitted = 0;
      const std::uint64_t counted = std::min<std::uint64_t>(n, 200000);
      for (std::uint64_t i = 0; i < counted; ++i) admitted += space.admits(space.at(i)) ? 1 : 0;
      fmt::print("  {:<40} {} of {}{} points admitted by its constraints\n", h.name, admitted,
                 counted == n ? "" : "the first ", counted);
      if (admitted == 0) finding("template '" + h.name + "' admits no point");
      auto p = central_point(space);
      rng draw(1);
      if (!p) p = random_point(space, draw);
      if (!p) {
        finding("template '" + h.name + "': no admitted point found to gate");
        continue;
      }
      gate_one(instantiate(h, *p, "check"), "default point " + p->to_string() + " of '" + h.name + "'", "  ");
    }
  fmt::print("\n  {}\n", findings == 0 ? std::string("no findings")
                                       : fmt::format("{} finding{}", findings, findings == 1 ? "" : "s"));
  std::fflush(stdout);
  return findings == 0 ? exit_ok : exit_rejected;
}

}  // namespace kernelbrain::cli
