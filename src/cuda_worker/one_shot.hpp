// Helpers of kernelbrain-cuda-worker's one-shot modes (--compile, --sanitize, --profile-once): reading
// a file given on the command line, and ending with the search that started the process.
#pragma once
#include <string>

namespace kernelbrain::cuda_worker {

/// The whole file at `path` ("" when it cannot be read).
std::string read_text(char const* path);

/// One-shot modes end with the search that started them (killed with SIGKILL or not).
void die_with_parent();

}  // namespace kernelbrain::cuda_worker
