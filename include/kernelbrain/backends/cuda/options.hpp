// cuda_options: the CUDA backend's settings (backends/cuda/evaluator.hpp), in a header of their own so that the
// backend's detail/ parts can take them without the evaluator (and, header-only, its bodies).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "kernelbrain/backends/common/pytorch_baseline.hpp"

namespace kernelbrain {

struct cuda_options {
  std::string
      worker_path;  ///< kernelbrain-cuda-worker; empty: $KERNELBRAIN_CUDA_WORKER, next to this program, the build's
  std::string cache_dir;  ///< cubins; empty: $KERNELBRAIN_CACHE_DIR, $XDG_CACHE_HOME/kernelbrain, ~/.cache/kernelbrain
  /// The GPU this evaluator runs on, as the CUDA_VISIBLE_DEVICES value its GPU children get (the
  /// serving worker, the --version probe, compute-sanitizer and ncu runs): "1", a UUID "GPU-...", a
  /// MIG id, anything CUDA_VISIBLE_DEVICES accepts; the children then see that one device as device 0.
  /// One evaluator per GPU (cuda_visible_devices() lists the values) puts each one's work on its own.
  /// It is read by CUDA against the whole machine, not against this process's own
  /// CUDA_VISIBLE_DEVICES, which it replaces. Empty (the default): the children inherit this
  /// process's CUDA_VISIBLE_DEVICES and use the first device it shows. The constructor throws when
  /// the value shows the worker no device.
  std::string visible_device;
  std::vector<std::string> nvrtc_options = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17"};
  double compile_timeout = 60;    ///< wall-clock seconds per NVRTC compile, then the compiler process is killed
  double run_timeout = 30;        ///< seconds of worker silence (one plan run, a trial) before the watchdog kills it
  std::uint64_t flush_bytes = 0;  ///< written before every timed sample; 0: twice the device's L2
  int baseline_samples = 5;
  int baseline_warmup = 1;
  /// Timed calls whose outputs are checked against the reference, chosen at random (from the
  /// measurement's seed) besides the last call, which is always checked.
  int checked_timed_calls = 1;
  /// Extra correctness trials with each input's adversarial cases (problem.json `adversarial`) at one
  /// correctness shape: the smallest of tier "odd" (else the smallest of tier "smoke").
  bool adversarial_inputs = true;
  /// compute-sanitizer (stage::sanitizer, evaluator::assure) on each template family's first point that
  /// reaches a rung with rung::assure (the standard ladder's top rung: families left behind on the smoke
  /// never pay for it) and on every candidate that is not a template instance, at the smallest
  /// correctness shape.
  bool sanitize = true;
  std::string sanitizer_path;  ///< empty: $KERNELBRAIN_SANITIZER, compute-sanitizer on PATH, $CUDA_HOME/bin,
                               ///< /usr/local/cuda/bin
  std::vector<std::string> sanitizer_tools = {"memcheck", "racecheck", "synccheck", "initcheck"};
  double sanitizer_timeout = 180;  ///< wall-clock seconds per tool run (the tools run in parallel)
  /// Diagnoses at rungs with rung::profile (the standard ladder's top rung), for every passing
  /// measurement: the static one (registers, spills, occupancy, roofline position) always, and Nsight
  /// Compute's counters of one run of the candidate at the rung's largest shape (once per candidate;
  /// its wall time is charged as device time) where ncu is found and works. Without ncu, or when it
  /// fails, the diagnosis is the static one and says why (docs/profiling.md). false: no ncu runs.
  bool profile = true;
  /// With `profile`: ncu runs only for a measurement that is the fastest this evaluator has made at its
  /// rung's profiled shape so far (a candidate that may become the incumbent, whose diagnosis steers the
  /// moves and the prompts), and only while ncu's runs stay within `profile_share` of the device seconds
  /// spent; the others get the static diagnosis. One ncu run costs 2-3 device seconds on an H100, ten to
  /// thirty lean top-rung measurements (issue 28; backends/common/profile_rationing.hpp).
  double profile_share = 0.1;
  /// true: every passing measurement at a profiling rung is profiled (the behaviour before issue 28).
  bool profile_all = false;
  std::string ncu_path;          ///< empty: $NCU, ncu on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin,
                                 ///< /opt/nvidia/nsight-compute/*/
  double profile_timeout = 180;  ///< wall-clock seconds per ncu run, then it is killed
  /// PyTorch eager and torch.compile timed with the baseline (measure_baseline), in a Python process
  /// of its own on this evaluator's device; visible_device and flush_bytes are this evaluator's.
  pytorch_options pytorch;
  std::function<void(int pid)> on_timing_request;  ///< test hook
};

}  // namespace kernelbrain
