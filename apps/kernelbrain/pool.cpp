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

std::unique_ptr<evaluator> make_backend_evaluator(problem const& prob, std::string const& backend) {
  if (backend == "host") {
    check_backend(prob, "host");
    return std::make_unique<host_evaluator>(prob);
  }
  if (backend == "cuda") {
    check_backend(prob, "cuda");
    return std::make_unique<cuda_evaluator>(prob);
  }
  // --backend was checked while parsing: this is a problem.json naming a backend this build lacks.
  throw usage_error(fmt::format("unknown backend '{}': this build has cuda, host and synthetic", backend));
}

local_pool make_local_pool(problem const& prob, std::string const& backend, tune_options const& o,
                           synthetic_landscape const* land, std::string const& label_prefix, std::string const& node) {
  local_pool local;
  const unsigned workers = std::max(1U, o.workers_per_device);
  // (device key, label) per member; the device key makes members of one device take turns timing.
  std::vector<std::pair<std::string, std::string>> slots;
  auto add_workers = [&](std::string const& device, std::string const& label) {
    for (unsigned w = 0; w < workers; ++w)
      slots.emplace_back(device, workers > 1 ? fmt::format("{} worker {}", label, w + 1) : label);
  };
  if (backend == "cuda") {
    check_backend(prob, "cuda");
    // Every visible device unless --devices chose; none found (no driver here): one member that
    // inherits this process's device, so that the backend says what is wrong as it always did.
    std::vector<std::string> devices = o.devices.empty() ? cuda_visible_devices() : o.devices;
    const bool inherit = devices.empty();
    if (inherit) devices.emplace_back();
    for (auto const& d : devices) {
      const std::size_t first = slots.size();
      add_workers("cuda:" + (d.empty() ? std::string("0") : d), "cuda:" + (d.empty() ? std::string("0") : d));
      for (std::size_t i = first; i < slots.size(); ++i) {
        cuda_options co;
        co.visible_device = d;
        local.backends.push_back(std::make_unique<cuda_evaluator>(prob, co));
      }
    }
  } else if (backend == "host") {
    check_backend(prob, "host");
    // The CPU is one device: host members take turns timing, and overlap their compiles and checks.
    add_workers("cpu", "host");
    for (unsigned w = 0; w < workers; ++w) local.backends.push_back(std::make_unique<host_evaluator>(prob));
  } else if (backend == "synthetic") {
    if (land == nullptr) throw usage_error("the synthetic backend tunes 'synthetic' or 'synthetic:<landscape seed>'");
    add_workers("synthetic", "synthetic");
    for (unsigned w = 0; w < workers; ++w) local.backends.push_back(std::make_unique<synthetic_evaluator>(*land));
  } else {
    // --backend was checked while parsing: this is a problem.json naming a backend this build lacks.
    throw usage_error(fmt::format("unknown backend '{}': this build has cuda, host and synthetic", backend));
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    evaluator* e = local.backends[i].get();
    if (o.slow_eval_ms > 0) {
      local.wrappers.push_back(std::make_unique<slowed_evaluator>(*e, std::chrono::milliseconds(o.slow_eval_ms)));
      e = local.wrappers.back().get();
    }
    auto const& [device, label] = slots[i];
    local.pool.add(*e, label_prefix + label, node.empty() ? device : node + "/" + device, node);
  }
  local.description = fmt::format("{} member{}:", local.pool.size(), local.pool.size() == 1 ? "" : "s");
  for (auto const& m : local.pool.members()) local.description += " " + m.label;
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
