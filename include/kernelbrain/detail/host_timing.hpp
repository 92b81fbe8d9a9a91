// host_timing: the host backend's timed runs at one shape. The candidate (and the incumbent,
// interleaved, when given) is timed in the candidate worker; the samples are checked against the
// parent's own clock, and the last timed call, which gets a fresh input set, is checked like any
// trial. Where: kernelbrain/detail/, named after its job (shape_timer), because it is an internal
// part of one backend, not the body of a public header (those are evaluate/impl/*.ipp); its bodies
// are inline here, and only evaluate/impl/host.ipp includes it, so a separately compiled build still
// compiles them once.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/detail/host_arena.hpp"
#include "kernelbrain/detail/host_output_check.hpp"
#include "kernelbrain/detail/host_reference.hpp"
#include "kernelbrain/detail/host_shapes.hpp"
#include "kernelbrain/detail/host_worker.hpp"
#include "kernelbrain/evaluate/host.hpp"

namespace kernelbrain::detail::host {

class shape_timer {
 public:
  /// Everything passed in must outlive this object. `flush_bytes`: written before every timed call.
  shape_timer(problem const& p, host_options const& opt, std::vector<shape_plan> const& shapes, reference_oracle& ref,
              host_worker& cand, std::uint64_t flush_bytes)
      : prob_(p), opt_(opt), shapes_(shapes), ref_(ref), cand_(cand), flush_bytes_(flush_bytes) {}

  /// Times `a` (and `b`, interleaved, when given) at shape `s` as rung `r` asks, on inputs drawn from
  /// `seed`; the last timed call gets inputs drawn from `last_seed` and its outputs are checked. `out`
  /// receives the samples. Throws reference_failure when the reference fails.
  verdict time(std::string const& a, std::string const* b, std::size_t s, rung const& r, std::uint64_t seed,
               std::uint64_t last_seed, host_protocol::reply& out) {
    auto const& sp = shapes_[s];
    auto const& l = sp.layout;
    auto const& check_case = ref_.at(s, seed);
    auto const& last_case = ref_.at(s, last_seed);
    auto& arena = cand_.arena();
    if (b)
      cand_.admit({&a, b}, opt_.modules_per_worker);
    else
      cand_.admit({&a}, opt_.modules_per_worker);
    stage_arena(arena, l, check_case.inputs, nan_poison);
    write_inputs(arena, l.last_inputs, last_case.inputs);
    host_protocol::time_request q;
    q.a = run_request_for(sp, a, opt_.candidate_memory);
    if (b) {
      q.module_b = *b;
      q.outputs_b = refs(l.outputs_b);
    }
    for (auto const& li : l.last_inputs) q.last_inputs.push_back(li.offset);
    q.warmup = std::max(0, r.warmup);
    q.samples = std::max(1, r.samples);
    q.flush_bytes = flush_bytes_;
    q.poison_bits = nan_poison;
    const std::string where = "at shape " + sp.label + ", timing";
    host_worker::timed t;
    if (auto v = cand_.time(q, "kb_kernel " + where, t, opt_.on_timing_request); !v) return v;
    out = std::move(t.reply);
    if (out.samples_a.size() != static_cast<std::size_t>(q.samples) ||
        (b && out.samples_b.size() != out.samples_a.size()))
      return verdict::reject(stage::infrastructure, "the worker returned the wrong number of samples " + where);
    // The worker shares an address space with the candidate; the parent's own clock is the check.
    double total = 0;
    for (double x : out.samples_a) total += x;
    for (double x : out.samples_b) total += x;
    if (total > t.wall_seconds * 1.01 + 1e-3)
      return verdict::reject(stage::impossible, "the worker reported " + num(total) + " s of samples in " +
                                                    num(t.wall_seconds) + " s of wall time " + where +
                                                    " (was the timer tampered with?)");
    return check_outputs(prob_, l, arena, last_case, nan_poison, where + " (last timed call)", true);
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
