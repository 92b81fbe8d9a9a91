// kernelbrain tune's local pool members (pool.hpp).
#include "pool.hpp"
#include "commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <kernelbrain/evaluate/cuda.hpp>
#include <kernelbrain/evaluate/host.hpp>
#include <kernelbrain/evaluate/synthetic.hpp>
#include <thread>

namespace kernelbrain::cli {

namespace {

/// Test hook behind --slow-eval-ms: sleeps before each measurement and forwards everything else, so
/// results, budget and fingerprint are the wrapped evaluator's own.
class slowed_evaluator final : public forwarding_evaluator {
 public:
  slowed_evaluator(evaluator& inner, std::chrono::milliseconds delay) : forwarding_evaluator(inner), delay_(delay) {}
  [[nodiscard]] measurement measure(candidate const& c, rung const& r, measure_request const& req) override {
    std::this_thread::sleep_for(delay_);
    return inner().measure(c, r, req);
  }

 private:
  std::chrono::milliseconds delay_;
};

void check_backend(problem const& prob, std::string const& backend) {
  if (prob.backend != backend)
    throw usage_error(fmt::format("problem '{}' is written for the {} backend, not {}: use --backend {}", prob.name,
                                  prob.backend, backend, prob.backend));
}

}  // namespace

std::unique_ptr<evaluator> make_backend_evaluator(problem const& prob, std::string const& backend,
                                                  std::string const& cuda_device) {
  if (backend == "host") {
    check_backend(prob, "host");
    return std::make_unique<host_evaluator>(prob);
  }
  if (backend == "cuda") {
    check_backend(prob, "cuda");
    cuda_options co;
    co.visible_device = cuda_device;
    return std::make_unique<cuda_evaluator>(prob, co);
  }
  // --backend was checked while parsing: this is a problem.json naming a backend this build lacks.
  throw usage_error(fmt::format("unknown backend '{}': this build has cuda, host and synthetic", backend));
}

local_pool make_local_pool(problem const& prob, std::string const& backend, tune_options const& o,
                           synthetic_landscape const* land, std::string const& label_prefix, std::string const& node) {
  if (backend == "synthetic" && land == nullptr)
    throw usage_error("the synthetic backend tunes 'synthetic' or 'synthetic:<landscape seed>'");
  // The devices this process times on: every visible GPU unless --devices chose (none found, as
  // without a driver: one member that inherits this process's device, so that the backend says what is
  // wrong as it always did); the CPU is one device, as is the synthetic backend.
  std::vector<std::string> devices;
  if (backend == "cuda") devices = o.devices.empty() ? cuda_visible_devices() : o.devices;
  if (devices.empty()) devices.emplace_back();
  const unsigned workers = std::max(1U, o.workers_per_device);
  local_pool local;
  for (auto const& d : devices) {
    // The device key makes members of one device take turns timing; it names the member too.
    const std::string key = backend == "cuda"   ? "cuda:" + (d.empty() ? std::string("0") : d)
                            : backend == "host" ? std::string("cpu")
                                                : backend;
    const std::string name = backend == "host" ? std::string("host") : key;
    for (unsigned w = 0; w < workers; ++w) {
      local.backends.push_back(backend == "synthetic" ? std::make_unique<synthetic_evaluator>(*land)
                                                      : make_backend_evaluator(prob, backend, d));
      evaluator* e = local.backends.back().get();
      if (o.slow_eval_ms > 0) {
        local.wrappers.push_back(std::make_unique<slowed_evaluator>(*e, std::chrono::milliseconds(o.slow_eval_ms)));
        e = local.wrappers.back().get();
      }
      local.pool.add(*e, label_prefix + (workers > 1 ? fmt::format("{} worker {}", name, w + 1) : name),
                     node.empty() ? key : node + "/" + key, node);
    }
  }
  return local;
}

std::string backend_note(local_pool const& local) {
  std::size_t compiles = 0, hits = 0, starts = 0, sanitized = 0, cuda = 0;
  bool sanitizer = false;
  for (auto const& b : local.backends)
    if (auto const* cu = dynamic_cast<cuda_evaluator const*>(b.get())) {
      ++cuda;
      compiles += cu->compiles();
      hits += cu->cache_hits();
      starts += cu->worker_starts();
      sanitized += cu->sanitizer_runs();
      sanitizer = sanitizer || !cu->sanitizer().empty();
    }
  if (cuda == 0) return {};
  return fmt::format("{} NVRTC compiles (ahead, in parallel), {} cache hits, {} worker starts, {}{}", compiles, hits,
                     starts,
                     sanitizer ? fmt::format("{} compute-sanitizer runs", sanitized)
                               : std::string("compute-sanitizer off (not found)"),
                     cuda > 1 ? fmt::format(" (over {} local members)", cuda) : std::string{});
}

}  // namespace kernelbrain::cli
