// --version: NVRTC version, driver version, device 0's name, L2 size and multiprocessors, and how
// many devices CUDA_VISIBLE_DEVICES shows ("device none" without a driver or device).
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include "driver.hpp"
#include "modes.hpp"

namespace kernelbrain::cuda_worker {

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

}  // namespace kernelbrain::cuda_worker
