// Vocabulary types and small utilities: hashing, rng, expressions, parameters, statistics, ranking.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <kernelbrain/detail/ranked_set.hpp>
#include <kernelbrain/search.hpp>
#include <limits>
#include <set>
#include <string>

using namespace kernelbrain;

TEST_CASE("candidate ids hash content, not identity") {
  auto a = make_candidate("fam", {{"A", 1}, {"B", 2}}, "seed");
  auto b = make_candidate("fam", {{"B", 2}, {"A", 1}}, "other-origin");
  auto c = make_candidate("fam", {{"A", 1}, {"B", 3}}, "seed");
  auto d = make_candidate("fam", {{"A", 1}, {"B", 2}}, "seed", std::nullopt, "src");
  CHECK(a.id == b.id);  // origin and insertion order do not change content
  CHECK(a.id != c.id);
  CHECK(a.id != d.id);
  std::uint64_t back = 0;
  REQUIRE(from_hex(a.id.str(), back));
  CHECK(back == a.id.value);
  CHECK_FALSE(from_hex("xyz", back));
  CHECK_FALSE(from_hex("0123456789abcdeg", back));
  // Field boundaries are part of the hash.
  CHECK(hasher{}.bytes("ab").bytes("c").digest() != hasher{}.bytes("a").bytes("bc").digest());
}

TEST_CASE("rng is reproducible and well-formed") {
  rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    const auto x = a();
    CHECK(x == b());
  }
  CHECK(a() != c());
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double u = a.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    REQUIRE(a.below(7) < 7);
    const double z = a.normal();
    sum += z;
    sq += z * z;
  }
  CHECK(std::abs(sum / n) < 0.05);
  CHECK(std::abs(sq / n - 1.0) < 0.05);
}

TEST_CASE("integer expressions") {
  parameters p{{"BLOCK", 256}, {"VEC", 4}};
  auto look = p.lookup();
  CHECK(evaluate_expression("2 + 3 * 4", look) == 14);
  CHECK(evaluate_expression("(2 + 3) * 4", look) == 20);
  CHECK(evaluate_expression("BLOCK * VEC <= 1024", look) == 1);
  CHECK(evaluate_expression("BLOCK * VEC < 1024", look) == 0);
  CHECK(evaluate_expression("ceil_div(1000, BLOCK)", look) == 4);
  CHECK(evaluate_expression("min(BLOCK, 100) + max(VEC, 9)", look) == 109);
  CHECK(evaluate_expression("pow2(BLOCK) && !pow2(12)", look) == 1);
  CHECK(evaluate_expression("-VEC % 3", look) == -1);
  CHECK(evaluate_expression("VEC == 4 || BLOCK == 1", look) == 1);
  CHECK_THROWS_WITH_AS((void)evaluate_expression("BLOCK * WARPS", look), doctest::Contains("unknown symbol 'WARPS'"),
                       error);
  CHECK_THROWS_WITH_AS((void)evaluate_expression("BLOCK / (VEC - 4)", look), doctest::Contains("division by zero"),
                       error);
  CHECK_THROWS_WITH_AS((void)evaluate_expression("BLOCK * ", look), doctest::Contains("column"), error);
  CHECK_THROWS_AS((void)evaluate_expression("(BLOCK", look), error);
  CHECK_THROWS_AS((void)evaluate_expression("BLOCK 4", look), error);
}

namespace {
/// The message evaluate_expression throws for `text`, or "" when it gives a value.
std::string expression_error(std::string const& text, symbol_lookup const& look = {}) {
  try {
    (void)evaluate_expression(text, look);
  } catch (error const& e) {
    return e.what();
  }
  return "";
}
std::string repeat(std::string const& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}
}  // namespace

TEST_CASE("integer expressions: arithmetic is checked and every fault is a typed error") {
  constexpr auto max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
  const symbol_lookup look = [](std::string_view n) -> std::optional<std::int64_t> {
    if (n == "MIN") return std::numeric_limits<std::int64_t>::min();
    if (n == "MAX") return std::numeric_limits<std::int64_t>::max();
    if (n == "N") return 1000;
    return std::nullopt;
  };
  // The edges of the range are values, not errors.
  CHECK(evaluate_expression("9223372036854775807", look) == max);
  CHECK(evaluate_expression("-9223372036854775807 - 1", look) == min);
  CHECK(evaluate_expression("MIN + MAX", look) == -1);
  CHECK(evaluate_expression("MIN / 1", look) == min);
  CHECK(evaluate_expression("MIN / 2", look) == min / 2);
  CHECK(evaluate_expression("MIN % 2", look) == 0);
  CHECK(evaluate_expression("MAX / -1", look) == -max);
  CHECK(evaluate_expression("3037000499 * 3037000499", look) == 3037000499LL * 3037000499LL);
  CHECK(evaluate_expression("0000000000000000000000000000042", look) == 42);  // leading zeros: decimal, no overflow
  // One past them is an overflow, named as such, with the column of the operator.
  CHECK(expression_error("MIN / -1", look) ==
        "expression \"MIN / -1\": overflow: -9223372036854775808 / -1 is outside the 64-bit range at column 5");
  CHECK(expression_error("MIN % -1", look) ==
        "expression \"MIN % -1\": overflow: -9223372036854775808 % -1 is outside the 64-bit range at column 5");
  CHECK(expression_error("1 + 9223372036854775807") ==
        "expression \"1 + 9223372036854775807\": overflow: 1 + 9223372036854775807 is outside the 64-bit range at "
        "column 3");
  for (char const* t :
       {"MAX + 1", "MIN - 1", "-MIN", "- MIN", "MIN * -1", "-1 * MIN", "3037000500 * 3037000500",
        "4611686018427387904 * 2", "-4611686018427387905 * 2", "ceil_div(MIN, -1)", "9223372036854775808",
        "-9223372036854775808", "99999999999999999999999999999", "MAX + 1 - 1", "0 * (MAX + 1)"})
    CHECK_MESSAGE(expression_error(t, look).find("overflow") != std::string::npos, t);
  CHECK(expression_error("9223372036854775808")
            .find("the literal 9223372036854775808 is outside the 64-bit range at column 1") != std::string::npos);
  // Division by zero for each division.
  for (char const* t : {"N / 0", "N % 0", "ceil_div(N, 0)", "N / (N - 1000)", "MIN % 0"})
    CHECK_MESSAGE(expression_error(t, look).find("division by zero") != std::string::npos, t);
  CHECK(expression_error("N % 0", look) == "expression \"N % 0\": division by zero (1000 % 0) at column 3");
  // No short circuit: an error on either side of || and && is an error.
  CHECK(expression_error("0 && 1 / 0").find("division by zero") != std::string::npos);
  CHECK(expression_error("1 || MAX + 1", look).find("overflow") != std::string::npos);
}

TEST_CASE("integer expressions: C semantics for / and %, exact ceiling for ceil_div") {
  const symbol_lookup none;
  CHECK(evaluate_expression("-7 / 2", none) == -3);
  CHECK(evaluate_expression("7 / -2", none) == -3);
  CHECK(evaluate_expression("-7 % 2", none) == -1);
  CHECK(evaluate_expression("7 % -2", none) == 1);
  // ceil_div(a, b) is the exact ceiling of a / b, whatever the signs.
  CHECK(evaluate_expression("ceil_div(7, 2)", none) == 4);
  CHECK(evaluate_expression("ceil_div(-7, 2)", none) == -3);
  CHECK(evaluate_expression("ceil_div(7, -2)", none) == -3);
  CHECK(evaluate_expression("ceil_div(-7, -2)", none) == 4);
  CHECK(evaluate_expression("ceil_div(6, 3)", none) == 2);
  CHECK(evaluate_expression("ceil_div(-6, 3)", none) == -2);
  CHECK(evaluate_expression("ceil_div(6, -3)", none) == -2);
  CHECK(evaluate_expression("ceil_div(0, -5)", none) == 0);
  CHECK(evaluate_expression("ceil_div(1, 1000)", none) == 1);
  CHECK(evaluate_expression("ceil_div(-1, 1000)", none) == 0);
  // Near the range's edges: no intermediate a + b - 1 to overflow.
  CHECK(evaluate_expression("ceil_div(9223372036854775807, 2)", none) == 4611686018427387904LL);
  CHECK(evaluate_expression("ceil_div(-9223372036854775807 - 1, 2)", none) == -4611686018427387904LL);
  CHECK(evaluate_expression("ceil_div(-9223372036854775807 - 1, 3)", none) == -3074457345618258602LL);
  CHECK(evaluate_expression("ceil_div(9223372036854775807, -1)", none) == -9223372036854775807LL);
  CHECK(evaluate_expression("pow2(1) + pow2(4611686018427387904) + pow2(0) + pow2(-2) + pow2(6)", none) == 2);
  // Calls: the right number of arguments, known names.
  CHECK(expression_error("pow2(1, 2)") == "expression \"pow2(1, 2)\": pow2 takes one argument at column 1");
  CHECK(expression_error("min(1)") == "expression \"min(1)\": min needs two arguments at column 1");
  CHECK(expression_error("min(1, 2, 3)").find("missing ')' after arguments of min") != std::string::npos);
  CHECK(expression_error("floor(1, 2)") ==
        "expression \"floor(1, 2)\": unknown function 'floor' (known: min, max, ceil_div, pow2) at column 1");
}

TEST_CASE("integer expressions: nesting and length are bounded") {
  const symbol_lookup none;
  REQUIRE(max_expression_depth == 64);
  REQUIRE(max_expression_length == 4096);
  // Exactly at the depth limit: fine. One more level, of any kind: a depth error at that level's column.
  CHECK(evaluate_expression(repeat("(", 64) + "7" + repeat(")", 64), none) == 7);
  CHECK(evaluate_expression(repeat("-", 64) + "7", none) == 7);
  CHECK(evaluate_expression(repeat("!", 63) + "0", none) == 1);
  CHECK(evaluate_expression(repeat("min(1, ", 64) + "7" + repeat(")", 64), none) == 1);
  CHECK(evaluate_expression(repeat("-(", 32) + "7" + repeat(")", 32), none) == 7);
  CHECK(expression_error(repeat("(", 65) + "7" + repeat(")", 65))
            .find("nesting depth exceeds 64 (parentheses, function arguments and unary operators) at column 65") !=
        std::string::npos);
  CHECK(expression_error(repeat("-", 65) + "7").find("nesting depth exceeds 64") != std::string::npos);
  CHECK(expression_error(repeat("!", 65) + "7").find("nesting depth exceeds 64") != std::string::npos);
  CHECK(expression_error(repeat("max(1, ", 65) + "7" + repeat(")", 65)).find("nesting depth exceeds 64") !=
        std::string::npos);
  CHECK(expression_error(repeat("-(", 33) + "7" + repeat(")", 33)).find("nesting depth exceeds 64") !=
        std::string::npos);
  // 200 deep (the case), and deep without the closing parentheses: depth, not a stack overflow.
  const auto deep = expression_error(repeat("(", 200) + "1" + repeat(")", 200));
  CHECK(deep.find("depth") != std::string::npos);
  CHECK(deep.find("... (401 bytes)") != std::string::npos);  // the quoted text is shortened, and says so
  CHECK(expression_error(repeat("(", 4000)).find("nesting depth exceeds 64") != std::string::npos);
  CHECK(expression_error(repeat("-", 4096)).find("nesting depth exceeds 64") != std::string::npos);
  // Depth is nesting, not length: a long flat chain is fine up to the length limit.
  const std::string flat = "1" + repeat(" + 1", 1023);  // 4093 bytes
  REQUIRE(flat.size() <= 4096);
  CHECK(evaluate_expression(flat, none) == 1024);
  const std::string longest = flat + "+ 1";  // 4096 bytes: still accepted
  REQUIRE(longest.size() == 4096);
  CHECK(evaluate_expression(longest, none) == 1025);
  const auto too_long = expression_error(longest + " ");
  CHECK(too_long.find("longer than 4096 bytes at column 1") != std::string::npos);
  CHECK(too_long.find("... (4097 bytes)") != std::string::npos);
  CHECK(too_long.size() < 300);  // the message quotes a bounded excerpt
  CHECK(expression_error(std::string(100000, '(')).find("longer than 4096 bytes") != std::string::npos);
  // Bytes that are not printable are shown escaped, not copied into the message.
  CHECK(expression_error("1 + \xff") == "expression \"1 + \\xff\": unexpected '\\xff' at column 5");
  CHECK(expression_error(std::string("1\0", 2)) == "expression \"1\\x00\": unexpected '\\x00' at column 2");
}

TEST_CASE("parameters and parameter spaces") {
  parameters p;
  p.set("Z", 1);
  p.set("A", 2);
  p.set("Z", 3);
  CHECK(p.size() == 2);
  CHECK(p.to_string() == "A=2,Z=3");
  CHECK(p.at("Z") == 3);
  CHECK_FALSE(p.find("Q"));
  CHECK_THROWS_AS((void)p.at("Q"), error);

  parameter_space s;
  s.params = {{"BLOCK", {64, 128, 256}}, {"VEC", {1, 2, 4, 8}}};
  s.constraints = {"BLOCK * VEC <= 512"};
  CHECK(s.cardinality() == 12);
  auto all = s.enumerate();
  CHECK(all.size() == 9);  // (256,4) (256,8) (128,8) excluded
  for (auto const& q : all) CHECK(q.at("BLOCK") * q.at("VEC") <= 512);
  CHECK_FALSE(s.admits(parameters{{"BLOCK", 256}, {"VEC", 8}}));
  CHECK_FALSE(s.admits(parameters{{"BLOCK", 100}, {"VEC", 1}}));  // not a listed value
  std::set<std::string> distinct;
  for (std::uint64_t i = 0; i < s.cardinality(); ++i) distinct.insert(s.at(i).to_string());
  CHECK(distinct.size() == 12);

  parameter_space huge;  // 10^20 points: saturates instead of wrapping, and validate() says so
  for (int i = 0; i < 20; ++i) huge.params.push_back({"P" + std::to_string(i), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
  CHECK(huge.cardinality() == UINT64_MAX);
  CHECK_THROWS_WITH_AS(huge.validate("hint 'big'"), doctest::Contains("2^64"), error);

  parameter_space fixed;  // a template without parameters is one point, not none
  CHECK(fixed.cardinality() == 1);
  CHECK(fixed.enumerate().size() == 1);
  CHECK(fixed.admits(parameters{}));
  CHECK_FALSE(fixed.admits(parameters{{"X", 1}}));

  parameter_space bad = s;
  bad.constraints = {"BLOCK * WARPS < 3"};
  CHECK_THROWS_WITH_AS(bad.validate("hint 'x'"), doctest::Contains("hint 'x'"), error);
}

TEST_CASE("template instantiation and moves in a space") {
  expert_hint h;
  h.name = "tiled";
  h.templ = kernel_template{"#define B ${BLOCK}\n${UNKNOWN} ${VEC}", "grid=${BLOCK}", {}};
  h.templ->space.params = {{"BLOCK", {32, 64, 128}}, {"VEC", {1, 2}}};
  auto c = instantiate(h, {{"BLOCK", 64}, {"VEC", 2}}, "expert:tiled");
  CHECK(c.source == "#define B 64\n${UNKNOWN} 2");
  CHECK(c.launch == "grid=64");
  CHECK(c.family == "tiled");
  auto up = step_parameter(h.templ->space, c.params, 0, 1);
  REQUIRE(up);
  CHECK(up->at("BLOCK") == 128);
  CHECK_FALSE(step_parameter(h.templ->space, *up, 0, 1));  // off the end
  auto mid = central_point(h.templ->space);
  REQUIRE(mid);
  CHECK(mid->at("BLOCK") == 64);
}

TEST_CASE("median and its confidence interval") {
  std::vector<double> odd{5, 1, 3}, even{4, 1, 3, 2};
  CHECK(median_with_ci(odd).median == 3);
  CHECK(median_with_ci(even).median == 2.5);
  rng r(1);
  std::vector<double> small, large;
  for (int i = 0; i < 10; ++i) small.push_back(1.0 + 0.1 * r.normal());
  for (int i = 0; i < 1000; ++i) large.push_back(1.0 + 0.1 * r.normal());
  auto a = median_with_ci(small), b = median_with_ci(large);
  CHECK(a.low <= a.median);
  CHECK(a.median <= a.high);
  CHECK(b.low <= 1.0);
  CHECK(b.high >= 1.0);
  CHECK((b.high - b.low) < (a.high - a.low));
  std::vector<double> v{2, 8}, w{1, 1};
  CHECK(weighted_geomean(v, w) == doctest::Approx(4.0));
}

TEST_CASE("ranked_set agrees with a sorted list") {
  detail::ranked_set rs;
  std::vector<std::pair<double, std::uint64_t>> ref;
  rng r(9);
  for (std::uint64_t i = 0; i < 3000; ++i) {
    const double v = std::floor(r.uniform() * 500);  // many ties
    const auto rank = rs.insert({v, i});
    ref.emplace_back(v, i);
    std::sort(ref.begin(), ref.end(), [](auto const& a, auto const& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    });
    const auto pos = static_cast<std::size_t>(std::find(ref.begin(), ref.end(), std::make_pair(v, i)) - ref.begin());
    REQUIRE(rank == pos);
  }
  REQUIRE(rs.size() == ref.size());
  for (std::size_t k = 0; k < ref.size(); k += 37) CHECK(rs.at(k) == ref[k]);
}

TEST_CASE("budget meter") {
  budget b;
  b.evaluations = 3;
  b.device_seconds = 10;
  budget_meter m(b);
  CHECK(m.exhausted().empty());
  m.charge_evaluation();
  m.charge_device(6);
  CHECK(m.fraction_used() == doctest::Approx(0.6));
  m.charge_evaluation();
  m.charge_evaluation();
  CHECK(m.exhausted() == "evaluation budget spent");
  CHECK(m.progress() == doctest::Approx(1.0));  // evaluations 3 of 3

  budget wall_only;
  wall_only.wall_seconds = 1e-9;
  budget_meter w(wall_only);
  CHECK(w.fraction_used() > 0);
  CHECK(w.progress() == 0);  // the wall clock never steers decisions: searches must replay

  budget_meter unlimited;
  unlimited.charge_device(1e9);
  CHECK(unlimited.exhausted().empty());
  CHECK(unlimited.fraction_used() == 0);
}

TEST_CASE("problem validation names what is wrong") {
  problem p;
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("'name' is empty"), error);
  p.name = "x";
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("no shapes"), error);
  p.shapes.push_back(shape{"s", {}, "smoke", 0.0, 0, 0});
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("weight"), error);
  p.shapes[0].weight = 1;
  p.validate();
  CHECK_THROWS_AS((void)p.shape_index("nope"), error);
  roofline r{2e12, 1e12};
  shape s{"t", {}, "x", 1, 4e12, 1e12};
  CHECK(r.floor_seconds(s) == doctest::Approx(2.0));
}
