// The host backend's gate beyond gentle inputs and benchmark sizes: adversarial input cases
// (problem.json `adversarial`, host_options::adversarial_inputs) catch numerics that only hold for
// N(0,1) values, and a correctness-only shape of tier "wide" catches a buffer sized for the timed
// shapes. Each hostile candidate has an honest twin that differs in the one thing the check is for.
#include <doctest/doctest.h>

#if defined(__linux__)
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <kernelbrain/backends/host/evaluator.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/search.hpp>
#include <string>
#include <string_view>
#include <vector>
#include "host_corpus/scale_rows.hpp"
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;

namespace {

host_options options(bool adversarial) {
  host_options o;
  o.cache_dir = kb_test::process_dir("host-adversarial-test");
  o.run_timeout = 5.0;
  o.adversarial_inputs = adversarial;
  return o;
}

candidate from_source(std::string source) {
  return make_candidate("test", {}, "test", std::nullopt, std::move(source));
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

/// `text` with every `name` replaced by `value`.
std::string with(std::string text, std::string_view name, std::string_view value) {
  for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size()))
    text.replace(at, name.size(), value);
  return text;
}

/// A scale_rows candidate (y = x * w[col], s = row sums of y, the sums in double as the reference
/// does) that reads each x through $READ (of `v`, in load_x).
constexpr std::string_view reads_x = R"(
#include <cmath>
#include "kernelbrain/evaluate/host_abi.h"
static inline float load_x(float v) { return $READ; }
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    double acc = 0;
    for (long long c = 0; c < C; ++c) {
      y[r * C + c] = load_x(x[r * C + c]) * w[c];
      acc += y[r * C + c];
    }
    s[r] = static_cast<float>(acc);
  }
}
)";

/// A scale_rows candidate that stages each row's products in $BUFFER (named `buf`) before writing them.
constexpr std::string_view stages_rows = R"(
#include <vector>
#include "kernelbrain/evaluate/host_abi.h"
extern "C" void kb_kernel(const kb_args* a) {
  const float* x = a->inputs[0];
  const float* w = a->inputs[1];
  float* y = a->outputs[0];
  float* s = a->outputs[1];
  const long long R = a->dims[0], C = a->dims[1];
  for (long long r = 0; r < R; ++r) {
    $BUFFER;
    for (long long c = 0; c < C; ++c) buf[c] = x[r * C + c] * w[c];
    double acc = 0;
    for (long long c = C; c-- > 0;) acc += buf[c];
    for (long long c = 0; c < C; ++c) y[r * C + c] = buf[c];
    s[r] = static_cast<float>(acc);
  }
}
)";

/// scale_rows with its inputs' default adversarial cases (problems built in code start with none).
problem adversarial_rows() {
  auto p = kb_corpus::scale_rows();
  for (auto& t : p.inputs) t.adversarial = default_cases(t.distribution);
  return p;
}

/// scale_rows with a shape of tier "wide": two rows of 6007 columns (the benchmark shapes have at
/// most 2000), after the odd shape.
problem wide_rows() {
  auto p = kb_corpus::scale_rows();
  p.shapes.insert(p.shapes.begin() + 2, shape{"wide", {{"R", 2}, {"C", 6007}}, "wide", 1, 0, 0});
  return p;
}

std::size_t index_of(problem const& p, std::string_view tier) {
  for (std::size_t i = 0; i < p.shapes.size(); ++i)
    if (p.shapes[i].tier == tier) return i;
  FAIL("no shape of tier " << tier);
  return 0;
}

}  // namespace

TEST_CASE("host adversarial inputs: a clamp at +-6 passes gentle inputs, fails the case that names it, not its twin") {
  const auto p = adversarial_rows();
  const auto honest = from_source(with(std::string(reads_x), "$READ", "v"));
  const auto clamped = from_source(with(std::string(reads_x), "$READ", "v < -6.0f ? -6.0f : (v > 6.0f ? 6.0f : v)"));
  auto gate = policy_gate::for_problem(p);
  REQUIRE(gate.shapes() == std::vector<std::size_t>{0, 1});  // the smoke shape and the odd one
  gate.reseed(5);

  // Off: N(0,1) inputs never reach 6 at these sizes, so the clamp passes the gate.
  {
    host_evaluator ev(p, options(false));
    CHECK(contains(ev.fingerprint(), "gate: adversarial off"));
    const auto v = gate.admit(clamped, ev);
    CHECK_MESSAGE(v.passed(), v.detail);
    CHECK(gate.admit(honest, ev).passed());
  }
  // On (the default): one trial per case of each input at the odd shape; x scaled by 64 is clamped.
  host_evaluator ev(p, options(true));
  CHECK(contains(ev.fingerprint(), "gate: adversarial on"));
  const auto v = gate.admit(clamped, ev);
  INFO(v.detail);
  CHECK(v.where == stage::correctness);
  CHECK(contains(v.detail, "adversarial inputs: input 'x' scaled:64"));
  CHECK(contains(v.detail, "at shape 'odd'"));
  // The twin passes every case, so the expected outputs are the reference's on the transformed inputs.
  const auto h = gate.admit(honest, ev);
  CHECK_MESSAGE(h.passed(), h.detail);
  // The cases run at one shape, the smallest odd one: the smoke shape alone sees gentle inputs only.
  const std::size_t smoke[] = {0};
  CHECK(ev.check(clamped, smoke, 2, 5).passed());
  // measure() checks every shape it times first, the adversarial one included.
  rung r;
  r.name = "test";
  r.shapes = {1};
  r.samples = 2;
  r.correctness_trials = 1;
  const auto m = ev.measure(clamped, r, measure_request{9, nullptr});
  CHECK(m.result.where == stage::correctness);
  CHECK(contains(m.result.detail, "adversarial inputs"));
}

TEST_CASE("host adversarial inputs: each case transforms only its own input, and the verdict names it") {
  // Reads that lose what one case makes: exact halves (ties), the sign of zero (signed_zeros), and
  // a clamp of w that only spikes of +-1000 reach. w is uniform in (-1, 1), x is N(0,1).
  auto p = kb_corpus::scale_rows();
  p.shapes[1].dims = {{"R", 3}, {"C", 4099}};  // one spike in 256: w needs thousands of elements
  p.inputs[0].adversarial = {{input_case::kind::signed_zeros, 0}, {input_case::kind::ties, 2}};
  p.inputs[1].adversarial = {{input_case::kind::spikes, 1000}};
  host_evaluator ev(p, options(true));
  const std::size_t odd[] = {1};
  struct hostile {
    std::string x_read, w_read, case_text;
  };
  const hostile cases[] = {
      {"(v == 0.0f && std::signbit(v)) ? 1.0f : v", "w[c]", "input 'x' signed_zeros"},
      {"(v != 0.0f && v == std::rint(v * 2.0f) / 2.0f) ? v + 0.25f : v", "w[c]", "input 'x' ties:2"},
      {"v", "(w[c] > 2.0f ? 2.0f : (w[c] < -2.0f ? -2.0f : w[c]))", "input 'w' spikes:1000"},
  };
  for (auto const& c : cases) {
    CAPTURE(c.case_text);
    const auto src = with(with(std::string(reads_x), "$READ", c.x_read), "* w[c]", "* " + c.w_read);
    // Gentle inputs: it passes.
    const std::size_t smoke[] = {0};
    CHECK(ev.check(from_source(src), smoke, 2, 11).passed());
    const auto v = ev.check(from_source(src), odd, 2, 11);
    CHECK(v.where == stage::correctness);
    CHECK_MESSAGE(contains(v.detail, "adversarial inputs: " + c.case_text), v.detail);
  }
  const auto h = ev.check(from_source(with(std::string(reads_x), "$READ", "v")), odd, 2, 11);
  CHECK_MESSAGE(h.passed(), h.detail);
}

TEST_CASE("host wide shape: a fixed-size row buffer passes every benchmark shape and fails the wide one") {
  const auto p = wide_rows();
  const std::size_t wide = index_of(p, "wide");
  const auto fixed = from_source(with(std::string(stages_rows), "$BUFFER", "float buf[2048]"));
  const auto honest =
      from_source(with(std::string(stages_rows), "$BUFFER", "std::vector<float> buf(static_cast<std::size_t>(C))"));

  // The default gate checks the wide shape; no rung of the default ladder times it.
  auto gate = policy_gate::for_problem(p);
  CHECK(std::count(gate.shapes().begin(), gate.shapes().end(), wide) == 1);
  const auto ladder = multi_rung_ladder::standard(p);
  for (auto const& r : ladder.rungs()) {
    CAPTURE(r.name);
    CHECK(std::count(r.shapes.begin(), r.shapes.end(), wide) == 0);
    CHECK_FALSE(r.shapes.empty());
  }
  // Without the wide shape the ladder is the one the problem had before.
  std::vector<std::vector<std::string>> with_wide, without;
  auto names = [](problem const& q, rung const& r) {
    std::vector<std::string> n;
    for (auto s : r.shapes) n.push_back(q.shapes[s].name);
    return n;
  };
  for (auto const& r : ladder.rungs()) with_wide.push_back(names(p, r));
  const auto plain = kb_corpus::scale_rows();
  const auto plain_ladder = multi_rung_ladder::standard(plain);
  for (auto const& r : plain_ladder.rungs()) without.push_back(names(plain, r));
  CHECK(with_wide == without);

  host_evaluator ev(p, options(true));
  gate.reseed(3);
  // Correct at every shape it could be timed at (C <= 2000 fits its buffer)...
  std::vector<std::size_t> timed;
  for (std::size_t i = 0; i < p.shapes.size(); ++i)
    if (i != wide) timed.push_back(i);
  const auto t = ev.check(fixed, timed, 2, 3);
  CHECK_MESSAGE(t.passed(), t.detail);
  // ...and rejected by the gate at the wide one, whatever its overflow does there.
  const auto v = gate.admit(fixed, ev);
  INFO(to_string(v.where), ": ", v.detail);
  CHECK_FALSE(v.passed());
  CHECK((v.where == stage::crash || v.where == stage::correctness));
  CHECK(contains(v.detail, "'wide'"));
  // The twin with a buffer as long as the row passes the same gate.
  const auto h = gate.admit(honest, ev);
  CHECK_MESSAGE(h.passed(), h.detail);
}

TEST_CASE("host wide shape: a correctness shape that is never timed, and a problem needs another") {
  auto p = wide_rows();
  for (auto& s : p.shapes) s.tier = "wide";
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("never timed"), error);
  CHECK_THROWS_WITH_AS((void)multi_rung_ladder::standard(p), doctest::Contains("no shape to time"), error);
  CHECK(is_correctness_shape(wide_rows().shapes[2]));
  CHECK_FALSE(is_timed_shape(wide_rows().shapes[2]));
  // focused_on keeps the wide shape with the other correctness shapes, and will not tune for it.
  const auto focused = focused_on(wide_rows(), {"medium"});
  std::vector<std::string> kept;
  for (auto const& s : focused.shapes) kept.push_back(s.name);
  CHECK(kept == std::vector<std::string>{"small", "odd", "wide", "medium"});
  CHECK_THROWS_WITH_AS((void)focused_on(wide_rows(), {"wide"}), doctest::Contains("not one of its benchmark shapes"),
                       error);
}

TEST_CASE("host problems: each shipped one has a wide shape past every benchmark shape, and its seed passes the gate") {
  for (auto const* name : {"softmax", "rmsnorm", "matvec"}) {
    CAPTURE(name);
    const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "problems" / name);
    const std::size_t wide = index_of(p, "wide");
    auto const& w = p.shapes[wide];
    // Wider than every timed shape in some dim (a longer row, a larger reduction), and cheap to check.
    bool wider = false;
    for (auto const& [dim, value] : w.dims) {
      bool past_all = true;
      for (auto const& s : p.shapes)
        if (is_timed_shape(s)) past_all = past_all && value > s.dims.at(dim);
      wider = wider || past_all;
    }
    CHECK(wider);
    CHECK(w.bytes < 16e6);
    CHECK(w.bytes < p.shapes.back().bytes / 10);
    for (auto const& t : p.inputs) CHECK_FALSE(t.adversarial.empty());
    auto gate = policy_gate::for_problem(p);
    CHECK(std::count(gate.shapes().begin(), gate.shapes().end(), wide) == 1);
    const auto ladder = multi_rung_ladder::standard(p);
    for (auto const& r : ladder.rungs()) CHECK(std::count(r.shapes.begin(), r.shapes.end(), wide) == 0);
    // The reference passes its own adversarial cases (else: infrastructure), and so does the seed.
    host_evaluator ev(p, options(true));
    REQUIRE(p.seed_source);
    gate.reseed(1);
    const auto v = gate.admit(from_source(*p.seed_source), ev);
    CHECK_MESSAGE(v.passed(), to_string(v.where) << ": " << v.detail);
  }
}

#endif  // __linux__
