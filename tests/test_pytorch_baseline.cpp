// PyTorch as the search's baseline, without a GPU: the problem's PyTorch declaration and its loader's
// errors, the request the measuring process gets, what measure_pytorch makes of every way that process can
// end (no Python, no torch, a crash, a hang, a partial or malformed result), the journal's form of the
// result, and the comparison the tables print. The GPU runs are in tests/gpu/ (label gpu).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <boost/json/parse.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/common/pytorch_baseline.hpp>
#include <kernelbrain/backends/common/pytorch_script.hpp>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "scoped_env.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace kernelbrain;

namespace {

fs::path cuda_problem(char const* name) { return fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / name; }

std::string slurp(fs::path const& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A copy of a CUDA problem in `dir` with `from` replaced by `to` in its problem.json; the loader's message.
std::string load_error(kb_test::temp_dir const& dir, char const* problem, std::string const& from,
                       std::string const& to) {
  const auto target = dir.path / problem;
  fs::remove_all(target);
  fs::copy(cuda_problem(problem), target, fs::copy_options::recursive);
  auto text = slurp(target / "problem.json");
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(target / "problem.json") << text;
  try {
    (void)load_problem(target);
  } catch (error const& e) {
    return e.what();
  }
  return "(loaded)";
}

/// An executable shell script standing in for Python: `body` sees the script, request and result paths
/// as $1 $2 $3.
fs::path fake_python(kb_test::temp_dir const& dir, std::string const& name, std::string const& body) {
  const auto p = dir.path / name;
  std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
  ::chmod(p.c_str(), 0755);
  return p;
}

pytorch_shape row(std::string name, std::size_t index, double eager, double compile) {
  pytorch_shape s;
  s.shape = std::move(name);
  s.index = index;
  s.eager_seconds = eager;
  s.compile_seconds = compile;
  return s;
}

pytorch_options quick(fs::path const& python) {
  pytorch_options o;
  o.python = python.string();
  o.timeout = 20;
  return o;
}

}  // namespace

TEST_CASE("pytorch declaration: every CUDA problem declares one that fits its tensors at every shape") {
  for (auto const& e : fs::directory_iterator(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems")) {
    if (!fs::exists(e.path() / "problem.json")) continue;
    CAPTURE(e.path().string());
    const auto p = load_problem(e.path());
    REQUIRE(p.pytorch);
    CHECK(!p.pytorch->expression.empty());
    for (auto const* list : {&p.inputs, &p.outputs})
      for (auto const& t : *list) CHECK(p.pytorch->view(t.name) != nullptr);
  }
  const auto g = load_problem(cuda_problem("group_conv"));
  REQUIRE(g.pytorch->attributes.size() == 2);
  CHECK(g.pytorch->attributes[0] == std::pair<std::string, std::string>{"G", "groups"});
  CHECK(*g.pytorch->view("w") == std::vector<std::string>{"K", "C / G", "R", "R"});
  const auto s = load_problem(cuda_problem("sdpa_fp16"));
  CHECK(s.pytorch->compat_requires == "torch.nn.functional.scaled_dot_product_attention");
  CHECK(s.pytorch->file == (cuda_problem("sdpa_fp16") / "problem.json").lexically_normal().string());
}

TEST_CASE("pytorch declaration: the loader names the JSON path of every mistake") {
  kb_test::temp_dir dir("pytorch_decl");
  auto err = [&](std::string const& from, std::string const& to) { return load_error(dir, "softmax", from, to); };
  CHECK(err(R"("y": ["R", "C"])", R"("y": ["R", "C", 2])")
            .find("pytorch.views.y at shape 'smoke': [3, 257, 2] has 1542 elements, but problem.json's size of 'y' "
                  "(R * C) is 771") != std::string::npos);
  CHECK(err(R"("y": ["R", "C"])", R"("z": ["R", "C"])").find("pytorch.views.z: 'z' is no input or output") !=
        std::string::npos);
  CHECK(err(R"("y": ["R", "C"])", R"("y": ["R", "Q"])").find("pytorch.views.y[1]") != std::string::npos);
  CHECK(err(R"("x": ["R", "C"],)", "").find("pytorch.views: no view for tensor 'x'") != std::string::npos);
  CHECK(err(R"("y": ["R", "C"])", R"("y": ["R", 0])").find("pytorch.views.y[1]: expected a size expression") !=
        std::string::npos);
  CHECK(err(R"("function": "softmax",)", "").find("pytorch: missing field 'function'") != std::string::npos);
  CHECK(err(R"~("expression": "torch.softmax(x, dim=1)")~", R"~("expresion": "torch.softmax(x, dim=1)")~")
            .find("pytorch: unknown field 'expresion'") != std::string::npos);
  CHECK(err(R"~("torch.softmax(x, dim=1)")~", R"~("torch.softmax(x,\ndim=1)")~")
            .find("pytorch.expression: must be one line") != std::string::npos);
  CHECK(err(R"("attributes": {})", R"("attributes": {"Z": "zed"})")
            .find("pytorch.attributes.Z: 'Z' is not a dim of the problem") != std::string::npos);
  CHECK(err(R"("attributes": {})", R"("attributes": {"R": "x"})")
            .find("pytorch.attributes.R: 'x' is already the name of a tensor") != std::string::npos);
  // A file named by problem.json: its own path in the message, fields without the "pytorch." prefix.
  const auto decl_at = dir.path / "softmax";
  {
    auto text = slurp(cuda_problem("softmax") / "problem.json");
    const auto a = text.find("\"pytorch\": {");
    const auto b = text.find("\n  },\n", a);
    REQUIRE(b != std::string::npos);
    const std::string inline_decl = text.substr(a + 11, b + 4 - (a + 11));
    fs::remove_all(decl_at);
    fs::copy(cuda_problem("softmax"), decl_at, fs::copy_options::recursive);
    text.replace(a, b + 4 - a, "\"pytorch\": \"torch.json\"");
    std::ofstream(decl_at / "problem.json") << text;
    std::string msg;
    try {
      (void)load_problem(decl_at);
    } catch (error const& e) {
      msg = e.what();
    }
    CHECK(msg.find("pytorch: file 'torch.json' not found") != std::string::npos);
    std::string bad = inline_decl;
    bad.replace(bad.find(R"("y": ["R", "C"])"), 15, R"("y": ["C", "R", 3])");
    std::ofstream(decl_at / "torch.json") << bad;
    msg.clear();
    try {
      (void)load_problem(decl_at);
    } catch (error const& e) {
      msg = e.what();
    }
    CHECK(msg.find("torch.json (problem.json's \"pytorch\"): views.y at shape 'smoke'") != std::string::npos);
    std::ofstream(decl_at / "torch.json") << inline_decl;
    const auto p = load_problem(decl_at);
    REQUIRE(p.pytorch);
    CHECK(p.pytorch->expression == "torch.softmax(x, dim=1)");
    CHECK(p.pytorch->file == (decl_at / "torch.json").lexically_normal().string());
  }
}

TEST_CASE("measure_pytorch: no Python, no torch, turned off, or no declaration: unavailable, with the reason") {
  kb_test::temp_dir dir("pytorch_absent");
  const auto p = load_problem(cuda_problem("softmax"));
  {
    kb_test::scoped_env env("KERNELBRAIN_PYTHON", "none");
    const auto t = measure_pytorch(p, pytorch_options{});
    CHECK(t.status == "unavailable");
    CHECK(t.why == "turned off (KERNELBRAIN_PYTHON=none)");
  }
  {
    kb_test::scoped_env env("KERNELBRAIN_PYTHON", (dir.path / "no-such-python").string());
    const auto t = measure_pytorch(p, pytorch_options{});
    CHECK(t.status == "unavailable");
    CHECK(t.why.find("KERNELBRAIN_PYTHON='") != std::string::npos);
    CHECK(t.why.find("is not an executable file") != std::string::npos);
  }
  {
    kb_test::scoped_env env("KERNELBRAIN_PYTHON", std::nullopt);
    kb_test::scoped_env path("PATH", dir.path.string());  // no python3 there
    const auto t = measure_pytorch(p, pytorch_options{});
    CHECK(t.status == "unavailable");
    CHECK(t.why.find("no python3 on PATH") != std::string::npos);
  }
  auto undeclared = p;
  undeclared.pytorch.reset();
  CHECK(measure_pytorch(undeclared, pytorch_options{}).why.find("declares no PyTorch computation") !=
        std::string::npos);
  // The real script under a Python whose "import torch" fails (a shadowing module on PYTHONPATH, so that
  // the test means the same on a machine that has torch).
  std::string python3;
  for (char const* c : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"})
    if (fs::exists(c)) python3 = c;
  if (python3.empty()) return;  // nothing more to run without a Python
  fs::create_directories(dir.path / "shadow" / "torch");
  std::ofstream(dir.path / "shadow" / "torch" / "__init__.py") << "raise ImportError('no torch in this test')\n";
  kb_test::scoped_env pp("PYTHONPATH", (dir.path / "shadow").string());
  auto o = quick(python3);
  const auto t = measure_pytorch(p, o);
  CHECK(t.status == "unavailable");
  CHECK(t.why == "cannot import torch (ImportError: no torch in this test)");
  CHECK(t.python.find(python3) == 0);
  CHECK(t.shapes.empty());
}

TEST_CASE("measure_pytorch: the request holds each shape's sizes, and the result is read back by shape") {
  kb_test::temp_dir dir("pytorch_fake");
  const auto p = load_problem(cuda_problem("group_conv"));
  // Stands in for Python: keeps the request, writes a result for two shapes.
  const auto py = fake_python(dir, "py-ok", "cp \"$2\" " + (dir.path / "request.json").string() + R"(
cat > "$3" <<'EOF'
{"status": "measured", "why": "", "python": "3.12.3", "torch": "2.11.0", "cuda": "12.8", "driver": 12080,
 "device": "NVIDIA H100 80GB HBM3", "settings": "matmul.allow_tf32=False", "device_seconds": 1.5,
 "shapes": [{"name": "odd_grouped", "checked": true, "eager_ok": false, "eager_rel_err": 0.002,
             "eager_detail": "max |error| 0.002, bound 0.0001", "compile_ok": true, "compile_rel_err": 1e-7},
            {"name": "dw_16x3x256x256", "checked": false, "eager_s": 0.00025, "compile_s": 0.0002},
            {"name": "resnext_32x256x56x56_g32", "checked": false, "eager_s": 0.001, "compile_error": "RuntimeError: inductor"}]}
EOF)");
  const auto t = measure_pytorch(p, quick(py));
  CHECK(t.status == "measured");
  CHECK(t.torch_version == "2.11.0");
  CHECK(t.driver_version == 12080);
  CHECK(t.device_seconds == 1.5);
  CHECK(t.samples == 30);
  CHECK(t.python == py.string() + " (Python 3.12.3)");
  REQUIRE(t.shapes.size() == 3);
  CHECK(t.shapes[0].checked);
  CHECK(!t.shapes[0].eager_ok);
  CHECK(t.shapes[0].detail.find("bound") != std::string::npos);
  CHECK(t.shapes[1].index == p.shape_index("dw_16x3x256x256"));
  CHECK(t.at_index(p.shape_index("resnext_32x256x56x56_g32"))->compile_error == "RuntimeError: inductor");
  CHECK(t.find("resnext_32x256x56x56_g32")->eager_seconds == 0.001);

  const auto req = boost::json::parse(slurp(dir.path / "request.json")).as_object();
  CHECK(req.at("expression").as_string() ==
        "torch.nn.functional.conv2d(x, w, stride=1, padding=padding, groups=groups)");
  CHECK(req.at("samples").as_int64() == 30);
  std::size_t timed = 0, checked = 0;
  for (auto const& sv : req.at("shapes").as_array()) {
    auto const& s = sv.as_object();
    auto const& shape = p.shapes[p.shape_index(std::string(s.at("name").as_string()))];
    CAPTURE(shape.name);
    CHECK(s.at("timed").as_bool() == pytorch_timed_shape(shape));
    CHECK(s.at("check").as_bool() == (shape.name == "odd_grouped"));  // the first shape of tier odd
    timed += s.at("timed").as_bool() ? 1 : 0;
    checked += s.at("check").as_bool() ? 1 : 0;
    // w is [K, C / G, R, R] evaluated at the shape; the attributes by their argument names.
    auto const& w = s.at("sizes").at("w").as_array();
    CHECK(w.at(1).as_int64() == shape.dims.at("C") / shape.dims.at("G"));
    CHECK(s.at("attributes").at("groups").as_int64() == shape.dims.at("G"));
  }
  CHECK(timed >= 2);
  CHECK(checked == 1);
}

TEST_CASE("measure_pytorch: a crash, a hang and a malformed result each say what happened") {
  kb_test::temp_dir dir("pytorch_fail");
  const auto p = load_problem(cuda_problem("softmax"));
  {
    const auto t =
        measure_pytorch(p, quick(fake_python(dir, "py-crash", "echo 'CUDA error: out of memory' >&2; exit 3")));
    CHECK(t.status == "failed");
    CHECK(t.why.find("exited with status 3") != std::string::npos);
    CHECK(t.why.find("CUDA error: out of memory") != std::string::npos);
  }
  {
    const auto t = measure_pytorch(p, quick(fake_python(dir, "py-garbage", "echo '{\"status\": 7' > \"$3\"")));
    CHECK(t.status == "failed");
    CHECK(t.why.find("could not be read") != std::string::npos);
  }
  {
    const auto t = measure_pytorch(
        p, quick(fake_python(dir, "py-other-shape",
                             R"(echo '{"status": "measured", "shapes": [{"name": "nope", "eager_s": 1}]}' > "$3")")));
    CHECK(t.status == "failed");
    CHECK(t.why.find("shape 'nope'") != std::string::npos);
  }
  {
    // Writes what it measured, then hangs: killed at the time limit, the measured shape kept.
    auto o = quick(fake_python(
        dir, "py-hang",
        R"(echo '{"status": "measured", "torch": "2.11.0", "shapes": [{"name": "4096x65536", "eager_s": 0.001, "compile_s": 0.0009}]}' > "$3"
sleep 60)"));
    o.timeout = 1.5;
    const auto start = std::chrono::steady_clock::now();
    const auto t = measure_pytorch(p, o);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(took < 10);
    CHECK(t.status == "measured");
    CHECK(t.why.find("stopped at the time limit") != std::string::npos);
    REQUIRE(t.shapes.size() == 1);
    CHECK(t.shapes[0].compile_seconds == 0.0009);
  }
  {
    auto o = quick(fake_python(dir, "py-silent", "sleep 60"));
    o.timeout = 1;
    const auto t = measure_pytorch(p, o);
    CHECK(t.status == "failed");
    CHECK(t.why.find("timed out after 1 s before any result") != std::string::npos);
  }
}

TEST_CASE("pytorch timing: journaled with the baseline and read back exactly, and a resumed run gets it") {
  kb_test::temp_dir dir("pytorch_journal");
  baseline b;
  b.seconds = {1e-3, 2e-3};
  b.weights = {0.5, 0.5};
  b.floor_seconds = {1e-4, 2e-4};
  pytorch_timing t;
  t.status = "measured";
  t.python = "/usr/bin/python3 (Python 3.12.3)";
  t.torch_version = "2.11.0";
  t.cuda_version = "12.8";
  t.driver_version = 12080;
  t.device = "NVIDIA H200";
  t.settings = "matmul.allow_tf32=False";
  t.samples = 30;
  t.device_seconds = 0.1 + 0.2;
  t.wall_seconds = 41.5;
  t.shapes.push_back(row("large", 1, 1.0 / 3, 0.25));
  auto odd = row("odd", 0, 0, 0);
  odd.checked = true;
  odd.eager_ok = false;
  odd.eager_rel_err = 2e-3;
  odd.detail = "max |error| 0.002";
  t.shapes.push_back(odd);
  b.pytorch = t;
  const auto file = dir.path / "run.jsonl";
  {
    jsonl_journal j(file, run_header{"softmax", "default", 1, "cuda/v1", "smoke,confirm/x"}, budget{},
                    journal_mode::create);
    j.write_baseline(b);
  }
  const auto c = read_journal(file);
  REQUIRE(c.reference);
  REQUIRE(c.reference->pytorch);
  auto const& r = *c.reference->pytorch;
  CHECK(r.status == "measured");
  CHECK(r.device_seconds == t.device_seconds);  // bit for bit
  CHECK(r.shapes.size() == 2);
  CHECK(r.shapes[0].eager_seconds == 1.0 / 3);
  CHECK(r.shapes[0].index == 1);
  CHECK(!r.shapes[1].eager_ok);
  CHECK(r.shapes[1].detail == "max |error| 0.002");
  CHECK(r.python == t.python);
  // What a resumed search starts from: the baseline with PyTorch's times, so it measures neither again.
  const auto resumed = load_journal(file);
  REQUIRE(resumed.reference);
  REQUIRE(resumed.reference->pytorch);
  CHECK(resumed.reference->pytorch->find("large")->compile_seconds == 0.25);
  // A journal line with a status the format does not have is refused, naming the line.
  {
    auto text = slurp(file);
    const auto at = text.find("\"status\":\"measured\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, 19, "\"status\":\"guessed\"");
    std::ofstream(dir.path / "bad.jsonl") << text;
    std::string msg;
    try {
      (void)read_journal(dir.path / "bad.jsonl");
    } catch (error const& e) {
      msg = e.what();
    }
    CHECK(msg.find("line 2") != std::string::npos);
    CHECK(msg.find("guessed") != std::string::npos);
  }
}

TEST_CASE("compare_with_pytorch: geometric mean, range and where the kernel loses") {
  pytorch_timing t;
  t.status = "measured";
  auto odd = row("odd", 2, 0, 0);
  odd.checked = true;
  odd.eager_ok = false;
  t.shapes = {row("a", 0, 2e-3, 1e-3), row("b", 1, 1e-3, 0), odd};
  // The kernel's timings by shape index: a, b, odd, and a shape PyTorch has no row for.
  std::vector<shape_timing> kernel;
  for (auto [index, median] : {std::pair<std::size_t, double>{0, 1e-3}, {1, 2e-3}, {2, 1e-5}, {7, 1.0}}) {
    shape_timing k;
    k.shape = index;
    k.stats.median = median;
    kernel.push_back(k);
  }
  const auto c = compare_with_pytorch(t, kernel);
  CHECK(c.eager.shapes == 2);
  CHECK(c.eager.geomean == doctest::Approx(1.0));  // 2x and 0.5x
  CHECK(c.eager.min == doctest::Approx(0.5));
  CHECK(c.eager.max == doctest::Approx(2.0));
  CHECK(c.eager.slower == 1);
  CHECK(c.eager.out_of_tolerance);
  CHECK(c.compile.shapes == 1);
  CHECK(c.compile.geomean == doctest::Approx(1.0));
  CHECK(c.compile.slower == 0);
  CHECK(!c.compile.out_of_tolerance);
}

TEST_CASE("the measuring script is valid Python (compiled by python3 where there is one)") {
  std::string python3;
  for (char const* c : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"})
    if (fs::exists(c)) python3 = c;
  if (python3.empty()) return;
  kb_test::temp_dir dir("pytorch_script");
  std::ofstream(dir.path / "s.py") << detail::pytorch_script;
  const std::string cmd = python3 + " -m py_compile " + (dir.path / "s.py").string() + " 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST_CASE("measure_pytorch: the real script on CPU torch, where python3 has torch (CI installs python3-torch)") {
  if (std::system("python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    MESSAGE("no python3 with torch here: the script's CPU path is not run");
    return;
  }
  auto p = load_problem(cuda_problem("softmax"));
  // Small shapes: the script's path, not the problem's sizes, is under test.
  std::vector<shape> small;
  for (auto s : p.shapes) {
    s.dims = {{"R", s.tier == "odd" ? 5 : 64},
              {"C", s.tier == "odd" ? 333 : 1000 + static_cast<std::int64_t>(small.size())}};
    small.push_back(s);
  }
  p.shapes = small;
  pytorch_options o;
  o.python = "python3";
  o.device = "cpu";
  o.samples = 5;
  o.compile = false;  // inductor's C++ compile takes minutes on a small machine
  o.timeout = 240;
  const auto t = measure_pytorch(p, o);
  INFO(t.why);
  REQUIRE(t.status == "measured");
  CHECK(t.device == "cpu");
  CHECK(!t.torch_version.empty());
  std::size_t timed = 0, checked = 0;
  for (auto const& s : t.shapes) {
    CAPTURE(s.shape);
    auto const& ps = p.shapes[s.index];
    if (pytorch_timed_shape(ps)) {
      CHECK(s.eager_seconds > 0);
      ++timed;
    }
    if (s.checked) {
      CHECK(s.eager_ok);  // torch.softmax in float32 against float64, within the problem's tolerance
      CHECK(s.eager_rel_err < 1e-4);
      ++checked;
    }
    CHECK(s.compile_seconds == 0);
  }
  CHECK(timed >= 2);
  CHECK(checked >= 1);
}
