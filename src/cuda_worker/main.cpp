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
// The modes are in files named after them (modes.hpp); what they share: driver.hpp (the driver API),
// errors.hpp, device.hpp, buffers.hpp, launch.hpp, and worker.hpp (the serving worker).
#include <cstdio>
#include <string_view>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/isolation/process_supervision.hpp"
#include "modes.hpp"

namespace cp = kernelbrain::detail::cuda_protocol;
using namespace kernelbrain::cuda_worker;

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--compile") return compile_mode(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "--version") return version_mode();
  if (argc >= 3 && std::string_view(argv[1]) == "--sanitize") return sanitize_mode(argv[2]);
  if (argc >= 3 && std::string_view(argv[1]) == "--profile-once") return profile_mode(argv[2]);
  if (argc >= 2 && std::string_view(argv[1]) == "--exec")
    return kernelbrain::detail::supervision::exec_main(argc, argv, 2, "kernelbrain-cuda-worker");
  if (argc >= 3 && std::string_view(argv[1]) == "--serve" && std::string_view(argv[2]) == cp::role) return serve_mode();
  std::fprintf(
      stderr,
      "kernelbrain-cuda-worker: runs CUDA candidates for KernelBrain's CUDA evaluator, which starts it.\n"
      "  usage: kernelbrain-cuda-worker --serve cuda | --compile SRC OUT.cubin [OPTS...] | --sanitize REQUEST\n"
      "         | --profile-once REQUEST\n"
      "         | --exec [--as=BYTES] [--cpu=SECONDS] [--fsize=BYTES] -- PROGRAM ARGS... | --version\n");
  return 2;
}
