// The host gate's sanitizer stage (issue 24): a build with AddressSanitizer and
// UndefinedBehaviorSanitizer runs the gate's correctness trials for the first point of each template
// family and for every candidate that is not a template instance; a report rejects with its text.
// (The corpus cases use_after_return, stale_longjmp and signed_overflow in test_host_backend.cpp
// are the candidates only this stage catches.)
#include <doctest/doctest.h>

#if defined(__linux__)
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <string>
#include <vector>
#include "host_corpus/scale_rows.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;

namespace {

/// scale_rows with one template family: the row loop with ${U} partial sums, and a template whose
/// U = 3 reads one element past the end of w on odd widths (a heap overflow only ASan sees: the
/// arena around w belongs to the executor, so an ordinary build reads a canary and ignores it).
problem with_family() {
  auto p = kb_corpus::scale_rows();
  kernel_template t;
  t.source = R"(
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc[${U}] = {};
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = x[r * C + c] * w[c];
      acc[c % ${U}] += y[r * C + c];
    }
    double t = 0;
    for (int u = 0; u < ${U}; ++u) t += acc[u];
    s[r] = static_cast<float>(t);
  }
}
)";
  t.space.params = {{"U", {1, 2, 4}}};
  p.catalogue.push_back({"partial-sums", "several partial sums per row", t, {}});
  return p;
}

candidate instance(problem const& p, std::int64_t u) {
  parameters params;
  params.set("U", u);
  return make_candidate("partial-sums", params, "test", std::nullopt, substitute(p.catalogue[0].templ->source, params));
}

host_options options() {
  host_options o;
  o.cache_dir = kb_test::process_dir("host-sanitizer-test");
  return o;
}

const std::vector<std::size_t> gate_shapes = {0, 1};

}  // namespace

TEST_CASE("host sanitizer stage: once per template family, always for other code, and off when asked") {
  const auto p = with_family();
  host_evaluator ev(p, options());
  if (ev.fingerprint().find("sanitizer on") == std::string::npos) {
    MESSAGE("skipped: this compiler has no sanitizer runtimes (", ev.fingerprint(), ")");
    return;
  }
  // The family's first point runs the stage; its other points are covered by that pass.
  CHECK(ev.check(instance(p, 1), gate_shapes, 2, 1).passed());
  CHECK(ev.sanitizer_runs() == 1);
  CHECK(ev.check(instance(p, 2), gate_shapes, 2, 2).passed());
  CHECK(ev.check(instance(p, 4), gate_shapes, 2, 3).passed());
  CHECK(ev.sanitizer_runs() == 1);
  // The same code edited by hand (not the template at its parameters) runs it again, each time.
  auto edited = instance(p, 2);
  edited.source += "\n// tuned by hand\n";
  edited.seal();
  CHECK(ev.check(edited, gate_shapes, 2, 4).passed());
  CHECK(ev.sanitizer_runs() == 2);
  // A verdict is remembered per candidate: checking it again runs nothing.
  CHECK(ev.check(edited, gate_shapes, 2, 5).passed());
  CHECK(ev.sanitizer_runs() == 2);

  // A candidate that is not a template instance and breaks only under the sanitizer: rejected with
  // the report's own words, and remembered.
  auto overflow = make_candidate("hand-written", {}, "test", std::nullopt, R"(
#include "kernelbrain/evaluate/host_abi.h"
#include <vector>
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  std::vector<float> row(C);
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      row[c] = x[r * C + c] * w[c];
      acc += row[c];
    }
    volatile float past_the_end = row.data()[C];  // one element past the vector's heap block
    (void)past_the_end;
    for (long long c = 0; c < C; ++c) y[r * C + c] = row[c];
    s[r] = static_cast<float>(acc);
  }
}
)");
  const auto v = ev.check(overflow, gate_shapes, 2, 6);
  INFO(v.detail);
  CHECK(v.where == stage::sanitizer);
  CHECK(v.detail.find("AddressSanitizer: heap-buffer-overflow") != std::string::npos);
  CHECK(v.detail.find("SUMMARY:") != std::string::npos);
  CHECK(ev.sanitizer_runs() == 3);
  CHECK(ev.check(overflow, gate_shapes, 2, 7).where == stage::sanitizer);
  CHECK(ev.sanitizer_runs() == 3);

  // Off when asked: the fingerprint says so, and the overflow passes the ordinary gate.
  auto o = options();
  o.sanitize = false;
  host_evaluator off(p, o);
  CHECK(off.fingerprint().find("sanitizer off") != std::string::npos);
  CHECK(off.check(overflow, gate_shapes, 2, 6).passed());
  CHECK(off.sanitizer_runs() == 0);
}

TEST_CASE("host sanitizer stage: the catalogue's families of the three host problems pass it") {
  // Every family's first point, as a search would gate it: the stage must refuse no honest kernel.
  // (The problems' own reference and seed are checked in test_problems.cpp.)
  for (char const* name : {"softmax", "rmsnorm", "matvec"}) {
    CAPTURE(name);
    const auto p = load_problem(std::string(KB_SOURCE_DIR) + "/examples/problems/" + name);
    host_evaluator ev(p, options());
    if (ev.fingerprint().find("sanitizer on") == std::string::npos) return;
    std::vector<std::size_t> shapes;
    for (std::size_t i = 0; i < p.shapes.size(); ++i)
      if (p.shapes[i].tier == "smoke" || p.shapes[i].tier == "odd") shapes.push_back(i);
    for (auto const& h : p.catalogue) {
      if (!h.templ) continue;
      CAPTURE(h.name);
      const auto points = h.templ->space.enumerate();
      REQUIRE(!points.empty());
      auto const& first = points.front();
      const auto c = make_candidate(h.name, first, "test", std::nullopt, substitute(h.templ->source, first));
      const auto v = ev.check(c, shapes, 1, 11);
      INFO(v.detail);
      CHECK(v.passed());
    }
    CHECK(ev.sanitizer_runs() == p.catalogue.size());
  }
}

#endif  // __linux__
