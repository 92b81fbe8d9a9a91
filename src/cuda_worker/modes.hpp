// The modes of kernelbrain-cuda-worker, one source file each, dispatched by main.cpp (which lists
// them with their arguments).
#pragma once

namespace kernelbrain::cuda_worker {

/// --serve cuda: answer device/check/time requests on fd 3 (serve.cpp).
int serve_mode();
/// --compile SRC OUT.cubin [OPTS...]: NVRTC (compile.cpp); argv as main's.
int compile_mode(int argc, char** argv);
/// --sanitize REQUEST: one run of a candidate plan, for compute-sanitizer (sanitize.cpp).
int sanitize_mode(char const* request_path);
/// --profile-once REQUEST: one candidate plan for Nsight Compute (profile.cpp).
int profile_mode(char const* request_path);
/// --version (version.cpp).
int version_mode();

}  // namespace kernelbrain::cuda_worker
