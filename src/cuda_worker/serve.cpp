// --serve cuda: the serving loop. Answers requests on fd 3 (started by the evaluator): device (the
// limits plans are checked against, without a context), then check and time (worker.hpp).
#include <cstdint>
#include <string_view>
#include "device.hpp"
#include "kernelbrain/backends/cuda/detail/protocol.hpp"
#include "kernelbrain/isolation/worker_protocol.hpp"
#include "modes.hpp"
#include "worker.hpp"

namespace kernelbrain::cuda_worker {

using namespace kernelbrain::detail;  // the worker side of the wire protocol

int serve_mode() {
  worker* w = nullptr;
  return serve_requests(cp::role, [&w](std::uint32_t type, std::string_view body, worker_context& ctx) {
    // The device's limits need no context (and answer "no device" on a machine without one).
    if (type == static_cast<std::uint32_t>(cp::request::device)) return cp::encode(query_device());
    if (!w) w = new worker();  // the context is created on the first check or time request
    return w->handle(type, body, ctx);
  });
}

}  // namespace kernelbrain::cuda_worker
