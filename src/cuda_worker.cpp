// kernelbrain-cuda-worker: the process that owns a CUDA context on behalf of KernelBrain's CUDA
// evaluator (the search process never creates one). Modes:
//   --serve cuda                       answer check/time requests on fd 3 (started by the evaluator)
//   --compile SRC OUT.cubin [OPTS...]  NVRTC-compile SRC for the evaluator (run under a time limit);
//                                      prints the compiler log (ptxas -v included), exit 1 on failure
//   --version                          NVRTC version, driver version, device name and L2 size
// A sticky CUDA error (illegal address, trap, ...) ends the worker: the evaluator reports a crash and
// starts a fresh one. Inputs are generated, outputs poisoned and compared by trusted kernels on the
// device; only counters come back to the host.
#include <cuda.h>
#include <nvrtc.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/evaluate/cuda_protocol.hpp"

namespace {

using namespace kernelbrain;
namespace cp = kernelbrain::cuda_protocol;
using clock_type = std::chrono::steady_clock;

std::string read_text(char const* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- --compile --------------------------------------------------------------------------------------

int compile_mode(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kernelbrain-cuda-worker --compile SRC OUT.cubin [NVRTC OPTIONS...]\n");
    return 2;
  }
  const std::string src = read_text(argv[2]);
  std::vector<char const*> opts;
  for (int i = 4; i < argc; ++i) opts.push_back(argv[i]);
  opts.push_back("--ptxas-options=-v");
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src.c_str(), "candidate.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    std::printf("nvrtcCreateProgram failed\n");
    return 1;
  }
  const auto rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  std::fwrite(log.data(), 1, log.size(), stdout);
  std::printf("\n");
  if (rc != NVRTC_SUCCESS) {
    std::printf("NVRTC: %s\n", nvrtcGetErrorString(rc));
    return 1;
  }
  std::size_t cn = 0;
  if (nvrtcGetCUBINSize(prog, &cn) != NVRTC_SUCCESS || cn == 0) {
    std::printf("NVRTC produced no cubin\n");
    return 1;
  }
  std::string bin(cn, '\0');
  nvrtcGetCUBIN(prog, bin.data());
  nvrtcDestroyProgram(&prog);
  const std::string tmp = std::string(argv[3]) + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bin.data(), static_cast<std::streamsize>(bin.size()));
    if (!out) {
      std::printf("cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), argv[3]) != 0) {
    std::printf("cannot rename %s\n", tmp.c_str());
    return 1;
  }
  return 0;
}

// ---- trusted device code ---------------------------------------------------------------------------

constexpr char const* trusted_source = R"(
typedef unsigned long long u64;
__device__ __forceinline__ u64 kb_mix(u64 z) {
  z += 0x9E3779B97F4A7C15ull; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull; return z ^ (z >> 31);
}
__device__ __forceinline__ float kb_u01(u64 h) { return ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f); }
__device__ __forceinline__ unsigned short kb_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float kb_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned kb_bits(const void* p, long long i, int dt) {
  return dt ? (unsigned)((const unsigned short*)p)[i] : ((const unsigned*)p)[i];
}
__device__ __forceinline__ float kb_val(unsigned b, int dt) { return dt ? kb_h2f((unsigned short)b) : __uint_as_float(b); }
extern "C" __global__ void kb_fill(void* p, long long n, int dt, int dist, u64 seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    u64 h = kb_mix(seed ^ kb_mix((u64)i));
    float v;
    if (dist == 1) v = 2.f * kb_u01(h) - 1.f;
    else if (dist == 2) v = 0.5f + 1.5f * kb_u01(h);
    else { float a = kb_u01(h), b = kb_u01(kb_mix(h)); v = sqrtf(-2.f * logf(a)) * cospif(2.f * b); }
    if (dt) ((unsigned short*)p)[i] = kb_f2h(v); else ((float*)p)[i] = v;
  }
}
extern "C" __global__ void kb_poison(void* p, long long n, int dt, unsigned bits) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (dt) ((unsigned short*)p)[i] = (unsigned short)bits; else ((unsigned*)p)[i] = bits;
  }
}
extern "C" __global__ void kb_checksum(const unsigned short* p, long long n, u64* out) {
  u64 acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    acc += kb_mix(((u64)i << 16) ^ p[i]);
  atomicAdd(out, acc);
}
extern "C" __global__ void kb_maxabs(const void* r, long long n, int dt, unsigned* out) {
  float m = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = fabsf(kb_val(kb_bits(r, i, dt), dt));
    if (v <= 3.0e38f && v > m) m = v;
  }
  atomicMax(out, __float_as_uint(m));
}
// st[0..5]: counts of (first run unwritten, second run unwritten, non-finite, wrong, runs differ,
// reference non-finite); st[6..11]: the first index of each.
extern "C" __global__ void kb_compare(const void* o, const void* f, const void* r, long long n, int dt,
                                      unsigned p1, unsigned p2, double bound, u64* st) {
  u64 c[6] = {0, 0, 0, 0, 0, 0}, first[6];
  for (int k = 0; k < 6; ++k) first[k] = ~0ull;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned ob = kb_bits(o, i, dt), fb = kb_bits(f, i, dt), rb = kb_bits(r, i, dt);
    float ov = kb_val(ob, dt), rv = kb_val(rb, dt);
    int k = -1;
    if (fb == p1) k = 0;
    else if (ob == p2) k = 1;
    else if (!isfinite(ov)) k = 2;
    else if (!(fabs((double)ov - (double)rv) <= bound)) k = 3;
    if (k >= 0) { if (!c[k]++) first[k] = i; }
    if (fb != p1 && ob != p2 && ob != fb) { if (!c[4]++) first[4] = i; }
    if (!isfinite(rv)) { if (!c[5]++) first[5] = i; }
  }
  for (int k = 0; k < 6; ++k) if (c[k]) { atomicAdd(st + k, c[k]); atomicMin(st + 6 + k, first[k]); }
}
)";

// ---- the serving worker --------------------------------------------------------------------------------

constexpr std::uint32_t f32_p1 = 0x7fc0deadU, f32_p2 = 0x7f7fdeadU;  // a NaN, then a huge finite value
constexpr std::uint32_t f16_p1 = 0x7e5aU, f16_p2 = 0x7bfeU;

bool sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}
std::string err_text(CUresult r) {
  char const* n = nullptr;
  char const* s = nullptr;
  cuGetErrorName(r, &n);
  cuGetErrorString(r, &s);
  return std::string(n ? n : "CUDA error") + " (" + (s ? s : "?") + ")";
}

/// A failure that ends the request with a status (not sticky).
struct request_failure {
  cp::status st;
  std::string message;
  std::int32_t index = -1;
};

class cuda_worker {
 public:
  cuda_worker() {
    die_if(cuInit(0), "cuInit");
    die_if(cuDeviceGet(&dev_, 0), "cuDeviceGet");
    die_if(cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    die_if(cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    die_if(cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    die_if(cuEventCreate(&e0_, CU_EVENT_DEFAULT), "cuEventCreate");
    die_if(cuEventCreate(&e1_, CU_EVENT_DEFAULT), "cuEventCreate");
    int sms = 0;
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_);
    grid_ = std::max(1, sms) * 8;
    load_trusted();
    die_if(cuMemAlloc(&stats_, 16 * sizeof(std::uint64_t)), "cuMemAlloc(stats)");
  }

  std::string handle(std::uint32_t type, std::string_view body, worker_context& ctx) {
    cp::reply rep;
    const auto t0 = clock_type::now();
    try {
      const auto q = cp::decode_run(body);
      prepare(q);
      if (type == static_cast<std::uint32_t>(cp::request::check))
        check(q, ctx);
      else if (type == static_cast<std::uint32_t>(cp::request::time))
        time(q, ctx, rep);
      else
        throw request_failure{cp::status::bad_request, "unknown request type " + std::to_string(type)};
    } catch (request_failure const& f) {
      rep.st = f.st;
      rep.message = f.message;
      rep.index = f.index;
    } catch (wire_error const& e) {
      rep.st = cp::status::bad_request;
      rep.message = e.what();
    }
    rep.device_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    return cp::encode(rep);
  }

 private:
  [[noreturn]] static void die(std::string const& what) {
    std::fprintf(stderr, "kernelbrain-cuda-worker: sticky CUDA error: %s\n", what.c_str());
    std::fflush(stderr);
    std::_Exit(70);
  }
  static void die_if(CUresult r, char const* what) {
    if (r != CUDA_SUCCESS) die(std::string(what) + ": " + err_text(r));
  }
  /// Synchronises; a sticky error ends the process, another error fails the request.
  void sync(std::string const& what) {
    const CUresult r = cuStreamSynchronize(stream_);
    if (r == CUDA_SUCCESS) return;
    if (sticky(r)) die(what + ": " + err_text(r));
    throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
  }

  void load_trusted() {
    nvrtcProgram prog;
    nvrtcCreateProgram(&prog, trusted_source, "kb_trusted.cu", 0, nullptr, nullptr);
    char const* opts[] = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17"};
    if (nvrtcCompileProgram(prog, 3, opts) != NVRTC_SUCCESS) {
      std::size_t n = 0;
      nvrtcGetProgramLogSize(prog, &n);
      std::string log(n, '\0');
      nvrtcGetProgramLog(prog, log.data());
      die("the trusted kernels do not compile: " + log);
    }
    std::size_t cn = 0;
    nvrtcGetCUBINSize(prog, &cn);
    std::string bin(cn, '\0');
    nvrtcGetCUBIN(prog, bin.data());
    nvrtcDestroyProgram(&prog);
    die_if(cuModuleLoadData(&trusted_, bin.data()), "loading the trusted kernels");
    die_if(cuModuleGetFunction(&k_fill_, trusted_, "kb_fill"), "kb_fill");
    die_if(cuModuleGetFunction(&k_poison_, trusted_, "kb_poison"), "kb_poison");
    die_if(cuModuleGetFunction(&k_checksum_, trusted_, "kb_checksum"), "kb_checksum");
    die_if(cuModuleGetFunction(&k_maxabs_, trusted_, "kb_maxabs"), "kb_maxabs");
    die_if(cuModuleGetFunction(&k_compare_, trusted_, "kb_compare"), "kb_compare");
  }

  void trusted_launch(CUfunction f, void** args, std::string const& what) {
    const CUresult r = cuLaunchKernel(f, static_cast<unsigned>(grid_), 1, 1, 256, 1, 1, 0, stream_, args, nullptr);
    if (r != CUDA_SUCCESS) {
      if (sticky(r)) die(what + ": " + err_text(r));
      throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
    }
  }

  // -- buffers
  struct buffer {
    CUdeviceptr p = 0;
    std::uint64_t bytes = 0;
  };
  static std::uint64_t bytes_of(cp::tensor const& t) { return t.count * (t.dtype ? 2 : 4); }
  buffer alloc(std::uint64_t bytes, std::string const& what) {
    buffer b;
    b.bytes = bytes;
    const CUresult r = cuMemAlloc(&b.p, std::max<std::uint64_t>(bytes, 256));
    if (r != CUDA_SUCCESS) {
      if (sticky(r)) die("cuMemAlloc: " + err_text(r));
      throw request_failure{cp::status::out_of_memory,
                            "cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + err_text(r)};
    }
    return b;
  }
  void release(std::vector<buffer>& v) {
    for (auto& b : v)
      if (b.p) cuMemFree(b.p);
    v.clear();
  }
  void prepare(cp::run_request const& q) {
    if (q.shape_key == shape_key_ && have_shape_) return;
    release(in_);
    release(out_);
    release(first_);
    release(ref_);
    release(outb_);
    for (auto& [k, v] : scratch_) release(v);
    scratch_.clear();
    have_shape_ = false;
    for (auto const& t : q.inputs) in_.push_back(alloc(bytes_of(t), "an input"));
    for (auto const& t : q.outputs) {
      out_.push_back(alloc(bytes_of(t), "an output"));
      first_.push_back(alloc(bytes_of(t), "an output copy"));
      ref_.push_back(alloc(bytes_of(t), "a reference output"));
    }
    shape_key_ = q.shape_key;
    have_shape_ = true;
  }
  void ensure_outb(cp::run_request const& q) {
    if (!outb_.empty()) return;
    for (auto const& t : q.outputs) outb_.push_back(alloc(bytes_of(t), "the incumbent's output"));
  }

  CUmodule module(std::string const& path) {
    if (auto it = modules_.find(path); it != modules_.end()) return it->second;
    CUmodule m = nullptr;
    const CUresult r = cuModuleLoad(&m, path.c_str());
    if (r != CUDA_SUCCESS) {
      if (sticky(r)) die("cuModuleLoad: " + err_text(r));
      throw request_failure{cp::status::load_failed, "cannot load the compiled module: " + err_text(r)};
    }
    modules_.emplace(path, m);
    return m;
  }

  void fill(cp::run_request const& q, std::uint64_t seed) {
    for (std::size_t k = 0; k < q.inputs.size(); ++k) {
      long long n = static_cast<long long>(q.inputs[k].count);
      int dt = q.inputs[k].dtype, dist = q.inputs[k].distribution;
      unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + k * 0x632BE59BD9B4E019ULL + 1;
      void* args[] = {&in_[k].p, &n, &dt, &dist, &s};
      trusted_launch(k_fill_, args, "generating inputs");
    }
  }
  void poison(std::vector<buffer> const& outs, cp::run_request const& q, bool second) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      long long n = static_cast<long long>(q.outputs[k].count);
      int dt = q.outputs[k].dtype;
      unsigned bits = dt ? (second ? f16_p2 : f16_p1) : (second ? f32_p2 : f32_p1);
      void* args[] = {const_cast<CUdeviceptr*>(&outs[k].p), &n, &dt, &bits};
      trusted_launch(k_poison_, args, "poisoning outputs");
    }
  }
  std::vector<std::uint64_t> checksums(cp::run_request const& q) {
    std::vector<std::uint64_t> out;
    for (std::size_t k = 0; k < q.inputs.size(); ++k) {
      cuMemsetD32Async(stats_, 0, 2, stream_);
      long long n = static_cast<long long>(bytes_of(q.inputs[k]) / 2);
      void* args[] = {&in_[k].p, &n, &stats_};
      trusted_launch(k_checksum_, args, "checksumming inputs");
      std::uint64_t v = 0;
      cuMemcpyDtoHAsync(&v, stats_, 8, stream_);
      sync("checksumming inputs");
      out.push_back(v);
    }
    return out;
  }

  /// Runs a plan with `outs` as its outputs.
  void run_plan(cp::plan const& p, cp::run_request const& q, std::vector<buffer> const& outs, std::string const& who,
                bool time_it = false, float* ms = nullptr) {
    CUmodule m = module(p.cubin);
    auto& scratch = scratch_[p.cubin];
    if (scratch.size() != p.scratch.size()) {
      release(scratch);
      for (auto b : p.scratch) scratch.push_back(alloc(b, "scratch"));
    }
    // Scratch starts as poison: a kernel must write all the scratch it reads.
    for (auto const& b : scratch) cuMemsetD32Async(b.p, f32_p1, b.bytes / 4, stream_);
    std::vector<CUfunction> fns;
    for (auto const& l : p.launches) {
      CUfunction f = nullptr;
      if (cuModuleGetFunction(&f, m, l.kernel.c_str()) != CUDA_SUCCESS)
        throw request_failure{cp::status::missing_kernel,
                              who + ": the module has no kernel '" + l.kernel +
                                  "' (declare it extern \"C\" __global__)"};
      if (l.smem > 48 * 1024) {
        const CUresult r =
            cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem));
        if (r != CUDA_SUCCESS)
          throw request_failure{cp::status::launch_failed,
                                who + ": kernel '" + l.kernel + "' cannot have " + std::to_string(l.smem) +
                                    " bytes of dynamic shared memory: " + err_text(r)};
      }
      fns.push_back(f);
    }
    std::vector<CUdeviceptr> ptrs;
    for (auto const& b : in_) ptrs.push_back(b.p);
    for (auto const& b : outs) ptrs.push_back(b.p);
    for (auto const& b : scratch) ptrs.push_back(b.p);
    if (time_it) cuEventRecord(e0_, stream_);
    for (std::size_t i = 0; i < p.launches.size(); ++i) {
      auto const& l = p.launches[i];
      std::vector<long long> dimv;
      dimv.reserve(l.args.size());
      std::vector<void*> args;
      for (std::size_t a = 0; a + 1 < l.args.size(); a += 2) {
        const auto kind = l.args[a], idx = l.args[a + 1];
        if (kind == 0 && idx >= 0 && static_cast<std::size_t>(idx) < ptrs.size())
          args.push_back(&ptrs[static_cast<std::size_t>(idx)]);
        else if (kind == 1 && idx >= 0 && static_cast<std::size_t>(idx) < q.dims.size()) {
          dimv.push_back(q.dims[static_cast<std::size_t>(idx)]);
          args.push_back(&dimv.back());
        } else
          throw request_failure{cp::status::bad_request, "argument out of range"};
      }
      CUresult r;
      const auto u = [](std::int64_t v) { return static_cast<unsigned>(v); };
      if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1) {
        CUlaunchConfig cfg{};
        cfg.gridDimX = u(l.grid[0]);
        cfg.gridDimY = u(l.grid[1]);
        cfg.gridDimZ = u(l.grid[2]);
        cfg.blockDimX = u(l.block[0]);
        cfg.blockDimY = u(l.block[1]);
        cfg.blockDimZ = u(l.block[2]);
        cfg.sharedMemBytes = u(l.smem);
        cfg.hStream = stream_;
        CUlaunchAttribute at{};
        at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at.value.clusterDim.x = u(l.cluster[0]);
        at.value.clusterDim.y = u(l.cluster[1]);
        at.value.clusterDim.z = u(l.cluster[2]);
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        r = cuLaunchKernelEx(&cfg, fns[i], args.data(), nullptr);
      } else {
        r = cuLaunchKernel(fns[i], u(l.grid[0]), u(l.grid[1]), u(l.grid[2]), u(l.block[0]), u(l.block[1]),
                           u(l.block[2]), u(l.smem), stream_, args.data(), nullptr);
      }
      if (r != CUDA_SUCCESS) {
        if (sticky(r)) die(who + ": launching '" + l.kernel + "': " + err_text(r));
        throw request_failure{cp::status::launch_failed, who + ": launching '" + l.kernel + "': " + err_text(r)};
      }
    }
    if (time_it) cuEventRecord(e1_, stream_);
    sync(who);
    if (time_it && ms) cuEventElapsedTime(ms, e0_, e1_);
  }

  /// Compares `outs` (and `firsts`, the first run's copy) with the reference outputs.
  void compare(cp::run_request const& q, std::vector<buffer> const& outs, std::vector<buffer> const& firsts,
               bool two_runs, std::string const& when) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      long long n = static_cast<long long>(q.outputs[k].count);
      int dt = q.outputs[k].dtype;
      cuMemsetD32Async(stats_, 0, 1, stream_);
      void* margs[] = {const_cast<CUdeviceptr*>(&ref_[k].p), &n, &dt, &stats_};
      trusted_launch(k_maxabs_, margs, "the comparison");
      unsigned maxbits = 0;
      cuMemcpyDtoHAsync(&maxbits, stats_, 4, stream_);
      sync("the comparison");
      float maxref;
      std::memcpy(&maxref, &maxbits, 4);
      double bound = q.atol + q.rtol * static_cast<double>(maxref);
      std::uint64_t init[12];
      for (int i = 0; i < 6; ++i) init[i] = 0, init[6 + i] = ~0ULL;
      cuMemcpyHtoDAsync(stats_, init, sizeof init, stream_);
      unsigned p1 = dt ? f16_p1 : f32_p1, p2 = dt ? f16_p2 : f32_p2;
      if (!two_runs) p2 = p1;
      CUdeviceptr fp = two_runs ? firsts[k].p : outs[k].p;
      void* cargs[] = {const_cast<CUdeviceptr*>(&outs[k].p), &fp, const_cast<CUdeviceptr*>(&ref_[k].p), &n, &dt,
                       &p1, &p2, &bound, &stats_};
      trusted_launch(k_compare_, cargs, "the comparison");
      std::uint64_t st[12];
      cuMemcpyDtoHAsync(st, stats_, sizeof st, stream_);
      sync("the comparison");
      const std::string of = " of " + std::to_string(n) + " elements";
      auto at = [&](int i) { return " (first at index " + std::to_string(st[6 + i]) + ")"; };
      const auto idx = static_cast<std::int32_t>(k);
      if (st[5])
        throw request_failure{cp::status::reference_failed,
                              "the reference left " + std::to_string(st[5]) + of + " non-finite " + when + at(5), idx};
      if (st[0])
        throw request_failure{cp::status::unwritten,
                              std::to_string(st[0]) + of + " still hold the poison written before the " +
                                  (two_runs ? "first run " : "run ") + when + at(0),
                              idx};
      if (st[1])
        throw request_failure{cp::status::unwritten,
                              std::to_string(st[1]) + of + " still hold the poison written before the second run " +
                                  when + at(1),
                              idx};
      if (st[2])
        throw request_failure{cp::status::nonfinite, std::to_string(st[2]) + of + " are NaN or infinite " + when + at(2),
                              idx};
      char b[160];
      std::snprintf(b, sizeof b, " differ from the reference by more than %.6g = atol %.3g + rtol %.3g x max|ref| %.6g ",
                    bound, q.atol, q.rtol, static_cast<double>(maxref));
      if (st[3]) throw request_failure{cp::status::wrong, std::to_string(st[3]) + of + b + when + at(3), idx};
      if (st[4])
        throw request_failure{cp::status::nondeterministic,
                              std::to_string(st[4]) + of + " differ between two runs on the same inputs " + when + at(4),
                              idx};
    }
  }

  void verify_inputs(cp::run_request const& q, std::vector<std::uint64_t> const& before, std::string const& when) {
    const auto after = checksums(q);
    for (std::size_t k = 0; k < after.size(); ++k)
      if (after[k] != before[k])
        throw request_failure{cp::status::wrote_input, "input changed " + when, static_cast<std::int32_t>(k)};
  }

  void check(cp::run_request const& q, worker_context& ctx) {
    for (int t = 0; t < std::max(1, q.trials); ++t) {
      const std::string when = "(trial " + std::to_string(t + 1) + ")";
      fill(q, q.seed + static_cast<std::uint64_t>(t) * 0xD1B54A32D192ED03ULL);
      const auto before = checksums(q);
      poison(out_, q, false);
      run_plan(q.cand, q, out_, "the candidate, first run");
      for (std::size_t k = 0; k < out_.size(); ++k)
        cuMemcpyDtoDAsync(first_[k].p, out_[k].p, out_[k].bytes, stream_);
      poison(out_, q, true);
      run_plan(q.cand, q, out_, "the candidate, second run");
      verify_inputs(q, before, "while the candidate ran " + when);
      // The reference runs after the candidate: the candidate cannot have prepared its buffers.
      poison(ref_, q, false);
      run_plan(q.ref, q, ref_, "the reference");
      compare(q, out_, first_, true, when);
      ctx.heartbeat();
    }
  }

  void time(cp::run_request const& q, worker_context& ctx, cp::reply& rep) {
    const bool ab = !q.incumbent.empty();
    if (ab) ensure_outb(q);
    if (q.flush_bytes != flush_.bytes) {
      if (flush_.p) cuMemFree(flush_.p);
      flush_ = buffer{};
      if (q.flush_bytes) flush_ = alloc(q.flush_bytes, "the L2 flush buffer");
    }
    cuCtxResetPersistingL2Cache();
    fill(q, q.seed);
    const auto before = checksums(q);
    const int total = std::max(0, q.warmup) + std::max(1, q.samples);
    for (int i = 0; i < total; ++i) {
      for (int k = 0; k < (ab ? 2 : 1); ++k) {
        const bool second = ab && ((i % 2 == 0) == (k == 1));  // ABBA: neither side always goes first
        if (flush_.p) cuMemsetD32Async(flush_.p, static_cast<unsigned>(i), flush_.bytes / 4, stream_);
        poison(second ? outb_ : out_, q, false);
        float ms = 0;
        run_plan(second ? q.incumbent : q.cand, q, second ? outb_ : out_,
                 second ? "the incumbent (timed)" : "the candidate (timed)", true, &ms);
        if (i >= q.warmup) (second ? rep.samples_b : rep.samples_a).push_back(ms * 1e-3);
      }
      ctx.heartbeat();
    }
    if (q.verify_after_timing) {
      verify_inputs(q, before, "during the timed runs");
      poison(ref_, q, false);
      run_plan(q.ref, q, ref_, "the reference");
      compare(q, out_, out_, false, "after the last timed run");
    }
  }

  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent e0_ = nullptr, e1_ = nullptr;
  CUmodule trusted_ = nullptr;
  CUfunction k_fill_ = nullptr, k_poison_ = nullptr, k_checksum_ = nullptr, k_maxabs_ = nullptr, k_compare_ = nullptr;
  CUdeviceptr stats_ = 0;
  int grid_ = 1024;
  std::uint64_t shape_key_ = 0;
  bool have_shape_ = false;
  std::vector<buffer> in_, out_, first_, ref_, outb_;
  std::map<std::string, std::vector<buffer>> scratch_;
  std::map<std::string, CUmodule> modules_;
  buffer flush_;
};

int version_mode() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("nvrtc %d.%d\n", major, minor);
  if (cuInit(0) != CUDA_SUCCESS) {
    std::printf("device none\n");
    return 0;
  }
  int drv = 0;
  cuDriverGetVersion(&drv);
  CUdevice d;
  char name[256] = "unknown";
  int l2 = 0, sms = 0;
  if (cuDeviceGet(&d, 0) == CUDA_SUCCESS) {
    cuDeviceGetName(name, sizeof name, d);
    cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
  }
  std::printf("driver %d\ndevice %s\nl2 %d\nsms %d\n", drv, name, l2, sms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--compile") return compile_mode(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "--version") return version_mode();
  if (argc >= 3 && std::string_view(argv[1]) == "--serve" && std::string_view(argv[2]) == cp::role) {
    cuda_worker* w = nullptr;
    return serve_requests(
        cp::role,
        [&w](std::uint32_t type, std::string_view body, worker_context& ctx) {
          if (!w) w = new cuda_worker();  // the context is created on the first request, after hello
          return w->handle(type, body, ctx);
        });
  }
  std::fprintf(stderr,
               "kernelbrain-cuda-worker: runs CUDA candidates for KernelBrain's CUDA evaluator, which starts it.\n"
               "  usage: kernelbrain-cuda-worker --serve cuda | --compile SRC OUT.cubin [OPTS...] | --version\n");
  return 2;
}
