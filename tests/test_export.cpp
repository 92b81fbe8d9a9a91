// The export code generators, in process (kernelbrain/export: kernelbrain::tools): the committed H200
// journals and best.json files of bench/runs/2026-12-01-issue10 made into export models and packages, the
// files written, and inputs refused. (The generated code compiled with nvcc and imported by PyTorch:
// tests/export/check_export.py; the command: test_cli.cpp and check_export.py.)
#include <doctest/doctest.h>

#include <boost/json/parse.hpp>
#include <cstdint>
#include <filesystem>
#include <kernelbrain/export/export.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>
#include "journal_helpers.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;
namespace json = boost::json;
using kb_test::slurp;
using kb_test::spit;
using kb_test::temp_dir;

namespace {

const fs::path source_dir = KB_SOURCE_DIR;
const fs::path issue10 = source_dir / "bench" / "runs" / "2026-12-01-issue10" / "state";

std::string cuda_problem(std::string const& name) {
  return (source_dir / "examples" / "cuda_problems" / name).string();
}

exporting::export_model model_of(std::string const& problem, std::string const& file) {
  return exporting::load_model({(issue10 / problem / file).string(), cuda_problem(problem)});
}

/// The problem's benchmark shapes: every shape but the correctness tiers (smoke, odd, wide).
std::vector<std::string> benchmark_shapes(std::string const& problem) {
  std::vector<std::string> names;
  for (auto const& s : load_problem(cuda_problem(problem)).shapes)
    if (!is_correctness_shape(s)) names.push_back(s.name);
  return names;
}

}  // namespace

TEST_CASE("export: arch flags, capabilities, sizes and template filling") {
  CHECK(exporting::nvcc_arch_flags("sm_90a") == std::vector<std::string>{"-gencode", "arch=compute_90a,code=sm_90a"});
  CHECK(exporting::nvcc_arch_flags("sm_90") == std::vector<std::string>{"-gencode", "arch=compute_90,code=sm_90"});
  const auto a = exporting::required_capability("sm_90a");
  CHECK(a.major == 9);
  CHECK(a.minor == 0);
  CHECK(a.exact);
  const auto p = exporting::required_capability("sm_86");
  CHECK(p.major == 8);
  CHECK(p.minor == 6);
  CHECK_FALSE(p.exact);
  CHECK(exporting::sizes_text({16, 16384}) == "[16, 16384]");
  CHECK(exporting::sizes_text({}) == "[]");
  CHECK(exporting::number_text(0.1) == "0.1");
  CHECK(exporting::number_text(1e-7) == "1e-07");
  CHECK(exporting::speedup_text(1.234) == "1.23x");
  CHECK(exporting::speedup_text(std::nullopt) == "-");
  CHECK(exporting::fill("a @@X@@ b @@Y@@@@X@@", {{"X", "1"}, {"Y", "@@Z@@"}}) == "a 1 b @@Z@@1");
  CHECK_THROWS_WITH_AS((void)exporting::fill("@@NOPE@@", {{"X", "1"}}), doctest::Contains("no value for @@NOPE@@"),
                       error);
  CHECK_THROWS_AS((void)exporting::fill("an @@unmatched", {}), error);
}

TEST_CASE("export: a journal and the best.json of the same run make the same kernels per benchmark shape") {
  const auto from_journal = model_of("softmax", "journal.jsonl");
  const auto from_best = model_of("softmax", "best.json");
  for (auto const* m : {&from_journal, &from_best}) {
    CHECK(m->prob.name == "softmax");
    CHECK(exporting::api_name(*m) == "kb_softmax");
    CHECK((m->arch == "sm_90" || m->arch == "sm_90a"));
    std::vector<std::string> names;
    for (auto const& t : m->shapes) names.push_back(t.name);
    CHECK(names == benchmark_shapes("softmax"));
    REQUIRE_FALSE(m->blocks.empty());
    for (auto const& t : m->shapes) {
      REQUIRE(t.block < m->blocks.size());
      REQUIRE_FALSE(t.launches.empty());
      // Every launch names an entry point of its kernel block, renamed into the export's namespace.
      for (auto const& l : t.launches) {
        CHECK(m->blocks[t.block].entries.at(l.kernel) == l.entry);
        CHECK(m->blocks[t.block].source.find(l.entry) != std::string::npos);
        for (int d = 0; d < 3; ++d) CHECK(l.grid[d] >= 1);
      }
      CHECK(t.speedup.has_value());
    }
  }
  REQUIRE(from_journal.shapes.size() == from_best.shapes.size());
  for (std::size_t i = 0; i < from_best.shapes.size(); ++i) {
    CHECK(from_journal.shapes[i].candidate == from_best.shapes[i].candidate);
    CHECK(from_journal.shapes[i].family == from_best.shapes[i].family);
  }
  // What each input says about the run: a journal has the run's timings and device; a best.json does not.
  CHECK(from_journal.source.starts_with("journal `"));
  CHECK(from_best.source.starts_with("best.json `"));
  CHECK_FALSE(from_journal.provenance.empty());
  CHECK(from_best.provenance.empty());
  for (auto const& t : from_journal.shapes) {
    CHECK(t.median_seconds.has_value());
    CHECK(t.reference_seconds.has_value());
  }
  CHECK(from_journal.source_file == fs::absolute(issue10 / "softmax" / "journal.jsonl").lexically_normal().string());
}

TEST_CASE("export: the package's files, the manifest's facts and the build id") {
  auto m = model_of("sdpa_fp16", "journal.jsonl");
  const auto files = exporting::package_files(m);
  CHECK(m.build_id.size() == 16);
  std::map<std::string, std::string> by_path;
  for (auto const& f : files) by_path[f.path.generic_string()] = f.text;
  for (char const* path :
       {"cuda/sdpa_fp16.cu", "cuda/sdpa_fp16.h", "cuda/example.cpp", "cuda/Makefile", "torch/kb_sdpa_fp16/__init__.py",
        "torch/kb_sdpa_fp16/_build.py", "torch/kb_sdpa_fp16/__main__.py", "torch/kb_sdpa_fp16/README.md",
        "torch/kb_sdpa_fp16/csrc/kernels.cu", "torch/kb_sdpa_fp16/csrc/sdpa_fp16.h", "torch/kb_sdpa_fp16/csrc/capi.cu",
        "README.md", "manifest.json"})
    CHECK_MESSAGE(by_path.contains(path), path);
  CHECK(files.size() == 13);
  // The PyTorch package carries the same .cu and header as the standalone files.
  CHECK(by_path["torch/kb_sdpa_fp16/csrc/kernels.cu"] == by_path["cuda/sdpa_fp16.cu"]);
  CHECK(by_path["torch/kb_sdpa_fp16/csrc/sdpa_fp16.h"] == by_path["cuda/sdpa_fp16.h"]);
  CHECK(by_path["torch/kb_sdpa_fp16/csrc/capi.cu"] == exporting::capi_source(m));
  // No template placeholder is left in any generated file.
  for (auto const& [path, text] : by_path) CHECK_MESSAGE(text.find("@@") == std::string::npos, path);
  // Every kernel block's renamed entry points are defined in the .cu.
  for (auto const& b : m.blocks)
    for (auto const& [kernel, entry] : b.entries) CHECK(by_path["cuda/sdpa_fp16.cu"].find(entry) != std::string::npos);

  const auto manifest = json::parse(by_path["manifest.json"]).as_object();
  CHECK(manifest.at("problem").as_string() == "sdpa_fp16");
  CHECK(manifest.at("api").as_string() == "kb_sdpa_fp16");
  CHECK(manifest.at("build_id").as_string() == m.build_id);
  CHECK(manifest.at("arch").as_string() == m.arch);
  auto const& shapes = manifest.at("shapes").as_array();
  REQUIRE(shapes.size() == m.shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    CHECK(shapes[i].at("name").as_string() == m.shapes[i].name);
    CHECK(shapes[i].at("candidate").as_string() == m.shapes[i].candidate);
    CHECK(shapes[i].at("workspace_bytes").to_number<std::uint64_t>() == m.shapes[i].workspace);
    CHECK(shapes[i].at("launches").as_array().size() == m.shapes[i].launches.size());
  }
  CHECK(by_path["README.md"] == exporting::readme(m));
  CHECK(by_path["README.md"].starts_with("# kb_sdpa_fp16: tuned CUDA kernels for `sdpa_fp16`"));
  for (auto const& t : m.shapes) CHECK(by_path["README.md"].find("| " + t.name + " | ") != std::string::npos);

  // The same input makes the same files (the build id included).
  auto again = model_of("sdpa_fp16", "journal.jsonl");
  const auto files2 = exporting::package_files(again);
  REQUIRE(files2.size() == files.size());
  for (std::size_t i = 0; i < files.size(); ++i) CHECK(files2[i].text == files[i].text);
}

TEST_CASE("export: writing a package: a new directory, a non-empty one only when forced") {
  temp_dir dir("export_write");
  auto m = model_of("softmax", "best.json");
  const auto files = exporting::package_files(m);
  const auto to = dir / "out";
  exporting::write_package(to, files, exporting::api_name(m), false);
  for (auto const& f : files) CHECK(slurp(to / f.path) == f.text);

  CHECK_THROWS_WITH_AS(exporting::write_package(to, files, "kb_softmax", false),
                       doctest::Contains("exists and is not empty: give --force"), error);
  // Forced: torch/kb_softmax/ is emptied first (a stale library must not stay), other files stay.
  spit(to / "torch" / "kb_softmax" / "libkb_softmax-stale.so", "stale");
  spit(to / "notes.txt", "mine");
  exporting::write_package(to, files, "kb_softmax", true);
  CHECK_FALSE(fs::exists(to / "torch" / "kb_softmax" / "libkb_softmax-stale.so"));
  CHECK(fs::exists(to / "notes.txt"));
  CHECK(slurp(to / "manifest.json") == files.back().text);

  spit(dir / "a-file", "x");
  CHECK_THROWS_WITH_AS(exporting::write_package(dir / "a-file", files, "kb_softmax", true),
                       doctest::Contains("exists and is not a directory"), error);
}

TEST_CASE("export: inputs and problems refused with what is wrong") {
  temp_dir dir("export_refused");
  const auto best = (issue10 / "softmax" / "best.json").string();
  // A host problem: its kernels are not CUDA sources.
  CHECK_THROWS_WITH_AS((void)exporting::load_model({best, (source_dir / "examples" / "problems" / "softmax").string()}),
                       doctest::Contains("only CUDA problems can be exported"), error);
  // Another problem than the one tuned.
  CHECK_THROWS_WITH_AS((void)exporting::load_model({best, cuda_problem("rmsnorm")}),
                       doctest::Contains("was tuned for problem 'softmax'"), error);
  spit(dir / "empty.jsonl", "");
  CHECK_THROWS_WITH_AS((void)exporting::load_model({(dir / "empty.jsonl").string(), cuda_problem("softmax")}),
                       doctest::Contains("is an empty journal: nothing to export"), error);
  spit(dir / "prose.txt", "not a journal\n");
  CHECK_THROWS_WITH_AS((void)exporting::load_model({(dir / "prose.txt").string(), cuda_problem("softmax")}),
                       doctest::Contains("is neither a best.json"), error);
  spit(dir / "nothing.json", R"({"kernels": []})");
  CHECK_THROWS_AS((void)exporting::load_model({(dir / "nothing.json").string(), cuda_problem("softmax")}), error);
}
