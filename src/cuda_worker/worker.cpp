// The serving worker's methods (worker.hpp): requests, trials, timed calls, the profiled run.
#include "worker.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>
#include "driver.hpp"
#include "errors.hpp"
#include "kernelbrain/backends/common/input_cases.hpp"
#include "trusted_kernels.hpp"

namespace kernelbrain::cuda_worker {

using namespace kernelbrain::detail;  // the worker side of the wire protocol
using clock_type = std::chrono::steady_clock;

worker::worker() {
  die_if(cu.cuEventCreate(&e0_, CU_EVENT_DEFAULT), "cuEventCreate");
  die_if(cu.cuEventCreate(&e1_, CU_EVENT_DEFAULT), "cuEventCreate");
  dev_ = query_device();
  int sms = 0;
  cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dc_.dev);
  grid_ = std::max(1, sms) * 8;
  load_trusted();
  die_if(cu.cuMemAlloc(&stats_, 16 * sizeof(std::uint64_t)), "cuMemAlloc(stats)");
}

std::string worker::handle(std::uint32_t type, std::string_view body, worker_context& ctx) {
  cp::reply rep;
  const auto t0 = clock_type::now();
  try {
    const auto q = cp::decode_run(body);
    keep_only(q);
    prepare(q);
    if (type == static_cast<std::uint32_t>(cp::request::check))
      check(q, ctx);
    else if (type == static_cast<std::uint32_t>(cp::request::time))
      time(q, ctx, rep);
    else
      throw request_failure{cp::status::bad_request, "unknown request type " + std::to_string(type)};
  } catch (request_failure const& f) {
    rep = cp::reply{};
    rep.st = f.st;
    rep.message = f.message;
    rep.index = f.index;
  } catch (wire_error const& e) {
    rep = cp::reply{};
    rep.st = cp::status::bad_request;
    rep.message = e.what();
  }
  rep.device_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  return cp::encode(rep);
}

void worker::profile(cp::run_request const& q) {
  if (!cu.profiler_start || !cu.profiler_stop)
    throw request_failure{cp::status::bad_request, "the driver has no cuProfilerStart / cuProfilerStop"};
  keep_only(q);
  prepare(q);
  fill(q, q.seed);
  poison(out_, q, false);
  for (int i = 0; i < std::max(0, q.warmup); ++i) run_plan(q.cand, q, out_, "the candidate (warm-up)");
  sync("the warm-up");
  if (const CUresult r = cu.profiler_start(); r != CUDA_SUCCESS)
    throw request_failure{cp::status::bad_request, "cuProfilerStart: " + err_text(r)};
  for (int i = 0; i < std::max(1, q.samples); ++i) run_plan(q.cand, q, out_, "the candidate (profiled)");
  sync("the profiled runs");
  cu.profiler_stop();
}

void worker::sync(std::string const& what) {
  const CUresult r = cu.cuStreamSynchronize(dc_.stream);
  if (r == CUDA_SUCCESS) return;
  if (sticky(r)) die(what + ": " + err_text(r));
  throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
}

void worker::load_trusted() {
  nvrtcProgram prog;
  const std::string text = std::string(input_case_device_source) + trusted_source;
  nvrtcCreateProgram(&prog, text.c_str(), "kb_trusted.cu", 0, nullptr, nullptr);
  char const* opts[] = {"--gpu-architecture=sm_90", "-default-device", "--std=c++17"};
  if (nvrtcCompileProgram(prog, 3, opts) != NVRTC_SUCCESS) {
    std::size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    die("the trusted kernels do not compile: " + log);
  }
  std::size_t cn = 0;
  nvrtcGetCUBINSize(prog, &cn);
  std::string bin(cn, '\0');
  nvrtcGetCUBIN(prog, bin.data());
  nvrtcDestroyProgram(&prog);
  die_if(cu.cuModuleLoadData(&trusted_, bin.data()), "loading the trusted kernels");
  die_if(cu.cuModuleGetFunction(&k_fill_, trusted_, "kb_fill"), "kb_fill");
  die_if(cu.cuModuleGetFunction(&k_poison_, trusted_, "kb_poison"), "kb_poison");
  die_if(cu.cuModuleGetFunction(&k_checksum_, trusted_, "kb_checksum"), "kb_checksum");
  die_if(cu.cuModuleGetFunction(&k_maxabs_, trusted_, "kb_maxabs"), "kb_maxabs");
  die_if(cu.cuModuleGetFunction(&k_compare_, trusted_, "kb_compare"), "kb_compare");
}

void worker::trusted_launch(CUfunction f, void** args, std::string const& what) {
  const CUresult r = cu.cuLaunchKernel(f, static_cast<unsigned>(grid_), 1, 1, 256, 1, 1, 0, dc_.stream, args, nullptr);
  if (r != CUDA_SUCCESS) {
    if (sticky(r)) die(what + ": " + err_text(r));
    throw request_failure{cp::status::launch_failed, what + ": " + err_text(r)};
  }
}

void worker::keep_only(cp::run_request const& q) {
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (it->first == q.cand.cubin || it->first == q.ref.cubin || it->first == q.incumbent.cubin) {
      ++it;
      continue;
    }
    release(it->second.scratch);
    cu.cuModuleUnload(it->second.mod);
    it = modules_.erase(it);
  }
}

void worker::prepare(cp::run_request const& q) {
  if (q.shape_key == shape_key_ && have_shape_) return;
  release(in_);
  release(out_);
  release(first_);
  release(ref_);
  release(outb_);
  for (auto& [path, m] : modules_) release(m.scratch);
  have_shape_ = false;
  // Each input has room for view_offsets different starting addresses (see time()).
  for (auto const& t : q.inputs) in_.push_back(alloc(bytes_of(t) + view_slack, "an input"));
  set_views(0);
  for (auto const& t : q.outputs) {
    out_.push_back(alloc(bytes_of(t), "an output"));
    first_.push_back(alloc(bytes_of(t), "an output copy"));
    ref_.push_back(alloc(bytes_of(t), "a reference output"));
  }
  shape_key_ = q.shape_key;
  have_shape_ = true;
}

void worker::set_views(std::uint64_t offset) {
  view_.clear();
  for (auto const& b : in_) view_.push_back(b.p + offset * view_step);
}

void worker::ensure_outb(cp::run_request const& q) {
  if (!outb_.empty()) return;
  for (auto const& t : q.outputs) outb_.push_back(alloc(bytes_of(t), "the incumbent's output"));
}

loaded_module& worker::module(std::string const& path) {
  if (auto it = modules_.find(path); it != modules_.end()) return it->second;
  loaded_module m;
  m.mod = load_module(path);
  return modules_.emplace(path, std::move(m)).first->second;
}

void worker::fill(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c) {
  for (std::size_t k = 0; k < q.inputs.size(); ++k) {
    long long n = static_cast<long long>((bytes_of(q.inputs[k]) + view_slack) / (q.inputs[k].dtype ? 2 : 4));
    int dt = q.inputs[k].dtype, dist = q.inputs[k].distribution;
    unsigned long long s = seed * 0x9E3779B97F4A7C15ULL + k * 0x632BE59BD9B4E019ULL + 1;
    int kind = c && k < c->size() ? (*c)[k].kind : 0;
    float a = c && k < c->size() ? static_cast<float>((*c)[k].value) : 0.f;
    void* args[] = {&in_[k].p, &n, &dt, &dist, &s, &kind, &a};
    trusted_launch(k_fill_, args, "generating inputs");
  }
}

void worker::poison(std::vector<buffer> const& outs, cp::run_request const& q, bool second) {
  for (std::size_t k = 0; k < outs.size(); ++k) {
    long long n = static_cast<long long>(q.outputs[k].count);
    int dt = q.outputs[k].dtype;
    unsigned bits = dt ? (second ? f16_p2 : f16_p1) : (second ? f32_p2 : f32_p1);
    void* args[] = {const_cast<CUdeviceptr*>(&outs[k].p), &n, &dt, &bits};
    trusted_launch(k_poison_, args, "poisoning outputs");
  }
}

std::vector<std::uint64_t> worker::checksums(cp::run_request const& q) {
  std::vector<std::uint64_t> out;
  for (std::size_t k = 0; k < q.inputs.size(); ++k) {
    cu.cuMemsetD32Async(stats_, 0, 2, dc_.stream);
    long long n = static_cast<long long>((bytes_of(q.inputs[k]) + view_slack) / 2);  // the views' slack too
    void* args[] = {&in_[k].p, &n, &stats_};
    trusted_launch(k_checksum_, args, "checksumming inputs");
    std::uint64_t v = 0;
    cu.cuMemcpyDtoHAsync(&v, stats_, 8, dc_.stream);
    sync("checksumming inputs");
    out.push_back(v);
  }
  return out;
}

void worker::run_plan(cp::plan const& p, cp::run_request const& q, std::vector<buffer> const& outs,
                      std::string const& who, float* ms) {
  auto& m = module(p.cubin);
  if (m.scratch.size() != p.scratch.size()) {
    release(m.scratch);
    for (auto b : p.scratch) m.scratch.push_back(alloc(b, "scratch"));
  }
  // Scratch starts as poison: a kernel must write all the scratch it reads.
  for (auto const& b : m.scratch) cu.cuMemsetD32Async(b.p, f32_p1, b.bytes / 4, dc_.stream);
  const auto fns = functions_of(m.mod, p, who, dev_);
  std::vector<CUdeviceptr> ptrs;
  for (auto const p_in : view_) ptrs.push_back(p_in);
  for (auto const& b : outs) ptrs.push_back(b.p);
  for (auto const& b : m.scratch) ptrs.push_back(b.p);
  if (ms) cu.cuEventRecord(e0_, dc_.stream);
  launch_all(p, fns, ptrs, q.dims, dc_.stream, who);
  if (ms) cu.cuEventRecord(e1_, dc_.stream);
  sync(who);
  if (ms) cu.cuEventElapsedTime(ms, e0_, e1_);
}

void worker::compare(cp::run_request const& q, std::vector<buffer> const& outs, std::vector<buffer> const& firsts,
                     bool two_runs, std::string const& when) {
  for (std::size_t k = 0; k < outs.size(); ++k) {
    long long n = static_cast<long long>(q.outputs[k].count);
    int dt = q.outputs[k].dtype;
    cu.cuMemsetD32Async(stats_, 0, 1, dc_.stream);
    void* margs[] = {const_cast<CUdeviceptr*>(&ref_[k].p), &n, &dt, &stats_};
    trusted_launch(k_maxabs_, margs, "the comparison");
    unsigned maxbits = 0;
    cu.cuMemcpyDtoHAsync(&maxbits, stats_, 4, dc_.stream);
    sync("the comparison");
    float maxref;
    std::memcpy(&maxref, &maxbits, 4);
    double bound = q.atol + q.rtol * static_cast<double>(maxref);
    std::uint64_t init[12];
    for (int i = 0; i < 6; ++i) init[i] = 0, init[6 + i] = ~0ULL;
    cu.cuMemcpyHtoDAsync(stats_, init, sizeof init, dc_.stream);
    unsigned p1 = dt ? f16_p1 : f32_p1, p2 = dt ? f16_p2 : f32_p2;
    if (!two_runs) p2 = p1;
    CUdeviceptr fp = two_runs ? firsts[k].p : outs[k].p;
    void* cargs[] = {const_cast<CUdeviceptr*>(&outs[k].p),
                     &fp,
                     const_cast<CUdeviceptr*>(&ref_[k].p),
                     &n,
                     &dt,
                     &p1,
                     &p2,
                     &bound,
                     &stats_};
    trusted_launch(k_compare_, cargs, "the comparison");
    std::uint64_t st[12];
    cu.cuMemcpyDtoHAsync(st, stats_, sizeof st, dc_.stream);
    sync("the comparison");
    const std::string of = " of " + std::to_string(n) + " elements";
    auto at = [&](int i) { return " (first at index " + std::to_string(st[6 + i]) + ")"; };
    const auto idx = static_cast<std::int32_t>(k);
    if (st[5])
      throw request_failure{cp::status::reference_failed,
                            "the reference left " + std::to_string(st[5]) + of + " non-finite " + when + at(5), idx};
    if (st[0])
      throw request_failure{cp::status::unwritten,
                            std::to_string(st[0]) + of + " still hold the poison written before the " +
                                (two_runs ? "first run " : "run ") + when + at(0),
                            idx};
    if (st[1])
      throw request_failure{
          cp::status::unwritten,
          std::to_string(st[1]) + of + " still hold the poison written before the second run " + when + at(1), idx};
    if (st[2])
      throw request_failure{cp::status::nonfinite, std::to_string(st[2]) + of + " are NaN or infinite " + when + at(2),
                            idx};
    char b[160];
    std::snprintf(b, sizeof b, " differ from the reference by more than %.6g = atol %.3g + rtol %.3g x max|ref| %.6g ",
                  bound, q.atol, q.rtol, static_cast<double>(maxref));
    if (st[3]) throw request_failure{cp::status::wrong, std::to_string(st[3]) + of + b + when + at(3), idx};
    if (st[4])
      throw request_failure{cp::status::nondeterministic,
                            std::to_string(st[4]) + of + " differ between two runs on the same inputs " + when + at(4),
                            idx};
  }
}

void worker::verify_inputs(cp::run_request const& q, std::vector<std::uint64_t> const& before,
                           std::string const& when) {
  const auto after = checksums(q);
  for (std::size_t k = 0; k < after.size(); ++k)
    if (after[k] != before[k])
      throw request_failure{cp::status::wrote_input, "input changed " + when, static_cast<std::int32_t>(k)};
}

void worker::trial(cp::run_request const& q, std::uint64_t seed, std::vector<cp::input_case> const* c,
                   std::string const& when) {
  set_views(0);
  fill(q, seed, c);
  const auto before = checksums(q);
  poison(out_, q, false);
  run_plan(q.cand, q, out_, "the candidate, first run");
  for (std::size_t k = 0; k < out_.size(); ++k) cu.cuMemcpyDtoDAsync(first_[k].p, out_[k].p, out_[k].bytes, dc_.stream);
  poison(out_, q, true);
  run_plan(q.cand, q, out_, "the candidate, second run");
  verify_inputs(q, before, "while the candidate ran " + when);
  poison(ref_, q, false);
  run_plan(q.ref, q, ref_, "the reference");
  compare(q, out_, first_, true, when);
}

std::string worker::case_text(std::vector<cp::input_case> const& c) {
  static char const* names[] = {"as drawn", "scaled", "offset", "constant", "ties", "spikes", "signed_zeros"};
  std::string s;
  for (std::size_t k = 0; k < c.size(); ++k) {
    if (c[k].kind == 0) continue;
    char b[96];
    const auto kind = static_cast<std::size_t>(c[k].kind);
    std::snprintf(b, sizeof b, "input %zu %s:%g", k, kind < 7 ? names[kind] : "?", c[k].value);
    s += (s.empty() ? "" : ", ") + std::string(b);
  }
  return s;
}

void worker::check(cp::run_request const& q, worker_context& ctx) {
  for (int t = 0; t < std::max(1, q.trials); ++t) {
    trial(q, q.seed + static_cast<std::uint64_t>(t) * 0xD1B54A32D192ED03ULL, nullptr,
          "(trial " + std::to_string(t + 1) + ")");
    ctx.heartbeat();
  }
  for (std::size_t i = 0; i < q.cases.size(); ++i) {
    trial(q, q.seed ^ (0xA24BAED4963EE407ULL * (i + 1)), &q.cases[i],
          "(adversarial inputs: " + case_text(q.cases[i]) + ")");
    ctx.heartbeat();
  }
}

void worker::time(cp::run_request const& q, worker_context& ctx, cp::reply& rep) {
  const bool ab = !q.incumbent.empty();
  if (ab) ensure_outb(q);
  if (q.flush_bytes != flush_.bytes) {
    if (flush_.p) cu.cuMemFree(flush_.p);
    flush_ = buffer{};
    if (q.flush_bytes) flush_ = alloc(q.flush_bytes, "the L2 flush buffer");
  }
  cu.cuCtxResetPersistingL2Cache();
  fill(q, q.seed);
  const auto before = checksums(q);
  const int total = std::max(0, q.warmup) + std::max(1, q.samples);
  std::set<std::int32_t> checked(q.checked_calls.begin(), q.checked_calls.end());
  if (q.verify_after_timing)
    checked.insert(total - 1);
  else
    checked.clear();
  std::uint64_t pick = q.seed ^ 0x5851F42D4C957F2DULL;
  for (int i = 0; i < total; ++i) {
    for (int k = 0; k < (ab ? 2 : 1); ++k) {
      const bool second = ab && ((i % 2 == 0) == (k == 1));  // ABBA: neither side always goes first
      pick = pick * 6364136223846793005ULL + 1442695040888963407ULL;
      set_views((pick >> 33) % view_offsets);
      poison(second ? outb_ : out_, q, false);
      if (flush_.p) cu.cuMemsetD32Async(flush_.p, static_cast<unsigned>(i), flush_.bytes / 4, dc_.stream);
      float ms = 0;
      run_plan(second ? q.incumbent : q.cand, q, second ? outb_ : out_,
               second ? "the incumbent (timed)" : "the candidate (timed)", &ms);
      if (i >= q.warmup) (second ? rep.samples_b : rep.samples_a).push_back(ms * 1e-3);
      if (!second && checked.count(i)) {
        const std::string when = "in timed call " + std::to_string(i + 1) + " of " + std::to_string(total);
        poison(ref_, q, false);
        run_plan(q.ref, q, ref_, "the reference");
        compare(q, out_, out_, false, when);
      }
    }
    ctx.heartbeat();
  }
  set_views(0);
  if (q.verify_after_timing) verify_inputs(q, before, "during the timed runs");
}

}  // namespace kernelbrain::cuda_worker
