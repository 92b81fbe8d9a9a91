// Launch plans (backends/cuda/launch_plan.hpp) and the expressions inside them (core/expr.hpp), which the
// trusted search process evaluates on text that models write.
//
// Unit cases with exact expectations for each rule, then generated input: well-formed expressions
// checked against an independent reference evaluation in 128-bit arithmetic, malformed and hostile
// expressions, and launch plans built with a known outcome (a plan, or a signature or resources
// reject), mutated structurally and byte by byte, then checked against generated cubin descriptions.
// Every generated case must give a value or a typed reject; nothing else may escape. The seed is
// fixed (set KB_FUZZ_SEED to try another); a failure prints the seed, the iteration and the input.
#include <doctest/doctest.h>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <kernelbrain/backends/cuda/arch_table.hpp>
#include <kernelbrain/backends/cuda/detail/protocol.hpp>
#include <kernelbrain/backends/cuda/diagnosis.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/backends/cuda/launch_plan.hpp>
#include <kernelbrain/core/error.hpp>
#include <kernelbrain/core/expr.hpp>
#include <kernelbrain/core/rng.hpp>
#include <kernelbrain/isolation/worker_process.hpp>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace kernelbrain;
using namespace kernelbrain::detail;  // these tests reach the process and wire plumbing
namespace json = boost::json;

namespace {

__extension__ typedef __int128 i128;
constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();

std::uint64_t fuzz_seed() {
  if (char const* s = std::getenv("KB_FUZZ_SEED")) return std::strtoull(s, nullptr, 10);
  return 20260417;
}

std::string repeat(std::string const& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

/// For failure messages: the input, shortened.
std::string excerpt(std::string const& s) {
  return s.size() <= 300 ? s : s.substr(0, 300) + "... (" + std::to_string(s.size()) + " bytes)";
}

tensor_spec tensor(std::string name, std::string size, std::string dtype = "f32") {
  tensor_spec t;
  t.name = std::move(name);
  t.size = std::move(size);
  t.dtype = std::move(dtype);
  return t;
}

/// The test problem: inputs x (f32) and w (f16), output y, dims N and C passed to kernels; EXTRA is
/// a symbol plans may use in expressions but not pass.
problem test_problem() {
  problem p;
  p.name = "plan_test";
  p.inputs = {tensor("x", "N * C"), tensor("w", "C", "f16")};
  p.outputs = {tensor("y", "N * C")};
  p.dim_order = {"N", "C"};
  return p;
}

std::map<std::string, std::int64_t> test_dims(std::int64_t n = 1000, std::int64_t c = 64, std::int64_t extra = 7) {
  return {{"N", n}, {"C", c}, {"EXTRA", extra}};
}

/// resolve_launch_plan's reject, or nullopt when it returns a plan.
std::optional<plan_reject> reject_of(std::string const& text,
                                     std::map<std::string, std::int64_t> const& dims = test_dims(),
                                     device_limits const& limits = limits_for_arch("sm_90")) {
  try {
    (void)resolve_launch_plan(test_problem(), dims, text, limits);
  } catch (plan_reject const& r) {
    return r;
  }
  return std::nullopt;
}

/// A one-launch plan with these members spliced into the launch object.
std::string one_launch(std::string const& members, std::string const& top = "") {
  return "{" + top + R"("launches": [{"kernel": "k", )" + members + "}]}";
}
std::string simple_launch(std::string const& extra = "") {
  return one_launch(R"("grid": ["N", 1, 1], "block": [256, 1, 1], "args": ["x", "y", "N"])" + extra);
}

cubin_kernel kernel(std::string name, int params, int registers = 32) {
  cubin_kernel k;
  k.name = std::move(name);
  k.registers = registers;
  k.param_sizes.assign(static_cast<std::size_t>(params), 8);
  return k;
}

// ---- expressions with a reference evaluation ------------------------------------------------------

/// What evaluating an expression must give.
struct outcome {
  enum kind_t { value, overflow, division_by_zero, too_deep, too_long } kind = value;
  std::int64_t v = 0;
};

char const* kind_text(outcome::kind_t k) {
  switch (k) {
    case outcome::value:
      return "a value";
    case outcome::overflow:
      return "overflow";
    case outcome::division_by_zero:
      return "division by zero";
    case outcome::too_deep:
      return "nesting depth exceeds";
    case outcome::too_long:
      return "longer than";
  }
  return "?";
}

/// A generated expression: its text, the precedence level of its top operator (0 ||, 1 &&,
/// 2 comparisons, 3 + -, 4 * / %, 5 unary, 6 primary), its nesting depth as the grammar counts it
/// and what it must evaluate to.
struct gen_expr {
  std::string text;
  int prec = 6;
  int depth = 0;
  outcome out;
};

bool fits(i128 x) { return x >= i64_min && x <= i64_max; }
outcome checked(i128 x) {
  return fits(x) ? outcome{outcome::value, static_cast<std::int64_t>(x)} : outcome{outcome::overflow, 0};
}

std::string decimal(i128 v) {
  if (v == 0) return "0";
  std::string s;
  const bool neg = v < 0;
  for (; v != 0; v /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(neg ? -(v % 10) : v % 10)));
  return neg ? "-" + s : s;
}

/// The reference: 128-bit arithmetic on 64-bit operands (exact: a product of two int64 fits), each
/// result checked against the 64-bit range. Written apart from the evaluator on purpose.
outcome reference_binary(std::string const& op, std::int64_t a64, std::int64_t b64) {
  const i128 a = a64, b = b64;
  if (op == "+") return checked(a + b);
  if (op == "-") return checked(a - b);
  if (op == "*") return checked(a * b);
  if (op == "/" || op == "%") {
    if (b == 0) return {outcome::division_by_zero, 0};
    if (op == "/") return checked(a / b);                            // C++ truncates toward zero on __int128 too
    if (a64 == i64_min && b64 == -1) return {outcome::overflow, 0};  // the rule: INT64_MIN % -1 overflows
    return checked(a % b);
  }
  if (op == "ceil_div") {
    if (b == 0) return {outcome::division_by_zero, 0};
    i128 n = a, d = b;
    if (d < 0) {
      n = -n;
      d = -d;
    }
    return checked(n >= 0 ? (n + d - 1) / d : -((-n) / d));  // ceiling of n / d with d > 0
  }
  if (op == "min") return {outcome::value, a64 < b64 ? a64 : b64};
  if (op == "max") return {outcome::value, a64 > b64 ? a64 : b64};
  if (op == "==") return {outcome::value, a == b};
  if (op == "!=") return {outcome::value, a != b};
  if (op == "<") return {outcome::value, a < b};
  if (op == "<=") return {outcome::value, a <= b};
  if (op == ">") return {outcome::value, a > b};
  if (op == ">=") return {outcome::value, a >= b};
  if (op == "&&") return {outcome::value, a != 0 && b != 0};
  if (op == "||") return {outcome::value, a != 0 || b != 0};
  FAIL("reference: unknown operator " << op);
  return {};
}

class expression_generator {
 public:
  expression_generator(rng& r, std::vector<std::pair<std::string, std::int64_t>> symbols)
      : r_(r), symbols_(std::move(symbols)) {}

  /// A random well-formed expression of at most `budget` operators and operands.
  gen_expr make(int budget) {
    gen_expr e;
    if (budget <= 1) {
      e = leaf();
    } else {
      const auto pick = r_.below(100);
      if (pick < 12) {
        e = unary(make(budget - 1));
      } else if (pick < 30) {
        e = call(budget - 1);
      } else {
        const int left = 1 + static_cast<int>(r_.below(static_cast<std::uint64_t>(budget - 1)));
        e = binary(make(left), make(budget - left));
      }
    }
    if (r_.below(100) < 6) e = parens(std::move(e));
    return e;
  }

 private:
  std::string ws() {
    const auto k = r_.below(100);
    return k < 65 ? "" : k < 95 ? " " : k < 97 ? "\t" : k < 99 ? "  " : "\n";
  }
  gen_expr parens(gen_expr e) {
    e.text = "(" + ws() + e.text + ws() + ")";
    e.prec = 6;
    e.depth += 1;
    return e;
  }
  gen_expr leaf() {
    gen_expr e;
    const auto k = r_.below(100);
    if (k < 55 || symbols_.empty()) {
      static const i128 edges[] = {i64_max,    i64_max - 1, i128{1} << 62, i128{1} << 32, 3037000499,
                                   3037000500, 4294967295,  65536,         2147483647,    2147483648};
      static const i128 beyond[] = {i128{1} << 63, (i128{1} << 63) + 1, i128{10000000000000000000ULL}, i128{1} << 64,
                                    (i128{1} << 100)};
      i128 v;
      const auto w = r_.below(100);
      if (w < 45)
        v = static_cast<i128>(r_.below(10));
      else if (w < 70)
        v = static_cast<i128>(r_.below(100000));
      else if (w < 93)
        v = edges[r_.below(std::size(edges))];
      else
        v = beyond[r_.below(std::size(beyond))];
      e.text = (r_.below(100) < 5 ? std::string("00") : std::string()) + decimal(v);
      e.out = checked(v);
    } else {
      auto const& [name, value] = symbols_[r_.below(symbols_.size())];
      e.text = name;
      e.out = {outcome::value, value};
    }
    return e;
  }
  gen_expr unary(gen_expr x) {
    const bool neg = r_.below(100) < 70;
    const bool wrap = x.prec < 5;
    gen_expr e;
    e.text = std::string(neg ? "-" : "!") + ws() + (wrap ? "(" + x.text + ")" : x.text);
    e.prec = 5;
    e.depth = 1 + x.depth + (wrap ? 1 : 0);
    if (x.out.kind != outcome::value)
      e.out = x.out;
    else
      e.out = neg ? checked(-static_cast<i128>(x.out.v)) : outcome{outcome::value, x.out.v == 0};
    return e;
  }
  gen_expr call(int budget) {
    static char const* const names[] = {"min", "max", "ceil_div", "ceil_div", "pow2"};
    const std::string name = names[r_.below(std::size(names))];
    gen_expr e;
    e.prec = 6;
    if (name == "pow2") {
      auto a = make(budget);
      e.text = name + ws() + "(" + ws() + a.text + ws() + ")";
      e.depth = 1 + a.depth;
      if (a.out.kind != outcome::value) {
        e.out = a.out;
      } else {
        std::int64_t is = 0;
        for (int k = 0; k < 63; ++k) is |= a.out.v == (std::int64_t{1} << k);
        e.out = {outcome::value, is};
      }
      return e;
    }
    const int left = budget > 1 ? 1 + static_cast<int>(r_.below(static_cast<std::uint64_t>(budget - 1))) : 1;
    auto a = make(left), b = make(budget > left ? budget - left : 1);
    e.text = name + "(" + ws() + a.text + ws() + "," + ws() + b.text + ws() + ")";
    e.depth = 1 + std::max(a.depth, b.depth);
    e.out = a.out.kind != outcome::value   ? a.out
            : b.out.kind != outcome::value ? b.out
                                           : reference_binary(name, a.out.v, b.out.v);
    return e;
  }
  gen_expr binary(gen_expr a, gen_expr b) {
    static char const* const by_level[5][6] = {
        {"||"}, {"&&"}, {"==", "!=", "<", "<=", ">", ">="}, {"+", "-"}, {"*", "/", "%"}};
    static const int sizes[5] = {1, 1, 6, 2, 3};
    const auto w = r_.below(100);
    const int level = w < 5 ? 0 : w < 10 ? 1 : w < 22 ? 2 : w < 58 ? 3 : 4;
    const std::string op = by_level[level][r_.below(static_cast<std::uint64_t>(sizes[level]))];
    // Left-associative: a left operand of the same level needs no parentheses, a right one does.
    const bool wrap_a = a.prec < level, wrap_b = b.prec <= level;
    gen_expr e;
    e.text = (wrap_a ? "(" + a.text + ")" : a.text) + ws() + op + ws() + (wrap_b ? "(" + b.text + ")" : b.text);
    e.prec = level;
    e.depth = std::max(a.depth + (wrap_a ? 1 : 0), b.depth + (wrap_b ? 1 : 0));
    // Evaluation order: the left operand, the right operand, then the operator (no short circuit).
    e.out = a.out.kind != outcome::value   ? a.out
            : b.out.kind != outcome::value ? b.out
                                           : reference_binary(op, a.out.v, b.out.v);
    return e;
  }

  rng& r_;
  std::vector<std::pair<std::string, std::int64_t>> symbols_;
};

/// The outcome a generated expression must have, the length and depth limits included.
outcome expected(gen_expr const& e) {
  if (e.text.size() > max_expression_length) return {outcome::too_long, 0};
  return e.out;
}

symbol_lookup lookup_of(std::vector<std::pair<std::string, std::int64_t>> const& symbols) {
  return [&symbols](std::string_view n) -> std::optional<std::int64_t> {
    for (auto const& [k, v] : symbols)
      if (k == n) return v;
    return std::nullopt;
  };
}

/// Evaluates `text`: "" and the value, or the error's message. Anything else escaping fails the test.
std::pair<std::string, std::int64_t> run_expression(std::string const& text, symbol_lookup const& look,
                                                    std::uint64_t seed, std::uint64_t iteration) {
  try {
    return {"", evaluate_expression(text, look)};
  } catch (error const& e) {
    const std::string m = e.what();
    if (m.rfind("expression \"", 0) != 0 || m.find(" at column ") == std::string::npos || m.size() > 600)
      FAIL("seed " << seed << ", iteration " << iteration << ": error without the expression or a column: " << m);
    return {m.empty() ? std::string("?") : m, 0};
  } catch (std::exception const& e) {
    FAIL("seed " << seed << ", iteration " << iteration << ": " << e.what() << " escaped for " << excerpt(text));
  } catch (...) {
    FAIL("seed " << seed << ", iteration " << iteration << ": a non-std exception escaped for " << excerpt(text));
  }
  return {};
}

// ---- launch plans with a known outcome ------------------------------------------------------------

enum class want { plan, signature, resources, typed };  ///< typed: any plan or typed reject

struct gen_plan {
  json::value doc;
  std::string text;  ///< set after serialisation (and text-level mutation)
  want expect = want::plan;
  std::string message_part;  ///< a signature reject's message must contain this ("" for any)
  cuda_protocol::plan plan;  ///< the expected plan (when expect is plan)
  bool value_signature = false, value_resources = false;  ///< what the values alone imply
  std::vector<std::int64_t> scratch_elements, scratch_width;
};

class plan_generator {
 public:
  plan_generator(rng& r, std::map<std::string, std::int64_t> const& dims) : r_(r), dims_(dims) {
    for (auto const& [k, v] : dims) symbols_.emplace_back(k, v);
  }

  gen_plan make() {
    gen_plan g;
    // Per plan, how often a value is not a plain in-range size: a third of the plans are clean.
    static const std::uint64_t rates[] = {0, 0, 20, 50, 150};
    fault_per_mille_ = rates[r_.below(std::size(rates))];
    json::object top;
    const std::size_t nscratch = r_.below(100) < 60 ? 0 : 1 + r_.below(3);
    json::array scratch;
    std::vector<std::string> scratch_names;
    for (std::size_t i = 0; i < nscratch; ++i) {
      json::object s;
      std::string name = "s" + std::to_string(i);
      if (fault_per_mille_ &&
          r_.below(100) < 3) {  // a name already taken: a tensor, a dim or an earlier scratch buffer
        static char const* const taken[] = {"x", "w", "y", "N", "C", "EXTRA", "s0"};
        name = taken[r_.below(std::size(taken))];
        if (name != "s0" || i > 0) g.value_signature = true;
      }
      s["name"] = name;
      s["size"] = value(g, 1, 1 << 20);
      std::int64_t width = 4;
      const auto d = r_.below(100);
      if (d < 30)
        s["dtype"] = "f32";
      else if (d < 60) {
        s["dtype"] = "f16";
        width = 2;
      } else if (d < 62) {
        s["dtype"] = d == 60 ? json::value("f64") : json::value(16);
        g.value_signature = true;
      }
      g.scratch_width.push_back(width);
      g.scratch_elements.push_back(last_);
      scratch.push_back(std::move(s));
      scratch_names.push_back(name);
    }
    if (nscratch || r_.below(100) < 5) top["scratch"] = std::move(scratch);
    std::size_t nlaunch = 1 + r_.below(4);
    if (r_.below(1000) < 5) nlaunch = 64;
    json::array launches;
    for (std::size_t i = 0; i < nlaunch; ++i) launches.push_back(launch(g, scratch_names));
    top["launches"] = std::move(launches);
    g.doc = std::move(top);
    if (!g.value_signature) compute_plan(g);
    g.expect = g.value_signature ? want::signature : g.value_resources ? want::resources : want::plan;
    return g;
  }

 private:
  /// A value for a size field: mostly in [lo, hi] (as an integer or an expression), sometimes an
  /// arbitrary generated expression, an absurd integer or not an expression at all. Sets last_ to the
  /// value and flags g when the value itself is a signature problem.
  json::value value(gen_plan& g, std::int64_t lo, std::int64_t hi) {
    const auto k = r_.below(1000) < fault_per_mille_ ? r_.below(38) : 0;  // in range, or one of the faults below
    if (k == 0) {
      const std::int64_t span = hi - lo + 1;
      std::int64_t v = lo + static_cast<std::int64_t>(r_.below(static_cast<std::uint64_t>(span)));
      if (r_.below(100) < 50)
        v = lo + static_cast<std::int64_t>(r_.below(static_cast<std::uint64_t>(std::min<std::int64_t>(span, 8))));
      last_ = v;
      const std::string s = std::to_string(v);
      switch (r_.below(7)) {
        case 0:
        case 1:
          return json::value(v);
        case 2:
          return json::value(s);
        case 3:
          return json::value("(" + s + ")");
        case 4:
          return json::value(s + " + 0 * N");
        case 5:
          return json::value("N - N + ceil_div(" + s + " * 4, 4)");
        default:
          return json::value("max(min(" + s + ", " + s + " + 1), " + s + ")");
      }
    }
    if (k < 18) {
      expression_generator eg(r_, symbols_);
      const auto e = eg.make(1 + static_cast<int>(r_.below(8)));
      const auto out = expected(e);
      if (out.kind == outcome::value)
        last_ = out.v;
      else
        g.value_signature = true;
      return json::value(e.text);
    }
    if (k < 33) {
      static const std::int64_t absurd[] = {0, -1, -1024, 1025, 65, 65536, 2147483648LL, 232449, 9, i64_max, i64_min};
      last_ = r_.below(100) < 30 ? -static_cast<std::int64_t>(r_.below(1000)) : absurd[r_.below(std::size(absurd))];
      return json::value(last_);
    }
    g.value_signature = true;  // not an expression: a wrong JSON kind, an integer beyond int64, an empty text
    switch (r_.below(7)) {
      case 0:
        return json::value(nullptr);
      case 1:
        return json::value(true);
      case 2:
        return json::value(1.5);
      case 3:
        return json::value(static_cast<std::uint64_t>(i64_max) + 1 + r_.below(1000));
      case 4:
        return json::value("");
      case 5:
        return json::value(json::array{1, 2});
      default:
        return json::value(json::object{{"v", 1}});
    }
  }

  json::value launch(gen_plan& g, std::vector<std::string> const& scratch_names) {
    json::object l;
    static char const* const kernels[] = {"k0", "k1", "k2", "k3"};
    l["kernel"] = kernels[r_.below(std::size(kernels))];
    if (fault_per_mille_ && r_.below(1000) < 15) {
      static char const* const bad[] = {"", "1k", "k-1", "k 1", "k\xff"};
      l["kernel"] = bad[r_.below(std::size(bad))];
      g.value_signature = true;
    }
    auto triple = [&](std::int64_t hx, std::int64_t hyz) {
      json::array a;
      std::vector<std::int64_t> v;
      for (int d = 0; d < 3; ++d) {
        a.push_back(value(g, 1, d == 0 ? hx : hyz));
        v.push_back(last_);
      }
      values_.push_back(v);
      return a;
    };
    l["grid"] = triple(100000, 4);
    const std::int64_t grid_x = values_.back()[0];
    l["block"] = triple(256, 2);
    if (r_.below(100) < 20) {
      json::array c;
      std::vector<std::int64_t> v;
      for (int d = 0; d < 3; ++d) {
        if (r_.below(100) < 85) {
          const std::int64_t x = d == 0 && grid_x % 2 == 0 && r_.below(2) ? 2 : 1;
          c.push_back(x);
          v.push_back(x);
        } else {
          c.push_back(value(g, 1, 8));
          v.push_back(last_);
        }
      }
      l["cluster"] = std::move(c);
      values_.push_back(v);
    } else {
      values_.push_back({1, 1, 1});
    }
    if (r_.below(100) < 70) {
      l["smem"] = value(g, 0, 100000);
      values_.push_back({last_});
    } else {
      values_.push_back({0});
    }
    json::array args;
    const std::size_t nargs = r_.below(9);
    std::vector<std::string> pool = {"x", "w", "y", "N", "C"};
    pool.insert(pool.end(), scratch_names.begin(), scratch_names.end());
    for (std::size_t a = 0; a < nargs; ++a) {
      if (fault_per_mille_ && r_.below(1000) < 10) {
        args.push_back(r_.below(2) ? "EXTRA" : "nope");  // not passable: a symbol outside dim_order, an unknown name
        g.value_signature = true;
      } else {
        args.push_back(json::value(pool[r_.below(pool.size())]));
      }
    }
    l["args"] = std::move(args);
    return l;
  }

  /// The plan the generated document must resolve to, and whether its values are out of range.
  void compute_plan(gen_plan& g) {
    auto const& top = g.doc.get_object();
    std::map<std::string, std::int64_t> buffers{{"x", 0}, {"w", 1}, {"y", 2}};
    i128 total = 0;
    if (auto const* sc = top.if_contains("scratch")) {
      for (std::size_t i = 0; i < sc->get_array().size(); ++i) {
        const std::string name(sc->get_array()[i].get_object().at("name").get_string());
        buffers[name] = 3 + static_cast<std::int64_t>(i);
        const i128 bytes = static_cast<i128>(g.scratch_elements[i]) * g.scratch_width[i];
        total += bytes;
        if (g.scratch_elements[i] < 1 || bytes > (i128{1} << 36) || total > (i128{1} << 36)) g.value_resources = true;
        g.plan.scratch.push_back(static_cast<std::uint64_t>(bytes));
      }
    }
    std::size_t vi = 0;
    for (auto const& lv : top.at("launches").get_array()) {
      auto const& lo = lv.get_object();
      cuda_protocol::launch l;
      l.kernel = std::string(lo.at("kernel").get_string());
      auto const &gv = values_[vi], &bv = values_[vi + 1], &cv = values_[vi + 2], &sv = values_[vi + 3];
      vi += 4;
      for (int d = 0; d < 3; ++d) {
        l.grid[d] = gv[static_cast<std::size_t>(d)];
        l.block[d] = bv[static_cast<std::size_t>(d)];
        l.cluster[d] = cv[static_cast<std::size_t>(d)];
      }
      l.smem = sv[0];
      for (auto const& a : lo.at("args").get_array()) {
        const std::string n(a.get_string());
        if (n == "N" || n == "C") {
          l.args.push_back(1);
          l.args.push_back(n == "N" ? 0 : 1);
        } else {
          l.args.push_back(0);
          l.args.push_back(buffers.at(n));
        }
      }
      // The device's rules, written out again here.
      bool bad = false;
      for (int d = 0; d < 3; ++d) bad = bad || l.grid[d] < 1 || l.block[d] < 1 || l.cluster[d] < 1;
      if (!bad) {
        const i128 threads = static_cast<i128>(l.block[0]) * l.block[1] * l.block[2];
        const i128 cluster = static_cast<i128>(l.cluster[0]) * l.cluster[1] * l.cluster[2];
        bad = l.block[0] > 1024 || l.block[1] > 1024 || l.block[2] > 64 || threads > 1024 || l.grid[0] > 2147483647 ||
              l.grid[1] > 65535 || l.grid[2] > 65535 || cluster > 8 || l.grid[0] % l.cluster[0] != 0 ||
              l.grid[1] % l.cluster[1] != 0 || l.grid[2] % l.cluster[2] != 0;
      }
      bad = bad || l.smem < 0 || l.smem > 232448;
      g.value_resources = g.value_resources || bad;
      g.plan.launches.push_back(std::move(l));
    }
  }

  rng& r_;
  std::map<std::string, std::int64_t> const& dims_;
  std::vector<std::pair<std::string, std::int64_t>> symbols_;
  std::int64_t last_ = 0;
  std::uint64_t fault_per_mille_ = 0;
  std::vector<std::vector<std::int64_t>> values_;  ///< per launch: grid, block, cluster, smem
};

/// A JSON value of another kind than `v` (for "wrong type at this position").
json::value other_kind(rng& r, json::value const& v) {
  for (;;) {
    json::value w;
    switch (r.below(8)) {
      case 0:
        w = nullptr;
        break;
      case 1:
        w = false;
        break;
      case 2:
        w = 2.5;
        break;
      case 3:
        w = std::int64_t{3};
        break;
      case 4:
        w = "text";
        break;
      case 5:
        w = json::array{std::int64_t{1}};
        break;
      case 6:
        w = json::object{{"k", 1}};
        break;
      default:
        w = static_cast<std::uint64_t>(i64_max) + 7;
        break;
    }
    const bool same_kind = w.kind() == v.kind() || (w.is_number() && v.is_number() && !w.is_double() && !v.is_double());
    if (!same_kind) return w;
  }
}

/// A JSON value that is not an expression (neither a string nor an integer that fits int64).
json::value non_expression(rng& r) {
  switch (r.below(6)) {
    case 0:
      return nullptr;
    case 1:
      return true;
    case 2:
      return 2.5;
    case 3:
      return json::array{std::int64_t{1}};
    case 4:
      return json::object{{"k", 1}};
    default:
      return static_cast<std::uint64_t>(i64_max) + 7;
  }
}

json::value nested(std::size_t depth) {
  json::value v = json::array{};
  for (std::size_t i = 1; i < depth; ++i) v = json::array{std::move(v)};
  return v;
}

/// Applies one structural mutation whose reject is certain (signature), or leaves g alone.
void mutate(rng& r, gen_plan& g) {
  auto& top = g.doc.get_object();
  auto& launches = top["launches"].get_array();
  auto& l = launches[r.below(launches.size())].get_object();
  // Faults in the generated values may be reported first (scratch before launches, launch 0 before
  // launch 1): the message is checked only when the values are clean.
  auto sig = [&](std::string part) {
    g.expect = want::signature;
    g.message_part = g.value_signature ? std::string() : std::move(part);
  };
  switch (r.below(13)) {
    case 0: {  // an unknown field at some level
      static char const* const keys[] = {"gird", "blocks", "comment", "dynamic_smem", "\x01", "launch"};
      const std::string key = keys[r.below(std::size(keys))];
      const auto where = r.below(3);
      if (where == 0 || !top.contains("scratch") || top["scratch"].get_array().empty()) {
        (where == 1 ? top : l)[key] = 1;
      } else {
        top["scratch"].get_array()[0].get_object()[key] = "f32";
      }
      sig("unknown field");
      break;
    }
    case 1: {  // a required field missing
      static char const* const keys[] = {"kernel", "grid", "block", "args"};
      const auto k = r.below(5);
      if (k == 4)
        top.erase("launches");
      else
        l.erase(keys[k]);
      sig("no field");
      break;
    }
    case 2: {  // the wrong JSON kind at a position of the launch
      static char const* const keys[] = {"kernel", "grid", "block", "args", "smem", "cluster"};
      const std::string key = keys[r.below(std::size(keys))];
      json::value& slot = l[key];
      if ((key == "grid" || key == "block" || key == "cluster") && slot.is_array() && r.below(2))
        slot.get_array()[r.below(3)] = non_expression(r);  // an element
      else if (key == "args" && slot.is_array() && !slot.get_array().empty() && r.below(2))
        slot.get_array()[0] = other_kind(r, json::value("x"));  // an argument: anything but a string
      else if ((key == "grid" || key == "block") && r.below(3) == 0)
        slot = json::array{1, 1};  // 2 elements
      else if (key == "smem")
        slot = non_expression(r);
      else
        slot = other_kind(r, slot.is_null() ? json::value(json::array{}) : slot);
      sig("");
      break;
    }
    case 3: {  // the wrong JSON kind at the top or in scratch
      const auto k = r.below(4);
      if (k == 0)
        g.doc = other_kind(r, g.doc);
      else if (k == 1)
        top["launches"] = other_kind(r, top["launches"]);
      else if (k == 2)
        top["scratch"] = other_kind(r, json::value(json::array{}));
      else
        top["scratch"] = json::array{other_kind(r, json::value(json::object{}))};
      sig("");
      break;
    }
    case 4: {  // deeply nested JSON somewhere
      const std::size_t depth = 2 + r.below(300);
      if (r.below(2))
        l["grid"] = json::array{nested(depth), 1, 1};
      else
        top["launches"] = json::array{nested(depth)};
      sig("");
      break;
    }
    case 5: {  // too many launches
      const auto n = 65 + r.below(20);
      json::value copy = launches[0];
      while (launches.size() < n) launches.push_back(copy);
      sig("launches (at most 64)");
      break;
    }
    case 6: {  // too many scratch buffers
      json::array sc;
      for (std::size_t i = 0; i < 33 + r.below(10); ++i)
        sc.push_back(json::object{{"name", "t" + std::to_string(i)}, {"size", 1}});
      top["scratch"] = std::move(sc);
      sig("scratch buffers (at most 32)");
      break;
    }
    case 7: {  // too many arguments
      json::array a;
      for (std::size_t i = 0; i < 129 + r.below(10); ++i) a.push_back("x");
      l["args"] = std::move(a);
      sig("arguments (at most 128)");
      break;
    }
    case 8: {  // a name too long
      const std::string name = "k" + std::string(256 + r.below(200), 'a');
      if (r.below(2))
        l["kernel"] = name;
      else
        l["args"] = json::array{json::value(name)};
      sig("(at most 256)");
      break;
    }
    case 9: {  // a scratch buffer whose name is taken
      static char const* const taken[] = {"x", "w", "y", "N", "C", "EXTRA"};
      top["scratch"] = json::array{json::object{{"name", taken[r.below(std::size(taken))]}, {"size", 4}}};
      sig("the name of a");
      break;
    }
    case 10: {  // the same scratch name twice
      top["scratch"] = json::array{json::object{{"name", "t"}, {"size", 4}}, json::object{{"name", "t"}, {"size", 8}}};
      sig("already exists");
      break;
    }
    case 11: {  // an expression that cannot be evaluated, at a random field
      static char const* const bad[] = {"(-9223372036854775807 - 1) / -1",
                                        "(-9223372036854775807 - 1) % -1",
                                        "N / 0",
                                        "9223372036854775807 + N",
                                        "99999999999999999999",
                                        "unknown_dim",
                                        "N +",
                                        "((N)"};
      static char const* const keys[] = {"grid", "block", "cluster"};
      const std::string text = bad[r.below(std::size(bad))];
      if (r.below(4) == 0)
        l["smem"] = text;
      else
        l[keys[r.below(3)]] = json::array{text, 1, 1};
      sig("expression \"");
      break;
    }
    default: {  // deep expression nesting inside a valid plan
      l["grid"] = json::array{repeat("(", 65 + r.below(500)) + "1" + repeat(")", 65), 1, 1};
      sig("nesting depth exceeds 64");
      break;
    }
  }
}

/// Text-level changes: some with a certain outcome, some anything-goes corruption.
void mutate_text(rng& r, gen_plan& g) {
  auto& t = g.text;
  // A fault in the generated values may be reported before the one made here (a kernel name that
  // is not UTF-8 makes the JSON invalid): then only the stage is certain.
  auto sig = [&](std::string part, bool first_in_any_case = false) {
    g.expect = want::signature;
    g.message_part = g.value_signature && !first_in_any_case ? std::string() : std::move(part);
  };
  switch (r.below(6)) {
    case 0:  // a key twice in one object
      if (t.size() > 1 && t[0] == '{') {
        t = R"({"launches": 1, )" + t.substr(1);
        sig("appears twice");
      }
      break;
    case 1:
      t += r.below(2) ? " x" : "{}";
      sig("text after the end");
      break;
    case 2:
      t += std::string(plan_limits::text_bytes + 1 - std::min(t.size(), plan_limits::text_bytes), ' ');
      sig("bytes of text (at most 65536)", true);  // checked before anything else
      break;
    case 3:  // truncated
      t.resize(r.below(t.size() + 1));
      g.expect = want::typed;
      break;
    case 4: {  // a few random bytes changed, inserted or removed
      for (auto n = 1 + r.below(4); n > 0 && !t.empty(); --n) {
        const auto at = r.below(t.size());
        const auto op = r.below(3);
        const char c = static_cast<char>(r.below(100) < 70 ? "{}[]\":,0123456789-+*/%()NCxyk \\"[r.below(31)]
                                                           : static_cast<char>(r.below(256)));
        if (op == 0)
          t[at] = c;
        else if (op == 1)
          t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c);
        else
          t.erase(at, 1);
      }
      g.expect = want::typed;
      break;
    }
    default: {  // garbage
      std::string s(r.below(200), ' ');
      for (auto& c : s) c = static_cast<char>(r.below(256));
      t = r.below(2) ? s : "{" + s;
      g.expect = want::typed;
      break;
    }
  }
}

/// A description of the cubin for a resolved plan, with deliberate faults, and what
/// check_plan_against must say about the pair.
std::pair<cubin_info, std::optional<stage>> cubin_for(rng& r, cuda_protocol::plan const& plan) {
  cubin_info info;
  info.sm = 90;
  std::set<std::string> names;
  for (auto const& l : plan.launches) names.insert(l.kernel);
  for (auto const& name : names) {
    if (r.below(100) < 3) continue;  // missing
    std::size_t args = 0;
    cuda_protocol::launch const* first = nullptr;
    for (auto const& l : plan.launches)
      if (l.kernel == name && !first) first = &l;
    args = first->args.size() / 2;
    cubin_kernel k;
    k.name = name;
    k.param_sizes.assign(args, 8);
    const auto f = r.below(100);
    if (f < 3)
      k.param_sizes.push_back(8);
    else if (f < 5 && !k.param_sizes.empty())
      k.param_sizes.pop_back();
    else if (f < 8 && !k.param_sizes.empty())
      k.param_sizes[r.below(k.param_sizes.size())] = r.below(2) ? 4 : 16;
    k.registers = static_cast<int>(16 + r.below(112));
    if (r.below(100) < 3) k.registers = 256 + static_cast<int>(r.below(100));
    if (r.below(100) < 30) k.max_threads = 128 << r.below(4);
    if (r.below(100) < 5)
      for (std::size_t d = 0; d < 3; ++d)
        k.required_block[d] = static_cast<int>(r.below(2) ? first->block[d] : first->block[d] + 1);
    k.static_smem = static_cast<int>(r.below(49152));
    if (r.below(100) < 5) k.static_smem = 200000;
    k.local_bytes = static_cast<int>(r.below(64));
    info.kernels.push_back(std::move(k));
  }
  info.kernels.push_back(kernel("decoy", 3));
  // What must come out: signature faults anywhere first, then resources faults.
  std::optional<stage> out;
  for (auto const& l : plan.launches) {
    auto const* k = info.find(l.kernel);
    bool sizes = true;
    if (k)
      for (int s : k->param_sizes) sizes = sizes && s == 8;
    if (!k || k->param_sizes.size() * 2 != l.args.size() || !sizes) out = stage::signature;
  }
  if (out) return {info, out};
  for (auto const& l : plan.launches) {
    auto const& k = *info.find(l.kernel);
    const std::int64_t threads = l.block[0] * l.block[1] * l.block[2];
    const std::int64_t warps = (threads + 31) / 32;
    const std::int64_t per_warp = (k.registers * 32 + 255) / 256 * 256;
    const bool reqntid = k.required_block[0] || k.required_block[1] || k.required_block[2];
    if ((k.max_threads && threads > k.max_threads) ||
        (reqntid && (l.block[0] != k.required_block[0] || l.block[1] != k.required_block[1] ||
                     l.block[2] != k.required_block[2])) ||
        k.registers > 255 || warps * per_warp > 65536 || k.static_smem + l.smem > 232448)
      out = stage::resources;
  }
  return {info, out};
}

bool same_plan(cuda_protocol::plan const& a, cuda_protocol::plan const& b) {
  if (a.cubin != b.cubin || a.scratch != b.scratch || a.launches.size() != b.launches.size()) return false;
  for (std::size_t i = 0; i < a.launches.size(); ++i) {
    auto const &x = a.launches[i], &y = b.launches[i];
    if (x.kernel != y.kernel || x.smem != y.smem || x.args != y.args) return false;
    for (int d = 0; d < 3; ++d)
      if (x.grid[d] != y.grid[d] || x.block[d] != y.block[d] || x.cluster[d] != y.cluster[d]) return false;
  }
  return true;
}

char const* want_text(want w) {
  switch (w) {
    case want::plan:
      return "a plan";
    case want::signature:
      return "a signature reject";
    case want::resources:
      return "a resources reject";
    case want::typed:
      return "a plan or a typed reject";
  }
  return "?";
}

}  // namespace

// ---- unit cases: expressions ----------------------------------------------------------------------

TEST_CASE("launch plan: the reference evaluation agrees with itself on known cases") {
  // The fuzz tests' reference is only as good as this: a few cases worked by hand.
  CHECK(reference_binary("/", i64_min, -1).kind == outcome::overflow);
  CHECK(reference_binary("%", i64_min, -1).kind == outcome::overflow);
  CHECK(reference_binary("%", i64_min, 1).v == 0);
  CHECK(reference_binary("ceil_div", -7, 2).v == -3);
  CHECK(reference_binary("ceil_div", 7, -2).v == -3);
  CHECK(reference_binary("ceil_div", -7, -2).v == 4);
  CHECK(reference_binary("ceil_div", i64_max, 2).v == 4611686018427387904LL);
  CHECK(reference_binary("ceil_div", i64_min, -1).kind == outcome::overflow);
  CHECK(reference_binary("*", 3037000500, 3037000500).kind == outcome::overflow);
  CHECK(reference_binary("-", i64_min, 1).kind == outcome::overflow);
  CHECK(reference_binary("/", 5, 0).kind == outcome::division_by_zero);
  CHECK(reference_binary("/", -7, 2).v == -3);
  CHECK(reference_binary("%", -7, 2).v == -1);
}

// ---- unit cases: plans ----------------------------------------------------------------------------

TEST_CASE("launch plan: a plan resolves to buffers, dims and values at the shape") {
  const std::string text = R"~({"scratch": [{"name": "partial", "size": "ceil_div(N, 256) * C", "dtype": "f32"},
                                            {"name": "h", "size": "N", "dtype": "f16"}, {"name": "d", "size": 3}],
    "launches": [{"kernel": "first", "grid": ["ceil_div(N, 256)", "C", 1], "block": [256, 1, 1], "smem": "C * 4",
                  "args": ["x", "w", "partial", "N", "C"]},
                 {"kernel": "second", "grid": [4, 1, 1], "block": ["2 * 64", 2, 1], "cluster": [2, 1, 1],
                  "args": ["partial", "h", "d", "y", "C", "N", "EXTRA_NOT_USED_AS_ARG_ok"]}]})~";
  // An argument must be passable: EXTRA_NOT_USED_AS_ARG_ok names nothing.
  auto r = reject_of(text);
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message ==
        "launches[1] (kernel 'second').args[6]: 'EXTRA_NOT_USED_AS_ARG_ok' is neither a tensor, a scratch buffer nor a "
        "dim (tensors: x, w, y; scratch: partial, h, d; dims: N, C)");

  std::string good = text;
  good.replace(good.find(", \"EXTRA_NOT_USED_AS_ARG_ok\""), std::string(", \"EXTRA_NOT_USED_AS_ARG_ok\"").size(), "");
  const auto p = resolve_launch_plan(test_problem(), test_dims(1000, 64), good);
  CHECK(p.cubin.empty());
  CHECK(p.scratch == std::vector<std::uint64_t>{4 * 64 * 4, 1000 * 2, 3 * 4});
  REQUIRE(p.launches.size() == 2);
  auto const& a = p.launches[0];
  CHECK(a.kernel == "first");
  CHECK((a.grid[0] == 4 && a.grid[1] == 64 && a.grid[2] == 1));
  CHECK((a.block[0] == 256 && a.block[1] == 1 && a.block[2] == 1));
  CHECK((a.cluster[0] == 1 && a.cluster[1] == 1 && a.cluster[2] == 1));  // no cluster: 1 x 1 x 1
  CHECK(a.smem == 256);
  // (kind, index): buffers x=0, w=1, y=2, then scratch partial=3, h=4, d=5; dims N=0, C=1.
  CHECK(a.args == std::vector<std::int64_t>{0, 0, 0, 1, 0, 3, 1, 0, 1, 1});
  auto const& b = p.launches[1];
  CHECK(b.smem == 0);  // no smem: 0
  CHECK(b.block[0] == 128);
  CHECK(b.block[1] == 2);
  CHECK(b.cluster[0] == 2);
  CHECK(b.args == std::vector<std::int64_t>{0, 3, 0, 4, 0, 5, 0, 2, 1, 1, 1, 0});
}

TEST_CASE("launch plan: an expression error is a signature reject naming the launch, the field and the text") {
  auto r = reject_of(one_launch(
      R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": []}, {"kernel": "k1", "grid": ["N / 0", 1, 1], "block": [1, 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message ==
        "launches[1] (kernel 'k1').grid[0]: expression \"N / 0\": division by zero (1000 / 0) at column 3");
  // The issue's cases: INT64_MIN / -1, INT64_MIN % -1, deep nesting, a huge literal, a long text.
  r = reject_of(simple_launch(R"(, "smem": "(-9223372036854775807 - 1) / -1")"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message.find("launches[0] (kernel 'k').smem: expression \"(-9223372036854775807 - 1) / -1\": overflow") ==
        0);
  r = reject_of(one_launch(R"("grid": ["(-9223372036854775807 - 1) % -1", 1, 1], "block": [1, 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->message.find(".grid[0]: expression") != std::string::npos);
  CHECK(r->message.find("overflow") != std::string::npos);
  r = reject_of(one_launch(R"("grid": [1, 1, 1], "block": [")" + repeat("(", 200) + "1" + repeat(")", 200) +
                           R"(", 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message.find("launches[0] (kernel 'k').block[0]: expression") == 0);
  CHECK(r->message.find("nesting depth exceeds 64") != std::string::npos);
  r = reject_of(one_launch(R"("grid": ["99999999999999999999", 1, 1], "block": [1, 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->message.find("the literal 99999999999999999999 is outside the 64-bit range") != std::string::npos);
  r = reject_of(one_launch(R"("grid": [")" + repeat("1+", 3000) + R"(1", 1, 1], "block": [1, 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message.find("longer than 4096 bytes") != std::string::npos);
  r = reject_of(one_launch(R"("grid": ["", 1, 1], "block": [1, 1, 1], "args": [])"));
  REQUIRE(r);
  CHECK(r->message == "launches[0] (kernel 'k').grid[0]: expression \"\": unexpected end at column 1");
  r = reject_of(simple_launch(R"(, "smem": 18446744073709551615)"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message == "launches[0] (kernel 'k').smem: the integer 18446744073709551615 is outside the 64-bit range");
  r = reject_of(simple_launch(R"(, "smem": 1.0)"));
  REQUIRE(r);
  CHECK(r->message ==
        "launches[0] (kernel 'k').smem: expected an expression (a string or an integer), found a number with a "
        "fraction or exponent");
}

TEST_CASE("launch plan: unknown fields are signature rejects naming the field, at every level") {
  auto r = reject_of(simple_launch(R"(, "gird": [1, 1, 1])"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message ==
        "launches[0]: unknown field 'gird' (did you mean 'grid'?) (known: kernel, grid, block, smem, cluster, args)");
  r = reject_of(one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("sratch": [], )"));
  REQUIRE(r);
  CHECK(r->message == "the plan: unknown field 'sratch' (did you mean 'scratch'?) (known: scratch, launches)");
  r = reject_of(one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])",
                           R"("scratch": [{"name": "t", "size": 4, "type": "f16"}], )"));
  REQUIRE(r);
  CHECK(r->message == "scratch[0]: unknown field 'type' (did you mean 'dtype'?) (known: name, size, dtype)");
  r = reject_of(simple_launch(R"(, "\u0001": 0)"));
  REQUIRE(r);
  CHECK(r->message.find("unknown field '\\x01'") != std::string::npos);
}

TEST_CASE("launch plan: every wrong JSON kind, missing field and malformed text is a signature reject") {
  // Each of these once reached a Boost.JSON accessor that throws (as_string, at, as_array) or
  // was silently accepted.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "not valid JSON"},
      {"[]", "the plan must be a JSON object, found an array"},
      {"null", "the plan must be a JSON object, found null"},
      {"{}", "no field 'launches'"},
      {R"({"launches": {}})", "launches: expected an array, found an object"},
      {R"({"launches": []})", "launches: the plan has no launches"},
      {R"({"launches": [5]})", "launches[0]: expected an object"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1])"), "launches[0] (kernel 'k'): no field 'args'"},
      {one_launch(R"("grid": [1, 1, 1], "args": [])"), "launches[0] (kernel 'k'): no field 'block'"},
      {R"({"launches": [{"grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})", "launches[0]: no field 'kernel'"},
      {R"({"launches": [{"kernel": 5, "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})",
       "launches[0].kernel: expected a name (a string), found an integer"},
      {R"({"launches": [{"kernel": "", "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})",
       "launches[0].kernel: the name is empty"},
      {R"({"launches": [{"kernel": "a b", "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})",
       "launches[0].kernel: 'a b' is not a name"},
      {one_launch(R"("grid": "1, 1, 1", "block": [1, 1, 1], "args": [])"),
       "launches[0] (kernel 'k').grid: expected an array of 3 expressions (x, y, z), found a string"},
      {one_launch(R"("grid": [1, 1], "block": [1, 1, 1], "args": [])"),
       "launches[0] (kernel 'k').grid: expected an array of 3 expressions (x, y, z), found 2 elements"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, null], "args": [])"),
       "launches[0] (kernel 'k').block[2]: expected an expression (a string or an integer), found null"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "cluster": [true, 1, 1], "args": [])"),
       "launches[0] (kernel 'k').cluster[0]: expected an expression (a string or an integer), found true/false"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": "x")"),
       "launches[0] (kernel 'k').args: expected an array of names, found a string"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [["x"]])"),
       "launches[0] (kernel 'k').args[0]: expected a name (a string), found an array"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": ["EXTRA"])"),
       "launches[0] (kernel 'k').args[0]: 'EXTRA' is neither a tensor"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": {}, )"),
       "scratch: expected an array, found an object"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": ["t"], )"),
       "scratch[0]: expected an object {name, size, dtype}, found a string"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": [{"size": 4}], )"),
       "scratch[0]: no field 'name'"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": [{"name": 4, "size": 4}], )"),
       "scratch[0].name: expected a name (a string), found an integer"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": [{"name": "t"}], )"),
       "scratch[0] ('t'): no field 'size'"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])",
                  R"("scratch": [{"name": "t", "size": 4, "dtype": "f64"}], )"),
       "scratch[0] ('t').dtype: 'f64' is not f32 or f16"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])",
                  R"("scratch": [{"name": "t", "size": 4, "dtype": 2}], )"),
       "scratch[0] ('t').dtype: expected \"f32\" or \"f16\", found an integer"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": [{"name": "y", "size": 4}], )"),
       "scratch[0] ('y'): the name of a tensor of the problem"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", R"("scratch": [{"name": "C", "size": 4}], )"),
       "scratch[0] ('C'): the name of a dim of the problem"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])",
                  R"("scratch": [{"name": "EXTRA", "size": 4}], )"),
       "scratch[0] ('EXTRA'): the name of a dim of the problem"},
      {one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])",
                  R"("scratch": [{"name": "t", "size": 4}, {"name": "t", "size": 8}], )"),
       "scratch[1] ('t'): a scratch buffer of that name already exists"},
      {simple_launch(R"(, "grid": [2, 1, 1])"), "the field 'grid' appears twice in one object"},
      {simple_launch() + " x", "not valid JSON: text after the end of the plan"},
      {simple_launch().substr(0, 40), "not valid JSON"},
      {"{\"launches\": " + repeat("[", 200) + repeat("]", 200) + "}", "JSON nested deeper than 16 levels"},
      {"{\"launches\": " + repeat("[", 100000), "bytes of text (at most 65536)"},
      {one_launch(R"("grid": ["N", 1, 1], "block": [1, 1, 1], "args": ["\ud800"])"), "not valid JSON"},
  };
  for (auto const& [text, part] : cases) {
    auto r = reject_of(text);
    INFO(excerpt(text));
    REQUIRE(r);
    CHECK(r->where == stage::signature);
    CHECK_MESSAGE(r->message.find(part) != std::string::npos, r->message);
  }
  // A plan without a kernel's name but with other faults still says what is missing first, by field.
  CHECK(reject_of(R"({"launches": [{"kernel": "k", "grid": [0, 1, 1], "block": [1, 1, 1], "args": [], "x": 1}]})")
            ->where == stage::signature);
}

TEST_CASE("launch plan: size limits (launches, scratch buffers, arguments, names, text)") {
  auto launches = [](std::size_t n) {
    std::string s = R"({"launches": [)";
    for (std::size_t i = 0; i < n; ++i)
      s += std::string(i ? ", " : "") + R"({"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "args": ["x"]})";
    return s + "]}";
  };
  REQUIRE(plan_limits::launches == 64);
  const auto p64 = resolve_launch_plan(test_problem(), test_dims(), launches(64));
  CHECK(p64.launches.size() == 64);
  auto r = reject_of(launches(65));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
  CHECK(r->message == "launches: 65 launches (at most 64)");
  // What the parent accepts, the worker's protocol carries (it refuses more than 64 launches).
  {
    auto p = p64;
    p.cubin = "m.cubin";
    wire_writer w;
    cuda_protocol::detail::put_plan(w, p);
    const auto bytes = w.take();
    wire_reader rd(bytes);
    CHECK(cuda_protocol::detail::get_plan(rd).launches.size() == 64);
  }
  auto scratch = [](std::size_t n) {
    std::string s = R"({"scratch": [)";
    for (std::size_t i = 0; i < n; ++i)
      s += std::string(i ? ", " : "") + R"({"name": "t)" + std::to_string(i) + R"(", "size": 1})";
    return s + R"(], "launches": [{"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})";
  };
  CHECK(resolve_launch_plan(test_problem(), test_dims(), scratch(32)).scratch.size() == 32);
  r = reject_of(scratch(33));
  REQUIRE(r);
  CHECK(r->message == "scratch: 33 scratch buffers (at most 32)");
  auto args = [](std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += std::string(i ? ", " : "") + "\"N\"";
    return one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [)" + s + "]");
  };
  CHECK(resolve_launch_plan(test_problem(), test_dims(), args(128)).launches[0].args.size() == 256);
  r = reject_of(args(129));
  REQUIRE(r);
  CHECK(r->message == "launches[0] (kernel 'k').args: 129 arguments (at most 128)");
  const std::string name256 = "k" + std::string(255, 'a');
  CHECK(resolve_launch_plan(
            test_problem(), test_dims(),
            R"({"launches": [{"kernel": ")" + name256 + R"(", "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})")
            .launches[0]
            .kernel == name256);
  r = reject_of(R"({"launches": [{"kernel": ")" + name256 +
                R"(a", "grid": [1, 1, 1], "block": [1, 1, 1], "args": []}]})");
  REQUIRE(r);
  CHECK(r->message == "launches[0].kernel: a name of 257 bytes (at most 256)");
  // The text: white space counts, so a plan of 65536 bytes is read and one byte more is not.
  std::string text = simple_launch();
  text += std::string(plan_limits::text_bytes - text.size(), ' ');
  CHECK(resolve_launch_plan(test_problem(), test_dims(), text).launches.size() == 1);
  r = reject_of(text + " ");
  REQUIRE(r);
  CHECK(r->message == "the plan is 65537 bytes of text (at most 65536)");
}

TEST_CASE("launch plan: absurd or unlaunchable values are resources rejects") {
  auto res = [](std::string const& members, std::string const& top = "",
                device_limits const& limits = limits_for_arch("sm_90")) {
    auto r = reject_of(one_launch(members, top), test_dims(), limits);
    REQUIRE_MESSAGE(r, members);
    CHECK_MESSAGE(r->where == stage::resources, r->message);
    return r->message;
  };
  CHECK(res(R"("grid": [0, 1, 1], "block": [1, 1, 1], "args": [])") ==
        "launches[0] (kernel 'k'): grid 0 x 1 x 1, block 1 x 1 x 1, cluster 1 x 1 x 1: every dimension must be >= 1");
  res(R"("grid": [1, 1, 1], "block": [-32, 1, 1], "args": [])");
  res(R"("grid": [1, 1, 1], "block": [1, 1, 1], "cluster": [1, 0, 1], "args": [])");
  CHECK(res(R"("grid": [1, 1, 1], "block": [1025, 1, 1], "args": [])") ==
        "launches[0] (kernel 'k'): block 1025 x 1 x 1: at most 1024 threads per block, and at most 1024 x 1024 x 64 on "
        "sm_90");
  res(R"("grid": [1, 1, 1], "block": [1, 1, 65], "args": [])");
  res(R"("grid": [1, 1, 1], "block": [32, 32, 2], "args": [])");
  res(R"("grid": [1, 1, 1], "block": [9223372036854775807, 9223372036854775807, 2], "args": [])");
  CHECK(res(R"("grid": [1, 65536, 1], "block": [1, 1, 1], "args": [])") ==
        "launches[0] (kernel 'k'): grid 1 x 65536 x 1: at most 2147483647 x 65535 x 65535 on sm_90");
  res(R"("grid": [2147483648, 1, 1], "block": [1, 1, 1], "args": [])");
  res(R"("grid": [1, 1, 65536], "block": [1, 1, 1], "args": [])");
  CHECK(res(R"("grid": [9, 3, 1], "block": [1, 1, 1], "cluster": [3, 3, 1], "args": [])") ==
        "launches[0] (kernel 'k'): cluster 3 x 3 x 1: at most 8 blocks per cluster on sm_90");
  CHECK(res(R"("grid": [6, 1, 1], "block": [1, 1, 1], "cluster": [4, 1, 1], "args": [])") ==
        "launches[0] (kernel 'k'): grid 6 x 1 x 1 is not a multiple of the cluster 4 x 1 x 1");
  CHECK(res(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": -1, "args": [])") ==
        "launches[0] (kernel 'k'): -1 bytes of dynamic shared memory (0 to 232448 on sm_90)");
  res(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": 232449, "args": [])");
  const std::string ok = R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])";
  CHECK(res(ok, R"("scratch": [{"name": "t", "size": "N - N"}], )") ==
        "scratch[0] ('t'): size 0 elements (at least 1)");
  res(ok, R"("scratch": [{"name": "t", "size": -5}], )");
  CHECK(res(ok, R"("scratch": [{"name": "t", "size": 17179869185}], )") ==
        "scratch[0] ('t'): 17179869185 elements of 4 bytes: over the limit of 68719476736 bytes");
  res(ok, R"("scratch": [{"name": "t", "size": 9223372036854775807}], )");  // the multiplication would overflow
  CHECK(res(ok, R"("scratch": [{"name": "t", "size": 34359738368, "dtype": "f16"}, {"name": "u", "size": 1}], )") ==
        "scratch[1] ('u'): the scratch buffers together exceed the limit of 68719476736 bytes");
  // At the limits: accepted.
  const auto edge = resolve_launch_plan(
      test_problem(), test_dims(),
      one_launch(
          R"("grid": [2147483640, 65535, 65535], "block": [16, 1, 64], "cluster": [8, 1, 1], "smem": 232448, "args": [])",
          R"("scratch": [{"name": "t", "size": 34359738368, "dtype": "f16"}], )"));
  CHECK(edge.scratch == std::vector<std::uint64_t>{std::uint64_t{1} << 36});
  // The limits are a parameter.
  auto small = limits_for_arch("sm_90");
  small.max_threads_per_block = 256;
  small.max_smem_per_block = 1000;
  small.source = "a small device";
  CHECK(res(R"("grid": [1, 1, 1], "block": [512, 1, 1], "args": [])", "", small) ==
        "launches[0] (kernel 'k'): block 512 x 1 x 1: at most 256 threads per block, and at most 1024 x 1024 x 64 on a "
        "small device");
  CHECK(res(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": 1001, "args": [])", "", small) ==
        "launches[0] (kernel 'k'): 1001 bytes of dynamic shared memory (0 to 1000 on a small device)");
  small.max_block[1] = 4;
  CHECK(res(R"("grid": [1, 1, 1], "block": [1, 8, 1], "args": [])", "", small) ==
        "launches[0] (kernel 'k'): block 1 x 8 x 1: at most 256 threads per block, and at most 1024 x 4 x 64 on a "
        "small device");
  small.max_grid[2] = 3;
  res(R"("grid": [1, 1, 4], "block": [1, 1, 1], "args": [])", "", small);
  CHECK_FALSE(reject_of(one_launch(R"("grid": [1, 1, 3], "block": [1, 1, 1], "args": [])"), test_dims(), small));
  // A default-constructed device_limits admits nothing.
  CHECK(res(R"("grid": [1, 1, 1], "block": [1, 1, 1], "args": [])", "", device_limits{}).find("block 1 x 1 x 1") !=
        std::string::npos);
  // Signature problems anywhere come before resources problems anywhere.
  auto r = reject_of(one_launch(
      R"("grid": [0, 1, 1], "block": [1, 1, 1], "args": []}, {"kernel": "k", "grid": [1, 1, 1], "block": [1, 1, 1], "args": ["nope"])"));
  REQUIRE(r);
  CHECK(r->where == stage::signature);
}

TEST_CASE("launch plan: check_plan_against, each branch") {
  const auto plan = resolve_launch_plan(
      test_problem(), test_dims(),
      R"({"launches": [{"kernel": "a", "grid": [1, 1, 1], "block": [256, 1, 1], "smem": 1024, "args": ["x", "y", "N"]},
                                                        {"kernel": "b", "grid": [1, 1, 1], "block": [128, 2, 1], "args": ["y", "C"]}]})");
  auto good = [] {
    cubin_info info;
    info.sm = 90;
    info.kernels = {kernel("a", 3), kernel("b", 2), kernel("unused", 7)};
    return info;
  };
  CHECK_FALSE(check_plan_against(plan, good()));
  {  // a kernel the cubin lacks
    auto info = good();
    info.kernels.erase(info.kernels.begin() + 1);
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::signature);
    CHECK(r->message ==
          "launches[1] (kernel 'b'): the cubin has no entry point of that name (entry points: a, unused); define it as "
          "extern \"C\" __global__");
  }
  {  // one argument too few, one too many
    auto info = good();
    info.kernels[0].param_sizes.push_back(8);
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::signature);
    CHECK(r->message == "launches[0] (kernel 'a'): the kernel declares 4 parameters, the plan passes 3 arguments");
    info = good();
    info.kernels[1].param_sizes.pop_back();
    r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->message == "launches[1] (kernel 'b'): the kernel declares 1 parameters, the plan passes 2 arguments");
  }
  {  // an int dim
    auto info = good();
    info.kernels[0].param_sizes[2] = 4;
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::signature);
    CHECK(r->message.find("launches[0] (kernel 'a'): parameter 2 is 4 bytes") == 0);
  }
  {  // __launch_bounds__
    auto info = good();
    info.kernels[1].max_threads = 255;
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::resources);
    CHECK(r->message ==
          "launches[1] (kernel 'b'): a block of 256 threads, above the kernel's __launch_bounds__ of 255");
    info.kernels[1].max_threads = 256;
    CHECK_FALSE(check_plan_against(plan, info));
  }
  {  // a required block shape
    auto info = good();
    info.kernels[1].required_block = {128, 2, 1};
    CHECK_FALSE(check_plan_against(plan, info));
    info.kernels[1].required_block = {256, 1, 1};
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::resources);
    CHECK(r->message == "launches[1] (kernel 'b'): block 128 x 2 x 1, but the kernel requires 256 x 1 x 1");
  }
  {  // registers: 255 per thread at most, 65536 per block as the hardware allocates them
    auto info = good();
    info.kernels[0].registers = 256;
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::resources);
    CHECK(r->message == "launches[0] (kernel 'a'): 256 registers per thread (at most 255)");
    info = good();
    info.kernels[0].registers = 255;  // 255 * 32 = 8160 -> 8192 per warp, 8 warps: 65536
    CHECK_FALSE(check_plan_against(plan, info));
    info.kernels[1].registers = 249;  // 249 * 32 = 7968 -> 8192 per warp, 8 warps: 65536
    CHECK_FALSE(check_plan_against(plan, info));
    auto wide = plan;
    wide.launches[0].block[0] = 257;  // 9 warps
    r = check_plan_against(wide, info);
    REQUIRE(r);
    CHECK(r->where == stage::resources);
    CHECK(
        r->message ==
        "launches[0] (kernel 'a'): 255 registers x 257 threads need 73728 registers per block (at most 65536 on sm_90, "
        "allocated per warp in units of 256)");
    info.kernels[0].registers = 224;  // 7168 per warp, 9 warps: 64512
    CHECK_FALSE(check_plan_against(wide, info));
    auto fewer = limits_for_arch("sm_90");  // the register budget is the limits'
    fewer.max_registers_per_block = 32768;
    fewer.source = "a device with half the registers";
    r = check_plan_against(wide, info, fewer);
    REQUIRE(r);
    CHECK(r->message ==
          "launches[0] (kernel 'a'): 224 registers x 257 threads need 64512 registers per block (at most 32768 on a "
          "device with half the registers, allocated per warp in units of 256)");
  }
  {  // static + dynamic shared memory
    auto info = good();
    info.kernels[0].static_smem = 232448 - 1024;
    CHECK_FALSE(check_plan_against(plan, info));
    info.kernels[0].static_smem += 1;
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::resources);
    CHECK(r->message ==
          "launches[0] (kernel 'a'): 231425 bytes of static and 1024 of dynamic shared memory (at most 232448 together "
          "on sm_90)");
    auto more = limits_for_arch("sm_90");
    more.max_smem_per_block = 300000;
    CHECK_FALSE(check_plan_against(plan, info, more));
    r = check_plan_against(plan, info, limits_for_arch("sm_86"));
    REQUIRE(r);
    CHECK(r->message ==
          "launches[0] (kernel 'a'): 231425 bytes of static and 1024 of dynamic shared memory (at most 101376 together "
          "on sm_86)");
  }
  {  // signature in a later launch beats resources in an earlier one
    auto info = good();
    info.kernels[0].registers = 300;
    info.kernels[1].param_sizes[0] = 4;
    auto r = check_plan_against(plan, info);
    REQUIRE(r);
    CHECK(r->where == stage::signature);
  }
}

// ---- device limits: the table, the device, the protocol ------------------------------------------

namespace {

/// What an H200's driver reports (cuDeviceGetAttribute), as the worker sends it.
cuda_protocol::device_info h200() {
  cuda_protocol::device_info d;
  d.present = 1;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.max_threads_per_block = 1024;
  d.max_block[0] = 1024, d.max_block[1] = 1024, d.max_block[2] = 64;
  d.max_grid[0] = 2147483647, d.max_grid[1] = 65535, d.max_grid[2] = 65535;
  d.max_smem_per_block = 49152;
  d.max_smem_per_block_optin = 232448;
  d.max_registers_per_block = 65536;
  d.cluster_launch = 1;
  return d;
}

void same_numbers(device_limits const& a, device_limits const& b) {
  CHECK(a.max_threads_per_block == b.max_threads_per_block);
  for (int d = 0; d < 3; ++d) {
    CHECK(a.max_block[d] == b.max_block[d]);
    CHECK(a.max_grid[d] == b.max_grid[d]);
  }
  CHECK(a.max_smem_per_block == b.max_smem_per_block);
  CHECK(a.max_registers_per_block == b.max_registers_per_block);
  CHECK(a.max_cluster == b.max_cluster);
  CHECK(a.max_scratch_bytes == b.max_scratch_bytes);
}

}  // namespace

TEST_CASE("launch plan device limits: one table with a row for each known architecture") {
  struct expected {
    char const* arch;
    int cc;
    std::int64_t smem, cluster;
    int warps, blocks;           // per SM
    std::int64_t shared_per_sm;  // the largest carve-out
    int sms;                     // of the common part; 0 unknown
  };
  // Opt-in shared memory per block: shared memory per SM less the 1 KiB the driver reserves per block.
  const expected rows[] = {
      {"sm_80", 80, 166912, 1, 64, 32, 167936, 108}, {"sm_86", 86, 101376, 1, 48, 16, 102400, 0},
      {"sm_87", 87, 166912, 1, 48, 16, 167936, 0},   {"sm_89", 89, 101376, 1, 48, 24, 102400, 0},
      {"sm_90", 90, 232448, 8, 64, 32, 233472, 132}, {"sm_90a", 90, 232448, 8, 64, 32, 233472, 132},
      {"sm_100", 100, 232448, 8, 64, 32, 233472, 0}, {"sm_100a", 100, 232448, 8, 64, 32, 233472, 0},
      {"sm_120", 120, 101376, 8, 48, 32, 102400, 0}};
  REQUIRE(std::size(gpu_arch_table) == std::size(rows));
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    auto const& e = rows[i];
    INFO(e.arch);
    CHECK(gpu_arch_table[i].arch == e.arch);
    CHECK(gpu_arch_table[i].compute_capability == e.cc);
    CHECK(find_gpu_arch(e.arch) == &gpu_arch_table[i]);
    // One SM, as the static occupancy reads it (diagnosis.hpp).
    const auto sm = sm_resources_for_arch(e.arch);
    CHECK(sm.arch == e.arch);
    CHECK(sm.compute_capability == e.cc);
    CHECK(sm.max_warps == e.warps);
    CHECK(sm.max_blocks == e.blocks);
    CHECK(sm.registers == 65536);
    CHECK(sm.register_unit == 256);
    CHECK(sm.shared_bytes == e.shared_per_sm);
    CHECK(sm.reserved_shared == 1024);
    CHECK(sm.sm_count == e.sms);
    const auto l = limits_for_arch(e.arch);
    CHECK(l.source == e.arch);
    CHECK(l.max_threads_per_block == 1024);
    CHECK(l.max_block[0] == 1024);
    CHECK(l.max_block[1] == 1024);
    CHECK(l.max_block[2] == 64);
    CHECK(l.max_grid[0] == 2147483647);
    CHECK(l.max_grid[1] == 65535);
    CHECK(l.max_grid[2] == 65535);
    CHECK(l.max_smem_per_block == e.smem);
    CHECK(l.max_registers_per_block == 65536);
    CHECK(l.max_cluster == e.cluster);
    CHECK(l.max_scratch_bytes == std::int64_t{1} << 36);
  }
  // The default the library uses where a caller passes no limits is sm_90's row.
  CHECK(default_arch == "sm_90");
  try {
    (void)resolve_launch_plan(test_problem(), test_dims(),
                              one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": 232449, "args": [])"));
    FAIL("no reject");
  } catch (plan_reject const& r) {
    CHECK(r.message == "launches[0] (kernel 'k'): 232449 bytes of dynamic shared memory (0 to 232448 on sm_90)");
  }
}

TEST_CASE(
    "launch plan device limits: sm_90's row is what an H200 reports, and the device's limits win over the arch's") {
  const auto table = limits_for_arch("sm_90");
  const auto device = limits_for_device(h200(), "sm_86");  // a device: the problem's arch does not matter
  same_numbers(device, table);
  CHECK(device.source == "NVIDIA H200 (sm_90)");
  // The device's numbers are used as reported, not the table's.
  auto odd = h200();
  odd.max_smem_per_block_optin = 100000;
  odd.max_grid[1] = 1000;
  odd.max_registers_per_block = 32768;
  const auto l = limits_for_device(odd, "sm_90");
  CHECK(l.max_smem_per_block == 100000);
  CHECK(l.max_grid[1] == 1000);
  CHECK(l.max_registers_per_block == 32768);
  auto r =
      reject_of(one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": 100001, "args": [])"), test_dims(), l);
  REQUIRE(r);
  CHECK(r->where == stage::resources);
  CHECK(r->message ==
        "launches[0] (kernel 'k'): 100001 bytes of dynamic shared memory (0 to 100000 on NVIDIA H200 (sm_90))");
  // Clusters only where the driver can launch them.
  odd.cluster_launch = 0;
  CHECK(limits_for_device(odd, "sm_90").max_cluster == 1);
  // No device: the table's row for the problem's arch.
  cuda_protocol::device_info none;
  none.message = "cannot open libcuda.so.1";
  const auto fallback = limits_for_device(none, "sm_86");
  same_numbers(fallback, limits_for_arch("sm_86"));
  CHECK(fallback.source == "sm_86");
  // A device that reports a limit below 1 is not used.
  auto broken = h200();
  broken.max_threads_per_block = 0;
  CHECK_THROWS_AS((void)limits_for_device(broken, "sm_90"), error);
}

TEST_CASE("launch plan device limits: an unknown architecture is refused, naming the known ones") {
  for (char const* arch : {"sm_75", "", "SM_90", "sm_90 ", "compute_90", "sm_9"}) {
    INFO(arch);
    try {
      (void)limits_for_arch(arch);
      FAIL("no error");
    } catch (error const& e) {
      const std::string m = e.what();
      CHECK(m.find("unknown GPU architecture '" + std::string(arch) + "'") == 0);
      CHECK(m.find("knows sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_100a, sm_120") != std::string::npos);
    }
  }
  cuda_protocol::device_info none;
  CHECK_THROWS_AS((void)limits_for_device(none, "sm_75"), error);  // no device, and no row either
}

TEST_CASE("launch plan device limits: a plan that fits sm_90 is refused by sm_86's limits, which the message names") {
  const auto sm90 = limits_for_arch("sm_90"), sm86 = limits_for_arch("sm_86");
  const std::string big =
      one_launch(R"("grid": [1, 1, 1], "block": [256, 1, 1], "smem": 110000, "args": ["x", "y", "N"])");
  CHECK_FALSE(reject_of(big, test_dims(), sm90));
  auto r = reject_of(big, test_dims(), sm86);
  REQUIRE(r);
  CHECK(r->where == stage::resources);
  CHECK(r->message == "launches[0] (kernel 'k'): 110000 bytes of dynamic shared memory (0 to 101376 on sm_86)");
  // At sm_86's limit: accepted.
  CHECK_FALSE(
      reject_of(one_launch(R"("grid": [1, 1, 1], "block": [1, 1, 1], "smem": 101376, "args": [])"), test_dims(), sm86));
  // A cluster: fine on sm_90, none before it.
  const std::string clustered =
      one_launch(R"("grid": [2, 1, 1], "block": [1, 1, 1], "cluster": [2, 1, 1], "args": [])");
  CHECK_FALSE(reject_of(clustered, test_dims(), sm90));
  r = reject_of(clustered, test_dims(), limits_for_arch("sm_80"));
  REQUIRE(r);
  CHECK(r->where == stage::resources);
  CHECK(r->message == "launches[0] (kernel 'k'): cluster 2 x 1 x 1: no thread block clusters on sm_80");
  // Static + dynamic against the cubin: the same plan passes sm_90's check and fails sm_86's.
  const auto plan = resolve_launch_plan(
      test_problem(), test_dims(),
      one_launch(R"("grid": [1, 1, 1], "block": [256, 1, 1], "smem": 90000, "args": ["x", "y", "N"])"), sm86);
  cubin_info info;
  info.sm = 90;
  info.kernels = {kernel("k", 3)};
  info.kernels[0].static_smem = 20000;
  CHECK_FALSE(check_plan_against(plan, info, sm90));
  const auto c = check_plan_against(plan, info, sm86);
  REQUIRE(c);
  CHECK(c->where == stage::resources);
  CHECK(c->message ==
        "launches[0] (kernel 'k'): 20000 bytes of static and 90000 of dynamic shared memory (at most 101376 together "
        "on sm_86)");
}

TEST_CASE("cuda protocol: the device reply round-trips and any other layout is a wire error") {
  auto d = h200();
  d.message = "m";
  const auto back = cuda_protocol::decode_device(cuda_protocol::encode(d));
  CHECK(back.present == 1);
  CHECK(back.message == "m");
  CHECK(back.name == "NVIDIA H200");
  CHECK(back.cc_major == 9);
  CHECK(back.cc_minor == 0);
  CHECK(back.max_threads_per_block == 1024);
  for (int i = 0; i < 3; ++i) {
    CHECK(back.max_block[i] == d.max_block[i]);
    CHECK(back.max_grid[i] == d.max_grid[i]);
  }
  CHECK(back.max_smem_per_block == 49152);
  CHECK(back.max_smem_per_block_optin == 232448);
  CHECK(back.max_registers_per_block == 65536);
  CHECK(back.cluster_launch == 1);
  const auto none = cuda_protocol::decode_device(cuda_protocol::encode(cuda_protocol::device_info{}));
  CHECK(none.present == 0);
  // What an older worker answers to a request type it does not know: an encoded reply.
  cuda_protocol::reply old;
  old.st = cuda_protocol::status::bad_request;
  old.message = "wire: message body ends early";
  CHECK_THROWS_AS((void)cuda_protocol::decode_device(cuda_protocol::encode(old)), wire_error);
  const auto body = cuda_protocol::encode(d);
  CHECK_THROWS_AS((void)cuda_protocol::decode_device(body.substr(0, body.size() - 1)), wire_error);
  CHECK_THROWS_AS((void)cuda_protocol::decode_device(body + "x"), wire_error);
  CHECK(static_cast<std::uint32_t>(cuda_protocol::request::device) >
        static_cast<std::uint32_t>(cuda_protocol::request::time));
}

TEST_CASE("cuda worker: answers the device request, with the driver's limits or the reason there are none") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  worker_process w(find_cuda_worker(), cuda_protocol::role);
  const auto r =
      w.call(static_cast<std::uint32_t>(cuda_protocol::request::device), {}, std::chrono::milliseconds(60000));
  REQUIRE_MESSAGE(r.st == worker_reply::status::reply, r.why);
  CHECK(r.msg.type == static_cast<std::uint32_t>(cuda_protocol::request::device));
  const auto d = cuda_protocol::decode_device(r.msg.body);
  if (!d.present) {
    // No driver or no device (CI): the reason, and the table stands in for the problem's arch.
    MESSAGE("no device: " << d.message);
    CHECK_FALSE(d.message.empty());
    CHECK(limits_for_device(d, "sm_90a").source == "sm_90a");
  } else {
    MESSAGE("device: " << d.name << " (sm_" << d.cc_major << d.cc_minor << ")");
    const auto l = limits_for_device(d, "sm_90");
    // Where the device is an architecture the table knows, the table's row agrees with the driver.
    const std::string arch = "sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor);
    bool known = false;
    for (auto const& row : gpu_arch_table) known = known || row.arch == arch;
    if (known) same_numbers(l, limits_for_arch(arch));
    CHECK(d.max_smem_per_block == 49152);  // the default without the opt-in
  }
  // The worker goes on serving after a device request (the context is created by the first run).
  CHECK(w.running());
#endif
}

// ---- generated input ------------------------------------------------------------------------------

TEST_CASE("launch plan fuzz: well-formed expressions agree with a 128-bit reference") {
  const auto seed = fuzz_seed();
  rng r(seed);
  std::vector<std::pair<std::string, std::int64_t>> symbols = {{"A", 0},          {"B", 1},
                                                               {"C", -1},         {"D", 2},
                                                               {"E", 3},          {"MAX", i64_max},
                                                               {"MIN", i64_min},  {"H", std::int64_t{1} << 32},
                                                               {"S", 3037000500}, {"Q", std::int64_t{1} << 62},
                                                               {"R", 0},          {"N_1", 1000}};
  const auto look = lookup_of(symbols);
  std::size_t counts[5] = {};
  const std::uint64_t n = 450000;
  for (std::uint64_t it = 0; it < n; ++it) {
    symbols[10].second = static_cast<std::int64_t>(r());  // R: any 64-bit value
    expression_generator g(r, symbols);
    const auto e = g.make(1 + static_cast<int>(r.below(r.below(10) == 0 ? 60 : 14)));
    if (e.depth > max_expression_depth) continue;  // the generator keeps depth small; never in practice
    const auto want_out = expected(e);
    const auto [err, v] = run_expression(e.text, look, seed, it);
    ++counts[want_out.kind];
    if (want_out.kind == outcome::value) {
      if (!err.empty() || v != want_out.v)
        FAIL("seed " << seed << ", iteration " << it << ": " << excerpt(e.text) << " must be " << want_out.v << ", got "
                     << (err.empty() ? std::to_string(v) : err));
    } else if (err.find(kind_text(want_out.kind)) == std::string::npos) {
      FAIL("seed " << seed << ", iteration " << it << ": " << excerpt(e.text) << " must fail with '"
                   << std::string(kind_text(want_out.kind)) << "', got " << (err.empty() ? std::to_string(v) : err));
    }
  }
  MESSAGE("expressions: " << counts[0] << " values, " << counts[1] << " overflows, " << counts[2]
                          << " divisions by zero, " << counts[4] << " too long (seed " << seed << ")");
  // The mix must exercise every outcome in earnest.
  CHECK(counts[outcome::value] > n / 4);
  CHECK(counts[outcome::overflow] > n / 20);
  CHECK(counts[outcome::division_by_zero] > n / 50);
}

TEST_CASE("launch plan fuzz: malformed and hostile expressions give a value or kernelbrain::error") {
  const auto seed = fuzz_seed() + 1;
  rng r(seed);
  const std::vector<std::pair<std::string, std::int64_t>> symbols = {
      {"N", 4096}, {"C", 0}, {"X", i64_min}, {"Y", i64_max}};
  const auto look = lookup_of(symbols);
  static char const* const tokens[] = {"0",
                                       "1",
                                       "7",
                                       "42",
                                       "9223372036854775807",
                                       "9223372036854775808",
                                       "99999999999999999999999",
                                       "N",
                                       "C",
                                       "X",
                                       "Y",
                                       "unknown",
                                       "min",
                                       "max",
                                       "ceil_div",
                                       "pow2",
                                       "floor",
                                       "(",
                                       "(",
                                       ")",
                                       ")",
                                       ",",
                                       "+",
                                       "-",
                                       "-",
                                       "*",
                                       "/",
                                       "%",
                                       "!",
                                       "<",
                                       "<=",
                                       ">",
                                       ">=",
                                       "==",
                                       "!=",
                                       "&&",
                                       "||",
                                       "|",
                                       "&",
                                       "=",
                                       "?",
                                       ":",
                                       "[",
                                       "]",
                                       "{",
                                       "}",
                                       "\"",
                                       "'",
                                       "\\",
                                       " ",
                                       "\t",
                                       "\n",
                                       "\x01",
                                       "\x7f",
                                       "\x80",
                                       "\xff",
                                       "\xc3\xa9",
                                       "0x10",
                                       "1e9",
                                       "1.5",
                                       "_",
                                       "__",
                                       "N_"};
  const std::uint64_t n = 250000;
  std::uint64_t values = 0;
  for (std::uint64_t it = 0; it < n; ++it) {
    std::string text;
    std::optional<outcome> want_out;  // when the family has a certain outcome
    // Families by weight (of 20): token soup 8, mutated well-formed 3, nesting of each kind 1 (each
    // deep failure unwinds 65 levels: the costliest case), literals 2, long sums 1, random bytes 3.
    static const int family_of[20] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 4, 5, 6, 7, 7, 8, 9, 9, 9};
    const auto family = family_of[r.below(20)];
    const std::size_t k = 1 + r.below(r.below(5) == 0 ? 5000 : 100);
    switch (family) {
      case 0: {  // token soup
        for (std::size_t t = 0, m = 1 + r.below(60); t < m; ++t) text += tokens[r.below(std::size(tokens))];
        if (r.below(4) == 0) text.push_back('\0');
        break;
      }
      case 3: {  // a well-formed expression with a few bytes changed
        expression_generator g(r, symbols);
        text = g.make(1 + static_cast<int>(r.below(20))).text;
        for (auto m = 1 + r.below(3); m > 0 && !text.empty(); --m) {
          const auto at = r.below(text.size());
          const char c = static_cast<char>(r.below(256));
          if (r.below(2))
            text[at] = c;
          else
            text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
        }
        break;
      }
      case 4: {  // nested parentheses, balanced
        text = repeat("(", k) + "5" + repeat(")", k);
        want_out = text.size() > max_expression_length ? outcome{outcome::too_long, 0}
                   : k > 64                            ? outcome{outcome::too_deep, 0}
                                                       : outcome{outcome::value, 5};
        break;
      }
      case 5: {  // unary chains
        const bool neg = r.below(2);
        text = repeat(neg ? "-" : "!", k) + "3";
        want_out = text.size() > max_expression_length ? outcome{outcome::too_long, 0}
                   : k > 64                            ? outcome{outcome::too_deep, 0}
                   : neg                               ? outcome{outcome::value, k % 2 ? -3 : 3}
                                                       : outcome{outcome::value, k % 2 ? 0 : 1};
        break;
      }
      case 6: {  // nested calls
        text = repeat("max(1, ", k) + "2" + repeat(")", k);
        want_out = text.size() > max_expression_length ? outcome{outcome::too_long, 0}
                   : k > 64                            ? outcome{outcome::too_deep, 0}
                                                       : outcome{outcome::value, 2};
        break;
      }
      case 7: {  // huge literals, with leading zeros sometimes
        text = std::string(r.below(3) == 0 ? r.below(30) : 0, '0');
        for (std::size_t d = 0; d < k; ++d)
          text.push_back(static_cast<char>('0' + (d == 0 ? 1 + r.below(9) : r.below(10))));
        const auto digits = text.size() - text.find_first_not_of('0');
        i128 v = 0;
        if (digits <= 19)
          for (char c : text) v = v * 10 + (c - '0');
        want_out = text.size() > max_expression_length ? outcome{outcome::too_long, 0}
                   : digits > 19 || !fits(v)           ? outcome{outcome::overflow, 0}
                                                       : outcome{outcome::value, static_cast<std::int64_t>(v)};
        break;
      }
      case 8: {  // long flat sums, around the length limit
        const std::size_t terms = 1900 + r.below(300);
        text = "1" + repeat("+1", terms);
        want_out = text.size() > max_expression_length ? outcome{outcome::too_long, 0}
                                                       : outcome{outcome::value, static_cast<std::int64_t>(terms + 1)};
        break;
      }
      default: {  // random bytes
        text.resize(k);
        for (auto& c : text) c = static_cast<char>(r.below(256));
        break;
      }
    }
    const auto [err, v] = run_expression(text, look, seed, it);
    values += err.empty();
    if (want_out) {
      const bool ok = want_out->kind == outcome::value ? err.empty() && v == want_out->v
                                                       : err.find(kind_text(want_out->kind)) != std::string::npos;
      if (!ok)
        FAIL("seed " << seed << ", iteration " << it << ": " << excerpt(text) << " must give "
                     << (want_out->kind == outcome::value ? std::to_string(want_out->v)
                                                          : std::string(kind_text(want_out->kind)))
                     << ", got " << (err.empty() ? std::to_string(v) : err));
    }
  }
  MESSAGE("hostile expressions: " << n << " evaluated, " << values << " gave a value (seed " << seed << ")");
  CHECK(values > 0);
}

TEST_CASE("launch plan fuzz: generated plans resolve as predicted, and check_plan_against too") {
  const auto seed = fuzz_seed() + 2;
  rng r(seed);
  const auto p = test_problem();
  std::size_t plans = 0, signature = 0, resources = 0, checked = 0, check_rejects = 0;
  const std::uint64_t n = 300000;
  for (std::uint64_t it = 0; it < n; ++it) {
    auto dims = test_dims(1 + static_cast<std::int64_t>(r.below(100000)), 1 + static_cast<std::int64_t>(r.below(512)),
                          static_cast<std::int64_t>(r()));
    if (r.below(100) < 5) dims["N"] = r.below(2) ? i64_max : std::int64_t{1} << 40;
    plan_generator gen(r, dims);
    auto g = gen.make();
    const auto m = r.below(100);
    if (m < 35) mutate(r, g);
    g.text = json::serialize(g.doc);
    if (m >= 35 && m < 50) mutate_text(r, g);
    auto context = [&] {
      return "seed " + std::to_string(seed) + ", iteration " + std::to_string(it) + ": plan " + excerpt(g.text) + ": ";
    };
    std::optional<cuda_protocol::plan> got;
    std::optional<plan_reject> rejected;
    try {
      got = resolve_launch_plan(p, dims, g.text);
    } catch (plan_reject const& e) {
      rejected = e;
    } catch (std::exception const& e) {
      FAIL(context() << "an exception other than plan_reject escaped: " << e.what());
    } catch (...) {
      FAIL(context() << "a non-std exception escaped");
    }
    if (rejected) {
      if (rejected->where != stage::signature && rejected->where != stage::resources)
        FAIL(context() << "a reject of stage " << to_string(rejected->where) << ": " << rejected->message);
      if (rejected->message.empty() || rejected->message.find("unusable launch plan (unexpected") != std::string::npos)
        FAIL(context() << "an unforeseen exception became the reject: " << rejected->message);
      (rejected->where == stage::signature ? signature : resources)++;
    } else {
      ++plans;
    }
    const bool ok = g.expect == want::typed || (g.expect == want::plan && got && same_plan(*got, g.plan)) ||
                    (g.expect == want::signature && rejected && rejected->where == stage::signature &&
                     rejected->message.find(g.message_part) != std::string::npos) ||
                    (g.expect == want::resources && rejected && rejected->where == stage::resources);
    if (!ok)
      FAIL(context() << "expected " << std::string(want_text(g.expect))
                     << (g.message_part.empty() ? "" : " mentioning '" + g.message_part + "'") << ", got "
                     << (rejected ? std::string(to_string(rejected->where)) + " reject: " + rejected->message
                                  : std::string(got ? "a plan" : "nothing")));
    if (got) {
      // Whatever resolves has sane values (also for corrupted texts that happened to resolve).
      for (auto const& l : got->launches)
        for (int d = 0; d < 3; ++d)
          if (l.grid[d] < 1 || l.block[d] < 1 || l.cluster[d] < 1 || l.smem < 0)
            FAIL(context() << "a resolved plan with a value out of range");
      const auto [info, want_check] = cubin_for(r, *got);
      std::optional<plan_reject> c;
      try {
        c = check_plan_against(*got, info);
      } catch (...) {
        FAIL(context() << "check_plan_against threw");
      }
      ++checked;
      check_rejects += c.has_value();
      if (c.has_value() != want_check.has_value() || (c && c->where != *want_check))
        FAIL(context() << "check_plan_against: expected "
                       << (want_check ? std::string(to_string(*want_check)) : std::string("no reject")) << ", got "
                       << (c ? std::string(to_string(c->where)) + ": " + c->message : std::string("no reject")));
    }
  }
  MESSAGE("plans: " << n << " generated, " << plans << " resolved, " << signature << " signature and " << resources
                    << " resources rejects; check_plan_against on " << checked << ", " << check_rejects
                    << " rejects (seed " << seed << ")");
  CHECK(plans > n / 5);
  CHECK(signature > n / 5);
  CHECK(resources > n / 20);
  CHECK(check_rejects > checked / 10);
}
