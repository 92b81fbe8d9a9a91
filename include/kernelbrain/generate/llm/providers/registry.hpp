// The provider wire formats the HTTP model client knows, in one list (impl/registry.ipp): adding a
// provider is its file in providers/, its wire_format value, and one line in that list. Used by the
// client; not an API.
#pragma once
#include <span>
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/providers/provider.hpp"
#include "kernelbrain/generate/llm/wire_format.hpp"

namespace kernelbrain::llm::http_detail {

/// Every registered format, in the order messages name them.
[[nodiscard]] KERNELBRAIN_DECL std::span<provider const* const> all_providers() noexcept;

/// The object of format `f` (every wire_format has one).
[[nodiscard]] KERNELBRAIN_DECL provider const& provider_for(wire_format f);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/providers/impl/registry.ipp"
#endif
