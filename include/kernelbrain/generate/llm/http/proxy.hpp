// Which proxy the HTTP client uses for a target: the options' own, or the environment's (http_proxy,
// https_proxy) unless NO_PROXY names the host (names, domains, addresses and CIDR blocks) or the host
// is this machine. Tests reach it through http_client.hpp; not an API.
#pragma once
#include <string>
#include <string_view>
#include "kernelbrain/config.hpp"
#include "kernelbrain/generate/llm/http/url.hpp"

namespace kernelbrain::llm::http_detail {

/// Whether the IP address `host` is in the CIDR block `entry` (10.0.0.0/8, fd00::/8); false when
/// either does not parse.
[[nodiscard]] KERNELBRAIN_DECL bool in_cidr(std::string const& entry, std::string const& host);

/// Whether `host` is excluded from proxying by a NO_PROXY list: entries separated by commas or
/// spaces; "*" matches every host; "example.com" and ".example.com" match the host and its
/// subdomains; an IP address matches itself; a CIDR block (10.0.0.0/8, fd00::/8) its addresses; a
/// ":port" on an entry is ignored. Case-insensitive.
[[nodiscard]] KERNELBRAIN_DECL bool no_proxy_matches(std::string_view no_proxy, std::string_view host);

using env_lookup = char const* (*)(char const*);

/// The proxy to use for `target`: "" for none. `explicit_proxy` as http_client_options::proxy says
/// (given: used; "none": none; empty: the environment's, NO_PROXY honoured, never for localhost or a
/// loopback address); `env` reads the
/// environment (std::getenv in the client).
[[nodiscard]] KERNELBRAIN_DECL std::string proxy_for(url const& target, std::string_view explicit_proxy,
                                                     env_lookup env);

}  // namespace kernelbrain::llm::http_detail

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/generate/llm/http/impl/proxy.ipp"
#endif
