// kernelbrain export: the best kernel of each tuned shape (from a journal or a best.json) as a standalone
// CUDA source with a C++ header, and as a PyTorch package (docs/export.md). This file reads the input,
// loads the problem and its PyTorch declaration (problem.json "pytorch"), chooses and resolves the kernels
// (export_model), and writes the files that export_cuda.cpp and export_torch.cpp generate, with a README and a
// manifest.
#include "kernelbrain/export/export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/launch_plan.hpp>
#include <kernelbrain/backends/registry.hpp>
#include <kernelbrain/core/expr.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kernelbrain::exporting {

std::string api_name(export_model const& m) { return "kb_" + m.prob.name; }

std::vector<std::string> nvcc_arch_flags(std::string const& arch) {
  const std::string digits = arch.substr(3);  // "90a"
  return {"-gencode", "arch=compute_" + digits + ",code=" + arch};
}

capability required_capability(std::string const& arch) {
  // sm_<major><minor>[a]: "a" targets run on exactly that capability; plain ones on later minors of it too.
  capability c;
  std::string digits = arch.substr(3);
  if (!digits.empty() && digits.back() == 'a') {
    c.exact = true;
    digits.pop_back();
  }
  const int n = std::stoi(digits);
  c.major = n / 10;
  c.minor = n % 10;
  return c;
}

std::string sizes_text(std::vector<std::int64_t> const& sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string number_text(double v) { return fmt::format("{}", v); }

std::string fill(std::string const& text, std::vector<std::pair<std::string, std::string>> const& values) {
  std::string out;
  out.reserve(text.size() + 1024);
  std::size_t pos = 0;
  while (true) {
    const auto at = text.find("@@", pos);
    if (at == std::string::npos) break;
    const auto end = text.find("@@", at + 2);
    if (end == std::string::npos) throw error("export template: an unmatched @@");
    const std::string key = text.substr(at + 2, end - at - 2);
    auto it = std::find_if(values.begin(), values.end(), [&](auto const& kv) { return kv.first == key; });
    if (it == values.end()) throw error("export template: no value for @@" + key + "@@");
    out.append(text, pos, at - pos);
    out += it->second;
    pos = end + 2;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

std::string call_text(export_model const& m, tuned_shape const& t) {
  std::string s;
  for (std::size_t i = 0; i < m.tensors.size(); ++i)
    s += (i ? (i == m.inputs ? " -> " : ", ") : "") + m.tensors[i].name + " " + sizes_text(t.sizes[i]);
  for (std::size_t a = 0; a < m.desc.attributes.size(); ++a)
    s += fmt::format(", {}={}", m.desc.attributes[a].second, t.attributes[a]);
  return s;
}

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

/// What the input or the problem's files get wrong (told apart from a kernelbrain::error of the library,
/// which load_description wraps with where it happened).
struct input_error : error {
  using error::error;
};

/// The kernel chosen for one shape, before its plan is resolved.
struct chosen {
  std::size_t shape = 0;
  std::string candidate, family, origin, params, source, launch;
  std::optional<double> speedup, median, reference;
  std::optional<double> eager, compile;  ///< PyTorch's medians at the shape, where the run measured them
};

// ---- reading the input ----------------------------------------------------------------------------------

std::string read_text(fs::path const& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error(fmt::format("cannot read '{}'", file.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The file as a best.json object ({"kernels": [...]}), or nullopt when it is not one (a journal).
std::optional<json::object> as_best_json(std::string const& text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  auto& o = v.as_object();
  if (!o.contains("kernels")) return std::nullopt;
  return std::move(o);
}

std::string params_text(parameters const& p) {
  std::string s;
  for (auto const& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

/// The problem: --problem, else the input's directory hint (best.json's problem_dir, when it exists), else its
/// name, looked up among the CUDA problems first. Refuses a problem that is not a CUDA one.
problem export_problem(export_request const& o, std::string const& name, std::string const& dir_hint) {
  fs::path dir;
  if (!o.problem.empty()) {
    dir = backends().problem_directory(o.problem, "cuda");
  } else if (!dir_hint.empty() && fs::is_directory(dir_hint)) {
    dir = dir_hint;
  } else if (!name.empty()) {
    dir = backends().problem_directory(name, "cuda");
  } else {
    throw input_error(fmt::format("'{}' names no problem: give --problem DIR_OR_NAME", o.input));
  }
  problem prob = load_problem(dir);
  if (!backends().traits_of(prob).exports)
    throw input_error(fmt::format(
        "problem '{}' ({}) is a {} problem: only CUDA problems can be exported (their kernels are CUDA sources)",
        prob.name, prob.directory, prob.backend));
  if (!name.empty() && name != prob.name)
    throw input_error(fmt::format("'{}' was tuned for problem '{}', but the problem found ({}) is '{}'", o.input, name,
                                  prob.directory, prob.name));
  return prob;
}

/// The best kernel of each benchmark shape in a journal: what tune's per_shape_best observer keeps (the
/// lowest median at that shape among the candidates that passed the top rung).
std::vector<chosen> from_journal(journal_contents const& jc, problem const& prob, std::string const& file) {
  if (!jc.reference)
    throw input_error(fmt::format("journal '{}' has no baseline line: the run never got to measure anything", file));
  if (jc.reference->seconds.size() != prob.shapes.size())
    throw input_error(fmt::format(
        "journal '{}' has reference timings for {} shapes but problem '{}' ({}) has {}: the run was tuned with "
        "--focus or the problem changed since; export from the run's --best-out file instead",
        file, jc.reference->seconds.size(), prob.name, prob.directory, prob.shapes.size()));
  const std::string ladder = jc.header.ladder.substr(0, jc.header.ladder.find('/'));
  const auto rungs = static_cast<std::size_t>(std::count(ladder.begin(), ladder.end(), ',')) + 1;
  const std::size_t top = rungs - 1;
  const std::string top_name = ladder.substr(ladder.rfind(',') == std::string::npos ? 0 : ladder.rfind(',') + 1);

  std::map<std::uint64_t, candidate const*> content;
  for (auto const& je : jc.events)
    if (je.cand) content[je.cand->id.value] = &*je.cand;

  struct best {
    candidate_id id;
    double median = 0;
  };
  std::map<std::size_t, best> per_shape;
  for (auto const& out : jc.outcomes) {
    if (out.rung != top || !out.passed()) continue;
    for (auto const& t : out.m.timings) {
      if (t.shape >= prob.shapes.size())
        throw input_error(fmt::format("journal '{}': an outcome times shape {}, but problem '{}' has {} shapes", file,
                                      t.shape, prob.name, prob.shapes.size()));
      if (is_correctness_shape(prob.shapes[t.shape])) continue;
      auto it = per_shape.find(t.shape);
      if (it == per_shape.end() || t.stats.median < it->second.median)
        per_shape[t.shape] = best{out.id, t.stats.median};
    }
  }
  if (per_shape.empty())
    throw input_error(fmt::format(
        "journal '{}': no candidate passed the top rung ('{}', rung {} of {}) at a benchmark shape of '{}': "
        "nothing to export",
        file, top_name, top + 1, rungs, prob.name));
  std::vector<chosen> picks;
  for (auto const& [shape, b] : per_shape) {
    auto it = content.find(b.id.value);
    if (it == content.end())
      throw input_error(
          fmt::format("journal '{}': candidate {} passed the top rung but no 'proposed' event holds its "
                      "source (a journal cut short?)",
                      file, b.id.str()));
    auto const& c = *it->second;
    chosen k;
    k.shape = shape;
    k.candidate = c.id.str();
    k.family = c.family;
    k.origin = c.origin;
    k.params = params_text(c.params);
    k.source = c.source;
    k.launch = c.launch;
    k.median = b.median;
    k.reference = jc.reference->seconds[shape];
    if (b.median > 0) k.speedup = *k.reference / b.median;
    if (auto const& pt = jc.reference->pytorch; pt && pt->measured())
      if (auto const* s = pt->at_index(shape)) {
        if (s->eager_seconds > 0) k.eager = s->eager_seconds;
        if (s->compile_seconds > 0) k.compile = s->compile_seconds;
      }
    picks.push_back(std::move(k));
  }
  return picks;
}

std::string string_field(json::object const& o, std::string_view key, std::string const& where, bool required) {
  auto const* v = o.if_contains(key);
  if (!v || v->is_null()) {
    if (required) throw input_error(fmt::format("{}: no '{}'", where, key));
    return {};
  }
  if (!v->is_string()) throw input_error(fmt::format("{}: '{}' is not a string", where, key));
  return std::string(v->as_string());
}

/// The kernels of a best.json, one per benchmark shape.
std::vector<chosen> from_best(json::object const& doc, problem const& prob, std::string const& file) {
  auto const& kv = doc.at("kernels");
  if (!kv.is_array()) throw input_error(fmt::format("'{}': 'kernels' is not an array", file));
  std::vector<chosen> picks;
  std::set<std::size_t> seen;
  std::size_t index = 0;
  for (auto const& v : kv.as_array()) {
    const std::string where = fmt::format("'{}': kernels[{}]", file, index++);
    if (!v.is_object()) throw input_error(where + ": not an object");
    auto const& k = v.as_object();
    const std::string shape_name = string_field(k, "shape", where, true);
    std::size_t shape = 0;
    try {
      shape = prob.shape_index(shape_name);
    } catch (error const& e) {
      throw input_error(where + ": " + e.what());
    }
    if (is_correctness_shape(prob.shapes[shape])) continue;
    if (!seen.insert(shape).second)
      throw input_error(fmt::format("{}: shape '{}' has a kernel already", where, shape_name));
    chosen c;
    c.shape = shape;
    c.source = string_field(k, "source", where, true);
    if (c.source.empty()) throw input_error(where + ": 'source' is empty");
    auto const* launch = k.if_contains("launch");
    if (!launch || launch->is_null()) throw input_error(where + ": no 'launch'");
    c.launch = launch->is_string() ? std::string(launch->as_string()) : json::serialize(*launch);
    c.candidate = string_field(k, "candidate", where, false);
    c.family = string_field(k, "family", where, false);
    c.origin = string_field(k, "origin", where, false);
    if (auto const* p = k.if_contains("params"); p && p->is_object()) {
      for (auto const& [name, value] : p->as_object())
        c.params += (c.params.empty() ? "" : " ") + std::string(name) + "=" + json::serialize(value);
    }
    if (auto const* s = k.if_contains("speedup_vs_reference"); s && s->is_number()) c.speedup = s->to_number<double>();
    picks.push_back(std::move(c));
  }
  if (picks.empty())
    throw input_error(
        fmt::format("'{}' holds no kernel for a benchmark shape of '{}': nothing to export", file, prob.name));
  std::sort(picks.begin(), picks.end(), [](chosen const& a, chosen const& b) { return a.shape < b.shape; });
  return picks;
}

// ---- the PyTorch declaration ---------------------------------------------------------------------------

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  auto ok = [](char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
  };
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!ok(s[i], i == 0)) return false;
  return true;
}

/// `s` made safe for the generated files' comments, strings and docstrings: printable ASCII, no quote or
/// backslash (each other byte becomes '?'). For the free text the input carries (families, origins, paths).
std::string plain(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u > 0x7e || c == '"' || c == '\\' || c == '`' || c == '|') ? '?' : c;
  }
  return out;
}

/// Python and C++ keywords, and the names the generated code uses itself: a tensor, an attribute or the
/// function alias may be none of them.
bool reserved_name(std::string_view s) {
  static const std::set<std::string_view> names = {
      // Python
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
      "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
      "not", "or", "pass", "raise", "return", "try", "while", "with", "yield", "print", "len", "int", "tuple",
      // C++
      "alignas", "alignof", "auto", "bool", "case", "catch", "char", "const", "constexpr", "decltype", "default",
      "delete", "do", "double", "enum", "explicit", "extern", "float", "friend", "goto", "inline", "long", "mutable",
      "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "typedef", "typename", "union",
      "unsigned", "using", "virtual", "void", "volatile", "std", "dim3",
      // the generated code's own
      "torch", "F", "math", "ctypes", "os", "sys", "forward", "reference", "dispatch", "build", "library_path", "TUNED",
      "REQUIRED_ARCH", "PROBLEM", "tensor", "dtype", "is_tuned", "workspace_bytes", "workspace", "workspace_size",
      "stream", "required_arch", "tuned_shapes", "tuned_shape", "f32", "f16"};
  return names.count(s) > 0 || s.starts_with("kb_") || s.starts_with("_");
}

std::int64_t evaluate_at(std::string const& text, shape const& s) {
  return evaluate_expression(text, [&](std::string_view name) -> std::optional<std::int64_t> {
    auto it = s.dims.find(std::string(name));
    if (it == s.dims.end()) return std::nullopt;
    return it->second;
  });
}

/// `prob`'s PyTorch declaration (problem.json's "pytorch", checked by the loader against the problem's
/// tensors, dims and shapes) as the export uses it, with the checks only the generated code needs: every
/// name is usable in C++ and Python and none is a keyword or a name the generated code uses itself.
description load_description(problem const& prob) {
  if (!prob.pytorch)
    throw input_error(fmt::format(
        "problem '{}' declares no PyTorch computation (problem.json's \"pytorch\", {}): what its kernels mean "
        "in PyTorch terms (the tensors' logical shapes, the PyTorch expression) is not described, so it cannot be "
        "exported (docs/problem-format.md)",
        prob.name, (fs::path(prob.directory) / "problem.json").string()));
  auto const& decl = *prob.pytorch;
  description d;
  d.file = decl.file;
  const std::string where = d.file.string();
  d.function = decl.function;
  d.pytorch = decl.expression;
  d.note = decl.note;
  d.compat_requires = decl.compat_requires;
  d.compat_pytorch = decl.compat_expression;
  for (auto const& [name, sizes] : decl.views) d.views[name] = sizes;
  d.attributes = decl.attributes;
  if (reserved_name(d.function))
    throw input_error(fmt::format("{}: function '{}' is not a usable Python name", where, d.function));
  if (plain(d.compat_requires) != d.compat_requires) throw input_error(where + ": compat.requires is not plain text");
  if (!is_identifier(prob.name))
    throw input_error(
        fmt::format("problem '{}': its name is not usable as a C++ namespace and Python package name "
                    "(letters, digits and _)",
                    plain(prob.name)));
  for (auto const& s : prob.shapes)
    if (s.name.empty() || plain(s.name) != s.name)
      throw input_error(
          fmt::format("problem '{}': shape name '{}' is not plain printable text (no quotes, "
                      "backslashes, backquotes or |)",
                      prob.name, plain(s.name)));
  for (auto const* list : {&prob.inputs, &prob.outputs})
    for (auto const& t : *list)
      if (!is_identifier(t.name) || reserved_name(t.name))
        throw input_error(fmt::format("{}: tensor '{}' of problem '{}' is not usable as a C++ and Python argument name",
                                      where, t.name, prob.name));
  for (auto const& [dim, arg] : d.attributes)
    if (reserved_name(arg))
      throw input_error(fmt::format("{}: attributes.{}: '{}' is a name the generated code uses itself or a keyword",
                                    where, dim, arg));
  return d;
}

// ---- the model ------------------------------------------------------------------------------------------

bool word_char(char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); }

/// `text` with every whole-word `from` replaced by `to`; also tells how many there were.
std::string replace_word(std::string const& text, std::string const& from, std::string const& to, std::size_t& count) {
  std::string out;
  out.reserve(text.size() + 64);
  std::size_t pos = 0;
  count = 0;
  while (true) {
    const auto at = text.find(from, pos);
    if (at == std::string::npos) break;
    const bool left = at == 0 || !word_char(text[at - 1]);
    const bool right = at + from.size() >= text.size() || !word_char(text[at + from.size()]);
    out.append(text, pos, at - pos);
    if (left && right) {
      out += to;
      ++count;
    } else {
      out += from;
    }
    pos = at + from.size();
  }
  out.append(text, pos, std::string::npos);
  return out;
}

/// Every macro name a source #defines, in order of first definition.
std::vector<std::string> defined_macros(std::string const& source) {
  std::vector<std::string> out;
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 6, "define") != 0) continue;
    i = line.find_first_not_of(" \t", i + 6);
    if (i == std::string::npos) continue;
    std::size_t j = i;
    while (j < line.size() && word_char(line[j])) ++j;
    const std::string name = line.substr(i, j - i);
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

export_model build_model(problem prob, description desc, std::vector<chosen> const& picks, std::string source) {
  export_model m;
  m.prob = std::move(prob);
  m.desc = std::move(desc);
  m.source = std::move(source);
  auto const& p = m.prob;
  auto it = p.options.find("arch");
  m.arch = it != p.options.end() ? it->second : std::string(default_arch);
  const device_limits limits = limits_for_arch(m.arch);

  for (auto const* list : {&p.inputs, &p.outputs})
    for (auto const& t : *list) {
      tensor_arg a;
      a.name = t.name;
      a.output = list == &p.outputs;
      a.dtype = t.dtype;
      a.view = m.desc.views.at(t.name);
      a.offset = m.total_rank;
      m.total_rank += a.view.size();
      m.tensors.push_back(std::move(a));
    }
  m.inputs = p.inputs.size();

  std::map<std::vector<std::int64_t>, std::string> keys;  // input sizes + attributes -> shape
  for (auto const& k : picks) {
    auto const& s = p.shapes[k.shape];
    tuned_shape t;
    t.name = s.name;
    t.dims = s.dims;
    t.speedup = k.speedup;
    t.median_seconds = k.median;
    t.reference_seconds = k.reference;
    t.eager_seconds = k.eager;
    t.compile_seconds = k.compile;
    t.candidate = plain(k.candidate);
    t.family = plain(k.family);
    t.origin = plain(k.origin);
    t.params = plain(k.params);
    std::vector<std::int64_t> key;
    for (std::size_t i = 0; i < m.tensors.size(); ++i) {
      std::vector<std::int64_t> sizes;
      for (auto const& e : m.tensors[i].view) sizes.push_back(evaluate_at(e, s));
      if (i < m.inputs) key.insert(key.end(), sizes.begin(), sizes.end());
      t.sizes.push_back(std::move(sizes));
    }
    for (auto const& [dim, name] : m.desc.attributes) {
      t.attributes.push_back(s.dims.at(dim));
      key.push_back(s.dims.at(dim));
    }
    if (auto [at, fresh] = keys.emplace(key, s.name); !fresh)
      throw input_error(
          fmt::format("shapes '{}' and '{}' of '{}' have the same input sizes and attributes: a call "
                      "could not choose between their kernels",
                      at->second, s.name, p.name));

    detail::cuda_protocol::plan plan;
    try {
      plan = resolve_launch_plan(p, s.dims, k.launch, limits);
    } catch (plan_reject const& r) {
      throw input_error(fmt::format("candidate {} at shape '{}': its launch plan does not resolve: {}", k.candidate,
                                    s.name, r.message));
    }
    std::uint64_t offset = 0;
    for (auto bytes : plan.scratch) {
      t.scratch_offsets.push_back(offset);
      t.scratch_bytes.push_back(bytes);
      offset += (bytes + 255) / 256 * 256;
    }
    t.workspace = offset;
    for (auto const& l : plan.launches) {
      launch_step st;
      st.kernel = l.kernel;
      for (int i = 0; i < 3; ++i) {
        st.grid[i] = l.grid[i];
        st.block[i] = l.block[i];
        st.cluster[i] = l.cluster[i];
      }
      st.smem = l.smem;
      for (std::size_t a = 0; a + 1 < l.args.size(); a += 2) {
        launch_arg arg;
        arg.buffer = l.args[a] == static_cast<std::int64_t>(detail::cuda_protocol::arg_kind::buffer);
        arg.value = arg.buffer ? l.args[a + 1] : s.dims.at(p.dim_order.at(static_cast<std::size_t>(l.args[a + 1])));
        st.args.push_back(arg);
      }
      t.launches.push_back(std::move(st));
    }

    // One block per distinct source; its entry points are every kernel a plan launches from it.
    auto b =
        std::find_if(m.blocks.begin(), m.blocks.end(), [&](kernel_block const& x) { return x.original == k.source; });
    if (b == m.blocks.end()) {
      kernel_block nb;
      nb.index = m.blocks.size();
      nb.original = k.source;
      m.blocks.push_back(std::move(nb));
      b = m.blocks.end() - 1;
    }
    t.block = b->index;
    if (std::find(b->candidates.begin(), b->candidates.end(), k.candidate) == b->candidates.end())
      b->candidates.push_back(k.candidate);
    b->shapes.push_back(s.name);
    for (auto const& l : t.launches) b->entries[l.kernel] = "";
    m.shapes.push_back(std::move(t));
  }

  const std::string api = api_name(m);
  for (auto& b : m.blocks) {
    b.source = b.original;
    for (auto& [kernel, entry] : b.entries) {
      entry = fmt::format("{}_k{}_{}", api, b.index, kernel);
      std::size_t count = 0;
      b.source = replace_word(b.source, kernel, entry, count);
      if (count == 0)
        throw input_error(fmt::format("candidate {}: its launch plan launches '{}', which its source never names",
                                      b.candidates.front(), kernel));
    }
    b.macros = defined_macros(b.source);
  }
  for (auto& t : m.shapes)
    for (auto& l : t.launches) l.entry = m.blocks[t.block].entries.at(l.kernel);
  return m;
}

}  // namespace

// ---- README and manifest --------------------------------------------------------------------------------

std::string speedup_text(std::optional<double> s) { return s ? fmt::format("{:.2f}x", *s) : std::string("-"); }

namespace {

std::string seconds_text(std::optional<double> s) {
  if (!s) return "-";
  if (*s < 1e-3) return fmt::format("{:.1f} us", *s * 1e6);
  return fmt::format("{:.3f} ms", *s * 1e3);
}

}  // namespace

std::string readme(export_model const& m) {
  const std::string api = api_name(m);
  const auto cap = required_capability(m.arch);
  std::string flags;
  for (auto const& f : nvcc_arch_flags(m.arch)) flags += " " + f;
  const auto it = m.prob.options.find("precision");
  const std::string precision = it != m.prob.options.end() ? it->second : "fp32";
  std::string dtypes;
  for (auto const& t : m.tensors) dtypes += fmt::format("{}`{}` {}", dtypes.empty() ? "" : ", ", t.name, t.dtype);

  const bool torch = std::any_of(m.shapes.begin(), m.shapes.end(),
                                 [](tuned_shape const& t) { return t.eager_seconds || t.compile_seconds; });
  auto over = [](std::optional<double> theirs, std::optional<double> mine) -> std::optional<double> {
    if (theirs && mine && *mine > 0) return *theirs / *mine;
    return std::nullopt;
  };
  std::string shapes_table =
      torch ? "| shape | sizes | vs PyTorch eager | vs torch.compile | vs reference | kernel | "
              "median | eager | torch.compile | reference |\n|---|---|---|---|---|---|---|---|---|---|\n"
            : "| shape | sizes | speed-up | kernel | median | reference |\n|---|---|---|---|---|---|\n";
  std::size_t slower_eager = 0, slower_compile = 0;
  for (auto const& t : m.shapes) {
    const auto e = over(t.eager_seconds, t.median_seconds), c = over(t.compile_seconds, t.median_seconds);
    slower_eager += e && *e < 1 ? 1 : 0;
    slower_compile += c && *c < 1 ? 1 : 0;
    const std::string kernel = fmt::format("{} `{}` ({})", t.family.empty() ? "candidate" : t.family, t.candidate,
                                           t.params.empty() ? t.origin : t.params);
    if (torch)
      shapes_table += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", t.name, call_text(m, t),
                                  speedup_text(e), speedup_text(c), speedup_text(t.speedup), kernel,
                                  seconds_text(t.median_seconds), seconds_text(t.eager_seconds),
                                  seconds_text(t.compile_seconds), seconds_text(t.reference_seconds));
    else
      shapes_table += fmt::format("| {} | {} | {} | {} | {} | {} |\n", t.name, call_text(m, t), speedup_text(t.speedup),
                                  kernel, seconds_text(t.median_seconds), seconds_text(t.reference_seconds));
  }
  std::string args;
  for (std::size_t i = 0; i < m.inputs; ++i) args += (args.empty() ? "" : ", ") + m.tensors[i].name;
  for (auto const& [dim, name] : m.desc.attributes) args += fmt::format(", {}={}", name, name);

  std::string r;
  r += fmt::format("# {}: tuned CUDA kernels for `{}`\n\n", api, m.prob.name);
  r += fmt::format("Exported by `kernelbrain export` from {}. Problem: `{}` ({}), precision {}; {}.\n\n", m.source,
                   m.prob.name, m.prob.directory, precision, m.prob.signature);
  if (!m.provenance.empty()) r += m.provenance + "\n\n";
  if (!m.desc.note.empty()) r += m.desc.note + "\n\n";
  r += fmt::format("PyTorch meaning: `{}` with {}.\n\n", m.desc.pytorch, dtypes);
  r += "## What is here\n\n";
  r += fmt::format(
      "- `cuda/{0}.cu`, `cuda/{0}.h`: the kernels as one standalone CUDA source and a C++ API "
      "(namespace `{1}`); `cuda/example.cpp`, a host program using the header; `cuda/Makefile`.\n",
      m.prob.name, api);
  r += fmt::format(
      "- `torch/{0}/`: a Python package (`import {0}`) that calls the kernels through a small shared "
      "library built with nvcc on first use, and PyTorch for every call they were not tuned for.\n",
      api);
  r += "- `manifest.json`: the same facts as this file, for programs.\n\n";
  r += "## Tuned shapes\n\n";
  if (torch) {
    r += "Only these exact sizes run the exported kernels. Speed-ups are over PyTorch eager and torch.compile, "
         "measured by the tuning run on the same device with the same method (an L2 flush before each call, CUDA "
         "events, the median), and over the problem's reference kernel (`reference.cu`); medians of the top rung's "
         "samples, on ";
    r += m.device.empty() ? "the device of the run that wrote the input" : m.device;
    r += ".";
    if (slower_eager > 0 || slower_compile > 0)
      r += fmt::format(
          " **The exported kernels are slower than PyTorch eager at {} and than torch.compile at {} of "
          "the {} shapes**: where they lose, calling PyTorch is the better choice.",
          slower_eager, slower_compile, m.shapes.size());
    r += "\n\n" + shapes_table + "\n";
  } else {
    r += "Only these exact sizes run the exported kernels. Speed-ups are over the problem's reference kernel "
         "(`reference.cu`, not PyTorch: the tuning run did not measure PyTorch), as measured by kernelbrain while "
         "tuning (median of the top rung's samples) on ";
    r += m.device.empty() ? "the device of the run that wrote the input" : m.device;
    r += ".\n\n" + shapes_table + "\n";
  }
  r += fmt::format("{} distinct kernel source{} in all.\n\n", m.blocks.size(), m.blocks.size() == 1 ? "" : "s");
  r += "## Architecture\n\n";
  r += fmt::format(
      "Compiled for `{0}` (nvcc `{1}`): the device must have compute capability {2}.{3}{4}. Tuned on {5}; other "
      "devices of that capability run the kernels correctly, though not necessarily at these speeds. Both the C++ "
      "API and the PyTorch package check the capability before launching.\n\n",
      m.arch, flags.substr(1), cap.major, cap.minor,
      cap.exact ? " exactly" : fmt::format(" (or {}.x above it)", cap.major),
      m.device.empty() ? "the device of the run that wrote the input" : m.device);
  r += "## C++\n\n";
  r += fmt::format(
      "```sh\ncd cuda && make            # {0}.o and ./example (CUDA_HOME=/usr/local/cuda by default)\n"
      "# or by hand:\nnvcc -O3 -std=c++17{1} -c {0}.cu -o {0}.o\n"
      "nvcc -O3 -std=c++17{1} example.cpp {0}.o -o example\n```\n\n",
      m.prob.name, flags);
  r += fmt::format(
      "`#include \"{0}.h\"` and link `{0}.o` (nvcc links the CUDA runtime statically; with another linker add "
      "`-lcudart`). The API, namespace `{1}`: `tensor {{data, dtype, sizes, strides}}` (strides in elements, empty = "
      "contiguous), `is_tuned(...)`, `workspace_bytes(...)` and `forward(inputs..., outputs..., attributes..., "
      "workspace, workspace_bytes, stream)`. forward launches on the stream and returns without synchronising; it "
      "throws `std::invalid_argument` for an untuned shape (the message lists the tuned ones), a wrong rank, dtype "
      "or layout (row-major and dense), a null or not 256-byte-aligned pointer, a missing workspace or a device of "
      "another compute capability, and `std::runtime_error` for a CUDA error (naming the kernel).\n\n",
      m.prob.name, api);
  r += "## PyTorch, and what falls back\n\n";
  r += fmt::format(
      "```python\nimport sys; sys.path.insert(0, \"torch\")  # or copy torch/{0} where Python finds it\n"
      "import {0}\nout = {0}.{1}({2})  # = {0}.forward(...); {0}.reference(...) is the PyTorch expression\n"
      "print({0}.dispatch({2}))  # \"kernel <shape>\" or \"fallback: <why>\"\n```\n\n",
      api, m.desc.function, args);
  r += fmt::format(
      "Forward only: no autograd. A call runs the tuned kernel when its inputs are CUDA tensors of the kernels' "
      "dtypes with exactly a tuned shape's sizes{0}, no input requires grad (with autograd on), and the device has "
      "compute capability {1}.{2}; inputs are made contiguous (and 256-byte aligned), outputs and the workspace are "
      "allocated with torch.empty, and the kernels run on the current stream. Every other call falls back to "
      "`{3}`, as does every call when the library cannot be built or loaded (one warning). "
      "`{4}.dispatch(...)` says which it will be and why.\n\n",
      m.desc.attributes.empty() ? "" : " and attributes", cap.major, cap.minor, m.desc.pytorch, api);
  r += fmt::format(
      "The library (`libkb_{0}-<id>.so`: the .cu plus a C ABI wrapper, loaded with ctypes, so any PyTorch works: "
      "no C++ extension ABI to match) is built on first use with nvcc ($CUDA_HOME/bin, /usr/local/cuda/bin or "
      "PATH) into the package directory, or ~/.cache/kernelbrain where that is read-only; `python3 -m {1} build` "
      "builds it ahead, `{2}=/path/lib.so` uses a prebuilt one. Importing never compiles and needs no GPU.\n\n",
      m.prob.name, api, "KB_" + [&] {
        std::string u = m.prob.name;
        for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        return u;
      }() + "_LIBRARY");
  r += fmt::format(
      "Precision: the kernels compute in this problem's precision ({}). The fallback is PyTorch's own operator, so "
      "PyTorch's precision settings (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, "
      "torch.set_float32_matmul_precision) apply to it and not to the kernels.\n",
      precision);
  return r;
}

std::string manifest(export_model const& m) {
  json::object doc;
  doc["problem"] = m.prob.name;
  doc["problem_dir"] = m.prob.directory;
  doc["api"] = api_name(m);
  doc["arch"] = m.arch;
  doc["build_id"] = m.build_id;
  doc["source"] = m.source_file;
  doc["function"] = m.desc.function;
  doc["pytorch"] = m.desc.pytorch;
  json::array tensors;
  for (auto const& t : m.tensors) {
    json::object o;
    o["name"] = t.name;
    o["output"] = t.output;
    o["dtype"] = t.dtype;
    json::array view;
    for (auto const& e : t.view) view.emplace_back(e);
    o["view"] = std::move(view);
    tensors.push_back(std::move(o));
  }
  doc["tensors"] = std::move(tensors);
  json::array attributes;
  for (auto const& [dim, name] : m.desc.attributes) attributes.push_back(json::object{{"dim", dim}, {"name", name}});
  doc["attributes"] = std::move(attributes);
  json::array shapes;
  for (auto const& t : m.shapes) {
    json::object o;
    o["name"] = t.name;
    json::object dims;
    for (auto const& [k, v] : t.dims) dims[k] = v;
    o["dims"] = std::move(dims);
    json::object sizes;
    for (std::size_t i = 0; i < m.tensors.size(); ++i) {
      json::array a;
      for (auto v : t.sizes[i]) a.emplace_back(v);
      sizes[m.tensors[i].name] = std::move(a);
    }
    o["sizes"] = std::move(sizes);
    json::object attrs;
    for (std::size_t a = 0; a < m.desc.attributes.size(); ++a) attrs[m.desc.attributes[a].second] = t.attributes[a];
    o["attributes"] = std::move(attrs);
    o["speedup_vs_reference"] = t.speedup ? json::value(*t.speedup) : json::value(nullptr);
    o["median_seconds"] = t.median_seconds ? json::value(*t.median_seconds) : json::value(nullptr);
    o["reference_seconds"] = t.reference_seconds ? json::value(*t.reference_seconds) : json::value(nullptr);
    o["pytorch_eager_seconds"] = t.eager_seconds ? json::value(*t.eager_seconds) : json::value(nullptr);
    o["pytorch_compile_seconds"] = t.compile_seconds ? json::value(*t.compile_seconds) : json::value(nullptr);
    o["candidate"] = t.candidate;
    o["family"] = t.family;
    o["origin"] = t.origin;
    o["params"] = t.params;
    o["kernel_block"] = t.block;
    o["workspace_bytes"] = t.workspace;
    json::array launches;
    for (auto const& l : t.launches) {
      json::object lo;
      lo["kernel"] = l.kernel;
      lo["entry"] = l.entry;
      lo["grid"] = json::array{l.grid[0], l.grid[1], l.grid[2]};
      lo["block"] = json::array{l.block[0], l.block[1], l.block[2]};
      lo["cluster"] = json::array{l.cluster[0], l.cluster[1], l.cluster[2]};
      lo["smem"] = l.smem;
      launches.push_back(std::move(lo));
    }
    o["launches"] = std::move(launches);
    shapes.push_back(std::move(o));
  }
  doc["shapes"] = std::move(shapes);
  return json::serialize(doc) + "\n";
}

export_model load_model(export_request const& o) {
  const std::string text = read_text(o.input);
  std::vector<chosen> picks;
  std::optional<problem> prob;
  std::string source, provenance, device;
  if (auto best = as_best_json(text)) {
    std::string name, dir;
    if (auto const* kv = best->if_contains("kernels"); kv && kv->is_array())
      for (auto const& k : kv->as_array()) {
        if (!k.is_object()) continue;
        auto const& ko = k.as_object();
        const std::string n = string_field(ko, "problem", "'" + o.input + "'", false);
        const std::string d = string_field(ko, "problem_dir", "'" + o.input + "'", false);
        if ((!name.empty() && !n.empty() && n != name) || (!dir.empty() && !d.empty() && d != dir))
          throw input_error(
              fmt::format("'{}' holds kernels of several problems ({} and {}): export one problem at a "
                          "time",
                          o.input, name.empty() ? dir : name, n.empty() ? d : n));
        if (!n.empty()) name = n;
        if (!d.empty()) dir = d;
      }
    prob = export_problem(o, name, dir);
    picks = from_best(*best, *prob, o.input);
    source = fmt::format("best.json `{}`", plain(o.input));
  } else {
    journal_contents jc;
    try {
      jc = read_journal(o.input);
    } catch (error const& e) {
      throw input_error(
          fmt::format("'{}' is neither a best.json ({{\"kernels\": [...]}}) nor a journal: {}", o.input, e.what()));
    }
    if (!jc.has_header()) throw input_error(fmt::format("'{}' is an empty journal: nothing to export", o.input));
    auto const& ev = jc.header.evaluator;
    if (auto origin = backends().origin_of_fingerprint(ev); !origin || !origin->exports)
      throw input_error(fmt::format(
          "journal '{}' was written by another backend than cuda (evaluator '{}'): only CUDA kernels can be exported",
          o.input, ev.substr(0, ev.find(';'))));
    prob = export_problem(o, jc.header.problem, "");
    picks = from_journal(jc, *prob, o.input);
    source = fmt::format("journal `{}`", plain(o.input));
    if (auto at = ev.find("device: "); at != std::string::npos)
      device = plain(
          ev.substr(at + 8, ev.find(';', at) == std::string::npos ? std::string::npos : ev.find(';', at) - at - 8));
    provenance = fmt::format("The run: strategy `{}`, seed {}, started {}; evaluator `{}`.", plain(jc.header.strategy),
                             jc.header.seed, plain(jc.date), plain(jc.header.evaluator));
  }
  auto desc = load_description(*prob);
  auto model = build_model(std::move(*prob), std::move(desc), picks, source);
  model.source_file = fs::absolute(o.input).lexically_normal().string();
  model.provenance = provenance;
  model.device = device;

  return model;
}

std::vector<generated_file> package_files(export_model& model) {
  auto files = cuda_files(model);
  std::string cu, header;
  for (auto const& f : files) {
    if (f.path.extension() == ".cu") cu = f.text;
    if (f.path.extension() == ".h") header = f.text;
  }
  for (auto& f : torch_files(model, cu, header)) files.push_back(std::move(f));
  files.push_back({"README.md", readme(model)});
  files.push_back({"manifest.json", manifest(model)});
  return files;
}

// ---- writing --------------------------------------------------------------------------------------------

namespace {

/// DIR made ready: created when missing; an existing non-empty one only with --force, and then the package
/// directory export writes is emptied first (a stale library of an older export must not stay beside it).
void prepare_directory(fs::path const& to, bool force, std::string const& api) {
  std::error_code ec;
  if (fs::exists(to, ec)) {
    if (!fs::is_directory(to)) throw input_error(fmt::format("--to '{}' exists and is not a directory", to.string()));
    if (!fs::is_empty(to) && !force)
      throw input_error(
          fmt::format("--to '{}' exists and is not empty: give --force to write into it (export "
                      "replaces the files it writes and torch/{}/), or choose another directory",
                      to.string(), api));
    if (force) fs::remove_all(to / "torch" / api);
  }
  fs::create_directories(to, ec);
  if (ec) throw input_error(fmt::format("--to '{}': cannot create it: {}", to.string(), ec.message()));
}

void write_file(fs::path const& file, std::string const& text) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw error(fmt::format("cannot write '{}'", file.string()));
}

}  // namespace

void write_package(std::filesystem::path const& to, std::vector<generated_file> const& files, std::string const& api,
                   bool force) {
  prepare_directory(to, force, api);
  for (auto const& f : files) write_file(to / f.path, f.text);
}

}  // namespace kernelbrain::exporting
