// Diagnoses (backends/cuda/diagnosis.hpp) and the CUDA backend's ncu runner (backends/cuda/detail/profiler.hpp),
// on the CPU: ncu's CSV read from fixtures in its real format, every tag rule on both sides of its
// threshold, the text form read back, and the runner's fallbacks (no ncu, no permission, a rejected
// metric, a timeout, a failed run) with fake ncu scripts. The GPU side: tests/gpu/test_profiler.cpp.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <kernelbrain/backends/cuda/detail/profiler.hpp>
#include <kernelbrain/backends/cuda/diagnosis.hpp>
#include <kernelbrain/backends/cuda/evaluator.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "temp_dir.hpp"

using namespace kernelbrain;
namespace fs = std::filesystem;
namespace dn = kernelbrain::diagnosis_names;
using kb_test::temp_dir;

namespace {

// What `ncu --csv --page raw --print-units base --metrics ...` prints for a plan of two launches, with
// the profiled program's own line and ncu's ==PROF== lines around it. Kernel names may hold commas and
// quotes (C++ names), numbers carry thousands separators, a metric the GPU lacks reads "n/a".
constexpr char const* two_launches = R"csv(==PROF== Connected to process 4242 (/opt/kb/kernelbrain-cuda-worker)
==PROF== Profiling "k_main" - 0: 0%....50%....100% - 41 passes
==PROF== Profiling "k_tail" - 1: 0%....50%....100% - 41 passes
kernelbrain-profile: ok
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","launch__grid_size","launch__occupancy_limit_registers","smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct","sm__maximum_warps_per_active_cycle_pct"
"","","","","","","","","","","","byte","%","nsecond","sector","","block","%","%"
"0","4242","kernelbrain-cuda-worker","127.0.0.1","k_main","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","1,073,741,824","90.5","3,000,000","33,554,432","4,096","8","100","100"
"1","4242","kernelbrain-cuda-worker","127.0.0.1","void tail<float, 4>(float const*, ""x"")","1","13","(64, 1, 1)","(1, 1, 1)","0","9.0","1,024","0.5","1,000,000","32","1","n/a","12.5","50"
)csv";

std::map<std::string, double> healthy() {
  // A bandwidth-bound kernel that does everything right: near peak DRAM, coalesced, full occupancy,
  // no conflicts, many waves, memory stalls below the threshold.
  return {
      {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 85},
      {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 40},
      {"dram__bytes_read.sum", 1e9},
      {"dram__bytes_write.sum", 1e9},
      {"sm__warps_active.avg.pct_of_peak_sustained_active", 90},
      {"sm__maximum_warps_per_active_cycle_pct", 100},
      {"launch__occupancy_limit_registers", 8},
      {"launch__occupancy_limit_shared_mem", 32},
      {"launch__occupancy_limit_blocks", 32},
      {"launch__occupancy_limit_warps", 8},
      {"launch__registers_per_thread", 16},
      {"launch__block_size", 256},
      {"launch__grid_size", 132 * 8 * 16},
      {"launch__waves_per_multiprocessor", 16},
      {"device__attribute_multiprocessor_count", 132},
      {"smsp__average_warp_latency_per_inst_issued.ratio", 40},
      {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", 12},
      {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", 2},
      {"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio", 1},
      {"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", 1},
      {"smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio", 3},
      {"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio", 1},
      {"l1tex__t_sector_hit_rate.pct", 10},
      {"lts__t_sector_hit_rate.pct", 45},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4e7},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1e7},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4e7},
      {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", 1e7},
      {"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 100},
      {"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct", 100},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 1000},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 1000},
  };
}

/// The shape the healthy kernel ran at: 2 GB moved at least, its time 0.5 ms at 4.8 TB/s.
roofline_position roof_2gb() {
  shape s;
  s.bytes = 2e9;
  s.flops = 5e8;
  roofline r{4.8e12, 67e12};
  return roofline_at(s, r, 2e9 / 4.8e12 / 0.8);  // 80% of the floor's speed
}

std::vector<std::string> names_of(std::vector<diagnosis_tag> const& tags) {
  std::vector<std::string> n;
  n.reserve(tags.size());
  for (auto const& t : tags) n.push_back(t.name);
  return n;
}
bool has(std::vector<diagnosis_tag> const& tags, std::string_view name) {
  return std::any_of(tags.begin(), tags.end(), [&](diagnosis_tag const& t) { return t.name == name; });
}
diagnosis_tag const& find(std::vector<diagnosis_tag> const& tags, std::string_view name) {
  auto it = std::find_if(tags.begin(), tags.end(), [&](diagnosis_tag const& t) { return t.name == name; });
  REQUIRE(it != tags.end());
  return *it;
}

/// The tags of `healthy()` with `changes` applied (a NaN value removes the metric).
std::vector<diagnosis_tag> profile_with(std::map<std::string, double> const& changes,
                                        roofline_position const& roof = roof_2gb()) {
  auto m = healthy();
  for (auto const& [k, v] : changes) {
    if (std::isnan(v))
      m.erase(k);
    else
      m[k] = v;
  }
  return diagnose_profile(m, roof);
}

/// An executable shell script at `p`.
void script(fs::path const& p, std::string const& body) {
  std::ofstream(p) << "#!/bin/sh\n" << body;
  ::chmod(p.c_str(), 0755);
}

/// Sets an environment variable for one scope.
struct scoped_env {
  std::string name;
  std::optional<std::string> old;
  scoped_env(std::string n, std::string const& v) : name(std::move(n)) {
    if (char const* o = std::getenv(name.c_str())) old = o;
    ::setenv(name.c_str(), v.c_str(), 1);
  }
  ~scoped_env() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  scoped_env(scoped_env const&) = delete;
  scoped_env& operator=(scoped_env const&) = delete;
};

}  // namespace

TEST_CASE("diagnosis: ncu's raw CSV is read with quoted fields, thousands separators, units and n/a") {
  const auto t = parse_ncu_csv(two_launches);
  REQUIRE(t.launches.size() == 2);
  CHECK(t.launches[0].kernel == "k_main");
  CHECK(t.launches[1].kernel == "void tail<float, 4>(float const*, \"x\")");
  auto const& a = t.launches[0].metrics;
  CHECK(a.at("dram__bytes_read.sum") == 1073741824.0);
  CHECK(a.at("gpu__time_duration.sum") == 3e6);
  CHECK(a.at("launch__grid_size") == 4096);
  CHECK(a.at("dram__throughput.avg.pct_of_peak_sustained_elapsed") == doctest::Approx(90.5));
  CHECK(a.count("Block Size") == 0);  // launch columns that are not metrics are left out
  auto const& b = t.launches[1].metrics;
  CHECK(b.count("launch__occupancy_limit_registers") == 0);  // "n/a"
  CHECK(b.at("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct") == 12.5);
  CHECK(t.units.at("gpu__time_duration.sum") == "nsecond");
  CHECK(t.units.at("dram__bytes_read.sum") == "byte");

  SUBCASE("no header: nothing, whatever the text") {
    CHECK(parse_ncu_csv("").launches.empty());
    CHECK(parse_ncu_csv("==PROF== Connected\n==ERROR== ERR_NVGPUCTRPERM\n\"a\",\"b\"\n").launches.empty());
    CHECK(parse_ncu_csv("\"ID\",\"x\"\n\"0\",\"1\"\n").launches.empty());  // no Kernel Name column
    CHECK(parse_ncu_csv("\"ID\",\"Kernel Name\",\"a__b.sum\"\n\"0\",\"k\"\n\"x\",\"k\",\"1\"\n").launches.empty());
  }
  SUBCASE("scaled units (ncu without --print-units base) are brought to bytes and nanoseconds") {
    const auto s = parse_ncu_csv(
        "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"gpu__time_duration.sum\",\"lts__t_sector_hit_rate.pct\"\n"
        "\"\",\"\",\"Mbyte\",\"usecond\",\"%\"\n"
        "\"0\",\"k\",\"1,536.5\",\"12.25\",\"50\"\n");
    REQUIRE(s.launches.size() == 1);
    CHECK(s.launches[0].metrics.at("dram__bytes_read.sum") == doctest::Approx(1536.5e6));
    CHECK(s.launches[0].metrics.at("gpu__time_duration.sum") == doctest::Approx(12250));
    CHECK(s.launches[0].metrics.at("lts__t_sector_hit_rate.pct") == 50);
  }
  SUBCASE("CRLF line ends and a truncated last row") {
    std::string text = two_launches;
    std::string crlf;
    for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    crlf += "\"2\",\"4242\",\"cut";
    const auto s = parse_ncu_csv(crlf);
    CHECK(s.launches.size() == 2);
    CHECK(s.launches[1].kernel == "void tail<float, 4>(float const*, \"x\")");
  }
}

TEST_CASE("diagnosis: launches aggregate into one set, counters added, rates weighted by time") {
  const auto m = aggregate_ncu(parse_ncu_csv(two_launches).launches);
  CHECK(m.at("dram__bytes_read.sum") == 1073741824.0 + 1024);
  CHECK(m.at("gpu__time_duration.sum") == 4e6);
  // 3 ms at 90.5% and 1 ms at 0.5%.
  CHECK(m.at("dram__throughput.avg.pct_of_peak_sustained_elapsed") == doctest::Approx((3 * 90.5 + 0.5) / 4));
  // The longest launch's configuration.
  CHECK(m.at("launch__grid_size") == 4096);
  CHECK(m.at("launch__occupancy_limit_registers") == 8);
  CHECK(m.at("sm__maximum_warps_per_active_cycle_pct") == 100);
  // Load efficiency by sectors: 33554432 at 100%, 32 at 12.5%.
  CHECK(m.at("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct") ==
        doctest::Approx((33554432 * 100.0 + 32 * 12.5) / (33554432 + 32)));
  CHECK(aggregate_ncu({}).empty());
  // Without durations: plain means.
  std::vector<ncu_launch> two = {{"a", {{"lts__t_sector_hit_rate.pct", 20}}},
                                 {"b", {{"lts__t_sector_hit_rate.pct", 60}}}};
  CHECK(aggregate_ncu(two).at("lts__t_sector_hit_rate.pct") == 40);
}

TEST_CASE("diagnosis: a healthy profile gives only 'near bandwidth'") {
  const auto tags = diagnose_profile(healthy(), roof_2gb());
  INFO(render(tags));
  CHECK(names_of(tags) == std::vector<std::string>{std::string(dn::near_bandwidth)});
  CHECK(find(tags, dn::near_bandwidth).value == 85);
}

TEST_CASE("diagnosis: each profile rule fires past its threshold and not before") {
  using P = std::map<std::string, double>;
  auto fires = [](P const& c, std::string_view name) { return has(profile_with(c), name); };
  SUBCASE("near bandwidth") {
    CHECK(fires({{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 70}}, dn::near_bandwidth));
    CHECK_FALSE(fires({{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 69.9}}, dn::near_bandwidth));
  }
  SUBCASE("compute bound") {
    CHECK(fires({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 70},
                 {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 49}},
                dn::compute_bound));
    CHECK_FALSE(fires({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 69},
                       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 49}},
                      dn::compute_bound));
    CHECK_FALSE(fires({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90},
                       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 50}},
                      dn::compute_bound));
  }
  SUBCASE("latency bound") {
    const P lat = {{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 59},
                   {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 20}};
    CHECK(fires(lat, dn::latency_bound));
    CHECK(find(profile_with(lat), dn::latency_bound).value == 59);
    CHECK_FALSE(fires({{"sm__throughput.avg.pct_of_peak_sustained_elapsed", 60},
                       {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 20}},
                      dn::latency_bound));
  }
  SUBCASE("excess memory traffic, and a low L2 hit rate with it") {
    const P excess = {{"dram__bytes_read.sum", 2e9}, {"dram__bytes_write.sum", 1e9}};  // 1.5x 2 GB
    const auto t = profile_with(excess);
    CHECK(has(t, dn::excess_memory_traffic));
    CHECK(find(t, dn::excess_memory_traffic).value == 1.5);
    CHECK(has(t, dn::low_l2_hit_rate));  // 45% < 50%
    CHECK_FALSE(has(profile_with({{"dram__bytes_read.sum", 2e9}, {"dram__bytes_write.sum", 0.99e9}}),
                    dn::excess_memory_traffic));
    CHECK_FALSE(
        has(profile_with(
                {{"dram__bytes_read.sum", 2e9}, {"dram__bytes_write.sum", 1e9}, {"lts__t_sector_hit_rate.pct", 50}}),
            dn::low_l2_hit_rate));
    CHECK_FALSE(has(profile_with({}), dn::low_l2_hit_rate));  // 45% but no excess: streaming is fine
    CHECK_FALSE(has(diagnose_profile(healthy(), roofline_position{}), dn::excess_memory_traffic));  // no cost
  }
  SUBCASE("uncoalesced loads and stores: bytes used per sector") {
    const auto t = profile_with({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 12.5},
                                 {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 3.2e8}});
    REQUIRE(has(t, dn::uncoalesced_loads));
    CHECK(find(t, dn::uncoalesced_loads).value == 12.5);
    CHECK(find(t, dn::uncoalesced_loads).detail.find("4.0 of each 32-byte sector") != std::string::npos);
    CHECK(find(t, dn::uncoalesced_loads).detail.find("32.0 sectors per request") != std::string::npos);
    CHECK_FALSE(has(t, dn::uncoalesced_stores));
    CHECK(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 59.9}}, dn::uncoalesced_loads));
    CHECK_FALSE(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 60}}, dn::uncoalesced_loads));
    CHECK(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct", 50}}, dn::uncoalesced_stores));
    // A float4 copy: 16 sectors per request and every byte used is coalesced.
    CHECK_FALSE(fires({{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16e7}}, dn::uncoalesced_loads));
    // No global loads at all: nothing to say.
    CHECK_FALSE(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 0},
                       {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0}},
                      dn::uncoalesced_loads));
    // Sectors moved but an efficiency of 0 (seen on the H200 for cp.async and cluster kernels): no evidence.
    CHECK_FALSE(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 0},
                       {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 20e7},
                       {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1e7}},
                      dn::uncoalesced_loads));
    // Without the efficiency metric: sectors per request beyond any coalesced width.
    const double nan = std::nan("");
    CHECK(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", nan},
                 {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 17e7}},
                dn::uncoalesced_loads));
    CHECK_FALSE(fires({{"smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", nan},
                       {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16e7}},
                      dn::uncoalesced_loads));
  }
  SUBCASE("shared-memory bank conflicts") {
    const auto t = profile_with({{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 500},
                                 {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 1000}});
    REQUIRE(has(t, dn::bank_conflicts));
    CHECK(find(t, dn::bank_conflicts).value == 25);  // 500 of 2000 wavefronts
    CHECK_FALSE(fires({{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 499}}, dn::bank_conflicts));
  }
  SUBCASE("occupancy limiters") {
    const P regs = {{"sm__maximum_warps_per_active_cycle_pct", 12.5},
                    {"launch__occupancy_limit_registers", 1},
                    {"launch__registers_per_thread", 200}};
    const auto t = profile_with(regs);
    REQUIRE(has(t, dn::limited_by_registers));
    CHECK(find(t, dn::limited_by_registers).value == 12.5);
    CHECK(find(t, dn::limited_by_registers).detail.find("registers allow 1 block per SM") != std::string::npos);
    CHECK_FALSE(has(t, dn::limited_by_shared_memory));
    CHECK_FALSE(fires({{"sm__maximum_warps_per_active_cycle_pct", 50}, {"launch__occupancy_limit_registers", 4}},
                      dn::limited_by_registers));
    CHECK(fires({{"sm__maximum_warps_per_active_cycle_pct", 25}, {"launch__occupancy_limit_shared_mem", 2}},
                dn::limited_by_shared_memory));
    // 1-warp blocks: 32 blocks per SM hold half the warps.
    CHECK(fires({{"sm__maximum_warps_per_active_cycle_pct", 50},
                 {"launch__occupancy_limit_blocks", 32},
                 {"launch__occupancy_limit_warps", 64},
                 {"launch__occupancy_limit_registers", 64},
                 {"launch__occupancy_limit_shared_mem", 64}},
                dn::limited_by_block_size));
    CHECK_FALSE(fires({{"sm__maximum_warps_per_active_cycle_pct", 100}}, dn::limited_by_block_size));
  }
  SUBCASE("low achieved occupancy") {
    CHECK(fires({{"sm__warps_active.avg.pct_of_peak_sustained_active", 59}}, dn::low_achieved_occupancy));
    CHECK_FALSE(fires({{"sm__warps_active.avg.pct_of_peak_sustained_active", 60}}, dn::low_achieved_occupancy));
  }
  SUBCASE("small grid and tail effect") {
    CHECK(fires({{"launch__grid_size", 131}}, dn::small_grid));
    CHECK_FALSE(fires({{"launch__grid_size", 132}}, dn::small_grid));
    CHECK(fires({{"launch__waves_per_multiprocessor", 1.6}}, dn::tail_effect));  // 0.4 / 2 = 20% idle
    CHECK_FALSE(fires({{"launch__waves_per_multiprocessor", 1.61}}, dn::tail_effect));
    CHECK_FALSE(fires({{"launch__waves_per_multiprocessor", 0.5}}, dn::tail_effect));
    CHECK_FALSE(fires({{"launch__waves_per_multiprocessor", 4.5}}, dn::tail_effect));  // 10% idle
  }
  SUBCASE("stall reasons as shares of the cycles per issued instruction (40 here)") {
    const std::string p = "smsp__average_warps_issue_stalled_";
    CHECK(fires({{p + "long_scoreboard_per_issue_active.ratio", 16}}, dn::long_scoreboard_stalls));
    CHECK_FALSE(fires({{p + "long_scoreboard_per_issue_active.ratio", 15.9}}, dn::long_scoreboard_stalls));
    CHECK(fires({{p + "barrier_per_issue_active.ratio", 10}}, dn::barrier_stalls));
    CHECK_FALSE(fires({{p + "barrier_per_issue_active.ratio", 9.9}}, dn::barrier_stalls));
    CHECK(fires({{p + "mio_throttle_per_issue_active.ratio", 10}}, dn::mio_throttle_stalls));
    CHECK(fires({{p + "short_scoreboard_per_issue_active.ratio", 10}}, dn::short_scoreboard_stalls));
    CHECK(fires({{p + "lg_throttle_per_issue_active.ratio", 10}}, dn::lg_throttle_stalls));
    CHECK(fires({{p + "math_pipe_throttle_per_issue_active.ratio", 16}}, dn::math_pipe_stalls));
    CHECK_FALSE(fires({{p + "math_pipe_throttle_per_issue_active.ratio", 15}}, dn::math_pipe_stalls));
    const auto t = profile_with({{p + "long_scoreboard_per_issue_active.ratio", 30}});
    CHECK(find(t, dn::long_scoreboard_stalls).value == 75);
    CHECK(find(t, dn::long_scoreboard_stalls).detail.find("30.0 of 40.0") != std::string::npos);
  }
  SUBCASE("missing metrics skip their rules") {
    CHECK(diagnose_profile({}, roof_2gb()).empty());
    CHECK(diagnose_profile({{"launch__grid_size", 1}}, roof_2gb()).empty());  // no SM count
  }
}

TEST_CASE("diagnosis: static rules from resources, the launch and the roofline") {
  const auto sm = sm_resources_for_arch("sm_90");
  CHECK(sm.max_warps == 64);
  CHECK(sm.sm_count == 132);
  CHECK(sm_resources_for_arch("sm_86").max_warps == 48);
  CHECK(sm_resources_for_arch("sm_999").arch == "sm_90");
  resources res{32, 0, 0, 1.0};
  const roofline_position none;

  SUBCASE("occupancy estimate and its limiter") {
    const launch_facts copy{"copy", 16, 256, 132 * 64, 0};
    const auto e = estimate_occupancy(copy, sm);
    REQUIRE(e);
    CHECK(e->blocks == 8);
    CHECK(e->by_warps == 8);
    CHECK(e->occupancy == 1.0);
    CHECK(diagnose_static(res, sm, none, copy, 132).empty());
    // 128 registers x 256 threads: 4096 per warp, 2 blocks of 8 warps: 25%.
    const launch_facts heavy{"heavy", 128, 256, 132 * 64, 0};
    const auto t = diagnose_static(res, sm, none, heavy, 132);
    REQUIRE(has(t, dn::limited_by_registers));
    CHECK(find(t, dn::limited_by_registers).value == 25);
    // 64 registers: 4 blocks, exactly half: not reported.
    CHECK_FALSE(
        has(diagnose_static(res, sm, none, launch_facts{"k", 64, 256, 132 * 64, 0}, 132), dn::limited_by_registers));
    // 100 KB of shared memory per block: 2 blocks of 8 warps.
    const auto s = diagnose_static(res, sm, none, launch_facts{"k", 32, 256, 132 * 64, 100 * 1024}, 132);
    REQUIRE(has(s, dn::limited_by_shared_memory));
    CHECK(find(s, dn::limited_by_shared_memory).value == 25);
    // 1-warp blocks.
    CHECK(has(diagnose_static(res, sm, none, launch_facts{"k", 32, 32, 132 * 64, 0}, 132), dn::limited_by_block_size));
    CHECK_FALSE(estimate_occupancy(launch_facts{"k", -1, 256, 1, 0}, sm));
  }
  SUBCASE("register spills") {
    CHECK(has(diagnose_static(resources{255, 64, 0, 0.1}, sm, none), dn::register_spills));
    CHECK(find(diagnose_static(resources{255, 64, 0, 0.1}, sm, none), dn::register_spills).value == 64);
    CHECK_FALSE(has(diagnose_static(resources{255, 0, 0, 0.1}, sm, none), dn::register_spills));
    CHECK_FALSE(has(diagnose_static(resources{}, sm, none), dn::register_spills));  // -1: unknown
  }
  SUBCASE("small grid and tail effect") {
    CHECK(has(diagnose_static(res, sm, none, launch_facts{"k", 16, 256, 131, 0}, 132), dn::small_grid));
    CHECK_FALSE(has(diagnose_static(res, sm, none, launch_facts{"k", 16, 256, 132, 0}, 132), dn::small_grid));
    CHECK_FALSE(has(diagnose_static(res, sm, none, launch_facts{"k", 16, 256, 131, 0}, 0), dn::small_grid));
    // 8 blocks per SM x 132 SMs = 1056 per wave: 1689 blocks (1.599 waves) leave 20% idle, 1701 less.
    const auto t = diagnose_static(res, sm, none, launch_facts{"k", 16, 256, 1689, 0}, 132);
    CHECK(has(t, dn::tail_effect));
    CHECK(find(t, dn::tail_effect).value == doctest::Approx(1.6).epsilon(0.01));
    CHECK_FALSE(has(diagnose_static(res, sm, none, launch_facts{"k", 16, 256, 1701, 0}, 132), dn::tail_effect));
  }
  SUBCASE("roofline position") {
    shape s;
    s.bytes = 4.8e9;  // 1 ms at 4.8 TB/s
    s.flops = 1e9;
    const roofline mach{4.8e12, 67e12};
    auto tags_at = [&](double seconds) { return diagnose_static(res, sm, roofline_at(s, mach, seconds)); };
    CHECK(has(tags_at(1e-3 / 0.701), dn::near_bandwidth));
    CHECK_FALSE(has(tags_at(1e-3 / 0.699), dn::near_bandwidth));
    CHECK(tags_at(1e-3 / 0.5).empty());
    CHECK_FALSE(has(tags_at(1e-3 / 0.301), dn::far_below_bandwidth));
    CHECK(has(tags_at(1e-3 / 0.299), dn::far_below_bandwidth));
    const auto far = tags_at(1e-3 / 0.1);
    REQUIRE(has(far, dn::far_below_bandwidth));
    CHECK(find(far, dn::far_below_bandwidth).value == doctest::Approx(10));
    CHECK(find(far, dn::far_below_bandwidth).detail.find("4.8 GB at 4.8 TB/s") != std::string::npos);
    // A compute-bound shape.
    shape g;
    g.bytes = 1e6;
    g.flops = 67e9;  // 1 ms at 67 TFLOP/s
    const auto c = diagnose_static(res, sm, roofline_at(g, mach, 1e-3 / 0.9));
    CHECK(names_of(c) == std::vector<std::string>{std::string(dn::near_compute_peak)});
    CHECK(has(diagnose_static(res, sm, roofline_at(g, mach, 1e-3 / 0.2)), dn::far_below_compute_peak));
    // No machine: no position.
    CHECK(roofline_at(s, roofline{}, 1e-3).fraction < 0);
    CHECK(diagnose_static(res, sm, roofline_at(s, roofline{}, 1e-3)).empty());
  }
}

TEST_CASE("diagnosis: profile and static tags merge, the profile's measured ones win") {
  const auto sm = sm_resources_for_arch("sm_90");
  // Static: 128 registers -> 25% occupancy, limited by registers; the profile measured 50% with 4
  // blocks (another register count in the end): only the profile's verdict stays.
  const auto statics = diagnose_static(resources{128, 8, 0, 0.25}, sm, roofline_position{},
                                       launch_facts{"k", 128, 256, 132 * 64, 0}, 132);
  REQUIRE(has(statics, dn::limited_by_registers));
  auto metrics = healthy();
  const auto merged = merge_diagnoses(diagnose_profile(metrics, roof_2gb()), statics, metrics);
  CHECK_FALSE(has(merged, dn::limited_by_registers));
  CHECK(has(merged, dn::register_spills));  // only the static side knows spills
  CHECK(has(merged, dn::near_bandwidth));
  // Vocabulary order: near bandwidth before register spills.
  CHECK(merged.front().name == dn::near_bandwidth);
  // Without the profile's launch metrics the static occupancy tag stays.
  metrics.erase("launch__occupancy_limit_registers");
  metrics.erase("sm__maximum_warps_per_active_cycle_pct");
  CHECK(has(merge_diagnoses(diagnose_profile(metrics, roof_2gb()), statics, metrics), dn::limited_by_registers));
  // diagnose(): no profile, and why.
  const auto fallback = diagnose(statics, {}, roof_2gb(), "ncu: not found (NCU=/x is not an executable file)");
  CHECK(has(fallback, dn::limited_by_registers));
  CHECK(find(fallback, dn::profiler_unavailable).detail == "ncu: not found (NCU=/x is not an executable file)");
  CHECK(fallback.back().name == dn::profiler_unavailable);
}

TEST_CASE("diagnosis: render and parse_diagnosis round-trip") {
  const std::vector<diagnosis_tag> tags = {
      {"uncoalesced loads", 12.5, "only 4.0 of each 32-byte sector loaded is used (12.5%); 32.0 sectors per request"},
      {"occupancy limited by registers", 0.1, "a detail: with [brackets] and: colons"},
      {"tail effect", 1.0000001, ""},
      {"register spills", 1e-7, "tiny"},
      {"profiler unavailable", 0, "ncu: no permission to read counters (ERR_NVGPUCTRPERM)"},
  };
  const auto text = render(tags);
  CHECK(text.find("uncoalesced loads [12.5]: only 4.0") == 0);
  CHECK(std::count(text.begin(), text.end(), '\n') == 4);
  CHECK(parse_diagnosis(text) == tags);
  CHECK(render({}).empty());
  CHECK(parse_diagnosis("").empty());
  // Line breaks in a detail become spaces; other lines, CRLF and junk are tolerated.
  const auto one = render({{"small grid", 64, "two\nlines"}});
  CHECK(one == "small grid [64]: two lines");
  const auto read =
      parse_diagnosis("memory-bound: \"uncoalesced\" loads\r\nsmall grid [64]: x\r\n[1]: no name\nbad [x]: y\n");
  REQUIRE(read.size() == 1);
  CHECK(read[0] == diagnosis_tag{"small grid", 64, "x"});
  // Tags from the rules read back exactly (values are rounded to 4 significant digits when made).
  const auto real = diagnose_profile(healthy(), roof_2gb());
  CHECK(parse_diagnosis(render(real)) == real);
}

TEST_CASE("diagnosis: ncu is looked for as NCU says, and a bad NCU is reported, not passed over") {
  temp_dir d("ncu_find");
  {
    scoped_env e("NCU", "/nonexistent/ncu");
    const auto where = detail::cuda::find_ncu();
    CHECK(where.path.empty());
    CHECK(where.why_not == "ncu: not found (NCU=/nonexistent/ncu is not an executable file)");
  }
  script(d / "ncu", "exit 0\n");
  {
    scoped_env e("NCU", (d / "ncu").string());
    CHECK(detail::cuda::find_ncu().path == (d / "ncu").string());
    CHECK(detail::cuda::find_ncu("/also/not/there").why_not.find("cuda_options::ncu_path") != std::string::npos);
  }
  {
    scoped_env e("NCU", "");
    scoped_env p("PATH", d.path.string());
    CHECK(detail::cuda::find_ncu().path == (d / "ncu").string());
  }
  const auto cmd = detail::cuda::ncu_command("/w/worker", "/n/ncu", {"a.sum", "b.pct"}, "/r/q.req");
  const std::vector<std::string> want = {
      "/w/worker", "--exec",        "--",          "/n/ncu",          "--csv",          "--page",
      "raw",       "--print-units", "base",        "--clock-control", "none",           "--profile-from-start",
      "off",       "--metrics",     "a.sum,b.pct", "/w/worker",       "--profile-once", "/r/q.req"};
  CHECK(cmd == want);
}

TEST_CASE("diagnosis: without ncu the runner gives the static diagnosis and the reason") {
  temp_dir d("ncu_absent");
  scoped_env e("NCU", "/nonexistent");
  double spent = 0;
  const std::string worker = "/nonexistent/kernelbrain-cuda-worker";  // never started
  detail::cuda::ncu_profiler prof(worker, 10, &spent);
  prof.use(detail::cuda::find_ncu(), d.path.string());
  CHECK(prof.tool().empty());
  const auto out = prof.profile(detail::cuda_protocol::run_request{});
  CHECK(out.metrics.empty());
  CHECK(out.why_not == "ncu: not found (NCU=/nonexistent is not an executable file)");
  CHECK(prof.runs() == 0);
  CHECK(spent == 0);
  // What the CUDA evaluator then writes into measurement::diagnosis.
  const auto sm = sm_resources_for_arch("sm_90");
  const auto statics =
      diagnose_static(resources{200, 0, 0, 0.125}, sm, roof_2gb(), launch_facts{"k", 200, 256, 132 * 64, 0}, 132);
  const auto text = render(diagnose(statics, out.metrics, roof_2gb(), out.why_not));
  INFO(text);
  const auto tags = parse_diagnosis(text);
  CHECK(has(tags, dn::near_bandwidth));        // 80% of the floor's speed
  CHECK(has(tags, dn::limited_by_registers));  // 200 registers: 1 block of 8 warps
  CHECK(find(tags, dn::profiler_unavailable).detail.find("ncu: not found") == 0);
  CHECK(text.find("profiler unavailable [0]: ncu: not found (NCU=/nonexistent") != std::string::npos);
}

TEST_CASE("diagnosis: the ncu runner with fake ncu programs") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker for --exec)");
#else
  temp_dir d("ncu_fake");
  const std::string worker = find_cuda_worker();
  double spent = 0;
  detail::cuda_protocol::run_request q;
  q.cand.cubin = "/nonexistent.cubin";
  q.samples = 1;
  auto runner = [&](std::string const& body, double timeout = 30) {
    script(d / "ncu", body);
    auto p = std::make_unique<detail::cuda::ncu_profiler>(worker, timeout, &spent);
    p->use(detail::cuda::ncu_location{(d / "ncu").string(), {}}, d.path.string());
    return p;
  };
  std::ofstream(d / "fixture.csv") << two_launches;

  SUBCASE("a profile: the CSV read and aggregated, the time charged, the request file removed") {
    auto p = runner("echo \"$@\" > " + (d / "args").string() + "\ncat " + (d / "fixture.csv").string() + "\n");
    const auto out = p->profile(q);
    INFO(out.why_not);
    REQUIRE(out.why_not.empty());
    CHECK(out.launches == 2);
    CHECK(out.metrics.at("gpu__time_duration.sum") == 4e6);
    CHECK(out.seconds > 0);
    CHECK(spent == doctest::Approx(out.seconds));
    const auto args = kb_test::slurp(d / "args");
    CHECK(args.find("--csv --page raw --print-units base --clock-control none --profile-from-start off --metrics "
                    "gpu__time_duration.sum,dram__throughput") == 0);
    CHECK(args.find(worker + " --profile-once " + d.path.string() + "/profile-") != std::string::npos);
    for (auto const& e : fs::directory_iterator(d.path)) CHECK(e.path().extension() != ".req");
  }
  SUBCASE("no permission to read counters: said once, not tried again") {
    auto p = runner(
        "echo '==PROF== Connected to process 1'\n"
        "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
        "Counters on the target device 0.'\nexit 1\n");
    const auto out = p->profile(q);
    CHECK(out.why_not.find("ncu: no permission to read counters") == 0);
    CHECK(p->why_not() == out.why_not);
    const auto again = p->profile(q);
    CHECK(again.why_not == out.why_not);
    CHECK(again.seconds == 0);
    CHECK(p->runs() == 1);
  }
  SUBCASE("a metric this ncu does not know is dropped and the run repeated") {
    auto p = runner(
        "case \"$*\" in *sm__maximum_warps_per_active_cycle_pct*) "
        "echo '==ERROR== Failed to find metric sm__maximum_warps_per_active_cycle_pct'; exit 1;; esac\n"
        "cat " +
        (d / "fixture.csv").string() + "\n");
    const auto out = p->profile(q);
    INFO(out.why_not);
    CHECK(out.why_not.empty());
    CHECK(out.launches == 2);
    CHECK(std::find(p->metrics().begin(), p->metrics().end(), "sm__maximum_warps_per_active_cycle_pct") ==
          p->metrics().end());
    CHECK(p->metrics().size() == std::size(ncu_metrics) - 1);
  }
  SUBCASE("an error about every metric is not taken for unknown names") {
    auto p = runner("echo \"==ERROR== cannot collect: $*\"\nexit 1\n");
    const auto out = p->profile(q);
    CHECK(out.why_not.find("ncu: failed (exited with status 1)") == 0);
    CHECK(p->metrics().size() == std::size(ncu_metrics));
  }
  SUBCASE("a timeout") {
    auto p = runner("sleep 20\n", 1);
    const auto out = p->profile(q);
    CHECK(out.why_not == "ncu: did not finish within 1 s (cuda_options::profile_timeout)");
    CHECK(out.seconds < 15);
  }
  SUBCASE("the profiled run itself fails (here: the real worker, on a machine without a driver or the cubin)") {
    // The fake ncu runs what ncu would run: the last three arguments.
    auto p = runner("shift $(($# - 3))\nexec \"$@\"\n");
    const auto out = p->profile(q);
    INFO(out.why_not);
    CHECK(out.why_not.find("ncu: the profiled run failed") == 0);
    CHECK(out.metrics.empty());
  }
  SUBCASE("ncu profiles nothing") {
    auto p = runner("echo 'kernelbrain-profile: ok'\necho '==WARNING== No kernels were profiled.'\n");
    CHECK(p->profile(q).why_not.find("ncu: profiled no kernel launch") == 0);
  }
#endif
}

TEST_CASE("diagnosis: the CUDA evaluator names its profiler in the fingerprint") {
#ifndef KB_HAVE_CUDA_WORKER
  MESSAGE("skipped: built without the CUDA toolkit (no kernelbrain-cuda-worker)");
#else
  const auto p = load_problem(fs::path(KB_SOURCE_DIR) / "examples" / "cuda_problems" / "softmax");
  temp_dir d("ncu_eval");
  cuda_options o;
  o.cache_dir = d.path.string();
  o.sanitize = false;
  {
    scoped_env e("NCU", "/nonexistent");
    cuda_evaluator ev(p, o);
    CHECK(ev.profiler().empty());
    CHECK(ev.fingerprint().find("; profiler: off") != std::string::npos);
  }
  script(d / "ncu", "exit 1\n");
  o.ncu_path = (d / "ncu").string();
  cuda_evaluator ev(p, o);
  CHECK(ev.profiler() == (d / "ncu").string());
  CHECK(ev.fingerprint().find("; profiler: ncu") != std::string::npos);
  CHECK(ev.profiler_runs() == 0);
#endif
}
