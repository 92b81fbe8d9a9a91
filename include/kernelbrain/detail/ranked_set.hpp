// An order-statistics set (rank of a key, key at a rank) in O(sqrt n): sorted buckets.
// Schedulers use it for "is this candidate in the top 1/eta of its rung" at 10^5 history sizes.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kernelbrain::detail {

/// Keys ordered best first: larger value first, then smaller tie-breaker (deterministic).
class ranked_set {
 public:
  using key = std::pair<double, std::uint64_t>;  // (value, tie-breaker)

  /// Inserts and returns the 0-based rank (0 = best).
  std::size_t insert(key k) {
    if (buckets_.empty()) buckets_.emplace_back();
    std::size_t b = 0, before = 0;
    while (b + 1 < buckets_.size() && !buckets_[b].empty() && better_or_equal(buckets_[b].back(), k)) {
      before += buckets_[b].size();
      ++b;
    }
    auto& v = buckets_[b];
    auto it = std::lower_bound(v.begin(), v.end(), k, better);
    const std::size_t rank = before + static_cast<std::size_t>(it - v.begin());
    v.insert(it, k);
    ++size_;
    if (v.size() > 2 * bucket_target) split(b);
    return rank;
  }
  /// The key at 0-based rank r; r < size().
  [[nodiscard]] key at(std::size_t r) const {
    for (auto const& v : buckets_) {
      if (r < v.size()) return v[r];
      r -= v.size();
    }
    return {};
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  static constexpr std::size_t bucket_target = 256;
  static bool better(key const& a, key const& b) noexcept {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  }
  static bool better_or_equal(key const& a, key const& b) noexcept { return !better(b, a); }
  void split(std::size_t b) {
    auto& v = buckets_[b];
    std::vector<key> tail(v.begin() + static_cast<std::ptrdiff_t>(bucket_target), v.end());
    v.resize(bucket_target);
    buckets_.insert(buckets_.begin() + static_cast<std::ptrdiff_t>(b) + 1, std::move(tail));
  }
  std::vector<std::vector<key>> buckets_;
  std::size_t size_ = 0;
};

}  // namespace kernelbrain::detail
