// Body of kernelbrain/io/problem_loader.hpp: problem.json to kernelbrain::problem with Boost.JSON.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/core/diagnosis_tags.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/parameters.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/detail/identifier.hpp"
#include "kernelbrain/detail/json_reader.hpp"
#include "kernelbrain/io/problem_loader.hpp"

namespace kernelbrain {
namespace detail::problem_json {

namespace json = boost::json;

using json_reader::kind_name;
using json_reader::line_column;

// ---- reading fields ------------------------------------------------------------------------------

inline std::string str(json::string const& s) { return std::string(s.data(), s.size()); }

/// "a.b", "a[3]": the path of a field, as messages print it.
inline std::string member(std::string const& where, std::string_view key) {
  return where.empty() ? std::string(key) : where + "." + std::string(key);
}
inline std::string element(std::string const& where, std::size_t i) { return where + "[" + std::to_string(i) + "]"; }

inline std::string joined(std::vector<std::string> const& items) {
  std::string out;
  for (auto const& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

/// Reads fields of one problem file; every failure names the file and the field.
class reader {
 public:
  reader(std::filesystem::path dir, std::string file) : dir_(std::move(dir)), file_(std::move(file)) {}

  [[noreturn]] void fail(std::string const& where, std::string const& what) const {
    throw error(file_ + ": " + (where.empty() ? std::string() : where + ": ") + what);
  }

  /// Rejects fields not in `known`: a typo must not be silently ignored.
  void only(json::object const& o, std::string const& where, std::initializer_list<std::string_view> known) const {
    if (auto unknown = json_reader::unknown_field(o, known); !unknown.empty()) fail(where, unknown);
  }

  json::value const& required(json::object const& o, std::string const& where, std::string_view key) const {
    if (auto const* v = json_reader::find(o, key)) return *v;
    fail(where, "missing field '" + std::string(key) + "'");
  }
  static json::value const* optional(json::object const& o, std::string_view key) { return json_reader::find(o, key); }

  json::object const& object(json::value const& v, std::string const& where) const {
    if (!v.is_object()) fail(where, "expected an object, found " + std::string(kind_name(v)));
    return v.get_object();
  }
  json::array const& array(json::value const& v, std::string const& where) const {
    if (!v.is_array()) fail(where, "expected an array, found " + std::string(kind_name(v)));
    return v.get_array();
  }
  std::string string(json::value const& v, std::string const& where, bool allow_empty = false) const {
    if (!v.is_string()) fail(where, "expected a string, found " + std::string(kind_name(v)));
    auto s = str(v.get_string());
    if (s.empty() && !allow_empty) fail(where, "must not be empty");
    return s;
  }
  std::string identifier(json::value const& v, std::string const& where) const {
    auto s = string(v, where);
    if (!is_identifier(s)) fail(where, "'" + s + "' is not a name (letters, digits and _, not starting with a digit)");
    return s;
  }
  double number(json::value const& v, std::string const& where) const {
    if (const auto d = json_reader::to_double(v)) return *d;
    fail(where, "expected a number, found " + std::string(kind_name(v)));
  }
  double non_negative(json::value const& v, std::string const& where) const {
    const double d = number(v, where);
    if (!(d >= 0) || !std::isfinite(d)) fail(where, "must be a finite number >= 0");
    return d;
  }
  std::int64_t integer(json::value const& v, std::string const& where) const {
    if (const auto i = json_reader::to_int64(v)) return *i;
    if (v.is_uint64()) fail(where, "integer out of range");
    fail(where, "expected an integer, found " + std::string(kind_name(v)));
  }

  /// The text of a file named by the problem, relative to the problem directory.
  std::string file(json::value const& v, std::string const& where) const {
    const auto name = string(v, where);
    const auto path = dir_ / std::filesystem::path(name);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      fail(where, "file '" + name + "' not found (looked for " + path.string() + ")");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) fail(where, "cannot read file '" + name + "' (" + path.string() + ")");
    return std::move(text).str();
  }

  /// Checks that `text` parses and names only `symbols`; `what` lists them for the message.
  void check_expression(std::string const& text, std::string const& where, std::vector<std::string> const& symbols,
                        std::string_view what) const {
    const symbol_lookup look = [&symbols](std::string_view n) -> std::optional<std::int64_t> {
      if (std::find(symbols.begin(), symbols.end(), n) != symbols.end()) return 1;
      return std::nullopt;
    };
    try {
      (void)evaluate_expression(text, look);
    } catch (error const& e) {
      const std::string msg = e.what();
      // "1" for every symbol may divide by zero where real values would not: only syntax and names matter here.
      if (msg.find("division by zero") != std::string::npos) return;
      fail(where, msg + " (" + std::string(what) + ": " + joined(symbols) + ")");
    }
  }
  std::int64_t evaluate(std::string const& text, std::string const& where, symbol_lookup const& look,
                        std::string const& context) const {
    try {
      return evaluate_expression(text, look);
    } catch (error const& e) {
      fail(where, std::string(e.what()) + " " + context);
    }
  }

 private:
  std::filesystem::path dir_;
  std::string file_;
};

// ---- the problem ---------------------------------------------------------------------------------

inline std::vector<std::string> dims(reader const& r, json::object const& top) {
  auto const& arr = r.array(r.required(top, "", "dims"), "dims");
  if (arr.empty()) r.fail("dims", "must name at least one dim");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    auto name = r.identifier(arr[i], element("dims", i));
    if (std::find(out.begin(), out.end(), name) != out.end())
      r.fail(element("dims", i), "dim '" + name + "' is listed twice");
    out.push_back(std::move(name));
  }
  return out;
}

inline std::vector<tensor_spec> tensors(reader const& r, json::object const& top, std::string_view key, bool inputs,
                                        std::vector<std::string> const& dim_names, std::vector<std::string>& taken) {
  const std::string where(key);
  auto const& arr = r.array(r.required(top, "", key), where);
  if (!inputs && arr.empty()) r.fail(where, "a kernel needs at least one output");
  std::vector<tensor_spec> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto at = element(where, i);
    auto const& o = r.object(arr[i], at);
    if (inputs)
      r.only(o, at, {"name", "size", "distribution", "dtype", "adversarial"});
    else
      r.only(o, at, {"name", "size", "dtype"});
    tensor_spec t;
    t.name = r.identifier(r.required(o, at, "name"), member(at, "name"));
    if (std::find(taken.begin(), taken.end(), t.name) != taken.end())
      r.fail(member(at, "name"), "a tensor named '" + t.name + "' is already declared");
    taken.push_back(t.name);
    t.size = r.string(r.required(o, at, "size"), member(at, "size"));
    r.check_expression(t.size, member(at, "size"), dim_names, "the dims are");
    if (auto const* d = reader::optional(o, "dtype")) {
      t.dtype = r.string(*d, member(at, "dtype"));
      if (t.dtype != "f32" && t.dtype != "f16") r.fail(member(at, "dtype"), "'" + t.dtype + "' is not one of f32, f16");
    }
    if (inputs) {
      if (auto const* d = reader::optional(o, "distribution")) {
        t.distribution = r.string(*d, member(at, "distribution"));
        if (t.distribution != "normal" && t.distribution != "uniform" && t.distribution != "positive")
          r.fail(member(at, "distribution"), "'" + t.distribution + "' is not one of normal, uniform, positive");
      }
      t.adversarial = default_cases(t.distribution);
      if (auto const* a = reader::optional(o, "adversarial")) {
        const auto where_a = member(at, "adversarial");
        auto const& cases = r.array(*a, where_a);
        t.adversarial.clear();
        for (std::size_t c = 0; c < cases.size(); ++c) {
          const auto text = r.string(cases[c], element(where_a, c));
          auto parsed = input_case::parse(text);
          if (!parsed)
            r.fail(element(where_a, c), "'" + text +
                                            "' is not a case (scaled[:x], offset[:x], constant[:x], ties[:x>0], "
                                            "spikes[:x], signed_zeros)");
          if (t.distribution == "positive" && parsed->what == input_case::kind::signed_zeros)
            r.fail(element(where_a, c), "signed_zeros would give a 'positive' input zeros");
          t.adversarial.push_back(*parsed);
        }
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// `min_dim`: the backend's backend_traits::min_dim (CUDA: 0, a dim may be a padding or an offset there).
inline std::vector<shape> shapes(reader const& r, json::object const& top, std::vector<std::string> const& dim_names,
                                 std::int64_t min_dim = 1) {
  auto const& arr = r.array(r.required(top, "", "shapes"), "shapes");
  if (arr.empty()) r.fail("shapes", "a problem needs at least one shape");
  std::vector<shape> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto at = element("shapes", i);
    auto const& o = r.object(arr[i], at);
    r.only(o, at, {"name", "dims", "tier", "weight"});
    shape s;
    s.name = r.string(r.required(o, at, "name"), member(at, "name"));
    for (std::size_t j = 0; j < out.size(); ++j)
      if (out[j].name == s.name)
        r.fail(member(at, "name"), "duplicate shape name '" + s.name + "' (also shapes[" + std::to_string(j) + "])");
    const auto dims_at = member(at, "dims");
    auto const& d = r.object(r.required(o, at, "dims"), dims_at);
    for (auto const& kv : d) {
      const std::string k(kv.key().data(), kv.key().size());
      if (std::find(dim_names.begin(), dim_names.end(), k) == dim_names.end())
        r.fail(dims_at, "unknown dim '" + k + "' (the dims are " + joined(dim_names) + ")");
      const auto v = r.integer(kv.value(), member(dims_at, k));
      if (v < min_dim) r.fail(member(dims_at, k), "must be >= " + std::to_string(min_dim));
      s.dims[k] = v;
    }
    for (auto const& n : dim_names)
      if (!s.dims.count(n)) r.fail(dims_at, "missing dim '" + n + "'");
    s.tier = r.string(r.required(o, at, "tier"), member(at, "tier"));
    if (std::find(problem_tiers.begin(), problem_tiers.end(), s.tier) == problem_tiers.end()) {
      std::vector<std::string> names(problem_tiers.begin(), problem_tiers.end());
      r.fail(member(at, "tier"), "unknown tier '" + s.tier + "' (known: " + joined(names) + ")");
    }
    if (auto const* w = reader::optional(o, "weight")) {
      if (!is_timed_shape(s)) r.fail(member(at, "weight"), "a 'wide' shape is never timed: it has no weight");
      s.weight = r.number(*w, member(at, "weight"));
      if (!(s.weight > 0) || !std::isfinite(s.weight)) r.fail(member(at, "weight"), "must be a finite number > 0");
    }
    out.push_back(std::move(s));
  }
  if (std::none_of(out.begin(), out.end(), [](shape const& s) { return is_timed_shape(s); }))
    r.fail("shapes", "every shape is of tier 'wide', which is never timed: add a benchmark shape");
  return out;
}

/// Evaluates every tensor size (must be >= 1) and the cost model at every shape.
inline void evaluate_shapes(reader const& r, json::object const& top, problem& p) {
  auto const& cost_v = r.required(top, "", "cost");
  auto const& cost = r.object(cost_v, "cost");
  r.only(cost, "cost", {"bytes", "flops"});
  const auto bytes = r.string(r.required(cost, "cost", "bytes"), "cost.bytes");
  const auto flops = r.string(r.required(cost, "cost", "flops"), "cost.flops");
  r.check_expression(bytes, "cost.bytes", p.dim_order, "the dims are");
  r.check_expression(flops, "cost.flops", p.dim_order, "the dims are");
  for (auto& s : p.shapes) {
    const symbol_lookup look = [&s](std::string_view n) -> std::optional<std::int64_t> {
      auto it = s.dims.find(std::string(n));
      if (it == s.dims.end()) return std::nullopt;
      return it->second;
    };
    const std::string context = "at shape '" + s.name + "'";
    for (auto const* list : {&p.inputs, &p.outputs}) {
      const std::string key = list == &p.inputs ? "inputs" : "outputs";
      for (std::size_t i = 0; i < list->size(); ++i) {
        const auto at = member(element(key, i), "size");
        if (r.evaluate((*list)[i].size, at, look, context) < 1)
          r.fail(at, "\"" + (*list)[i].size + "\" is not >= 1 " + context);
      }
    }
    const auto b = r.evaluate(bytes, "cost.bytes", look, context);
    const auto f = r.evaluate(flops, "cost.flops", look, context);
    if (b < 0) r.fail("cost.bytes", "is negative " + context);
    if (f < 0) r.fail("cost.flops", "is negative " + context);
    s.bytes = static_cast<double>(b);
    s.flops = static_cast<double>(f);
  }
}

/// `text` (a hand-written JSON file, comments allowed) as a JSON value; errors name `shown` and the line.
inline json::value parse_document(std::string const& text, std::string const& shown) {
  json::parse_options opts;
  opts.allow_comments = true;  // a problem file is written by hand: let it explain itself
  json_reader::document_parser parser(opts, json_reader::repeated_keys::refused);
  auto doc = parser.parse(text);
  if (!doc) {
    auto const& dup = parser.repeated_key();
    const auto at = line_column(text, parser.stop());
    if (!dup.empty()) throw error(shown + ": duplicate key '" + dup + "' at " + at + ": each field may appear once");
    throw error(shown + ": not valid JSON: " + parser.error().message() + " at " + at);
  }
  // The parser stops after one complete value; anything but white space after it is a mistake.
  if (const auto rest = parser.trailing(text); rest != std::string::npos)
    throw error(shown + ": not valid JSON: text after the end of the object at " + line_column(text, rest));
  return std::move(*doc);
}

/// "[1024, 4096]".
inline std::string sizes_text(std::vector<std::int64_t> const& sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

/// One line of Python: no newline, no backslash, no triple quote (it is pasted into generated code).
inline bool one_line_python(std::string const& s) {
  return !s.empty() && s.find_first_of("\n\r\\") == std::string::npos && s.find("\"\"\"") == std::string::npos;
}

/// The PyTorch declaration: an object (fields below, inline in problem.json at "pytorch") or the name of
/// a JSON file in the problem directory holding that object. Checked against the problem: every tensor
/// has a view and every view names a tensor, each size is an expression over the dims, every view's
/// element count is the tensor's size at every shape, and every dim appears in a view or is an attribute.
inline pytorch_declaration pytorch_decl(reader const& r, json::value const& v, problem const& p,
                                        std::filesystem::path const& dir) {
  pytorch_declaration d;
  std::optional<json::value> named;
  std::optional<reader> file_reader;
  std::string base = "pytorch";
  if (v.is_string()) {
    const auto name = r.string(v, "pytorch");
    const auto text = r.file(v, "pytorch");
    const auto path = (dir / std::filesystem::path(name)).lexically_normal();
    const std::string shown = path.string() + " (problem.json's \"pytorch\")";
    named = parse_document(text, shown);
    file_reader.emplace(dir, shown);
    base.clear();
    d.file = path.string();
  } else {
    d.file = (dir / std::filesystem::path(problem_file_name)).string();
  }
  reader const& fr = file_reader ? *file_reader : r;
  auto const& o = fr.object(named ? *named : v, base);
  fr.only(o, base, {"function", "expression", "compat", "views", "attributes", "note"});
  d.function = fr.identifier(fr.required(o, base, "function"), member(base, "function"));
  d.expression = fr.string(fr.required(o, base, "expression"), member(base, "expression"));
  if (!one_line_python(d.expression))
    fr.fail(member(base, "expression"), "must be one line of Python (no newline, backslash or triple quote)");
  if (auto const* n = reader::optional(o, "note")) d.note = fr.string(*n, member(base, "note"), true);
  if (auto const* c = reader::optional(o, "compat")) {
    const auto at = member(base, "compat");
    auto const& co = fr.object(*c, at);
    fr.only(co, at, {"requires", "otherwise"});
    d.compat_requires = fr.string(fr.required(co, at, "requires"), member(at, "requires"));
    d.compat_expression = fr.string(fr.required(co, at, "otherwise"), member(at, "otherwise"));
    if (!d.compat_requires.starts_with("torch.") ||
        d.compat_requires.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
            std::string::npos)
      fr.fail(member(at, "requires"), "'" + d.compat_requires + "' is not an attribute path torch.<name>[.<name>...]");
    if (!one_line_python(d.compat_expression))
      fr.fail(member(at, "otherwise"), "must be one line of Python (no newline, backslash or triple quote)");
  }

  std::vector<std::string> tensor_names;
  for (auto const* list : {&p.inputs, &p.outputs})
    for (auto const& t : *list) tensor_names.push_back(t.name);
  const auto views_at = member(base, "views");
  auto const& vo = fr.object(fr.required(o, base, "views"), views_at);
  std::vector<std::string> covered;
  for (auto const& [key, value] : vo) {
    const std::string name(key);
    const auto at = member(views_at, name);
    if (std::find(tensor_names.begin(), tensor_names.end(), name) == tensor_names.end())
      fr.fail(at, "'" + name + "' is no input or output of the problem (they are " + joined(tensor_names) + ")");
    auto const& arr = fr.array(value, at);
    if (arr.empty()) fr.fail(at, "must list the tensor's sizes");
    std::vector<std::string> sizes;
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto ei = element(at, i);
      if (arr[i].is_string()) {
        sizes.push_back(fr.string(arr[i], ei));
        fr.check_expression(sizes.back(), ei, p.dim_order, "the dims are");
        const symbol_lookup mark = [&covered](std::string_view n) -> std::optional<std::int64_t> {
          covered.emplace_back(n);
          return 1;
        };
        try {
          (void)evaluate_expression(sizes.back(), mark);
        } catch (error const&) {  // division by zero at all-ones: the names were recorded already
        }
      } else if (auto const n = json_reader::to_int64(arr[i]); n && *n >= 1) {
        sizes.push_back(std::to_string(*n));
      } else {
        fr.fail(ei,
                "expected a size expression (a string) or an integer >= 1, found " + std::string(kind_name(arr[i])));
      }
    }
    d.views.emplace_back(name, std::move(sizes));
  }
  for (auto const& n : tensor_names)
    if (!d.view(n)) fr.fail(views_at, "no view for tensor '" + n + "'");

  if (auto const* a = reader::optional(o, "attributes")) {
    const auto at = member(base, "attributes");
    for (auto const& [key, value] : fr.object(*a, at)) {
      const std::string dim(key);
      const auto ad = member(at, dim);
      if (std::find(p.dim_order.begin(), p.dim_order.end(), dim) == p.dim_order.end())
        fr.fail(ad, "'" + dim + "' is not a dim of the problem (the dims are " + joined(p.dim_order) + ")");
      const auto arg = fr.identifier(value, ad);
      if (std::find(tensor_names.begin(), tensor_names.end(), arg) != tensor_names.end() ||
          std::any_of(d.attributes.begin(), d.attributes.end(), [&](auto const& x) { return x.second == arg; }))
        fr.fail(ad, "'" + arg + "' is already the name of a tensor or another attribute");
      d.attributes.emplace_back(dim, arg);
      covered.push_back(dim);
    }
  }
  for (auto const& dim : p.dim_order)
    if (std::find(covered.begin(), covered.end(), dim) == covered.end())
      fr.fail(views_at, "dim '" + dim + "' appears in no view and is no attribute: calls that differ only in '" + dim +
                            "' could not be told apart");

  // Every view's element count is the tensor's size at every shape.
  for (auto const& s : p.shapes) {
    const symbol_lookup look = [&s](std::string_view n) -> std::optional<std::int64_t> {
      auto it = s.dims.find(std::string(n));
      if (it == s.dims.end()) return std::nullopt;
      return it->second;
    };
    for (auto const* list : {&p.inputs, &p.outputs})
      for (auto const& t : *list) {
        const auto at = member(views_at, t.name) + " at shape '" + s.name + "'";
        std::vector<std::int64_t> sizes;
        std::int64_t product = 1;
        for (auto const& e : *d.view(t.name)) {
          const auto n = fr.evaluate(e, at, look, "");
          if (n < 1) fr.fail(at, "size '" + e + "' is " + std::to_string(n));
          sizes.push_back(n);
          if (__builtin_mul_overflow(product, n, &product)) fr.fail(at, "the element count overflows");
        }
        const auto expected = fr.evaluate(t.size, at, look, "");
        if (product != expected)
          fr.fail(at, sizes_text(sizes) + " has " + std::to_string(product) +
                          " elements, but problem.json's size of '" + t.name + "' (" + t.size + ") is " +
                          std::to_string(expected));
      }
  }
  return d;
}

/// Every ${NAME} in `text`, in order of first use.
inline std::vector<std::string> placeholders(std::string const& text) {
  std::vector<std::string> out;
  for (std::size_t i = text.find("${"); i != std::string::npos; i = text.find("${", i + 2)) {
    const auto close = text.find('}', i + 2);
    if (close == std::string::npos) break;
    auto name = text.substr(i + 2, close - i - 2);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  return out;
}

/// Spaces at most this large are enumerated at load time to prove the constraints admit some point
/// and never fail to evaluate; larger ones are only checked for syntax and names.
inline constexpr std::uint64_t enumerate_limit = 100000;

/// A hint's "diagnosis_moves": {TAG: {PARAM: +1 or -1, ...}, ...}, TAG a kernel finding of the
/// diagnosis vocabulary, PARAM one of the hint's `params`.
inline std::vector<diagnosis_move> diagnosis_moves(reader const& r, json::value const& v, std::string const& at,
                                                   std::vector<std::string> const& params) {
  auto const& o = r.object(v, at);
  if (o.empty()) r.fail(at, "lists no tag (leave the field out for none)");
  std::vector<diagnosis_move> out;
  for (auto const& kv : o) {
    const std::string tag(kv.key().data(), kv.key().size());
    const auto tat = member(at, tag);
    if (tag == diagnosis_names::profiler_unavailable)
      r.fail(tat, "'" + tag + "' says only why there is no profile, nothing about the kernel: no move answers it");
    if (!is_diagnosis_tag(tag)) {
      std::string near;
      std::size_t best = 3;  // a near miss: edit distance 1 or 2, the nearest
      for (auto known : diagnosis_vocabulary)
        if (const auto dist = json_reader::edit_distance(tag, known); dist < best) {
          best = dist;
          near = " (did you mean '" + std::string(known) + "'?)";
        }
      r.fail(tat, "'" + tag + "' is not a diagnosis tag" + near + " (the tags: docs/profiling.md)");
    }
    auto const& po = r.object(kv.value(), tat);
    if (po.empty()) r.fail(tat, "lists no parameter (leave the tag out)");
    for (auto const& pv : po) {
      const std::string param(pv.key().data(), pv.key().size());
      const auto pat = member(tat, param);
      if (std::find(params.begin(), params.end(), param) == params.end())
        r.fail(pat, "'" + param + "' is not one of the hint's parameters (" + joined(params) + ")");
      const auto dir = r.integer(pv.value(), pat);
      if (dir != 1 && dir != -1)
        r.fail(pat, "direction " + std::to_string(dir) + ": must be +1 (a larger value) or -1 (a smaller one)");
      out.push_back({tag, param, static_cast<int>(dir)});
    }
  }
  return out;
}

inline expert_hint hint(reader const& r, json::value const& v, std::string const& at,
                        std::vector<std::string> const& dim_names) {
  auto const& o = r.object(v, at);
  r.only(o, at, {"name", "prose", "template", "launch", "parameters", "constraints", "diagnosis_moves", "provenance"});
  expert_hint h;
  h.name = r.string(r.required(o, at, "name"), member(at, "name"));
  h.prose = r.string(r.required(o, at, "prose"), member(at, "prose"));
  // Where an adopted kernel came from (kernelbrain adopt): any object, kept as text, never read by the search.
  if (auto const* prov = reader::optional(o, "provenance"))
    h.provenance = json::serialize(r.object(*prov, member(at, "provenance")));
  auto const* tmpl = reader::optional(o, "template");
  auto const* launch = reader::optional(o, "launch");
  auto const* params = reader::optional(o, "parameters");
  auto const* cons = reader::optional(o, "constraints");
  auto const* moves = reader::optional(o, "diagnosis_moves");
  if (moves && !params)
    r.fail(member(at, "diagnosis_moves"), "diagnosis moves need 'parameters' (a move steps a template parameter)");
  if (!tmpl && !launch && !params) {
    if (cons) r.fail(member(at, "constraints"), "constraints need 'parameters'");
    return h;  // prose only: a hint for an LLM
  }
  kernel_template t;
  if (tmpl) t.source = r.file(*tmpl, member(at, "template"));
  if (launch) {
    // Text, or structured JSON (a CUDA launch plan: kernels, grid, block, ...) kept as its JSON text:
    // the backend that owns the plan parses it after the placeholders are substituted.
    if (launch->is_object() || launch->is_array())
      t.launch = json::serialize(*launch);
    else
      t.launch = r.string(*launch, member(at, "launch"));
  }
  std::vector<std::string> names;
  if (params) {
    const auto pat = member(at, "parameters");
    auto const& po = r.object(*params, pat);
    if (po.empty()) r.fail(pat, "lists no parameter (leave the field out for a fixed kernel)");
    for (auto const& kv : po) {
      const std::string name(kv.key().data(), kv.key().size());
      const auto vat = member(pat, name);
      if (!is_identifier(name)) r.fail(vat, "'" + name + "' is not a name (letters, digits and _)");
      if (std::find(dim_names.begin(), dim_names.end(), name) != dim_names.end())
        r.fail(vat, "'" + name + "' is already a dim; give the parameter another name");
      auto const& arr = r.array(kv.value(), vat);
      if (arr.empty()) r.fail(vat, "has no values");
      parameter_def d{name, {}};
      for (std::size_t i = 0; i < arr.size(); ++i) {
        const auto x = r.integer(arr[i], element(vat, i));
        if (std::find(d.values.begin(), d.values.end(), x) != d.values.end())
          r.fail(element(vat, i), "value " + std::to_string(x) + " is listed twice");
        d.values.push_back(x);
      }
      names.push_back(name);
      t.space.params.push_back(std::move(d));
    }
  }
  // The template and its parameters must agree: an unknown ${NAME} would reach the compiler
  // unsubstituted, and an unused parameter would make equal candidates look different.
  if (!t.source.empty() || !t.launch.empty()) {
    const auto in_source = placeholders(t.source);
    const auto in_launch = placeholders(t.launch);
    auto used = in_source;
    used.insert(used.end(), in_launch.begin(), in_launch.end());
    for (auto const& n : used)
      if (std::find(names.begin(), names.end(), n) == names.end()) {
        const bool src = std::find(in_source.begin(), in_source.end(), n) != in_source.end();
        r.fail(member(at, src ? "template" : "launch"),
               "uses ${" + n + "}, which is not one of its parameters" +
                   (names.empty() ? std::string(" (it has none)") : " (" + joined(names) + ")"));
      }
    for (auto const& n : names)
      if (std::find(used.begin(), used.end(), n) == used.end())
        r.fail(member(member(at, "parameters"), n),
               "is used by neither the template nor the launch plan (no ${" + n + "})");
  }
  if (cons) {
    const auto cat = member(at, "constraints");
    if (!params) r.fail(cat, "constraints need 'parameters'");
    auto const& arr = r.array(*cons, cat);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto c = r.string(arr[i], element(cat, i));
      r.check_expression(c, element(cat, i), names, "the parameters are");
      t.space.constraints.push_back(std::move(c));
    }
  }
  if (moves) h.diagnosis_moves = diagnosis_moves(r, *moves, member(at, "diagnosis_moves"), names);
  if (const auto n = t.space.cardinality(); n > 0 && n <= enumerate_limit) {
    bool any = false;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto p = t.space.at(i);
      const auto look = p.lookup();
      bool ok = true;
      for (std::size_t c = 0; c < t.space.constraints.size() && ok; ++c)
        ok =
            r.evaluate(t.space.constraints[c], element(member(at, "constraints"), c), look, "at " + p.to_string()) != 0;
      any = any || ok;
    }
    if (!any) r.fail(member(at, "constraints"), "admit no point of the parameter space");
  }
  h.templ = std::move(t);
  return h;
}

inline problem parse(reader const& r, json::value const& doc, std::filesystem::path const& dir) {
  if (!doc.is_object()) r.fail("", "the top level must be an object, found " + std::string(kind_name(doc)));
  auto const& top = doc.get_object();
  r.only(top, "",
         {"name", "backend", "signature", "description", "dims", "inputs", "outputs", "shapes", "tolerance", "cost",
          "machine", "reference", "seed", "catalogue", "precision", "arch", "nvrtc_check", "pytorch"});
  problem p;
  if (auto const* d = reader::optional(top, "description")) p.description = r.string(*d, "description", true);
  p.name = r.string(r.required(top, "", "name"), "name");
  p.backend = r.string(r.required(top, "", "backend"), "backend");
  std::vector<std::string> file_backends;
  for (auto const& n : backends().names())
    if (backends().traits(n).problem_files) file_backends.push_back(n);
  if (std::find(file_backends.begin(), file_backends.end(), p.backend) == file_backends.end())
    r.fail("backend", "unknown backend '" + p.backend + "' (known: " + joined(file_backends) + ")");
  p.signature = r.string(r.required(top, "", "signature"), "signature");
  p.dim_order = dims(r, top);
  std::vector<std::string> taken;
  p.inputs = tensors(r, top, "inputs", true, p.dim_order, taken);
  p.outputs = tensors(r, top, "outputs", false, p.dim_order, taken);
  p.shapes = shapes(r, top, p.dim_order, backends().traits(p.backend).min_dim);
  evaluate_shapes(r, top, p);

  auto const& tol = r.object(r.required(top, "", "tolerance"), "tolerance");
  r.only(tol, "tolerance", {"rtol", "atol"});
  p.tol.rtol = r.non_negative(r.required(tol, "tolerance", "rtol"), "tolerance.rtol");
  p.tol.atol = r.non_negative(r.required(tol, "tolerance", "atol"), "tolerance.atol");

  if (auto const* m = reader::optional(top, "machine")) {
    auto const& mo = r.object(*m, "machine");
    r.only(mo, "machine", {"bytes_per_second", "flops_per_second"});
    if (auto const* b = reader::optional(mo, "bytes_per_second"))
      p.machine.bytes_per_second = r.non_negative(*b, "machine.bytes_per_second");
    if (auto const* f = reader::optional(mo, "flops_per_second"))
      p.machine.flops_per_second = r.non_negative(*f, "machine.flops_per_second");
  }

  if (auto const* pr = reader::optional(top, "precision")) {
    const auto v = r.string(*pr, "precision");
    if (v != "fp32" && v != "tf32" && v != "3xtf32" && v != "fp16")
      r.fail("precision", "'" + v + "' is not one of fp32, tf32, 3xtf32, fp16");
    p.options["precision"] = v;
  }
  if (auto const* ar = reader::optional(top, "arch")) {
    const auto v = r.string(*ar, "arch");
    if (v != "sm_90" && v != "sm_90a")
      r.fail("arch", "'" + v + "' is not one of sm_90, sm_90a (sm_90a: Hopper-only instructions such as wgmma)");
    p.options["arch"] = v;
  }
  if (auto const* nc = reader::optional(top, "nvrtc_check")) {
    auto const& no = r.object(*nc, "nvrtc_check");
    r.only(no, "nvrtc_check", {"max_spill_bytes", "max_registers"});
    for (char const* k : {"max_spill_bytes", "max_registers"})
      if (auto const* v = reader::optional(no, k))
        p.options[std::string("nvrtc_check.") + k] = std::to_string(r.integer(*v, member("nvrtc_check", k)));
  }
  {
    auto const& rv = r.required(top, "", "reference");
    if (rv.is_object()) {
      // CUDA: {"source": file, "launch": launch plan (no parameters)}.
      auto const& ro = rv.get_object();
      r.only(ro, "reference", {"source", "launch"});
      p.reference_source = r.file(r.required(ro, "reference", "source"), "reference.source");
      auto const& lv = r.required(ro, "reference", "launch");
      if (!lv.is_object())
        r.fail("reference.launch", "expected an object (a launch plan), found " + std::string(kind_name(lv)));
      p.reference_launch = json::serialize(lv);
      if (!placeholders(p.reference_launch).empty())
        r.fail("reference.launch", "a reference launch plan takes no ${PARAM} placeholders");
    } else {
      p.reference_source = r.file(rv, "reference");
    }
  }
  if (auto const* s = reader::optional(top, "seed")) p.seed_source = r.file(*s, "seed");
  if (auto const* t = reader::optional(top, "pytorch")) p.pytorch = pytorch_decl(r, *t, p, dir);

  if (auto const* c = reader::optional(top, "catalogue")) {
    auto const& arr = r.array(*c, "catalogue");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto h = hint(r, arr[i], element("catalogue", i), p.dim_order);
      for (std::size_t j = 0; j < p.catalogue.size(); ++j)
        if (p.catalogue[j].name == h.name)
          r.fail(member(element("catalogue", i), "name"),
                 "duplicate hint name '" + h.name + "' (also catalogue[" + std::to_string(j) + "])");
      p.catalogue.push_back(std::move(h));
    }
  }
  try {
    p.validate();
  } catch (error const& e) {
    r.fail("", e.what());
  }
  return p;
}

}  // namespace detail::problem_json

problem load_problem(std::filesystem::path const& where) {
  namespace pj = detail::problem_json;
  namespace json = boost::json;
  std::error_code ec;
  std::filesystem::path dir = where;
  if (std::filesystem::is_regular_file(where, ec)) dir = where.parent_path();
  if (dir.empty()) dir = ".";
  dir = std::filesystem::absolute(dir, ec).lexically_normal();
  if (ec) dir = where;
  const auto file = dir / std::filesystem::path(problem_file_name);
  const std::string shown = file.string();
  if (!std::filesystem::is_directory(dir, ec))
    throw error(shown + ": problem directory " + dir.string() + " does not exist");
  if (!std::filesystem::is_regular_file(file, ec))
    throw error(shown + ": not found: a problem directory must hold a problem.json (see docs/problem-format.md)");

  std::string text;
  {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    if (!in) throw error(shown + ": cannot read the file");
    text = std::move(buf).str();
  }

  const auto doc = pj::parse_document(text, shown);
  auto p = pj::parse(pj::reader(dir, shown), doc, dir);
  p.directory = dir.string();
  return p;
}

}  // namespace kernelbrain
