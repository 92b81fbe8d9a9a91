// The MPI evaluation pool's messages (distribute/mpi_pool.hpp, namespace wire): every request and
// reply comes back as it was sent, doubles to the bit (NaN and infinities included), and a message
// this build cannot read is an error that says which. No MPI job: nothing here calls MPI.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <kernelbrain/distribute/mpi_pool.hpp>
#include <limits>
#include <string>

using namespace kernelbrain;
namespace wire = kernelbrain::mpi::wire;

namespace {

/// Equal to the bit; any NaN equals any NaN (JSON carries NaN as "nan", without its payload).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

void check_same(std::vector<double> const& a, std::vector<double> const& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(same(a[i], b[i]));
}

void check_same(median_ci const& a, median_ci const& b) {
  CHECK(same(a.median, b.median));
  CHECK(same(a.low, b.low));
  CHECK(same(a.high, b.high));
}

void check_same(candidate const& a, candidate const& b) {
  CHECK(a.id == b.id);
  CHECK(a.family == b.family);
  CHECK(a.params == b.params);
  CHECK(a.source == b.source);
  CHECK(a.launch == b.launch);
  CHECK(a.parent == b.parent);
  CHECK(a.origin == b.origin);
}

void check_same(rung const& a, rung const& b) {
  CHECK(a.name == b.name);
  CHECK(a.shapes == b.shapes);
  CHECK(a.samples == b.samples);
  CHECK(a.warmup == b.warmup);
  CHECK(a.correctness_trials == b.correctness_trials);
  CHECK(a.interleaved == b.interleaved);
  CHECK(a.profile == b.profile);
  CHECK(a.assure == b.assure);
}

/// A candidate with everything set: a launch plan, a parent, and a source that JSON must escape.
candidate full_candidate() {
  const auto parent = make_candidate("warp-per-row", {{"BLOCK", 64}}, "seed");
  return make_candidate("warp-per-row", {{"BLOCK", 256}, {"VEC", 4}, {"NEG", -3}}, "mutation:BLOCK", parent.id,
                        "extern \"C\" __global__ void k(float* y) {\n\t// \"quoted\", back\\slash, \xc3\xa9\n}",
                        R"plan({"grid": ["ceil(N / ${BLOCK})", 1, 1], "block": [256, 1, 1], "shared": 0})plan");
}

}  // namespace

TEST_CASE("mpi wire: a rung comes back with every field") {
  rung r;
  r.name = "confirm";
  r.shapes = {0, 2, 3};
  r.samples = 31;
  r.warmup = 4;
  r.correctness_trials = 3;
  r.interleaved = true;
  r.profile = true;
  r.assure = false;
  const auto text = boost::json::serialize(wire::to_json(r));
  check_same(wire::rung_from(wire::parse_object(text, "a rung")), r);
  // From a rank 0 that predates rung::assure: an assured rung, the safe reading.
  auto older = wire::to_json(r).as_object();
  older.erase("assure");
  CHECK(wire::rung_from(older).assure);

  const rung plain;  // the defaults too (false flags, no shapes)
  check_same(wire::rung_from(wire::to_json(plain).as_object()), plain);

  auto missing = wire::to_json(r).as_object();
  missing.erase("warmup");
  CHECK_THROWS_WITH_AS(wire::rung_from(missing), doctest::Contains("'warmup' is missing"),
                       detail::journal_json::bad_line);
}

TEST_CASE("mpi wire: requests of every method come back as sent") {
  const auto c = full_candidate();
  REQUIRE(c.parent);

  wire::request m;
  m.call = 42;
  m.member = 3;
  m.what = wire::method::measure;
  m.cand = c;
  m.seed = std::numeric_limits<std::uint64_t>::max();  // all 64 bits: a seed is not a double
  m.at.name = "screen";
  m.at.shapes = {1, 2};
  m.at.samples = 9;
  m.at.interleaved = true;
  m.incumbent = make_candidate("split-row", {{"SPLIT", 4}}, "expert:split-row");
  m.shapes = {0, 2};  // measure: the shapes the candidate already passed correctness trials at
  auto back = wire::decode_request(wire::encode(m));
  CHECK(back.call == 42);
  CHECK(back.member == 3);
  CHECK(back.what == wire::method::measure);
  check_same(back.cand, c);
  CHECK(back.seed == m.seed);
  check_same(back.at, m.at);
  CHECK(back.shapes == m.shapes);
  REQUIRE(back.incumbent);
  check_same(*back.incumbent, *m.incumbent);

  m.incumbent.reset();  // no incumbent: stays none
  CHECK_FALSE(wire::decode_request(wire::encode(m)).incumbent);

  wire::request k;
  k.call = 7;
  k.what = wire::method::check;
  k.cand = c;
  k.shapes = {0, 1, 3};
  k.trials = 5;
  k.seed = 0x8000000000000001ULL;
  back = wire::decode_request(wire::encode(k));
  CHECK(back.what == wire::method::check);
  CHECK(back.shapes == k.shapes);
  CHECK(back.trials == 5);
  CHECK(back.seed == k.seed);
  check_same(back.cand, c);

  wire::request a;
  a.call = 8;
  a.what = wire::method::assure;
  a.cand = c;
  a.seed = 0x7000000000000003ULL;
  back = wire::decode_request(wire::encode(a));
  CHECK(back.what == wire::method::assure);
  CHECK(back.seed == a.seed);
  check_same(back.cand, c);

  for (auto what : {wire::method::inspect, wire::method::prefetch, wire::method::build}) {
    wire::request r;
    r.call = 9;
    r.what = what;
    r.cand = c;
    back = wire::decode_request(wire::encode(r));
    CHECK(back.what == what);
    check_same(back.cand, c);
  }

  wire::request b;
  b.call = 11;
  b.member = 1;
  b.what = wire::method::measure_baseline;
  back = wire::decode_request(wire::encode(b));
  CHECK(back.what == wire::method::measure_baseline);
  CHECK(back.member == 1);
  CHECK(back.call == 11);
}

TEST_CASE("mpi wire: replies carry verdicts, measurements, baselines and errors exactly") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();

  wire::reply v;
  v.call = 5;
  v.what = wire::method::check;
  v.device_seconds = 0.1 + 0.2;  // not the double nearest 0.3: must come back to the bit
  v.v = verdict::reject(stage::correctness, "wrong at shape 'odd': |out - ref| = 3e-2 > 1e-5");
  auto back = wire::decode_reply(wire::encode(v));
  CHECK(back.call == 5);
  CHECK(back.what == wire::method::check);
  CHECK(same(back.device_seconds, v.device_seconds));
  CHECK_FALSE(back.error);
  CHECK(back.v == v.v);

  wire::reply m;
  m.call = 6;
  m.what = wire::method::measure;
  m.device_seconds = 1.2345678901234567e-5;
  shape_timing t;
  t.shape = 2;
  t.samples = {2.142306159657832e-12, 1.0 / 3.0, inf, nan, 5e-324, 1.7976931348623157e308};
  t.stats = {nan, -inf, inf};
  m.m.timings.push_back(t);
  t.shape = 3;
  t.samples = {7.25e-6, 7.5e-6};
  t.summarise();
  m.m.timings.push_back(t);
  m.m.res = resources{64, 8, 49152, 0.75};
  m.m.vs_incumbent = ab_comparison{"00000000deadbeef", {0.97, 0.9, nan}};
  m.m.profile = {{"dram__throughput.avg.pct_of_peak", 81.5}, {"sm__warps_active", inf}};
  m.m.diagnosis = "memory-bound (81% of DRAM peak)";
  m.m.device_seconds = 0.3;
  back = wire::decode_reply(wire::encode(m));
  CHECK(same(back.device_seconds, m.device_seconds));
  CHECK(back.m.result == m.m.result);
  REQUIRE(back.m.timings.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(back.m.timings[i].shape == m.m.timings[i].shape);
    check_same(back.m.timings[i].samples, m.m.timings[i].samples);
    check_same(back.m.timings[i].stats, m.m.timings[i].stats);
  }
  REQUIRE(back.m.res);
  CHECK(back.m.res->registers == 64);
  CHECK(back.m.res->spill_bytes == 8);
  CHECK(back.m.res->shared_bytes == 49152);
  CHECK(same(back.m.res->occupancy, 0.75));
  REQUIRE(back.m.vs_incumbent);
  CHECK(back.m.vs_incumbent->incumbent == "00000000deadbeef");
  check_same(back.m.vs_incumbent->ratio, m.m.vs_incumbent->ratio);
  REQUIRE(back.m.profile.size() == 2);
  CHECK(same(back.m.profile.at("dram__throughput.avg.pct_of_peak"), 81.5));
  CHECK(same(back.m.profile.at("sm__warps_active"), inf));
  CHECK(back.m.diagnosis == m.m.diagnosis);
  CHECK(same(back.m.device_seconds, 0.3));

  m.m = measurement{};  // refused: a verdict, no timings, no resources
  m.m.result = verdict::reject(stage::crash, "killed by signal 11 (SIGSEGV, segmentation fault)");
  back = wire::decode_reply(wire::encode(m));
  CHECK(back.m.result == m.m.result);
  CHECK(back.m.timings.empty());
  CHECK_FALSE(back.m.res);
  CHECK_FALSE(back.m.vs_incumbent);

  wire::reply b;
  b.call = 8;
  b.what = wire::method::measure_baseline;
  b.b = {{1e-3, 2.5e-4, nan}, {1, 2, 0.5}, {0, 1e-9, inf}};
  back = wire::decode_reply(wire::encode(b));
  check_same(back.b.seconds, b.b.seconds);
  check_same(back.b.weights, b.b.weights);
  check_same(back.b.floor_seconds, b.b.floor_seconds);

  wire::reply e;
  e.call = 9;
  e.what = wire::method::build;
  e.device_seconds = 2;
  e.error = "synthetic backend: unknown family 'x'";
  back = wire::decode_reply(wire::encode(e));
  REQUIRE(back.error);
  CHECK(*back.error == *e.error);
  CHECK(same(back.device_seconds, 2));
}

TEST_CASE("mpi wire: a hello comes back; one of another protocol stops at its version") {
  wire::hello h;
  h.node = "gpu-node-07";
  h.problem = "softmax";
  h.members = {{"cuda:0", "cuda:0", "cuda/12.4/sm_90"}, {"cuda:1", "cuda:1", "cuda/12.4/sm_90"}};
  CHECK(wire::decode_hello(wire::encode(h)) == h);

  wire::hello no;
  no.node = "gpu-node-08";
  no.problem = "softmax";
  no.refused = "no CUDA device: cuInit returned 100";
  CHECK(wire::decode_hello(wire::encode(no)) == no);

  const auto future = wire::decode_hello(R"({"protocol": 99, "shape of things": "to come"})");
  CHECK(future.protocol == 99);
}

TEST_CASE("mpi wire: a message this build cannot read is an error that names it") {
  CHECK_THROWS_WITH_AS(wire::decode_request("{\"call\": 1,"), doctest::Contains("an MPI request is not JSON"), error);
  CHECK_THROWS_WITH_AS(wire::decode_reply("[1, 2]"), doctest::Contains("an MPI reply is not one JSON object"), error);
  CHECK_THROWS_WITH_AS(wire::decode_request(R"({"call": 3, "member": 0, "method": "compile"})"),
                       doctest::Contains("unknown method 'compile'"), error);
  CHECK_THROWS_WITH_AS(wire::decode_reply(R"({"call": 3, "method": "build", "device_seconds": 0, "error": null})"),
                       doctest::Contains("'result' is missing"), error);
  CHECK_THROWS_WITH_AS(wire::decode_hello(R"({"protocol": 1})"), doctest::Contains("same KernelBrain build"), error);
  // The serving rank answers such a request with an error for its call, when the id can be read.
  CHECK(wire::request_call(R"({"call": 12, "member": 0, "method": "compile"})") == std::uint64_t{12});
  CHECK_FALSE(wire::request_call("garbage"));
}
