// How kernelbrain-cuda-worker fails: a sticky CUDA error (illegal address, trap, ...) ends the
// process (die, exit 70: the evaluator reports a crash and starts a fresh worker); any other failure
// ends the request with a status (request_failure). Shared by the serving worker and the one-shot modes.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>
#include "kernelbrain/backends/cuda/detail/protocol.hpp"

namespace kernelbrain::cuda_worker {

namespace cp = kernelbrain::detail::cuda_protocol;

/// Whether `r` leaves the context unusable (the process must end).
bool sticky(CUresult r);
/// The driver's name and description of `r`.
std::string err_text(CUresult r);

/// A failure that ends the request with a status (not sticky).
struct request_failure {
  cp::status st;
  std::string message;
  std::int32_t index = -1;
};

/// Ends the process: a sticky CUDA error, `what` on stderr, exit 70.
[[noreturn]] void die(std::string const& what);
/// die() when `r` is an error.
void die_if(CUresult r, char const* what);

}  // namespace kernelbrain::cuda_worker
