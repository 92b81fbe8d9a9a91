// nvrtc_check: compiles every CUDA problem's reference and catalogue templates with NVRTC (no GPU
// needed) and checks each launch plan at every shape, with the same code the CUDA backend uses.
//
// For every problem directory on the command line it loads the problem (kernelbrain::load_problem,
// so the file is checked as a search would check it), instantiates each template at its central
// point and at a few seeded random admitted points, substitutes ${PARAM}s into the source and the
// launch plan, and compiles with the backend's options plus --ptxas-options=-v. Then:
//   - the cubin is read with kernelbrain::read_cubin (entry points, registers, stack frame, static
//     shared memory, launch bounds, parameter sizes): the same reading the backend relies on;
//   - spill bytes come from the ptxas report when it names the kernel (they are not in the cubin);
//     otherwise the kernel's local memory (stack frame) stands in as the spill signal, and the
//     output says so;
//   - where the report names a kernel, its registers, stack frame and static shared memory must
//     equal what read_cubin found: a mismatch fails loudly ("CUBIN READER MISMATCH"), which checks
//     the cubin reader over the whole catalogue;
//   - every launch plan is resolved at every shape with kernelbrain::resolve_launch_plan and checked
//     against the cubin's kernels with kernelbrain::check_plan_against (entry points, argument
//     counts, 8-byte parameters, launch bounds, registers per block, shared memory), both with the
//     limits of the problem's arch (kernelbrain::limits_for_arch: no GPU here to ask; an arch the
//     table does not know fails the problem);
//   - a source lint the cubin cannot provide: a pointer parameter whose element type (float or a
//     16-bit type) differs from the dtype of the tensor the plan passes to it.
// Exit status is non-zero on any compile error, a register count above the problem's limit, spills
// above its limit (catalogue kernels; the reference's are reported), a rejected launch plan, a
// cubin/report mismatch or a dtype mismatch.
//
// Build: g++ -std=c++20 -O2 -I/usr/local/cuda/include -Iinclude tools/nvrtc_check.cpp
//            -L/usr/local/cuda/lib64 -lnvrtc -o /tmp/nvrtc_check        (or the CMake target)
// Run:   nvrtc_check [--samples N] [--seed S] [--only SUBSTR] [--jobs J] [--quiet] [--cubin-dir DIR] DIR...
#include <nvrtc.h>
#include <boost/json/src.hpp>  // header-only KernelBrain: the headers below bring their bodies

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernelbrain/backends/cuda/cubin.hpp"
#include "kernelbrain/backends/cuda/launch_plan.hpp"
#include "kernelbrain/backends/cuda/ptxas_report.hpp"
#include "kernelbrain/core/template_space.hpp"
#include "kernelbrain/io/problem_loader.hpp"

namespace kb = kernelbrain;

namespace {

constexpr std::int64_t default_smem_limit = 49152;  // above this the backend must opt in

struct compile_result {
  bool ok = false;
  std::string log;    ///< NVRTC's log: the ptxas report, or the errors
  std::string cubin;  ///< the image, when ok
};

std::string g_cubin_dir;  // --cubin-dir: where to write each instance's cubin (for cuobjdump -sass)

compile_result compile(std::string const& source, std::string const& arch) {
  compile_result r;
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), "candidate.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
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
  if (rc == NVRTC_SUCCESS) {
    std::size_t cn = 0;
    if (nvrtcGetCUBINSize(prog, &cn) == NVRTC_SUCCESS && cn) {
      r.cubin.assign(cn, '\0');
      if (nvrtcGetCUBIN(prog, r.cubin.data()) != NVRTC_SUCCESS) r.cubin.clear();
    }
  }
  nvrtcDestroyProgram(&prog);
  r.ok = rc == NVRTC_SUCCESS && !r.cubin.empty();
  if (rc == NVRTC_SUCCESS && r.cubin.empty()) r.log += "\n(NVRTC returned no cubin)";
  return r;
}

/// Source lint: the element type of each parameter of `extern "C" __global__ void NAME(...)` that is
/// a pointer: "f32" (float), "f16" (half, __half, half_t, unsigned short) or "" (anything else, or
/// not a pointer). nullopt when the parameter list is not found.
std::optional<std::vector<std::string>> pointer_types(std::string const& src, std::string const& name) {
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
    if (c == ')' && --depth == 0) break;
    if (c == ',' && depth == 1) {
      raw.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (cur.find_first_not_of(" \t\r\n") != std::string::npos) raw.push_back(cur);
  std::vector<std::string> out;
  for (auto const& p : raw) {
    const bool pointer = p.find('*') != std::string::npos;
    if (pointer && (p.find("half") != std::string::npos || p.find("unsigned short") != std::string::npos))
      out.emplace_back("f16");
    else if (pointer && p.find("float") != std::string::npos)
      out.emplace_back("f32");
    else
      out.emplace_back();  // a dim, or a pointer to something else
  }
  return out;
}

struct problem_info {
  kb::problem prob;
  std::string arch{kb::default_arch};
  kb::device_limits limits;  ///< arch's row of the table: what the plans are checked against
  int max_spill = 0;
  int max_regs = 255;
};

struct job {
  std::string label;  // problem / family / point
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

struct outcome {
  std::vector<std::string> errs;
  std::string details;  // per-kernel lines
  std::string summary;
  int max_regs = 0;
  int crosschecked = 0, unreported = 0, mismatches = 0;
};

/// The whole check of one instance.
outcome check(job const& j) {
  outcome o;
  auto const& P = *j.P;
  const auto cr = compile(j.source, P.arch);
  if (!cr.ok) {
    o.errs.push_back("compile error:\n" + cr.log);
    return o;
  }
  if (!g_cubin_dir.empty()) {
    std::string name;
    for (char c : j.label) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == ',') ? c : '_';
    std::ofstream(g_cubin_dir + "/" + name + ".cubin", std::ios::binary) << cr.cubin;
  }
  kb::cubin_info info;
  try {
    info = kb::read_cubin(cr.cubin);
  } catch (kb::error const& e) {
    o.errs.push_back(std::string("CUBIN READER FAILED: ") + e.what());
    return o;
  }
  const auto report = kb::parse_ptxas_log(cr.log);
  auto reported = [&](std::string const& name) -> kb::cuda_kernel_resources const* {
    for (auto const& [n, r] : report)
      if (n == name) return &r;
    return nullptr;
  };
  std::ostringstream details;
  for (auto const& k : info.kernels) {
    o.max_regs = std::max(o.max_regs, k.registers);
    details << "    " << k.name << ": " << k.registers << " regs, " << k.static_smem << " B static smem, stack "
            << k.local_bytes;
    int spill = 0;
    if (auto const* rp = reported(k.name)) {
      auto const& r = *rp;
      ++o.crosschecked;
      spill = std::max(r.spill_stores, r.spill_loads);
      details << ", spill " << r.spill_stores << "/" << r.spill_loads;
      auto mismatch = [&](char const* what, long long cubin, long long rep) {
        if (cubin == rep) return;
        ++o.mismatches;
        o.errs.push_back("CUBIN READER MISMATCH: " + k.name + ": " + what + " " + std::to_string(cubin) +
                         " in the cubin, " + std::to_string(rep) + " in the ptxas report");
      };
      mismatch("registers", k.registers, r.registers);
      mismatch("stack frame bytes", k.local_bytes, r.stack);
      mismatch("static shared memory bytes", k.static_smem, r.static_smem);
    } else {
      ++o.unreported;
      spill = k.local_bytes;
      details << ", no ptxas report for it: its " << k.local_bytes << " B of local memory stand in for spills";
    }
    details << "\n";
    if (k.registers > P.max_regs)
      o.errs.push_back(k.name + ": " + std::to_string(k.registers) + " registers (limit " + std::to_string(P.max_regs) +
                       ")");
    if (!j.reference && spill > P.max_spill)
      o.errs.push_back(k.name + ": " + std::to_string(spill) +
                       " B spilled (or local memory, without a report) above the limit " + std::to_string(P.max_spill));
  }
  for (auto const& [name, r] : report)
    if (!info.find(name)) {
      ++o.mismatches;
      o.errs.push_back("CUBIN READER MISMATCH: the ptxas report names entry point " + name +
                       ", the cubin reader found " + info.names());
    }
  o.details = details.str();

  // The launch plan at every shape, as the backend resolves and checks it. The same message at
  // several shapes is printed once, with the shapes.
  std::vector<std::pair<std::string, std::vector<std::string>>> plan_errs;  // message, shapes
  std::string shape_name;
  auto add = [&](std::string const& e) {
    auto it = std::find_if(plan_errs.begin(), plan_errs.end(), [&](auto const& pe) { return pe.first == e; });
    if (it == plan_errs.end())
      plan_errs.push_back({e, {shape_name}});
    else if (it->second.back() != shape_name)
      it->second.push_back(shape_name);
  };
  bool any_optin = false;
  std::int64_t worst_smem = 0, max_blocks = 0;
  for (auto const& sh : P.prob.shapes) {
    shape_name = sh.name;
    kb::detail::cuda_protocol::plan plan;
    try {
      plan = kb::resolve_launch_plan(P.prob, sh.dims, j.launch, P.limits);
    } catch (kb::plan_reject const& r) {
      add("launch plan rejected (" + std::string(kb::to_string(r.where)) + "): " + r.message);
      continue;
    }
    if (auto r = kb::check_plan_against(plan, info, P.limits))
      add("launch plan rejected against the cubin (" + std::string(kb::to_string(r->where)) + "): " + r->message);
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      auto const& l = plan.launches[i];
      max_blocks = std::max(max_blocks, kb::detail::launch_plan::product(l.grid));  // saturating
      any_optin = any_optin || l.smem > default_smem_limit;
      if (auto const* k = info.find(l.kernel)) {
        worst_smem = std::max(worst_smem, l.smem + k->static_smem);
        // Lint: pointer element types against the tensors' dtypes.
        if (auto types = pointer_types(j.source, l.kernel); types && types->size() * 2 == l.args.size()) {
          for (std::size_t a = 0; a < types->size(); ++a) {
            const std::int64_t kind = l.args[2 * a];
            const auto index = static_cast<std::size_t>(l.args[2 * a + 1]);
            const std::size_t tensors = P.prob.inputs.size() + P.prob.outputs.size();
            if (kind != 0 || index >= tensors || (*types)[a].empty()) continue;
            auto const& t =
                index < P.prob.inputs.size() ? P.prob.inputs[index] : P.prob.outputs[index - P.prob.inputs.size()];
            if ((*types)[a] != t.dtype)
              add("launches[" + std::to_string(i) + "] (kernel '" + l.kernel + "'): parameter " + std::to_string(a) +
                  " points to " + (*types)[a] + ", the plan passes tensor '" + t.name + "' of " + t.dtype);
          }
        }
      }
    }
  }
  for (std::size_t e = 0; e < plan_errs.size() && e < 6; ++e) {
    auto const& [message, shapes] = plan_errs[e];
    std::string where;
    for (auto const& n : shapes) where += (where.empty() ? "" : ", ") + n;
    o.errs.push_back((shapes.size() == P.prob.shapes.size()
                          ? std::string("every shape")
                          : "shape" + std::string(shapes.size() > 1 ? "s " : " ") + where) +
                     ": " + message);
  }
  if (plan_errs.size() > 6) o.errs.push_back("... " + std::to_string(plan_errs.size() - 6) + " more");
  std::ostringstream s;
  s << P.arch << ": max smem " << worst_smem << " B" << (any_optin ? " (opt-in)" : "") << ", max blocks " << max_blocks;
  o.summary = s.str();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--samples")
      opt.samples = std::stoi(next());
    else if (a == "--seed")
      opt.seed = std::stoull(next());
    else if (a == "--only")
      opt.only = next();
    else if (a == "--jobs" || a == "-j")
      opt.jobs = std::max(1, std::stoi(next()));
    else if (a == "--quiet")
      opt.quiet = true;
    else if (a == "--cubin-dir")
      g_cubin_dir = next();
    else if (a == "--help" || a == "-h") {
      std::puts(
          "usage: nvrtc_check [--samples N] [--seed S] [--only SUBSTR] [--jobs J] [--quiet] [--cubin-dir DIR] "
          "PROBLEM_DIR...");
      return 0;
    } else
      dirs.push_back(a);
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "nvrtc_check: give at least one problem directory\n");
    return 2;
  }

  int failures = 0;
  std::vector<problem_info> problems;
  problems.reserve(dirs.size());
  std::vector<job> jobs;
  for (auto const& dir : dirs) {
    try {
      problem_info info;
      info.prob = kb::load_problem(dir);
      if (info.prob.backend != "cuda")
        throw kb::error(dir + ": not a CUDA problem (backend '" + info.prob.backend + "')");
      auto const& o = info.prob.options;
      if (auto it = o.find("arch"); it != o.end()) info.arch = it->second;
      info.limits = kb::limits_for_arch(info.arch);
      if (auto it = o.find("nvrtc_check.max_spill_bytes"); it != o.end()) info.max_spill = std::stoi(it->second);
      if (auto it = o.find("nvrtc_check.max_registers"); it != o.end()) info.max_regs = std::stoi(it->second);
      problems.push_back(std::move(info));
      auto const* P = &problems.back();
      auto const& prob = P->prob;
      if (!prob.reference_launch.empty() &&
          (opt.only.empty() || std::string("reference").find(opt.only) != std::string::npos))
        jobs.push_back({prob.name + " / reference", prob.reference_source, prob.reference_launch, P, true});
      kb::rng r(opt.seed);
      for (auto const& h : prob.catalogue) {
        if (!opt.only.empty() && h.name.find(opt.only) == std::string::npos) continue;
        if (!h.templ || h.templ->source.empty()) continue;
        auto const& space = h.templ->space;
        const auto all = space.enumerate();
        std::printf("%s / %s: %llu points, %zu admitted\n", prob.name.c_str(), h.name.c_str(),
                    static_cast<unsigned long long>(space.cardinality()), all.size());
        auto central = kb::central_point(space);
        if (!central) {
          std::printf("FAIL %s / %s: central point not admitted by the constraints\n", prob.name.c_str(),
                      h.name.c_str());
          ++failures;
        }
        std::vector<kb::parameters> pts;
        if (central) pts.push_back(*central);
        for (int tries = 0; static_cast<int>(pts.size()) < 1 + opt.samples && tries < 50 && !all.empty(); ++tries) {
          auto const& p = all[r.below(all.size())];
          if (std::find(pts.begin(), pts.end(), p) == pts.end()) pts.push_back(p);
        }
        for (auto const& p : pts)
          jobs.push_back({prob.name + " / " + h.name + " [" + p.to_string() + "]", kb::substitute(h.templ->source, p),
                          kb::substitute(h.templ->launch, p), P});
      }
    } catch (std::exception const& e) {
      std::printf("FAIL %s: %s\n", dir.c_str(), e.what());
      ++failures;
    }
  }

  std::mutex io;
  std::atomic<std::size_t> next{0};
  int fails = 0, max_regs_seen = 0, crosschecked = 0, unreported = 0, mismatches = 0;
  auto worker = [&]() {
    for (;;) {
      const std::size_t i = next++;
      if (i >= jobs.size()) return;
      auto const& j = jobs[i];
      const auto o = check(j);
      std::lock_guard<std::mutex> lock(io);
      max_regs_seen = std::max(max_regs_seen, o.max_regs);
      crosschecked += o.crosschecked;
      unreported += o.unreported;
      mismatches += o.mismatches;
      if (o.errs.empty()) {
        std::printf("ok   %s  (%s)\n", j.label.c_str(), o.summary.c_str());
        if (!opt.quiet) std::fputs(o.details.c_str(), stdout);
      } else {
        ++fails;
        std::printf("FAIL %s\n", j.label.c_str());
        std::fputs(o.details.c_str(), stdout);
        for (auto const& e : o.errs) std::printf("    - %s\n", e.c_str());
      }
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(std::max(0, opt.jobs)));
  for (int t = 0; t < opt.jobs; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  failures += fails;
  std::printf(
      "\ncubin reader vs ptxas report: %d entry points cross-checked, %d mismatches; %d without a report "
      "(local memory used as their spill signal)\n",
      crosschecked, mismatches, unreported);
  std::printf("%zu instances compiled, %d failures, max registers %d\n", jobs.size(), failures, max_regs_seen);
  return failures ? 1 : 0;
}
