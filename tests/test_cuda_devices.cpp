// Device selection of the CUDA backend on a machine without a GPU: which devices a pool may use
// (cuda_visible_devices), what the worker's --version counts, and that an evaluator's GPU children
// (the --version probe, the serving worker, compute-sanitizer, ncu) get its CUDA_VISIBLE_DEVICES
// while its fingerprint stays that of the device's model. The GPU side: tests/gpu/test_cuda_devices.cpp.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/detail/profiler.hpp>
#include <kernelbrain/backends/cuda/detail/sanitizer_gate.hpp>
#include <kernelbrain/backends/cuda/detail/worker_client.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/core/candidate.hpp>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "scoped_env.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

using kb_test::scoped_env;

using kb_test::temp_dir;
using strings = std::vector<std::string>;

/// An executable shell script at `p`; returns its path.
std::string script(fs::path const& p, std::string const& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  ::chmod(p.c_str(), 0755);
  return p.string();
}

/// The lines of a file, sorted (children append to it in any order).
strings sorted_lines(fs::path const& p) {
  std::istringstream in(kb_test::slurp(p));
  strings out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("cuda devices: cuda_visible_devices takes CUDA_VISIBLE_DEVICES's entries, without asking the worker") {
  // A worker path that is not there: cuda_visible_devices would throw if it looked for the worker.
  const std::string no_worker = "/nonexistent/kernelbrain-cuda-worker";
  auto with = [&](std::string const& value) {
    const scoped_env e("CUDA_VISIBLE_DEVICES", value);
    return cuda_visible_devices(no_worker);
  };
  CHECK(with("2,GPU-abc") == strings{"2", "GPU-abc"});
  CHECK(with(" 1 , 3 ") == strings{"1", "3"});
  CHECK(with("\t0,\t1\t") == strings{"0", "1"});
  CHECK(with("MIG-GPU-5c89852c/1/0") == strings{"MIG-GPU-5c89852c/1/0"});
  CHECK(with("-1").empty());
  CHECK(with(" -1 ").empty());
  CHECK(with(" ").empty());
  // CUDA shows no device from the first invalid entry on: "-1" or an empty entry ends the list.
  CHECK(with("0,-1,1") == strings{"0"});
  CHECK(with("1,,2") == strings{"1"});
  CHECK(with(",1").empty());
  CHECK(with("1,2,1") == strings{"1", "2"});  // a device once: two evaluators on one GPU would disturb each other
}

TEST_CASE("cuda devices: without CUDA_VISIBLE_DEVICES, the devices the worker's --version counts") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  const scoped_env unset("CUDA_VISIBLE_DEVICES", std::nullopt);
  temp_dir d("cuda_devices");
  SUBCASE("the real worker: no driver here, so no device and no failure") {
    const auto report = detail::cuda::probe_worker(find_cuda_worker());
    strings devices;
    REQUIRE_NOTHROW(devices = cuda_visible_devices());
    INFO("device: ", report.device_text);
    if (report.device_text == "none") {  // this machine, CI: no driver
      CHECK(report.device_count == 0);
      CHECK(devices.empty());
    } else {  // a developer's machine with GPUs
      REQUIRE(report.device_count >= 1);
      CHECK(devices.size() == report.device_count);
      CHECK(devices.front() == "0");
    }
    // A list that shows no device: none on any machine, and --version still succeeds.
    const auto hidden = detail::cuda::probe_worker(find_cuda_worker(), {"CUDA_VISIBLE_DEVICES=-1"});
    CHECK(hidden.device_count == 0);
    CHECK(hidden.device_text == "none");
    CHECK_FALSE(hidden.nvrtc_version.empty());
  }
  SUBCASE("a worker that counts three devices, one that does not say, one that fails") {
    const auto three = script(d / "three",
                              "echo 'nvrtc 13.0'\necho 'driver 13000'\necho 'device Fake'\necho "
                              "'l2 1024'\necho 'sms 132'\necho 'devices 3'\n");
    CHECK(detail::cuda::probe_worker(three).device_count == 3);
    CHECK(detail::cuda::probe_worker(three).sm_count == 132);
    CHECK(cuda_visible_devices(three) == strings{"0", "1", "2"});
    const auto silent = script(d / "silent", "echo 'nvrtc 13.0'\necho 'device none'\n");  // an older worker
    CHECK(detail::cuda::probe_worker(silent).device_count == 0);
    CHECK(cuda_visible_devices(silent).empty());
    const auto failing = script(d / "failing", "echo 'no NVRTC here'\nexit 1\n");
    CHECK_THROWS_WITH_AS((void)cuda_visible_devices(failing), doctest::Contains("--version failed"), error);
  }
#endif
}

TEST_CASE(
    "cuda devices: an evaluator's GPU children get its CUDA_VISIBLE_DEVICES, and the fingerprint is the model's") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  temp_dir d("cuda_device_env");
  const auto log = d / "children.log";
  const std::string real = find_cuda_worker();
  // The real worker behind a script that logs each start's mode and CUDA_VISIBLE_DEVICES; its
  // --version says there is a device (there is none here), as a GPU machine's would.
  const auto wrapper =
      script(d / "worker", "echo \"$1 ${CUDA_VISIBLE_DEVICES-unset}\" >> '" + log.string() +
                               "'\n"
                               "if [ \"$1\" = --version ]; then '" +
                               real + "' --version | sed 's/^devices 0$/devices 1/'; exit 0; fi\nexec '" + real +
                               "' \"$@\"\n");
  cuda_options o;
  o.worker_path = wrapper;
  o.cache_dir = (d / "cache").string();
  o.sanitize = false;
  o.profile = false;
  auto started = [&](std::string const& mode) {  // what each start of `mode` saw, sorted
    strings out;
    for (auto const& line : sorted_lines(log))
      if (line.starts_with(mode + " ")) out.push_back(line.substr(mode.size() + 1));
    return out;
  };

  o.visible_device = "3";
  std::string three_fingerprint;
  {
    cuda_evaluator ev(p, o);  // probes --version, asks the serving worker for the device, compiles
    CHECK(ev.device() == "3");
    three_fingerprint = ev.fingerprint();
  }
  CHECK(started("--version") == strings{"3"});
  CHECK(started("--serve") == strings{"3"});

  std::filesystem::remove(log);
  o.visible_device = "5";
  {
    cuda_evaluator ev(p, o);
    CHECK(ev.device() == "5");
    CHECK(ev.fingerprint() == three_fingerprint);  // two devices of one model: one fingerprint
  }
  CHECK(started("--version") == strings{"5"});
  CHECK(started("--serve") == strings{"5"});

  // Empty: the children inherit this process's CUDA_VISIBLE_DEVICES, as before.
  std::filesystem::remove(log);
  o.visible_device.clear();
  {
    const scoped_env inherited("CUDA_VISIBLE_DEVICES", "7");
    cuda_evaluator ev(p, o);
    CHECK(ev.device().empty());
    CHECK(ev.fingerprint() == three_fingerprint);
  }
  CHECK(started("--version") == strings{"7"});
  CHECK(started("--serve") == strings{"7"});
#endif
}

TEST_CASE("cuda devices: an evaluator given a device that shows the worker none refuses to start") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  temp_dir d("cuda_no_device");
  cuda_options o;
  o.cache_dir = d.path.string();
  o.visible_device = "GPU-00000000-0000-0000-0000-000000000000";  // no machine has it
  CHECK_THROWS_WITH_AS(cuda_evaluator(p, o),
                       doctest::Contains("visible_device 'GPU-00000000-0000-0000-0000-000000000000' shows the "
                                         "worker no device"),
                       error);
#endif
}

TEST_CASE("cuda devices: compute-sanitizer and ncu runs get the evaluator's CUDA_VISIBLE_DEVICES through --exec") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker for --exec)");
#else
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  temp_dir d("cuda_tool_env");
  const auto log = d / "tools.log";
  const std::string worker = find_cuda_worker();
  const strings env = {"CUDA_VISIBLE_DEVICES=4"};
  double spent = 0;
  detail::cuda_protocol::run_request q;
  q.cand.cubin = "/nonexistent.cubin";
  q.samples = 1;

  SUBCASE("compute-sanitizer, every tool") {
    // The fake tool logs its --tool and the device, and reports a clean run of the candidate.
    const auto sanitizer =
        script(d / "compute-sanitizer", "echo \"$2 ${CUDA_VISIBLE_DEVICES-unset}\" >> '" + log.string() +
                                            "'\necho 'kernelbrain-sanitize: ok'\n"
                                            "echo '========= ERROR SUMMARY: 0 errors'\n");
    cuda_options o;
    o.sanitizer_tools = {"memcheck", "racecheck"};
    detail::cuda::sanitizer_gate gate(p, o, worker, &spent, env);
    gate.use(sanitizer, d.path.string());
    auto c = make_candidate("test", parameters{}, "test", std::nullopt, "// source", "{}");
    c.seal();
    const auto v = gate.check(c, q, "at shape 'smoke'");
    INFO(v.detail);
    CHECK(v.where == stage::pass);
    CHECK(sorted_lines(log) == strings{"memcheck 4", "racecheck 4"});
  }
  SUBCASE("ncu") {
    const auto ncu = script(d / "ncu", "echo \"${CUDA_VISIBLE_DEVICES-unset}\" >> '" + log.string() + "'\nexit 1\n");
    detail::cuda::ncu_profiler prof(worker, 30, &spent, env);
    prof.use(detail::cuda::ncu_location{ncu, {}}, d.path.string());
    const auto out = prof.profile(q);
    CHECK_FALSE(out.why_not.empty());  // the fake profiles nothing
    CHECK(sorted_lines(log) == strings{"4"});
  }
#endif
}
