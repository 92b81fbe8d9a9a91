// kernelbrain tune's local pool members (pool.hpp).
#include "pool.hpp"
#include "commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <kernelbrain/backends/builtin.hpp>
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

}  // namespace

std::unique_ptr<evaluator> make_backend_evaluator(problem const& prob, std::string const& backend,
                                                  std::string const& device, std::any context, bool recording,
                                                  bool pytorch, double pytorch_timeout) {
  backend_request req;
  req.pytorch = pytorch;
  req.pytorch_timeout = pytorch_timeout;
  req.prob = &prob;
  req.device = device;
  req.context = std::move(context);
  req.recording = recording;
  try {
    return backends().make(backend, req);
  } catch (error const& e) {
    // A problem for another backend, or a backend this build has no factory for: the user's to fix.
    if (!backends().contains(backend) || (backends().traits(backend).problem_files && prob.backend != backend))
      throw usage_error(e.what());
    throw;
  }
}

local_pool make_local_pool(problem const& prob, std::string const& backend, tune_options const& o,
                           std::any const& context, std::string const& label_prefix, std::string const& node) {
  // The devices this process times on: every device the backend lists unless --devices chose (none found,
  // as without a driver: one member that inherits this process's device, so that the backend says what is
  // wrong as it always did); the CPU is one device, as is the synthetic backend.
  std::vector<std::string> devices = o.devices.empty() ? backends().devices(backend) : o.devices;
  if (devices.empty()) devices.emplace_back();
  const unsigned workers = std::max(1U, o.workers_per_device);
  local_pool local;
  for (auto const& d : devices) {
    // The device key makes members of one device take turns timing; it names the member too.
    const std::string key = backends().device_key(backend, d);
    const std::string name = key == "cpu" ? backend : key;
    for (unsigned w = 0; w < workers; ++w) {
      local.backends.push_back(
          make_backend_evaluator(prob, backend, d, context, false, o.pytorch, o.pytorch_timeout()));
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
