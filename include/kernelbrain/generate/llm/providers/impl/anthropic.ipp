// Bodies of kernelbrain/generate/llm/providers/anthropic.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include "kernelbrain/generate/llm/providers/anthropic.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL std::optional<std::string> anthropic_format::token_parameter_refusal(token_parameter t) const {
  if (t == token_parameter::max_completion_tokens)
    return "the Anthropic messages API takes max_tokens, not max_completion_tokens (token_limit)";
  if (t == token_parameter::none)
    return "the Anthropic messages API requires max_tokens: token_limit none is for OpenAI-compatible endpoints";
  return std::nullopt;
}

KERNELBRAIN_DECL std::string anthropic_format::request_body(request_fields const& f) const {
  namespace json = boost::json;
  json::object o;
  o["model"] = text(f.model);
  json::array messages;
  if (!f.system.empty()) o["system"] = text(f.system);
  json::object user;
  user["role"] = "user";
  user["content"] = text(f.user);
  messages.push_back(std::move(user));
  o["messages"] = std::move(messages);
  if (f.token_field != token_parameter::none) o[to_string(f.token_field)] = static_cast<std::uint64_t>(f.max_tokens);
  if (f.temperature) o["temperature"] = *f.temperature;
  if (f.stream) o["stream"] = true;
  return json::serialize(o);
}

KERNELBRAIN_DECL std::vector<std::pair<std::string, std::string>> anthropic_format::headers(
    credentials const& c) const {
  std::vector<std::pair<std::string, std::string>> h;
  if (!c.api_key.empty()) h.emplace_back("x-api-key", std::string(c.api_key));
  h.emplace_back("anthropic-version", std::string(c.anthropic_version));
  return h;
}

KERNELBRAIN_DECL std::optional<std::string> anthropic_format::read_reply(boost::json::object const& reply,
                                                                         reply_parts& out) const {
  auto const* content = reply.if_contains("content");
  if (content == nullptr || !content->is_array()) return "the reply has no content";
  for (auto const& part : content->get_array())
    if (part.is_object() && string_of(part.get_object().if_contains("type")) == "text")
      out.text += string_of(part.get_object().if_contains("text"));
  out.finish_reason = string_of(reply.if_contains("stop_reason"));
  if (auto const* usage = reply.if_contains("usage"); usage != nullptr && usage->is_object()) {
    out.input_tokens = count_of(usage->get_object(), "input_tokens");
    out.output_tokens = count_of(usage->get_object(), "output_tokens");
  }
  out.model = string_of(reply.if_contains("model"));
  return std::nullopt;
}

KERNELBRAIN_DECL void anthropic_format::read_event(boost::json::object const& o, std::string_view event,
                                                   reply_parts& out) const {
  std::string type = string_of(o.if_contains("type"));
  if (type.empty()) type = event;
  if (type == "message_start") {
    if (auto const* message = object_at(o, "message")) {
      out.model = string_of(message->if_contains("model"));
      if (auto const* usage = object_at(*message, "usage")) {
        if (auto n = event_count_of(usage->if_contains("input_tokens"))) out.input_tokens = n;
        if (auto n = event_count_of(usage->if_contains("output_tokens"))) out.output_tokens = n;
      }
    }
  } else if (type == "content_block_start") {
    if (auto const* block = object_at(o, "content_block"); block && string_of(block->if_contains("type")) == "text")
      out.text += string_of(block->if_contains("text"));
  } else if (type == "content_block_delta") {
    if (auto const* delta = object_at(o, "delta"); delta && string_of(delta->if_contains("type")) == "text_delta")
      out.text += string_of(delta->if_contains("text"));
  } else if (type == "message_delta") {
    if (auto const* delta = object_at(o, "delta"))
      if (const std::string s = string_of(delta->if_contains("stop_reason")); !s.empty()) out.finish_reason = s;
    if (auto const* usage = object_at(o, "usage")) {
      if (auto n = event_count_of(usage->if_contains("input_tokens"))) out.input_tokens = n;
      if (auto n = event_count_of(usage->if_contains("output_tokens"))) out.output_tokens = n;
    }
  } else if (type == "message_stop") {
    out.complete = true;
  }  // ping, content_block_stop and event types added later carry nothing the client uses
}

}  // namespace kernelbrain::llm::http_detail
