// The generation plane's own costs, without a model: parse/repair throughput on real replies (the answers
// models wrote on the H200 run of issue 10, bench/runs/2026-12-01-issue10/state/*/exchange/answer-*.md,
// plus a reply needing repairs), and the size of the prompts the builder makes for each shipped problem
// (bytes and estimated tokens: explore with the incumbent, and mutate with a measured parent).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <kernelbrain/generate/llm/prompt_builder.hpp>
#include <kernelbrain/generate/llm/reply_parser.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kernelbrain;

namespace {

std::string slurp(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct reply_case {
  std::string text;
  llm::reply_expectations ex;
};

std::vector<reply_case> corpus() {
  std::vector<reply_case> out;
  const fs::path runs = fs::path(KB_SOURCE_DIR) / "bench/runs/2026-12-01-issue10/state";
  std::error_code ec;
  if (fs::is_directory(runs, ec))
    for (auto const& e : fs::recursive_directory_iterator(runs, ec))
      if (e.path().filename().string().starts_with("answer-")) out.push_back({slurp(e.path()), {}});
  // A host reply with the usual slips: prose first, no fence info, a missing include.
  reply_case host;
  host.ex = llm::expectations_for(backends().traits("host"));
  host.text =
      "Here you go:\n\n```\n#include \"kernelbrain/evaluate/host_abi.h\"\nextern \"C\" void kb_kernel(const kb_args* "
      "a) {"
      "\n  for (long long i = 0; i < a->dims[0]; ++i) a->outputs[0][i] = std::exp(a->inputs[0][i]);\n}\n```\n";
  out.push_back(host);
  return out;
}

void parse_and_repair(benchmark::State& state) {
  const auto cases = corpus();
  std::size_t bytes = 0, ok = 0;
  for (auto _ : state) {
    for (auto const& c : cases) {
      auto r = llm::parse_reply(c.text, c.ex);
      ok += r.ok() ? 1 : 0;
      bytes += c.text.size();
      benchmark::DoNotOptimize(r);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["replies"] = static_cast<double>(cases.size());
  state.counters["replies/s"] = benchmark::Counter(
      static_cast<double>(cases.size()) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ok share"] =
      ok == 0 ? 0.0
              : static_cast<double>(ok) / (static_cast<double>(cases.size()) * static_cast<double>(state.iterations()));
}
BENCHMARK(parse_and_repair)->Unit(benchmark::kMicrosecond);

/// Prompt sizes per shipped problem: printed once (not timed), then the builder's time per prompt.
void prompt_size(benchmark::State& state, std::string const& dir) {
  const auto p = load_problem(dir);
  budget_meter meter;
  baseline b;
  for (auto const& s : p.shapes) {
    b.seconds.push_back(1e-3);
    b.weights.push_back(s.weight);
    b.floor_seconds.push_back(p.machine.floor_seconds(s));
  }
  std::vector<rung> rungs{rung{"smoke", {0}, 3, 1, 1, false, false}};
  detail::search_history h(p, rungs, b, meter);
  // A measured parent: the first catalogue template's source as a stand-in (size is what matters).
  candidate c;
  for (auto const& hint : p.catalogue)
    if (hint.templ) {
      c = make_candidate(hint.name, {}, "expert", std::nullopt, hint.templ->source, hint.templ->launch);
      break;
    }
  if (c.source.empty()) c = make_candidate("seed", {}, "seed", std::nullopt, p.reference_source, p.reference_launch);
  h.add(c);
  search_view v(h);
  llm::prompt_builder builder;
  llm::prompt_subject s;
  s.what = llm::prompt_subject::kind::mutate;
  s.parent = &v[0];
  s.hint = p.catalogue.empty() ? nullptr : &p.catalogue.back();
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto pr = builder.build(v, s);
    bytes = pr.system.size() + pr.user.size();
    benchmark::DoNotOptimize(pr);
  }
  state.counters["prompt bytes"] = static_cast<double>(bytes);
  state.counters["est. tokens"] = static_cast<double>((bytes + 3) / 4);
}

}  // namespace

int main(int argc, char** argv) {
  for (auto const* root : {"examples/cuda_problems", "examples/problems"}) {
    const fs::path r = fs::path(KB_SOURCE_DIR) / root;
    std::error_code ec;
    if (!fs::is_directory(r, ec)) continue;
    for (auto const& e : fs::directory_iterator(r))
      if (fs::exists(e.path() / "problem.json"))
        benchmark::RegisterBenchmark(
            ("prompt_size/" + fs::path(root).filename().string() + "/" + e.path().filename().string()).c_str(),
            [d = e.path().string()](benchmark::State& st) { prompt_size(st, d); })
            ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
