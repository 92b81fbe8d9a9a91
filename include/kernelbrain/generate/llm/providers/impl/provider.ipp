// Bodies of kernelbrain/generate/llm/providers/provider.hpp: the JSON field readers.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include "kernelbrain/generate/llm/providers/provider.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::string string_of(boost::json::value const* v) {
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string().data(), v->get_string().size());
}

KERNELBRAIN_DECL std::optional<std::uint64_t> count_of(boost::json::object const& o, std::string_view key) {
  auto const* v = o.if_contains(boost::json::string_view(key.data(), key.size()));
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  if (v->is_double() && v->get_double() >= 0 && v->get_double() < 1e18)
    return static_cast<std::uint64_t>(v->get_double());
  return std::nullopt;
}

KERNELBRAIN_DECL std::optional<std::uint64_t> event_count_of(boost::json::value const* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  return std::nullopt;
}

KERNELBRAIN_DECL boost::json::object const* object_at(boost::json::object const& o, std::string_view key) {
  auto const* v = o.if_contains(boost::json::string_view(key.data(), key.size()));
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

KERNELBRAIN_DECL boost::json::value text(std::string_view s) {
  return boost::json::value(boost::json::string_view(s.data(), s.size()));
}

}  // namespace kernelbrain::llm::http_detail
