// What the model-client tests share: options for a loopback server (short timeouts and backoff, no
// proxy from the environment, a key), and a request with a system prompt.
#pragma once
#include <cstddef>
#include <kernelbrain/generate/llm/http_client.hpp>
#include <string>
#include "llm_loopback_server.hpp"

namespace kb_test {

/// Options for `server`: connect 5 s, whole replies 10 s, idle 5 s, one retry after 10-20 ms.
inline kernelbrain::llm::http_client_options loopback_options(
    loopback_server const& server, kernelbrain::llm::wire_format f = kernelbrain::llm::wire_format::openai) {
  kernelbrain::llm::http_client_options o;
  o.format = f;
  o.base_url = server.url();
  o.model = "loopback-model";
  o.api_key = "sk-test-key-0123456789";
  o.proxy = "none";
  o.connect_timeout_seconds = 5;
  o.request_timeout_seconds = 10;
  o.idle_timeout_seconds = 5;
  o.max_retries = 1;
  o.backoff_base_seconds = 0.01;
  o.backoff_max_seconds = 0.02;
  return o;
}

/// A request: the system prompt "You write kernels.", `user`, a reply limit of `max_tokens`.
inline kernelbrain::llm::chat_request ask(std::string user, std::size_t max_tokens = 256) {
  kernelbrain::llm::chat_request r;
  r.prompt.system = "You write kernels.";
  r.prompt.user = std::move(user);
  r.max_tokens = max_tokens;
  return r;
}

}  // namespace kb_test
