// The names KernelBrain accepts where a file names something (dims, tensors, parameters, kernels,
// scratch buffers): C identifiers, letters, digits and _, not starting with a digit.
#pragma once
#include <algorithm>
#include <cctype>
#include <string_view>

namespace kernelbrain::detail {

inline bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// A non-empty identifier_start followed by identifier_chars.
inline bool is_identifier(std::string_view s) {
  return !s.empty() && identifier_start(s[0]) && std::all_of(s.begin() + 1, s.end(), identifier_char);
}

}  // namespace kernelbrain::detail
