// kernelbrain-cuda-worker: the process that owns a CUDA context on behalf of KernelBrain's CUDA
// evaluator (the search process never creates one). Modes:
//   --serve cuda                       answer device/check/time requests on fd 3 (started by the
//                                      evaluator); device: the limits plans are checked against
//   --compile SRC OUT.cubin [OPTS...]  NVRTC-compile SRC for the evaluator (run under a time limit);
//                                      prints the compiler log (messages only: entry points and
//                                      resources are read from the cubin), exit 1 on failure
//   --sanitize REQUEST                 run one candidate plan once (for compute-sanitizer, which
//                                      starts this mode): inputs from the host, no trusted kernels
//   --profile-once REQUEST             run one candidate plan for Nsight Compute (which starts this
//                                      mode with --profile-from-start off): fresh inputs, warm-up
//                                      runs, then the profiled runs between cuProfilerStart/Stop
//   --exec [LIMITS] -- PROGRAM ARGS    run PROGRAM (compute-sanitizer) so that it and everything it
//                                      starts die with the search (isolation/process_supervision.hpp)
//   --version                          NVRTC version, driver version, device 0's name, L2 size and
//                                      multiprocessors, and how many devices CUDA_VISIBLE_DEVICES shows
// The driver (libcuda.so.1) is opened at run time, so --compile and --version work on machines
// without one. A sticky CUDA error (illegal address, trap, ...) ends the worker: the evaluator
// reports a crash and starts a fresh one. Inputs are generated, outputs poisoned and compared by
// trusted kernels on the device; only counters come back to the host.
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/common/input_cases.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/isolation/process_supervision.hpp"

namespace {

using namespace kernelbrain;
using namespace kernelbrain::detail;  // the worker side of the wire protocol
namespace cp = kernelbrain::detail::cuda_protocol;
using clock_type = std::chrono::steady_clock;

std::string read_text(char const* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---- the driver API, opened at run time ---------------------------------------------------------------

// Every driver function the worker calls. A member is named after cuda.h's macro (cuMemAlloc is
// cuMemAlloc_v2), so it has the type of the version this file was compiled against, and
// cuGetProcAddress is asked for that version by its base name.
// clang-format 14 indents each continuation line of this list further than the last: keep it by hand.
// clang-format off
#define KB_DRIVER_FUNCTIONS(X)                                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)  \
  X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxResetPersistingL2Cache) X(cuStreamCreate)                \
  X(cuStreamSynchronize) X(cuEventCreate) X(cuEventRecord) X(cuEventElapsedTime) X(cuGetErrorName)               \
  X(cuGetErrorString) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD32Async) X(cuMemsetD16Async) X(cuMemcpyDtoHAsync)    \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoDAsync) X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleUnload)               \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)
// clang-format on

struct driver_api {
#define KB_MEMBER(f) decltype(&::f) f = nullptr;  // NOLINT(bugprone-macro-parentheses): f names a member
  KB_DRIVER_FUNCTIONS(KB_MEMBER)
#undef KB_MEMBER
  std::string missing;  ///< why the driver is unusable; empty once loaded
  bool loaded = false;
  /// cuProfilerStart / cuProfilerStop (cudaProfiler.h), for --profile-once only: looked up, not required.
  CUresult (*profiler_start)() = nullptr;
  CUresult (*profiler_stop)() = nullptr;

  bool load() {
    if (loaded) return true;
    if (!missing.empty()) return false;  // tried before
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      char const* e = ::dlerror();
      missing = std::string("cannot open libcuda.so.1 (no NVIDIA driver?): ") + (e ? e : "?");
      return false;
    }
    using get_proc = CUresult (*)(char const*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    auto gpa = reinterpret_cast<get_proc>(::dlsym(lib, "cuGetProcAddress_v2"));
    if (!gpa) {
      missing = "libcuda.so.1 has no cuGetProcAddress_v2 (a driver older than CUDA 12)";
      return false;
    }
    auto one = [&](char const* name, void** out) {
      CUdriverProcAddressQueryResult st{};
      if (gpa(name, out, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !*out) {
        if (missing.empty()) missing = std::string("the driver lacks ") + name;
      }
    };
#define KB_LOAD(f) one(#f, reinterpret_cast<void**>(&f));  // NOLINT(bugprone-macro-parentheses): f names a member
    KB_DRIVER_FUNCTIONS(KB_LOAD)
#undef KB_LOAD
    CUdriverProcAddressQueryResult st{};
    if (gpa("cuProfilerStart", reinterpret_cast<void**>(&profiler_start), CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
            &st) != CUDA_SUCCESS)
      profiler_start = nullptr;
    if (gpa("cuProfilerStop", reinterpret_cast<void**>(&profiler_stop), CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
            &st) != CUDA_SUCCESS)
      profiler_stop = nullptr;
    loaded = missing.empty();
    return loaded;
  }
};
driver_api cu;

/// One-shot modes end with the search that started them (killed with SIGKILL or not).
void die_with_parent() {
  if (!kernelbrain::detail::supervision::die_with_parent()) std::_Exit(3);
}

// ---- --compile --------------------------------------------------------------------------------------

int compile_mode(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kernelbrain-cuda-worker --compile SRC OUT.cubin [NVRTC OPTIONS...]\n");
    return 2;
  }
  die_with_parent();
  const std::string src = read_text(argv[2]);
  std::vector<char const*> opts;
  for (int i = 4; i < argc; ++i) opts.push_back(argv[i]);
  opts.push_back("--ptxas-options=-v");  // spill counts, when ptxas runs (not on a compute-cache hit)
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
// Fresh values from `seed` (dist: 0 normal, 1 uniform(-1,1), 2 uniform[0.5,2)), then an adversarial
// transform (kind: 0 none, 1 scaled, 2 offset, 3 constant, 4 ties, 5 spikes, 6 signed zeros):
// kb_input_case, put before this text from backends/common/input_cases.hpp (the host backend compiles the same).
extern "C" __global__ void kb_fill(void* p, long long n, int dt, int dist, u64 seed, int kind, float a) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    u64 h = kb_mix(seed ^ kb_mix((u64)i));
    float v;
    if (dist == 1) v = 2.f * kb_u01(h) - 1.f;
    else if (dist == 2) v = 0.5f + 1.5f * kb_u01(h);
    else { float x = kb_u01(h), y = kb_u01(kb_mix(h)); v = sqrtf(-2.f * logf(x)) * cospif(2.f * y); }
    v = kb_input_case(kind, a, v, kb_mix(h ^ 0x2545F4914F6CDD1Dull));
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

// ---- shared by the serving worker and the sanitizer mode -------------------------------------------------

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
  if (cu.cuGetErrorName) cu.cuGetErrorName(r, &n);
  if (cu.cuGetErrorString) cu.cuGetErrorString(r, &s);
  return std::string(n ? n : "CUDA error " + std::to_string(static_cast<int>(r))) + " (" + (s ? s : "?") + ")";
}

/// A failure that ends the request with a status (not sticky).
struct request_failure {
  cp::status st;
  std::string message;
  std::int32_t index = -1;
};

[[noreturn]] void die(std::string const& what) {
  std::fprintf(stderr, "kernelbrain-cuda-worker: sticky CUDA error: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(70);
}
void die_if(CUresult r, char const* what) {
  if (r != CUDA_SUCCESS) die(std::string(what) + ": " + err_text(r));
}

/// Device 0 as the driver reports it, asked without creating a context: the reply to request::device
/// (the parent checks plans against these limits), and what the worker checks each launch against.
/// present == 0, with the reason, when there is no usable driver or device.
cp::device_info query_device() {
  cp::device_info d;
  if (!cu.load()) {
    d.message = cu.missing;
    return d;
  }
  if (const CUresult r = cu.cuInit(0); r != CUDA_SUCCESS) {
    d.message = "cuInit: " + err_text(r);
    return d;
  }
  CUdevice dev = 0;
  if (const CUresult r = cu.cuDeviceGet(&dev, 0); r != CUDA_SUCCESS) {
    d.message = "cuDeviceGet(0): " + err_text(r);
    return d;
  }
  char name[256] = {};
  d.name = cu.cuDeviceGetName(name, sizeof name - 1, dev) == CUDA_SUCCESS && name[0] ? name : "device 0";
  std::string failed;
  auto attr = [&](CUdevice_attribute a, char const* what) -> std::int64_t {
    int v = 0;
    if (const CUresult r = cu.cuDeviceGetAttribute(&v, a, dev); r != CUDA_SUCCESS) {
      if (failed.empty())
        failed = std::string("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_") + what + "): " + err_text(r);
      return 0;
    }
    return v;
  };
#define KB_ATTR(a) attr(CU_DEVICE_ATTRIBUTE_##a, #a)
  d.cc_major = static_cast<std::int32_t>(KB_ATTR(COMPUTE_CAPABILITY_MAJOR));
  d.cc_minor = static_cast<std::int32_t>(KB_ATTR(COMPUTE_CAPABILITY_MINOR));
  d.max_threads_per_block = KB_ATTR(MAX_THREADS_PER_BLOCK);
  d.max_block[0] = KB_ATTR(MAX_BLOCK_DIM_X);
  d.max_block[1] = KB_ATTR(MAX_BLOCK_DIM_Y);
  d.max_block[2] = KB_ATTR(MAX_BLOCK_DIM_Z);
  d.max_grid[0] = KB_ATTR(MAX_GRID_DIM_X);
  d.max_grid[1] = KB_ATTR(MAX_GRID_DIM_Y);
  d.max_grid[2] = KB_ATTR(MAX_GRID_DIM_Z);
  d.max_smem_per_block = KB_ATTR(MAX_SHARED_MEMORY_PER_BLOCK);
  d.max_smem_per_block_optin = KB_ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  d.max_registers_per_block = KB_ATTR(MAX_REGISTERS_PER_BLOCK);
  d.cluster_launch = KB_ATTR(CLUSTER_LAUNCH) ? 1 : 0;
#undef KB_ATTR
  if (!failed.empty()) {
    cp::device_info none;
    none.message = failed;
    return none;
  }
  d.present = 1;
  return d;
}

/// Why launch `l` of a kernel with `static_smem` bytes of static shared memory cannot run on the
/// device `d`, or "" (also when `d` is unknown). The parent checked the plan against the same
/// limits when it has them: this catches a parent that checked against other ones.
std::string outside_device(cp::launch const& l, std::int64_t static_smem, cp::device_info const& d) {
  if (!d.present) return {};
  auto dims3 = [](std::int64_t const* v) {
    return std::to_string(v[0]) + " x " + std::to_string(v[1]) + " x " + std::to_string(v[2]);
  };
  const std::string on = " on " + d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ")";
  bool block_ok = true, grid_ok = true;
  for (int i = 0; i < 3; ++i) {
    block_ok = block_ok && l.block[i] >= 1 && l.block[i] <= d.max_block[i];
    grid_ok = grid_ok && l.grid[i] >= 1 && l.grid[i] <= d.max_grid[i];
  }
  if (!block_ok || l.block[0] * l.block[1] * l.block[2] > d.max_threads_per_block)
    return "block " + dims3(l.block) + ": at most " + std::to_string(d.max_threads_per_block) +
           " threads per block, and at most " + dims3(d.max_block) + on;
  if (!grid_ok) return "grid " + dims3(l.grid) + ": at most " + dims3(d.max_grid) + on;
  if (l.cluster[0] * l.cluster[1] * l.cluster[2] > 1 && !d.cluster_launch)
    return "cluster " + dims3(l.cluster) + ": no thread block clusters" + on;
  if (l.smem < 0 || static_smem + l.smem > d.max_smem_per_block_optin)
    return std::to_string(static_smem) + " bytes of static and " + std::to_string(l.smem) +
           " of dynamic shared memory (at most " + std::to_string(d.max_smem_per_block_optin) + " together" + on + ")";
  return {};
}

struct buffer {
  CUdeviceptr p = 0;
  std::uint64_t bytes = 0;
};
std::uint64_t bytes_of(cp::tensor const& t) { return t.count * (t.dtype ? 2 : 4); }

/// Allocates `bytes` (at least `min_bytes`): an allocation failure ends the request, not the worker.
buffer alloc(std::uint64_t bytes, std::string const& what, std::uint64_t min_bytes = 256) {
  buffer b;
  b.bytes = bytes;
  const CUresult r = cu.cuMemAlloc(&b.p, std::max<std::uint64_t>(bytes, min_bytes));
  if (r != CUDA_SUCCESS) {
    if (sticky(r)) die("cuMemAlloc: " + err_text(r));
    throw request_failure{cp::status::out_of_memory,
                          "cannot allocate " + std::to_string(bytes) + " bytes for " + what + ": " + err_text(r)};
  }
  return b;
}
void release(std::vector<buffer>& v) {
  for (auto& b : v)
    if (b.p) cu.cuMemFree(b.p);
  v.clear();
}

/// A loaded module and what belongs to it (scratch buffers), freed together.
struct loaded_module {
  CUmodule mod = nullptr;
  std::vector<buffer> scratch;
};

/// Loads a cubin. Out of memory (large __device__ arrays) is a resources failure, anything else a
/// load failure; a sticky error ends the worker.
CUmodule load_module(std::string const& path) {
  CUmodule m = nullptr;
  const CUresult r = cu.cuModuleLoad(&m, path.c_str());
  if (r == CUDA_SUCCESS) return m;
  if (sticky(r)) die("cuModuleLoad: " + err_text(r));
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw request_failure{cp::status::out_of_memory, "cannot load the compiled module: " + err_text(r)};
  throw request_failure{cp::status::load_failed, "cannot load the compiled module: " + err_text(r)};
}

/// The functions of a plan, each checked against what the parent read from the cubin and against the
/// device's limits, and prepared for its launch (static + dynamic shared memory above the device's
/// default per block, 48 KiB, needs an opt-in).
std::vector<CUfunction> functions_of(CUmodule m, cp::plan const& p, std::string const& who,
                                     cp::device_info const& dev) {
  std::vector<CUfunction> fns;
  for (auto const& l : p.launches) {
    CUfunction f = nullptr;
    if (cu.cuModuleGetFunction(&f, m, l.kernel.c_str()) != CUDA_SUCCESS)
      throw request_failure{cp::status::missing_kernel,
                            who + ": the module has no kernel '" + l.kernel + "' (declare it extern \"C\" __global__)"};
    int regs = 0, local = 0, shared = 0, max_threads = 0;
    cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
    cu.cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    cu.cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
    cu.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    auto differs = [&](char const* what, std::int32_t cubin, int driver) {
      if (cubin >= 0 && cubin != driver)
        throw request_failure{cp::status::attribute_mismatch, who + ": kernel '" + l.kernel + "': the cubin says " +
                                                                  std::to_string(cubin) + " " + what + ", the driver " +
                                                                  std::to_string(driver)};
    };
    differs("registers", l.registers, regs);
    differs("bytes of local memory", l.local_bytes, local);
    differs("bytes of static shared memory", l.static_smem, shared);
    const auto threads = l.block[0] * l.block[1] * l.block[2];
    if (threads > max_threads)
      throw request_failure{cp::status::launch_failed,
                            who + ": kernel '" + l.kernel + "' can run at most " + std::to_string(max_threads) +
                                " threads per block, the plan asks for " + std::to_string(threads)};
    if (const auto why = outside_device(l, shared, dev); !why.empty())
      throw request_failure{cp::status::launch_failed, who + ": kernel '" + l.kernel + "': " + why};
    const std::int64_t without_optin = dev.present ? dev.max_smem_per_block : 48 * 1024;
    if (shared + l.smem > without_optin) {
      const CUresult r =
          cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(l.smem));
      if (r != CUDA_SUCCESS)
        throw request_failure{cp::status::launch_failed, who + ": kernel '" + l.kernel + "' cannot have " +
                                                             std::to_string(l.smem) +
                                                             " bytes of dynamic shared memory: " + err_text(r)};
    }
    fns.push_back(f);
  }
  return fns;
}

/// Launches every launch of `p` on `stream` (buffers: inputs, outputs, scratch, by index).
void launch_all(cp::plan const& p, std::vector<CUfunction> const& fns, std::vector<CUdeviceptr>& ptrs,
                std::vector<std::int64_t> const& dims, CUstream stream, std::string const& who) {
  for (std::size_t i = 0; i < p.launches.size(); ++i) {
    auto const& l = p.launches[i];
    std::vector<long long> dimv;
    dimv.reserve(l.args.size());
    std::vector<void*> args;
    for (std::size_t a = 0; a + 1 < l.args.size(); a += 2) {
      const auto kind = l.args[a], idx = l.args[a + 1];
      if (kind == 0 && idx >= 0 && static_cast<std::size_t>(idx) < ptrs.size())
        args.push_back(&ptrs[static_cast<std::size_t>(idx)]);
      else if (kind == 1 && idx >= 0 && static_cast<std::size_t>(idx) < dims.size()) {
        dimv.push_back(dims[static_cast<std::size_t>(idx)]);
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
      cfg.hStream = stream;
      CUlaunchAttribute at{};
      at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
      at.value.clusterDim.x = u(l.cluster[0]);
      at.value.clusterDim.y = u(l.cluster[1]);
      at.value.clusterDim.z = u(l.cluster[2]);
      cfg.attrs = &at;
      cfg.numAttrs = 1;
      r = cu.cuLaunchKernelEx(&cfg, fns[i], args.data(), nullptr);
    } else {
      r = cu.cuLaunchKernel(fns[i], u(l.grid[0]), u(l.grid[1]), u(l.grid[2]), u(l.block[0]), u(l.block[1]),
                            u(l.block[2]), u(l.smem), stream, args.data(), nullptr);
    }
    if (r != CUDA_SUCCESS) {
      if (sticky(r)) die(who + ": launching '" + l.kernel + "': " + err_text(r));
      throw request_failure{cp::status::launch_failed, who + ": launching '" + l.kernel + "': " + err_text(r)};
    }
  }
}

/// The device context of a worker process: device 0, its primary context, one stream.
struct device_context {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  device_context() {
    if (!cu.load()) die(cu.missing);
    die_if(cu.cuInit(0), "cuInit");
    // Device 0 is the first that CUDA_VISIBLE_DEVICES shows: the evaluator chooses a GPU by setting
    // it in this process's environment (cuda_options::visible_device).
    die_if(cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
    die_if(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    die_if(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    die_if(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
};

// ---- the serving worker --------------------------------------------------------------------------------

class cuda_worker {
 public:
  cuda_worker() {
    die_if(cu.cuEventCreate(&e0_, CU_EVENT_DEFAULT), "cuEventCreate");
    die_if(cu.cuEventCreate(&e1_, CU_EVENT_DEFAULT), "cuEventCreate");
    dev_ = query_device();
    int sms = 0;
    cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dc_.dev);
    grid_ = std::max(1, sms) * 8;
    load_trusted();
    die_if(cu.cuMemAlloc(&stats_, 16 * sizeof(std::uint64_t)), "cuMemAlloc(stats)");
  }

  std::string handle(std::uint32_t type, std::string_view body, worker_context& ctx) {
    cp::reply rep;
    const auto t0 = clock_type::now();
    try {
      const auto q = cp::decode_run(body);
      keep_only(q);
      prepare(q);
      if (type == static_cast<std::uint32_t>(cp::request::check))
        check(q, ctx);
      else if (type == static_cast<std::uint32_t>(cp::request::time))
        time(q, ctx, rep);
      else
        throw request_failure{cp::status::bad_request, "unknown request type " + std::to_string(type)};
    } catch (request_failure const& f) {
      rep = cp::reply{};
      rep.st = f.st;
      rep.message = f.message;
      rep.index = f.index;
    } catch (wire_error const& e) {
      rep = cp::reply{};
      rep.st = cp::status::bad_request;
      rep.message = e.what();
    }
    rep.device_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    return cp::encode(rep);
  }

  /// --profile-once: the candidate plan of `q` at its shape on fresh inputs, q.warmup times untimed,
  /// then q.samples times between cuProfilerStart and cuProfilerStop (a profiler started with
  /// --profile-from-start off sees those launches only: not the inputs' generation or the poison).
  void profile(cp::run_request const& q) {
    if (!cu.profiler_start || !cu.profiler_stop)
      throw request_failure{cp::status::bad_request, "the driver has no cuProfilerStart / cuProfilerStop"};
    keep_only(q);
    prepare(q);
    fill(q, q.seed);
    poison(out_, q, false);
    for (int i = 0; i < std::max(0, q.warmup); ++i) run_plan(q.cand, q, out_, "the candidate (warm-up)");
    sync("the warm-up");
    if (const CUresult r = cu.profiler_start(); r != CUDA_SUCCESS)
      throw request_failure{cp::status::bad_request, "cuProfilerStart: " + err_text(r)};
    for (int i = 0; i < std::max(1, q.samples); ++i) run_plan(q.cand, q, out_, "the candidate (profiled)");
    sync("the profiled runs");
    cu.profiler_stop();
  }

 private:
  /// Synchronises; a sticky error ends the process, another error fails the request.
  void sync(std::string const& what) {
    const CUresult r = cu.cuStreamSynchronize(dc_.stream);
    if (r == CUDA_SUCCESS) return;
    if (sticky(r)) die(what + ": " + err_text(r));
    throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
  }

  void load_trusted() {
    nvrtcProgram prog;
    const std::string text = std::string(input_case_device_source) + trusted_source;
    nvrtcCreateProgram(&prog, text.c_str(), "kb_trusted.cu", 0, nullptr, nullptr);
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
    die_if(cu.cuModuleLoadData(&trusted_, bin.data()), "loading the trusted kernels");
    die_if(cu.cuModuleGetFunction(&k_fill_, trusted_, "kb_fill"), "kb_fill");
    die_if(cu.cuModuleGetFunction(&k_poison_, trusted_, "kb_poison"), "kb_poison");
    die_if(cu.cuModuleGetFunction(&k_checksum_, trusted_, "kb_checksum"), "kb_checksum");
    die_if(cu.cuModuleGetFunction(&k_maxabs_, trusted_, "kb_maxabs"), "kb_maxabs");
    die_if(cu.cuModuleGetFunction(&k_compare_, trusted_, "kb_compare"), "kb_compare");
  }

  void trusted_launch(CUfunction f, void** args, std::string const& what) {
    const CUresult r =
        cu.cuLaunchKernel(f, static_cast<unsigned>(grid_), 1, 1, 256, 1, 1, 0, dc_.stream, args, nullptr);
    if (r != CUDA_SUCCESS) {
      if (sticky(r)) die(what + ": " + err_text(r));
      throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
    }
  }

  /// Every candidate starts from the same state: modules (and the scratch and __device__ memory that
  /// come with them) of plans this request does not use are unloaded before it runs.
  void keep_only(cp::run_request const& q) {
    for (auto it = modules_.begin(); it != modules_.end();) {
      if (it->first == q.cand.cubin || it->first == q.ref.cubin || it->first == q.incumbent.cubin) {
        ++it;
        continue;
      }
      release(it->second.scratch);
      cu.cuModuleUnload(it->second.mod);
      it = modules_.erase(it);
    }
  }

  void prepare(cp::run_request const& q) {
    if (q.shape_key == shape_key_ && have_shape_) return;
    release(in_);
    release(out_);
    release(first_);
    release(ref_);
    release(outb_);
    for (auto& [path, m] : modules_) release(m.scratch);
    have_shape_ = false;
    // Each input has room for view_offsets different starting addresses (see time()).
    for (auto const& t : q.inputs) in_.push_back(alloc(bytes_of(t) + view_slack, "an input"));
    set_views(0);
    for (auto const& t : q.outputs) {
      out_.push_back(alloc(bytes_of(t), "an output"));
      first_.push_back(alloc(bytes_of(t), "an output copy"));
      ref_.push_back(alloc(bytes_of(t), "a reference output"));
    }
    shape_key_ = q.shape_key;
    have_shape_ = true;
  }
  /// Inputs start `offset` x 256 bytes into their buffers: a timed call's inputs are a window of one
  /// random field at a random offset, different values at different addresses on every call, without
  /// writing them anew (the window's alignment stays 256 bytes).
  static constexpr std::uint64_t view_offsets = 256, view_step = 256, view_slack = view_offsets * view_step;
  void set_views(std::uint64_t offset) {
    view_.clear();
    for (auto const& b : in_) view_.push_back(b.p + offset * view_step);
  }
  void ensure_outb(cp::run_request const& q) {
    if (!outb_.empty()) return;
    for (auto const& t : q.outputs) outb_.push_back(alloc(bytes_of(t), "the incumbent's output"));
  }

  loaded_module& module(std::string const& path) {
    if (auto it = modules_.find(path); it != modules_.end()) return it->second;
    loaded_module m;
    m.mod = load_module(path);
    return modules_.emplace(path, std::move(m)).first->second;
  }

  /// Fresh inputs from `seed`; `c` (when given) transforms one case per input.
  void fill(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c = nullptr) {
    for (std::size_t k = 0; k < q.inputs.size(); ++k) {
      long long n = static_cast<long long>((bytes_of(q.inputs[k]) + view_slack) / (q.inputs[k].dtype ? 2 : 4));
      int dt = q.inputs[k].dtype, dist = q.inputs[k].distribution;
      unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + k * 0x632BE59BD9B4E019ULL + 1;
      int kind = c && k < c->size() ? (*c)[k].kind : 0;
      float a = c && k < c->size() ? static_cast<float>((*c)[k].value) : 0.f;
      void* args[] = {&in_[k].p, &n, &dt, &dist, &s, &kind, &a};
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
      cu.cuMemsetD32Async(stats_, 0, 2, dc_.stream);
      long long n = static_cast<long long>((bytes_of(q.inputs[k]) + view_slack) / 2);  // the views' slack too
      void* args[] = {&in_[k].p, &n, &stats_};
      trusted_launch(k_checksum_, args, "checksumming inputs");
      std::uint64_t v = 0;
      cu.cuMemcpyDtoHAsync(&v, stats_, 8, dc_.stream);
      sync("checksumming inputs");
      out.push_back(v);
    }
    return out;
  }

  /// Runs a plan with `outs` as its outputs; `ms` (when given) receives the time between events
  /// recorded around the whole plan.
  void run_plan(cp::plan const& p, cp::run_request const& q, std::vector<buffer> const& outs, std::string const& who,
                float* ms = nullptr) {
    auto& m = module(p.cubin);
    if (m.scratch.size() != p.scratch.size()) {
      release(m.scratch);
      for (auto b : p.scratch) m.scratch.push_back(alloc(b, "scratch"));
    }
    // Scratch starts as poison: a kernel must write all the scratch it reads.
    for (auto const& b : m.scratch) cu.cuMemsetD32Async(b.p, f32_p1, b.bytes / 4, dc_.stream);
    const auto fns = functions_of(m.mod, p, who, dev_);
    std::vector<CUdeviceptr> ptrs;
    for (auto const p_in : view_) ptrs.push_back(p_in);
    for (auto const& b : outs) ptrs.push_back(b.p);
    for (auto const& b : m.scratch) ptrs.push_back(b.p);
    if (ms) cu.cuEventRecord(e0_, dc_.stream);
    launch_all(p, fns, ptrs, q.dims, dc_.stream, who);
    if (ms) cu.cuEventRecord(e1_, dc_.stream);
    sync(who);
    if (ms) cu.cuEventElapsedTime(ms, e0_, e1_);
  }

  /// Compares `outs` (and `firsts`, the first run's copy) with the reference outputs.
  void compare(cp::run_request const& q, std::vector<buffer> const& outs, std::vector<buffer> const& firsts,
               bool two_runs, std::string const& when) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      long long n = static_cast<long long>(q.outputs[k].count);
      int dt = q.outputs[k].dtype;
      cu.cuMemsetD32Async(stats_, 0, 1, dc_.stream);
      void* margs[] = {const_cast<CUdeviceptr*>(&ref_[k].p), &n, &dt, &stats_};
      trusted_launch(k_maxabs_, margs, "the comparison");
      unsigned maxbits = 0;
      cu.cuMemcpyDtoHAsync(&maxbits, stats_, 4, dc_.stream);
      sync("the comparison");
      float maxref;
      std::memcpy(&maxref, &maxbits, 4);
      double bound = q.atol + q.rtol * static_cast<double>(maxref);
      std::uint64_t init[12];
      for (int i = 0; i < 6; ++i) init[i] = 0, init[6 + i] = ~0ULL;
      cu.cuMemcpyHtoDAsync(stats_, init, sizeof init, dc_.stream);
      unsigned p1 = dt ? f16_p1 : f32_p1, p2 = dt ? f16_p2 : f32_p2;
      if (!two_runs) p2 = p1;
      CUdeviceptr fp = two_runs ? firsts[k].p : outs[k].p;
      void* cargs[] = {const_cast<CUdeviceptr*>(&outs[k].p),
                       &fp,
                       const_cast<CUdeviceptr*>(&ref_[k].p),
                       &n,
                       &dt,
                       &p1,
                       &p2,
                       &bound,
                       &stats_};
      trusted_launch(k_compare_, cargs, "the comparison");
      std::uint64_t st[12];
      cu.cuMemcpyDtoHAsync(st, stats_, sizeof st, dc_.stream);
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
        throw request_failure{
            cp::status::unwritten,
            std::to_string(st[1]) + of + " still hold the poison written before the second run " + when + at(1), idx};
      if (st[2])
        throw request_failure{cp::status::nonfinite,
                              std::to_string(st[2]) + of + " are NaN or infinite " + when + at(2), idx};
      char b[160];
      std::snprintf(b, sizeof b,
                    " differ from the reference by more than %.6g = atol %.3g + rtol %.3g x max|ref| %.6g ", bound,
                    q.atol, q.rtol, static_cast<double>(maxref));
      if (st[3]) throw request_failure{cp::status::wrong, std::to_string(st[3]) + of + b + when + at(3), idx};
      if (st[4])
        throw request_failure{
            cp::status::nondeterministic,
            std::to_string(st[4]) + of + " differ between two runs on the same inputs " + when + at(4), idx};
    }
  }

  void verify_inputs(cp::run_request const& q, std::vector<std::uint64_t> const& before, std::string const& when) {
    const auto after = checksums(q);
    for (std::size_t k = 0; k < after.size(); ++k)
      if (after[k] != before[k])
        throw request_failure{cp::status::wrote_input, "input changed " + when, static_cast<std::int32_t>(k)};
  }

  /// One correctness trial: the candidate twice (different poisons) on the same fresh inputs, inputs
  /// unchanged, then the reference (after the candidate: the candidate cannot have prepared its
  /// buffers) and every element compared.
  void trial(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c,
             std::string const& when) {
    set_views(0);
    fill(q, seed, c);
    const auto before = checksums(q);
    poison(out_, q, false);
    run_plan(q.cand, q, out_, "the candidate, first run");
    for (std::size_t k = 0; k < out_.size(); ++k)
      cu.cuMemcpyDtoDAsync(first_[k].p, out_[k].p, out_[k].bytes, dc_.stream);
    poison(out_, q, true);
    run_plan(q.cand, q, out_, "the candidate, second run");
    verify_inputs(q, before, "while the candidate ran " + when);
    poison(ref_, q, false);
    run_plan(q.ref, q, ref_, "the reference");
    compare(q, out_, first_, true, when);
  }

  static std::string case_text(std::vector<cp::input_case> const& c) {
    static char const* names[] = {"as drawn", "scaled", "offset", "constant", "ties", "spikes", "signed_zeros"};
    std::string s;
    for (std::size_t k = 0; k < c.size(); ++k) {
      if (c[k].kind == 0) continue;
      char b[96];
      const auto kind = static_cast<std::size_t>(c[k].kind);
      std::snprintf(b, sizeof b, "input %zu %s:%g", k, kind < 7 ? names[kind] : "?", c[k].value);
      s += (s.empty() ? "" : ", ") + std::string(b);
    }
    return s;
  }

  void check(cp::run_request const& q, worker_context& ctx) {
    for (int t = 0; t < std::max(1, q.trials); ++t) {
      trial(q, q.seed + static_cast<std::uint64_t>(t) * 0xD1B54A32D192ED03ULL, nullptr,
            "(trial " + std::to_string(t + 1) + ")");
      ctx.heartbeat();
    }
    for (std::size_t i = 0; i < q.cases.size(); ++i) {
      trial(q, q.seed ^ (0xA24BAED4963EE407ULL * (i + 1)), &q.cases[i],
            "(adversarial inputs: " + case_text(q.cases[i]) + ")");
      ctx.heartbeat();
    }
  }

  /// Timed calls. Every call sees other input values at other addresses: one fresh random field is
  /// written per request, and each call reads a window of it at a random offset (a kernel cannot
  /// profit from recognising a repeat, and nothing is rewritten between calls). Outputs are poisoned
  /// and the L2 flushed before each call; the calls in q.checked_calls and the last one are checked
  /// against the reference on their own window, and the inputs must be unchanged at the end.
  void time(cp::run_request const& q, worker_context& ctx, cp::reply& rep) {
    const bool ab = !q.incumbent.empty();
    if (ab) ensure_outb(q);
    if (q.flush_bytes != flush_.bytes) {
      if (flush_.p) cu.cuMemFree(flush_.p);
      flush_ = buffer{};
      if (q.flush_bytes) flush_ = alloc(q.flush_bytes, "the L2 flush buffer");
    }
    cu.cuCtxResetPersistingL2Cache();
    fill(q, q.seed);
    const auto before = checksums(q);
    const int total = std::max(0, q.warmup) + std::max(1, q.samples);
    std::set<std::int32_t> checked(q.checked_calls.begin(), q.checked_calls.end());
    if (q.verify_after_timing)
      checked.insert(total - 1);
    else
      checked.clear();
    std::uint64_t pick = q.seed ^ 0x5851F42D4C957F2DULL;
    for (int i = 0; i < total; ++i) {
      for (int k = 0; k < (ab ? 2 : 1); ++k) {
        const bool second = ab && ((i % 2 == 0) == (k == 1));  // ABBA: neither side always goes first
        pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
        set_views((pick >> 33) % view_offsets);
        poison(second ? outb_ : out_, q, false);
        if (flush_.p) cu.cuMemsetD32Async(flush_.p, static_cast<unsigned>(i), flush_.bytes / 4, dc_.stream);
        float ms = 0;
        run_plan(second ? q.incumbent : q.cand, q, second ? outb_ : out_,
                 second ? "the incumbent (timed)" : "the candidate (timed)", &ms);
        if (i >= q.warmup) (second ? rep.samples_b : rep.samples_a).push_back(ms * 1e-3);
        if (!second && checked.count(i)) {
          const std::string when = "in timed call " + std::to_string(i + 1) + " of " + std::to_string(total);
          poison(ref_, q, false);
          run_plan(q.ref, q, ref_, "the reference");
          compare(q, out_, out_, false, when);
        }
      }
      ctx.heartbeat();
    }
    set_views(0);
    if (q.verify_after_timing) verify_inputs(q, before, "during the timed runs");
  }

  device_context dc_;
  cp::device_info dev_;  ///< the limits each launch is checked against
  CUevent e0_ = nullptr, e1_ = nullptr;
  CUmodule trusted_ = nullptr;
  CUfunction k_fill_ = nullptr, k_poison_ = nullptr, k_checksum_ = nullptr, k_maxabs_ = nullptr, k_compare_ = nullptr;
  CUdeviceptr stats_ = 0;
  int grid_ = 1024;
  std::uint64_t shape_key_ = 0;
  bool have_shape_ = false;
  std::vector<buffer> in_, out_, first_, ref_, outb_;
  std::vector<CUdeviceptr> view_;  ///< where each input starts for the current run (inside in_)
  std::map<std::string, loaded_module> modules_;
  buffer flush_;
};

// ---- --sanitize: one run of a candidate plan, for compute-sanitizer -------------------------------------

std::uint16_t float_to_half_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1u) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) ++h;  // round half up: close enough for test inputs
  return static_cast<std::uint16_t>(h);
}

/// Runs the request's candidate plan once at its shape on host-generated inputs, poisoned outputs
/// and scratch, with buffers of exactly their size (so that memcheck's padding catches overruns).
/// Prints "kernelbrain-sanitize: ok" on success.
int sanitize_mode(char const* request_path) {
  die_with_parent();
  cp::run_request q;
  try {
    q = cp::decode_run(read_text(request_path));
  } catch (wire_error const& e) {
    std::printf("kernelbrain-sanitize: bad request file %s: %s\n", request_path, e.what());
    return 2;
  }
  try {
    device_context dc;
    std::vector<buffer> bufs;
    std::uint64_t state = q.seed | 1;
    auto next = [&state] {  // xorshift64*
      state ^= state >> 12;
      state ^= state << 25;
      state ^= state >> 27;
      return (state * 0x2545F4914F6CDD1DULL) >> 11;
    };
    auto u01 = [&] { return (static_cast<double>(next()) + 0.5) / 9007199254740992.0; };
    for (auto const& t : q.inputs) {
      auto b = alloc(bytes_of(t), "an input", 4);
      std::vector<std::uint16_t> h16;
      std::vector<float> h32;
      for (std::uint64_t i = 0; i < t.count; ++i) {
        double v = t.distribution == 1   ? 2 * u01() - 1
                   : t.distribution == 2 ? 0.5 + 1.5 * u01()
                                         : std::sqrt(-2 * std::log(u01())) * std::cos(6.283185307179586 * u01());
        if (t.dtype)
          h16.push_back(float_to_half_bits(static_cast<float>(v)));
        else
          h32.push_back(static_cast<float>(v));
      }
      void const* src = t.dtype ? static_cast<void const*>(h16.data()) : static_cast<void const*>(h32.data());
      cu.cuMemcpyHtoDAsync(b.p, src, bytes_of(t), dc.stream);
      if (cu.cuStreamSynchronize(dc.stream) != CUDA_SUCCESS)
        throw request_failure{cp::status::bad_request, "copying inputs"};
      bufs.push_back(b);
    }
    for (auto const& t : q.outputs) {
      auto b = alloc(bytes_of(t), "an output", 4);
      if (t.dtype)
        cu.cuMemsetD16Async(b.p, static_cast<unsigned short>(f16_p1), t.count, dc.stream);
      else
        cu.cuMemsetD32Async(b.p, f32_p1, t.count, dc.stream);
      bufs.push_back(b);
    }
    for (auto s : q.cand.scratch) {
      auto b = alloc(s, "scratch", 4);
      cu.cuMemsetD32Async(b.p, f32_p1, std::max<std::uint64_t>(s, 4) / 4, dc.stream);
      bufs.push_back(b);
    }
    std::vector<CUdeviceptr> ptrs;
    ptrs.reserve(bufs.size());
    for (auto const& b : bufs) ptrs.push_back(b.p);
    CUmodule m = load_module(q.cand.cubin);
    const auto fns = functions_of(m, q.cand, "the candidate", query_device());
    launch_all(q.cand, fns, ptrs, q.dims, dc.stream, "the candidate");
    const CUresult r = cu.cuStreamSynchronize(dc.stream);
    if (r != CUDA_SUCCESS) {
      std::printf("kernelbrain-sanitize: the candidate failed: %s\n", err_text(r).c_str());
      return 1;
    }
  } catch (request_failure const& f) {
    std::printf("kernelbrain-sanitize: the candidate failed: %s\n", f.message.c_str());
    return 1;
  }
  std::printf("kernelbrain-sanitize: ok\n");
  return 0;
}

// ---- --profile-once: one candidate plan for Nsight Compute ----------------------------------------------

/// Runs cuda_worker::profile on the request in `request_path`. Prints "kernelbrain-profile: ok" on
/// success, "kernelbrain-profile: failed: ..." (exit 1) when the plan could not run.
int profile_mode(char const* request_path) {
  // No die_with_parent() here: PR_SET_PDEATHSIG follows the thread that started this process, which
  // may be any thread of ncu. The search's --exec supervisor kills ncu's process group, this
  // process with it, when the search dies; and one profiled run ends on its own.
  cp::run_request q;
  try {
    q = cp::decode_run(read_text(request_path));
  } catch (wire_error const& e) {
    std::printf("kernelbrain-profile: bad request file %s: %s\n", request_path, e.what());
    return 2;
  }
  try {
    cuda_worker w;
    w.profile(q);
  } catch (request_failure const& f) {
    std::printf("kernelbrain-profile: failed: %s\n", f.message.c_str());
    return 1;
  }
  std::printf("kernelbrain-profile: ok\n");
  std::fflush(stdout);
  return 0;
}

int version_mode() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  std::printf("nvrtc %d.%d\n", major, minor);
  // No driver, or none of the devices CUDA_VISIBLE_DEVICES names (cuInit: CUDA_ERROR_NO_DEVICE): no
  // device, which is an answer, not a failure (CI, cuda_visible_devices on a machine without a GPU).
  if (!cu.load() || cu.cuInit(0) != CUDA_SUCCESS) {
    std::printf("device none\ndevices 0\n");
    return 0;
  }
  int drv = 0, count = 0;
  cu.cuDriverGetVersion(&drv);
  if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
  CUdevice d;
  char name[256] = "unknown";
  int l2 = 0, sms = 0;
  if (cu.cuDeviceGet(&d, 0) == CUDA_SUCCESS) {
    cu.cuDeviceGetName(name, sizeof name, d);
    cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d);
    cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
  }
  std::printf("driver %d\ndevice %s\nl2 %d\nsms %d\ndevices %d\n", drv, name, l2, sms, count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--compile") return compile_mode(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "--version") return version_mode();
  if (argc >= 3 && std::string_view(argv[1]) == "--sanitize") return sanitize_mode(argv[2]);
  if (argc >= 3 && std::string_view(argv[1]) == "--profile-once") return profile_mode(argv[2]);
  if (argc >= 2 && std::string_view(argv[1]) == "--exec")
    return kernelbrain::detail::supervision::exec_main(argc, argv, 2, "kernelbrain-cuda-worker");
  if (argc >= 3 && std::string_view(argv[1]) == "--serve" && std::string_view(argv[2]) == cp::role) {
    cuda_worker* w = nullptr;
    return serve_requests(cp::role, [&w](std::uint32_t type, std::string_view body, worker_context& ctx) {
      // The device's limits need no context (and answer "no device" on a machine without one).
      if (type == static_cast<std::uint32_t>(cp::request::device)) return cp::encode(query_device());
      if (!w) w = new cuda_worker();  // the context is created on the first check or time request
      return w->handle(type, body, ctx);
    });
  }
  std::fprintf(
      stderr,
      "kernelbrain-cuda-worker: runs CUDA candidates for KernelBrain's CUDA evaluator, which starts it.\n"
      "  usage: kernelbrain-cuda-worker --serve cuda | --compile SRC OUT.cubin [OPTS...] | --sanitize REQUEST\n"
      "         | --profile-once REQUEST\n"
      "         | --exec [--as=BYTES] [--cpu=SECONDS] [--fsize=BYTES] -- PROGRAM ARGS... | --version\n");
  return 2;
}
