// worker_verdict: a worker's answer to one request as a verdict, the part every process-isolated
// backend shares (the host and CUDA backends both read their workers this way). A silent worker
// killed by the watchdog is stage::timeout, a worker that died before answering is stage::crash, an
// answer that does not decode is stage::infrastructure; what a decoded reply's status means is the
// backend's to say (its `judge`).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::detail {

/// How a backend's protocol reads its replies.
template <class Reply>
struct reply_reading {
  Reply (*decode)(std::string_view body);  ///< throws wire_error for a malformed body
  double Reply::*device_seconds;           ///< the time the reply says the request kept the device busy
};

/// The verdict on `r`, the outcome of the request `what` ("loading the candidate", "at shape 'odd'"):
/// - the worker was silent too long (the watchdog killed it): stage::timeout, "WHAT: why";
/// - it died before answering: stage::crash, "WHAT: why";
/// - its reply does not decode: stage::infrastructure, "WHAT: malformed reply from the worker: ...";
/// - otherwise `judge(reply)`, the backend's reading of the reply's status.
/// `spent`, when not null, is charged with the wall time of a timeout or crash, or with the device
/// time a decoded reply reports; `out`, when not null, receives the decoded reply.
template <class Reply, class Judge>
[[nodiscard]] verdict worker_verdict(worker_reply const& r, std::string const& what, reply_reading<Reply> reading,
                                     Judge&& judge, double* spent = nullptr, Reply* out = nullptr) {
  if (r.st != worker_reply::status::reply) {
    if (spent) *spent += r.seconds;
    return verdict::reject(r.st == worker_reply::status::timeout ? stage::timeout : stage::crash, what + ": " + r.why);
  }
  Reply rep;
  try {
    rep = reading.decode(r.msg.body);
  } catch (wire_error const& e) {
    return verdict::reject(stage::infrastructure, what + ": malformed reply from the worker: " + e.what());
  }
  if (spent) *spent += rep.*reading.device_seconds;
  if (out) *out = rep;
  return std::forward<Judge>(judge)(std::as_const(rep));
}

}  // namespace kernelbrain::detail
