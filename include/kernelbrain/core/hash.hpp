// Content hashing: stable 64-bit ids for candidates, cache keys and derived seeds.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kernelbrain {

/// FNV-1a over bytes, then a splitmix finaliser so that nearby inputs spread.
/// Stable across platforms and runs: ids are written to journals and compared later.
class hasher {
 public:
  constexpr hasher& bytes(std::string_view s) noexcept {
    for (unsigned char ch : s) {
      state_ ^= ch;
      state_ *= 0x100000001b3ULL;
    }
    // A separator so that ("ab","c") and ("a","bc") differ.
    state_ ^= 0xffU;
    state_ *= 0x100000001b3ULL;
    return *this;
  }
  constexpr hasher& integer(std::uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) {
      state_ ^= (v >> (8 * i)) & 0xffU;
      state_ *= 0x100000001b3ULL;
    }
    return *this;
  }
  [[nodiscard]] constexpr std::uint64_t digest() const noexcept { return mix(state_); }

  static constexpr std::uint64_t mix(std::uint64_t z) noexcept {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_ = 0xcbf29ce484222325ULL;
};

/// Derive an independent seed for a named sub-stream (a policy axis, a candidate, a rung).
[[nodiscard]] constexpr std::uint64_t derive_seed(std::uint64_t seed, std::string_view stream,
                                                  std::uint64_t index = 0) noexcept {
  return hasher{}.integer(seed).bytes(stream).integer(index).digest();
}

[[nodiscard]] inline std::string to_hex(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = digits[v & 0xfU];
    v >>= 4;
  }
  return out;
}

/// Parses the 16-digit form written by to_hex; returns false on anything else.
[[nodiscard]] inline bool from_hex(std::string_view s, std::uint64_t& out) noexcept {
  if (s.size() != 16) return false;
  std::uint64_t v = 0;
  for (char ch : s) {
    v <<= 4;
    if (ch >= '0' && ch <= '9')
      v |= static_cast<std::uint64_t>(ch - '0');
    else if (ch >= 'a' && ch <= 'f')
      v |= static_cast<std::uint64_t>(ch - 'a' + 10);
    else
      return false;
  }
  out = v;
  return true;
}

}  // namespace kernelbrain
