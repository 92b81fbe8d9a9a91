// GPU tests of the CUDA backend (label "gpu"; CI has no GPU and never builds a run of these):
// a corpus of bad kernels, each rejected at the right stage, a correct kernel that passes, and a
// short default search on softmax that beats the reference kernel.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>
#include "softmax_kernels.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

problem softmax() { return load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax"); }

using kb_test::row_plan;

candidate cand(std::string source, std::string launch = row_plan) {
  auto c = make_candidate("test", parameters{}, "test", std::nullopt, std::move(source), std::move(launch));
  c.seal();
  return c;
}

// A correct (slow) softmax, block per row, used as the body of several bad kernels.
std::string softmax_body(std::string const& before_write, std::string const& write, std::string const& after = "") {
  return kb_test::softmax_kernel({.before_write = before_write, .write = write, .after = after});
}

const std::size_t shapes[] = {0, 1};

/// `n` correct softmaxes with distinct sources (each scales by 1 + i * 10^exponent: a different
/// constant, the same result within tolerance).
std::vector<candidate> distinct_softmaxes(int n, std::string const& exponent) {
  std::vector<candidate> cs;
  for (int i = 0; i < n; ++i)
    cs.push_back(
        cand(softmax_body("", "yr[c] = expf(xr[c] - m) / sum * (1.0f + " + std::to_string(i) + exponent + ");")));
  return cs;
}

}  // namespace

TEST_CASE("cuda backend: a bad-kernel corpus is rejected at the right stage, a correct kernel passes") {
  const auto p = softmax();
  cuda_options o;
  o.run_timeout = 5;
  o.compile_timeout = 20;
  cuda_evaluator ev(p, o);
  INFO(ev.fingerprint());

  SUBCASE("correct") {
    const auto v = ev.check(cand(softmax_body("", "yr[c] = expf(xr[c] - m) / sum;")), shapes, 3, 11);
    INFO(v.detail);
    CHECK(v.where == stage::pass);
  }
  SUBCASE("the reference as a candidate") {
    const auto v = ev.check(cand(p.reference_source, p.reference_launch), shapes, 2, 12);
    INFO(v.detail);
    CHECK(v.where == stage::pass);
  }
  SUBCASE("out-of-bounds write: crash, then a fresh worker") {
    const auto v = ev.check(cand(softmax_body("", "yr[c + (1LL << 38)] = 1.f;")), shapes, 1, 13);
    INFO(v.detail);
    CHECK(v.where == stage::crash);
    const auto ok = ev.check(cand(softmax_body("", "yr[c] = expf(xr[c] - m) / sum;")), shapes, 1, 14);
    INFO(ok.detail);
    CHECK(ok.where == stage::pass);
  }
  SUBCASE("infinite loop: timeout") {
    const auto v = ev.check(cand(softmax_body("for (;;) { __nanosleep(1000); if (clock64() < 0) break; }",
                                              "yr[c] = expf(xr[c] - m) / sum;")),
                            shapes, 1, 15);
    INFO(v.detail);
    CHECK(v.where == stage::timeout);
  }
  SUBCASE("partial write: correctness") {
    const auto v = ev.check(cand(softmax_body("", "if (c != C - 1) yr[c] = expf(xr[c] - m) / sum;")), shapes, 1, 16);
    INFO(v.detail);
    CHECK(v.where == stage::correctness);
    CHECK(v.detail.find("not written") != std::string::npos);
  }
  SUBCASE("NaN: correctness") {
    const auto v =
        ev.check(cand(softmax_body("", "yr[c] = (c == 7) ? __int_as_float(0x7fc00000) : expf(xr[c] - m) / sum;")),
                 shapes, 1, 17);
    INFO(v.detail);
    CHECK(v.where == stage::correctness);
    CHECK(v.detail.find("NaN") != std::string::npos);
  }
  SUBCASE("missing __syncthreads race: correctness over repeated trials") {
    // The sum reduction reads red[] without the barriers: other warps' partial sums may be missing.
    const std::string racy = R"(
extern "C" __global__ void k(float* x, float* y, long long R, long long C) {
  __shared__ float red[256];
  const long long r = blockIdx.x; const int t = threadIdx.x;
  const float* xr = x + r * C; float* yr = y + r * C;
  float m = -3.0e38f;
  for (long long c = t; c < C; c += 256) m = fmaxf(m, xr[c]);
  red[t] = m; __syncthreads();
  for (int s = 128; s > 0; s >>= 1) { if (t < s) red[t] = fmaxf(red[t], red[t + s]); __syncthreads(); }
  m = red[0]; __syncthreads();
  float sum = 0.f;
  for (long long c = t; c < C; c += 256) sum += expf(xr[c] - m);
  volatile float* vr = red;
  vr[t] = sum;
  for (int s = 128; s > 0; s >>= 1) { if (t < s) vr[t] += vr[t + s]; }
  sum = vr[0];
  for (long long c = t; c < C; c += 256) yr[c] = expf(xr[c] - m) / sum;
}
)";
    const auto v = ev.check(cand(racy), shapes, 8, 18);
    INFO(v.detail);
    CHECK(v.where == stage::correctness);
  }
  SUBCASE("write to an input: correctness") {
    const auto v = ev.check(
        cand(softmax_body("", "yr[c] = expf(xr[c] - m) / sum;", "__syncthreads(); if (t == 0) x[r * C] = 42.f;")),
        shapes, 1, 19);
    INFO(v.detail);
    CHECK(v.where == stage::correctness);
  }
  SUBCASE("a kernel the plan names but the source lacks: signature") {
    const auto v = ev.check(cand("extern \"C\" __global__ void other(float* y) { y[0] = 0; }"), shapes, 1, 20);
    INFO(v.detail);
    CHECK(v.where == stage::signature);
  }
}

TEST_CASE("cuda backend: a compile that runs too long is killed") {
  const auto p = softmax();
  cuda_options o;
  o.compile_timeout = 3;
  o.cache_dir = (fs::temp_directory_path() / ("kb_gpu_test_cache_" + std::to_string(::getpid()))).string();
  cuda_evaluator ev(p, o);
  std::string bomb = "#define A0 v = v * 1.0001f + 0.5f;\n";
  for (int i = 1; i <= 22; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
  bomb +=
      "extern \"C\" __global__ void k(float* x, float* y, long long R, long long C) { float v = x[0]; A22 y[0] = v; "
      "}\n";
  const auto v = ev.build(cand(bomb));
  INFO(v.detail);
  CHECK(v.where == stage::compile);
  fs::remove_all(o.cache_dir);
}

TEST_CASE("cuda backend: prefetched candidates compile in parallel, once each, and build from the result") {
  const auto p = softmax();
  cuda_options o;
  o.cache_dir = (fs::temp_directory_path() / ("kb_gpu_prefetch_cache_" + std::to_string(::getpid()))).string();
  cuda_evaluator ev(p, o);
  const auto after_setup = ev.compiles();  // the reference
  auto cs = distinct_softmaxes(6, "e-9f");
  cs.push_back(cand("extern \"C\" __global__ void k(float* x) { this does not compile }"));
  for (auto const& c : cs) ev.prefetch(c);
  for (auto const& c : cs) ev.prefetch(c);  // a second hint for the same source is ignored
  // Before any build: the six correct candidates' cubins appear in the cache on their own.
  auto cubins = [&] {
    std::size_t n = 0;
    for (auto const& e : fs::directory_iterator(fs::path(o.cache_dir) / "cuda"))
      if (e.path().extension() == ".cubin" && e.path().filename().string().find(".tmp") == std::string::npos) ++n;
    return n;
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (cubins() < 1 + 6 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(cubins() == 1 + 6);  // the reference and the six, compiled in the background
  for (std::size_t i = 0; i + 1 < cs.size(); ++i) {
    const auto v = ev.build(cs[i]);
    INFO(v.detail);
    CHECK(v.where == stage::pass);
  }
  const auto bad = ev.build(cs.back());
  CHECK(bad.where == stage::compile);
  CHECK(bad.detail.find("NVRTC") != std::string::npos);
  CHECK(ev.compiles() - after_setup == cs.size());  // each source compiled exactly once, the failing one too
  const auto v = ev.check(cs[2], shapes, 1, 5);
  INFO(v.detail);
  CHECK(v.where == stage::pass);
  fs::remove_all(o.cache_dir);
}

TEST_CASE("cuda backend: two evaluators sharing a cache compile the same sources at once without harm") {
  // As two searches on two GPUs do: a reader must never take a half-written cubin or log for a hit
  // (it once did: an empty ptxas log made correct kernels look like "the source does not define").
  const auto p = softmax();
  cuda_options o;
  o.cache_dir = (fs::temp_directory_path() / ("kb_gpu_shared_cache_" + std::to_string(::getpid()))).string();
  cuda_evaluator a(p, o), b(p, o);
  const auto cs = distinct_softmaxes(12, "e-8f");
  std::vector<verdict> va(cs.size()), vb(cs.size());
  {
    std::thread ta([&] {
      for (std::size_t i = 0; i < cs.size(); ++i) va[i] = a.build(cs[i]);
    });
    std::thread tb([&] {
      for (std::size_t i = 0; i < cs.size(); ++i) vb[i] = b.build(cs[i]);
    });
    ta.join();
    tb.join();
  }
  for (std::size_t i = 0; i < cs.size(); ++i) {
    INFO(i, ": ", va[i].detail, " / ", vb[i].detail);
    CHECK(va[i].where == stage::pass);
    CHECK(vb[i].where == stage::pass);
  }
  for (auto const& e : fs::directory_iterator(fs::path(o.cache_dir) / "cuda"))  // no temporary left behind
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  fs::remove_all(o.cache_dir);
}

TEST_CASE("cuda backend: timing, interleaved A/B and the baseline") {
  const auto p = softmax();
  cuda_evaluator ev(p);
  const auto b = ev.measure_baseline(p);
  REQUIRE(b.seconds.size() == p.shapes.size());
  for (double s : b.seconds) CHECK(s > 0);
  auto good = cand(softmax_body("", "yr[c] = expf(xr[c] - m) / sum;"));
  auto ref = cand(p.reference_source, p.reference_launch);
  rung r;
  r.shapes = {5, 6};
  r.samples = 5;
  r.interleaved = true;
  measure_request req;
  req.seed = 5;
  req.incumbent = &ref;
  const auto m = ev.measure(good, r, req);
  INFO(m.result.detail);
  REQUIRE(m.result.where == stage::pass);
  REQUIRE(m.timings.size() == 2);
  CHECK(m.vs_incumbent.has_value());
  REQUIRE(m.res.has_value());
  CHECK(m.res->registers > 0);
  CHECK(m.res->occupancy > 0);
  CHECK(ev.take_device_seconds() > 0);
}

TEST_CASE("cuda backend: the baseline times PyTorch eager and torch.compile on the same device, and checks them") {
  // The gpu.cuda_backend test runs with KERNELBRAIN_PYTHON=none (the other baselines need no PyTorch);
  // this one names the interpreter, which wins over the environment.
  if (std::system("python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1") !=
      0) {
    MESSAGE("no python3 with CUDA torch here: nothing to measure");
    return;
  }
  const auto p = softmax();
  cuda_options o;
  o.pytorch.python = "python3";
  o.pytorch.compile = true;
  cuda_evaluator ev(p, o);
  const auto b = ev.measure_baseline(p);
  REQUIRE(b.pytorch);
  auto const& t = *b.pytorch;
  INFO(t.why);
  REQUIRE(t.status == "measured");
  CHECK(!t.torch_version.empty());
  CHECK(t.driver_version > 0);
  CHECK(t.samples == 30);
  CHECK(t.device_seconds > 0);
  // Charged like the reference: the device seconds include PyTorch's.
  CHECK(ev.take_device_seconds() >= t.device_seconds);
  std::size_t timed = 0, checked = 0;
  for (std::size_t i = 0; i < p.shapes.size(); ++i) {
    auto const& s = p.shapes[i];
    auto const* row = t.at_index(i);
    CAPTURE(s.name);
    if (pytorch_timed_shape(s)) {
      REQUIRE(row != nullptr);
      CHECK(row->eager_seconds > 0);
      CHECK(row->compile_seconds > 0);
      // Not faster than the roofline floor allows (a time below it is a measuring bug).
      CHECK(row->eager_seconds >= p.machine.floor_seconds(s) * 0.9);
      ++timed;
    }
    if (row && row->checked) {
      CHECK(row->eager_ok);
      CHECK(row->compile_ok);
      ++checked;
    }
  }
  CHECK(timed >= 2);
  CHECK(checked >= 1);
}
