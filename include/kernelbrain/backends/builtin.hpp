// The built-in backends' factories, given to the registry (backends/registry.hpp) by including this
// header anywhere in a program: host and cuda build their evaluators for a problem and a device; the
// synthetic backend takes its landscape and the replay backend its recording through
// backend_request::context. This header pulls in the evaluators; code that only needs a backend's traits
// includes backends/registry.hpp instead.
#pragma once
#include <any>
#include <memory>
#include <string>
#include <vector>
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/evaluate/cuda.hpp"
#include "kernelbrain/evaluate/host.hpp"
#include "kernelbrain/evaluate/replay.hpp"
#include "kernelbrain/evaluate/synthetic.hpp"

namespace kernelbrain {

namespace detail {

/// The `T const*` a backend_request's context must hold; kernelbrain::error naming `what` otherwise.
template <class T>
T const& request_context(backend_request const& req, char const* backend, char const* what) {
  if (auto const* p = std::any_cast<T const*>(&req.context); p && *p) return **p;
  throw error(std::string("the ") + backend + " backend builds its evaluator from " + what +
              " (backend_request::context), which this request does not hold");
}

inline bool provide_builtin_backends() {
  auto& r = backends();
  r.provide(
      "host",
      [](backend_request const& req) -> std::unique_ptr<evaluator> {
        return std::make_unique<host_evaluator>(*req.prob);
      },
      {}, [] { return host_sandbox_summary(); });
  r.provide(
      "cuda",
      [](backend_request const& req) -> std::unique_ptr<evaluator> {
        cuda_options o;
        o.visible_device = req.device;
        if (req.recording) {  // a sweep: their cost per point would dominate it; replay gives the static diagnosis
          o.sanitize = false;
          o.profile = false;
          o.baseline_samples = 10;
        }
        return std::make_unique<cuda_evaluator>(*req.prob, o);
      },
      [] { return cuda_visible_devices(); });
  r.provide("synthetic", [](backend_request const& req) -> std::unique_ptr<evaluator> {
    return std::make_unique<synthetic_evaluator>(
        request_context<synthetic_landscape>(req, "synthetic", "a synthetic_landscape const*"));
  });
  r.provide("replay", [](backend_request const& req) -> std::unique_ptr<evaluator> {
    return std::make_unique<replay_evaluator>(request_context<recording>(req, "replay", "a recording const*"),
                                              *req.prob);
  });
  return true;
}

}  // namespace detail

/// Set once per program, before main, wherever this header is included: the built-in factories.
inline const bool builtin_backends_provided = detail::provide_builtin_backends();

}  // namespace kernelbrain
