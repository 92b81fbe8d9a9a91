// GPU tests of device selection (label "gpu"): evaluators with cuda_options::visible_device, two on
// one device and, where the machine has two or more, one per device, measuring at the same time as
// an evaluation pool does; each serving worker runs with its evaluator's CUDA_VISIBLE_DEVICES. The
// CPU side (the list of devices, the children's environment): tests/test_cuda_devices.cpp.
#include <doctest/doctest.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/detail/worker_client.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

problem softmax() { return load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax"); }

/// The CUDA_VISIBLE_DEVICES entry of process `pid`'s environment ("unset" when it has none).
std::string visible_devices_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  for (std::string entry; std::getline(in, entry, '\0');)
    if (entry.starts_with("CUDA_VISIBLE_DEVICES=")) return entry.substr(21);
  return "unset";
}

/// What one evaluator did: the baseline, a measurement of the reference as a candidate, and the
/// CUDA_VISIBLE_DEVICES its serving worker ran with.
struct outcome {
  baseline base;
  measurement m;
  std::string worker_devices;
  std::string error;  ///< what was thrown, if anything
};

/// Two evaluators for `p` on devices `da` and `db`, each measuring in its own thread at the same time.
void measure_on(problem const& p, std::string const& da, std::string const& db) {
  INFO("devices '", da, "' and '", db, "'");
  outcome oa, ob;
  auto options = [](std::string const& device, outcome& o) {
    cuda_options opt;
    opt.visible_device = device;
    opt.profile = false;
    opt.on_timing_request = [&o](int pid) { o.worker_devices = visible_devices_of(pid); };
    return opt;
  };
  cuda_evaluator a(p, options(da, oa)), b(p, options(db, ob));
  CHECK(a.device() == da);
  CHECK(b.device() == db);
  // Devices of one model give one fingerprint: the index is no part of it.
  const auto model_a = detail::cuda::probe_worker(find_cuda_worker(), {"CUDA_VISIBLE_DEVICES=" + da}).device_text;
  const auto model_b = detail::cuda::probe_worker(find_cuda_worker(), {"CUDA_VISIBLE_DEVICES=" + db}).device_text;
  if (model_a == model_b) CHECK(a.fingerprint() == b.fingerprint());

  auto c = make_candidate("test", parameters{}, "test", std::nullopt,
                          "// the reference as a candidate\n" + p.reference_source, p.reference_launch);
  c.seal();
  rung r;
  r.shapes = {0, 1};
  r.samples = 3;
  auto work = [&p, &c, &r](cuda_evaluator& ev, outcome& o) {
    try {
      o.base = ev.measure_baseline(p);
      measure_request req;
      req.seed = 7;
      o.m = ev.measure(c, r, req);
    } catch (std::exception const& e) {
      o.error = e.what();
    }
  };
  std::thread ta([&] { work(a, oa); });
  std::thread tb([&] { work(b, ob); });
  ta.join();
  tb.join();
  for (auto const* o : {&oa, &ob}) {
    const auto& device = o == &oa ? da : db;
    INFO("device '", device, "': ", o->error, o->m.result.detail);
    REQUIRE(o->error.empty());
    REQUIRE(o->base.seconds.size() == p.shapes.size());
    for (double s : o->base.seconds) CHECK(s > 0);
    CHECK(o->m.result.where == stage::pass);
    CHECK(o->m.timings.size() == r.shapes.size());
    CHECK(o->worker_devices == device);
  }
  CHECK(a.take_device_seconds() > 0);
  CHECK(b.take_device_seconds() > 0);
}

}  // namespace

TEST_CASE("cuda devices: two evaluators on one device, and one per device, each measure the baseline and a candidate") {
  const auto p = softmax();
  const auto devices = cuda_visible_devices();
  REQUIRE_MESSAGE(!devices.empty(), "no CUDA device visible");
  measure_on(p, devices[0], devices[0]);
  if (devices.size() >= 2)
    measure_on(p, devices[0], devices[1]);
  else
    MESSAGE("one device visible: one evaluator per device not tried");
}
