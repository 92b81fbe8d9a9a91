// The CLI's timestamps: what record writes in a recording's header and report prints on its page.
#pragma once
#include <array>
#include <ctime>
#include <string>

namespace kernelbrain::cli {

/// Now, in UTC, ISO 8601 to the second: "2026-12-02T10:07:47Z".
inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> buf{};
  return std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0 ? std::string(buf.data()) : "";
}

}  // namespace kernelbrain::cli
