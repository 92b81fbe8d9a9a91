// The reply parser's fenced blocks: fence lines, the blocks of a text (an unterminated fence takes the
// rest), code and non-code labels, and blocks nested in markdown-like blocks. Used by the reply
// parser only (generate/llm/reply_parser.hpp); not an API.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::reply_detail {

/// Bounds on work for hostile inputs.
inline constexpr int max_nesting = 3;  ///< fenced blocks inside fenced blocks

inline constexpr std::size_t max_label_bytes = 64;  ///< of a fence's info word

struct block {
  std::string label;     ///< the info string's first word, lower case
  std::string text;      ///< the content, without the fence lines
  bool closed = true;    ///< false: the text ran to the end of its container
  std::size_t line = 0;  ///< 1-based line of the opening fence in its container
};

/// A fence line: up to 3 spaces of indentation (any amount: models indent fences inside lists), then
/// at least 3 backticks or tildes. Sets the character, the run length and the info string.
[[nodiscard]] KERNELBRAIN_DECL bool fence_of(std::string_view line, char& ch, std::size_t& len,
                                             std::string_view& info) noexcept;

/// Splits text (LF line endings) into fenced blocks. An unterminated fence takes the rest of the text.
/// Linear in the text's size.
[[nodiscard]] KERNELBRAIN_DECL std::vector<block> split_blocks(std::string_view text, bool& any_fence);

[[nodiscard]] KERNELBRAIN_DECL bool c_family_label(std::string_view l) noexcept;

[[nodiscard]] KERNELBRAIN_DECL bool non_code_label(std::string_view l) noexcept;

/// Blocks of a reply, with the blocks inside a markdown-like block (or an unlabelled one) replacing it.
/// A fence left open inside a closed block ends with that block, not with the reply.
KERNELBRAIN_DECL void collect(std::string_view text, int depth, bool top, std::vector<block>& out, bool& any_fence);

}  // namespace kernelbrain::llm::reply_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/reply/impl/fences.ipp"
#endif
