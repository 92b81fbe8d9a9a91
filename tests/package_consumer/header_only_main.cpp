// The header-only form (kernelbrain/config.hpp): no kernelbrain::runtime, nothing of ours to link.
// Two translation units include every header, so a body that is not inline is a link error here.
#include <cstdio>
#include <filesystem>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <kernelbrain/strategies/all.hpp>
#include <string>

#if !KERNELBRAIN_HEADER_ONLY
#error "this program checks the header-only form: KERNELBRAIN_SEPARATE_COMPILATION must not be defined"
#endif

std::size_t journal_lines(std::filesystem::path const& file);  // header_only_journal.cpp

int main(int argc, char** argv) {
  namespace kb = kernelbrain;
  kb::synthetic_landscape land;
  kb::synthetic_evaluator ev(land);
  kb::search_options o;
  o.limits.evaluations = 40;
  const auto file = std::filesystem::path(argc > 1 ? argv[1] : "header_only.jsonl");
  std::filesystem::remove(file);
  kb::run_header h;
  h.problem = "synthetic";
  h.strategy = "sha";
  auto r = [&] {
    kb::jsonl_journal journal(file, h, o.limits, kb::journal_mode::create);
    o.journal = &journal;
    auto result = kb::search(land.get_problem(), kb::builtin_strategies().make("sha", land.get_problem(), {}), ev, o);
    journal.throw_if_failed();
    return result;
  }();
  std::printf("header-only: %s after %zu evaluations, %zu journal lines\n", r.stop_reason.c_str(),
              r.counters.evaluations, journal_lines(file));
  return r.counters.evaluations == 40 && journal_lines(file) > 40 ? 0 : 1;
}
