// The built-in backends' factories, given to the registry (backends/registry.hpp) by including this
// header anywhere in a program: host and cuda build their evaluators for a problem and a device; the
// synthetic backend takes its landscape and the replay backend its recording through
// backend_request::context. This header pulls in the evaluators; code that only needs a backend's traits
// includes backends/registry.hpp instead.
#pragma once
#include <any>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include "kernelbrain/backends/cuda/evaluator.hpp"
#include "kernelbrain/backends/host/evaluator.hpp"
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/backends/replay/evaluator.hpp"
#include "kernelbrain/backends/synthetic/evaluator.hpp"
#include "kernelbrain/io/problem_loader.hpp"
#include "kernelbrain/io/recording.hpp"

namespace kernelbrain {

namespace detail {

/// The `T const*` a backend_request's context must hold; kernelbrain::error naming `what` otherwise.
template <class T>
T const& request_context(backend_request const& req, char const* backend, char const* what) {
  if (auto const* p = std::any_cast<T const*>(&req.context); p && *p) return **p;
  throw error(std::string("the ") + backend + " backend builds its evaluator from " + what +
              " (backend_request::context), which this request does not hold");
}

/// The synthetic backend's problems: "synthetic" (landscape seed 7) or "synthetic:<landscape seed>".
inline std::optional<opened_problem> open_synthetic(std::string const& spec) {
  constexpr std::string_view name = "synthetic";
  if (!spec.starts_with(name) || (spec.size() > name.size() && spec[name.size()] != ':')) return std::nullopt;
  synthetic_config cfg;
  if (spec.size() > name.size()) {
    const std::string_view digits = std::string_view(spec).substr(name.size() + 1);
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), cfg.landscape_seed);
    if (digits.empty() || r.ec != std::errc{} || r.ptr != digits.data() + digits.size())
      throw error("problem '" + spec + "': '" + std::string(digits) + "' is not a whole number " +
                  (r.ec == std::errc::result_out_of_range ? "that fits in 64 bits" : "(0 or more)") +
                  ": use e.g. synthetic:7");
  }
  auto land = std::make_shared<synthetic_landscape const>(cfg);
  opened_problem o;
  o.label = "synthetic:" + std::to_string(cfg.landscape_seed);
  o.prob = std::shared_ptr<problem const>(land, &land->get_problem());
  o.context = land.get();
  o.keep = land;
  return o;
}

}  // namespace detail

/// The problem recording `r` was made from: found by its name among the problems of the backend that
/// recorded it (origin_of_fingerprint, problem_directory), narrowed to the recorded points
/// (replay_problem). Throws kernelbrain::error when it is not found or changed since.
[[nodiscard]] inline problem recorded_problem(recording const& r) {
  const auto origin = backends().origin_of_fingerprint(r.header.fingerprint);
  return replay_problem(load_problem(backends().problem_directory(r.header.problem, origin ? origin->name : "")), r);
}

namespace detail {

/// The replay backend's problems: a recording file (kernelbrain record's .jsonl or .jsonl.gz), with the
/// problem it was recorded from (looked up by name among the recorded backend's problems) narrowed to
/// the recorded points.
inline std::optional<opened_problem> open_recording(std::string const& spec) {
  std::error_code ec;
  if (!(spec.ends_with(".jsonl.gz") || spec.ends_with(".jsonl")) || !std::filesystem::is_regular_file(spec, ec))
    return std::nullopt;
  auto rec = std::make_shared<recording const>(read_recording(spec));
  auto prob = std::make_shared<problem const>(recorded_problem(*rec));
  opened_problem o;
  o.label = prob->name;
  o.prob = prob;
  o.context = rec.get();
  o.keep = rec;
  return o;
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
        o.pytorch.enabled = req.pytorch && !req.recording;
        o.pytorch.timeout = req.pytorch_timeout;
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
    // What the sanitizer and ncu runs a recording lacks cost (replay_options; docs/evaluation-plane.md).
    char const* tools = std::getenv("KERNELBRAIN_REPLAY_TOOLS");
    return std::make_unique<replay_evaluator>(request_context<recording>(req, "replay", "a recording const*"),
                                              *req.prob, tools ? parse_replay_options(tools) : replay_options{});
  });
  r.provide_opener("synthetic", open_synthetic);
  r.provide_opener("replay", open_recording);
  return true;
}

}  // namespace detail

/// Set once per program, before main, wherever this header is included: the built-in factories.
inline const bool builtin_backends_provided = detail::provide_builtin_backends();

}  // namespace kernelbrain
