// Bodies of kernelbrain/backends/cuda/diagnosis.hpp, included by it (header-only form) or by
// kernelbrain/src.hpp (separate compilation): see kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include "kernelbrain/backends/cuda/diagnosis.hpp"

namespace kernelbrain {

namespace detail::diag {

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string
format(char const* f, ...) {
  char b[512];
  va_list a;
  va_start(a, f);
  std::vsnprintf(b, sizeof b, f, a);
  va_end(a);
  return b;
}

/// `v` to 4 significant digits: values that read well and round-trip through render.
inline double round4(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  char b[64];
  std::snprintf(b, sizeof b, "%.4g", v);
  return std::strtod(b, nullptr);
}

inline std::optional<double> get(std::map<std::string, double> const& m, std::string_view name) {
  auto it = m.find(std::string(name));
  if (it == m.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

inline diagnosis_tag tag(std::string_view name, double value, std::string detail) {
  return diagnosis_tag{std::string(name), round4(value), std::move(detail)};
}

/// "1.23 ms", "45.6 us", "789 ns".
inline std::string seconds_text(double s) {
  if (s >= 1) return format("%.3g s", s);
  if (s >= 1e-3) return format("%.3g ms", s * 1e3);
  if (s >= 1e-6) return format("%.3g us", s * 1e6);
  return format("%.3g ns", s * 1e9);
}
/// "1.23 GB", "456 MB", ...; `unit` "B" or "FLOP".
inline std::string amount_text(double v, char const* unit) {
  if (v >= 1e12) return format("%.3g T%s", v / 1e12, unit);
  if (v >= 1e9) return format("%.3g G%s", v / 1e9, unit);
  if (v >= 1e6) return format("%.3g M%s", v / 1e6, unit);
  if (v >= 1e3) return format("%.3g K%s", v / 1e3, unit);
  return format("%.3g %s", v, unit);
}

inline std::size_t vocabulary_rank(std::string_view name) {
  for (std::size_t i = 0; i < std::size(diagnosis_vocabulary); ++i)
    if (diagnosis_vocabulary[i] == name) return i;
  return std::size(diagnosis_vocabulary);
}

inline void sort_by_vocabulary(std::vector<diagnosis_tag>& tags) {
  std::stable_sort(tags.begin(), tags.end(), [](diagnosis_tag const& a, diagnosis_tag const& b) {
    return vocabulary_rank(a.name) < vocabulary_rank(b.name);
  });
}

/// "registers allow 1 block per SM (shared memory would allow 7, the block limit 32, warps 8)": every
/// limit, the binding one first.
inline std::string limits_text(char const* first, std::int64_t first_blocks, std::int64_t regs, std::int64_t smem,
                               std::int64_t blocks, std::int64_t warps) {
  const bool plural = std::string_view(first) == "registers" || std::string_view(first) == "warps";
  std::string s = format("%s allow%s %lld block%s per SM", first, plural ? "" : "s",
                         static_cast<long long>(first_blocks), first_blocks == 1 ? "" : "s");
  std::string others;
  auto add = [&](char const* what, std::int64_t v) {
    if (std::string_view(what) == first || v < 0) return;
    others += format("%s%s%s %lld", others.empty() ? "" : ", ", what, others.empty() ? " would allow" : "",
                     static_cast<long long>(v));
  };
  add("registers", regs);
  add("shared memory", smem);
  add("the block limit", blocks);
  add("warps", warps);
  return others.empty() ? s : s + " (" + others + ")";
}

/// Scale of a unit that ncu printed scaled (without --print-units base) to its base: bytes, and
/// nanoseconds for time. 1 for base units and anything unknown.
inline double unit_scale(std::string_view unit) {
  if (unit == "usecond") return 1e3;
  if (unit == "msecond") return 1e6;
  if (unit == "second") return 1e9;
  if (unit.size() > 1 && (unit[0] == 'K' || unit[0] == 'M' || unit[0] == 'G' || unit[0] == 'T')) {
    const auto rest = unit.substr(1);
    static constexpr std::string_view bases[] = {"byte", "cycle",  "inst",  "sector",   "request",
                                                 "warp", "thread", "block", "wavefront"};
    for (auto b : bases)
      if (rest.starts_with(b)) {
        switch (unit[0]) {
          case 'K':
            return 1e3;
          case 'M':
            return 1e6;
          case 'G':
            return 1e9;
          default:
            return 1e12;
        }
      }
  }
  return 1;
}

/// One CSV record (a line: ncu writes no line breaks inside fields). Quoted fields may hold commas
/// and "" for a quote; unquoted fields are taken as they are.
inline std::vector<std::string> csv_fields(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    std::string f;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        f += line[i++];
      }
      while (i < line.size() && line[i] != ',') ++i;  // anything after the closing quote
    } else {
      while (i < line.size() && line[i] != ',') f += line[i++];
    }
    out.push_back(std::move(f));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return out;
}

/// A metric value as ncu prints it ("1,234,567", "12.5", "n/a"): nullopt when not a number.
inline std::optional<double> csv_number(std::string_view text) {
  std::string s;
  for (char c : text)
    if (c != ',' && c != ' ') s += c;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

inline bool is_index(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// ---- the profiled rules: ncu metrics -> tags, one row per tag ------------------------------------------

namespace th = diagnosis_thresholds;
namespace dn = diagnosis_names;

struct profile_rule;

/// What a rule sees: the values of its row's metrics (in[i]: the row's i-th metric; nullopt when
/// missing or not finite), the shape's roofline position, and its row (threshold, words).
struct rule_inputs {
  std::map<std::string, double> const& metrics;
  roofline_position const& roof;
  profile_rule const& row;
  std::optional<double> operator[](std::size_t i) const;
};

/// A rule that fires: the tag's value (rounded by tag()) and its detail.
struct rule_finding {
  double value;
  std::string detail;
};

/// One rule that turns ncu metrics into a tag: the tag, the metrics it reads (a missing one skips
/// the rule where the condition needs it), the threshold from diagnosis_thresholds its condition
/// compares against (others it needs are named in it), words its message takes (where rows share a
/// condition: stalls, coalescing), and the condition with the message (nullopt: no tag).
struct profile_rule {
  std::string_view tag;
  std::string_view metrics[7];
  double threshold;
  std::string_view words;
  std::optional<rule_finding> (*fire)(rule_inputs const& in);
};

inline std::optional<double> rule_inputs::operator[](std::size_t i) const { return get(metrics, row.metrics[i]); }

/// Global load (or store) efficiency: the rows "uncoalesced loads" and "uncoalesced stores", whose
/// metrics are the efficiency, sectors and requests of their op, and whose words say what was used.
inline std::optional<rule_finding> coalescing(rule_inputs const& in) {
  const auto eff = in[0], sectors = in[1], requests = in[2];
  const std::string what(in.row.words);
  const std::optional<double> spr =
      sectors && requests && *requests > 0 ? std::optional<double>(*sectors / *requests) : std::nullopt;
  const std::string per_request =
      spr ? format("; %.1f sectors per request (4 is ideal for 4-byte words, 16 for 16-byte vectors)", *spr) : "";
  // An efficiency of 0 with sectors moved: the SASS metric saw none of the loads that moved them (on the
  // H200, kernels whose global traffic goes through cp.async or the cluster's shared memory read 0%):
  // no evidence either way, so no tag.
  if (eff && *eff <= 0 && sectors && *sectors > 0) return std::nullopt;
  if (eff && (!sectors || *sectors > 0)) {
    if (*eff < in.row.threshold)
      return rule_finding{
          *eff, format("only %.1f of each 32-byte sector %s used (%.1f%%)", 32 * *eff / 100, what.c_str(), *eff) +
                    per_request + ": neighbouring threads touch different sectors"};
  } else if (!eff && spr && *spr > th::max_coalesced_sectors_per_request) {
    return rule_finding{400 / *spr, format("%.1f sectors per request (4 is ideal for 4-byte words, 16 for 16-byte "
                                           "vectors; at 4-byte words %.1f%% of each sector %s used)",
                                           *spr, 400 / *spr, what.c_str())};
  }
  return std::nullopt;
}

/// The launch's occupancy limits from ncu (the occupancy rows' metrics 0-5: theoretical occupancy,
/// the register, shared-memory, block and warp limits, the block size): nullopt without the
/// theoretical occupancy or any limit.
struct profiled_limits {
  double theo;
  std::int64_t r, s, b, w, least;
  std::string head;
};
inline std::optional<profiled_limits> occupancy_limits(rule_inputs const& in) {
  const auto theo = in[0], lr = in[1], ls = in[2], lb = in[3], lw = in[4], block = in[5];
  if (!theo || !(lr || ls || lb || lw)) return std::nullopt;
  auto as_int = [](std::optional<double> v) { return v ? static_cast<std::int64_t>(std::llround(*v)) : -1; };
  profiled_limits p{*theo, as_int(lr), as_int(ls), as_int(lb), as_int(lw), -1, {}};
  for (auto v : {p.r, p.s, p.b, p.w})
    if (v >= 0 && (p.least < 0 || v < p.least)) p.least = v;
  p.head = format("theoretical occupancy %.1f%%%s: ", *theo,
                  block ? format(" (blocks of %.0f threads)", *block).c_str() : "");
  return p;
}

/// A stall reason's share of the cycles between a warp's issued instructions: the stall rows, whose
/// metrics are the total and the reason's cycles per issued instruction, and whose words say what
/// the warps wait for.
inline std::optional<rule_finding> stall_share(rule_inputs const& in) {
  const auto total = in[0], v = in[1];
  if (!(total && *total > 0 && v)) return std::nullopt;
  const double share = *v / *total;
  if (!(share >= in.row.threshold)) return std::nullopt;
  return rule_finding{100 * share, format("%.0f%% of warp cycles per issued instruction (%.1f of %.1f) %s", 100 * share,
                                          *v, *total, std::string(in.row.words).c_str())};
}

inline constexpr std::string_view dram_pct = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view sm_pct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view theoretical_pct = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr std::string_view warp_latency = "smsp__average_warp_latency_per_inst_issued.ratio";
/// The profiled rules, one row per tag (diagnose_profile lists what fires in vocabulary order).
inline constexpr profile_rule profile_rules[] = {
    // Throughput against peak.
    {dn::near_bandwidth,
     {dram_pct, sm_pct},
     th::dram_near_pct,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto dram = in[0], sm = in[1];
       if (!(dram && *dram >= in.row.threshold)) return std::nullopt;
       return rule_finding{
           *dram, format("DRAM throughput %.0f%% of peak%s", *dram, sm ? format(" (SM %.0f%%)", *sm).c_str() : "")};
     }},
    {dn::compute_bound,
     {dram_pct, sm_pct},
     th::compute_bound_sm_pct,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto dram = in[0], sm = in[1];
       if (!(dram && sm && *sm >= in.row.threshold && *dram < th::compute_bound_dram_pct)) return std::nullopt;
       return rule_finding{
           *sm, format("SM throughput %.0f%% of peak (its busiest pipe or L1) with DRAM at %.0f%%", *sm, *dram)};
     }},
    {dn::latency_bound,
     {dram_pct, sm_pct},
     th::latency_bound_pct,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto dram = in[0], sm = in[1];
       if (!(dram && sm && *sm < in.row.threshold && *dram < in.row.threshold)) return std::nullopt;
       return rule_finding{std::max(*sm, *dram),
                           format("SM throughput %.0f%% and DRAM %.0f%% of peak: neither is busy, "
                                  "warps wait (dependent memory accesses, too little parallelism)",
                                  *sm, *dram)};
     }},
    // DRAM traffic against the minimum.
    {dn::excess_memory_traffic,
     {"dram__bytes_read.sum", "dram__bytes_write.sum"},
     th::excess_traffic_ratio,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto rd = in[0], wr = in[1];
       if (!((rd || wr) && in.roof.bytes > 0)) return std::nullopt;
       const double bytes = rd.value_or(0) + wr.value_or(0);
       const double ratio = bytes / in.roof.bytes;
       if (!(ratio >= in.row.threshold)) return std::nullopt;
       return rule_finding{
           ratio, format("%s of DRAM traffic (%s read, %s written) for a minimum of %s: %.2fx (caches "
                         "flushed before each profiled launch)",
                         amount_text(bytes, "B").c_str(), amount_text(rd.value_or(0), "B").c_str(),
                         amount_text(wr.value_or(0), "B").c_str(), amount_text(in.roof.bytes, "B").c_str(), ratio)};
     }},
    {dn::low_l2_hit_rate,
     {"lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct", "dram__bytes_read.sum", "dram__bytes_write.sum"},
     th::low_l2_hit_pct,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       // Only with excess memory traffic.
       const auto l2 = in[0], l1 = in[1], rd = in[2], wr = in[3];
       if (!((rd || wr) && in.roof.bytes > 0)) return std::nullopt;
       const double ratio = (rd.value_or(0) + wr.value_or(0)) / in.roof.bytes;
       if (!(ratio >= th::excess_traffic_ratio && l2 && *l2 < in.row.threshold)) return std::nullopt;
       return rule_finding{
           *l2, format("L2 hit rate %.0f%%%s while DRAM moves %.2fx the minimal bytes: data is fetched from DRAM again",
                       *l2, l1 ? format(" (L1 %.0f%%)", *l1).c_str() : "", ratio)};
     }},
    // Coalescing of global loads and stores.
    {dn::uncoalesced_loads,
     {"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"},
     th::coalesced_pct,
     "loaded is",
     coalescing},
    {dn::uncoalesced_stores,
     {"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
      "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"},
     th::coalesced_pct,
     "stored is",
     coalescing},
    // Shared-memory bank conflicts.
    {dn::bank_conflicts,
     {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
      "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"},
     th::bank_conflict_fraction,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto cl = in[0], cs = in[1], wl = in[2], ws = in[3];
       const double conflicts = cl.value_or(0) + cs.value_or(0), wavefronts = wl.value_or(0) + ws.value_or(0);
       if (!((cl || cs) && wavefronts > 0 && conflicts / wavefronts >= in.row.threshold)) return std::nullopt;
       const double share = std::min(1.0, conflicts / wavefronts);
       const std::string ways = wavefronts > conflicts
                                    ? format("%.2f-way on average", wavefronts / (wavefronts - conflicts))
                                    : "every access";
       return rule_finding{100 * share,
                           format("%.0f%% of shared-memory wavefronts are bank-conflict replays (%s; %.3g of %.3g "
                                  "wavefronts, loads %.3g, stores %.3g conflicts)",
                                  100 * share, ways.c_str(), conflicts, wavefronts, cl.value_or(0), cs.value_or(0))};
     }},
    // Occupancy.
    {dn::limited_by_registers,
     {theoretical_pct, "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
      "launch__occupancy_limit_blocks", "launch__occupancy_limit_warps", "launch__block_size",
      "launch__registers_per_thread"},
     th::limited_occupancy,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto p = occupancy_limits(in);
       if (!(p && p->theo / 100 < in.row.threshold && p->r == p->least)) return std::nullopt;
       const auto regs = in[6];
       return rule_finding{p->theo, p->head + limits_text("registers", p->r, p->r, p->s, p->b, p->w) +
                                        (regs ? format("; %.0f registers per thread", *regs) : std::string{})};
     }},
    {dn::limited_by_shared_memory,
     {theoretical_pct, "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
      "launch__occupancy_limit_blocks", "launch__occupancy_limit_warps", "launch__block_size"},
     th::limited_occupancy,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto p = occupancy_limits(in);
       if (!(p && p->theo / 100 < in.row.threshold && p->s == p->least)) return std::nullopt;
       return rule_finding{p->theo, p->head + limits_text("shared memory", p->s, p->r, p->s, p->b, p->w)};
     }},
    {dn::limited_by_block_size,
     {theoretical_pct, "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
      "launch__occupancy_limit_blocks", "launch__occupancy_limit_warps", "launch__block_size"},
     th::limited_occupancy,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto p = occupancy_limits(in);
       if (!(p && p->theo / 100 <= in.row.threshold && (p->b == p->least || p->w == p->least) && p->r != p->least &&
             p->s != p->least))
         return std::nullopt;
       return rule_finding{p->theo, p->head + limits_text(p->b == p->least ? "the block limit" : "warps", p->least,
                                                          p->r, p->s, p->b, p->w)};
     }},
    {dn::low_achieved_occupancy,
     {theoretical_pct, "sm__warps_active.avg.pct_of_peak_sustained_active"},
     th::achieved_over_theoretical,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto theo = in[0], ach = in[1];
       if (!(theo && ach && *theo > 0 && *ach / *theo < in.row.threshold)) return std::nullopt;
       return rule_finding{*ach, format("achieved occupancy %.1f%% against a theoretical %.1f%%: blocks finish "
                                        "unevenly, or too few blocks per SM",
                                        *ach, *theo)};
     }},
    // Grid and waves.
    {dn::tail_effect,
     {"launch__waves_per_multiprocessor", "launch__grid_size"},
     th::tail_idle_fraction,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto waves = in[0], grid = in[1];
       if (!(waves && *waves > 1)) return std::nullopt;
       const double full = std::ceil(*waves);
       if (!((full - *waves) / full >= in.row.threshold - 1e-9)) return std::nullopt;
       return rule_finding{*waves, format("%.2f waves%s: the last wave fills %.0f%% of the GPU, about %.0f%% of SM "
                                          "time idle",
                                          *waves, grid ? format(" of %.0f blocks", *grid).c_str() : "",
                                          100 * (*waves - (full - 1)), 100 * (full - *waves) / full)};
     }},
    {dn::small_grid,
     {"launch__grid_size", "device__attribute_multiprocessor_count"},
     0,
     "",
     [](rule_inputs const& in) -> std::optional<rule_finding> {
       const auto grid = in[0], sms = in[1];
       if (!(grid && sms && *grid < *sms)) return std::nullopt;
       return rule_finding{*grid, format("%.0f blocks for %.0f SMs: %.0f SMs have no work", *grid, *sms, *sms - *grid)};
     }},
    // Stall reasons, as shares of the cycles between a warp's issued instructions.
    {dn::long_scoreboard_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"},
     th::long_scoreboard_share,
     "wait on global, local or texture memory results (L1TEX)",
     stall_share},
    {dn::barrier_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"},
     th::other_stall_share,
     "wait at a barrier (__syncthreads)",
     stall_share},
    {dn::mio_throttle_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"},
     th::other_stall_share,
     "wait for the MIO queue (shared memory, special math, shuffles)",
     stall_share},
    {dn::short_scoreboard_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"},
     th::other_stall_share,
     "wait on MIO results (shared-memory loads, special math)",
     stall_share},
    {dn::lg_throttle_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio"},
     th::other_stall_share,
     "wait for the LSU queue of global/local memory instructions",
     stall_share},
    {dn::math_pipe_stalls,
     {warp_latency, "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio"},
     th::math_pipe_share,
     "wait for a busy math pipe",
     stall_share},
};

}  // namespace detail::diag

sm_resources sm_resources_for_arch(std::string_view arch) {
  auto const* row = find_gpu_arch(arch);
  if (!row) row = find_gpu_arch("sm_90");
  if (!row) return sm_resources{};
  auto const& sm = row->sm;
  return sm_resources{row->arch,    row->compute_capability, sm.max_warps,    sm.max_blocks,
                      sm.registers, sm.register_unit,        sm.shared_bytes, sm.reserved_smem_per_block,
                      sm.count};
}

std::optional<occupancy_estimate> estimate_occupancy(launch_facts const& l, sm_resources const& sm) {
  if (l.registers < 0 || l.threads_per_block <= 0 || sm.max_warps <= 0) return std::nullopt;
  occupancy_estimate e;
  e.warps_per_block = (l.threads_per_block + 31) / 32;
  const std::int64_t unit = std::max(sm.register_unit, 1);
  const std::int64_t regs_per_warp = ((std::max(l.registers, 1) * std::int64_t{32} + unit - 1) / unit) * unit;
  e.by_registers = sm.registers / std::max<std::int64_t>(1, regs_per_warp * e.warps_per_block);
  e.by_shared =
      sm.shared_bytes / std::max<std::int64_t>(1, std::max<std::int64_t>(l.shared_bytes, 0) + sm.reserved_shared);
  e.by_warps = sm.max_warps / e.warps_per_block;
  e.by_blocks = sm.max_blocks;
  e.blocks = std::min({e.by_registers, e.by_shared, e.by_warps, e.by_blocks});
  e.occupancy = static_cast<double>(e.blocks * e.warps_per_block) / sm.max_warps;
  return e;
}

roofline_position roofline_at(shape const& s, roofline const& machine, double measured_seconds) {
  roofline_position r;
  r.bytes = s.bytes;
  r.flops = s.flops;
  r.measured_seconds = measured_seconds;
  const double mem = machine.bytes_per_second > 0 ? s.bytes / machine.bytes_per_second : 0;
  const double math = machine.flops_per_second > 0 ? s.flops / machine.flops_per_second : 0;
  r.memory_bound = mem >= math;
  r.floor_seconds = std::max(mem, math);
  if (r.floor_seconds > 0 && measured_seconds > 0 && std::isfinite(measured_seconds))
    r.fraction = r.floor_seconds / measured_seconds;
  return r;
}

std::vector<diagnosis_tag> diagnose_static(resources const& res, sm_resources const& sm, roofline_position const& roof,
                                           std::optional<launch_facts> const& launch, int sm_count) {
  using namespace diagnosis_names;
  namespace th = diagnosis_thresholds;
  using detail::diag::format;
  std::vector<diagnosis_tag> out;

  // Roofline position.
  if (roof.fraction > 0 && roof.measured_seconds > 0) {
    const double pct = 100 * roof.fraction;
    const std::string floor_is = roof.memory_bound
                                     ? detail::diag::amount_text(roof.bytes, "B") + " at " +
                                           detail::diag::amount_text(roof.bytes / roof.floor_seconds, "B/s")
                                     : detail::diag::amount_text(roof.flops, "FLOP") + " at " +
                                           detail::diag::amount_text(roof.flops / roof.floor_seconds, "FLOP/s");
    const std::string d = format("%.0f%% of the roofline floor's speed: %s measured, floor %s (%s)", pct,
                                 detail::diag::seconds_text(roof.measured_seconds).c_str(),
                                 detail::diag::seconds_text(roof.floor_seconds).c_str(), floor_is.c_str());
    if (roof.fraction >= th::near_roofline)
      out.push_back(detail::diag::tag(roof.memory_bound ? near_bandwidth : near_compute_peak, pct, d));
    else if (roof.fraction < th::far_below_roofline)
      out.push_back(detail::diag::tag(roof.memory_bound ? far_below_bandwidth : far_below_compute_peak, pct,
                                      d + format("; %.1fx from the floor", 1 / roof.fraction)));
  }

  // Spills.
  if (res.spill_bytes > 0)
    out.push_back(detail::diag::tag(
        register_spills, res.spill_bytes,
        format("%d bytes of register spills per thread at %d registers (ptxas spill stores + loads; the local "
               "stack frame when ptxas printed no report): local-memory traffic through L1 and L2",
               res.spill_bytes, res.registers)));

  // Occupancy, grid and waves of the main launch.
  if (launch) {
    if (auto e = estimate_occupancy(*launch, sm)) {
      const double pct = 100 * e->occupancy;
      const auto warps = e->blocks * e->warps_per_block;
      const std::string head =
          format("theoretical occupancy %.1f%% (%lld of %d warps per SM, blocks of %lld threads): ", pct,
                 static_cast<long long>(warps), sm.max_warps, static_cast<long long>(launch->threads_per_block));
      if (e->occupancy < th::limited_occupancy && e->by_registers == e->blocks)
        out.push_back(detail::diag::tag(limited_by_registers, pct,
                                        head +
                                            detail::diag::limits_text("registers", e->by_registers, e->by_registers,
                                                                      e->by_shared, e->by_blocks, e->by_warps) +
                                            format("; %d registers per thread, %lld per SM", launch->registers,
                                                   static_cast<long long>(sm.registers))));
      if (e->occupancy < th::limited_occupancy && e->by_shared == e->blocks)
        out.push_back(detail::diag::tag(
            limited_by_shared_memory, pct,
            head +
                detail::diag::limits_text("shared memory", e->by_shared, e->by_registers, e->by_shared, e->by_blocks,
                                          e->by_warps) +
                format("; %lld bytes per block + %lld reserved, %lld per SM",
                       static_cast<long long>(launch->shared_bytes), static_cast<long long>(sm.reserved_shared),
                       static_cast<long long>(sm.shared_bytes))));
      // A 1-warp block reaches exactly half the warps on sm_90 (32 blocks of 1 warp): "at most".
      if (e->occupancy <= th::limited_occupancy && (e->by_blocks == e->blocks || e->by_warps == e->blocks) &&
          e->by_registers != e->blocks && e->by_shared != e->blocks)
        out.push_back(detail::diag::tag(
            limited_by_block_size, pct,
            head + detail::diag::limits_text(e->by_blocks == e->blocks ? "the block limit" : "warps", e->blocks,
                                             e->by_registers, e->by_shared, e->by_blocks, e->by_warps)));
      if (sm_count > 0 && launch->blocks > 0 && e->blocks > 0) {
        const double capacity = static_cast<double>(e->blocks) * sm_count;
        const double w = static_cast<double>(launch->blocks) / capacity;
        const double full = std::ceil(w);
        if (w > 1 && (full - w) / full >= th::tail_idle_fraction - 1e-9)
          out.push_back(detail::diag::tag(
              tail_effect, w,
              format("%.2f waves of %lld blocks (%lld per SM on %d SMs): the last wave fills %.0f%% of the GPU, "
                     "about %.0f%% of SM time idle",
                     w, static_cast<long long>(launch->blocks), static_cast<long long>(e->blocks), sm_count,
                     100 * (w - (full - 1)), 100 * (full - w) / full)));
      }
    }
    if (sm_count > 0 && launch->blocks > 0 && launch->blocks < sm_count)
      out.push_back(detail::diag::tag(
          small_grid, static_cast<double>(launch->blocks),
          format("%lld blocks for %d SMs: %lld SMs have no work", static_cast<long long>(launch->blocks), sm_count,
                 static_cast<long long>(sm_count - launch->blocks))));
  }
  detail::diag::sort_by_vocabulary(out);
  return out;
}

std::vector<diagnosis_tag> diagnose_profile(std::map<std::string, double> const& m, roofline_position const& roof) {
  std::vector<diagnosis_tag> out;
  for (auto const& row : detail::diag::profile_rules)
    if (auto f = row.fire(detail::diag::rule_inputs{m, roof, row}))
      out.push_back(detail::diag::tag(row.tag, f->value, std::move(f->detail)));
  detail::diag::sort_by_vocabulary(out);
  return out;
}

std::vector<diagnosis_tag> merge_diagnoses(std::vector<diagnosis_tag> const& profiled,
                                           std::vector<diagnosis_tag> const& statics,
                                           std::map<std::string, double> const& metrics) {
  using namespace diagnosis_names;
  std::vector<diagnosis_tag> out = profiled;
  const bool has_occupancy = metrics.count("launch__occupancy_limit_registers") > 0 ||
                             metrics.count("sm__maximum_warps_per_active_cycle_pct") > 0;
  const bool has_waves = metrics.count("launch__waves_per_multiprocessor") > 0;
  const bool has_grid =
      metrics.count("launch__grid_size") > 0 && metrics.count("device__attribute_multiprocessor_count") > 0;
  for (auto const& t : statics) {
    if (std::any_of(out.begin(), out.end(), [&](diagnosis_tag const& p) { return p.name == t.name; })) continue;
    if (has_occupancy &&
        (t.name == limited_by_registers || t.name == limited_by_shared_memory || t.name == limited_by_block_size))
      continue;
    if (has_waves && t.name == tail_effect) continue;
    if (has_grid && t.name == small_grid) continue;
    out.push_back(t);
  }
  detail::diag::sort_by_vocabulary(out);
  return out;
}

std::vector<diagnosis_tag> diagnose(std::vector<diagnosis_tag> const& statics,
                                    std::map<std::string, double> const& metrics, roofline_position const& roof,
                                    std::string const& why_not) {
  if (!why_not.empty()) {
    auto out = statics;
    out.push_back(diagnosis_tag{std::string(diagnosis_names::profiler_unavailable), 0, why_not});
    detail::diag::sort_by_vocabulary(out);
    return out;
  }
  return merge_diagnoses(diagnose_profile(metrics, roof), statics, metrics);
}

std::string render(std::vector<diagnosis_tag> const& tags) {
  std::string out;
  for (auto const& t : tags) {
    if (!out.empty()) out += '\n';
    char b[64];
    const auto r = std::to_chars(b, b + sizeof b, t.value);
    std::string detail = t.detail;
    for (char& c : detail)
      if (c == '\n' || c == '\r') c = ' ';
    std::string name = t.name;
    for (char& c : name)
      if (c == '\n' || c == '\r' || c == '[') c = ' ';
    out += name + " [" + std::string(b, r.ec == std::errc{} ? r.ptr : b) + "]: " + detail;
  }
  return out;
}

std::vector<diagnosis_tag> parse_diagnosis(std::string_view text) {
  std::vector<diagnosis_tag> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto open = line.find(" [");
    if (open == std::string_view::npos || open == 0) continue;
    const auto close = line.find("]:", open + 2);
    if (close == std::string_view::npos) continue;
    double v = 0;
    const auto num = line.substr(open + 2, close - open - 2);
    const auto r = std::from_chars(num.data(), num.data() + num.size(), v);
    if (r.ec != std::errc{} || r.ptr != num.data() + num.size()) continue;
    auto detail = line.substr(close + 2);
    if (!detail.empty() && detail.front() == ' ') detail.remove_prefix(1);
    out.push_back(diagnosis_tag{std::string(line.substr(0, open)), v, std::string(detail)});
  }
  return out;
}

ncu_table parse_ncu_csv(std::string_view text) {
  ncu_table t;
  std::vector<std::string> header;
  std::size_t kernel_col = 0;
  std::vector<std::size_t> metric_cols;
  bool have_units = false;
  std::vector<std::string> units;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() != '"') continue;  // ==PROF== lines, the program's own output
    auto f = detail::diag::csv_fields(line);
    if (!f.empty() && f[0] == "ID") {  // a header (one per profiled process)
      const auto k = std::find(f.begin(), f.end(), "Kernel Name");
      if (k == f.end()) continue;
      header = std::move(f);
      kernel_col = static_cast<std::size_t>(k - header.begin());
      metric_cols.clear();
      for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i].find("__") != std::string::npos) metric_cols.push_back(i);
      have_units = false;
      units.assign(header.size(), std::string{});
      continue;
    }
    if (header.empty() || f.size() != header.size()) continue;
    if (f[0].empty()) {  // the units row
      if (!have_units) {
        units = f;
        have_units = true;
        for (auto c : metric_cols) t.units[header[c]] = units[c];
      }
      continue;
    }
    if (!detail::diag::is_index(f[0])) continue;
    ncu_launch l;
    l.kernel = f[kernel_col];
    for (auto c : metric_cols)
      if (auto v = detail::diag::csv_number(f[c])) l.metrics[header[c]] = *v * detail::diag::unit_scale(units[c]);
    t.launches.push_back(std::move(l));
  }
  return t;
}

std::map<std::string, double> aggregate_ncu(std::vector<ncu_launch> const& launches) {
  std::map<std::string, double> out;
  if (launches.empty()) return out;
  constexpr std::string_view duration = "gpu__time_duration.sum";
  auto weight = [&](ncu_launch const& l) {
    auto it = l.metrics.find(std::string(duration));
    return it != l.metrics.end() && std::isfinite(it->second) && it->second > 0 ? it->second : 0.0;
  };
  std::size_t longest = 0;
  for (std::size_t i = 1; i < launches.size(); ++i)
    if (weight(launches[i]) > weight(launches[longest])) longest = i;
  std::set<std::string> names;
  for (auto const& l : launches)
    for (auto const& [k, v] : l.metrics) names.insert(k);
  for (auto const& name : names) {
    const bool config = name.starts_with("launch__") || name.starts_with("device__") ||
                        name == "sm__maximum_warps_per_active_cycle_pct";
    if (config) {
      auto const& m = launches[longest].metrics;
      if (auto it = m.find(name); it != m.end() && std::isfinite(it->second)) {
        out[name] = it->second;
        continue;
      }
      // The longest launch lacks it: fall through to the first launch that has it.
      for (auto const& l : launches)
        if (auto it = l.metrics.find(name); it != l.metrics.end() && std::isfinite(it->second)) {
          out[name] = it->second;
          break;
        }
      continue;
    }
    if (name.ends_with(".sum")) {
      double s = 0;
      bool any = false;
      for (auto const& l : launches)
        if (auto it = l.metrics.find(name); it != l.metrics.end() && std::isfinite(it->second)) {
          s += it->second;
          any = true;
        }
      if (any) out[name] = s;
      continue;
    }
    // Weighted mean: by sectors for load/store efficiency, else by duration (equal without one).
    std::string by;
    if (name.starts_with("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld"))
      by = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
    else if (name.starts_with("smsp__sass_average_data_bytes_per_sector_mem_global_op_st"))
      by = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
    double sw = 0, swv = 0, sv = 0;
    std::size_t n = 0;
    for (auto const& l : launches) {
      auto it = l.metrics.find(name);
      if (it == l.metrics.end() || !std::isfinite(it->second)) continue;
      double w = weight(l);
      if (!by.empty()) {
        auto b = l.metrics.find(by);
        w = b != l.metrics.end() && std::isfinite(b->second) ? b->second : 0;
      }
      sw += w;
      swv += w * it->second;
      sv += it->second;
      ++n;
    }
    if (n == 0) continue;
    out[name] = sw > 0 ? swv / sw : sv / static_cast<double>(n);
  }
  return out;
}

}  // namespace kernelbrain
