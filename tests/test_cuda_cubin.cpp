// The CUDA backend's parent side on a machine without a GPU: entry points and resources read from
// cubins that NVRTC made here (with and without the ptxas report), cubin bytes that are not a cubin,
// ptxas-like text a candidate can print, and how compute-sanitizer output becomes a verdict.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/cubin.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/backends/registry.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/core/rng.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/isolation/worker_process.hpp>
#include <sstream>
#include <string>
#include <vector>
#include "temp_dir.hpp"

using namespace kernelbrain;
using namespace kernelbrain::detail;  // these tests reach the process and wire plumbing
namespace fs = std::filesystem;

namespace {

using kb_test::temp_dir;

using kb_test::slurp;

// Kernels with what ptxas reports about them: a stack frame, static shared memory, launch bounds,
// parameters of several sizes, an entry with a mangled name and a device function that is no entry.
constexpr char const* kernels_source = R"(
__device__ __noinline__ float helper(float x) { return x * 2.f; }
extern "C" __global__ void framed(float* x, float* y, long long R, long long C) {
  __shared__ float red[256];
  float loc[64];
  for (int i = 0; i < 64; ++i) loc[i] = x[(threadIdx.x * 7 + i * 13) % 256];
  red[threadIdx.x] = helper(loc[(int)x[0] & 63]);
  __syncthreads();
  y[threadIdx.x] = red[255 - threadIdx.x] + R + C;
}
extern "C" __global__ void __launch_bounds__(128) bounded(const float* __restrict__ x, int n) {
  extern __shared__ float s[];
  s[threadIdx.x] = x[threadIdx.x] + n;
}
struct pod { int a; short b; double c[3]; };
extern "C" __global__ void mixed(pod p, short s, char c, float* x) { x[0] = p.a + p.b + p.c[2] + s + c; }
__global__ void mangled(float* x) { x[0] = 1; }
)";

#ifdef KB_HAVE_CUDA_WORKER
/// `cu` compiled by the worker's NVRTC into `cubin` for `arch`, with the CUDA backend's flags.
captured_run compile_cubin(fs::path const& cu, fs::path const& cubin, std::string const& arch) {
  return run_captured({find_cuda_worker(), "--compile", cu.string(), cubin.string(), "--gpu-architecture=" + arch,
                       "-default-device", "--std=c++17"},
                      std::chrono::milliseconds(120000));
}
#endif

}  // namespace

TEST_CASE("cubin: read_cubin agrees with the ptxas report on cubins NVRTC made here") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  temp_dir d("agree");
  std::ofstream(d.path / "k.cu") << kernels_source;
  for (std::string arch : {"sm_90", "sm_90a", "sm_80"}) {
    const auto r = compile_cubin(d.path / "k.cu", d.path / (arch + ".cubin"), arch);
    INFO(arch, ": ", r.output);
    REQUIRE(r.succeeded());
    const auto info = read_cubin_file((d.path / (arch + ".cubin")).string());
    CHECK(info.sm == std::stoi(arch.substr(3, 2)));
    const auto report = parse_ptxas_log(r.output);
    CHECK(info.kernels.size() == 4);  // helper is no entry point
    CHECK(info.find("helper") == nullptr);
    CHECK(info.find("_Z7mangledPf") != nullptr);
    for (auto const& k : info.kernels) {
      INFO(arch, " ", k.name);
      auto it = std::find_if(report.begin(), report.end(), [&](auto const& e) { return e.first == k.name; });
      REQUIRE(it != report.end());
      CHECK(k.registers == it->second.registers);
      CHECK(k.local_bytes == it->second.stack);
      CHECK(k.static_smem == it->second.static_smem);
      CHECK(k.registers > 0);
    }
    auto const* framed = info.find("framed");
    REQUIRE(framed != nullptr);
    CHECK(framed->static_smem == 1024);
    CHECK(framed->local_bytes > 0);
    CHECK(framed->param_sizes == std::vector<int>{8, 8, 8, 8});
    auto const* bounded = info.find("bounded");
    REQUIRE(bounded != nullptr);
    CHECK(bounded->max_threads == 128);
    CHECK(bounded->param_sizes == std::vector<int>{8, 4});
    CHECK(bounded->static_smem == 0);
    CHECK(info.find("mixed")->param_sizes == std::vector<int>{32, 2, 1, 8});
  }
#endif
}

TEST_CASE(
    "cuda answer format: what it says is built in compiles with NVRTC's flags, and the macros it excludes do not") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples/cuda_problems/softmax");
  const std::string format = backends().traits("cuda").answer_format(p);
  // Every name the probe kernel uses is one the answer format lists as built in.
  const std::vector<std::string> names{"float2",
                                       "float4",
                                       "int4",
                                       "make_float4",
                                       "expf",
                                       "__expf",
                                       "exp2f",
                                       "logf",
                                       "tanhf",
                                       "sqrtf",
                                       "rsqrtf",
                                       "fmaf",
                                       "fmaxf",
                                       "fminf",
                                       "fabsf",
                                       "__fdividef",
                                       "min and max",
                                       "__ldg",
                                       "__shfl_xor_sync",
                                       "__shfl_down_sync",
                                       "__ballot_sync",
                                       "__syncwarp",
                                       "__popc",
                                       "__int_as_float",
                                       "__float_as_int",
                                       "atomicAdd",
                                       "__launch_bounds__",
                                       "__align__(n)",
                                       "__restrict__",
                                       "INFINITY",
                                       "FLT_MAX",
                                       "3.402823466e38f"};
  for (auto const& n : names) CHECK_MESSAGE(format.find(n) != std::string::npos, n);
  const std::string probe = R"(
extern "C" __global__ void __launch_bounds__(256, 2) probe(const float* __restrict__ x, float* y, long long n) {
  __shared__ __align__(16) float s[256];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const float4 v = reinterpret_cast<const float4*>(x)[0];
  const float2 w = make_float2(v.x, v.y);
  const int4 q = make_int4(1, 2, 3, 4);
  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
  float a = i < n ? __ldg(x + i) : 0.f;
  a = fmaxf(fminf(a, 1.f), -1.f) + fmaf(a, 2.f, 1.f) + expf(a) + __expf(a) + exp2f(a) + logf(fabsf(a) + 1.f) +
      tanhf(a) + sqrtf(fabsf(a)) + rsqrtf(fabsf(a) + 1.f) + __fdividef(a, 3.f) + w.x + v.w + q.z + z.y;
  a += __shfl_xor_sync(0xffffffffu, a, 1) + __shfl_down_sync(0xffffffffu, a, 2);
  const unsigned b = __ballot_sync(0xffffffffu, a > 0.f);
  __syncwarp();
  s[threadIdx.x] = fminf(a + __popc(b) + max(1, 2) + min(3.f, 4.f), __int_as_float(0x7f800000)) +
                   __float_as_int(1.f) * 0.f + 3.402823466e38f * 0.f;
  __syncthreads();
  atomicAdd(y, s[255 - threadIdx.x]);
  if (i < n) y[i] = s[threadIdx.x];
}
)";
  temp_dir d("answer_format");
  const auto compile = [&](std::string const& name, std::string const& source) {
    std::ofstream(d.path / (name + ".cu")) << source;
    return compile_cubin(d.path / (name + ".cu"), d.path / (name + ".cubin"), "sm_90a");
  };
  const auto ok = compile("probe", probe);
  INFO(ok.output);
  CHECK(ok.succeeded());
  CHECK(fs::exists(d.path / "probe.cubin"));
  for (std::string macro : {"INFINITY", "FLT_MAX"}) {
    const auto r = compile(macro, "extern \"C\" __global__ void k(float* y) { y[0] = " + macro + "; }\n");
    CHECK_MESSAGE(r.output.find("identifier \"" + macro + "\" is undefined") != std::string::npos, r.output);
  }
#endif
}

TEST_CASE("cuda backend: a kernel compiled before is found from its cubin when the ptxas report is empty") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  // On a CUDA compute-cache hit NVRTC skips ptxas and prints no report; at b527ff9 every such
  // candidate was rejected at 'signature' ("entry points: none"). Here the report is removed from the
  // cache by hand, as the compute cache would have left it, and a second evaluator builds again.
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  temp_dir d("noreport");
  cuda_options o;
  o.cache_dir = d.path.string();
  o.sanitize = false;
  auto c = make_candidate("test", parameters{}, "test", std::nullopt, p.reference_source, p.reference_launch);
  c.source = "// a copy of the reference\n" + c.source;
  c.seal();
  std::optional<resources> first;
  {
    cuda_evaluator ev(p, o);
    const auto v = ev.build(c);
    INFO(v.detail);
    REQUIRE(v.where == stage::pass);
    first = ev.resources_of(c);
  }
  REQUIRE(first.has_value());
  std::size_t emptied = 0;
  for (auto const& e : fs::recursive_directory_iterator(d.path))
    if (e.path().extension() == ".log") {
      std::ofstream(e.path(), std::ios::trunc) << "\n";
      ++emptied;
    }
  CHECK(emptied >= 2);  // the reference and the candidate
  cuda_evaluator again(p, o);
  CHECK(again.cache_hits() >= 1);
  const auto v = again.build(c);
  INFO(v.detail);
  CHECK(v.where == stage::pass);
  const auto second = again.resources_of(c);
  REQUIRE(second.has_value());
  CHECK(second->registers == first->registers);
  CHECK(second->shared_bytes == first->shared_bytes);
  CHECK(second->occupancy == doctest::Approx(first->occupancy));
  CHECK(second->registers > 0);
  // A launch plan naming a kernel the source lacks is still a signature reject naming the entry points.
  auto wrong = c;
  wrong.launch =
      R"({"launches": [{"kernel": "nope", "grid": ["R", "1", "1"], "block": ["256", "1", "1"], "smem": "0", "args": ["x", "y", "R", "C"]}]})";
  wrong.seal();
  const auto w = again.build(wrong);
  CHECK(w.where == stage::signature);
  CHECK(w.detail.find("nope") != std::string::npos);
#endif
}

TEST_CASE("cubin: bytes that are not a well-formed cubin are an error, never a crash") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  temp_dir d("mutate");
  std::ofstream(d.path / "k.cu") << kernels_source;
  const auto r = compile_cubin(d.path / "k.cu", d.path / "k.cubin", "sm_90");
  REQUIRE(r.succeeded());
  const auto image = slurp(d.path / "k.cubin");
  REQUIRE(read_cubin(image).kernels.size() == 4);
  CHECK_THROWS_AS((void)read_cubin(""), error);
  CHECK_THROWS_AS((void)read_cubin("not an elf file at all, but long enough to hold an ELF header......"), error);
  CHECK_THROWS_AS((void)read_cubin(image.substr(0, 63)), error);
  CHECK_THROWS_AS((void)read_cubin_file((d.path / "missing.cubin").string()), error);
  // Truncations and random corruptions: a result or kernelbrain::error, nothing else.
  rng g(20261201);
  std::size_t parsed = 0, refused = 0;
  for (std::size_t cut = 0; cut < image.size(); cut += 7) {
    try {
      (void)read_cubin(image.substr(0, cut));
      ++parsed;
    } catch (error const&) {
      ++refused;
    }
  }
  for (int i = 0; i < 20000; ++i) {
    std::string m = image;
    const int flips = 1 + static_cast<int>(g.below(8));
    for (int f = 0; f < flips; ++f) {
      // Headers and tables are where a reader goes wrong: corrupt them more often than code bytes.
      const auto at = g.below(2) ? g.below(std::min<std::uint64_t>(m.size(), 64)) : g.below(m.size());
      m[at] = static_cast<char>(g.below(256));
    }
    try {
      const auto info = read_cubin(m);
      for (auto const& k : info.kernels) CHECK(k.param_sizes.size() < 100000);
      ++parsed;
    } catch (error const&) {
      ++refused;
    }
  }
  MESSAGE(parsed, " corrupted images read, ", refused, " refused");
  CHECK(refused > 0);
#endif
}

TEST_CASE("ptxas report: ptxas-like text from a candidate never throws and later reports win") {
  const std::string hostile =
      "candidate.cu(3): warning #1105-D: #warning directive: ptxas info    : Used 99999999999999999999 registers\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas         .     999999999999999999999 bytes stack frame, -5 bytes spill stores, x bytes spill loads\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem\n"
      "Function properties for \n'\n";
  std::vector<std::pair<std::string, cuda_kernel_resources>> r;
  CHECK_NOTHROW(r = parse_ptxas_log(hostile));
  REQUIRE(r.size() == 1);
  CHECK(r[0].second.registers == 32);
  CHECK(r[0].second.stack == 16);
  CHECK(r[0].second.spill_stores == 0);
  CHECK(r[0].second.static_smem == 1024);
  rng g(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = hostile;
    for (int k = 0; k < 20; ++k) junk[g.below(junk.size())] = static_cast<char>(g.below(256));
    CHECK_NOTHROW((void)parse_ptxas_log(junk));
  }
}

TEST_CASE("compute-sanitizer output becomes a typed verdict") {
  auto exited = [](int code) { return code << 8; };  // a waitpid status for exit(code)
  const std::string ok = "========= COMPUTE-SANITIZER\nkernelbrain-sanitize: ok\n========= ERROR SUMMARY: 0 errors\n";
  CHECK(sanitizer_verdict("memcheck", false, exited(0), ok, 60).where == stage::pass);
  const std::string oob =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at k+0x1f0 in candidate.cu:9\n"
      "=========     by thread (2,0,0) in block (2,0,0)\n"
      "=========     Address 0x7f0000000c0c is out of bounds\n"
      "kernelbrain-sanitize: ok\n"
      "========= ERROR SUMMARY: 1 error\n";
  auto v = sanitizer_verdict("memcheck", false, exited(86), oob, 60);
  CHECK(v.where == stage::sanitizer);
  CHECK(v.detail.find("memcheck found 1 error") != std::string::npos);
  CHECK(v.detail.find("Invalid __global__ read") != std::string::npos);
  // The summary alone is enough (a tool that returns 0 despite errors), and the exit code alone too.
  CHECK(sanitizer_verdict("memcheck", false, exited(0), oob, 60).where == stage::sanitizer);
  CHECK(sanitizer_verdict("synccheck", false, exited(86), "kernelbrain-sanitize: ok\n", 60).where == stage::sanitizer);
  const std::string race =
      "========= COMPUTE-SANITIZER\n"
      "========= Error: Race reported between Write access at k+0x3a0 in candidate.cu:20\n"
      "=========     and Read access at k+0x3c0 in candidate.cu:20 [248 hazards]\n"
      "kernelbrain-sanitize: ok\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n";
  v = sanitizer_verdict("racecheck", false, exited(86), race, 60);
  CHECK(v.where == stage::sanitizer);
  CHECK(v.detail.find("Race reported") != std::string::npos);
  CHECK(sanitizer_verdict(
            "racecheck", false, exited(0),
            "kernelbrain-sanitize: ok\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", 60)
            .where == stage::pass);
  // Racecheck's warnings (possibly benign hazards) set the error exit code but are no error.
  const std::string warning_only =
      "========= COMPUTE-SANITIZER\n"
      "========= Warning: Race reported between Read access at k+0x23a0\n"
      "=========     and Write access at k+0x4ee0 [992 hazards]\n"
      "kernelbrain-sanitize: ok\n"
      "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n";
  CHECK(sanitizer_verdict("racecheck", false, exited(86), warning_only, 60).where == stage::pass);
  // ...but not for another tool, nor when the candidate did not finish.
  CHECK(sanitizer_verdict("racecheck", false, exited(86),
                          "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n", 60)
            .where != stage::pass);
  v = sanitizer_verdict("synccheck", false, exited(86), "kernelbrain-sanitize: ok\n", 60);
  CHECK(v.detail.find("synccheck reported errors") != std::string::npos);
  v = sanitizer_verdict("initcheck", true, 9, "", 180);
  CHECK(v.where == stage::sanitizer);
  CHECK(v.detail.find("180 s") != std::string::npos);
  // The candidate failing under the tool without a report is still the candidate's doing...
  CHECK(sanitizer_verdict("memcheck", false, exited(1),
                          "kernelbrain-sanitize: the candidate failed: CUDA_ERROR_LAUNCH_FAILED\n", 60)
            .where == stage::sanitizer);
  CHECK(
      sanitizer_verdict("memcheck", false, exited(70), "kernelbrain-cuda-worker: sticky CUDA error: ...\n", 60).where ==
      stage::sanitizer);
  // ...but a tool that never ran the candidate is the evaluator's problem, not a verdict against it.
  v = sanitizer_verdict("memcheck", false, exited(1),
                        "========= Error: Target application terminated before first instrumented API call\n", 60);
  CHECK(v.where == stage::infrastructure);
  CHECK(sanitizer_verdict("memcheck", false, exited(0), "", 60).where == stage::infrastructure);
}
