// Backends as plug-ins: a toy backend registered from here, with no library file knowing it, loads its
// problem from a problem.json, runs the default search through the library API, is listed with the
// built-in backends, its journal's fingerprint is traced back to it, the prompt builder writes its
// language and answer format, and `kernelbrain report` renders its journal. Also: the registry's
// errors, and the built-in backends' traits as the rest of the library reads them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/builtin.hpp>
#include <kernelbrain/backends/registry.hpp>
#include <kernelbrain/core/expr.hpp>
#include <kernelbrain/generate/llm/prompt_builder.hpp>
#include <kernelbrain/generate/llm/reply_parser.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <sstream>
#include <string>
#include "cli_helpers.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

/// The toy backend: a candidate's "run time" at a shape is the shape's bytes at 1 GB/s times a factor
/// its parameters give (best at U=4, V=2); a source holding "WRONG" fails correctness, "#error" the
/// build. Device seconds are the simulated runs.
class toy_evaluator final : public evaluator {
 public:
  explicit toy_evaluator(problem const& p) : prob_(p) {}
  [[nodiscard]] std::string fingerprint() const override { return "toy/v1/bandwidth=1e9"; }
  [[nodiscard]] verdict build(candidate const& c) override {
    ++builds;
    if (c.source.find("#error") != std::string::npos) return verdict::reject(stage::compile, "toy: #error");
    return verdict::pass();
  }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t) override {
    for (auto s : shapes) spent_ += trials * seconds(c, s);
    if (c.source.find("WRONG") != std::string::npos) return verdict::reject(stage::correctness, "toy: wrong");
    return verdict::pass();
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    measurement m;
    if (auto v = check(c, r.shapes, 1, req.seed); !v) {
      m.result = v;
      return m;
    }
    for (auto s : r.shapes) {
      shape_timing t;
      t.shape = s;
      for (int i = 0; i < r.samples; ++i) t.samples.push_back(seconds(c, s));
      t.summarise();
      spent_ += (r.warmup + r.samples) * seconds(c, s);
      m.timings.push_back(std::move(t));
    }
    return m;
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override {
    baseline b;
    for (auto const& s : p.shapes) b.seconds.push_back(4.0 * s.bytes / 1e9);
    return b;
  }
  [[nodiscard]] double take_device_seconds() override { return std::exchange(spent_, 0.0); }

  int builds = 0;

 private:
  double seconds(candidate const& c, std::size_t s) const {
    double f = 3.0;  // the seed and anything not from the template
    if (auto u = c.params.find("U"), v = c.params.find("V"); u && v)
      f = 1.0 + 0.25 * std::abs(static_cast<double>(*u) - 4) + 0.1 * std::abs(static_cast<double>(*v) - 2);
    return f * prob_.shapes[s].bytes / 1e9;
  }
  problem const& prob_;
  double spent_ = 0;
};

backend_traits toy_traits() {
  backend_traits t;
  t.name = "toy";
  t.description = "a toy backend registered by tests/test_backend_registry.cpp";
  t.language = "ToyLang";
  t.fence = "toy";
  t.fingerprint_prefix = "toy/";
  t.answer_format = [](problem const& p) { return "## Answer format\n\nOne ```toy block for " + p.name + ".\n"; };
  return t;
}

/// Registers the toy backend once per test program.
void register_toy() {
  static const bool once = [] {
    backends().add(toy_traits(), [](backend_request const& req) -> std::unique_ptr<evaluator> {
      return std::make_unique<toy_evaluator>(*req.prob);
    });
    return true;
  }();
  (void)once;
}

void write_file(fs::path const& p, std::string const& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// A toy problem directory: problem.json naming backend "toy", a reference, a seed and one template.
void write_toy_problem(fs::path const& dir) {
  write_file(dir / "problem.json", R"({
  "name": "toy-scale",
  "backend": "toy",
  "signature": "y = 2 x",
  "dims": ["N"],
  "inputs": [{"name": "x", "size": "N", "distribution": "uniform"}],
  "outputs": [{"name": "y", "size": "N"}],
  "shapes": [
    {"name": "small", "dims": {"N": 1024}, "tier": "smoke"},
    {"name": "odd", "dims": {"N": 1031}, "tier": "odd"},
    {"name": "big", "dims": {"N": 1048576}, "tier": "large"}
  ],
  "tolerance": {"rtol": 1e-4, "atol": 1e-5},
  "cost": {"bytes": "8 * N", "flops": "N"},
  "reference": "ref.toy",
  "seed": "seed.toy",
  "catalogue": [
    {"name": "unrolled", "prose": "unroll by U, V ways", "template": "templates/t.toy",
     "parameters": {"U": [1, 2, 4, 8], "V": [1, 2, 4]}}
  ]
}
)");
  write_file(dir / "ref.toy", "y = 2 * x  // reference\n");
  write_file(dir / "seed.toy", "y = x + x  // seed\n");
  write_file(dir / "templates" / "t.toy", "y = 2 * x unrolled ${U} x ${V}\n");
}

std::string read_file(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE(
    "backend registry: a toy backend registered outside the library is loaded, searched, listed, fingerprinted, "
    "prompted and reported like the built-in ones") {
  register_toy();
  kb_test::temp_dir d;
  write_toy_problem(d.path / "toy-scale");

  // Listed beside the built-ins.
  const auto names = backends().names();
  for (auto const* n : {"cuda", "host", "replay", "synthetic", "toy"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), n) != names.end(), n);
  CHECK(backends().listing().find("toy         a toy backend registered by tests/test_backend_registry.cpp "
                                  "[ToyLang]") != std::string::npos);

  // The loader takes its name; a name nobody registered is refused, naming those that are.
  const problem prob = load_problem(d.path / "toy-scale");
  CHECK(prob.backend == "toy");
  CHECK(backends().traits_of(prob).language == "ToyLang");

  // A default search through the library API, journaled.
  auto ev = backends().make("toy", backend_request{&prob, {}, false, {}});
  auto* toy = dynamic_cast<toy_evaluator*>(ev.get());
  REQUIRE(toy != nullptr);
  auto pol = default_policies(prob);
  const auto rungs = pol.ladder.rungs();
  const std::vector<rung> ladder(rungs.begin(), rungs.end());
  const fs::path journal = d.path / "toy.jsonl";
  search_options opt;
  opt.limits.evaluations = 40;
  {
    jsonl_journal sink(journal, run_header{prob.name, "default", opt.seed, ev->fingerprint(), ladder_digest(ladder)},
                       opt.limits, journal_mode::create);
    opt.journal = &sink;
    const auto result = search(prob, std::move(pol), *ev, opt);
    REQUIRE(result.best.has_value());
    // The template's best point is 3x faster than the seed and 4x faster than the reference.
    CHECK(result.best->cand.params.find("U") == 4);
    CHECK(result.best->cand.params.find("V") == 2);
    CHECK(result.best_score->speedup == doctest::Approx(4.0).epsilon(0.01));
  }
  CHECK(toy->builds > 0);

  // Fingerprinted: the journal's header is traced back to the toy backend, as host and cuda ones are.
  const auto contents = read_journal(journal);
  CHECK(contents.header.evaluator == "toy/v1/bandwidth=1e9");
  auto traced = backends().for_fingerprint(contents.header.evaluator);
  REQUIRE(traced.has_value());
  CHECK(traced->name == "toy");
  CHECK(backends().for_fingerprint("host/v1; compiler: c++")->name == "host");
  CHECK(backends().for_fingerprint("replay/cuda/v2; nvrtc 12.8")->name == "replay");
  CHECK_FALSE(backends().for_fingerprint("opencl/1").has_value());

  // Prompted: the prompt builder writes its language, its answer format and its code fences.
  const auto prompt = llm::prompt_builder().sample(prob);
  CHECK(prompt.system.find("ToyLang") != std::string::npos);
  CHECK(prompt.system.find("One ```toy block for toy-scale.") != std::string::npos);
  CHECK(prompt.user.find("```toy\ny = 2 * x  // reference") != std::string::npos);
  const auto ex = llm::expectations_for(backends().traits("toy"));
  CHECK_FALSE(ex.launch_plan);
  CHECK(ex.language == "ToyLang");

#ifdef KB_CLI_PATH
  // Reported: the CLI (which has never heard of "toy") renders the journal; shapes it cannot name are #i.
  const auto html = d.path / "toy.html";
  const auto r = kb_test::run_cli({"report", journal.string(), "-o", html.string()}, d);
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  const auto page = read_file(html);
  CHECK(page.find("toy-scale") != std::string::npos);
  CHECK(page.find("toy/v1/bandwidth=1e9") != std::string::npos);
#endif
}

TEST_CASE("backend registry: unknown names, problems for another backend and missing factories are clear errors") {
  register_toy();
  CHECK_THROWS_WITH_AS((void)backends().traits("opencl"),
                       doctest::Contains("unknown backend 'opencl'; known backends: cuda, host, replay, synthetic"),
                       error);
  CHECK_THROWS_WITH_AS(backends().add(toy_traits()), "backend_registry: backend 'toy' is already registered", error);
  CHECK_THROWS_WITH_AS(backends().add(backend_traits{}), "backend_registry: a backend needs a non-empty name", error);

  problem host_problem;
  host_problem.name = "p";
  host_problem.backend = "host";
  CHECK_THROWS_WITH_AS((void)backends().make("toy", backend_request{&host_problem, {}, false, {}}),
                       "problem 'p' is written for the host backend, not toy: use --backend host", error);
  CHECK_THROWS_WITH_AS((void)backends().make("toy", backend_request{}), doctest::Contains("without a problem"), error);

  // A second registry without factories: its built-in names are known, their evaluators are not.
  backend_registry bare;
  for (auto& t : builtin_backend_traits()) bare.add(std::move(t));
  CHECK_THROWS_WITH_AS((void)bare.make("host", backend_request{&host_problem, {}, false, {}}),
                       doctest::Contains("this program has no factory for it"), error);

  // The synthetic and replay factories need their context; without it they say which.
  problem synthetic_problem;
  synthetic_problem.name = "s";
  CHECK_THROWS_WITH_AS((void)backends().make("synthetic", backend_request{&synthetic_problem, {}, false, {}}),
                       doctest::Contains("from a synthetic_landscape const*"), error);
  synthetic_landscape land;
  auto ev = backends().make(
      "synthetic",
      backend_request{&land.get_problem(), {}, false, std::any(static_cast<synthetic_landscape const*>(&land))});
  CHECK(ev->fingerprint().starts_with(backends().traits("synthetic").fingerprint_prefix));
}

TEST_CASE("backend registry: the built-in backends' traits are what the library reads") {
  const auto host = backends().traits("host");
  const auto cuda = backends().traits("cuda");
  CHECK(host.language == "C++");
  CHECK(host.fence == "cpp");
  CHECK_FALSE(host.launch_plan);
  CHECK(host.min_dim == 1);
  CHECK(cuda.language == "CUDA");
  CHECK(cuda.launch_plan);
  CHECK(cuda.min_dim == 0);
  CHECK(cuda.exports);
  CHECK_FALSE(host.exports);
  CHECK(backends().traits("synthetic").language.empty());
  CHECK_FALSE(backends().traits("replay").problem_files);
  CHECK(backends().device_key("host", "") == "cpu");
  CHECK(backends().device_key("cuda", "") == "cuda:0");
  CHECK(backends().device_key("cuda", "3") == "cuda:3");
  CHECK(backends().device_key("synthetic", "") == "synthetic");
  problem p;
  p.backend = "cuda";
  p.options["arch"] = "sm_90a";
  CHECK(cuda.answer_format(p).find("compiled by NVRTC for sm_90a") != std::string::npos);
  p.backend = "host";
  CHECK(host.answer_format(p).find("kb_kernel(const kb_args* args)") != std::string::npos);
  CHECK(backends().origin_of_fingerprint("replay/cuda/v2; nvrtc 12.8")->name == "cuda");
  CHECK(backends().origin_of_fingerprint("host/v1")->name == "host");

  // Backends that open their own problems: the synthetic backend's names, the replay backend's recordings.
  auto syn = backends().open("synthetic:3");
  REQUIRE(syn.has_value());
  CHECK(syn->backend == "synthetic");
  CHECK(syn->label == "synthetic:3");
  REQUIRE(std::any_cast<synthetic_landscape const*>(&syn->context) != nullptr);
  CHECK((*std::any_cast<synthetic_landscape const*>(&syn->context))->config().landscape_seed == 3);
  CHECK(backends().open("synthetic")->label == "synthetic:7");
  CHECK_FALSE(backends().open("softmax").has_value());
  CHECK_FALSE(backends().open("synthetics").has_value());
  CHECK_THROWS_WITH_AS((void)backends().open("synthetic:x"), doctest::Contains("'x' is not a whole number"), error);
  // The recording's problem is looked up among the problems of the backend that recorded it (the CLI adds
  // the source tree's folders at start-up; here the test does).
  static const bool roots = [] {
    backends().add_problem_root("cuda", fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems");
    return true;
  }();
  CHECK(roots);
  auto rec = backends().open(std::string(KB_SOURCE_DIR) + "/bench/recordings/softmax.jsonl.gz");
  REQUIRE(rec.has_value());
  CHECK(rec->backend == "replay");
  CHECK(rec->prob->name == "softmax");
  CHECK(rec->prob->backend == "cuda");  // recorded on an H200: the CUDA softmax, found among the CUDA problems
  CHECK_FALSE(backends().open("synthetic:3", "replay").has_value());

  CHECK_FALSE(backends().isolation("host").empty());
  CHECK(backends().isolation("cuda").empty());
}

TEST_CASE("backend registry: what the CUDA answer format says of plan expressions is what the evaluator does") {
  // Models write launch plans from this text alone, so each claim it makes is checked against
  // evaluate_expression: truncating / and %, comparisons as 0 or 1, two-argument min and max, nesting.
  problem p;
  p.backend = "cuda";
  p.options["arch"] = "sm_90";
  const std::string text = backends().traits("cuda").answer_format(p);
  for (const char* claim : {"/ and % truncate as in C", "(< <= > >= == != give 0 or 1)", "min(a, b)", "max(a, b)",
                            "ceil_div(a, b)", "nested as deep as needed", "[1, 1, 1] or none is an ordinary launch"})
    CHECK_MESSAGE(text.find(claim) != std::string::npos, claim);
  const auto dims = [](std::string_view n) -> std::optional<std::int64_t> {
    if (n == "D") return 1030;
    if (n == "M") return 130;
    return std::nullopt;
  };
  CHECK(evaluate_expression("7 / 2 + -7 / 2", dims) == 0);  // 3 + (-3): truncation toward zero
  CHECK(evaluate_expression("-7 % 2", dims) == -1);
  CHECK(evaluate_expression("(M > 128) + (M == 130) + (M != 130)", dims) == 2);
  CHECK(evaluate_expression("min(max(D - 128, 0), 1) * ceil_div(M, 64)", dims) == 3);
  CHECK(evaluate_expression("ceil_div(M, min(64, max(ceil_div(M, 8), 2)))", dims) == 8);
  CHECK_THROWS_AS((void)evaluate_expression("min(1, 2, 3)", dims), error);  // two arguments, as the text says
}
