// nvrtc_check: compiles every CUDA problem's reference and catalogue templates with NVRTC for sm_90
// (no GPU needed) and checks each launch plan at every shape against the device's limits.
//
// For every problem directory on the command line it instantiates each template at its central
// point and at a few seeded random admitted points, substitutes ${PARAM}s into the source and the
// launch plan, compiles with the backend's options plus --ptxas-options=-v, and reports registers,
// spills and static shared memory per entry point. It then evaluates every scratch size and every
// grid/block/smem/cluster expression at every shape and checks them against the limits of an H200.
// Exit status is non-zero on any compile error, spill above the problem's limit, more than 255
// registers, a launch-plan expression that fails, or a limit broken.
//
// Build: g++ -std=c++20 -O2 -I/usr/local/cuda/include -I/work/main/include tools/nvrtc_check.cpp
//            -L/usr/local/cuda/lib64 -lnvrtc -o /tmp/nvrtc_check
// Run:   /tmp/nvrtc_check [--samples N] [--seed S] [--only SUBSTR] [--jobs J] [--quiet] DIR...
#include <boost/json/src.hpp>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/core/parameters.hpp"
#include "kernelbrain/generate/template_space.hpp"

namespace json = boost::json;
namespace kb = kernelbrain;

namespace {

// H200 (sm_90) limits.
constexpr std::int64_t max_threads_per_block = 1024;
constexpr std::int64_t max_smem_per_block = 232448;  // 227 KB opt-in
constexpr std::int64_t default_smem_limit = 49152;   // above this the backend must opt in
constexpr std::int64_t regs_per_sm = 65536;
constexpr std::int64_t max_grid_yz = 65535;
constexpr std::int64_t max_grid_x = 2147483647;
constexpr std::int64_t max_cluster = 8;  // portable cluster size

std::string read_file(std::string const& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct kernel_info {
  int registers = -1;
  int stack = 0, spill_stores = 0, spill_loads = 0;
  int static_smem = 0;
};

struct compile_result {
  bool ok = false;
  std::string log;
  std::map<std::string, kernel_info> kernels;
};

std::string g_cubin_dir;  // --cubin-dir: where to write each instance's cubin (for cuobjdump -sass)

compile_result compile(std::string const& source, std::string const& name, std::string const& arch,
                       std::string const& cubin_name = {}) {
  compile_result r;
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed";
    return r;
  }
  const std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "-default-device", "--std=c++17", "--ptxas-options=-v"};
  const auto rc = nvrtcCompileProgram(prog, 4, opts);
  std::size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  r.log.assign(n, '\0');
  if (n) nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && (r.log.back() == '\0' || r.log.back() == '\n')) r.log.pop_back();
  if (rc == NVRTC_SUCCESS && !g_cubin_dir.empty() && !cubin_name.empty()) {
    std::size_t cn = 0;
    if (nvrtcGetCUBINSize(prog, &cn) == NVRTC_SUCCESS && cn) {
      std::string bin(cn, '\0');
      nvrtcGetCUBIN(prog, bin.data());
      std::ofstream(g_cubin_dir + "/" + cubin_name, std::ios::binary) << bin;
    }
  }
  nvrtcDestroyProgram(&prog);
  r.ok = rc == NVRTC_SUCCESS;
  if (!r.ok) return r;
  // ptxas -v lines, per entry function.
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for ([A-Za-z_0-9]+))");
  static const std::regex frame_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers(.*))");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::istringstream lines(r.log);
  std::string line, current, props_for;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) { current = m[1]; r.kernels[current]; continue; }
    if (std::regex_search(line, m, props_re)) { props_for = m[1]; continue; }
    if (std::regex_search(line, m, frame_re)) {
      if (r.kernels.count(props_for)) {
        auto& k = r.kernels[props_for];
        k.stack = std::stoi(m[1]); k.spill_stores = std::stoi(m[2]); k.spill_loads = std::stoi(m[3]);
      }
      continue;
    }
    if (std::regex_search(line, m, used_re) && !current.empty()) {
      auto& k = r.kernels[current];
      k.registers = std::stoi(m[1]);
      std::string rest = m[2];
      std::smatch s;
      if (std::regex_search(rest, s, smem_re)) k.static_smem = std::stoi(s[1]);
    }
  }
  return r;
}

// The parameter list of `extern "C" __global__ void NAME(...)` in `src`: one entry per parameter,
// "ptr:<type>" or "dim" or "other:<text>". nullopt when not found.
std::optional<std::vector<std::string>> kernel_params(std::string const& src, std::string const& name) {
  const std::regex re("\\bvoid\\s+(__launch_bounds__\\s*\\([^)]*\\)\\s*)?" + name + "\\s*\\(");
  std::smatch m;
  if (!std::regex_search(src, m, re)) return std::nullopt;
  std::size_t i = static_cast<std::size_t>(m.position(0) + m.length(0));
  int depth = 1;
  std::string cur;
  std::vector<std::string> raw;
  for (; i < src.size() && depth > 0; ++i) {
    const char c = src[i];
    if (c == '(') ++depth;
    if (c == ')') { if (--depth == 0) break; }
    if (c == ',' && depth == 1) { raw.push_back(cur); cur.clear(); continue; }
    cur += c;
  }
  if (cur.find_first_not_of(" \t\r\n") != std::string::npos) raw.push_back(cur);
  std::vector<std::string> out;
  for (auto p : raw) {
    if (p.find('*') != std::string::npos) {
      std::string t = p.find("__half") != std::string::npos || p.find("half") != std::string::npos ? "f16"
                      : p.find("float") != std::string::npos ? "f32" : "?";
      out.push_back("ptr:" + t);
    } else if (p.find("long long") != std::string::npos) {
      out.push_back("dim");
    } else {
      out.push_back("other:" + p);
    }
  }
  return out;
}

struct problem_info {
  std::string dir, name;
  std::vector<std::string> dims;
  std::map<std::string, std::string> tensor_dtype;  // inputs + outputs
  std::vector<std::pair<std::string, std::map<std::string, std::int64_t>>> shapes;
  int max_spill = 0;
  int max_regs = 255;
  std::string arch = "sm_90";  // "arch" in problem.json
};

kb::symbol_lookup lookup_of(std::map<std::string, std::int64_t> const& env) {
  return [&env](std::string_view n) -> std::optional<std::int64_t> {
    auto it = env.find(std::string(n));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

std::string expr_text(json::value const& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  throw std::runtime_error("launch plan: expected an expression string or integer, got " + json::serialize(v));
}

// Checks a substituted launch plan at every shape; returns problems found (empty: fine).
std::vector<std::string> check_launch(problem_info const& P, std::string const& launch_text,
                                      std::string const& source, compile_result const& cr,
                                      std::string& summary) {
  std::vector<std::string> errs;
  json::value plan;
  try { plan = json::parse(launch_text); }
  catch (std::exception const& e) { errs.push_back(std::string("launch plan does not parse: ") + e.what()); return errs; }
  auto const& obj = plan.as_object();
  std::map<std::string, std::string> scratch;  // name -> size expr
  if (auto* s = obj.if_contains("scratch"))
    for (auto const& e : s->as_array()) scratch[std::string(e.at("name").as_string())] = expr_text(e.at("size"));
  auto const& launches = obj.at("launches").as_array();
  std::set<std::string> used_kernels;
  bool any_optin = false;
  std::int64_t worst_smem = 0, max_blocks = 0;
  for (auto const& [shape_name, dims] : P.shapes) {
    auto look = lookup_of(dims);
    auto where = [&](std::string const& what) { return "shape " + shape_name + ": " + what; };
    for (auto const& [sn, se] : scratch) {
      try {
        auto v = kb::evaluate_expression(se, look);
        if (v < 0) errs.push_back(where("scratch " + sn + " size " + std::to_string(v) + " < 0"));
      } catch (std::exception const& e) { errs.push_back(where("scratch " + sn + ": " + e.what())); }
    }
    int li = 0;
    for (auto const& lv : launches) {
      auto const& l = lv.as_object();
      const std::string kname(l.at("kernel").as_string());
      used_kernels.insert(kname);
      auto ctx = [&](std::string const& w) { return where("launch " + std::to_string(li) + " (" + kname + "): " + w); };
      try {
        std::int64_t g[3], b[3], c[3] = {1, 1, 1};
        for (int d = 0; d < 3; ++d) {
          g[d] = kb::evaluate_expression(expr_text(l.at("grid").as_array().at(d)), look);
          b[d] = kb::evaluate_expression(expr_text(l.at("block").as_array().at(d)), look);
        }
        if (auto* cl = l.if_contains("cluster"))
          for (int d = 0; d < 3; ++d) c[d] = kb::evaluate_expression(expr_text(cl->as_array().at(d)), look);
        const std::int64_t smem = l.contains("smem") ? kb::evaluate_expression(expr_text(l.at("smem")), look) : 0;
        const std::int64_t threads = b[0] * b[1] * b[2];
        if (b[0] < 1 || b[1] < 1 || b[2] < 1 || threads > max_threads_per_block || b[2] > 64)
          errs.push_back(ctx("block " + std::to_string(b[0]) + "x" + std::to_string(b[1]) + "x" + std::to_string(b[2]) + " invalid"));
        if (g[0] < 1 || g[1] < 1 || g[2] < 1 || g[0] > max_grid_x || g[1] > max_grid_yz || g[2] > max_grid_yz)
          errs.push_back(ctx("grid " + std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) + " invalid"));
        max_blocks = std::max(max_blocks, g[0] * g[1] * g[2]);
        const std::int64_t csize = c[0] * c[1] * c[2];
        if (c[0] < 1 || c[1] < 1 || c[2] < 1 || csize > max_cluster)
          errs.push_back(ctx("cluster size " + std::to_string(csize) + " invalid (portable limit 8)"));
        else if (g[0] % c[0] || g[1] % c[1] || g[2] % c[2])
          errs.push_back(ctx("grid not divisible by cluster dims"));
        auto it = cr.kernels.find(kname);
        if (it == cr.kernels.end()) {
          errs.push_back(ctx("no compiled entry point named " + kname));
        } else {
          const auto& k = it->second;
          const std::int64_t total_smem = smem + k.static_smem;
          worst_smem = std::max(worst_smem, total_smem);
          if (smem < 0 || total_smem > max_smem_per_block)
            errs.push_back(ctx("shared memory " + std::to_string(total_smem) + " B (dynamic " + std::to_string(smem) + ") over 227 KB"));
          if (smem > default_smem_limit) any_optin = true;
          // Registers are allocated per warp in units of 256.
          const std::int64_t warps = (threads + 31) / 32;
          const std::int64_t per_warp = ((k.registers * 32 + 255) / 256) * 256;
          if (warps * per_warp > regs_per_sm)
            errs.push_back(ctx("registers " + std::to_string(k.registers) + " x " + std::to_string(threads) + " threads exceed 64K"));
        }
        // Arguments: names resolve, and match the kernel's parameter list.
        std::vector<std::string> want;
        for (auto const& a : l.at("args").as_array()) {
          const std::string an(a.as_string());
          if (P.tensor_dtype.count(an)) want.push_back("ptr:" + P.tensor_dtype.at(an));
          else if (scratch.count(an)) want.push_back("ptr:f32");
          else if (std::find(P.dims.begin(), P.dims.end(), an) != P.dims.end()) want.push_back("dim");
          else { errs.push_back(ctx("argument '" + an + "' names no tensor, scratch or dim")); want.push_back("?"); }
        }
        auto have = kernel_params(source, kname);
        if (!have) errs.push_back(ctx("cannot find the parameter list of " + kname + " in the source"));
        else if (have->size() != want.size())
          errs.push_back(ctx("kernel takes " + std::to_string(have->size()) + " parameters, plan passes " + std::to_string(want.size())));
        else
          for (std::size_t i = 0; i < want.size(); ++i)
            if ((*have)[i] != want[i] && !(want[i] == "ptr:f32" && (*have)[i] == "ptr:?"))
              errs.push_back(ctx("parameter " + std::to_string(i) + ": kernel has " + (*have)[i] + ", plan passes " + want[i]));
      } catch (std::exception const& e) {
        errs.push_back(ctx(e.what()));
      }
      ++li;
    }
  }
  // De-duplicate identical messages that differ only by shape? Keep first 6.
  if (errs.size() > 6) { auto n = errs.size(); errs.resize(6); errs.push_back("... " + std::to_string(n - 6) + " more"); }
  std::ostringstream s;
  s << "max smem " << worst_smem << " B" << (any_optin ? " (opt-in)" : "") << ", max blocks " << max_blocks;
  summary = s.str();
  return errs;
}

problem_info load_problem(std::string const& dir, json::object const& pj) {
  problem_info P;
  P.dir = dir;
  P.name = std::string(pj.at("name").as_string());
  if (pj.contains("arch")) P.arch = std::string(pj.at("arch").as_string());
  for (auto const& d : pj.at("dims").as_array()) P.dims.emplace_back(d.as_string());
  for (auto const* key : {"inputs", "outputs"})
    for (auto const& t : pj.at(key).as_array()) {
      auto const& o = t.as_object();
      P.tensor_dtype[std::string(o.at("name").as_string())] = o.contains("dtype") ? std::string(o.at("dtype").as_string()) : "f32";
    }
  for (auto const& s : pj.at("shapes").as_array()) {
    std::map<std::string, std::int64_t> dims;
    for (auto const& [k, v] : s.at("dims").as_object()) dims[std::string(k)] = v.to_number<std::int64_t>();
    for (auto const& d : P.dims)
      if (!dims.count(d)) throw std::runtime_error(dir + ": shape " + std::string(s.at("name").as_string()) + " lacks dim " + d);
    const std::string tier = s.as_object().contains("tier") ? std::string(s.at("tier").as_string()) : "";
    if (tier != "smoke" && tier != "odd" && tier != "small" && tier != "medium" && tier != "large")
      throw std::runtime_error(dir + ": shape " + std::string(s.at("name").as_string()) + " has unknown tier '" + tier + "'");
    P.shapes.emplace_back(std::string(s.at("name").as_string()), dims);
  }
  if (auto* c = pj.if_contains("nvrtc_check")) {
    auto const& o = c->as_object();
    if (o.contains("max_spill_bytes")) P.max_spill = static_cast<int>(o.at("max_spill_bytes").to_number<std::int64_t>());
    if (o.contains("max_registers")) P.max_regs = static_cast<int>(o.at("max_registers").to_number<std::int64_t>());
  }
  return P;
}

struct job {
  std::string label;       // problem / family / point
  std::string source;
  std::string launch;
  problem_info const* P;
  bool reference = false;  // trusted code: spills are reported, not failed
};

struct options {
  int samples = 3;
  std::uint64_t seed = 1;
  std::string only;
  int jobs = 1;
  bool quiet = false;
};

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--samples") opt.samples = std::stoi(next());
    else if (a == "--seed") opt.seed = std::stoull(next());
    else if (a == "--only") opt.only = next();
    else if (a == "--jobs" || a == "-j") opt.jobs = std::max(1, std::stoi(next()));
    else if (a == "--quiet") opt.quiet = true;
    else if (a == "--cubin-dir") g_cubin_dir = next();
    else if (a == "--help" || a == "-h") {
      std::puts("usage: nvrtc_check [--samples N] [--seed S] [--only SUBSTR] [--jobs J] [--quiet] [--cubin-dir DIR] PROBLEM_DIR...");
      return 0;
    } else dirs.push_back(a);
  }
  if (dirs.empty()) { std::fprintf(stderr, "nvrtc_check: give at least one problem directory\n"); return 2; }

  int failures = 0;
  std::vector<problem_info> problems;
  problems.reserve(dirs.size());
  std::vector<job> jobs;
  for (auto const& dir : dirs) {
    try {
      auto pj = json::parse(read_file(dir + "/problem.json")).as_object();
      problems.push_back(load_problem(dir, pj));
      auto const* P = &problems.back();
      if (pj.contains("reference")) {
        auto const& ref = pj.at("reference").as_object();
        if (opt.only.empty() || std::string("reference").find(opt.only) != std::string::npos)
          jobs.push_back({P->name + " / reference", read_file(dir + "/" + std::string(ref.at("source").as_string())),
                          json::serialize(ref.at("launch")), P, true});
      }
      kb::rng r(opt.seed);
      for (auto const& hv : pj.at("catalogue").as_array()) {
        auto const& h = hv.as_object();
        const std::string hname(h.at("name").as_string());
        if (!opt.only.empty() && hname.find(opt.only) == std::string::npos) continue;
        if (!h.contains("template")) continue;
        const std::string tsrc = read_file(dir + "/" + std::string(h.at("template").as_string()));
        const std::string tlaunch = json::serialize(h.at("launch"));
        kb::parameter_space space;
        for (auto const& [k, v] : h.at("parameters").as_object()) {
          kb::parameter_def d{std::string(k), {}};
          for (auto const& x : v.as_array()) d.values.push_back(x.to_number<std::int64_t>());
          space.params.push_back(std::move(d));
        }
        if (auto* c = h.if_contains("constraints"))
          for (auto const& x : c->as_array()) space.constraints.emplace_back(x.as_string());
        space.validate(P->name + "/" + hname);
        {  // the host loader's rules: every ${NAME} is a parameter and every parameter is used
          static const std::regex ph_re(R"(\$\{([A-Za-z_0-9]*)\})");
          std::set<std::string> used;
          for (auto const* text : {&tsrc, &tlaunch})
            for (std::sregex_iterator it(text->begin(), text->end(), ph_re), e; it != e; ++it) used.insert((*it)[1]);
          for (auto const& d : space.params)
            if (!used.count(d.name)) { std::printf("FAIL %s / %s: parameter %s is never used\n", P->name.c_str(), hname.c_str(), d.name.c_str()); ++failures; }
          for (auto const& u : used)
            if (std::none_of(space.params.begin(), space.params.end(), [&](auto const& d) { return d.name == u; })) {
              std::printf("FAIL %s / %s: ${%s} is not a parameter\n", P->name.c_str(), hname.c_str(), u.c_str());
              ++failures;
            }
        }
        const auto all = space.enumerate();
        std::printf("%s / %s: %llu points, %zu admitted\n", P->name.c_str(), hname.c_str(),
                    static_cast<unsigned long long>(space.cardinality()), all.size());
        auto central = kb::central_point(space);
        if (!central) {
          std::printf("FAIL %s / %s: central point not admitted by the constraints\n", P->name.c_str(), hname.c_str());
          ++failures;
        }
        std::vector<kb::parameters> pts;
        if (central) pts.push_back(*central);
        for (int tries = 0; static_cast<int>(pts.size()) < 1 + opt.samples && tries < 50 && !all.empty(); ++tries) {
          auto const& p = all[r.below(all.size())];
          if (std::find(pts.begin(), pts.end(), p) == pts.end()) pts.push_back(p);
        }
        for (auto const& p : pts)
          jobs.push_back({P->name + " / " + hname + " [" + p.to_string() + "]", kb::substitute(tsrc, p),
                          kb::substitute(tlaunch, p), P});
      }
    } catch (std::exception const& e) {
      std::printf("FAIL %s: %s\n", dir.c_str(), e.what());
      ++failures;
    }
  }

  std::mutex io;
  std::atomic<std::size_t> next{0};
  std::atomic<int> fails{0};
  int max_regs_seen = 0;
  auto worker = [&]() {
    for (;;) {
      const std::size_t i = next++;
      if (i >= jobs.size()) return;
      auto const& j = jobs[i];
      std::string cubin_name;
      for (char c : j.label) cubin_name += (std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == ',') ? c : '_';
      auto cr = compile(j.source, "candidate.cu", j.P->arch, cubin_name + ".cubin");
      std::vector<std::string> errs;
      std::string summary;
      std::ostringstream res;
      if (!cr.ok) {
        errs.push_back("compile error:\n" + cr.log);
      } else {
        for (auto const& [kn, k] : cr.kernels) {
          res << "    " << kn << ": " << k.registers << " regs, " << k.static_smem << " B static smem, stack " << k.stack
              << ", spill " << k.spill_stores << "/" << k.spill_loads << "\n";
          if (k.registers > j.P->max_regs) errs.push_back(kn + ": " + std::to_string(k.registers) + " registers");
          if (!j.reference && (k.spill_stores > j.P->max_spill || k.spill_loads > j.P->max_spill))
            errs.push_back(kn + ": spills " + std::to_string(k.spill_stores) + "/" + std::to_string(k.spill_loads) +
                           " B above limit " + std::to_string(j.P->max_spill));
        }
        auto le = check_launch(*j.P, j.launch, j.source, cr, summary);
        errs.insert(errs.end(), le.begin(), le.end());
      }
      std::lock_guard<std::mutex> lock(io);
      for (auto const& [kn, k] : cr.kernels) max_regs_seen = std::max(max_regs_seen, k.registers);
      if (errs.empty()) {
        std::printf("ok   %s  (%s)\n", j.label.c_str(), summary.c_str());
        if (!opt.quiet) std::fputs(res.str().c_str(), stdout);
      } else {
        ++fails;
        std::printf("FAIL %s\n", j.label.c_str());
        std::fputs(res.str().c_str(), stdout);
        for (auto const& e : errs) std::printf("    - %s\n", e.c_str());
      }
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < opt.jobs; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  failures += fails;
  std::printf("\n%zu instances compiled, %d failures, max registers %d\n", jobs.size(), failures, max_regs_seen);
  return failures ? 1 : 0;
}
