// Bodies of kernelbrain/generate/llm/http/proxy.hpp, on Asio's address and network parsing.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>
#include <cstddef>
#include "kernelbrain/generate/llm/http/proxy.hpp"
#include "kernelbrain/generate/llm/http/text.hpp"

namespace kernelbrain::llm::http_detail {

namespace net = boost::asio;
using error_code = boost::system::error_code;

KERNELBRAIN_DECL bool in_cidr(std::string const& entry, std::string const& host) {
  error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return false;
  if (address.is_v4()) {
    const auto network = net::ip::make_network_v4(entry, ec);
    if (ec) return false;
    const auto mask = network.netmask().to_uint();
    return (address.to_v4().to_uint() & mask) == (network.address().to_uint() & mask);
  }
  const auto network = net::ip::make_network_v6(entry, ec);
  if (ec) return false;
  const auto a = address.to_v6().to_bytes();
  const auto n = network.address().to_bytes();
  const unsigned bits = network.prefix_length();
  for (unsigned i = 0; i < 16; ++i) {
    const unsigned take = bits > i * 8 ? std::min(8U, bits - i * 8) : 0U;
    if (take == 0) break;
    const auto mask = static_cast<unsigned char>(0xFFU << (8 - take));
    if ((a[i] & mask) != (n[i] & mask)) return false;
  }
  return true;
}

KERNELBRAIN_DECL bool no_proxy_matches(std::string_view no_proxy, std::string_view host_in) {
  std::string host = lower(trim(host_in));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  while (!host.empty() && host.back() == '.') host.pop_back();
  if (host.empty()) return false;
  std::size_t i = 0;
  while (i < no_proxy.size()) {
    const auto end = no_proxy.find_first_of(", \t", i);
    std::string e = lower(trim(no_proxy.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i)));
    i = end == std::string_view::npos ? no_proxy.size() : end + 1;
    if (e.empty()) continue;
    if (e == "*") return true;
    if (e.find('/') != std::string::npos) {
      if (in_cidr(e, host)) return true;
      continue;
    }
    if (e.front() == '[') {
      const auto close = e.find(']');
      e = e.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    } else if (std::count(e.begin(), e.end(), ':') == 1) {
      e = e.substr(0, e.find(':'));
    }
    if (e.rfind("*.", 0) == 0) e.erase(0, 1);
    while (!e.empty() && e.back() == '.') e.pop_back();
    if (e.empty()) continue;
    const std::string bare = e.front() == '.' ? e.substr(1) : e;
    if (bare.empty()) continue;
    if (host == bare) return true;
    if (host.size() > bare.size() && host.ends_with(bare) && host[host.size() - bare.size() - 1] == '.') return true;
  }
  return false;
}

KERNELBRAIN_DECL std::string proxy_for(url const& target, std::string_view explicit_proxy, env_lookup env) {
  const auto get = [env](char const* name) -> std::string {
    if (env == nullptr) return {};
    char const* v = env(name);
    return v != nullptr ? std::string(trim(v)) : std::string{};
  };
  std::string p(trim(explicit_proxy));
  const std::string l = lower(p);
  if (l == "none" || l == "direct") return {};
  if (!p.empty()) return p;  // given in the options: used as it is
  // The environment's proxy is never for this machine (as Go's net/http has it): localhost and
  // loopback addresses go direct.
  if (target.host == "localhost" || target.host.ends_with(".localhost")) return {};
  if (error_code ec; net::ip::make_address(target.host, ec).is_loopback() && !ec) return {};
  if (target.scheme == "https") {
    p = get("https_proxy");
    if (p.empty()) p = get("HTTPS_PROXY");
  } else {
    p = get("http_proxy");
    if (p.empty()) p = get("HTTP_PROXY");
  }
  if (p.empty()) return {};
  std::string no = get("no_proxy");
  if (no.empty()) no = get("NO_PROXY");
  if (no_proxy_matches(no, target.host)) return {};
  return p;
}

}  // namespace kernelbrain::llm::http_detail
