// Body of kernelbrain/backends/common/pytorch_baseline.hpp. Included by its header (header-only form) or
// by kernelbrain/src.hpp (separate compilation): see kernelbrain/config.hpp.
#pragma once
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>
#include "kernelbrain/backends/common/pytorch_baseline.hpp"
#include "kernelbrain/backends/common/pytorch_script.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain {

namespace detail::pytorch_run {

namespace json = boost::json;

/// The last `n` lines of `text`, for saying why a run failed.
inline std::string tail_lines(std::string const& text, std::size_t n) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ')) --end;
  std::size_t at = end;
  for (std::size_t seen = 0; at > 0; --at)
    if (text[at - 1] == '\n' && ++seen == n) break;
  return text.substr(at, end - at);
}

inline std::string read_file(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return std::move(s).str();
}

/// The request the script reads: the declaration, and each shape to run with its sizes evaluated.
inline json::object request(problem const& p, pytorch_options const& o, double deadline_seconds) {
  auto const& d = *p.pytorch;
  json::object r;
  r["expression"] = d.expression;
  r["compat_requires"] = d.compat_requires;
  r["compat_expression"] = d.compat_expression;
  json::array inputs, outputs, attributes;
  for (auto const& t : p.inputs)
    inputs.push_back(json::object{{"name", t.name}, {"dtype", t.dtype}, {"distribution", t.distribution}});
  for (auto const& t : p.outputs) outputs.push_back(json::object{{"name", t.name}, {"dtype", t.dtype}});
  for (auto const& [dim, arg] : d.attributes) attributes.push_back(json::array{json::string(dim), json::string(arg)});
  r["inputs"] = std::move(inputs);
  r["outputs"] = std::move(outputs);
  r["attributes"] = std::move(attributes);
  r["precision"] = p.options.count("precision") ? p.options.at("precision") : std::string("fp32");
  r["tolerance"] = json::object{{"rtol", p.tol.rtol}, {"atol", p.tol.atol}};
  r["samples"] = o.samples;
  r["warmup"] = o.warmup;
  r["flush_bytes"] = o.flush_bytes;
  r["compile"] = o.compile;
  r["device"] = o.device;
  r["seed"] = o.seed;
  r["deadline_seconds"] = deadline_seconds;
  // The correctness shape: the first of tier odd (shapes go smallest first; the CUDA gate's adversarial
  // inputs use the same one), else the first of tier smoke. One shape: each costs a torch.compile.
  const bool any_odd = std::any_of(p.shapes.begin(), p.shapes.end(), [](shape const& s) { return s.tier == "odd"; });
  const auto check_at = std::find_if(p.shapes.begin(), p.shapes.end(),
                                     [&](shape const& s) { return s.tier == (any_odd ? "odd" : "smoke"); });
  json::array shapes;
  for (auto const& s : p.shapes) {
    const bool timed = pytorch_timed_shape(s);
    const bool check = check_at != p.shapes.end() && &s == &*check_at;
    if (!timed && !check) continue;
    const symbol_lookup look = [&s](std::string_view n) -> std::optional<std::int64_t> {
      auto it = s.dims.find(std::string(n));
      if (it == s.dims.end()) return std::nullopt;
      return it->second;
    };
    json::object sizes, attrs;
    for (auto const& [tensor, view] : d.views) {
      json::array a;
      for (auto const& e : view) a.push_back(evaluate_expression(e, look));
      sizes[tensor] = std::move(a);
    }
    for (auto const& [dim, arg] : d.attributes) attrs[arg] = s.dims.at(dim);
    shapes.push_back(json::object{{"name", s.name},
                                  {"timed", timed},
                                  {"check", check},
                                  {"sizes", std::move(sizes)},
                                  {"attributes", std::move(attrs)}});
  }
  r["shapes"] = std::move(shapes);
  return r;
}

inline std::string str_of(json::object const& o, char const* key) {
  if (auto const* v = o.if_contains(key); v && v->is_string()) return std::string(v->get_string());
  return {};
}
inline double num_of(json::object const& o, char const* key) {
  if (auto const* v = o.if_contains(key)) {
    if (v->is_double()) return v->get_double();
    if (v->is_int64()) return static_cast<double>(v->get_int64());
    if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  }
  return 0;
}
inline bool bool_of(json::object const& o, char const* key, bool otherwise) {
  if (auto const* v = o.if_contains(key); v && v->is_bool()) return v->get_bool();
  return otherwise;
}

/// The script's result file as a pytorch_timing; throws std::exception when it is not what the script writes.
inline pytorch_timing parse_result(std::string const& text) {
  const auto v = json::parse(text);
  auto const& o = v.as_object();
  pytorch_timing t;
  t.status = str_of(o, "status");
  if (t.status != "measured" && t.status != "unavailable")
    throw std::runtime_error("unknown status '" + t.status + "'");
  t.why = str_of(o, "why");
  t.python = str_of(o, "python");
  t.torch_version = str_of(o, "torch");
  t.cuda_version = str_of(o, "cuda");
  t.driver_version = static_cast<std::int64_t>(num_of(o, "driver"));
  t.device = str_of(o, "device");
  t.settings = str_of(o, "settings");
  t.device_seconds = num_of(o, "device_seconds");
  if (auto const* sv = o.if_contains("shapes"); sv && sv->is_array())
    for (auto const& rv : sv->get_array()) {
      auto const& r = rv.as_object();
      pytorch_shape s;
      s.shape = str_of(r, "name");
      s.eager_seconds = num_of(r, "eager_s");
      s.compile_seconds = num_of(r, "compile_s");
      s.checked = bool_of(r, "checked", false);
      s.eager_ok = bool_of(r, "eager_ok", true);
      s.compile_ok = bool_of(r, "compile_ok", true);
      s.eager_rel_err = num_of(r, "eager_rel_err");
      s.compile_rel_err = num_of(r, "compile_rel_err");
      s.eager_error = str_of(r, "eager_error");
      s.compile_error = str_of(r, "compile_error");
      if (auto e = str_of(r, "error"); !e.empty()) {  // the shape's inputs could not be made
        if (s.eager_error.empty()) s.eager_error = e;
        if (s.compile_error.empty()) s.compile_error = e;
      }
      s.detail = str_of(r, "eager_detail");
      if (auto c = str_of(r, "compile_detail"); !c.empty()) s.detail += (s.detail.empty() ? "" : "; compile: ") + c;
      if (!(std::isfinite(s.eager_seconds) && s.eager_seconds >= 0 && std::isfinite(s.compile_seconds) &&
            s.compile_seconds >= 0))
        throw std::runtime_error("shape '" + s.shape + "' has a time that is not a finite number >= 0");
      t.shapes.push_back(std::move(s));
    }
  return t;
}

/// A fresh private directory for the run's files; removed by the destructor.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    std::error_code ec;
    auto base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "kernelbrain-pytorch-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw error("pytorch baseline: cannot create a directory in " + base.string());
    path = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  scratch_dir(scratch_dir const&) = delete;
  scratch_dir& operator=(scratch_dir const&) = delete;
};

}  // namespace detail::pytorch_run

std::string find_python(pytorch_options const& o, std::string& why) {
  std::string named = o.python;
  std::string from = "pytorch_options::python";
  if (named.empty())
    if (char const* e = std::getenv("KERNELBRAIN_PYTHON"); e && *e) {
      named = e;
      from = "KERNELBRAIN_PYTHON";
    }
  if (named == "none") {
    why = "turned off (" + from + "=none)";
    return {};
  }
  if (named.find('/') != std::string::npos) {
    if (detail::is_executable_file(named)) return named;
    why = from + "='" + named + "' is not an executable file";
    return {};
  }
  // A name (python3 when none is given): looked up on PATH.
  const std::string name = named.empty() ? "python3" : named;
  for (auto const& dir : detail::path_dirs())
    if (!dir.empty() && detail::is_executable_file(dir + "/" + name)) return dir + "/" + name;
  why = named.empty() ? "no python3 on PATH (set KERNELBRAIN_PYTHON to a Python that has torch)"
                      : from + "='" + named + "' is not an executable file on PATH";
  return {};
}

pytorch_timing measure_pytorch(problem const& p, pytorch_options const& o) {
  namespace pr = detail::pytorch_run;
  pytorch_timing t;
  t.status = "unavailable";
  t.samples = o.samples;
  if (!o.enabled) {
    t.why = "turned off";
    return t;
  }
  if (!p.pytorch) {
    t.why = "problem '" + p.name + "' declares no PyTorch computation (problem.json \"pytorch\")";
    return t;
  }
  const auto python = find_python(o, t.why);
  if (python.empty()) return t;
  t.python = python;
  try {
    pr::scratch_dir dir;
    const auto script = dir.path / "pytorch_baseline.py";
    const auto req = dir.path / "request.json";
    const auto res = dir.path / "result.json";
    {
      std::ofstream s(script, std::ios::binary);
      s << detail::pytorch_script;
      std::ofstream r(req, std::ios::binary);
      // The script starts no new shape after 90% of the time it has (the rest is for the one in progress).
      r << boost::json::serialize(pr::request(p, o, 0.9 * o.timeout));
      if (!s || !r) throw error("cannot write " + dir.path.string());
    }
    std::vector<std::string> env = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"};
    if (!o.visible_device.empty()) env.push_back("CUDA_VISIBLE_DEVICES=" + o.visible_device);
    const auto run = detail::run_captured({python, script.string(), req.string(), res.string()},
                                          detail::ceil_millis(o.timeout), 256 * 1024, env);
    t.wall_seconds = run.seconds;
    std::error_code ec;
    if (!std::filesystem::exists(res, ec)) {
      t.status = run.started ? "failed" : "unavailable";
      t.why = !run.started ? "cannot run " + python + ": " + pr::tail_lines(run.output, 2)
              : run.timed_out
                  ? "timed out after " + std::to_string(static_cast<int>(o.timeout)) + " s before any result"
                  : python + " " + detail::describe_wait_status(run.wait_status) + ": " + pr::tail_lines(run.output, 3);
      return t;
    }
    auto got = pr::parse_result(pr::read_file(res));
    for (auto& s : got.shapes) {
      const auto it = std::find_if(p.shapes.begin(), p.shapes.end(), [&](shape const& x) { return x.name == s.shape; });
      if (it == p.shapes.end()) throw error("the result names a shape '" + s.shape + "' the problem does not have");
      s.index = static_cast<std::size_t>(it - p.shapes.begin());
    }
    got.python = python + (got.python.empty() ? "" : " (Python " + got.python + ")");
    got.samples = o.samples;
    got.wall_seconds = run.seconds;
    if (run.timed_out)
      got.why += (got.why.empty() ? "" : "; ") + std::string("stopped at the time limit (") +
                 std::to_string(static_cast<int>(o.timeout)) +
                 " s): the shapes after the last measured one have no times";
    else if (!run.succeeded())
      got.why += (got.why.empty() ? "" : "; ") + python + " " + detail::describe_wait_status(run.wait_status) + ": " +
                 pr::tail_lines(run.output, 3);
    return got;
  } catch (std::exception const& e) {
    t.status = "failed";
    t.why = std::string("the PyTorch run's result could not be read: ") + e.what();
    return t;
  }
}

}  // namespace kernelbrain
