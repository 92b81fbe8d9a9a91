// A scripted HTTP/1.1 server on 127.0.0.1 (an ephemeral port) for tests and benchmarks of model
// clients: each request is answered by a queue of scripted actions, else by a handler, else by an
// echo in the request's wire format. Actions: OpenAI or Anthropic replies (text, finish reason,
// usage or none), any status with Retry-After and body, a delay, a reset, malformed JSON, a truncated
// body, a huge body, an endless drip. Every request is recorded, with the most requests handled at
// once. With TLS files it speaks https; with tunnels on it is also an http proxy that answers
// CONNECT by relaying to the named host (absolute-form requests it answers itself, as a proxy that
// happens to be the server). make_test_certificate() writes a self-signed certificate for localhost
// and 127.0.0.1 (OpenSSL builds).
//
// One thread accepts; each connection has its own thread and blocking sockets. The destructor stops
// everything (sockets are shut down, sleeps end early) and joins.
#pragma once
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>
#if defined(KERNELBRAIN_HAVE_OPENSSL)
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#endif

namespace kb_test {

namespace loopback_detail {
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

inline std::string string_of(json::value const* v) {
  if (v == nullptr || !v->is_string()) return {};
  return std::string(v->get_string().data(), v->get_string().size());
}

/// A message's content: a string, or the concatenated text of content parts.
inline std::string content_text(json::value const* v) {
  if (v == nullptr) return {};
  if (v->is_string()) return string_of(v);
  std::string out;
  if (v->is_array())
    for (auto const& p : v->get_array())
      if (p.is_object()) out += string_of(p.get_object().if_contains("text"));
  return out;
}
}  // namespace loopback_detail

/// A request as the server received it.
struct received_request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  ///< names lower-cased, in order
  std::string body;
  std::size_t index = 0;  ///< 0 for the first request the server received

  /// The first header of that name (any case), "" if none.
  [[nodiscard]] std::string header(std::string_view name) const {
    const std::string l = loopback_detail::lower(name);
    for (auto const& [k, v] : headers)
      if (k == l) return v;
    return {};
  }
  [[nodiscard]] bool has_header(std::string_view name) const {
    const std::string l = loopback_detail::lower(name);
    return std::any_of(headers.begin(), headers.end(), [&](auto const& h) { return h.first == l; });
  }
  /// An Anthropic messages request (the path ends in /messages); else OpenAI chat completions.
  [[nodiscard]] bool is_anthropic() const { return target.ends_with("/messages"); }
  /// The body as JSON (null if it is not JSON).
  [[nodiscard]] boost::json::value json() const {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    return ec ? boost::json::value(nullptr) : v;
  }
  [[nodiscard]] std::string model() const {
    const auto v = json();
    return v.is_object() ? loopback_detail::string_of(v.get_object().if_contains("model")) : std::string{};
  }
  /// OpenAI: the system message's content; Anthropic: "system".
  [[nodiscard]] std::string system_text() const {
    const auto v = json();
    if (!v.is_object()) return {};
    auto const& o = v.get_object();
    if (auto const* s = o.if_contains("system")) return loopback_detail::content_text(s);
    if (auto const* m = o.if_contains("messages"); m != nullptr && m->is_array())
      for (auto const& msg : m->get_array())
        if (msg.is_object() && loopback_detail::string_of(msg.get_object().if_contains("role")) == "system")
          return loopback_detail::content_text(msg.get_object().if_contains("content"));
    return {};
  }
  /// The last user message's content, in either format.
  [[nodiscard]] std::string user_text() const {
    const auto v = json();
    if (!v.is_object()) return {};
    std::string out;
    if (auto const* m = v.get_object().if_contains("messages"); m != nullptr && m->is_array())
      for (auto const& msg : m->get_array())
        if (msg.is_object() && loopback_detail::string_of(msg.get_object().if_contains("role")) == "user")
          out = loopback_detail::content_text(msg.get_object().if_contains("content"));
    return out;
  }
  /// System and user text, joined by a newline when both are there.
  [[nodiscard]] std::string prompt_text() const {
    const auto s = system_text();
    const auto u = user_text();
    return s.empty() ? u : u.empty() ? s : s + "\n" + u;
  }
  /// Whether the body asks for a streamed reply ("stream": true).
  [[nodiscard]] bool wants_stream() const {
    const auto v = json();
    if (!v.is_object()) return false;
    auto const* st = v.get_object().if_contains("stream");
    return st != nullptr && st->is_bool() && st->get_bool();
  }
  /// Whether an OpenAI-format body asks for usage in the stream (stream_options.include_usage).
  [[nodiscard]] bool wants_stream_usage() const {
    const auto v = json();
    if (!v.is_object()) return false;
    auto const* so = v.get_object().if_contains("stream_options");
    if (so == nullptr || !so->is_object()) return false;
    auto const* u = so->get_object().if_contains("include_usage");
    return u != nullptr && u->is_bool() && u->get_bool();
  }
  /// A number field of the body ("max_tokens", "temperature"); nullopt if absent.
  [[nodiscard]] std::optional<double> number(std::string_view key) const {
    const auto v = json();
    if (!v.is_object()) return std::nullopt;
    auto const* n = v.get_object().if_contains(boost::json::string_view(key.data(), key.size()));
    if (n == nullptr || !n->is_number()) return std::nullopt;
    return n->to_number<double>();
  }
};

struct usage_counts {
  std::uint64_t input = 10;
  std::uint64_t output = 5;
};

/// What the server does with one request.
struct server_action {
  enum class kind {
    reply,         ///< a reply in the request's wire format
    openai,        ///< an OpenAI chat completion
    anthropic,     ///< an Anthropic message
    status,        ///< `code` with `body` and, if set, Retry-After
    reset,         ///< close the connection at once with a TCP reset, no reply
    malformed,     ///< 200 with a body that is not JSON
    truncated,     ///< 200 with a Content-Length larger than what is sent, then close
    huge,          ///< 200 with a body of `bytes` bytes (chunked if `chunked`)
    drip,          ///< 200, then one byte of body every `interval`, forever (chunked)
    raw,           ///< `body` written as it is, then close
    events,        ///< 200 text/event-stream (chunked) with `body` as the events, ended properly
    stream_cut,    ///< a streamed reply's first half of events, then close mid-stream
    stream_stall,  ///< a streamed reply's first half of events, then silence until the server stops
  };
  kind what = kind::reply;
  std::string text = "ok";
  std::string finish_reason;  ///< "" = "stop" (OpenAI) or "end_turn" (Anthropic)
  std::optional<usage_counts> usage = usage_counts{};
  std::string model = "loopback-model";
  unsigned code = 200;
  std::string retry_after;
  std::string body;
  std::size_t bytes = 0;
  bool chunked = false;
  std::chrono::milliseconds delay{0};
  std::chrono::milliseconds interval{100};
  /// Streamed replies: the pause between two events (0: all at once).
  std::chrono::milliseconds event_interval{0};

  static server_action reply(std::string text) {
    server_action a;
    a.text = std::move(text);
    return a;
  }
  static server_action openai(std::string text, std::string finish = "stop",
                              std::optional<usage_counts> usage = usage_counts{}) {
    server_action a;
    a.what = kind::openai;
    a.text = std::move(text);
    a.finish_reason = std::move(finish);
    a.usage = usage;
    return a;
  }
  static server_action anthropic(std::string text, std::string stop = "end_turn",
                                 std::optional<usage_counts> usage = usage_counts{}) {
    server_action a;
    a.what = kind::anthropic;
    a.text = std::move(text);
    a.finish_reason = std::move(stop);
    a.usage = usage;
    return a;
  }
  /// `code` with `body` (default: an OpenAI-style JSON error) and an optional Retry-After.
  static server_action status(unsigned code, std::string body = {}, std::string retry_after = {}) {
    server_action a;
    a.what = kind::status;
    a.code = code;
    a.body =
        body.empty() ? R"({"error":{"message":"loopback status )" + std::to_string(code) + R"("}})" : std::move(body);
    a.retry_after = std::move(retry_after);
    return a;
  }
  static server_action reset() { return of(kind::reset); }
  static server_action malformed() { return of(kind::malformed); }
  static server_action truncated() { return of(kind::truncated); }
  static server_action huge(std::size_t bytes, bool chunked = false) {
    server_action a = of(kind::huge);
    a.bytes = bytes;
    a.chunked = chunked;
    return a;
  }
  static server_action drip(std::chrono::milliseconds interval = std::chrono::milliseconds(100)) {
    server_action a = of(kind::drip);
    a.interval = interval;
    return a;
  }
  /// `sse` (events as they go on the wire) as a text/event-stream body.
  static server_action events(std::string sse) {
    server_action a = of(kind::events);
    a.body = std::move(sse);
    return a;
  }
  /// A reply of `text` streamed in the request's format, cut (connection closed) or stalled halfway.
  static server_action stream_cut(std::string text) {
    server_action a = of(kind::stream_cut);
    a.text = std::move(text);
    return a;
  }
  static server_action stream_stall(std::string text) {
    server_action a = of(kind::stream_stall);
    a.text = std::move(text);
    return a;
  }
  /// The same action, its events (when streamed) `d` apart.
  [[nodiscard]] server_action paced(std::chrono::milliseconds d) const {
    server_action a = *this;
    a.event_interval = d;
    return a;
  }
  static server_action raw(std::string bytes) {
    server_action a = of(kind::raw);
    a.body = std::move(bytes);
    return a;
  }
  /// The same action, after a delay.
  [[nodiscard]] server_action after(std::chrono::milliseconds d) const {
    server_action a = *this;
    a.delay = d;
    return a;
  }
  [[nodiscard]] server_action without_usage() const {
    server_action a = *this;
    a.usage.reset();
    return a;
  }

 private:
  static server_action of(kind k) {
    server_action a;
    a.what = k;
    return a;
  }
};

/// The body of an OpenAI chat completion or an Anthropic message.
inline std::string reply_body(bool anthropic, std::string_view text, std::string_view finish,
                              std::optional<usage_counts> usage, std::string_view model) {
  namespace json = boost::json;
  const auto s = [](std::string_view v) { return json::value(json::string_view(v.data(), v.size())); };
  json::object o;
  o["model"] = s(model);
  if (anthropic) {
    o["id"] = "msg_loopback";
    o["type"] = "message";
    o["role"] = "assistant";
    json::object part;
    part["type"] = "text";
    part["text"] = s(text);
    o["content"] = json::array{part};
    o["stop_reason"] = s(finish.empty() ? "end_turn" : finish);
    if (usage) o["usage"] = json::object{{"input_tokens", usage->input}, {"output_tokens", usage->output}};
  } else {
    o["id"] = "chatcmpl-loopback";
    o["object"] = "chat.completion";
    json::object message;
    message["role"] = "assistant";
    message["content"] = s(text);
    json::object choice;
    choice["index"] = 0;
    choice["message"] = std::move(message);
    choice["finish_reason"] = s(finish.empty() ? "stop" : finish);
    o["choices"] = json::array{choice};
    if (usage)
      o["usage"] = json::object{{"prompt_tokens", usage->input},
                                {"completion_tokens", usage->output},
                                {"total_tokens", usage->input + usage->output}};
  }
  return json::serialize(o);
}

/// A reply streamed as the provider streams it, as a list of server-sent events (each ending in a
/// blank line): OpenAI chat-completion chunks (a role chunk, the text in pieces of 16 bytes, a chunk
/// with the finish reason, a usage chunk when `include_usage`, "[DONE]"), or Anthropic message
/// events (message_start, content_block_start, ping, text deltas, content_block_stop,
/// message_delta with the stop reason and output tokens, message_stop).
inline std::vector<std::string> stream_events(bool anthropic, std::string_view text, std::string_view finish,
                                              std::optional<usage_counts> usage, std::string_view model,
                                              bool include_usage) {
  namespace json = boost::json;
  const auto s = [](std::string_view v) { return json::value(json::string_view(v.data(), v.size())); };
  std::vector<std::string> pieces;
  for (std::size_t at = 0; at < text.size(); at += 16) pieces.emplace_back(text.substr(at, 16));
  std::vector<std::string> out;
  const auto event = [&](std::string_view name, json::object const& o) {
    out.push_back((name.empty() ? std::string{} : "event: " + std::string(name) + "\n") +
                  "data: " + json::serialize(o) + "\n\n");
  };
  if (anthropic) {
    json::object message{{"id", "msg_loopback"}, {"type", "message"},        {"role", "assistant"},
                         {"model", s(model)},    {"content", json::array{}}, {"stop_reason", nullptr}};
    if (usage) message["usage"] = json::object{{"input_tokens", usage->input}, {"output_tokens", 1}};
    event("message_start", {{"type", "message_start"}, {"message", message}});
    event("content_block_start",
          {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}});
    event("ping", {{"type", "ping"}});
    for (auto const& p : pieces)
      event("content_block_delta",
            {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", s(p)}}}});
    event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}});
    json::object delta{
        {"type", "message_delta"},
        {"delta", {{"stop_reason", s(finish.empty() ? "end_turn" : finish)}, {"stop_sequence", nullptr}}}};
    if (usage) delta["usage"] = json::object{{"output_tokens", usage->output}};
    event("message_delta", delta);
    event("message_stop", {{"type", "message_stop"}});
    return out;
  }
  const auto chunk = [&](json::object delta, json::value finish_reason) {
    json::object choice{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish_reason)}};
    return json::object{{"id", "chatcmpl-loopback"},
                        {"object", "chat.completion.chunk"},
                        {"created", 1},
                        {"model", s(model)},
                        {"choices", json::array{choice}}};
  };
  event("", chunk({{"role", "assistant"}, {"content", ""}}, nullptr));
  for (auto const& p : pieces) event("", chunk({{"content", s(p)}}, nullptr));
  event("", chunk({}, s(finish.empty() ? "stop" : finish)));
  if (usage && include_usage)
    event("", {{"id", "chatcmpl-loopback"},
               {"object", "chat.completion.chunk"},
               {"created", 1},
               {"model", s(model)},
               {"choices", json::array{}},
               {"usage",
                {{"prompt_tokens", usage->input},
                 {"completion_tokens", usage->output},
                 {"total_tokens", usage->input + usage->output}}}});
  out.emplace_back("data: [DONE]\n\n");
  return out;
}

struct tls_files {
  std::filesystem::path cert;
  std::filesystem::path key;
};

class loopback_server {
 public:
  using handler = std::function<server_action(received_request const&)>;

  explicit loopback_server(handler h = {}, std::optional<tls_files> tls = std::nullopt) : handler_(std::move(h)) {
    using namespace loopback_detail;
#if defined(KERNELBRAIN_HAVE_OPENSSL)
    if (tls) {
      tls_ = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
      tls_->use_certificate_chain_file(tls->cert.string());
      tls_->use_private_key_file(tls->key.string(), net::ssl::context::pem);
    }
#else
    if (tls) throw std::runtime_error("loopback_server: TLS needs a build with OpenSSL");
#endif
    acceptor_.open(tcp::v4());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(tcp::endpoint(net::ip::make_address_v4("127.0.0.1"), 0));
    acceptor_.listen(512);
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  explicit loopback_server(tls_files tls) : loopback_server(handler{}, std::move(tls)) {}

  ~loopback_server() {
    stopping_ = true;
    accept_thread_.join();
    std::map<std::uint64_t, std::thread> threads;
    {
      const std::lock_guard lock(mu_);
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
      threads = std::move(threads_);
    }
    for (auto& [id, t] : threads) t.join();
  }
  loopback_server(loopback_server const&) = delete;
  loopback_server& operator=(loopback_server const&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] bool tls() const {
#if defined(KERNELBRAIN_HAVE_OPENSSL)
    return tls_ != nullptr;
#else
    return false;
#endif
  }
  /// scheme://127.0.0.1:port followed by `path` ("/v1" by default).
  [[nodiscard]] std::string url(std::string_view path = "/v1") const {
    return std::string(tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }

  /// Actions for the next requests, in arrival order, before the handler.
  void script(std::vector<server_action> actions) {
    const std::lock_guard lock(mu_);
    for (auto& a : actions) script_.push_back(std::move(a));
  }
  void push(server_action a) {
    const std::lock_guard lock(mu_);
    script_.push_back(std::move(a));
  }
  void set_handler(handler h) {
    const std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  /// Whether replies are streamed when a request asks for it (the default), or sent whole as a
  /// server that ignores "stream" does.
  void set_streaming(bool on) { streaming_ = on; }
  /// Answer CONNECT host:port by relaying bytes to it (an http proxy for https targets).
  void enable_tunnels() { tunnels_ = true; }

  [[nodiscard]] std::vector<received_request> requests() const {
    const std::lock_guard lock(mu_);
    return requests_;
  }
  [[nodiscard]] std::size_t request_count() const {
    const std::lock_guard lock(mu_);
    return requests_.size();
  }
  /// The most requests the server held at once (read, and not yet answered).
  [[nodiscard]] std::size_t max_concurrent() const {
    const std::lock_guard lock(mu_);
    return max_in_flight_;
  }
  [[nodiscard]] std::size_t connection_count() const { return connections_; }
  [[nodiscard]] std::size_t tunnel_count() const { return tunnels_opened_; }

 private:
  using tcp = loopback_detail::tcp;
  using error_code = loopback_detail::error_code;

  void accept_loop() {
    while (!stopping_) {
      reap();
      pollfd p{acceptor_.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      error_code ec;
      tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec) continue;
      ++connections_;
      const std::lock_guard lock(mu_);
      open_fds_.insert(s.native_handle());
      const std::uint64_t id = next_thread_++;
      threads_.emplace(id, std::thread([this, id, sock = std::move(s)]() mutable {
                         serve(std::move(sock));
                         const std::lock_guard l(mu_);
                         finished_.push_back(id);
                       }));
    }
  }

  /// Joins the connection threads that have finished (a benchmark makes thousands).
  void reap() {
    std::vector<std::thread> done;
    {
      const std::lock_guard lock(mu_);
      for (auto id : finished_) {
        auto it = threads_.find(id);
        done.push_back(std::move(it->second));
        threads_.erase(it);
      }
      finished_.clear();
    }
    for (auto& t : done) t.join();
  }

  /// Sleeps `d` unless the server stops first; false if it did.
  bool nap(std::chrono::milliseconds d) const {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!stopping_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(5), until - std::chrono::steady_clock::now()));
    return !stopping_;
  }

  void forget(int fd) {
    const std::lock_guard lock(mu_);
    open_fds_.erase(fd);
  }

  void serve(tcp::socket sock) {
    const int fd = sock.native_handle();
    error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
#if defined(KERNELBRAIN_HAVE_OPENSSL)
    if (tls_) {
      loopback_detail::net::ssl::stream<tcp::socket&> s(sock, *tls_);
      s.handshake(loopback_detail::net::ssl::stream_base::server, ec);
      if (!ec) serve_stream(s, sock);
      forget(fd);
      sock.close(ec);
      return;
    }
#endif
    serve_stream(sock, sock);
    forget(fd);
    sock.close(ec);
  }

  template <class Stream>
  void serve_stream(Stream& s, tcp::socket& sock) {
    namespace bhttp = loopback_detail::bhttp;
    namespace net = loopback_detail::net;
    error_code ec;
    boost::beast::flat_buffer buffer;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(std::uint64_t{256} << 20);
    bhttp::read(s, buffer, parser, ec);
    if (ec) return;
    auto const& req = parser.get();
    received_request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (auto const& f : req) r.headers.emplace_back(loopback_detail::lower(f.name_string()), std::string(f.value()));
    r.body = req.body();
    if (r.method == "CONNECT" && tunnels_) {
      {
        const std::lock_guard lock(mu_);
        r.index = requests_.size();
        requests_.push_back(r);
      }
      tunnel(sock, r.target, buffer);
      return;
    }
    handler h;
    std::optional<server_action> scripted;
    {
      const std::lock_guard lock(mu_);
      r.index = requests_.size();
      requests_.push_back(r);
      max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
      if (!script_.empty()) {
        scripted = std::move(script_.front());
        script_.pop_front();
      }
      h = handler_;
    }
    server_action a = scripted ? std::move(*scripted) : h ? h(r) : server_action::reply("ok");
    const bool awake = nap(a.delay);
    {
      const std::lock_guard lock(mu_);
      --in_flight_;
    }
    if (!awake) return;
    perform(s, sock, a, r);
  }

  static std::string head(unsigned code, std::string_view extra) {
    return "HTTP/1.1 " + std::to_string(code) + (code == 200 ? " OK" : " Status") +
           "\r\nContent-Type: application/json\r\nConnection: close\r\n" + std::string(extra);
  }

  template <class Stream>
  void perform(Stream& s, tcp::socket& sock, server_action const& a, received_request const& r) {
    namespace net = loopback_detail::net;
    using kind = server_action::kind;
    error_code ec;
    const auto send = [&](std::string const& bytes) {
      net::write(s, net::buffer(bytes), ec);
      return !ec;
    };
    switch (a.what) {
      case kind::reply:
      case kind::openai:
      case kind::anthropic: {
        const bool anthropic = a.what == kind::anthropic || (a.what == kind::reply && r.is_anthropic());
        if (streaming_ && r.wants_stream()) {
          send_events(s, a, stream_events(anthropic, a.text, a.finish_reason, a.usage, a.model, r.wants_stream_usage()),
                      events_end::whole);
          return;
        }
        const std::string body = reply_body(anthropic, a.text, a.finish_reason, a.usage, a.model);
        send(head(200, "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n") + body);
        return;
      }
      case kind::status: {
        std::string extra = "Content-Length: " + std::to_string(a.body.size()) + "\r\n";
        if (!a.retry_after.empty()) extra += "Retry-After: " + a.retry_after + "\r\n";
        send(head(a.code, extra + "\r\n") + a.body);
        return;
      }
      case kind::reset:  // the caller closes: with linger 0, that sends a reset
        sock.set_option(net::socket_base::linger(true, 0), ec);
        return;
      case kind::malformed: {
        const std::string body = R"({"choices": [{"message": {"content": "half)";
        send(head(200, "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n") + body);
        return;
      }
      case kind::truncated: {
        const std::string body = reply_body(r.is_anthropic(), a.text, a.finish_reason, a.usage, a.model);
        send(head(200, "Content-Length: " + std::to_string(body.size() + 100) + "\r\n\r\n") +
             body.substr(0, body.size() / 2));
        return;
      }
      case kind::huge: {
        const std::string chunk(std::size_t{64} << 10, 'x');
        if (a.chunked) {
          if (!send(head(200, "Transfer-Encoding: chunked\r\n\r\n"))) return;
          const std::string framed = "10000\r\n" + chunk + "\r\n";
          for (std::size_t sent = 0; sent < a.bytes && !stopping_; sent += chunk.size())
            if (!send(framed)) return;
          send("0\r\n\r\n");
        } else {
          if (!send(head(200, "Content-Length: " + std::to_string(a.bytes) + "\r\n\r\n"))) return;
          for (std::size_t sent = 0; sent < a.bytes && !stopping_; sent += chunk.size())
            if (!send(chunk.substr(0, std::min(chunk.size(), a.bytes - sent)))) return;
        }
        return;
      }
      case kind::drip:
        if (!send(head(200, "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"))) return;
        while (nap(a.interval))
          if (!send("1\r\n \r\n")) return;
        return;
      case kind::raw:
        send(a.body);
        return;
      case kind::events:
        send_events(s, a, {a.body}, events_end::whole);
        return;
      case kind::stream_cut:
      case kind::stream_stall: {
        auto events =
            stream_events(r.is_anthropic(), a.text, a.finish_reason, a.usage, a.model, r.wants_stream_usage());
        events.resize(events.size() / 2);
        send_events(s, a, events, a.what == kind::stream_cut ? events_end::cut : events_end::stall);
        return;
      }
    }
  }

  enum class events_end { whole, cut, stall };

  /// 200 text/event-stream, chunked, one chunk per event (`a.event_interval` apart), then the
  /// chunked terminator (whole), nothing (cut: the caller closes), or silence until the server stops.
  template <class Stream>
  void send_events(Stream& s, server_action const& a, std::vector<std::string> const& events, events_end end) {
    namespace net = loopback_detail::net;
    error_code ec;
    const auto send = [&](std::string const& bytes) {
      net::write(s, net::buffer(bytes), ec);
      return !ec;
    };
    if (!send("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
              "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n"))
      return;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (i > 0 && a.event_interval.count() > 0 && !nap(a.event_interval)) return;
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", events[i].size());
      if (!send(size + events[i] + "\r\n")) return;
    }
    if (end == events_end::whole) send("0\r\n\r\n");
    if (end == events_end::stall)
      while (nap(std::chrono::milliseconds(50))) {
      }
  }

  void tunnel(tcp::socket& client, std::string const& target, boost::beast::flat_buffer& buffer) {
    namespace net = loopback_detail::net;
    error_code ec;
    const auto colon = target.rfind(':');
    tcp::socket upstream(io_);
    tcp::resolver resolver(io_);
    auto endpoints = resolver.resolve(target.substr(0, colon), target.substr(colon + 1), ec);
    if (!ec) net::connect(upstream, endpoints, ec);
    if (ec) {
      net::write(client, net::buffer(std::string("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")), ec);
      return;
    }
    ++tunnels_opened_;
    const int ufd = upstream.native_handle();
    {
      const std::lock_guard lock(mu_);
      open_fds_.insert(ufd);
    }
    net::write(client, net::buffer(std::string("HTTP/1.1 200 Connection established\r\n\r\n")), ec);
    if (!ec && buffer.size() > 0) net::write(upstream, buffer.data(), ec);
    const auto pump = [](tcp::socket& from, tcp::socket& to) {
      std::array<char, 16384> b{};
      error_code e;
      for (;;) {
        const std::size_t n = from.read_some(net::buffer(b), e);
        if (e) break;
        net::write(to, net::buffer(b.data(), n), e);
        if (e) break;
      }
      to.shutdown(tcp::socket::shutdown_send, e);
    };
    if (!ec) {
      std::thread back([&] { pump(upstream, client); });
      pump(client, upstream);
      back.join();
    }
    forget(ufd);
    upstream.close(ec);
  }

  loopback_detail::net::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::uint16_t port_ = 0;
#if defined(KERNELBRAIN_HAVE_OPENSSL)
  std::unique_ptr<loopback_detail::net::ssl::context> tls_;
#endif
  std::atomic<bool> stopping_{false};
  std::atomic<bool> tunnels_{false};
  std::atomic<bool> streaming_{true};
  std::atomic<std::size_t> connections_{0};
  std::atomic<std::size_t> tunnels_opened_{0};
  mutable std::mutex mu_;
  handler handler_;
  std::deque<server_action> script_;
  std::vector<received_request> requests_;
  std::size_t in_flight_ = 0;
  std::size_t max_in_flight_ = 0;
  std::set<int> open_fds_;
  std::map<std::uint64_t, std::thread> threads_;
  std::vector<std::uint64_t> finished_;
  std::uint64_t next_thread_ = 0;
  std::thread accept_thread_;
};

#if defined(KERNELBRAIN_HAVE_OPENSSL)
/// Writes a self-signed certificate (EC P-256, SHA-256, valid from an hour ago for 30 days) and its
/// key as PEM files cert.pem and key.pem in `dir`. `subject_alt_names` in OpenSSL's syntax; the
/// default names localhost and 127.0.0.1.
inline tls_files make_test_certificate(std::filesystem::path const& dir,
                                       std::string const& subject_alt_names = "DNS:localhost,IP:127.0.0.1") {
  const auto fail = [](char const* what) { throw std::runtime_error(std::string("make_test_certificate: ") + what); };
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> kctx(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr),
                                                                   &EVP_PKEY_CTX_free);
  EVP_PKEY* raw_key = nullptr;
  if (!kctx || EVP_PKEY_keygen_init(kctx.get()) != 1 ||
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kctx.get(), NID_X9_62_prime256v1) != 1 ||
      EVP_PKEY_keygen(kctx.get(), &raw_key) != 1)
    fail("generating a P-256 key");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(raw_key, &EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), &X509_free);
  if (!cert) fail("X509_new");
  X509_set_version(cert.get(), 2);
  static std::atomic<long> serial{1};
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()),
                   serial++ + static_cast<long>(std::chrono::system_clock::now().time_since_epoch().count() % 1000000));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  static constexpr unsigned char cn[] = "localhost";
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (auto const& [nid, value] :
       {std::pair<int, std::string>{NID_subject_alt_name, subject_alt_names},
        std::pair<int, std::string>{NID_basic_constraints, "critical,CA:TRUE"},
        std::pair<int, std::string>{NID_key_usage, "critical,digitalSignature,keyCertSign"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    if (ext == nullptr) fail("X509V3_EXT_conf_nid");
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) fail("X509_sign");
  std::filesystem::create_directories(dir);
  tls_files files{dir / "cert.pem", dir / "key.pem"};
  const auto write = [&](std::filesystem::path const& p, auto&& what) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(p.string().c_str(), "w"), &BIO_free);
    if (!bio || what(bio.get()) != 1) fail("writing a PEM file");
  };
  write(files.cert, [&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); });
  write(files.key,
        [&](BIO* b) { return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0, nullptr, nullptr); });
  return files;
}
#endif

}  // namespace kb_test
