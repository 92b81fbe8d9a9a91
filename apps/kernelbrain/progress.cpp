// kernelbrain CLI: the progress line and the end-of-run tables.
#include "progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string_view>

namespace kernelbrain::cli {

void progress_line::on_event(event const& e, search_view const& v) {
  if (e.kind == event_kind::rejected) ++rejected_by_stage_[std::string(to_string(e.result.where))];
  if (e.kind == event_kind::model_reply) {
    ++model_.replies;
    model_.estimated = model_.estimated || e.note.find("(tokens estimated)") != std::string::npos;
    // "purpose: status/parse_status[ (tokens estimated)][ - error]"; a purpose holds no ": ".
    const auto colon = e.note.find(": ");
    auto outcome = colon == std::string::npos ? e.note : e.note.substr(colon + 2);
    outcome = outcome.substr(0, outcome.find(' '));
    if (outcome == "ok/ok" || outcome == "cut/ok")
      ++model_.usable;
    else
      ++model_.unusable[outcome];
    if (outcome == "failed" || outcome == "cancelled") report_failure(e.note);
  }
  if (!draw_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && e.kind != event_kind::stopped) return;
  last_ = now;
  redraw(v);
}

void progress_line::report_failure(std::string const& note) {
  const auto dash = note.find(" - ");
  const std::string why = dash == std::string::npos ? note : note.substr(dash + 3);
  // One line per kind of failure as it happens: the first, and again at 2, 4, 8... of that kind.
  std::string kind;
  for (char c : why) kind += (c >= '0' && c <= '9') ? '#' : c;
  const std::size_t n = ++failures_[kind];
  if ((n & (n - 1)) != 0) return;
  if (drawn_) fmt::print(stderr, "\r{:{}}\r", "", last_width_);
  fmt::print(stderr, "model request {}: {}{}\n", note.find(": cancelled") != std::string::npos ? "cancelled" : "failed",
             why, n > 1 ? fmt::format(" ({} times so far)", n) : std::string());
  drawn_ = false;
}

void progress_line::finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
}

void progress_line::redraw(search_view const& v) {
  auto const& c = v.counters();
  const auto best = v.best_score();
  const std::string line = fmt::format("\r[{:5.1f}%] evaluated {}  rejected {}  promoted {}  best {}",
                                       100.0 * std::min(1.0, v.meter().fraction_used()), c.evaluations, c.rejected,
                                       c.promotions, best ? fmt::format("{:.3f}x", best->speedup) : std::string("-"));
  // Pad over what a longer previous line left behind.
  fmt::print(stderr, "{}{:{}}", line, "", last_width_ > line.size() ? last_width_ - line.size() : 0);
  std::fflush(stderr);
  last_width_ = line.size();
  drawn_ = true;
}

namespace {

void row(std::string_view name, std::string_view value) { fmt::print("  {:<16} {}\n", name, value); }

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

/// "1.31x (0.92x-1.84x over 4 shapes; slower at 1)" for one side of a comparison with PyTorch.
std::string ratio_text(pytorch_comparison::side const& s) {
  if (s.shapes == 0) return "not measured";
  std::string out = fmt::format("{:.2f}x", s.geomean);
  if (s.shapes > 1) out += fmt::format(" (geometric mean of {} shapes, {:.2f}x to {:.2f}x)", s.shapes, s.min, s.max);
  if (s.slower > 0)
    out += s.slower == s.shapes ? std::string(": slower than PyTorch")
                                : fmt::format(": slower at {} of {} shapes", s.slower, s.shapes);
  if (s.out_of_tolerance) out += " (PyTorch failed the problem's tolerance)";
  return out;
}

}  // namespace

void print_pytorch_rows(pytorch_timing const* pt, std::span<shape_timing const> timings) {
  if (!pt) return;
  if (!pt->measured()) {
    row("vs PyTorch", "not measured: " + pt->why);
    return;
  }
  const auto c = compare_with_pytorch(*pt, timings);
  row("vs PyTorch eager", ratio_text(c.eager));
  row("vs torch.compile", ratio_text(c.compile));
  row("  PyTorch", fmt::format("torch {} (CUDA {}, driver {}) on {}, {} samples a shape, {:.1f} device s{}",
                               pt->torch_version, pt->cuda_version.empty() ? "-" : pt->cuda_version, pt->driver_version,
                               pt->device, pt->samples, pt->device_seconds, pt->why.empty() ? "" : "; " + pt->why));
}

void print_summary(run_description const& run, search_result const& r, progress_line const& progress,
                   std::span<rung const> rungs, jsonl_journal const* journal) {
  fmt::print("kernelbrain tune {} (backend {})\n", run.problem_name, run.backend);
  row("strategy", run.strategy);
  row("seed", std::to_string(run.seed));
  row("budget", run.budget_text);
  row("stop reason", r.stop_reason);
  row("evaluations", std::to_string(r.counters.evaluations));
  row("cache hits", std::to_string(r.counters.cache_hits));
  row("candidates", fmt::format("{} ({} duplicate proposals)", r.candidates, r.counters.duplicates));
  std::string stages;
  for (auto const& [stage_name, n] : progress.rejected_by_stage())
    stages += fmt::format("{}{} {}", stages.empty() ? "" : ", ", stage_name, n);
  row("rejected",
      stages.empty() ? std::to_string(r.counters.rejected) : fmt::format("{} ({})", r.counters.rejected, stages));
  row("promotions", std::to_string(r.counters.promotions));
  row("device seconds", fixed(r.used.device_seconds, 3));
  row("wall seconds", fixed(r.used.wall_seconds, 1));
  if (!run.backend_note.empty()) row("backend", run.backend_note);
  if (!run.model.empty()) {
    auto const& m = progress.model();
    row("model", run.model);
    std::string unusable;
    for (auto const& [why, n] : m.unusable) unusable += fmt::format("{}{} {}", unusable.empty() ? "" : ", ", why, n);
    row("model replies", fmt::format("{} ({} usable{})", m.replies, m.usable,
                                     unusable.empty() ? std::string() : ", unusable: " + unusable));
    row("model tokens", fmt::format("{}{}", r.used.llm_tokens, m.estimated ? " (estimated: no usage reported)" : ""));
    if (r.used.llm_cost > 0) row("model cost", fmt::format("{:.4f}", r.used.llm_cost));
  }
  if (r.best && r.best_score) {
    auto const& c = r.best->cand;
    row("best candidate", c.id.str());
    row("  family", c.family.empty() ? "(free-form)" : c.family);
    row("  params", c.params.empty() ? "(none)" : c.params.to_string());
    row("  rung", r.best_rung < rungs.size() ? fmt::format("{} ({})", r.best_rung, rungs[r.best_rung].name)
                                             : std::to_string(r.best_rung));
    row("  speedup", fixed(r.best_score->speedup, 3) + "x over the reference");
    if (auto const& m = r.best->results[r.best_rung]; m && r.reference.pytorch)
      print_pytorch_rows(&*r.reference.pytorch, m->timings);
    // Every digit: runs that should be identical (a resumed one and an uninterrupted one) compare exactly.
    row("  score", fmt::format("{:.17g}", r.best_score->value));
  } else {
    row("best candidate", "none passed");
    if (r.reference.pytorch && !r.reference.pytorch->measured())
      row("vs PyTorch", "not measured: " + r.reference.pytorch->why);
  }
  if (journal) row("journal", journal->path().string() + (journal->resumed() ? " (resumed)" : ""));
  std::fflush(stdout);
}

void print_shape_table(problem const& p, std::span<shape_timing const> timings, std::span<double const> reference,
                       std::string_view column, pytorch_timing const* pytorch) {
  const bool torch = pytorch && pytorch->measured();
  fmt::print("\n  {:<14} {:>14} {:>14} {:>9} {:>12}", "shape", "reference", column, "speedup", "% of floor");
  if (torch) fmt::print(" {:>12} {:>12} {:>9} {:>10}", "eager", "compile", "vs eager", "vs compile");
  fmt::print("\n");
  auto ms = [](double s) { return s > 0 ? fmt::format("{:9.3f} ms", s * 1e3) : std::string("-"); };
  auto ratio = [](double theirs, double mine) {
    return theirs > 0 && mine > 0 ? fmt::format("{:.2f}x", theirs / mine) : std::string("-");
  };
  for (auto const& t : timings) {
    auto const& sh = p.shapes[t.shape];
    const double ref = reference[t.shape], mine = t.stats.median;
    const double floor = p.machine.floor_seconds(sh);
    fmt::print("  {:<14} {:11.3f} ms {:11.3f} ms {:8.2f}x {:>11}", sh.name, ref * 1e3, mine * 1e3, ref / mine,
               floor > 0 ? fixed(100.0 * floor / mine, 1) + "%" : std::string("-"));
    if (torch) {
      auto const* s = pytorch->at_index(t.shape);
      const double e = s ? s->eager_seconds : 0, c = s ? s->compile_seconds : 0;
      fmt::print(" {:>12} {:>12} {:>9} {:>10}", ms(e), ms(c), ratio(e, mine), ratio(c, mine));
    }
    fmt::print("\n");
  }
  if (torch)
    fmt::print(
        "  (eager, compile: PyTorch's medians on the same device, timed like the kernels; vs: their time / the "
        "{}'s, above 1x the {} is faster; \"-\": a correctness shape, not timed)\n",
        column, column);
  std::fflush(stdout);
}

void print_shapes(problem const& p, search_result const& r) {
  if (!r.best) return;
  auto const& m = r.best->results[r.best_rung];
  if (!m) return;
  print_shape_table(p, m->timings, r.reference.seconds, "best", r.reference.pytorch ? &*r.reference.pytorch : nullptr);
}

}  // namespace kernelbrain::cli
