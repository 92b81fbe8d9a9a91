// Problems as data: a problem directory (problem.json plus the source files it names) to a
// kernelbrain::problem. The format is described in docs/problem-format.md.
// No JSON library in this header; the body is in io/impl/problem_loader.ipp (header-only form:
// included at the end; separately compiled: kernelbrain/src.hpp or kernelbrain::runtime).
#pragma once
#include <array>
#include <filesystem>
#include <string_view>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/problem.hpp"

namespace kernelbrain {

/// The shape tiers a problem file may use. A closed list on purpose: policies select shapes by tier
/// (the default gate checks every "odd" and "wide" shape; "wide" ones are never timed), so a misspelt
/// tier must be an error, not a shape that silently escapes a check.
inline constexpr std::array<std::string_view, 6> problem_tiers = {"smoke", "odd", "wide", "small", "medium", "large"};

/// The name of the file a problem directory must hold.
inline constexpr std::string_view problem_file_name = "problem.json";

/// Reads `dir`/problem.json and the files it names (reference, seed, templates), evaluates the cost
/// model at every shape (shape::bytes, shape::flops) and returns the validated problem, with
/// problem::directory set to the absolute directory. `dir` may also be the path of problem.json itself.
///
/// Throws kernelbrain::error for anything missing or malformed; the message names the file and the
/// field, with the index for arrays, e.g. ".../problem.json: shapes[2].dims: missing dim 'C'". "backend"
/// must name a registered backend that runs problem files (backends(): host and cuda are built in).
[[nodiscard]] KERNELBRAIN_DECL problem load_problem(std::filesystem::path const& dir);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/io/impl/problem_loader.ipp"
#endif
