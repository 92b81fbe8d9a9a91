// Problems as data: the problem.json loader (a well-formed directory, and a clear error for every
// malformed one) and the shipped host problems in examples/problems/ (each loads; each reference
// agrees with a float64 computation written here; every catalogue template compiles at a sample
// of its points and matches the reference at the smoke and odd shapes).
//
// The shipped references and templates are our own code, so this test compiles them with the
// system compiler and dlopens them in the test process. Candidates from a search never run in the
// search process: that is the host backend's job (a worker process), not this test's.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <kernelbrain/evaluate/host_abi.h>
#include <kernelbrain/backends/host/source_policy.hpp>
#include <kernelbrain/core/expr.hpp>
#include <kernelbrain/core/rng.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include "temp_dir.hpp"

extern char** environ;

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

// ---- files ---------------------------------------------------------------------------------------

using kb_test::temp_dir;

void write_file(fs::path const& p, std::string_view text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::string read_file(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

fs::path shipped(std::string_view name) { return fs::path(KB_SOURCE_DIR) / "examples" / "problems" / name; }

// ---- the loader ----------------------------------------------------------------------------------

/// A small, well-formed problem; the error cases below each break one thing in it.
constexpr std::string_view base_json = R"({
  "name": "scale",
  "backend": "host",
  "signature": "y = 2 x",
  "dims": ["N", "M"],
  "inputs": [{"name": "x", "size": "N * M", "distribution": "uniform"}],
  "outputs": [{"name": "y", "size": "N * M"}],
  "shapes": [
    {"name": "small", "dims": {"N": 4, "M": 8}, "tier": "smoke"},
    {"name": "odd", "dims": {"N": 5, "M": 9}, "tier": "odd", "weight": 2}
  ],
  "tolerance": {"rtol": 1e-4, "atol": 1e-5},
  "cost": {"bytes": "8 * N * M", "flops": "N * M"},
  "machine": {"bytes_per_second": 1e11},
  "reference": "ref.cpp",
  "seed": "seed.cpp",
  "catalogue": [
    {"name": "plain", "prose": "the obvious loop"},
    {"name": "unrolled", "prose": "unroll by U", "template": "templates/t.cpp",
     "parameters": {"U": [1, 2, 4, 8], "V": [1, 2]}, "constraints": ["U * V <= 8"]}
  ]
}
)";
constexpr std::string_view base_template = "// unrolled by ${U}, ${V} ways\n";

/// `base_json` with the first `from` replaced by `to`; `from` must be there, or the case tests nothing.
std::string mutate(std::string_view from, std::string_view to, std::string_view text = base_json) {
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string_view::npos, "test bug: '" << from << "' is not in the base problem");
  std::string out(text);
  out.replace(at, from.size(), to);
  return out;
}

/// A problem directory with `json` as problem.json and the base problem's other files.
void write_problem(fs::path const& dir, std::string_view json, std::string_view templ = base_template) {
  write_file(dir / "problem.json", json);
  write_file(dir / "ref.cpp", "// reference\n");
  write_file(dir / "seed.cpp", "// seed\n");
  write_file(dir / "templates" / "t.cpp", templ);
}

/// The message load_problem throws for `dir`, or "<loaded>" when it does not throw.
std::string load_error(fs::path const& dir) {
  try {
    (void)load_problem(dir);
  } catch (error const& e) {
    return e.what();
  }
  return "<loaded>";
}

std::string error_for(std::string_view json, std::string_view templ = base_template) {
  temp_dir d;
  write_problem(d.path, json, templ);
  return load_error(d.path);
}

/// Every message must name the file, and each expected part.
void check_message(std::string const& msg, std::initializer_list<std::string_view> parts) {
  CHECK_MESSAGE(contains(msg, "problem.json"), msg);
  for (auto part : parts) CHECK_MESSAGE(contains(msg, part), "expected '" << part << "' in: " << msg);
}

// ---- compiling and running host kernels ----------------------------------------------------------

/// Runs argv[0] (looked up on PATH) with stdout and stderr to `log`; returns the exit status.
int run_process(std::vector<std::string> const& argv, fs::path const& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (auto const& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct compile_job {
  std::string label;  ///< what it is, for messages
  std::string source;
  fs::path so;          ///< where the shared object goes
  std::string failure;  ///< empty when it compiled; the compiler's output otherwise
};

/// Compiles every job to a shared object with the system compiler ($KB_TEST_CXX or c++) and the host
/// backend's default flags, at most two at a time (CI machines have two cores). Warnings are errors:
/// a warning in a shipped template is as likely a bug as in our own code.
void compile_all(std::vector<compile_job>& jobs) {
  const char* env = std::getenv("KB_TEST_CXX");
  const std::string cxx = env && *env ? env : "c++";
  const std::string include = std::string("-I") + KB_SOURCE_DIR + "/include";
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      auto& j = jobs[i];
      const auto src = fs::path(j.so).replace_extension(".cpp");
      const auto log = fs::path(j.so).replace_extension(".log");
      {
        std::ofstream out(src, std::ios::binary);
        out << j.source;
      }
      const int rc = run_process({cxx, "-std=c++20", "-O3", "-march=native", "-fPIC", "-shared", "-pthread", "-Wall",
                                  "-Wextra", "-Werror", include, "-o", j.so.string(), src.string()},
                                 log);
      if (rc != 0) j.failure = "exit status " + std::to_string(rc) + ":\n" + read_file(log).substr(0, 3000);
    }
  };
  std::thread second(worker);
  worker();
  second.join();
}

/// A dlopened kernel; closed when it goes out of scope.
class kernel_library {
 public:
  explicit kernel_library(fs::path const& so) : handle_(dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (!handle_) {
      const char* e = dlerror();
      why_ = e ? e : "dlopen failed";
      return;
    }
    fn_ = reinterpret_cast<kb_kernel_fn>(dlsym(handle_, "kb_kernel"));
    if (!fn_) why_ = "no kb_kernel symbol";
  }
  kernel_library(kernel_library const&) = delete;
  kernel_library& operator=(kernel_library const&) = delete;
  ~kernel_library() {
    if (handle_) dlclose(handle_);
  }
  [[nodiscard]] kb_kernel_fn fn() const { return fn_; }
  [[nodiscard]] bool ok() const { return fn_ != nullptr; }
  [[nodiscard]] std::string const& why() const { return why_; }

 private:
  void* handle_ = nullptr;
  kb_kernel_fn fn_ = nullptr;
  std::string why_;
};

std::int64_t elements(tensor_spec const& t, shape const& s) {
  return evaluate_expression(t.size, [&s](std::string_view n) -> std::optional<std::int64_t> {
    auto it = s.dims.find(std::string(n));
    if (it == s.dims.end()) return std::nullopt;
    return it->second;
  });
}

using tensors = std::vector<std::vector<float>>;

tensors make_inputs(problem const& p, shape const& s, std::uint64_t seed) {
  rng r(seed);
  tensors in;
  for (auto const& t : p.inputs) {
    std::vector<float> v(static_cast<std::size_t>(elements(t, s)));
    for (auto& e : v) {
      if (t.distribution == "uniform")
        e = static_cast<float>(2 * r.uniform() - 1);
      else if (t.distribution == "positive")
        e = static_cast<float>(0.01 + r.uniform());
      else
        e = static_cast<float>(r.normal());
    }
    in.push_back(std::move(v));
  }
  return in;
}

std::vector<long long> dims_of(problem const& p, shape const& s) {
  std::vector<long long> d;
  for (auto const& n : p.dim_order) d.push_back(s.dims.at(n));
  return d;
}

/// Runs `fn` on `in` with every output poisoned with NaN first; returns the outputs.
tensors run_kernel(kb_kernel_fn fn, problem const& p, shape const& s, tensors const& in) {
  tensors out;
  for (auto const& t : p.outputs)
    out.emplace_back(static_cast<std::size_t>(elements(t, s)), std::numeric_limits<float>::quiet_NaN());
  std::vector<const float*> ins;
  for (auto const& v : in) ins.push_back(v.data());
  std::vector<float*> outs;
  for (auto& v : out) outs.push_back(v.data());
  const auto dims = dims_of(p, s);
  const kb_args args{ins.data(),
                     outs.data(),
                     dims.data(),
                     static_cast<int>(ins.size()),
                     static_cast<int>(outs.size()),
                     static_cast<int>(dims.size())};
  fn(&args);
  return out;
}

/// Empty when every element of `out` is finite and within |out - ref| <= atol + rtol * max|ref|
/// (the problem's tolerance); otherwise the worst element.
std::string compare(std::vector<float> const& out, std::vector<float> const& ref, tolerance const& tol) {
  if (out.size() != ref.size()) return "size " + std::to_string(out.size()) + " != " + std::to_string(ref.size());
  double scale = 0;
  for (float v : ref) scale = std::max(scale, std::abs(static_cast<double>(v)));
  const double bound = tol.atol + tol.rtol * scale;
  std::size_t worst = 0;
  double worst_err = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::isfinite(out[i]) ? std::abs(static_cast<double>(out[i]) - ref[i])
                                             : std::numeric_limits<double>::infinity();
    if (err > worst_err) {
      worst_err = err;
      worst = i;
    }
  }
  if (worst_err <= bound) return {};
  std::ostringstream s;
  s << "element " << worst << ": got " << out[worst] << ", want " << ref[worst] << " (error " << worst_err << ", bound "
    << bound << ")";
  return s.str();
}

// ---- float64 computations, written independently of the shipped references -----------------------

/// softmax over dim 1 in long double, as exp(x - logsumexp(x)).
std::vector<double> softmax_exact(std::vector<long long> const& d, tensors const& in) {
  const long long rows = d[0], cols = d[1];
  std::vector<double> y(static_cast<std::size_t>(rows * cols));
  for (long long r = 0; r < rows; ++r) {
    const float* x = in[0].data() + r * cols;
    const long double m = *std::max_element(x, x + cols);
    long double sum = 0;
    for (long long c = 0; c < cols; ++c) sum += std::exp(static_cast<long double>(x[c]) - m);
    const long double lse = m + std::log(sum);
    for (long long c = 0; c < cols; ++c)
      y[static_cast<std::size_t>(r * cols + c)] = static_cast<double>(std::exp(static_cast<long double>(x[c]) - lse));
  }
  return y;
}

/// RMS norm over C of (B, C, H, W), eps 1e-5, in long double.
std::vector<double> rmsnorm_exact(std::vector<long long> const& d, tensors const& in) {
  const long long batch = d[0], channels = d[1], hw = d[2] * d[3];
  std::vector<double> y(in[0].size());
  for (long long b = 0; b < batch; ++b)
    for (long long p = 0; p < hw; ++p) {
      long double sq = 0;
      for (long long c = 0; c < channels; ++c) {
        const long double v = in[0][static_cast<std::size_t>((b * channels + c) * hw + p)];
        sq += v * v;
      }
      const long double rms = std::sqrt(sq / channels + 1e-5L);
      for (long long c = 0; c < channels; ++c) {
        const auto i = static_cast<std::size_t>((b * channels + c) * hw + p);
        y[i] = static_cast<double>(in[0][i] / rms);
      }
    }
  return y;
}

/// y = A x in long double.
std::vector<double> matvec_exact(std::vector<long long> const& d, tensors const& in) {
  const long long rows = d[0], cols = d[1];
  std::vector<double> y(static_cast<std::size_t>(rows));
  for (long long r = 0; r < rows; ++r) {
    long double s = 0;
    for (long long c = 0; c < cols; ++c)
      s += static_cast<long double>(in[0][static_cast<std::size_t>(r * cols + c)]) * in[1][static_cast<std::size_t>(c)];
    y[static_cast<std::size_t>(r)] = static_cast<double>(s);
  }
  return y;
}

using exact_fn = std::function<std::vector<double>(std::vector<long long> const&, tensors const&)>;
const std::map<std::string, exact_fn> exact_computations = {
    {"softmax", softmax_exact}, {"rmsnorm", rmsnorm_exact}, {"matvec", matvec_exact}};

const std::vector<std::string> shipped_problems = {"softmax", "rmsnorm", "matvec"};

/// Empty when the host backend's static source policy (the gate's first check) admits `source`.
std::string policy_rejection(std::string const& source) {
  const auto v = inspect_host_source(source, host_source_policy{});
  return v.passed() ? std::string() : v.detail;
}

/// A process-wide directory for compiled kernels, removed at exit.
fs::path const& build_dir() {
  static temp_dir dir;
  return dir.path;
}

/// The reference of `p` compiled once per process (two test cases use it).
fs::path const& compiled_reference(problem const& p) {
  static std::mutex m;
  static std::map<std::string, fs::path> done;
  std::lock_guard lock(m);
  auto it = done.find(p.name);
  if (it != done.end()) return it->second;
  std::vector<compile_job> job{
      {p.name + " reference", p.reference_source, build_dir() / (p.name + "-reference.so"), {}}};
  compile_all(job);
  REQUIRE_MESSAGE(job[0].failure.empty(), job[0].label << " does not compile: " << job[0].failure);
  return done.emplace(p.name, job[0].so).first->second;
}

/// Points of a template's space to compile: its central point and three random ones (all of them
/// with KB_TEST_ALL_POINTS=1, for a thorough local check).
std::vector<parameters> sample_points(parameter_space const& space, std::uint64_t seed) {
  if (const char* all = std::getenv("KB_TEST_ALL_POINTS"); all && std::string(all) == "1") return space.enumerate();
  std::vector<parameters> out;
  if (auto c = central_point(space)) out.push_back(*c);
  rng r(seed);
  for (int i = 0; i < 3; ++i)
    if (auto p = random_point(space, r); p && std::find(out.begin(), out.end(), *p) == out.end()) out.push_back(*p);
  return out;
}

bool is_check_shape(shape const& s) { return is_correctness_shape(s); }

}  // namespace

// ==================================================================================================

TEST_CASE("adversarial input cases: each kind parses with and without a value, and prints back") {
  for (std::string text :
       {"scaled", "scaled:8", "offset:-1000", "constant:0", "ties:4", "spikes:1e6", "signed_zeros"}) {
    INFO(text);
    const auto c = input_case::parse(text);
    REQUIRE(c.has_value());
    CHECK(input_case::parse(c->str()).has_value());
    CHECK(input_case::parse(c->str())->value == c->value);
    CHECK(input_case::parse(c->str())->what == c->what);
  }
  CHECK(input_case::parse("scaled")->value == 64);
  CHECK(input_case::parse("offset")->value == 1000);
  for (std::string bad :
       {"", "scaled:", "scaled:x", "scaled:1e40", "ties:-1", "ties:0", "signed_zeros:1", "Scaled", "scaled:nan"}) {
    INFO(bad);
    CHECK_FALSE(input_case::parse(bad).has_value());
  }
  auto positive = default_cases("positive");
  CHECK(std::none_of(positive.begin(), positive.end(),
                     [](auto const& c) { return c.what == input_case::kind::signed_zeros; }));
}

TEST_CASE("load_problem reads a well-formed problem directory") {
  temp_dir d;
  write_problem(d.path, base_json);
  const auto p = load_problem(d.path);
  CHECK(p.name == "scale");
  CHECK(p.backend == "host");
  CHECK(p.signature == "y = 2 x");
  CHECK(p.dim_order == std::vector<std::string>{"N", "M"});
  REQUIRE(p.inputs.size() == 1);
  CHECK(p.inputs[0].name == "x");
  CHECK(p.inputs[0].size == "N * M");
  CHECK(p.inputs[0].distribution == "uniform");
  REQUIRE(p.outputs.size() == 1);
  CHECK(p.outputs[0].distribution == "normal");  // the default; outputs take no distribution
  // Adversarial cases by default: large, constant, ties and, where zero is a valid value, signed zeros.
  std::vector<std::string> cases;
  for (auto const& c : p.inputs[0].adversarial) cases.push_back(c.str());
  CHECK(cases == std::vector<std::string>{"scaled:64", "ties:2", "signed_zeros"});
  CHECK(p.outputs[0].adversarial.empty());
  REQUIRE(p.shapes.size() == 2);
  CHECK(p.shapes[0].name == "small");
  CHECK(p.shapes[0].dims.at("N") == 4);
  CHECK(p.shapes[0].tier == "smoke");
  CHECK(p.shapes[0].weight == 1.0);
  CHECK(p.shapes[1].weight == 2.0);
  CHECK(p.shapes[0].bytes == 8 * 4 * 8);  // the cost model, evaluated per shape
  CHECK(p.shapes[1].bytes == 8 * 5 * 9);
  CHECK(p.shapes[1].flops == 5 * 9);
  CHECK(p.tol.rtol == 1e-4);
  CHECK(p.tol.atol == 1e-5);
  CHECK(p.machine.bytes_per_second == 1e11);
  CHECK(p.machine.flops_per_second == 0);  // left out: unknown
  CHECK(p.reference_source == "// reference\n");
  REQUIRE(p.seed_source);
  CHECK(*p.seed_source == "// seed\n");
  REQUIRE(p.catalogue.size() == 2);
  CHECK(p.catalogue[0].name == "plain");
  CHECK_FALSE(p.catalogue[0].templ);  // prose only
  REQUIRE(p.catalogue[1].templ);
  auto const& t = *p.catalogue[1].templ;
  CHECK(t.source == base_template);
  REQUIRE(t.space.params.size() == 2);
  CHECK(t.space.params[0].name == "U");  // file order: neighbours and mixed-radix order follow it
  CHECK(t.space.params[0].values == std::vector<std::int64_t>{1, 2, 4, 8});
  CHECK(t.space.constraints == std::vector<std::string>{"U * V <= 8"});
  CHECK(t.space.enumerate().size() == 7);
  CHECK(fs::path(p.directory) == fs::absolute(d.path).lexically_normal());
  CHECK(instantiate(p.catalogue[1], {{"U", 4}, {"V", 2}}, "test").source == "// unrolled by 4, 2 ways\n");

  // A description is free text for people.
  write_problem(d.path, mutate(R"("name": "scale",)", R"("name": "scale", "description": "doubles x",)"));
  CHECK(load_problem(d.path).name == "scale");
  write_problem(d.path, base_json);

  // The path of problem.json itself works too; comments are allowed; seed and catalogue are optional.
  CHECK(load_problem(d.path / "problem.json").name == "scale");
  std::string minimal = mutate("\"seed\": \"seed.cpp\",", "// no seed\n");
  minimal = mutate(R"("reference": "ref.cpp",)", R"("reference": "ref.cpp")", minimal);
  const auto cat = minimal.find(R"(  "catalogue")");
  REQUIRE(cat != std::string::npos);
  minimal = minimal.substr(0, cat) + "}\n";
  write_problem(d.path, minimal);
  const auto q = load_problem(d.path);
  CHECK_FALSE(q.seed_source);
  CHECK(q.catalogue.empty());

  // A launch plan may be structured JSON: it is kept as JSON text, and its placeholders count as uses.
  write_problem(
      d.path,
      mutate(R"("template": "templates/t.cpp",)",
             R"J("template": "templates/t.cpp", "launch": {"grid": ["ceil_div(N, ${U})", 1], "block": [128]},)J"));
  const auto l = load_problem(d.path);
  CHECK(instantiate(l.catalogue[1], {{"U", 4}, {"V", 2}}, "test").launch ==
        R"J({"grid":["ceil_div(N, 4)",1],"block":[128]})J");
  write_problem(d.path, mutate(R"("template": "templates/t.cpp",)",
                               R"("template": "templates/t.cpp", "launch": {"grid": "${Z}"},)"));
  check_message(load_error(d.path), {"catalogue[1].launch: uses ${Z}, which is not one of its parameters (U, V)"});
  write_problem(d.path, mutate(R"("template": "templates/t.cpp",)", R"("launch": "grid ${U} ${V}",)"), "// fixed\n");
  CHECK(load_problem(d.path).catalogue[1].templ->launch == "grid ${U} ${V}");
}

TEST_CASE("load_problem: a missing directory or problem.json, or text that is not JSON") {
  temp_dir d;
  check_message(load_error(d.path / "nowhere"), {"does not exist"});
  check_message(load_error(d.path), {"not found"});

  SUBCASE("a syntax error gives its line and column") {
    write_file(d.path / "problem.json", "{\n  \"name\": \"x\",\n  \"dims\": [1, 2,, 3]\n}\n");
    check_message(load_error(d.path), {"not valid JSON", "line 3, column 17"});
  }
  SUBCASE("truncated") { check_message(error_for(base_json.substr(0, base_json.size() - 3)), {"not valid JSON"}); }
  SUBCASE("text after the object") { check_message(error_for(std::string(base_json) + "x"), {"not valid JSON"}); }
  SUBCASE("a key given twice") {
    check_message(error_for(mutate(R"("backend": "host",)", R"("backend": "host", "backend": "cuda",)")),
                  {"duplicate key 'backend'", "line 3"});
  }
  SUBCASE("not an object") { check_message(error_for("[1, 2]"), {"top level must be an object", "an array"}); }
}

TEST_CASE("load_problem names the file and the field of every malformed part") {
  struct bad_case {
    std::string_view from, to;
    std::vector<std::string_view> expect;
  };
  const bad_case cases[] = {
      // missing fields
      {"\"name\": \"scale\",", "", {"problem.json: missing field 'name'"}},
      {R"("rtol": 1e-4, "atol": 1e-5)", R"("rtol": 1e-4)", {"tolerance: missing field 'atol'"}},
      {R"({"name": "y", "size": "N * M"})", R"({"name": "y"})", {"outputs[0]: missing field 'size'"}},
      {R"("tier": "smoke")", R"("weight": 1)", {"shapes[0]: missing field 'tier'"}},
      {R"({"name": "plain", "prose": "the obvious loop"})",
       R"({"name": "plain"})",
       {"catalogue[0]: missing field 'prose'"}},
      // wrong types
      {R"("weight": 2)", R"("weight": "2")", {"shapes[1].weight: expected a number, found a string"}},
      {R"({"N": 4, "M": 8})", R"({"N": 4.5, "M": 8})", {"shapes[0].dims.N: expected an integer"}},
      {R"("name": "x")", R"("name": 3)", {"inputs[0].name: expected a string, found an integer"}},
      {R"("dims": ["N", "M"])", R"("dims": "N, M")", {"dims: expected an array, found a string"}},
      {R"({"bytes": "8 * N * M", "flops": "N * M"})", R"("8 * N * M")", {"cost: expected an object, found a string"}},
      {R"("U": [1, 2, 4, 8])", R"("U": [1, 2, "4", 8])", {"catalogue[1].parameters.U[2]: expected an integer"}},
      {R"(["U * V <= 8"])", R"("U * V <= 8")", {"catalogue[1].constraints: expected an array"}},
      // unknown fields: typos are rejected, with the known names
      {R"("shapes": [)",
       R"("shapess": [)",
       {"problem.json: unknown field 'shapess'", "did you mean 'shapes'?",
        "known: name, backend, signature, description"}},
      {R"("tier": "smoke")",
       R"("tier": "smoke", "wieght": 1)",
       {"shapes[0]: unknown field 'wieght'", "did you mean 'weight'?"}},
      {R"({"name": "y", "size": "N * M"})",
       R"({"name": "y", "size": "N * M", "distribution": "normal"})",
       {"outputs[0]: unknown field 'distribution'"}},
      {R"("rtol": 1e-4,)", R"("rtol": 1e-4, "rtoll": 1,)", {"tolerance: unknown field 'rtoll'"}},
      // adversarial input cases
      {R"("distribution": "uniform")",
       R"("distribution": "uniform", "adversarial": ["scaled:64", "hot"])",
       {"inputs[0].adversarial[1]: 'hot' is not a case", "signed_zeros"}},
      {R"("distribution": "uniform")",
       R"("distribution": "uniform", "adversarial": ["ties:0"])",
       {"inputs[0].adversarial[0]: 'ties:0' is not a case"}},
      {R"("distribution": "uniform")",
       R"("distribution": "uniform", "adversarial": ["scaled:1e999"])",
       {"inputs[0].adversarial[0]: 'scaled:1e999' is not a case"}},
      {R"("distribution": "uniform")",
       R"("distribution": "uniform", "adversarial": ["signed_zeros:3"])",
       {"inputs[0].adversarial[0]: 'signed_zeros:3' is not a case"}},
      {R"("distribution": "uniform")",
       R"("distribution": "positive", "adversarial": ["signed_zeros"])",
       {"inputs[0].adversarial[0]: signed_zeros would give a 'positive' input zeros"}},
      {R"("distribution": "uniform")",
       R"("distribution": "uniform", "adversarial": "scaled")",
       {"inputs[0].adversarial: expected an array"}},
      {R"("prose": "unroll by U",)",
       R"("prose": "unroll by U", "constraint": [],)",
       {"catalogue[1]: unknown field 'constraint'"}},
      // expressions over dims
      {R"("size": "N * M", "distribution")",
       R"("size": "N * K", "distribution")",
       {"inputs[0].size", "unknown symbol 'K'", "the dims are: N, M"}},
      {R"("flops": "N * M")", R"("flops": "N * Q")", {"cost.flops", "unknown symbol 'Q'"}},
      {R"("bytes": "8 * N * M")", R"("bytes": "8 * (N * M")", {"cost.bytes", "missing ')'"}},
      {R"({"name": "y", "size": "N * M"})",
       R"({"name": "y", "size": "N - 4"})",
       {"outputs[0].size", "is not >= 1", "'small'"}},
      // referenced files
      {R"("reference": "ref.cpp")", R"("reference": "nope.cpp")", {"reference: file 'nope.cpp' not found"}},
      {R"("seed": "seed.cpp")", R"("seed": "seeds/seed.cpp")", {"seed: file 'seeds/seed.cpp' not found"}},
      {R"("template": "templates/t.cpp")",
       R"("template": "templates/u.cpp")",
       {"catalogue[1].template: file 'templates/u.cpp' not found"}},
      // parameters and constraints
      {R"("U * V <= 8")", R"("U * <= 8")", {"catalogue[1].constraints[0]", "expression \"U * <= 8\""}},
      {R"("U * V <= 8")",
       R"("U * W <= 8")",
       {"catalogue[1].constraints[0]", "unknown symbol 'W'", "the parameters are: U, V"}},
      {R"("U * V <= 8")", R"("U * V > 100")", {"catalogue[1].constraints", "admit no point"}},
      {R"("V": [1, 2])", R"("V": [])", {"catalogue[1].parameters.V: has no values"}},
      {R"("U": [1, 2, 4, 8])", R"("U": [1, 2, 2, 8])", {"catalogue[1].parameters.U[2]: value 2 is listed twice"}},
      {R"("V": [1, 2])", R"("V": [1, 2], "N": [1])", {"catalogue[1].parameters.N", "already a dim"}},
      {R"({"U": [1, 2, 4, 8], "V": [1, 2]})", "{}", {"catalogue[1].parameters: lists no parameter"}},
      // shapes
      {R"({"name": "odd", "dims")",
       R"({"name": "small", "dims")",
       {"shapes[1].name: duplicate shape name 'small'", "shapes[0]"}},
      {R"("tier": "odd")", R"("tier": "Odd")", {"shapes[1].tier: unknown tier 'Odd'", "smoke, odd, wide"}},
      {R"({"N": 4, "M": 8})", R"({"N": 4})", {"shapes[0].dims: missing dim 'M'"}},
      {R"({"N": 4, "M": 8})", R"({"N": 4, "M": 8, "K": 2})", {"shapes[0].dims: unknown dim 'K'"}},
      {R"({"N": 4, "M": 8})", R"({"N": 0, "M": 8})", {"shapes[0].dims.N: must be >= 1"}},
      {R"("weight": 2)", R"("weight": 0)", {"shapes[1].weight: must be a finite number > 0"}},
      {R"("tier": "odd", "weight": 2)",
       R"("tier": "wide", "weight": 2)",
       {"shapes[1].weight: a 'wide' shape is never timed: it has no weight"}},
      {R"("tier": "smoke"},
    {"name": "odd", "dims": {"N": 5, "M": 9}, "tier": "odd", "weight": 2})",
       R"("tier": "wide"},
    {"name": "odd", "dims": {"N": 5, "M": 9}, "tier": "wide"})",
       {"shapes: every shape is of tier 'wide', which is never timed"}},
      {R"("shapes": [)", R"("shapes": [], "x": [)", {"unknown field 'x'"}},
      // the rest
      {R"("backend": "host")", R"("backend": "gpu")", {"backend: unknown backend 'gpu'", "cuda, host"}},
      {R"("backend": "host")", R"("backend": "host", "arch": "sm_80")", {"arch: 'sm_80' is not one of sm_90, sm_90a"}},
      {R"("rtol": 1e-4)", R"("rtol": -1e-4)", {"tolerance.rtol: must be a finite number >= 0"}},
      {R"("bytes_per_second": 1e11)",
       R"("bytes_per_second": null)",
       {"machine.bytes_per_second: expected a number, found null"}},
      {R"("dims": ["N", "M"])", R"("dims": ["N", "N"])", {"dims[1]: dim 'N' is listed twice"}},
      {R"("dims": ["N", "M"])", R"("dims": ["N", "2M"])", {"dims[1]: '2M' is not a name"}},
      {R"({"name": "y", "size")",
       R"({"name": "x", "size")",
       {"outputs[0].name: a tensor named 'x' is already declared"}},
      {R"({"name": "unrolled")", R"({"name": "plain")", {"catalogue[1].name: duplicate hint name 'plain'"}},
  };
  for (auto const& c : cases) {
    CAPTURE(c.to);
    const auto msg = error_for(mutate(c.from, c.to));
    CHECK_MESSAGE(contains(msg, "problem.json"), msg);
    for (auto part : c.expect) CHECK_MESSAGE(contains(msg, part), "expected '" << part << "' in: " << msg);
  }

  SUBCASE("the template and its parameters must agree") {
    check_message(error_for(base_json, "// ${U} ${V} ${W}\n"),
                  {"catalogue[1].template: uses ${W}, which is not one of its parameters (U, V)"});
    check_message(error_for(base_json, "// ${U}\n"), {"catalogue[1].parameters.V: is used by neither the template"});
  }
}

TEST_CASE("load_problem reads a hint's diagnosis_moves and names the path of every malformed one") {
  constexpr std::string_view cons = R"("constraints": ["U * V <= 8"])";
  auto with_moves = [&](std::string_view moves) {
    return mutate(cons, std::string(cons) + ", \"diagnosis_moves\": " + std::string(moves));
  };
  temp_dir d;
  write_problem(d.path, with_moves(R"({"register spills": {"U": -1}, "small grid": {"V": 1, "U": -1}})"));
  auto p = load_problem(d.path);
  CHECK(p.catalogue[0].diagnosis_moves.empty());
  CHECK(p.catalogue[1].diagnosis_moves ==
        std::vector<diagnosis_move>{{"register spills", "U", -1}, {"small grid", "V", 1}, {"small grid", "U", -1}});
  write_problem(d.path, base_json);
  CHECK(load_problem(d.path).catalogue[1].diagnosis_moves.empty());  // optional

  struct bad_case {
    std::string text;
    std::vector<std::string_view> expect;
  };
  const bad_case cases[] = {
      {with_moves(R"({"small grd": {"U": -1}})"),
       {"catalogue[1].diagnosis_moves.small grd: 'small grd' is not a diagnosis tag", "did you mean 'small grid'?"}},
      {with_moves(R"({"profiler unavailable": {"U": -1}})"),
       {"catalogue[1].diagnosis_moves.profiler unavailable:", "nothing about the kernel"}},
      {with_moves(R"({"small grid": {"W": -1}})"),
       {"catalogue[1].diagnosis_moves.small grid.W: 'W' is not one of the hint's parameters (U, V)"}},
      {with_moves(R"({"small grid": {"U": 2}})"),
       {"catalogue[1].diagnosis_moves.small grid.U: direction 2: must be +1", "or -1"}},
      {with_moves(R"({"small grid": {"U": 0}})"), {"catalogue[1].diagnosis_moves.small grid.U: direction 0"}},
      {with_moves(R"({"small grid": {"U": "down"}})"),
       {"catalogue[1].diagnosis_moves.small grid.U: expected an integer, found a string"}},
      {with_moves(R"({"small grid": {"U": -1.0}})"),
       {"catalogue[1].diagnosis_moves.small grid.U: expected an integer"}},
      {with_moves(R"({"small grid": {}})"), {"catalogue[1].diagnosis_moves.small grid: lists no parameter"}},
      {with_moves(R"({"small grid": -1})"), {"catalogue[1].diagnosis_moves.small grid: expected an object"}},
      {with_moves(R"(["small grid"])"), {"catalogue[1].diagnosis_moves: expected an object, found an array"}},
      {with_moves("{}"), {"catalogue[1].diagnosis_moves: lists no tag"}},
      {with_moves(R"({"small grid": {"U": -1, "U": 1}})"), {"duplicate key 'U'"}},
      // a hint without parameters has nothing to move
      {mutate(R"({"name": "plain", "prose": "the obvious loop"})",
              R"({"name": "plain", "prose": "the obvious loop", "diagnosis_moves": {"small grid": {"U": -1}}})"),
       {"catalogue[0].diagnosis_moves: diagnosis moves need 'parameters'"}},
      {mutate(cons, std::string(cons) + R"(, "diagnosis_move": {})"),
       {"catalogue[1]: unknown field 'diagnosis_move'", "did you mean 'diagnosis_moves'?"}},
  };
  for (auto const& c : cases) {
    CAPTURE(c.text);
    const auto msg = error_for(c.text);
    CHECK_MESSAGE(contains(msg, "problem.json"), msg);
    for (auto part : c.expect) CHECK_MESSAGE(contains(msg, part), "expected '" << part << "' in: " << msg);
  }

  // A problem built in code is checked by validate() the same way.
  auto q = p;
  q.catalogue[1].diagnosis_moves = {{"small grid", "U", -1}};
  CHECK_NOTHROW(q.validate());
  q.catalogue[1].diagnosis_moves[0].tag = "tiny grid";
  CHECK_THROWS_WITH_AS(q.validate(), doctest::Contains("'tiny grid', which is not a diagnosis finding"), error);
  q.catalogue[1].diagnosis_moves[0] = {"small grid", "W", -1};
  CHECK_THROWS_WITH_AS(q.validate(), doctest::Contains("'W', which is not one of its parameters"), error);
  q.catalogue[1].diagnosis_moves[0] = {"small grid", "U", 3};
  CHECK_THROWS_WITH_AS(q.validate(), doctest::Contains("direction 3"), error);
  q.catalogue[1].diagnosis_moves.clear();
  q.catalogue[0].diagnosis_moves = {{"small grid", "U", -1}};  // a prose-only hint
  CHECK_THROWS_WITH_AS(q.validate(), doctest::Contains("hint 'plain'"), error);
}

TEST_CASE("the shipped host problems load and their catalogues are sound") {
  for (auto const& name : shipped_problems) {
    CAPTURE(name);
    const auto p = load_problem(shipped(name));
    CHECK(p.name == name);
    CHECK(p.backend == "host");
    CHECK(exact_computations.count(p.name) == 1);
    REQUIRE(p.shapes.size() >= 3);
    CHECK(p.shapes[0].tier == "smoke");  // the ladder's first rung and the gate use shape 0
    CHECK(std::any_of(p.shapes.begin(), p.shapes.end(), [](shape const& s) { return s.tier == "odd"; }));
    for (auto const& s : p.shapes) {
      CHECK(s.bytes > 0);
      CHECK(s.flops > 0);
      CHECK(p.machine.floor_seconds(s) > 0);
    }
    REQUIRE(p.seed_source);
    for (auto const* src : {&p.reference_source, &*p.seed_source}) {
      const auto why = policy_rejection(*src);
      CHECK_MESSAGE(why.empty(), why);
    }
    CHECK(p.catalogue.size() >= 3);
    CHECK(p.catalogue.size() <= 4);
    for (auto const& h : p.catalogue) {
      CAPTURE(h.name);
      REQUIRE(h.templ);
      CHECK(!h.prose.empty());
      const auto points = h.templ->space.enumerate().size();
      MESSAGE(name << " / " << h.name << ": " << points << " points of " << h.templ->space.cardinality());
      CHECK(points >= 8);
      CHECK(points <= 300);
      const auto c = central_point(h.templ->space);
      REQUIRE_MESSAGE(c, "the central point must be admitted: it is the expert default");
      const auto cand = instantiate(h, *c, "test");
      CHECK_FALSE(contains(cand.source, "${"));
      CHECK(contains(cand.source, "extern \"C\" void kb_kernel(const kb_args* args)"));
      const auto why = policy_rejection(cand.source);
      CHECK_MESSAGE(why.empty(), why);
    }
  }
}

TEST_CASE("the shipped references agree with a float64 computation") {
  for (auto const& name : shipped_problems) {
    CAPTURE(name);
    const auto p = load_problem(shipped(name));
    kernel_library ref(compiled_reference(p));
    REQUIRE_MESSAGE(ref.ok(), ref.why());
    std::uint64_t seed = 1;
    for (auto const& s : p.shapes) {
      if (s.tier == "large") continue;
      CAPTURE(s.name);
      const auto in = make_inputs(p, s, seed++);
      const auto out = run_kernel(ref.fn(), p, s, in);
      const auto exact = exact_computations.at(p.name)(dims_of(p, s), in);
      REQUIRE(out[0].size() == exact.size());
      // One rounding to float at the end: within one ulp of the exact value, element by element.
      double scale = 0;
      for (double v : exact) scale = std::max(scale, std::abs(v));
      std::size_t bad = 0;
      for (std::size_t i = 0; i < exact.size(); ++i) {
        const double err = std::abs(out[0][i] - exact[i]);
        if (!(err <= 0x1p-23 * std::abs(exact[i]) + 1e-12 * scale)) {
          if (bad++ == 0) FAIL_CHECK("element " << i << ": reference " << out[0][i] << ", exact " << exact[i]);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("every catalogue template compiles at sampled points and matches the reference") {
  // One batch of compiles for all problems (two at a time), then every kernel at the smoke and odd shapes.
  struct entry {
    std::string problem;
    std::size_t job;
  };
  std::vector<problem> problems;
  std::vector<compile_job> jobs;
  std::vector<entry> entries;
  for (auto const& name : shipped_problems) {
    problems.push_back(load_problem(shipped(name)));
    auto const& p = problems.back();
    (void)compiled_reference(p);
    jobs.push_back({name + " seed", *p.seed_source, build_dir() / (name + "-seed.so"), {}});
    entries.push_back({name, jobs.size() - 1});
    for (std::size_t h = 0; h < p.catalogue.size(); ++h) {
      auto const& hint = p.catalogue[h];
      const auto points = sample_points(hint.templ->space, 0x5eed + h);
      for (std::size_t i = 0; i < points.size(); ++i) {
        auto cand = instantiate(hint, points[i], "test");
        const auto why = policy_rejection(cand.source);
        CHECK_MESSAGE(why.empty(), name << " / " << hint.name << " {" << points[i].to_string() << "}: " << why);
        jobs.push_back({name + " / " + hint.name + " {" + points[i].to_string() + "}",
                        std::move(cand.source),
                        build_dir() / (name + "-" + hint.name + "-" + std::to_string(i) + ".so"),
                        {}});
        entries.push_back({name, jobs.size() - 1});
      }
    }
  }
  // A negative control: a softmax that normalises only the first multiple of 8 columns must pass
  // at the smoke shape and fail at the odd one, or the check below proves nothing.
  auto const& softmax = problems[0];
  REQUIRE(softmax.name == "softmax");
  const std::string tail_bug =
      mutate("for (long long c = 0; c < cols; ++c) yr[c] = yr[c] / sum;",
             "for (long long c = 0; c < cols - cols % 8; ++c) yr[c] = yr[c] / sum;", *softmax.seed_source);
  jobs.push_back({"softmax seed without its tail", tail_bug, build_dir() / "softmax-tail-bug.so", {}});

  compile_all(jobs);
  for (auto const& j : jobs) CHECK_MESSAGE(j.failure.empty(), j.label << " does not compile: " << j.failure);
  MESSAGE(jobs.size() << " kernels compiled");

  std::uint64_t seed = 1000;
  for (auto const& p : problems) {
    kernel_library ref(compiled_reference(p));
    REQUIRE_MESSAGE(ref.ok(), ref.why());
    std::vector<std::unique_ptr<kernel_library>> libs;
    std::vector<std::string> labels;
    for (auto const& e : entries) {
      auto const& j = jobs[e.job];
      if (e.problem != p.name || !j.failure.empty()) continue;
      libs.push_back(std::make_unique<kernel_library>(j.so));
      labels.push_back(j.label);
      CHECK_MESSAGE(libs.back()->ok(), j.label << ": " << libs.back()->why());
    }
    for (auto const& s : p.shapes) {
      if (!is_check_shape(s)) continue;
      const auto in = make_inputs(p, s, seed++);
      const auto want = run_kernel(ref.fn(), p, s, in);
      for (std::size_t k = 0; k < libs.size(); ++k) {
        if (!libs[k]->ok()) continue;
        const auto got = run_kernel(libs[k]->fn(), p, s, in);
        for (std::size_t o = 0; o < got.size(); ++o) {
          const auto why = compare(got[o], want[o], p.tol);
          CHECK_MESSAGE(why.empty(),
                        labels[k] << " at shape " << s.name << ", output " << p.outputs[o].name << ": " << why);
        }
      }
      // Candidates must not write their inputs.
      CHECK(in == make_inputs(p, s, seed - 1));
    }
  }

  auto const& control = jobs.back();
  REQUIRE(control.failure.empty());
  kernel_library bug(control.so);
  REQUIRE(bug.ok());
  kernel_library ref(compiled_reference(softmax));
  for (auto const& s : softmax.shapes) {
    if (!is_check_shape(s)) continue;
    const auto in = make_inputs(softmax, s, 7);
    const auto why =
        compare(run_kernel(bug.fn(), softmax, s, in)[0], run_kernel(ref.fn(), softmax, s, in)[0], softmax.tol);
    if (s.tier == "smoke")
      CHECK_MESSAGE(why.empty(), why);
    else
      CHECK_FALSE(why.empty());
  }
}
