// GPU tests of the CUDA backend's diagnoses (label "gpu"): three copies of a float vector measured at
// a rung with rung::profile, through the evaluator as a search measures them. Under Nsight Compute a
// deliberately uncoalesced copy (each thread copies 32 consecutive elements: a warp's loads are 128
// bytes apart) must be tagged "uncoalesced loads", a register-starved one (160 live accumulators, no
// __launch_bounds__) "occupancy limited by registers", and a plain coalesced copy neither. Without a
// GPU the test says so and stops; with a GPU but no ncu it checks the static diagnosis only (the
// register limit, and the reason in the text) and says what it skipped; ncu found but giving no
// profile (no permission, a failure) is a failure. Run on the H200 by the GPU job.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <kernelbrain/backends/cuda/detail/profiler.hpp>
#include <kernelbrain/backends/cuda/diagnosis.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/isolation/worker_process.hpp>
#include <string>
#include <vector>
#include "../temp_dir.hpp"

using namespace kernelbrain;
namespace dn = kernelbrain::diagnosis_names;

namespace {

constexpr std::int64_t large_n = std::int64_t{1} << 25;  // 128 MiB per tensor: twice the H200's L2

constexpr char const* coalesced_copy = R"(
extern "C" __global__ void k(const float* x, float* y, long long N) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < N) y[i] = x[i];
}
)";
constexpr char const* one_per_thread_plan =
    R"json({"launches": [{"kernel": "k", "grid": ["ceil_div(N, 256)", "1", "1"], "block": ["256", "1", "1"], "args": ["x", "y", "N"]}]})json";

// Each thread copies 32 consecutive elements: at every step a warp's 32 loads (and stores) are 128
// bytes apart, one 32-byte sector each, 4 bytes of it used.
constexpr char const* uncoalesced_copy = R"(
extern "C" __global__ void k(const float* x, float* y, long long N) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (int j = 0; j < 32; ++j) {
    const long long i = t * 32 + j;
    if (i < N) y[i] = x[i];
  }
}
)";
constexpr char const* chunk_per_thread_plan =
    R"json({"launches": [{"kernel": "k", "grid": ["ceil_div(N, 8192)", "1", "1"], "block": ["256", "1", "1"], "args": ["x", "y", "N"]}]})json";

// 160 values loaded from distinct addresses and mixed four times (each update reads a value seven
// places on, so all 160 are live between rounds): ~170 registers a thread, one block of 256 threads
// per SM (12.5% occupancy). The output is the input plus 0 * (their sum): exact, and not foldable
// without fast math.
constexpr char const* register_heavy_copy = R"(
#define R 160
extern "C" __global__ void k(const float* x, float* y, long long N) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= N) return;
  float a[R];
#pragma unroll
  for (int k = 0; k < R; ++k) {
    long long j = i + 32LL * k;
    if (j >= N) j -= N;
    if (j >= N) j = N - 1;
    a[k] = x[j];
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int k = 0; k < R; ++k) a[k] = fmaf(a[k], 0.5f, a[(k + 7) % R] * 0.25f);
  }
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < R; ++k) s += a[k];
  y[i] = x[i] + 0.0f * s;
}
)";

problem copy_problem() {
  problem p;
  p.name = "profiler_copy";
  p.backend = "cuda";
  p.signature = "y = x; x, y: f32[N]";
  p.description = "A copy, for the profiler's GPU tests.";
  p.dim_order = {"N"};
  p.inputs = {tensor_spec{"x", "N"}};
  p.outputs = {tensor_spec{"y", "N"}};
  p.shapes = {shape{"smoke", {{"N", 1000}}, "smoke", 0.1, 8.0 * 1000, 0},
              shape{"large", {{"N", large_n}}, "large", 1.0, 8.0 * static_cast<double>(large_n), 0}};
  p.tol = tolerance{0, 0};
  p.machine = roofline{4.8e12, 67e12};
  p.reference_source = coalesced_copy;
  p.reference_launch = one_per_thread_plan;
  return p;
}

candidate cand(std::string source, std::string launch) {
  auto c = make_candidate("test", parameters{}, "test", std::nullopt, std::move(source), std::move(launch));
  c.seal();
  return c;
}

/// "device NAME" from the worker, or "" where it sees none.
std::string gpu_name() {
  const auto v = detail::run_captured({find_cuda_worker(), "--version"}, std::chrono::milliseconds(60000));
  const auto at = v.output.find("\ndevice ");
  if (at == std::string::npos) return {};
  auto name = v.output.substr(at + 8, v.output.find('\n', at + 8) - at - 8);
  return name == "none" ? std::string{} : name;
}

/// The top rung of these tests: both shapes, 5 samples after 1 warm-up, profiled.
rung profiled_rung() {
  rung r;
  r.name = "confirm";
  r.shapes = {0, 1};
  r.samples = 5;
  r.warmup = 1;
  r.profile = true;
  return r;
}

bool has(std::vector<diagnosis_tag> const& tags, std::string_view name) {
  for (auto const& t : tags)
    if (t.name == name) return true;
  return false;
}
double value_of(std::vector<diagnosis_tag> const& tags, std::string_view name) {
  for (auto const& t : tags)
    if (t.name == name) return t.value;
  return std::nan("");
}

}  // namespace

TEST_CASE("profiler: ncu diagnoses uncoalesced loads and a register limit, and leaves a plain copy alone") {
  const auto gpu = gpu_name();
  if (gpu.empty()) {
    MESSAGE("skipped: no GPU (kernelbrain-cuda-worker --version sees no device)");
    return;
  }
  const auto ncu = detail::cuda::find_ncu();
  if (ncu.path.empty()) MESSAGE("no ncu (", ncu.why_not, "): checking the static diagnosis only");
  kb_test::temp_dir dir("profiler_gpu");
  cuda_options o;
  o.cache_dir = dir.path.string();
  o.sanitize = false;    // not what this test is about, and slow
  o.profile_all = true;  // every measurement profiled, not only the fastest so far within the profiler's share
  const auto p = copy_problem();
  cuda_evaluator ev(p, o);
  INFO(gpu, "; ", ev.fingerprint());
  (void)ev.take_device_seconds();

  const rung r = profiled_rung();
  measure_request req;
  req.seed = 7;

  struct run {
    measurement m;
    std::vector<diagnosis_tag> tags;
  };
  auto measure = [&](candidate const& c, std::string const& what) {
    run out{ev.measure(c, r, req), {}};
    out.tags = parse_diagnosis(out.m.diagnosis);
    MESSAGE(what, ":\n", out.m.diagnosis);
    INFO(what, ": ", out.m.result.detail);
    REQUIRE(out.m.result.where == stage::pass);
    CHECK_FALSE(out.m.diagnosis.empty());
    if (ncu.path.empty()) {
      CHECK(has(out.tags, dn::profiler_unavailable));
      CHECK(out.m.profile.empty());
    } else {
      // ncu was found: on the GPU machine it must read the counters.
      INFO(out.m.diagnosis);
      CHECK_FALSE(has(out.tags, dn::profiler_unavailable));
      CHECK(out.m.profile.count("gpu__time_duration.sum") == 1);
    }
    return out;
  };

  const auto plain = measure(cand(coalesced_copy, one_per_thread_plan), "coalesced copy");
  CHECK_FALSE(has(plain.tags, dn::uncoalesced_loads));
  CHECK_FALSE(has(plain.tags, dn::uncoalesced_stores));
  CHECK_FALSE(has(plain.tags, dn::limited_by_registers));
  if (!ncu.path.empty()) {
    CHECK(plain.m.profile.at("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct") > 90);
    // Which of the metrics asked for this ncu did not give (a name it does not know is dropped).
    std::string missing;
    for (auto name : ncu_metrics)
      if (!plain.m.profile.count(std::string(name))) missing += (missing.empty() ? "" : ", ") + std::string(name);
    MESSAGE("ncu gave ", plain.m.profile.size(),
            " metrics; of those asked for, missing: ", missing.empty() ? std::string("none") : missing);
  }

  const auto heavy = measure(cand(register_heavy_copy, one_per_thread_plan), "register-heavy copy");
  CHECK(has(heavy.tags, dn::limited_by_registers));
  CHECK(value_of(heavy.tags, dn::limited_by_registers) < 50);
  CHECK_FALSE(has(heavy.tags, dn::uncoalesced_loads));
  REQUIRE(heavy.m.res.has_value());
  CHECK(heavy.m.res->registers >= 128);
  if (!ncu.path.empty()) {
    CHECK(heavy.m.profile.at("launch__registers_per_thread") >= 128);
    CHECK(heavy.m.profile.at("launch__occupancy_limit_registers") <=
          heavy.m.profile.at("launch__occupancy_limit_warps"));
  }

  if (!ncu.path.empty()) {
    const auto strided = measure(cand(uncoalesced_copy, chunk_per_thread_plan), "uncoalesced copy");
    CHECK(has(strided.tags, dn::uncoalesced_loads));
    CHECK(value_of(strided.tags, dn::uncoalesced_loads) < 60);
    CHECK_FALSE(has(strided.tags, dn::limited_by_registers));
    CHECK(ev.profiler_runs() == 3);
    // Profiled once per candidate: measuring it again reuses the profile.
    const auto again = measure(cand(uncoalesced_copy, chunk_per_thread_plan), "uncoalesced copy, again");
    CHECK(ev.profiler_runs() == 3);
    CHECK(has(again.tags, dn::uncoalesced_loads));
  } else {
    MESSAGE("skipped without ncu: the uncoalesced-loads check (it needs counters)");
  }
  // The profiles' wall time is charged as device time, with the timings.
  CHECK(ev.take_device_seconds() > 0);
}

// The rationing (backends/common/profile_rationing.hpp), as the CUDA backend applies it: with the whole
// device time open to ncu (profile_share 1), the first measurement is profiled, a slower one after it is
// not (it cannot become the incumbent), and a faster one is; with profile_share 0 nothing is, and the
// diagnosis says why. Measured on the large shape (the rung's profiled one), where the three copies are
// far apart: the uncoalesced copy reads 8x the sectors of the coalesced one.
TEST_CASE("profiler: ncu runs only on the fastest measurement so far, within the profiler's share") {
  const auto gpu = gpu_name();
  if (gpu.empty()) {
    MESSAGE("skipped: no GPU (kernelbrain-cuda-worker --version sees no device)");
    return;
  }
  const auto ncu = detail::cuda::find_ncu();
  if (ncu.path.empty()) {
    MESSAGE("skipped: no ncu (", ncu.why_not, ")");
    return;
  }
  kb_test::temp_dir dir("profiler_ration_gpu");
  const rung r = profiled_rung();
  measure_request req;
  req.seed = 11;
  const auto p = copy_problem();
  const auto slow = cand(uncoalesced_copy, chunk_per_thread_plan);
  const auto fast = cand(coalesced_copy, one_per_thread_plan);
  // Another candidate (another source text) with the slow one's kernel.
  const auto slow_twin =
      cand(std::string(uncoalesced_copy) + "\n// the same kernel, another candidate\n", chunk_per_thread_plan);
  auto options = [&](double share) {
    cuda_options o;
    o.cache_dir = dir.path.string();
    o.sanitize = false;  // not what this test is about, and slow
    o.profile_share = share;
    return o;
  };
  auto measured = [&](cuda_evaluator& ev, candidate const& c) {
    auto m = ev.measure(c, r, req);
    INFO(m.result.detail);
    REQUIRE(m.result.where == stage::pass);
    return m;
  };
  constexpr std::string_view not_run = "ncu: not run: not the fastest";

  SUBCASE("share 1: the first measurement and each faster one") {
    cuda_evaluator ev(p, options(1.0));
    const auto a = measured(ev, slow);
    CHECK(ev.profiler_runs() == 1);
    CHECK(a.profile.count("gpu__time_duration.sum") == 1);
    const auto b = measured(ev, fast);
    INFO(b.diagnosis);
    CHECK(ev.profiler_runs() == 2);
    CHECK(b.profile.count("gpu__time_duration.sum") == 1);
    const auto c = measured(ev, slow_twin);
    INFO(c.diagnosis);
    CHECK(ev.profiler_runs() == 2);
    CHECK(c.profile.empty());
    CHECK(c.diagnosis.find(not_run) != std::string::npos);
  }
  SUBCASE("share 0: none, and the diagnosis says why") {
    cuda_evaluator ev(p, options(0.0));
    const auto a = measured(ev, fast);
    INFO(a.diagnosis);
    CHECK(ev.profiler_runs() == 0);
    CHECK(a.profile.empty());
    CHECK(a.diagnosis.find(not_run) != std::string::npos);
  }
}
