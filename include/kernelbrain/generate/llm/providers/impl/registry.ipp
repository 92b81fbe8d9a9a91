// Bodies of kernelbrain/generate/llm/providers/registry.hpp: the list of provider formats.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/generate/llm/providers/anthropic.hpp"
#include "kernelbrain/generate/llm/providers/openai.hpp"
#include "kernelbrain/generate/llm/providers/registry.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::span<provider const* const> all_providers() noexcept {
  static const openai_format openai;
  static const anthropic_format anthropic;
  static provider const* const list[] = {
      &openai,
      &anthropic,
  };
  return list;
}

KERNELBRAIN_DECL provider const& provider_for(wire_format f) {
  for (provider const* p : all_providers())
    if (p->format() == f) return *p;
  throw error("no provider format registered for wire format " + std::to_string(static_cast<int>(f)));
}

}  // namespace kernelbrain::llm::http_detail
