// The reply parser's reading of C and C++ source: comments and literals masked, whole identifiers
// found, function definitions and __global__ kernels recognised, identifiers renamed, and the
// standard headers a host source uses without including them added (a recorded repair). Used by the
// reply parser only (generate/llm/reply_parser.hpp); not an API.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::reply_detail {

/// A bound on work for hostile inputs.
inline constexpr std::size_t max_kernels = 64;  ///< __global__ functions examined per source

/// The text with comments, string and character literals blanked to spaces (quotes kept, newlines
/// kept), so that offsets match the original. Raw strings are treated as ordinary strings.
[[nodiscard]] KERNELBRAIN_DECL std::string mask_code(std::string_view s);

/// Offsets of the identifier `word` (whole word) in masked text.
[[nodiscard]] KERNELBRAIN_DECL std::vector<std::size_t> find_words(std::string_view m, std::string_view word,
                                                                   std::size_t limit = std::string_view::npos);

[[nodiscard]] KERNELBRAIN_DECL bool has_word(std::string_view m, std::string_view word);

[[nodiscard]] KERNELBRAIN_DECL std::size_t skip_space(std::string_view m, std::size_t i) noexcept;

/// Offset just past the parenthesis group that opens at m[i] == '(' (or npos when it never closes).
[[nodiscard]] KERNELBRAIN_DECL std::size_t past_parens(std::string_view m, std::size_t i) noexcept;

/// Whether the masked text defines a function named `name` (name, parameter list, then a body).
[[nodiscard]] KERNELBRAIN_DECL bool defines_function(std::string_view m, std::string_view name);

/// One __global__ function of a source.
struct kernel_decl {
  std::string name;
  std::size_t decl_start = 0;  ///< where its declaration begins (after the previous ';', '{', '}' or directive)
  bool has_extern_c = false;   ///< extern "C" on it or around it
  bool repairable = true;      ///< not a template nor static: extern "C" may be added
};

/// The __global__ functions of a source (at most max_kernels).
[[nodiscard]] KERNELBRAIN_DECL std::vector<kernel_decl> kernels_of(std::string_view src, std::string_view m);

[[nodiscard]] KERNELBRAIN_DECL bool includes(std::string_view src, std::string_view header);

/// Host: standard headers for facilities used without their include (all on the host policy's list).
KERNELBRAIN_DECL void add_host_includes(std::string& src, std::vector<std::string>& repairs);

/// Replaces the identifier `from` by `to` in code (not in comments or strings).
[[nodiscard]] KERNELBRAIN_DECL std::string rename_identifier(std::string_view src, std::string_view from,
                                                             std::string_view to);

}  // namespace kernelbrain::llm::reply_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/reply/impl/code_scan.ipp"
#endif
