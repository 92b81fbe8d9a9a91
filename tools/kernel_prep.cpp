// kernel_prep: everything bench/side_by_side.py needs about a kernel except running it, done by the
// library, so that the Python side re-implements none of it.
//
// For problem directories and kernels (catalogue templates at their central point, at --point values
// or at seeded random admitted points; each problem's reference; or the entries of a best-kernels JSON
// file, the format `kernelbrain tune --best-out` writes), it
//   - loads each problem with kernelbrain::load_problem (the checks a search applies);
//   - draws and checks points with the template-space code (central_point, random_point, admits,
//     substitute);
//   - compiles each distinct source exactly as the CUDA backend does: `kernelbrain-cuda-worker
//     --compile` with cuda_options' NVRTC options and the problem's "arch" (the evaluator's setup);
//   - reads the cubin (read_cubin), resolves the launch plan at every selected shape
//     (resolve_launch_plan) and checks it against the cubin (check_plan_against);
// and writes OUT/manifest.json plus one OUT/<key>.cubin (and its OUT/<key>.cu) per distinct source.
// A kernel that does not compile or whose plan is rejected at a shape is reported in the manifest
// (its "error", or the plan's "error"), not by the exit status, unless --strict.
//
// With --measure it also times each kernel at each selected shape through the worker
// (kernelbrain::cuda_evaluator::measure: correctness trial, then warm-up and timed calls, events
// around the plan, L2 flushed before every call, median), the numbers bench/side_by_side.py is
// checked against by bench/check_side_by_side_agreement.sh. That needs a GPU; the rest does not.
//
// manifest.json:
//   {"problems": [{"dir", "name", "precision", "arch", "nvrtc_options": [..], "dims": [names in
//                  argument order], "tolerance": {"rtol", "atol"},
//                  "machine": {"bytes_per_second", "flops_per_second"},
//                  "inputs": [{"name", "dtype", "distribution"}], "outputs": [{"name", "dtype"}],
//                  "shapes": [{"name", "tier", "weight", "dims": {NAME: value}, "bytes", "flops",
//                              "input_elements": [..], "output_elements": [..]}]}],   (selected shapes)
//    "kernels": [{"problem": index, "kind": "reference" | "kernel", "family", "params": {NAME: value},
//                 "cubin": "KEY.cubin" (beside the manifest) | null, "error": null | "...",
//                 "shapes": [the selected shapes this kernel is for],
//                 "plans": [{"shape", "error"} |
//                           {"shape", "scratch_bytes": [..],
//                            "launches": [{"kernel", "grid": [x, y, z], "block": [..], "cluster": [..],
//                                          "smem": bytes, "args": [{"buffer": i} | {"dim": NAME, "value": v}]}],
//                            "worker": {"median_ms", "low_ms", "high_ms", "samples_ms": [..]} | {"error"}
//                                      (--measure only)}]}]}
// Buffers are numbered as the backend numbers them: the problem's inputs, then its outputs, then the
// plan's scratch buffers (scratch_bytes, in order).
//
// Usage: kernelbrain_kernel_prep --out DIR [options] PROBLEM_DIR...      (catalogue mode)
//        kernelbrain_kernel_prep --out DIR --kernels FILE.json [options] (best-kernels mode)
// (--help lists the options.)
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/evaluator.hpp"
#include "kernelbrain/backends/cuda/launch_plan.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/rng.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/io/problem_loader.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kb = kernelbrain;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

constexpr char usage[] =
    "usage: kernelbrain_kernel_prep --out DIR [options] PROBLEM_DIR...\n"
    "       kernelbrain_kernel_prep --out DIR --kernels FILE.json [options]\n"
    "Compiles kernels as the CUDA backend does and writes DIR/manifest.json (resolved launch plans per\n"
    "shape) and DIR/<key>.cubin. Kernels (catalogue mode): every template of each problem at its central\n"
    "point, unless --point names points for it.\n"
    "  --out DIR                where to write (created)\n"
    "  --kernels FILE           best-kernels JSON ({\"kernels\": [{problem_dir, source | source_file, launch,\n"
    "                           shape, family, params}]}) instead of catalogue templates\n"
    "  --base DIR               relative problem_dir / source_file in --kernels against DIR (default: .)\n"
    "  --references             also each problem's reference (catalogue mode)\n"
    "  --no-catalogue           no templates (with --references: the references only)\n"
    "  --families A,B           only templates whose name contains one of these\n"
    "  --point P:FAMILY:K=V,..  a point of problem P's templates whose name contains FAMILY (repeatable)\n"
    "  --points-file FILE       --point values, one per line (# comments)\n"
    "  --points-only            with --point: skip templates no --point names\n"
    "  --random-points N        also N seeded random admitted points per template (not with --point)\n"
    "  --seed S                 for --random-points (default 1)\n"
    "  --shapes A,B             only these shapes\n"
    "  --tiers A,B              only shapes of these tiers\n"
    "  --jobs J                 parallel compiles (default: the number of cores)\n"
    "  --worker PATH            kernelbrain-cuda-worker (default: as the CUDA backend finds it)\n"
    "  --compile-timeout S      seconds per compile (default 120)\n"
    "  --measure                also time every kernel at every shape through the worker (needs a GPU)\n"
    "  --samples N, --warmup N  for --measure (default 21 and 1)\n"
    "  --strict                 exit 1 when any kernel fails to compile or any plan is rejected\n"
    "  --quiet                  no progress lines\n";

struct options {
  std::string out_dir;
  std::vector<std::string> dirs;
  std::string kernels_file;
  std::string base_dir = ".";
  bool references = false, catalogue = true, points_only = false;
  std::vector<std::string> families, shapes, tiers, point_specs;
  int random_points = 0;
  std::uint64_t seed = 1;
  int jobs = 0;
  std::string worker;
  double compile_timeout = 120;
  bool measure = false, strict = false, quiet = false;
  int samples = 21, warmup = 1;
};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = std::min(s.find(sep, start), s.size());
    auto item = std::string(s.substr(start, end - start));
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(item.begin());
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::string read_text(fs::path const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw kb::error("cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(fs::path const& path, std::string const& text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out) throw kb::error("cannot write " + path.string());
}

/// "K=V,K=V" (integers).
kb::parameters parse_point(std::string const& text, std::string const& where) {
  kb::parameters p;
  for (auto const& kv : split(text, ',')) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) throw kb::error(where + ": '" + kv + "' is not NAME=VALUE");
    auto name = kv.substr(0, eq);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    try {
      std::size_t used = 0;
      const auto value = std::stoll(kv.substr(eq + 1), &used);
      if (kv.find_first_not_of(' ', eq + 1 + used) != std::string::npos) throw std::invalid_argument("trailing text");
      p.set(name, value);
    } catch (std::exception const&) {
      throw kb::error(where + ": '" + kv + "': the value is not an integer");
    }
  }
  return p;
}

/// The NVRTC options the CUDA backend compiles a problem's kernels with: cuda_options' defaults, with
/// the problem's "arch" as the target (as cuda_evaluator's setup does).
std::vector<std::string> nvrtc_options_for(kb::problem const& p) {
  auto opts = kb::cuda_options{}.nvrtc_options;
  if (auto a = p.options.find("arch"); a != p.options.end()) {
    bool set = false;
    for (auto& o : opts)
      if (o.starts_with("--gpu-architecture=")) {
        o = "--gpu-architecture=" + a->second;
        set = true;
      }
    if (!set) opts.push_back("--gpu-architecture=" + a->second);
  }
  return opts;
}

std::string arch_of(std::vector<std::string> const& opts) {
  for (auto const& o : opts)
    if (o.starts_with("--gpu-architecture=")) return o.substr(std::string_view("--gpu-architecture=").size());
  return "";
}

/// The first line of a compiler log that says "error" (else its first non-empty line): the one line
/// a table row shows.
std::string first_error(std::string const& log) {
  std::istringstream in(log);
  std::string first;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) return line.size() > 300 ? line.substr(0, 300) + "..." : line;
  }
  return first.empty() ? "no output" : first;
}

struct problem_entry {
  kb::problem prob;
  std::vector<std::string> nvrtc;
  std::vector<std::size_t> shapes;                ///< the selected shapes (indices into prob.shapes)
  std::unique_ptr<kb::cuda_evaluator> evaluator;  ///< --measure
};

struct plan_entry {
  std::size_t shape = 0;
  std::string error;
  kb::detail::cuda_protocol::plan plan;
  std::optional<kb::median_ci> worker;  ///< --measure: seconds
  std::vector<double> samples;
  std::string worker_error;
};

struct kernel_entry {
  std::size_t problem = 0;
  bool reference = false;
  std::string family;
  kb::parameters params;
  std::string source, launch;
  std::string only_shape = "*";  ///< --kernels: the entry's "shape"
  std::string key;               ///< compile key (file names)
  std::string error;             ///< compile or cubin error
  std::vector<plan_entry> plans;
};

struct compile_outcome {
  bool ok = false;
  std::string message;
  std::optional<kb::cubin_info> info;
};

bool selected(kb::shape const& s, options const& o) {
  if (!o.shapes.empty() && std::find(o.shapes.begin(), o.shapes.end(), s.name) == o.shapes.end()) return false;
  if (!o.tiers.empty() && std::find(o.tiers.begin(), o.tiers.end(), s.tier) == o.tiers.end()) return false;
  return true;
}

class prep {
 public:
  explicit prep(options o) : opt_(std::move(o)) {}

  int run() {
    fs::create_directories(opt_.out_dir);
    if (!opt_.kernels_file.empty())
      from_kernels_file();
    else
      from_catalogue();
    compile_all();
    resolve_all();
    if (opt_.measure) measure_all();
    const auto manifest = (fs::path(opt_.out_dir) / "manifest.json").string();
    write_text(manifest, json::serialize(to_json()) + "\n");
    std::size_t bad_kernels = 0, bad_plans = 0, plans = 0;
    for (auto const& k : kernels_) {
      bad_kernels += !k.error.empty();
      for (auto const& p : k.plans) {
        ++plans;
        bad_plans += !p.error.empty();
      }
    }
    std::fprintf(stderr,
                 "kernel_prep: %zu kernels (%zu distinct sources), %zu did not compile; %zu plans, %zu rejected; %s\n",
                 kernels_.size(), compiled_.size(), bad_kernels, plans, bad_plans, manifest.c_str());
    return opt_.strict && (bad_kernels || bad_plans) ? 1 : 0;
  }

 private:
  std::size_t problem_index(fs::path const& dir) {
    std::error_code ec;
    auto key = fs::weakly_canonical(dir, ec);
    if (ec) key = fs::absolute(dir);
    const auto s = key.string();
    if (auto it = by_dir_.find(s); it != by_dir_.end()) return it->second;
    problem_entry e;
    e.prob = kb::load_problem(dir);
    if (e.prob.backend != "cuda")
      throw kb::error(dir.string() + ": not a CUDA problem (backend '" + e.prob.backend + "')");
    e.nvrtc = nvrtc_options_for(e.prob);
    for (std::size_t i = 0; i < e.prob.shapes.size(); ++i)
      if (selected(e.prob.shapes[i], opt_)) e.shapes.push_back(i);
    problems_.push_back(std::move(e));
    by_dir_[s] = problems_.size() - 1;
    return problems_.size() - 1;
  }

  void from_kernels_file() {
    const fs::path base(opt_.base_dir);
    auto resolve = [&](std::string const& p) { return fs::path(p).is_absolute() ? fs::path(p) : base / p; };
    json::value doc;
    try {
      doc = json::parse(read_text(opt_.kernels_file));
    } catch (std::exception const& e) {
      throw kb::error(opt_.kernels_file + ": " + e.what());
    }
    auto fail = [&](std::size_t i, std::string const& what) {
      throw kb::error(opt_.kernels_file + ": kernels[" + std::to_string(i) + "]: " + what);
    };
    auto const* list = doc.is_object() ? doc.get_object().if_contains("kernels") : nullptr;
    if (!list || !list->is_array()) throw kb::error(opt_.kernels_file + ": expected {\"kernels\": [...]}");
    for (std::size_t i = 0; i < list->get_array().size(); ++i) {
      auto const& v = list->get_array()[i];
      if (!v.is_object()) fail(i, "not an object");
      auto const& o = v.get_object();
      auto str = [&](char const* key) -> std::optional<std::string> {
        auto const* f = o.if_contains(key);
        if (!f) return std::nullopt;
        if (!f->is_string()) fail(i, std::string("'") + key + "' is not a string");
        return std::string(f->get_string());
      };
      kernel_entry k;
      const auto dir = str("problem_dir");
      if (!dir) fail(i, "no 'problem_dir'");
      k.problem = problem_index(resolve(*dir));
      if (auto s = str("source"))
        k.source = *s;
      else if (auto f = str("source_file"))
        k.source = read_text(resolve(*f));
      else
        fail(i, "no 'source' or 'source_file'");
      auto const* launch = o.if_contains("launch");
      if (!launch) fail(i, "no 'launch'");
      k.launch = launch->is_string() ? std::string(launch->get_string()) : json::serialize(*launch);
      k.family = str("family").value_or("?");
      k.only_shape = str("shape").value_or("*");
      if (auto const* ps = o.if_contains("params"); ps && ps->is_object())
        for (auto const& kv : ps->get_object()) {
          if (!kv.value().is_int64()) fail(i, "params." + std::string(kv.key()) + " is not an integer");
          k.params.set(kv.key(), kv.value().get_int64());
        }
      kernels_.push_back(std::move(k));
    }
  }

  void from_catalogue() {
    struct spec {
      std::string problem, family;
      kb::parameters point;
    };
    std::vector<spec> specs;
    for (auto const& s : opt_.point_specs) {
      const auto a = s.find(':');
      const auto b = a == std::string::npos ? a : s.find(':', a + 1);
      if (b == std::string::npos) throw kb::error("--point '" + s + "': expected PROBLEM:FAMILY:K=V,...");
      specs.push_back(
          {s.substr(0, a), s.substr(a + 1, b - a - 1), parse_point(s.substr(b + 1), "--point '" + s + "'")});
    }
    for (auto const& dir : opt_.dirs) {
      const auto pi = problem_index(dir);
      auto const& prob = problems_[pi].prob;
      if (opt_.references) {
        kernel_entry k;
        k.problem = pi;
        k.reference = true;
        k.family = "reference";
        k.source = prob.reference_source;
        k.launch = prob.reference_launch;
        kernels_.push_back(std::move(k));
      }
      if (!opt_.catalogue) continue;
      kb::rng r(opt_.seed);
      for (auto const& h : prob.catalogue) {
        if (!h.templ || h.templ->source.empty()) continue;
        if (!opt_.families.empty() && std::none_of(opt_.families.begin(), opt_.families.end(),
                                                   [&](auto const& f) { return h.name.find(f) != std::string::npos; }))
          continue;
        auto const& space = h.templ->space;
        std::vector<kb::parameters> pts;
        bool named = false;
        for (auto const& s : specs) {
          if (s.problem != prob.name || h.name.find(s.family) == std::string::npos) continue;
          named = true;
          if (space.admits(s.point))
            pts.push_back(s.point);
          else
            std::fprintf(stderr, "warning: %s / %s: point %s is not admitted; skipped\n", prob.name.c_str(),
                         h.name.c_str(), s.point.to_string().c_str());
        }
        if (!named) {
          if (opt_.points_only && !specs.empty()) continue;
          if (auto c = kb::central_point(space))
            pts.push_back(*c);
          else
            std::fprintf(stderr, "warning: %s / %s: central point not admitted\n", prob.name.c_str(), h.name.c_str());
          const auto want = pts.size() + static_cast<std::size_t>(std::max(0, opt_.random_points));
          for (int tries = 0; pts.size() < want && tries < 200 * std::max(1, opt_.random_points); ++tries)
            if (auto p = kb::random_point(space, r); p && std::find(pts.begin(), pts.end(), *p) == pts.end())
              pts.push_back(*p);
        }
        for (auto const& p : pts) {
          kernel_entry k;
          k.problem = pi;
          k.family = h.name;
          k.params = p;
          k.source = kb::substitute(h.templ->source, p);
          k.launch = kb::substitute(h.templ->launch, p);
          kernels_.push_back(std::move(k));
        }
      }
    }
  }

  /// Every distinct (options, source) compiled once, `jobs` at a time, by the worker's --compile mode.
  void compile_all() {
    std::vector<std::pair<std::string, kernel_entry const*>> todo;
    for (auto& k : kernels_) {
      auto const& opts = problems_[k.problem].nvrtc;
      kb::hasher h;
      for (auto const& o : opts) h.bytes(o);
      k.key = kb::to_hex(h.bytes(k.source).digest());
      if (!compiled_.count(k.key)) {
        compiled_[k.key] = {};
        todo.emplace_back(k.key, &k);
      }
    }
    if (todo.empty()) return;
    const auto worker = kb::find_cuda_worker(opt_.worker);
    std::atomic<std::size_t> next{0};
    std::mutex mu;
    auto one = [&] {
      for (;;) {
        const auto i = next++;
        if (i >= todo.size()) return;
        auto const& [key, k] = todo[i];
        const auto base = fs::path(opt_.out_dir) / key;
        const auto src = base.string() + ".cu", cubin = base.string() + ".cubin";
        compile_outcome c;
        try {
          write_text(src, k->source);
          std::error_code ec;
          fs::remove(cubin, ec);
          std::vector<std::string> argv = {worker, "--compile", src, cubin};
          for (auto const& o : problems_[k->problem].nvrtc) argv.push_back(o);
          const auto r = kb::detail::run_captured(
              argv, std::chrono::milliseconds(static_cast<std::int64_t>(opt_.compile_timeout * 1000)), 256 * 1024);
          if (r.timed_out)
            c.message = "NVRTC did not finish within " + std::to_string(opt_.compile_timeout) + " s";
          else if (!r.succeeded() || !fs::is_regular_file(cubin, ec))
            c.message = "compile error: " + first_error(r.output) + " (NVRTC " +
                        kb::detail::describe_wait_status(r.wait_status) + ")\n" +
                        (r.output.size() > 4000 ? r.output.substr(0, 4000) + "..." : r.output);
          else {
            c.info = kb::read_cubin_file(cubin);
            c.ok = true;
          }
        } catch (std::exception const& e) {
          c.message = std::string("cannot compile: ") + e.what();
        }
        std::lock_guard lk(mu);
        if (!opt_.quiet)
          std::fprintf(stderr, "[%zu/%zu] %s %s / %s%s\n", i + 1, todo.size(), c.ok ? "compiled" : "FAILED",
                       problems_[k->problem].prob.name.c_str(), k->family.c_str(),
                       k->params.empty() ? "" : (" [" + k->params.to_string() + "]").c_str());
        compiled_[key] = std::move(c);
      }
    };
    std::vector<std::thread> pool;
    const auto jobs =
        static_cast<std::size_t>(opt_.jobs > 0 ? opt_.jobs : std::max(1u, std::thread::hardware_concurrency()));
    for (std::size_t t = 0; t < std::min(jobs, todo.size()); ++t) pool.emplace_back(one);
    for (auto& t : pool) t.join();
  }

  void resolve_all() {
    for (auto& k : kernels_) {
      auto const& P = problems_[k.problem];
      auto const& c = compiled_[k.key];
      if (!c.ok) {
        k.error = c.message;
        continue;
      }
      for (auto const s : P.shapes) {
        auto const& sh = P.prob.shapes[s];
        if (k.only_shape != "*" && k.only_shape != sh.name) continue;
        plan_entry pe;
        pe.shape = s;
        try {
          pe.plan = kb::resolve_launch_plan(P.prob, sh.dims, k.launch);
          if (auto bad = kb::check_plan_against(pe.plan, *c.info)) throw kb::plan_reject(*bad);
        } catch (kb::plan_reject const& r) {
          pe.error = "launch plan rejected (" + std::string(kb::to_string(r.where)) + "): " + r.message;
        }
        k.plans.push_back(std::move(pe));
      }
    }
  }

  /// Each kernel at each of its shapes through kernelbrain::cuda_evaluator (one per problem).
  void measure_all() {
    for (auto& k : kernels_) {
      if (!k.error.empty()) continue;
      auto& P = problems_[k.problem];
      if (!P.evaluator) {
        kb::cuda_options o;
        o.worker_path = opt_.worker;
        o.sanitize = false;
        P.evaluator = std::make_unique<kb::cuda_evaluator>(P.prob, o);
      }
      auto c = kb::make_candidate(k.family, k.params, "kernel_prep", std::nullopt, k.source, k.launch);
      for (auto& pe : k.plans) {
        if (!pe.error.empty()) continue;
        kb::rung r;
        r.name = "kernel_prep";
        r.shapes = {pe.shape};
        r.samples = opt_.samples;
        r.warmup = opt_.warmup;
        kb::measure_request req;
        req.seed = opt_.seed;
        const auto m = P.evaluator->measure(c, r, req);
        if (!m.result || m.timings.empty()) {
          pe.worker_error = m.result.detail.empty() ? std::string("no timing") : m.result.detail;
        } else {
          pe.worker = m.timings.front().stats;
          pe.samples = m.timings.front().samples;
        }
        if (!opt_.quiet)
          std::fprintf(stderr, "measured %s / %s at %s: %s\n", P.prob.name.c_str(), k.family.c_str(),
                       P.prob.shapes[pe.shape].name.c_str(),
                       pe.worker ? (std::to_string(pe.worker->median * 1e3) + " ms").c_str() : pe.worker_error.c_str());
      }
    }
  }

  json::value to_json() const {
    json::array problems;
    for (auto const& P : problems_) {
      auto const& p = P.prob;
      json::object o;
      o["dir"] = p.directory;
      o["name"] = p.name;
      o["precision"] = p.options.count("precision") ? p.options.at("precision") : std::string("fp32");
      o["arch"] = arch_of(P.nvrtc);
      json::array nv;
      for (auto const& s : P.nvrtc) nv.emplace_back(s);
      o["nvrtc_options"] = std::move(nv);
      json::array dims;
      for (auto const& d : p.dim_order) dims.emplace_back(d);
      o["dims"] = std::move(dims);
      o["tolerance"] = {{"rtol", p.tol.rtol}, {"atol", p.tol.atol}};
      o["machine"] = {{"bytes_per_second", p.machine.bytes_per_second},
                      {"flops_per_second", p.machine.flops_per_second}};
      json::array ins, outs;
      for (auto const& t : p.inputs)
        ins.push_back(json::object{{"name", t.name}, {"dtype", t.dtype}, {"distribution", t.distribution}});
      for (auto const& t : p.outputs) outs.push_back(json::object{{"name", t.name}, {"dtype", t.dtype}});
      o["inputs"] = std::move(ins);
      o["outputs"] = std::move(outs);
      json::array shapes;
      for (auto const s : P.shapes) {
        auto const& sh = p.shapes[s];
        json::object so;
        so["name"] = sh.name;
        so["tier"] = sh.tier;
        so["weight"] = sh.weight;
        json::object d;
        for (auto const& [n, v] : sh.dims) d[n] = v;
        so["dims"] = std::move(d);
        so["bytes"] = sh.bytes;
        so["flops"] = sh.flops;
        auto look = [&](std::string_view n) -> std::optional<std::int64_t> {
          auto it = sh.dims.find(std::string(n));
          if (it == sh.dims.end()) return std::nullopt;
          return it->second;
        };
        json::array ie, oe;
        for (auto const& t : p.inputs) ie.emplace_back(kb::evaluate_expression(t.size, look));
        for (auto const& t : p.outputs) oe.emplace_back(kb::evaluate_expression(t.size, look));
        so["input_elements"] = std::move(ie);
        so["output_elements"] = std::move(oe);
        shapes.push_back(std::move(so));
      }
      o["shapes"] = std::move(shapes);
      problems.push_back(std::move(o));
    }
    json::array kernels;
    for (auto const& k : kernels_) {
      auto const& p = problems_[k.problem].prob;
      json::object o;
      o["problem"] = k.problem;
      o["kind"] = k.reference ? "reference" : "kernel";
      o["family"] = k.family;
      json::object params;
      for (auto const& [n, v] : k.params) params[n] = v;
      o["params"] = std::move(params);
      if (k.error.empty())
        o["cubin"] = k.key + ".cubin";
      else
        o["cubin"] = nullptr;
      if (k.error.empty())
        o["error"] = nullptr;
      else
        o["error"] = k.error;
      json::array wanted;  // the shapes this kernel is for (its plans, or its error, at each)
      for (auto const s : problems_[k.problem].shapes)
        if (k.only_shape == "*" || k.only_shape == p.shapes[s].name) wanted.emplace_back(p.shapes[s].name);
      o["shapes"] = std::move(wanted);
      json::array plans;
      for (auto const& pe : k.plans) {
        json::object po;
        po["shape"] = p.shapes[pe.shape].name;
        if (!pe.error.empty()) {
          po["error"] = pe.error;
          plans.push_back(std::move(po));
          continue;
        }
        json::array scratch;
        for (auto const b : pe.plan.scratch) scratch.emplace_back(b);
        po["scratch_bytes"] = std::move(scratch);
        json::array launches;
        for (auto const& l : pe.plan.launches) {
          json::object lo;
          lo["kernel"] = l.kernel;
          lo["grid"] = {l.grid[0], l.grid[1], l.grid[2]};
          lo["block"] = {l.block[0], l.block[1], l.block[2]};
          lo["cluster"] = {l.cluster[0], l.cluster[1], l.cluster[2]};
          lo["smem"] = l.smem;
          json::array args;
          for (std::size_t a = 0; a + 1 < l.args.size(); a += 2) {
            const auto idx = l.args[a + 1];
            if (l.args[a] == static_cast<std::int64_t>(kb::detail::cuda_protocol::arg_kind::buffer)) {
              args.push_back(json::object{{"buffer", idx}});
            } else {
              auto const& name = p.dim_order.at(static_cast<std::size_t>(idx));
              args.push_back(json::object{{"dim", name}, {"value", p.shapes[pe.shape].dims.at(name)}});
            }
          }
          lo["args"] = std::move(args);
          launches.push_back(std::move(lo));
        }
        po["launches"] = std::move(launches);
        if (opt_.measure) {
          if (pe.worker) {
            json::array ms;
            for (double s : pe.samples) ms.emplace_back(s * 1e3);
            po["worker"] = {{"median_ms", pe.worker->median * 1e3},
                            {"low_ms", pe.worker->low * 1e3},
                            {"high_ms", pe.worker->high * 1e3},
                            {"samples_ms", std::move(ms)}};
          } else {
            po["worker"] = {{"error", pe.worker_error}};
          }
        }
        plans.push_back(std::move(po));
      }
      o["plans"] = std::move(plans);
      kernels.push_back(std::move(o));
    }
    return json::object{{"problems", std::move(problems)}, {"kernels", std::move(kernels)}};
  }

  options opt_;
  std::vector<problem_entry> problems_;
  std::map<std::string, std::size_t> by_dir_;
  std::vector<kernel_entry> kernels_;
  std::map<std::string, compile_outcome> compiled_;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw kb::error(a + " needs a value");
        return argv[++i];
      };
      auto integer = [&](std::string const& v) {
        try {
          std::size_t used = 0;
          const long long n = std::stoll(v, &used);
          if (used != v.size()) throw std::invalid_argument("");
          return n;
        } catch (std::exception const&) {
          throw kb::error(a + ": '" + v + "' is not an integer");
        }
      };
      if (a == "--help" || a == "-h") {
        std::fputs(usage, stdout);
        return 0;
      }
      if (a == "--out")
        opt.out_dir = next();
      else if (a == "--kernels")
        opt.kernels_file = next();
      else if (a == "--base")
        opt.base_dir = next();
      else if (a == "--references")
        opt.references = true;
      else if (a == "--no-catalogue")
        opt.catalogue = false;
      else if (a == "--families")
        opt.families = split(next(), ',');
      else if (a == "--point")
        opt.point_specs.push_back(next());
      else if (a == "--points-file") {
        std::istringstream in(read_text(next()));
        for (std::string line; std::getline(in, line);) {
          while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
          if (!line.empty() && line[0] != '#') opt.point_specs.push_back(line);
        }
      } else if (a == "--points-only")
        opt.points_only = true;
      else if (a == "--random-points")
        opt.random_points = static_cast<int>(integer(next()));
      else if (a == "--seed")
        opt.seed = static_cast<std::uint64_t>(integer(next()));
      else if (a == "--shapes")
        opt.shapes = split(next(), ',');
      else if (a == "--tiers")
        opt.tiers = split(next(), ',');
      else if (a == "--jobs" || a == "-j")
        opt.jobs = static_cast<int>(integer(next()));
      else if (a == "--worker")
        opt.worker = next();
      else if (a == "--compile-timeout")
        opt.compile_timeout = std::stod(next());
      else if (a == "--measure")
        opt.measure = true;
      else if (a == "--samples")
        opt.samples = static_cast<int>(integer(next()));
      else if (a == "--warmup")
        opt.warmup = static_cast<int>(integer(next()));
      else if (a == "--strict")
        opt.strict = true;
      else if (a == "--quiet")
        opt.quiet = true;
      else if (a.starts_with("-"))
        throw kb::error("unknown option " + a + " (--help lists them)");
      else
        opt.dirs.push_back(a);
    }
    if (opt.out_dir.empty()) throw kb::error("give --out DIR");
    if (opt.kernels_file.empty() == opt.dirs.empty())
      throw kb::error(opt.dirs.empty() ? "give problem directories or --kernels FILE"
                                       : "give either problem directories or --kernels, not both");
    if (opt.samples < 1 || opt.warmup < 0 || opt.random_points < 0 || !(opt.compile_timeout > 0))
      throw kb::error("--samples must be >= 1, --warmup, --random-points >= 0, --compile-timeout > 0");
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kernel_prep: %s\n%s", e.what(), usage);
    return 2;
  }
  try {
    return prep(std::move(opt)).run();
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kernel_prep: %s\n", e.what());
    return 1;
  }
}
