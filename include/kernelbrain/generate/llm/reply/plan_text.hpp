// The reply parser's reading of a launch plan's JSON text, without a JSON library: comments and
// trailing commas removed, the kernels it names, and whether a text is a plan. Used by the reply
// parser only (generate/llm/reply_parser.hpp); not an API.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain::llm::reply_detail {

/// A JSON-ish text with // and /* */ comments and trailing commas removed, outside strings.
[[nodiscard]] KERNELBRAIN_DECL std::string clean_json(std::string_view t, bool& had_comments, bool& had_commas);

/// The string values of every "kernel" key in a JSON text: (offset of the value's first character
/// after its quote, value).
[[nodiscard]] KERNELBRAIN_DECL std::vector<std::pair<std::size_t, std::string>> plan_kernels(std::string_view t);

[[nodiscard]] KERNELBRAIN_DECL bool is_plan(std::string_view text);

}  // namespace kernelbrain::llm::reply_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/reply/impl/plan_text.ipp"
#endif
