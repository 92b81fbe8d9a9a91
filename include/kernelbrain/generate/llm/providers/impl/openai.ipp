// Bodies of kernelbrain/generate/llm/providers/openai.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include "kernelbrain/generate/llm/http/text.hpp"
#include "kernelbrain/generate/llm/providers/openai.hpp"

namespace kernelbrain::llm::http_detail {

KERNELBRAIN_DECL token_parameter openai_format::automatic_token_parameter(url const& target) const {
  return lower(target.host) == "api.openai.com" ? token_parameter::max_completion_tokens : token_parameter::max_tokens;
}

KERNELBRAIN_DECL std::string openai_format::request_body(request_fields const& f) const {
  namespace json = boost::json;
  json::object o;
  o["model"] = text(f.model);
  json::array messages;
  if (!f.system.empty()) {
    json::object m;
    m["role"] = "system";
    m["content"] = text(f.system);
    messages.push_back(std::move(m));
  }
  json::object user;
  user["role"] = "user";
  user["content"] = text(f.user);
  messages.push_back(std::move(user));
  o["messages"] = std::move(messages);
  if (f.token_field != token_parameter::none) o[to_string(f.token_field)] = static_cast<std::uint64_t>(f.max_tokens);
  if (f.temperature) o["temperature"] = *f.temperature;
  if (f.stream) {
    o["stream"] = true;
    o["stream_options"] = json::object{{"include_usage", true}};
  }
  return json::serialize(o);
}

KERNELBRAIN_DECL std::vector<std::pair<std::string, std::string>> openai_format::headers(credentials const& c) const {
  std::vector<std::pair<std::string, std::string>> h;
  if (!c.api_key.empty()) h.emplace_back("Authorization", "Bearer " + std::string(c.api_key));
  return h;
}

KERNELBRAIN_DECL std::optional<std::string> openai_format::read_reply(boost::json::object const& reply,
                                                                      reply_parts& out) const {
  auto const* choices = reply.if_contains("choices");
  if (choices == nullptr || !choices->is_array() || choices->get_array().empty() ||
      !choices->get_array()[0].is_object())
    return "the reply has no choices";
  auto const& choice = choices->get_array()[0].get_object();
  auto const* message = choice.if_contains("message");
  if (message == nullptr || !message->is_object()) return "the reply has no choices[0].message";
  auto const* content = message->get_object().if_contains("content");
  if (content != nullptr && content->is_array()) {  // content parts, as some servers send them
    for (auto const& part : content->get_array())
      if (part.is_object()) out.text += string_of(part.get_object().if_contains("text"));
  } else {
    out.text = string_of(content);
  }
  out.finish_reason = string_of(choice.if_contains("finish_reason"));
  if (auto const* usage = reply.if_contains("usage"); usage != nullptr && usage->is_object()) {
    out.input_tokens = count_of(usage->get_object(), "prompt_tokens");
    out.output_tokens = count_of(usage->get_object(), "completion_tokens");
  }
  out.model = string_of(reply.if_contains("model"));
  return std::nullopt;
}

KERNELBRAIN_DECL void openai_format::read_event(boost::json::object const& o, std::string_view /*event*/,
                                                reply_parts& out) const {
  if (const std::string m = string_of(o.if_contains("model")); !m.empty()) out.model = m;
  if (auto const* choices = o.if_contains("choices"); choices != nullptr && choices->is_array())
    for (auto const& c : choices->get_array()) {
      if (!c.is_object()) continue;
      auto const& choice = c.get_object();
      if (auto const* index = choice.if_contains("index"); index != nullptr && event_count_of(index).value_or(0) != 0)
        continue;  // only the first choice is asked for
      if (auto const* delta = object_at(choice, "delta")) {
        auto const* content = delta->if_contains("content");
        if (content != nullptr && content->is_array()) {  // content parts, as some servers send them
          for (auto const& part : content->get_array())
            if (part.is_object()) out.text += string_of(part.get_object().if_contains("text"));
        } else {
          out.text += string_of(content);
        }
      }
      if (const std::string f = string_of(choice.if_contains("finish_reason")); !f.empty()) out.finish_reason = f;
    }
  if (auto const* usage = object_at(o, "usage")) {
    if (auto n = event_count_of(usage->if_contains("prompt_tokens"))) out.input_tokens = n;
    if (auto n = event_count_of(usage->if_contains("completion_tokens"))) out.output_tokens = n;
  }
}

}  // namespace kernelbrain::llm::http_detail
