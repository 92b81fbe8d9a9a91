// --profile-once: one candidate plan for Nsight Compute (which starts this mode with
// --profile-from-start off): fresh inputs, warm-up runs, then the profiled runs between
// cuProfilerStart/Stop (worker::profile).
#include <cstdio>
#include "errors.hpp"
#include "modes.hpp"
#include "one_shot.hpp"
#include "worker.hpp"

namespace kernelbrain::cuda_worker {

using kernelbrain::detail::wire_error;

/// Runs worker::profile on the request in `request_path`. Prints "kernelbrain-profile: ok" on
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
    worker w;
    w.profile(q);
  } catch (request_failure const& f) {
    std::printf("kernelbrain-profile: failed: %s\n", f.message.c_str());
    return 1;
  }
  std::printf("kernelbrain-profile: ok\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace kernelbrain::cuda_worker
