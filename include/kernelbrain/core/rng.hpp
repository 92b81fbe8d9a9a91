// A small, portable random generator: the same seed gives the same numbers on every platform,
// which <random>'s distributions do not promise. Searches must replay bit for bit.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include "kernelbrain/core/hash.hpp"

namespace kernelbrain {

/// xoshiro256** seeded through splitmix64.
class rng {
 public:
  using result_type = std::uint64_t;
  explicit rng(std::uint64_t seed = 0) noexcept { reseed(seed); }

  void reseed(std::uint64_t seed) noexcept {
    std::uint64_t z = seed;
    for (auto& s : s_) {
      z += 0x9e3779b97f4a7c15ULL;
      s = hasher::mix(z);
    }
  }
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  result_type operator()() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n); n must be > 0.
  std::uint64_t below(std::uint64_t n) noexcept {
    // Modulo of a 64-bit draw: the bias (n / 2^64) is irrelevant at our sizes, and it is portable.
    return (*this)() % n;
  }
  /// Standard normal by Box-Muller (one value per call; portable, unlike std::normal_distribution).
  double normal() noexcept {
    double u1 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4]{};
};

}  // namespace kernelbrain
