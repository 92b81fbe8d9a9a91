// GPU tests of the CUDA gate against cheats and bugs found from outside (label "gpu"): each bad
// kernel gets the verdict it deserves and has an honest twin that passes. Also: entry points and
// resources survive the CUDA compute cache, the same search twice rejects nothing the first passed,
// every catalogue family passes adversarial inputs and compute-sanitizer, and a killed search
// leaves no process behind.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include "../temp_dir.hpp"
#include "softmax_kernels.hpp"

extern char** environ;

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

fs::path problems_dir() { return fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems"; }
problem softmax() { return load_problem(problems_dir() / "softmax"); }

using kb_test::temp_dir;

using kb_test::row_plan;

candidate cand(std::string source, std::string launch = row_plan) {
  auto c = make_candidate("test", parameters{}, "test", std::nullopt, std::move(source), std::move(launch));
  c.seal();
  return c;
}

/// The shared correct softmax (softmax_kernels.hpp) with `globals`, `before_write`, `write` and `prologue` hooks.
std::string softmax_kernel(std::string const& globals, std::string const& before_write, std::string const& write,
                           std::string const& prologue = "", std::string const& after = "") {
  return kb_test::softmax_kernel({globals, prologue, before_write, write, after});
}
std::string honest(std::string const& salt = "") {
  return softmax_kernel("// honest " + salt + "\n", "", "yr[c] = expf(xr[c] - m) / sum;");
}

cuda_options quiet_options() {
  cuda_options o;
  o.run_timeout = 20;
  o.sanitize = false;  // the sanitizer has its own tests below; these test the other stages
  return o;
}

const std::size_t check_shapes[] = {0, 1};  // smoke and odd

/// The shapes the default gate checks: the first and every "odd" one (adversarial trials run at the
/// smallest odd shape).
std::vector<std::size_t> gate_shapes(problem const& p) {
  std::vector<std::size_t> s{0};
  for (std::size_t i = 1; i < p.shapes.size(); ++i)
    if (p.shapes[i].tier == "odd") s.push_back(i);
  return s;
}

/// Kernels that skip their work when they believe they saw the inputs before, replaying their last
/// output per row from device memory: `values` compares four sampled input values (the replay is
/// then right), `address` only the input pointer, `count` replays from the 31st call of a row on.
std::string remembers_inputs(std::string const& how) {
  const std::string globals = "// remembers by " + how + R"(
__device__ float kb_cache_out[4096ull * 65536ull];
__device__ float kb_stash[4096 * 4];
__device__ const float* kb_last_x[4096];
__device__ int kb_valid[4096];
__device__ unsigned kb_calls[4096];
)";
  const std::string same = how == "values"    ? "kb_stash[r * 4 + 0] == xr[0] && kb_stash[r * 4 + 1] == xr[C / 3] && "
                                                "kb_stash[r * 4 + 2] == xr[C / 2] && kb_stash[r * 4 + 3] == xr[C - 1]"
                           : how == "address" ? "kb_last_x[r] == x"
                                              : "++kb_calls[r] > 30";
  const std::string prologue = R"(
  __shared__ int same;
  const bool fits = R <= 4096 && C <= 65536;
  if (t == 0) same = fits && kb_valid[r] && )" +
                               same + R"(;
  __syncthreads();
  if (same) { for (long long c = t; c < C; c += 256) yr[c] = kb_cache_out[r * C + c]; return; }
)";
  const std::string write = "const float v = expf(xr[c] - m) / sum; yr[c] = v; if (fits) kb_cache_out[r * C + c] = v;";
  const std::string after = R"(
  __syncthreads();
  if (t == 0 && fits) {
    kb_stash[r * 4 + 0] = xr[0]; kb_stash[r * 4 + 1] = xr[C / 3]; kb_stash[r * 4 + 2] = xr[C / 2]; kb_stash[r * 4 + 3] = xr[C - 1];
    kb_last_x[r] = x; kb_valid[r] = 1;
  }
)";
  return softmax_kernel(globals, "", write, prologue, after);
}

}  // namespace

TEST_CASE("cuda gate: entry points and resources come from the cubin, also when the compute cache hides ptxas") {
  // NVRTC keeps cubins in the CUDA compute cache (~/.nv/ComputeCache, shared by every process): the
  // second process to compile a source gets the cubin without running ptxas, and its -v report is
  // empty. Two evaluators with separate KernelBrain caches compile the same (new) source in two
  // compile processes with the compute cache left as it is; both must find the kernel and agree.
  const auto p = softmax();
  temp_dir a("cc_a"), b("cc_b");
  auto oa = quiet_options(), ob = quiet_options();
  oa.cache_dir = a.path.string();
  ob.cache_dir = b.path.string();
  const auto stamp = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const auto c = cand(honest("compute cache " + stamp));
  cuda_evaluator ea(p, oa);
  const auto va = ea.build(c);
  cuda_evaluator eb(p, ob);
  const auto vb = eb.build(c);
  INFO(va.detail, " / ", vb.detail);
  CHECK(va.where == stage::pass);
  CHECK(vb.where == stage::pass);
  const auto ma = ea.check(c, check_shapes, 1, 3), mb = eb.check(c, check_shapes, 1, 3);
  CHECK(ma.where == stage::pass);
  CHECK(mb.where == stage::pass);
  rung r;
  r.shapes = {5};
  r.samples = 3;
  const auto ra = ea.measure(c, r, {1, nullptr}), rb = eb.measure(c, r, {1, nullptr});
  REQUIRE(ra.res.has_value());
  REQUIRE(rb.res.has_value());
  CHECK(ra.res->registers == rb.res->registers);
  CHECK(ra.res->registers > 0);
  CHECK(ra.res->shared_bytes == rb.res->shared_bytes);
  CHECK(ra.res->shared_bytes == 1024);  // red[256]
  // Whether the second compile's report was empty (the compute cache at work) is the machine's
  // business; say what happened so that the log shows the case was exercised.
  auto report_in = [](fs::path const& dir) {
    for (auto const& e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".log") {
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        if (ss.str().find("Compiling entry function 'k'") != std::string::npos) return true;
      }
    return false;
  };
  MESSAGE("ptxas report in the first compile: ", report_in(a.path), "; in the second: ", report_in(b.path),
          " (false: the CUDA compute cache answered)");
}

TEST_CASE("cuda gate: a kernel that recognises repeated inputs gains nothing, and one that guesses is caught") {
  const auto p = softmax();
  cuda_evaluator ev(p, quiet_options());
  rung r;
  r.shapes = {6};  // 4096 x 65536: a GiB in, a GiB out
  r.samples = 9;
  r.warmup = 1;
  SUBCASE("by address: stale rows on fresh inputs are wrong outputs") {
    const auto v = ev.check(cand(remembers_inputs("address")), check_shapes, 2, 5);
    INFO(v.detail);
    CHECK(v.where == stage::correctness);
  }
  SUBCASE("by counting calls: the replayed timed calls are checked") {
    const auto c = cand(remembers_inputs("count"));
    rung many = r;
    many.samples = 40;
    const auto m = ev.measure(c, many, {7, nullptr});
    INFO(m.result.detail);
    CHECK(m.result.where == stage::correctness);
    CHECK(m.result.detail.find("timed call") != std::string::npos);
    const auto twin = ev.measure(cand(honest("twin of the counting cheat")), many, {7, nullptr});
    INFO(twin.result.detail);
    CHECK(twin.result.where == stage::pass);
  }
  SUBCASE("by values: every timed call sees other values, so there is never a repeat to skip") {
    const auto cheat = cand(remembers_inputs("values"));
    const auto twin = cand(honest("twin of the value cheat"));
    const auto mc = ev.measure(cheat, r, {8, nullptr});
    const auto mh = ev.measure(twin, r, {8, nullptr});
    INFO(mc.result.detail, " / ", mh.result.detail);
    REQUIRE(mc.result.where == stage::pass);
    REQUIRE(mh.result.where == stage::pass);
    const double tc = mc.timings.at(0).stats.median, th = mh.timings.at(0).stats.median;
    MESSAGE("value-recognising cheat ", tc * 1e3, " ms, honest twin ", th * 1e3, " ms");
    // Replaying a cached GiB instead of computing would be about twice as fast: it may not be faster.
    CHECK(tc >= 0.95 * th);
  }
}

TEST_CASE("cuda gate: numerics that only hold for gentle inputs fail the adversarial trials") {
  const auto p = softmax();
  cuda_evaluator ev(p, quiet_options());
  const std::string no_max = R"(
extern "C" __global__ void k(float* x, float* y, long long R, long long C) {
  __shared__ float red[256];
  const long long r = blockIdx.x; const int t = threadIdx.x;
  const float* xr = x + r * C; float* yr = y + r * C;
  float sum = 0.f;
  for (long long c = t; c < C; c += 256) sum += expf(xr[c]);
  red[t] = sum; __syncthreads();
  for (int s = 128; s > 0; s >>= 1) { if (t < s) red[t] += red[t + s]; __syncthreads(); }
  sum = red[0];
  for (long long c = t; c < C; c += 256) yr[c] = expf(xr[c]) / sum;
}
)";
  const auto bad = ev.check(cand(no_max), gate_shapes(p), 2, 9);
  INFO(bad.detail);
  CHECK(bad.where == stage::correctness);
  CHECK(bad.detail.find("adversarial inputs") != std::string::npos);
  const auto good = ev.check(cand(honest("gentle twin")), gate_shapes(p), 2, 9);
  INFO(good.detail);
  CHECK(good.where == stage::pass);
}

TEST_CASE("cuda gate: compute-sanitizer catches an out-of-bounds read and a race that give right answers") {
  const auto p = softmax();
  auto o = quiet_options();
  o.sanitize = true;
  cuda_evaluator ev(p, o);
  REQUIRE_MESSAGE(!ev.sanitizer().empty(), "compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda/bin)");
  // The checks pass (right answers); the memory-safety tools, which a search runs before the top rung
  // (evaluator::assure), find what they hide.
  auto gated = [&](candidate const& c, std::uint64_t seed) {
    const auto checked = ev.check(c, check_shapes, 1, seed);
    INFO(checked.detail);
    CHECK(checked.where == stage::pass);
    return checked.passed() ? ev.assure(c, seed) : checked;
  };
  SUBCASE("a read one element past the row, multiplied by zero") {
    const auto c = cand(softmax_kernel("", "const float extra = fminf(fmaxf(xr[C], -1.f), 1.f);",
                                       "yr[c] = expf(xr[c] - m) / sum + 0.f * extra;"));
    const auto v = gated(c, 21);
    INFO(v.detail);
    CHECK(v.where == stage::sanitizer);
    CHECK(v.detail.find("memcheck") != std::string::npos);
  }
  SUBCASE("warps storing different values to one shared word and reading each other's, unused") {
    const auto c = cand(softmax_kernel("",
                                       "__syncthreads(); volatile float* vs = red; vs[t & 7] = (float)t; const float z "
                                       "= vs[(t + 32) & 255]; (void)z; __syncthreads();",
                                       "yr[c] = expf(xr[c] - m) / sum;"));
    const auto v = gated(c, 22);
    INFO(v.detail);
    CHECK(v.where == stage::sanitizer);
    CHECK(v.detail.find("racecheck") != std::string::npos);
  }
  SUBCASE("the honest twin passes every tool") {
    const auto v = gated(cand(honest("sanitizer twin")), 23);
    INFO(v.detail);
    CHECK(v.where == stage::pass);
    CHECK(ev.sanitizer_runs() == 1);
  }
}

TEST_CASE("cuda gate: every candidate starts from the same clean state (device memory of earlier ones is freed)") {
  const auto p = softmax();
  cuda_evaluator ev(p, quiet_options());
  SUBCASE("__device__ arrays: four candidates of 35 GB each on a 141 GB card") {
    for (int i = 0; i < 4; ++i) {
      std::string globals = "// holder " + std::to_string(i) + "\n";
      std::string touch;
      for (int a = 0; a < 10; ++a) {
        globals += "__device__ float kb_hold" + std::to_string(a) + "[875000000];\n";  // 3.5 GB each
        touch += "kb_hold" + std::to_string(a) + "[t] = m; ";
      }
      const auto c = cand(softmax_kernel(globals, "if (R < 0) { " + touch + "}", "yr[c] = expf(xr[c] - m) / sum;"));
      const auto v = ev.check(c, check_shapes, 1, 30 + static_cast<std::uint64_t>(i));
      INFO(i, ": ", v.detail);
      CHECK(v.where == stage::pass);
    }
  }
  SUBCASE("scratch buffers: five plans asking for 30 GB each") {
    for (int i = 0; i < 5; ++i) {
      const std::string plan =
          R"({"scratch": [{"name": "junk", "size": "7500000000"}], "launches": [{"kernel": "k", "grid": ["R", "1", "1"], "block": ["256", "1", "1"], "smem": "0", "args": ["x", "y", "R", "C"]}]})";
      const auto c = cand(honest("scratch holder " + std::to_string(i)), plan);
      const auto v = ev.check(c, check_shapes, 1, 40 + static_cast<std::uint64_t>(i));
      INFO(i, ": ", v.detail);
      CHECK(v.where == stage::pass);
    }
  }
}

TEST_CASE("cuda gate: loose launch plans and device-heap use are typed rejects; the honest plan passes") {
  const auto p = softmax();
  cuda_evaluator ev(p, quiet_options());
  const auto src = honest("plan twin");
  const auto unknown = ev.build(cand(
      src,
      R"({"launches": [{"kernel": "k", "grid": ["R", "1", "1"], "block": ["256", "1", "1"], "smem": "0", "stream": "1", "args": ["x", "y", "R", "C"]}]})"));
  INFO(unknown.detail);
  CHECK(unknown.where == stage::signature);
  CHECK(unknown.detail.find("stream") != std::string::npos);
  const auto short_args = ev.build(cand(
      src,
      R"({"launches": [{"kernel": "k", "grid": ["R", "1", "1"], "block": ["256", "1", "1"], "smem": "0", "args": ["x", "y", "R"]}]})"));
  INFO(short_args.detail);
  CHECK(short_args.where == stage::signature);
  std::string narrow = honest("int dim");
  narrow.replace(narrow.find("long long C)"), 11, "int C");
  const auto int_dim = ev.build(cand(narrow));
  INFO(int_dim.detail);
  CHECK(int_dim.where == stage::signature);
  const auto heap =
      ev.build(cand(softmax_kernel("", "float* h = (float*)malloc(16); if (h) { h[0] = sum; sum = h[0]; free(h); }",
                                   "yr[c] = expf(xr[c] - m) / sum;")));
  INFO(heap.detail);
  CHECK(heap.where == stage::policy);
  const auto twin = ev.check(cand(src), check_shapes, 1, 50);
  INFO(twin.detail);
  CHECK(twin.where == stage::pass);
}

namespace {

/// Records the gate's verdict of every candidate a search checks.
class verdict_recorder final : public evaluator {
 public:
  explicit verdict_recorder(evaluator& e) : e_(e) {}
  [[nodiscard]] std::string fingerprint() const override { return e_.fingerprint(); }
  void prefetch(candidate const& c) override { e_.prefetch(c); }
  [[nodiscard]] verdict inspect(candidate const& c) override { return e_.inspect(c); }
  [[nodiscard]] verdict build(candidate const& c) override { return record(c, e_.build(c)); }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> s, int t, std::uint64_t seed) override {
    return record(c, e_.check(c, s, t, seed));
  }
  [[nodiscard]] verdict assure(candidate const& c, std::uint64_t seed) override {
    return record(c, e_.assure(c, seed));
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& q) override {
    return e_.measure(c, r, q);
  }
  [[nodiscard]] baseline measure_baseline(problem const& p) override { return e_.measure_baseline(p); }
  [[nodiscard]] double take_device_seconds() override { return e_.take_device_seconds(); }
  std::map<std::uint64_t, verdict> verdicts;  ///< the last gate verdict per candidate

 private:
  verdict record(candidate const& c, verdict v) {
    verdicts[c.id.value] = v;
    return v;
  }
  evaluator& e_;
};

}  // namespace

TEST_CASE("cuda gate: the same search twice on one machine rejects nothing the first run passed") {
  // The second run compiles everything again in a fresh KernelBrain cache, so NVRTC answers from the
  // CUDA compute cache (no ptxas report): at b527ff9 every such candidate was rejected at 'signature'.
  const auto p = focused_on(softmax(), {"16x16384"});
  std::vector<std::map<std::uint64_t, verdict>> runs;
  for (int run = 0; run < 2; ++run) {
    temp_dir d("twice");
    auto o = quiet_options();
    o.sanitize = true;
    o.cache_dir = d.path.string();
    cuda_evaluator backend(p, o);
    verdict_recorder ev(backend);
    search_options so;
    so.seed = 11;
    so.limits.evaluations = 40;
    (void)search(p, default_policies(p), ev, so);
    runs.push_back(ev.verdicts);
  }
  std::size_t passed = 0, both = 0;
  for (auto const& [id, v] : runs[0]) {
    if (!v.passed()) continue;
    ++passed;
    auto it = runs[1].find(id);
    if (it == runs[1].end()) continue;
    ++both;
    INFO(to_hex(id), ": ", it->second.detail);
    CHECK(it->second.where == stage::pass);
  }
  MESSAGE(passed, " candidates passed the gate in the first run, ", both, " of them were gated again in the second");
  CHECK(passed >= 10);
  CHECK(both >= 10);
}

TEST_CASE(
    "cuda gate: every reference and catalogue family passes adversarial inputs and compute-sanitizer, and the driver "
    "agrees with the cubin") {
  // One evaluator per problem, in parallel (each runs its sanitizer tools in parallel too).
  std::vector<fs::path> dirs;
  for (auto const& e : fs::directory_iterator(problems_dir()))
    if (fs::is_regular_file(e.path() / "problem.json")) dirs.push_back(e.path());
  std::mutex mu;
  std::vector<std::string> failures;
  std::size_t checked = 0;
  std::vector<std::thread> threads;
  for (auto const& d : dirs)
    threads.emplace_back([&, d] {
      try {
        const auto p = load_problem(d);
        cuda_options o;
        o.run_timeout = 60;
        cuda_evaluator ev(p, o);
        std::vector<std::size_t> shapes;
        for (std::size_t s = 0; s < p.shapes.size(); ++s)
          if (p.shapes[s].tier == "smoke" || p.shapes[s].tier == "odd") shapes.push_back(s);
        std::vector<candidate> cs{cand(p.reference_source, p.reference_launch)};
        for (auto const& h : p.catalogue)
          if (h.templ)
            if (auto at = central_point(h.templ->space)) cs.push_back(instantiate(h, *at, "expert:" + h.name));
        for (auto const& c : cs) ev.prefetch(c);
        for (auto const& c : cs) {
          auto v = ev.check(c, shapes, 1, 77);
          if (v.passed()) v = ev.assure(c, 77);
          std::lock_guard lk(mu);
          ++checked;
          if (!v.passed())
            failures.push_back(p.name + " / " + (c.family.empty() ? "reference" : c.family) + ": " +
                               std::string(to_string(v.where)) + ": " + v.detail);
        }
      } catch (std::exception const& e) {
        std::lock_guard lk(mu);
        failures.push_back(d.filename().string() + ": " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  for (auto const& f : failures) MESSAGE(f);
  MESSAGE(checked, " kernels checked, ", failures.size(), " failed");
  std::size_t expected = 0;  // every reference and every template family
  for (auto const& d : dirs) {
    const auto p = load_problem(d);
    expected += 1 + static_cast<std::size_t>(std::count_if(p.catalogue.begin(), p.catalogue.end(),
                                                           [](auto const& h) { return h.templ.has_value(); }));
  }
  CHECK(checked == expected);
  CHECK(failures.empty());
}

namespace {

/// Process ids whose environment holds `mark`.
std::vector<int> processes_marked(std::string const& mark) {
  std::vector<int> out;
  for (auto const& e : fs::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find(mark) != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace

// Run by the test below in a child process (this binary, --no-skip): a search-like process whose
// worker hangs in a kernel. Skipped in a normal run.
TEST_CASE("cuda gate: orphan child (a process the next test kills)" * doctest::skip()) {
  char const* dir = std::getenv("KB_GPU_ORPHAN_DIR");
  REQUIRE(dir != nullptr);
  const auto p = softmax();
  auto o = quiet_options();
  o.run_timeout = 600;
  cuda_evaluator ev(p, o);
  const auto hang =
      cand(softmax_kernel("", "for (;;) { __nanosleep(1000); if (clock64() < 0) break; }", "yr[c] = 0.f;"));
  REQUIRE(ev.build(hang).where == stage::pass);
  std::ofstream(fs::path(dir) / "calling") << ::getpid();
  (void)ev.check(hang, check_shapes, 1, 1);  // never returns: the parent kills this process
}

TEST_CASE("cuda gate: a search process killed with SIGKILL leaves no worker behind, not even one in a hung kernel") {
  temp_dir d("orphan");
  const std::string mark = "KB_GPU_ORPHAN_MARK=" + std::to_string(::getpid()) + "-" +
                           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  env.push_back(mark);
  env.push_back("KB_GPU_ORPHAN_DIR=" + d.path.string());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char self[4096] = {};
  REQUIRE(::readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  std::string a0 = self, a1 = "--test-case=*orphan child*", a2 = "--no-skip";
  char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (d.path / "child.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, self, &fa, nullptr, argv, envp.data()) == 0);
  posix_spawn_file_actions_destroy(&fa);
  const auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(d.path / "calling") && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(d.path / "calling"));
  std::this_thread::sleep_for(std::chrono::seconds(4));  // the worker is up and inside the kernel
  const auto before = processes_marked(mark);
  MESSAGE("processes of the child before the kill: ", before.size());
  CHECK(before.size() >= 2);  // the child and its worker
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  std::vector<int> left;
  const auto t1 = std::chrono::steady_clock::now();
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    left = processes_marked(mark);
  } while (!left.empty() && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(10));
  std::string pids;
  for (int q : left) pids += std::to_string(q) + " ";
  INFO("still running: ", pids);
  CHECK(left.empty());
}
