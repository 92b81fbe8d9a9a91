// host_options: the host backend's settings (backends/host/evaluator.hpp), in a header of their own so that the
// backend's detail/ parts can take them without the evaluator (and, header-only, its bodies).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include "kernelbrain/backends/host/source_policy.hpp"

namespace kernelbrain {

struct host_options {
  // -- where things are
  std::string worker_path;  ///< kernelbrain-host-worker; empty: $KERNELBRAIN_HOST_WORKER, next to this program, the
                            ///< build tree's
  std::string cache_dir;    ///< compiled artifacts; empty: $KERNELBRAIN_CACHE_DIR, $XDG_CACHE_HOME/kernelbrain,
                            ///< ~/.cache/kernelbrain
  std::string compiler = "c++";
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-march=native"};  ///< -fPIC -shared are always added
  std::string include_dir;  ///< holds kernelbrain/evaluate/host_abi.h; empty: this installation's include directory
  // -- limits
  double compile_timeout = 60;  ///< wall-clock seconds per compile, then the compiler is killed
  std::uint64_t compile_memory = std::uint64_t{2} << 30;  ///< compiler address space
  /// Background compiles of proposed candidates (evaluator::prefetch). 0, the default: none — here
  /// the timings run on the CPU too, and a compiler running beside them disturbs them (on two cores
  /// it made searches slower, not faster). Give it spare cores only.
  unsigned compile_threads = 0;
  double run_timeout = 10;  ///< seconds one kernel call may take before the watchdog kills the worker
  std::uint64_t candidate_memory = std::uint64_t{2}
                                   << 30;  ///< address space a candidate may allocate (std::bad_alloc beyond)
  // -- measurement
  std::uint64_t flush_bytes =
      0;                      ///< written before every timed call to evict the caches; 0: twice the last-level cache
  int baseline_samples = 15;  ///< timed reference runs per shape in measure_baseline
  int baseline_warmup = 2;
  bool bitwise_repeat = true;  ///< the two correctness runs must agree bit for bit (false: within the tolerance)
  /// Extra correctness trials with each input's adversarial cases (problem.json `adversarial`) at one
  /// correctness shape, whenever it is checked: the smallest of tier "odd" (else the smallest of the
  /// correctness tiers). As cuda_options::adversarial_inputs.
  bool adversarial_inputs = true;
  /// The sanitizer stage of the gate: the correctness trials of check() run again on a build with
  /// AddressSanitizer and UndefinedBehaviorSanitizer (stack-use-after-return on), in the same sandbox,
  /// for the first point of each template family and every candidate that is not a template instance;
  /// any report rejects (stage::sanitizer) with its text. Off where the compiler has no sanitizer
  /// runtimes (the fingerprint says which).
  bool sanitize = true;
  /// Added to `flags` for the sanitized build (a later -O wins over an earlier one).
  std::vector<std::string> sanitizer_flags = {"-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                                              "-fno-omit-frame-pointer", "-O1"};
  std::size_t modules_per_worker = 64;  ///< a fresh worker after this many loaded candidates (bounds its memory)
  host_source_policy policy;            ///< the static source policy inspect() applies
  /// Test hook: called with the candidate worker's pid right after a timing request was sent.
  std::function<void(int pid)> on_timing_request;
};

}  // namespace kernelbrain
