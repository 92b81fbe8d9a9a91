// Bodies of kernelbrain/backends/cuda/ptxas_report.hpp, included by it (header-only form) or by
// kernelbrain/src.hpp (separate compilation): see kernelbrain/config.hpp.
#pragma once
#include <charconv>
#include <sstream>
#include <string_view>
#include "kernelbrain/backends/cuda/ptxas_report.hpp"

namespace kernelbrain {

std::vector<std::pair<std::string, cuda_kernel_resources>> parse_ptxas_log(std::string const& log) {
  // ptxas -v prints, per entry point: "Compiling entry function 'NAME' for 'sm_90'", then
  // "Function properties for NAME", "N bytes stack frame, N bytes spill stores, N bytes spill loads",
  // "Used N registers, ... N bytes smem". Numbers are read with from_chars (no exceptions), and a
  // later report of the same name replaces an earlier one (NVRTC prints #warning text first).
  std::vector<std::pair<std::string, cuda_kernel_resources>> out;
  auto entry = [&](std::string const& n) -> cuda_kernel_resources& {
    for (auto& [k, v] : out)
      if (k == n) return v;
    return out.emplace_back(n, cuda_kernel_resources{}).second;
  };
  auto number_before = [](std::string_view line, std::string_view what, int& out_value) {
    const auto at = line.find(what);
    if (at == std::string_view::npos || at == 0) return false;
    std::size_t b = at;
    while (b > 0 && line[b - 1] == ' ') --b;
    std::size_t a = b;
    while (a > 0 && line[a - 1] >= '0' && line[a - 1] <= '9') --a;
    if (a == b) return false;
    int v = 0;
    const auto [p, ec] = std::from_chars(line.data() + a, line.data() + b, v);
    if (ec != std::errc{} || p != line.data() + b) return false;
    out_value = v;
    return true;
  };
  auto quoted_after = [](std::string_view line, std::string_view what) -> std::string {
    const auto at = line.find(what);
    if (at == std::string_view::npos) return {};
    const auto begin = at + what.size();
    const auto end = line.find('\'', begin);
    return end == std::string_view::npos ? std::string{} : std::string(line.substr(begin, end - begin));
  };
  std::istringstream lines(log);
  std::string line, current, props_for;
  while (std::getline(lines, line)) {
    const std::string_view l(line);
    if (l.find("Compiling entry function '") != std::string_view::npos) {
      current = quoted_after(l, "Compiling entry function '");
      if (!current.empty()) entry(current) = cuda_kernel_resources{};
      continue;
    }
    if (const auto at = l.find("Function properties for "); at != std::string_view::npos) {
      auto name = l.substr(at + 24);
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.remove_suffix(1);
      props_for = std::string(name);
      continue;
    }
    if (l.find("bytes stack frame") != std::string_view::npos) {
      for (auto& [k, v] : out) {
        if (k != props_for) continue;
        number_before(l, "bytes stack frame", v.stack);
        number_before(l, "bytes spill stores", v.spill_stores);
        number_before(l, "bytes spill loads", v.spill_loads);
      }
      continue;
    }
    if (!current.empty() && l.find("Used ") != std::string_view::npos) {
      for (auto& [k, v] : out) {
        if (k != current) continue;
        number_before(l, "registers", v.registers);
        number_before(l, "bytes smem", v.static_smem);
      }
    }
  }
  return out;
}

}  // namespace kernelbrain
