// A streamed chat reply, decoded as its bytes arrive: server-sent events (the text/event-stream
// framing: "field: value" lines, an event ends at a blank line, ':' starts a comment, lines end in
// LF, CRLF or CR) carrying a provider's events, which its wire format object reads (providers/:
// OpenAI chat-completion chunks ending in "[DONE]", Anthropic message events ending in
// message_stop). The framing, the events' JSON and the error events are read here.
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
#include "kernelbrain/generate/llm/providers/registry.hpp"

namespace kernelbrain::llm::http_detail {

class stream_decoder {
 public:
  /// The events of `format`'s provider.
  explicit stream_decoder(provider const& format) : provider_(&format) {}
  /// `anthropic`: Anthropic message events; else OpenAI chat-completion chunks.
  explicit stream_decoder(bool anthropic)
      : stream_decoder(provider_for(anthropic ? wire_format::anthropic : wire_format::openai)) {}

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
  [[nodiscard]] bool complete() const noexcept { return parts_.complete; }
  /// The stream reported an error (an error event, an error object, data that is not JSON): error().
  [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
  [[nodiscard]] bool ended() const noexcept { return parts_.complete || failed(); }
  [[nodiscard]] std::string const& error() const noexcept { return error_; }
  [[nodiscard]] std::string const& text() const noexcept { return parts_.text; }
  [[nodiscard]] std::string const& finish_reason() const noexcept { return parts_.finish_reason; }
  [[nodiscard]] std::string const& model() const noexcept { return parts_.model; }
  [[nodiscard]] std::optional<std::uint64_t> input_tokens() const noexcept { return parts_.input_tokens; }
  [[nodiscard]] std::optional<std::uint64_t> output_tokens() const noexcept { return parts_.output_tokens; }
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

  void dispatch() {
    if (provider_->is_end_of_stream(data_)) {
      parts_.complete = true;
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
    provider_->read_event(o, event_, parts_);
  }

  provider const* provider_;
  std::string line_;
  bool last_was_cr_ = false;
  std::string data_;
  bool has_data_ = false;
  std::string event_;
  std::string error_;
  reply_parts parts_;
  std::size_t events_ = 0;
};

}  // namespace kernelbrain::llm::http_detail
