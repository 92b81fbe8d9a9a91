// Bodies of kernelbrain/generate/llm/http/base64.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <cstddef>
#include "kernelbrain/generate/llm/http/base64.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::string base64(std::string_view in) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16U) | (static_cast<unsigned char>(in[i + 1]) << 8U) |
                       static_cast<unsigned char>(in[i + 2]);
    out += alphabet[(v >> 18U) & 63U];
    out += alphabet[(v >> 12U) & 63U];
    out += alphabet[(v >> 6U) & 63U];
    out += alphabet[v & 63U];
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16U;
    out += alphabet[(v >> 18U) & 63U];
    out += alphabet[(v >> 12U) & 63U];
    out += "==";
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16U) | (static_cast<unsigned char>(in[i + 1]) << 8U);
    out += alphabet[(v >> 18U) & 63U];
    out += alphabet[(v >> 12U) & 63U];
    out += alphabet[(v >> 6U) & 63U];
    out += '=';
  }
  return out;
}

}  // namespace kernelbrain::llm::http_detail
