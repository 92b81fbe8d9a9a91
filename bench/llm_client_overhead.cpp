// The HTTP model client's cost per request, against the loopback server (tests/llm_loopback_server.hpp)
// answering at once: one request at a time (concurrency 1), and complete_all of 16 requests at
// concurrency 16; plain HTTP, and HTTPS where the build has OpenSSL; each streamed (server-sent
// events, the client's default) and whole. `long_reply`: a 16 KiB reply (about 4k tokens; 1,024
// events of 16 bytes when streamed), to show what decoding a stream costs. Every request is a new
// connection (the client does not keep connections alive), and the server's own work (a thread per
// connection, JSON out) is in the figures: the client's overhead is at most what they say. A model
// takes seconds per reply; this is to show that the client is never the bottleneck.
//
// Counters: requests_per_second (wall clock) and seconds_per_request (its inverse).
#include <benchmark/benchmark.h>

#include <kernelbrain/generate/llm/http_client.hpp>
#include <memory>
#include <string>
#include <vector>
#include "../tests/llm_loopback_server.hpp"
#include "../tests/temp_dir.hpp"

namespace llm = kernelbrain::llm;

namespace {

#if defined(KERNELBRAIN_HAVE_OPENSSL)
kb_test::tls_files const& certificate() {
  static const kb_test::tls_files files = kb_test::make_test_certificate(kb_test::process_dir("llm_bench_tls"));
  return files;
}
#endif

std::unique_ptr<kb_test::loopback_server> make_server(bool tls) {
#if defined(KERNELBRAIN_HAVE_OPENSSL)
  if (tls) return std::make_unique<kb_test::loopback_server>(certificate());
#else
  (void)tls;
#endif
  return std::make_unique<kb_test::loopback_server>();
}

std::unique_ptr<llm::model_client> make_client(kb_test::loopback_server const& server, std::size_t concurrency,
                                               bool stream) {
  llm::http_client_options o;
  o.base_url = server.url();
  o.model = "loopback-model";
  o.api_key = "sk-bench";
  o.proxy = "none";
  o.concurrency = concurrency;
  o.max_retries = 0;
  o.connect_timeout_seconds = 10;
  o.request_timeout_seconds = 30;
  o.stream = stream;
#if defined(KERNELBRAIN_HAVE_OPENSSL)
  if (server.tls()) o.ca_file = certificate().cert.string();  // verified, as in use
#endif
  return llm::make_http_client(o);
}

llm::chat_request request() {
  llm::chat_request r;
  r.prompt.system = std::string(2000, 's');  // about the size of a real system prompt
  r.prompt.user = std::string(4000, 'u');
  r.max_tokens = 4096;
  return r;
}

void add_counters(benchmark::State& state, double requests) {
  state.counters["requests_per_second"] = benchmark::Counter(requests, benchmark::Counter::kIsRate);
  state.counters["seconds_per_request"] =
      benchmark::Counter(requests, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void sequential(benchmark::State& state, bool tls, bool stream) {
  auto server = make_server(tls);
  auto client = make_client(*server, 1, stream);
  const auto r = request();
  for (auto _ : state) {
    const auto reply = client->complete(r);
    if (reply.status != llm::call_status::ok) {
      state.SkipWithError(reply.error.c_str());
      break;
    }
    benchmark::DoNotOptimize(reply.text.data());
  }
  add_counters(state, static_cast<double>(state.iterations()));
}

void batch_of_16(benchmark::State& state, bool tls, bool stream) {
  auto server = make_server(tls);
  auto client = make_client(*server, 16, stream);
  const std::vector<llm::chat_request> batch(16, request());
  for (auto _ : state) {
    const auto replies = client->complete_all(batch);
    for (auto const& reply : replies)
      if (reply.status != llm::call_status::ok) state.SkipWithError(reply.error.c_str());
    benchmark::DoNotOptimize(replies.data());
  }
  add_counters(state, static_cast<double>(state.iterations()) * 16);
}

void long_reply(benchmark::State& state, bool stream) {
  auto server = make_server(false);
  const std::string text(std::size_t{16} << 10, 'k');
  server->set_handler([&text](kb_test::received_request const&) { return kb_test::server_action::reply(text); });
  auto client = make_client(*server, 1, stream);
  const auto r = request();
  for (auto _ : state) {
    const auto reply = client->complete(r);
    if (reply.status != llm::call_status::ok || reply.text.size() != text.size()) {
      state.SkipWithError(reply.error.empty() ? "short reply" : reply.error.c_str());
      break;
    }
    benchmark::DoNotOptimize(reply.text.data());
  }
  add_counters(state, static_cast<double>(state.iterations()));
}

}  // namespace

BENCHMARK_CAPTURE(sequential, http_whole, false, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(sequential, http_stream, false, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_of_16, http_whole, false, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_of_16, http_stream, false, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(long_reply, whole, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(long_reply, stream, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
#if defined(KERNELBRAIN_HAVE_OPENSSL)
BENCHMARK_CAPTURE(sequential, https_whole, true, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(sequential, https_stream, true, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_of_16, https_whole, true, false)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(batch_of_16, https_stream, true, true)->UseRealTime()->Unit(benchmark::kMicrosecond);
#endif

BENCHMARK_MAIN();
