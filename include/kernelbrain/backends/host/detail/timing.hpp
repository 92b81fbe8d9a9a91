// host_timing: the host backend's timed runs at one shape. The candidate (and the incumbent,
// interleaved, when given) is timed in the candidate worker, every call on inputs of its own
// (inputs.hpp: windows of random fields, near-copies before the checked call); the samples are
// checked against the parent's own clock, and afterwards the parent checks that the input regions
// were left alone, and the outputs of the last call and of the randomly chosen checked call against
// the reference on their own inputs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/backends/host/detail/arena.hpp"
#include "kernelbrain/backends/host/detail/inputs.hpp"
#include "kernelbrain/backends/host/detail/output_check.hpp"
#include "kernelbrain/backends/host/detail/reference.hpp"
#include "kernelbrain/backends/host/detail/shapes.hpp"
#include "kernelbrain/backends/host/detail/worker.hpp"
#include "kernelbrain/backends/host/options.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::detail::host {

class shape_timer {
 public:
  /// Everything passed in must outlive this object. `flush_bytes`: written before every timed call.
  shape_timer(problem const& p, host_options const& opt, std::vector<shape_plan> const& shapes, reference_oracle& ref,
              host_worker& cand, std::uint64_t flush_bytes)
      : prob_(p), opt_(opt), shapes_(shapes), ref_(ref), cand_(cand), flush_bytes_(flush_bytes) {}

  /// Times `a` (and `b`, interleaved, when given) at shape `s` as rung `r` asks, on inputs planned
  /// from `seed`; the last call and a randomly chosen timed call are checked. `out` receives the
  /// samples. Throws reference_failure when the reference fails.
  verdict time(std::string const& a, std::string const* b, std::size_t s, rung const& r, std::uint64_t seed,
               host_protocol::reply& out) {
    auto const& sp = shapes_[s];
    auto const& l = sp.layout;
    auto& arena = cand_.arena();
    if (b)
      cand_.admit({&a, b}, opt_.modules_per_worker);
    else
      cand_.admit({&a}, opt_.modules_per_worker);
    const int warmup = std::max(0, r.warmup), samples = std::max(1, r.samples);
    const auto plan = plan_timing_inputs(prob_, sp, seed, warmup, samples, b ? 2 : 1, true);
    stage_timing(arena, l, plan, nan_poison);
    auto q = timing_request(sp, plan, a, opt_.candidate_memory, b ? *b : std::string{});
    q.warmup = warmup;
    q.samples = samples;
    q.flush_bytes = flush_bytes_;
    q.poison_bits = nan_poison;
    const std::string where = "at shape " + sp.label + ", timing";
    host_worker::timed t;
    if (auto v = cand_.time(q, "kb_kernel " + where, t, opt_.on_timing_request); !v) return v;
    out = std::move(t.reply);
    if (out.samples_a.size() != static_cast<std::size_t>(q.samples) ||
        (b && out.samples_b.size() != out.samples_a.size()))
      return verdict::reject(stage::infrastructure, "the worker returned the wrong number of samples " + where);
    // The executor's clock is read in the candidate's process; the parent's own clock is the check.
    double total = 0;
    for (double x : out.samples_a) total += x;
    for (double x : out.samples_b) total += x;
    if (total > t.wall_seconds * 1.01 + 1e-3)
      return verdict::reject(stage::impossible, "the worker reported " + num(total) + " s of samples in " +
                                                    num(t.wall_seconds) + " s of wall time " + where +
                                                    " (was the timer tampered with?)");
    // Nothing outside the outputs written, the input regions as staged; then the outputs of the
    // checked call and of the last one against the reference on the very inputs each call read.
    const int last = q.calls() - 1;
    auto call_text = [&](int i) {
      const std::string of = std::to_string(i + 1) + " of " + std::to_string(q.calls());
      if (i == last) return where + " (the last timed call, " + of + ")";
      return where + " (timed call " + of +
             (plan.copies.empty() ? std::string(")") : ", on a near-copy of an earlier call's inputs)");
    };
    if (auto v = check_canaries(l, arena, where); !v) return v;
    if (auto v = check_unchanged(l.fields, arena, plan.fields, where); !v) return v;
    if (auto v = check_unchanged(l.copies, arena, plan.copies, where); !v) return v;
    if (plan.checked >= 0) {
      const auto rc = ref_.on(s, plan.inputs_of(sp, plan.checked, 0), sp.label + " (a checked timed call)");
      if (auto v = check_values(prob_, l.checked, arena, rc.outputs, nan_poison, call_text(plan.checked), true); !v)
        return v;
    }
    const auto rc = ref_.on(s, plan.inputs_of(sp, last, 0), sp.label + " (the last timed call)");
    return check_values(prob_, l.outputs, arena, rc.outputs, nan_poison, call_text(last), true);
  }

 private:
  problem const& prob_;
  host_options const& opt_;
  std::vector<shape_plan> const& shapes_;
  reference_oracle& ref_;
  host_worker& cand_;
  std::uint64_t flush_bytes_;
};

}  // namespace kernelbrain::detail::host
