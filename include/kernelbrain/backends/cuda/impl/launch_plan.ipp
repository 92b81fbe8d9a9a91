// Bodies of kernelbrain/backends/cuda/launch_plan.hpp, included by it (header-only form) or by
// kernelbrain/src.hpp (separate compilation): see kernelbrain/config.hpp.
//
// The JSON is read with detail/json_reader.hpp's parser (a repeated key is an error, numbers are
// exact) under a depth limit, then walked with explicit type checks only: no as_*(), at() or
// to_number(), so no Boost.JSON exception can arise; a last catch turns anything unforeseen into a
// signature reject all the same.
#pragma once
#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value.hpp>
#include <cctype>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/backends/cuda/launch_plan.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/expr.hpp"
#include "kernelbrain/detail/identifier.hpp"
#include "kernelbrain/detail/json_reader.hpp"

namespace kernelbrain {
namespace detail::launch_plan {

namespace json = boost::json;
namespace cp = detail::cuda_protocol;
using json_reader::kind_name;

[[noreturn]] inline void reject(stage where, std::string message) { throw plan_reject{where, std::move(message)}; }
[[noreturn]] inline void malformed(std::string const& where, std::string const& what) {
  reject(stage::signature, where.empty() ? what : where + ": " + what);
}

/// A name from the plan, safe to print.
inline std::string shown(std::string_view s) { return printable_excerpt(s, 64); }
inline std::string shown(json::string const& s) { return shown(std::string_view(s.data(), s.size())); }

inline std::string list(std::vector<std::string> const& names) {
  std::string out;
  for (auto const& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// Rejects a field not in `known`, suggesting a near miss.
inline void only(json::object const& o, std::string const& where, std::initializer_list<std::string_view> known) {
  if (auto unknown = json_reader::unknown_field(o, known, shown); !unknown.empty())
    malformed(where.empty() ? "the plan" : where, unknown);
}

inline json::value const* optional(json::object const& o, std::string_view key) {
  return o.if_contains(json::string_view(key.data(), key.size()));
}

/// A name field: a non-empty string of letters, digits and _ (not starting with a digit), at most
/// plan_limits::name_bytes long.
inline std::string name(json::value const& v, std::string const& where) {
  if (!v.is_string()) malformed(where, "expected a name (a string), found " + std::string(kind_name(v)));
  const std::string_view s(v.get_string().data(), v.get_string().size());
  if (s.empty()) malformed(where, "the name is empty");
  if (s.size() > plan_limits::name_bytes)
    malformed(where, "a name of " + std::to_string(s.size()) + " bytes (at most " +
                         std::to_string(plan_limits::name_bytes) + ")");
  if (!is_identifier(s))
    malformed(where, "'" + shown(s) + "' is not a name (letters, digits and _, not starting with a digit)");
  return std::string(s);
}

inline json::value doc_of(std::string_view text) {
  if (text.size() > plan_limits::text_bytes)
    malformed("", "the plan is " + std::to_string(text.size()) + " bytes of text (at most " +
                      std::to_string(plan_limits::text_bytes) + ")");
  json::parse_options opts;
  opts.max_depth = plan_limits::json_depth;
  json_reader::document_parser parser(opts, json_reader::repeated_keys::refused);
  auto doc = parser.parse(text);
  if (!doc) {
    auto const& dup = parser.repeated_key();
    const auto ec = parser.error();
    const auto at = json_reader::line_column(text, parser.stop());
    if (!dup.empty()) malformed("", "the field '" + shown(dup) + "' appears twice in one object (at " + at + ")");
    if (ec == json::error::too_deep)
      malformed("", "JSON nested deeper than " + std::to_string(plan_limits::json_depth) + " levels (at " + at + ")");
    malformed("", "not valid JSON: " + ec.message() + " at " + at);
  }
  if (const auto rest = parser.trailing(text); rest != std::string_view::npos)
    malformed("", "not valid JSON: text after the end of the plan at " + json_reader::line_column(text, rest));
  return std::move(*doc);
}

/// " on sm_86": where a limit comes from, for a reject's message ("" when the limits name no source).
inline std::string on(device_limits const& l) { return l.source.empty() ? std::string() : " on " + l.source; }

/// a * b * c for a check, saturated at INT64_MAX (the factors may be anything in a hand-made plan).
inline std::int64_t product(std::int64_t const* v) {
  std::int64_t r = 1;
  for (int d = 0; d < 3; ++d)
    if (__builtin_mul_overflow(r, v[d], &r)) return std::numeric_limits<std::int64_t>::max();
  return r;
}

struct scratch_entry {
  std::string name;
  std::int64_t elements = 0, width = 4;
};

class resolver {
 public:
  resolver(problem const& p, std::map<std::string, std::int64_t> const& dims, device_limits const& limits)
      : p_(p), dims_(dims), limits_(limits) {}

  cp::plan resolve(std::string_view text) {
    const json::value doc = doc_of(text);
    if (!doc.is_object()) malformed("", "the plan must be a JSON object, found " + std::string(kind_name(doc)));
    auto const& top = doc.get_object();
    only(top, "", {"scratch", "launches"});
    std::int64_t next = 0;
    for (auto const& t : p_.inputs) buffers_[t.name] = next++;
    for (auto const& t : p_.outputs) buffers_[t.name] = next++;
    if (auto const* sc = optional(top, "scratch")) scratch(*sc, next);
    auto const* ls = optional(top, "launches");
    if (!ls) malformed("", "no field 'launches' (a list of launches, run in order)");
    if (!ls->is_array()) malformed("launches", "expected an array, found " + std::string(kind_name(*ls)));
    auto const& arr = ls->get_array();
    if (arr.empty()) malformed("launches", "the plan has no launches");
    if (arr.size() > plan_limits::launches)
      malformed("launches",
                std::to_string(arr.size()) + " launches (at most " + std::to_string(plan_limits::launches) + ")");
    cp::plan out;
    for (std::size_t i = 0; i < arr.size(); ++i) out.launches.push_back(launch(arr[i], i));
    // Only now, with everything well-formed, the values.
    check_scratch(out);
    for (std::size_t i = 0; i < out.launches.size(); ++i) check_launch(out.launches[i], i);
    return out;
  }

 private:
  std::int64_t expr(json::value const& v, std::string const& where) const {
    if (v.is_int64()) return v.get_int64();
    if (v.is_uint64())
      malformed(where, "the integer " + std::to_string(v.get_uint64()) + " is outside the 64-bit range");
    if (!v.is_string())
      malformed(where, "expected an expression (a string or an integer), found " + std::string(kind_name(v)));
    const std::string_view text(v.get_string().data(), v.get_string().size());
    try {
      return evaluate_expression(text, [this](std::string_view n) -> std::optional<std::int64_t> {
        auto it = dims_.find(std::string(n));
        if (it == dims_.end()) return std::nullopt;
        return it->second;
      });
    } catch (error const& e) {
      malformed(where, e.what());  // the message quotes the expression and gives the column
    }
  }

  void scratch(json::value const& v, std::int64_t& next) {
    if (!v.is_array()) malformed("scratch", "expected an array, found " + std::string(kind_name(v)));
    auto const& arr = v.get_array();
    if (arr.size() > plan_limits::scratch_buffers)
      malformed("scratch", std::to_string(arr.size()) + " scratch buffers (at most " +
                               std::to_string(plan_limits::scratch_buffers) + ")");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      std::string at = "scratch[" + std::to_string(i) + "]";
      if (!arr[i].is_object())
        malformed(at, "expected an object {name, size, dtype}, found " + std::string(kind_name(arr[i])));
      auto const& o = arr[i].get_object();
      only(o, at, {"name", "size", "dtype"});
      auto const* nv = optional(o, "name");
      if (!nv) malformed(at, "no field 'name'");
      scratch_entry e;
      e.name = name(*nv, at + ".name");
      at += " ('" + e.name + "')";
      if (buffers_.count(e.name)) {
        const bool tensor = static_cast<std::size_t>(buffers_[e.name]) < p_.inputs.size() + p_.outputs.size();
        malformed(at, tensor ? "the name of a tensor of the problem" : "a scratch buffer of that name already exists");
      }
      if (std::find(p_.dim_order.begin(), p_.dim_order.end(), e.name) != p_.dim_order.end() || dims_.count(e.name))
        malformed(at, "the name of a dim of the problem");
      auto const* sv = optional(o, "size");
      if (!sv) malformed(at, "no field 'size' (elements, an expression)");
      e.elements = expr(*sv, at + ".size");
      if (auto const* dv = optional(o, "dtype")) {
        if (!dv->is_string())
          malformed(at + ".dtype", "expected \"f32\" or \"f16\", found " + std::string(kind_name(*dv)));
        const std::string_view d(dv->get_string().data(), dv->get_string().size());
        if (d == "f16")
          e.width = 2;
        else if (d != "f32")
          malformed(at + ".dtype", "'" + shown(d) + "' is not f32 or f16");
      }
      buffers_[e.name] = next++;
      scratch_.push_back(std::move(e));
    }
  }

  cp::launch launch(json::value const& v, std::size_t i) {
    std::string at = "launches[" + std::to_string(i) + "]";
    if (!v.is_object())
      malformed(at,
                "expected an object {kernel, grid, block, smem, cluster, args}, found " + std::string(kind_name(v)));
    auto const& o = v.get_object();
    only(o, at, {"kernel", "grid", "block", "smem", "cluster", "args"});
    cp::launch l;
    auto const* k = optional(o, "kernel");
    if (!k) malformed(at, "no field 'kernel' (the entry point's name)");
    l.kernel = name(*k, at + ".kernel");
    at += " (kernel '" + l.kernel + "')";
    auto triple = [&](char const* key, std::int64_t* out, bool required) {
      auto const* t = optional(o, key);
      if (!t) {
        if (required) malformed(at, std::string("no field '") + key + "' (3 expressions: x, y, z)");
        return;
      }
      if (!t->is_array() || t->get_array().size() != 3)
        malformed(at + "." + key, "expected an array of 3 expressions (x, y, z), found " +
                                      (t->is_array() ? std::to_string(t->get_array().size()) + " elements"
                                                     : std::string(kind_name(*t))));
      for (std::size_t d = 0; d < 3; ++d)
        out[d] = expr(t->get_array()[d], at + "." + key + "[" + std::to_string(d) + "]");
    };
    triple("grid", l.grid, true);
    triple("block", l.block, true);
    triple("cluster", l.cluster, false);
    if (auto const* sm = optional(o, "smem")) l.smem = expr(*sm, at + ".smem");
    auto const* args = optional(o, "args");
    if (!args) malformed(at, "no field 'args' (the kernel's arguments by name)");
    if (!args->is_array())
      malformed(at + ".args", "expected an array of names, found " + std::string(kind_name(*args)));
    auto const& names = args->get_array();
    if (names.size() > plan_limits::args_per_launch)
      malformed(at + ".args", std::to_string(names.size()) + " arguments (at most " +
                                  std::to_string(plan_limits::args_per_launch) + ")");
    for (std::size_t a = 0; a < names.size(); ++a) {
      const std::string where = at + ".args[" + std::to_string(a) + "]";
      const std::string n = name(names[a], where);
      if (auto it = buffers_.find(n); it != buffers_.end()) {
        l.args.push_back(static_cast<std::int64_t>(cp::arg_kind::buffer));
        l.args.push_back(it->second);
        continue;
      }
      auto d = std::find(p_.dim_order.begin(), p_.dim_order.end(), n);
      if (d == p_.dim_order.end())
        malformed(where, "'" + n + "' is neither a tensor, a scratch buffer nor a dim (" + known() + ")");
      l.args.push_back(static_cast<std::int64_t>(cp::arg_kind::dim));
      l.args.push_back(d - p_.dim_order.begin());
    }
    return l;
  }

  std::string known() const {
    std::vector<std::string> tensors, scratch, dims(p_.dim_order.begin(), p_.dim_order.end());
    for (auto const& t : p_.inputs) tensors.push_back(t.name);
    for (auto const& t : p_.outputs) tensors.push_back(t.name);
    for (auto const& s : scratch_) scratch.push_back(s.name);
    return "tensors: " + list(tensors) + "; scratch: " + list(scratch) + "; dims: " + list(dims);
  }

  void check_scratch(cp::plan& out) const {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < scratch_.size(); ++i) {
      auto const& e = scratch_[i];
      const std::string at = "scratch[" + std::to_string(i) + "] ('" + e.name + "')";
      auto bad = [&](std::string const& why) { reject(stage::resources, at + ": " + why); };
      if (e.elements < 1) bad("size " + std::to_string(e.elements) + " elements (at least 1)");
      std::int64_t bytes = 0;
      if (__builtin_mul_overflow(e.elements, e.width, &bytes) || bytes > limits_.max_scratch_bytes)
        bad(std::to_string(e.elements) + " elements of " + std::to_string(e.width) + " bytes: over the limit of " +
            std::to_string(limits_.max_scratch_bytes) + " bytes");
      if (__builtin_add_overflow(total, bytes, &total) || total > limits_.max_scratch_bytes)
        bad("the scratch buffers together exceed the limit of " + std::to_string(limits_.max_scratch_bytes) + " bytes");
      out.scratch.push_back(static_cast<std::uint64_t>(bytes));
    }
  }

  void check_launch(cp::launch const& l, std::size_t i) const {
    const std::string at = "launches[" + std::to_string(i) + "] (kernel '" + l.kernel + "')";
    auto bad = [&](std::string const& why) { reject(stage::resources, at + ": " + why); };
    auto dims3 = [](std::int64_t const* v) {
      return std::to_string(v[0]) + " x " + std::to_string(v[1]) + " x " + std::to_string(v[2]);
    };
    for (int d = 0; d < 3; ++d)
      if (l.grid[d] < 1 || l.block[d] < 1 || l.cluster[d] < 1)
        bad("grid " + dims3(l.grid) + ", block " + dims3(l.block) + ", cluster " + dims3(l.cluster) +
            ": every dimension must be >= 1");
    const auto lim = limits_.max_threads_per_block;
    auto const* mb = limits_.max_block;
    if (l.block[0] > mb[0] || l.block[1] > mb[1] || l.block[2] > mb[2] || product(l.block) > lim)
      bad("block " + dims3(l.block) + ": at most " + std::to_string(lim) + " threads per block, and at most " +
          dims3(mb) + on(limits_));
    if (l.grid[0] > limits_.max_grid[0] || l.grid[1] > limits_.max_grid[1] || l.grid[2] > limits_.max_grid[2])
      bad("grid " + dims3(l.grid) + ": at most " + dims3(limits_.max_grid) + on(limits_));
    const auto cl = limits_.max_cluster;
    if (l.cluster[0] > cl || l.cluster[1] > cl || l.cluster[2] > cl || product(l.cluster) > cl)
      bad("cluster " + dims3(l.cluster) + ": " +
          (cl <= 1 ? "no thread block clusters" : "at most " + std::to_string(cl) + " blocks per cluster") +
          on(limits_));
    for (int d = 0; d < 3; ++d)
      if (l.grid[d] % l.cluster[d] != 0)
        bad("grid " + dims3(l.grid) + " is not a multiple of the cluster " + dims3(l.cluster));
    if (l.smem < 0 || l.smem > limits_.max_smem_per_block)
      bad(std::to_string(l.smem) + " bytes of dynamic shared memory (0 to " +
          std::to_string(limits_.max_smem_per_block) + on(limits_) + ")");
  }

  problem const& p_;
  std::map<std::string, std::int64_t> const& dims_;
  device_limits const& limits_;
  std::map<std::string, std::int64_t> buffers_;  ///< name -> buffer index
  std::vector<scratch_entry> scratch_;
};

inline constexpr int max_registers_per_thread = 255;           ///< every architecture in gpu_arch_table
inline constexpr std::int64_t register_allocation_unit = 256;  ///< registers per warp are allocated in these

}  // namespace detail::launch_plan

device_limits limits_for_arch(std::string_view arch) {
  if (auto const* row = find_gpu_arch(arch)) {
    auto const& limits = row->launch;
    device_limits l;
    l.source = std::string(row->arch);
    l.max_threads_per_block = limits.max_threads_per_block;
    for (int d = 0; d < 3; ++d) {
      l.max_block[d] = limits.max_block[d];
      l.max_grid[d] = limits.max_grid[d];
    }
    l.max_smem_per_block = limits.max_smem_per_block;
    l.max_registers_per_block = limits.max_registers_per_block;
    l.max_cluster = limits.max_cluster;
    l.max_scratch_bytes = kernelbrain::max_scratch_bytes;
    return l;
  }
  std::string known;
  for (auto const& row : gpu_arch_table) known += (known.empty() ? "" : ", ") + std::string(row.arch);
  throw error("unknown GPU architecture '" + detail::launch_plan::shown(arch) +
              "': the device-limits table (kernelbrain/backends/cuda/arch_table.hpp) knows " + known);
}

device_limits limits_for_device(detail::cuda_protocol::device_info const& device, std::string_view arch) {
  if (!device.present) return limits_for_arch(arch);
  device_limits l;
  l.source = detail::launch_plan::shown(device.name) + " (sm_" + std::to_string(device.cc_major) +
             std::to_string(device.cc_minor) + ")";
  l.max_threads_per_block = device.max_threads_per_block;
  for (int d = 0; d < 3; ++d) {
    l.max_block[d] = device.max_block[d];
    l.max_grid[d] = device.max_grid[d];
  }
  l.max_smem_per_block = device.max_smem_per_block_optin;
  l.max_registers_per_block = device.max_registers_per_block;
  l.max_cluster = device.cluster_launch ? portable_cluster_size : 1;
  l.max_scratch_bytes = kernelbrain::max_scratch_bytes;
  const std::pair<char const*, std::int64_t> reported[] = {{"threads per block", l.max_threads_per_block},
                                                           {"block x", l.max_block[0]},
                                                           {"block y", l.max_block[1]},
                                                           {"block z", l.max_block[2]},
                                                           {"grid x", l.max_grid[0]},
                                                           {"grid y", l.max_grid[1]},
                                                           {"grid z", l.max_grid[2]},
                                                           {"opt-in shared memory per block", l.max_smem_per_block},
                                                           {"registers per block", l.max_registers_per_block}};
  for (auto const& [what, v] : reported)
    if (v < 1)
      throw error("the CUDA worker reports " + l.source + " with " + std::to_string(v) + " as its maximum " + what +
                  ": not a usable device");
  return l;
}

detail::cuda_protocol::plan resolve_launch_plan(problem const& p, std::map<std::string, std::int64_t> const& dims,
                                                std::string_view text, device_limits const& limits) {
  try {
    return detail::launch_plan::resolver(p, dims, limits).resolve(text);
  } catch (plan_reject const&) {
    throw;
  } catch (std::bad_alloc const&) {
    throw plan_reject{stage::resources, "out of memory while resolving the launch plan"};
  } catch (std::exception const& e) {
    // Not expected (every field is type-checked before use); still the candidate's plan, not ours.
    throw plan_reject{stage::signature, std::string("unusable launch plan (unexpected ") + e.what() + ")"};
  }
}

std::optional<plan_reject> check_plan_against(detail::cuda_protocol::plan const& plan, cubin_info const& kernels,
                                              device_limits const& limits) {
  using namespace detail::launch_plan;
  auto at = [&](std::size_t i) {
    return "launches[" + std::to_string(i) + "] (kernel '" + shown(plan.launches[i].kernel) + "')";
  };
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    auto const& l = plan.launches[i];
    auto const* k = kernels.find(l.kernel);
    if (!k)
      return plan_reject{stage::signature, at(i) + ": the cubin has no entry point of that name (entry points: " +
                                               shown(kernels.names()) + "); define it as extern \"C\" __global__"};
    const std::size_t passed = l.args.size() / 2;
    if (k->param_sizes.size() != passed)
      return plan_reject{stage::signature, at(i) + ": the kernel declares " + std::to_string(k->param_sizes.size()) +
                                               " parameters, the plan passes " + std::to_string(passed) + " arguments"};
    for (std::size_t j = 0; j < k->param_sizes.size(); ++j)
      if (k->param_sizes[j] != 8)
        return plan_reject{stage::signature, at(i) + ": parameter " + std::to_string(j) + " is " +
                                                 std::to_string(k->param_sizes[j]) +
                                                 " bytes; every parameter must be 8 bytes: a pointer or a long long "
                                                 "dim (an int dim is 4 bytes)"};
  }
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    auto const& l = plan.launches[i];
    auto const& k = *kernels.find(l.kernel);
    const std::int64_t threads = product(l.block);
    if (k.max_threads > 0 && threads > k.max_threads)
      return plan_reject{stage::resources, at(i) + ": a block of " + std::to_string(threads) +
                                               " threads, above the kernel's __launch_bounds__ of " +
                                               std::to_string(k.max_threads)};
    if (k.required_block[0] > 0 || k.required_block[1] > 0 || k.required_block[2] > 0) {
      bool same = true;
      for (std::size_t d = 0; d < 3; ++d) same = same && l.block[d] == std::max(k.required_block[d], 1);
      if (!same)
        return plan_reject{stage::resources, at(i) + ": block " + std::to_string(l.block[0]) + " x " +
                                                 std::to_string(l.block[1]) + " x " + std::to_string(l.block[2]) +
                                                 ", but the kernel requires " + std::to_string(k.required_block[0]) +
                                                 " x " + std::to_string(k.required_block[1]) + " x " +
                                                 std::to_string(k.required_block[2])};
    }
    if (k.registers > max_registers_per_thread)
      return plan_reject{stage::resources, at(i) + ": " + std::to_string(k.registers) +
                                               " registers per thread (at most " +
                                               std::to_string(max_registers_per_thread) + ")"};
    const std::int64_t per_warp = (std::int64_t{std::max(k.registers, 0)} * 32 + register_allocation_unit - 1) /
                                  register_allocation_unit * register_allocation_unit;
    const std::int64_t warps = threads / 32 + (threads % 32 != 0);
    std::int64_t needed = 0;
    const bool huge = __builtin_mul_overflow(warps, per_warp, &needed);
    if (huge || needed > limits.max_registers_per_block)
      return plan_reject{stage::resources,
                         at(i) + ": " + std::to_string(k.registers) + " registers x " + std::to_string(threads) +
                             " threads need " + (huge ? std::string("more than 2^63") : std::to_string(needed)) +
                             " registers per block (at most " + std::to_string(limits.max_registers_per_block) +
                             on(limits) + ", allocated per warp in units of 256)"};
    std::int64_t smem = 0;
    if (__builtin_add_overflow(std::int64_t{k.static_smem}, l.smem, &smem) || smem > limits.max_smem_per_block ||
        l.smem < 0)
      return plan_reject{stage::resources, at(i) + ": " + std::to_string(k.static_smem) + " bytes of static and " +
                                               std::to_string(l.smem) + " of dynamic shared memory (at most " +
                                               std::to_string(limits.max_smem_per_block) + " together" + on(limits) +
                                               ")"};
  }
  return std::nullopt;
}

}  // namespace kernelbrain
