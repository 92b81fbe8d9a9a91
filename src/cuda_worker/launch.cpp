// load_module, functions_of and launch_all: a plan's module, its checked functions, its launches.
#include "launch.hpp"

#include <string>
#include <vector>
#include "device.hpp"
#include "driver.hpp"
#include "errors.hpp"

namespace kernelbrain::cuda_worker {

CUmodule load_module(std::string const& path) {
  CUmodule m = nullptr;
  const CUresult r = cu.cuModuleLoad(&m, path.c_str());
  if (r == CUDA_SUCCESS) return m;
  if (sticky(r)) die("cuModuleLoad: " + err_text(r));
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    throw request_failure{cp::status::out_of_memory, "cannot load the compiled module: " + err_text(r)};
  throw request_failure{cp::status::load_failed, "cannot load the compiled module: " + err_text(r)};
}

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

}  // namespace kernelbrain::cuda_worker
