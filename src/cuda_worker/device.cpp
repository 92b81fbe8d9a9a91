// query_device, outside_device and device_context: device 0 as the worker sees it.
#include "device.hpp"

#include <string>
#include "driver.hpp"
#include "errors.hpp"

namespace kernelbrain::cuda_worker {

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

device_context::device_context() {
  if (!cu.load()) die(cu.missing);
  die_if(cu.cuInit(0), "cuInit");
  // Device 0 is the first that CUDA_VISIBLE_DEVICES shows: the evaluator chooses a GPU by setting
  // it in this process's environment (cuda_options::visible_device).
  die_if(cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
  die_if(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  die_if(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  die_if(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

}  // namespace kernelbrain::cuda_worker
