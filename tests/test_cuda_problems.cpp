// The CUDA problems in examples/cuda_problems/ load with the same strict loader as the host ones:
// CUDA fields (precision, nvrtc_check, dtype, reference {source, launch}, structured launch plans)
// are accepted and kept, and a misspelt CUDA field is still an error. No GPU and no CUDA needed.
#include <doctest/doctest.h>

#include <unistd.h>
#include <boost/json/parse.hpp>

#include <filesystem>
#include <fstream>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/defaults/multi_rung_ladder.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kernelbrain;

TEST_CASE("every CUDA problem in examples/cuda_problems and bench/unseen loads") {
  // bench/unseen/: the same problems at shapes in no example problem file (bench/unseen/make.py).
  std::vector<fs::path> dirs;
  for (auto const* where : {"examples/cuda_problems", "bench/unseen"})
    for (auto const& e : fs::directory_iterator(fs::path(KB_SOURCE_DIR) / where)) dirs.push_back(e.path());
  int n = 0;
  for (auto const& dir : dirs) {
    auto const e = fs::directory_entry(dir);
    if (!fs::exists(e.path() / "problem.json")) continue;
    CAPTURE(e.path().string());
    problem p;
    REQUIRE_NOTHROW(p = load_problem(e.path()));
    CHECK(p.backend == "cuda");
    CHECK(!p.reference_source.empty());
    CHECK(!p.reference_launch.empty());
    CHECK(!p.description.empty());
    CHECK(p.options.count("nvrtc_check.max_spill_bytes") == 1);
    CHECK(boost::json::parse(p.reference_launch).is_object());
    for (auto const& t : p.inputs) CHECK((t.dtype == "f32" || t.dtype == "f16"));
    int templated = 0;
    for (auto const& h : p.catalogue)
      if (h.templ && !h.templ->source.empty()) {
        ++templated;
        CHECK(h.templ->launch.find("\"launches\"") != std::string::npos);
      }
    CHECK(templated > 0);
    ++n;
  }
  CHECK(n >= 19);
  const auto fp16 = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "sdpa_fp16");
  CHECK(fp16.options.at("precision") == "fp16");
  CHECK(fp16.inputs.front().dtype == "f16");
}

TEST_CASE("the CUDA catalogues' diagnosis moves can each be made from some point of their space") {
  const fs::path root = fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems";
  for (auto const* name : {"softmax", "linear_relu_div", "sdpa_fp16"}) {
    CAPTURE(name);
    const auto p = load_problem(root / name);
    std::size_t declared = 0;
    for (auto const& h : p.catalogue)
      for (auto const& m : h.diagnosis_moves) {
        CAPTURE(h.name);
        CAPTURE(m.tag);
        CAPTURE(m.param);
        ++declared;
        REQUIRE(h.templ);
        auto const& space = h.templ->space;
        std::size_t which = 0;
        while (space.params[which].name != m.param) ++which;
        // Somewhere in the space a single step along the list moves the value the declared way.
        bool possible = false;
        for (auto const& point : space.enumerate())
          for (int st : {-1, 1})
            if (auto q = step_parameter(space, point, which, st))
              possible = possible || (q->at(m.param) - point.at(m.param)) * m.direction > 0;
        CHECK(possible);
      }
    CHECK(declared > 0);
  }
}

TEST_CASE("CUDA problem fields keep the loader strict") {
  const fs::path src = fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax";
  const fs::path dir = fs::temp_directory_path() / ("kb_cuda_problem_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(src, dir, fs::copy_options::recursive);
  std::string text;
  {
    std::ifstream in(dir / "problem.json");
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  auto with = [&](std::string const& from, std::string const& to) {
    auto t = text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    std::ofstream(dir / "problem.json") << t;
    std::string msg;
    try {
      (void)load_problem(dir);
    } catch (error const& e) {
      msg = e.what();
    }
    return msg;
  };
  CHECK(with("\"nvrtc_check\": {", "\"nvrtc_check\": {\"max_spills\": 1, ").find("unknown field 'max_spills'") !=
        std::string::npos);
  CHECK(with("\"dtype\": \"f32\"", "\"dtype\": \"f64\"").find("not one of f32, f16") != std::string::npos);
  CHECK(with("\"nvrtc_check\"", "\"nvrtc_chek\"").find("did you mean 'nvrtc_check'") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("the standard ladder times benchmark shapes, and --focus narrows a problem to some of them") {
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  auto names = [&](problem const& q, std::vector<std::size_t> const& idx) {
    std::vector<std::string> n;
    for (auto i : idx) n.push_back(q.shapes.at(i).name);
    return n;
  };
  // The lean ladder (issue 28): softmax's screen would time every benchmark shape, about what the top rung
  // costs, so it is left out; the top rung times every shape, 5 samples, 1 trial, no A/B, profiled.
  const auto lean = multi_rung_ladder::standard(p);
  REQUIRE(lean.rungs().size() == 2);
  CHECK(names(p, lean.rungs()[0].shapes) == std::vector<std::string>{"16x16384"});
  CHECK(lean.rungs()[1].shapes.size() == p.shapes.size());
  CHECK(lean.rungs()[1].samples == 5);
  CHECK(lean.rungs()[1].correctness_trials == 1);
  CHECK_FALSE(lean.rungs()[1].interleaved);
  CHECK(lean.rungs()[1].profile);
  // The memory-safety tools only at the top (rung::assure): the smoke screens families before them.
  CHECK_FALSE(lean.rungs()[0].assure);
  CHECK(lean.rungs()[1].assure);
  const auto full = multi_rung_ladder::standard(p, ladder_options{.screen = "always"});
  REQUIRE(full.rungs().size() == 3);
  // smoke: the cheapest benchmark shape, not the launch-bound correctness shapes
  CHECK(names(p, full.rungs()[0].shapes) == std::vector<std::string>{"16x16384"});
  CHECK(names(p, full.rungs()[1].shapes) == std::vector<std::string>{"16x16384", "4096x65536", "4096x393216"});
  CHECK(full.rungs()[2].shapes.size() == p.shapes.size());
  CHECK_FALSE(full.rungs()[1].assure);
  CHECK(full.rungs()[2].assure);
  const auto before = multi_rung_ladder::standard(
      p, ladder_options{.top_samples = 30, .top_trials = 3, .ab = true, .screen = "always"});
  CHECK(before.rungs()[2].samples == 30);
  CHECK(before.rungs()[2].correctness_trials == 3);
  CHECK(before.rungs()[2].interleaved);
  CHECK_THROWS_WITH_AS(multi_rung_ladder::standard(p, ladder_options{.screen = "sometimes"}),
                       doctest::Contains("'screen' is 'sometimes', which is not auto, always or never"), error);
  CHECK_THROWS_WITH_AS(multi_rung_ladder::standard(p, ladder_options{.smoke = "rarely"}),
                       doctest::Contains("'smoke' is 'rarely', which is not auto, always or never"), error);
  const auto no_smoke = multi_rung_ladder::standard(p, ladder_options{.smoke = "never"});
  REQUIRE(no_smoke.rungs().size() == 1);
  CHECK(no_smoke.rungs()[0].name == "confirm");

  const auto big = focused_on(p, {"4096x393216"});
  CHECK(big.shapes.size() == p.shapes.size() - 2);  // the two other benchmark shapes are gone
  for (auto const& s : big.shapes) CHECK((s.tier == "smoke" || s.tier == "odd" || s.name == "4096x393216"));
  // A screen that would time what the smoke times is never kept. The smoke is, by default, although it
  // times the top rung's one benchmark shape: it decides which families the top rung sanitizes.
  const auto kept = multi_rung_ladder::standard(big);
  REQUIRE(kept.rungs().size() == 2);
  CHECK(names(big, kept.rungs()[0].shapes) == std::vector<std::string>{"4096x393216"});
  CHECK(kept.rungs()[1].name == "confirm");
  // smoke=auto drops it there (3 samples of it cost more than a quarter of the top rung's 1 + 5): one rung,
  // assured, so that a one-rung ladder sanitizes each family at its first measurement.
  const auto ladder = multi_rung_ladder::standard(big, ladder_options{.smoke = "auto"});
  REQUIRE(ladder.rungs().size() == 1);
  CHECK(ladder.rungs()[0].name == "confirm");
  CHECK(ladder.rungs()[0].assure);
  CHECK(ladder.rungs()[0].shapes.size() == big.shapes.size());
  const auto always = multi_rung_ladder::standard(big, ladder_options{.screen = "always", .smoke = "always"});
  REQUIRE(always.rungs().size() == 3);
  CHECK(names(big, always.rungs()[0].shapes) == std::vector<std::string>{"4096x393216"});
  CHECK(names(big, always.rungs()[1].shapes) == std::vector<std::string>{"4096x393216"});

  CHECK_THROWS_WITH_AS(focused_on(p, {"4096x65537"}),
                       doctest::Contains("not one of its benchmark shapes (16x16384, 4096x65536, 4096x393216)"), error);
  CHECK_THROWS_WITH_AS(focused_on(p, {"smoke"}), doctest::Contains("not one of its benchmark shapes"), error);
}
