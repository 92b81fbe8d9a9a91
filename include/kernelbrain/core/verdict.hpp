// The outcome of a gate or a measurement: pass, or a reject with a typed stage.
#pragma once
#include <string>
#include <string_view>

namespace kernelbrain {

/// Where a candidate failed. Typed so that reports and schedulers can tell a crash from a slow kernel.
enum class stage {
  pass,
  policy,          ///< static source policy (forbidden construct)
  compile,         ///< did not compile (or the compiler was killed)
  signature,       ///< entry point missing or with the wrong signature
  resources,       ///< too many registers, too much shared memory, unlaunchable
  correctness,     ///< wrong output, NaN/Inf, partial write, nondeterminism, wrote its input
  crash,           ///< signal, abort, sticky device error
  timeout,         ///< watchdog deadline
  impossible,      ///< faster than the roofline floor: a measurement bug or a cheat
  infrastructure,  ///< the evaluator itself failed (not the candidate's fault)
  sanitizer,       ///< a memory checker found an error (out-of-bounds access, race, uninitialised read)
};

[[nodiscard]] constexpr std::string_view to_string(stage s) noexcept {
  switch (s) {
    case stage::pass:
      return "pass";
    case stage::policy:
      return "policy";
    case stage::compile:
      return "compile";
    case stage::signature:
      return "signature";
    case stage::resources:
      return "resources";
    case stage::correctness:
      return "correctness";
    case stage::crash:
      return "crash";
    case stage::timeout:
      return "timeout";
    case stage::impossible:
      return "impossible";
    case stage::infrastructure:
      return "infrastructure";
    case stage::sanitizer:
      return "sanitizer";
  }
  return "unknown";
}

/// Returns false for an unknown name.
[[nodiscard]] constexpr bool parse_stage(std::string_view name, stage& out) noexcept {
  for (stage s : {stage::pass, stage::policy, stage::compile, stage::signature, stage::resources, stage::correctness,
                  stage::crash, stage::timeout, stage::impossible, stage::infrastructure, stage::sanitizer})
    if (to_string(s) == name) {
      out = s;
      return true;
    }
  return false;
}

struct verdict {
  stage where = stage::pass;
  std::string detail;  ///< human-readable reason; empty on pass

  [[nodiscard]] static verdict pass() { return {}; }
  [[nodiscard]] static verdict reject(stage s, std::string why) { return {s, std::move(why)}; }
  [[nodiscard]] bool passed() const noexcept { return where == stage::pass; }
  explicit operator bool() const noexcept { return passed(); }
  friend bool operator==(verdict const&, verdict const&) = default;
};

}  // namespace kernelbrain
