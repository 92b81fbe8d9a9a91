// Test helpers shared by the journal tests (test_journal.cpp) and the CLI tests (test_cli.cpp): writing
// and splitting files, comparing journal outcomes bit for bit, and counting what a journal holds.
#pragma once
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "temp_dir.hpp"

namespace kb_test {

/// Writes `text` to `p`, replacing what was there.
inline void spit(std::filesystem::path const& p, std::string const& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

/// The complete lines of `text` (a last line without '\n' is left out: it may be torn).
inline std::vector<std::string> split_lines(std::string const& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl - start));
  return out;
}

/// Same double to the bit (NaN: any NaN, since JSON keeps no payload).
inline bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

/// Checks that two outcomes are equal in every field, doubles to the bit.
inline void check_same(kernelbrain::evaluation_outcome const& x, kernelbrain::evaluation_outcome const& y) {
  CHECK(x.id == y.id);
  CHECK(x.rung == y.rung);
  CHECK(x.gated == y.gated);
  CHECK(x.gate == y.gate);
  CHECK(x.m.result == y.m.result);
  REQUIRE(x.m.timings.size() == y.m.timings.size());
  for (std::size_t i = 0; i < x.m.timings.size(); ++i) {
    auto const& tx = x.m.timings[i];
    auto const& ty = y.m.timings[i];
    CHECK(tx.shape == ty.shape);
    REQUIRE(tx.samples.size() == ty.samples.size());
    for (std::size_t j = 0; j < tx.samples.size(); ++j) CHECK_MESSAGE(same(tx.samples[j], ty.samples[j]), "sample ", j);
    CHECK(same(tx.stats.median, ty.stats.median));
    CHECK(same(tx.stats.low, ty.stats.low));
    CHECK(same(tx.stats.high, ty.stats.high));
  }
  REQUIRE(x.m.res.has_value() == y.m.res.has_value());
  if (x.m.res) {
    CHECK(x.m.res->registers == y.m.res->registers);
    CHECK(x.m.res->spill_bytes == y.m.res->spill_bytes);
    CHECK(x.m.res->shared_bytes == y.m.res->shared_bytes);
    CHECK(same(x.m.res->occupancy, y.m.res->occupancy));
  }
  REQUIRE(x.m.vs_incumbent.has_value() == y.m.vs_incumbent.has_value());
  if (x.m.vs_incumbent) {
    CHECK(x.m.vs_incumbent->incumbent == y.m.vs_incumbent->incumbent);
    CHECK(same(x.m.vs_incumbent->ratio.median, y.m.vs_incumbent->ratio.median));
    CHECK(same(x.m.vs_incumbent->ratio.low, y.m.vs_incumbent->ratio.low));
    CHECK(same(x.m.vs_incumbent->ratio.high, y.m.vs_incumbent->ratio.high));
  }
  REQUIRE(x.m.profile.size() == y.m.profile.size());
  for (auto const& [k, v] : x.m.profile) {
    REQUIRE(y.m.profile.contains(k));
    CHECK(same(v, y.m.profile.at(k)));
  }
  CHECK(x.m.diagnosis == y.m.diagnosis);
  CHECK(same(x.m.device_seconds, y.m.device_seconds));
  CHECK(same(x.wall_seconds, y.wall_seconds));
}

/// Complete lines of one type, as written (superseded events included).
inline std::size_t lines_of_type(std::filesystem::path const& journal, std::string const& type) {
  const auto needle = "\"type\":\"" + type + "\"";
  std::size_t n = 0;
  for (auto const& line : split_lines(slurp(journal))) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

/// How often each (candidate, rung) was measured.
inline std::map<std::pair<std::uint64_t, std::size_t>, int> outcome_counts(kernelbrain::journal_contents const& c) {
  std::map<std::pair<std::uint64_t, std::size_t>, int> n;
  for (auto const& o : c.outcomes) ++n[{o.id.value, o.rung}];
  return n;
}

/// The parts of an event that a replay must reproduce (everything but wall-clock facts).
inline std::string event_signature(kernelbrain::journal_event const& je) {
  using kernelbrain::to_string;
  auto const& e = je.e;
  std::string s = std::to_string(e.seq) + " " + std::string(to_string(e.kind)) + " " + e.id.str() + " " +
                  std::to_string(e.rung) + " " + std::string(to_string(e.result.where)) + " " + e.note;
  if (e.value)
    s += " " + std::to_string(std::bit_cast<std::uint64_t>(e.value->value)) + "/" +
         std::to_string(std::bit_cast<std::uint64_t>(e.value->speedup));
  if (je.cand) s += " " + je.cand->family + " " + je.cand->params.to_string() + " " + je.cand->origin;
  return s;
}
inline std::vector<std::string> event_signatures(kernelbrain::journal_contents const& c) {
  std::vector<std::string> out;
  for (auto const& je : c.events) out.push_back(event_signature(je));
  return out;
}

}  // namespace kb_test
