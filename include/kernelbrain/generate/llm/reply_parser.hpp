// The reply parser: turns a model's answer (prose plus fenced code) into a kernel candidate's source and
// launch plan, applies a few small recorded repairs, and says in a typed status why it could not when it
// cannot. Deterministic, text-level only (no JSON library), and total: parse_reply never throws and
// reads nothing beyond a reply's size limit. The rules are in docs/llm-replies.md.
//
// Bodies in impl/reply_parser.ipp; its parts in reply/: fences.hpp (fenced blocks), code_scan.hpp
// (C and C++ source), plan_text.hpp (a launch plan's JSON text).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/traits.hpp"
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::llm {

/// Why a reply did or did not yield a candidate.
enum class reply_status {
  ok,            ///< a source (and, where required, a launch plan) was found
  no_code,       ///< nothing usable: no block holds a kernel of the expected backend
  truncated,     ///< the reply ends inside a code block (cut off)
  too_large,     ///< the reply is over the size limit; it was not read
  ambiguous,     ///< several different candidate sources (or plans) and no rule picks one
  missing_plan,  ///< a CUDA source but no launch plan, and the problem requires one
};

[[nodiscard]] constexpr std::string_view to_string(reply_status s) noexcept {
  switch (s) {
    case reply_status::ok:
      return "ok";
    case reply_status::no_code:
      return "no_code";
    case reply_status::truncated:
      return "truncated";
    case reply_status::too_large:
      return "too_large";
    case reply_status::ambiguous:
      return "ambiguous";
    case reply_status::missing_plan:
      return "missing_plan";
  }
  return "unknown";
}

/// What the problem expects of a reply.
struct reply_expectations {
  /// Kernels a launch plan launches (CUDA: `__global__` functions, the plan in a ```json block); false:
  /// one source that defines the entry point (host: kb_kernel). From backend_traits::launch_plan.
  bool launch_plan = true;
  std::string language = "CUDA";  ///< what the source is written in, for messages
  std::vector<std::string>
      entry_points;           ///< launch plans: the kernel names the problem requires, if it says; else kb_kernel
  bool plan_required = true;  ///< launch plans: the reply must carry one ({"launches": ...})
  std::size_t max_reply_bytes = std::size_t{1} << 20;  ///< a longer reply is too_large
};

/// What a reply for a problem of backend `t` must hold (a launch plan where its kernels need one).
[[nodiscard]] KERNELBRAIN_DECL reply_expectations expectations_for(backend_traits const& t);

/// The outcome of parse_reply.
struct parsed_reply {
  reply_status status = reply_status::no_code;
  std::string source;                ///< the kernel source, repaired; empty unless one was found
  std::string plan;                  ///< the launch plan's JSON text, repaired; empty if none
  std::vector<std::string> repairs;  ///< one short text per repair applied, in order
  std::string message;               ///< for people: what was found, or why nothing was

  [[nodiscard]] bool ok() const noexcept { return status == reply_status::ok; }

  /// pass for ok; otherwise a reject: too_large -> policy (a size limit), truncated -> compile (the text
  /// cannot compile), no_code, ambiguous and missing_plan -> signature (no usable entry point or plan).
  [[nodiscard]] KERNELBRAIN_DECL verdict to_verdict() const;
};

/// Extracts a candidate from a model's reply. Never throws: an allocation failure reads as no_code.
[[nodiscard]] KERNELBRAIN_DECL parsed_reply parse_reply(std::string_view reply,
                                                        reply_expectations const& expect) noexcept;

}  // namespace kernelbrain::llm

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/impl/reply_parser.ipp"
#endif
