// A streamed chat reply, decoded as its bytes arrive: server-sent events (the text/event-stream
// framing: "field: value" lines, an event ends at a blank line, ':' starts a comment, lines end in
// LF, CRLF or CR) carrying OpenAI chat-completion chunks (choices[0].delta.content, a finish_reason
// on the last, usage in a final chunk when stream_options.include_usage was asked for, "[DONE]") or
// Anthropic message events (message_start, content_block_delta text_delta, message_delta with the
// stop reason and output tokens, message_stop, ping, error).
//
// Used by the HTTP client (impl/http_client.ipp) only; it needs Boost.JSON. Not an API.
#pragma once
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kernelbrain::llm::http_detail {

class stream_decoder {
 public:
  /// `anthropic`: Anthropic message events; else OpenAI chat-completion chunks.
  explicit stream_decoder(bool anthropic) : anthropic_(anthropic) {}

  /// Decodes `bytes`, the next part of the body (any split: a line or a UTF-8 sequence may straddle
  /// two calls). Once the stream has ended ([DONE], message_stop) or reported an error, the rest is
  /// ignored.
  void feed(std::string_view bytes) {
    for (char c : bytes) {
      if (ended()) return;
      if (c == '\n' && last_was_cr_) {  // the LF of a CRLF: the line ended at the CR
        last_was_cr_ = false;
        continue;
      }
      last_was_cr_ = c == '\r';
      if (c == '\n' || c == '\r') {
        line(line_);
        line_.clear();
      } else if (line_.size() < max_line_bytes) {
        line_ += c;
      } else {
        fail("an event line over " + std::to_string(max_line_bytes) + " bytes");
      }
    }
  }

  /// The stream said it is complete ("[DONE]" or message_stop).
  [[nodiscard]] bool complete() const noexcept { return complete_; }
  /// The stream reported an error (an error event, an error object, data that is not JSON): error().
  [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
  [[nodiscard]] bool ended() const noexcept { return complete_ || failed(); }
  [[nodiscard]] std::string const& error() const noexcept { return error_; }
  [[nodiscard]] std::string const& text() const noexcept { return text_; }
  [[nodiscard]] std::string const& finish_reason() const noexcept { return finish_; }
  [[nodiscard]] std::string const& model() const noexcept { return model_; }
  [[nodiscard]] std::optional<std::uint64_t> input_tokens() const noexcept { return input_; }
  [[nodiscard]] std::optional<std::uint64_t> output_tokens() const noexcept { return output_; }
  /// Events with data dispatched so far (pings and comments not counted).
  [[nodiscard]] std::size_t events() const noexcept { return events_; }

  static constexpr std::size_t max_line_bytes = std::size_t{4} << 20;

 private:
  void fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

  void line(std::string_view l) {
    if (l.empty()) {  // dispatch
      if (has_data_) dispatch();
      data_.clear();
      event_.clear();
      has_data_ = false;
      return;
    }
    if (l.front() == ':') return;  // a comment (keep-alive)
    const auto colon = l.find(':');
    const std::string_view field = l.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view{} : l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data_) data_ += '\n';
      data_ += value;
      has_data_ = true;
    } else if (field == "event") {
      event_ = value;
    }  // id, retry and unknown fields mean nothing here
  }

  static std::string string_of(boost::json::value const* v) {
    if (v == nullptr || !v->is_string()) return {};
    return {v->get_string().data(), v->get_string().size()};
  }
  static std::optional<std::uint64_t> count_of(boost::json::value const* v) {
    if (v == nullptr) return std::nullopt;
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
    return std::nullopt;
  }
  static boost::json::object const* object_at(boost::json::object const& o, std::string_view key) {
    auto const* v = o.if_contains(boost::json::string_view(key.data(), key.size()));
    return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
  }

  void dispatch() {
    if (!anthropic_ && data_ == "[DONE]") {
      complete_ = true;
      return;
    }
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(data_, ec);
    if (ec || !v.is_object()) {
      fail("an event whose data is not a JSON object: " + data_.substr(0, 200));
      return;
    }
    auto const& o = v.get_object();
    if (auto const* e = o.if_contains("error"); e != nullptr && !e->is_null()) {
      std::string what = e->is_object() ? string_of(e->get_object().if_contains("message")) : string_of(e);
      const std::string type = e->is_object() ? string_of(e->get_object().if_contains("type")) : std::string{};
      if (what.empty()) what = boost::json::serialize(*e).substr(0, 300);
      fail("the stream reported an error" + (type.empty() ? std::string{} : " (" + type + ")") + ": " + what);
      return;
    }
    ++events_;
    if (anthropic_)
      anthropic_event(o);
    else
      openai_chunk(o);
  }

  void openai_chunk(boost::json::object const& o) {
    if (const std::string m = string_of(o.if_contains("model")); !m.empty()) model_ = m;
    if (auto const* choices = o.if_contains("choices"); choices != nullptr && choices->is_array())
      for (auto const& c : choices->get_array()) {
        if (!c.is_object()) continue;
        auto const& choice = c.get_object();
        if (auto const* index = choice.if_contains("index"); index != nullptr && count_of(index).value_or(0) != 0)
          continue;  // only the first choice is asked for
        if (auto const* delta = object_at(choice, "delta")) {
          auto const* content = delta->if_contains("content");
          if (content != nullptr && content->is_array()) {  // content parts, as some servers send them
            for (auto const& part : content->get_array())
              if (part.is_object()) text_ += string_of(part.get_object().if_contains("text"));
          } else {
            text_ += string_of(content);
          }
        }
        if (const std::string f = string_of(choice.if_contains("finish_reason")); !f.empty()) finish_ = f;
      }
    if (auto const* usage = object_at(o, "usage")) {
      if (auto n = count_of(usage->if_contains("prompt_tokens"))) input_ = n;
      if (auto n = count_of(usage->if_contains("completion_tokens"))) output_ = n;
    }
  }

  void anthropic_event(boost::json::object const& o) {
    std::string type = string_of(o.if_contains("type"));
    if (type.empty()) type = event_;
    if (type == "message_start") {
      if (auto const* message = object_at(o, "message")) {
        model_ = string_of(message->if_contains("model"));
        if (auto const* usage = object_at(*message, "usage")) {
          if (auto n = count_of(usage->if_contains("input_tokens"))) input_ = n;
          if (auto n = count_of(usage->if_contains("output_tokens"))) output_ = n;
        }
      }
    } else if (type == "content_block_start") {
      if (auto const* block = object_at(o, "content_block"); block && string_of(block->if_contains("type")) == "text")
        text_ += string_of(block->if_contains("text"));
    } else if (type == "content_block_delta") {
      if (auto const* delta = object_at(o, "delta"); delta && string_of(delta->if_contains("type")) == "text_delta")
        text_ += string_of(delta->if_contains("text"));
    } else if (type == "message_delta") {
      if (auto const* delta = object_at(o, "delta"))
        if (const std::string s = string_of(delta->if_contains("stop_reason")); !s.empty()) finish_ = s;
      if (auto const* usage = object_at(o, "usage")) {
        if (auto n = count_of(usage->if_contains("input_tokens"))) input_ = n;
        if (auto n = count_of(usage->if_contains("output_tokens"))) output_ = n;
      }
    } else if (type == "message_stop") {
      complete_ = true;
    }  // ping, content_block_stop and event types added later carry nothing the client uses
  }

  bool anthropic_;
  std::string line_;
  bool last_was_cr_ = false;
  std::string data_;
  bool has_data_ = false;
  std::string event_;
  bool complete_ = false;
  std::string error_;
  std::string text_;
  std::string finish_;
  std::string model_;
  std::optional<std::uint64_t> input_;
  std::optional<std::uint64_t> output_;
  std::size_t events_ = 0;
};

}  // namespace kernelbrain::llm::http_detail
