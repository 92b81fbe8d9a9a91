// evaluator_pool: the evaluators one search dispatches to (one per GPU of this node, one per GPU of
// each MPI rank, or one host backend per rank). search() runs one evaluation thread per member, so
// several candidates are gated and timed at once, each on its own device. Non-owning.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"

namespace kernelbrain {

/// Thrown by an evaluator whose device or process is gone for good (an MPI rank that stopped
/// answering): the pool retires that member and re-queues the evaluation it held on another one.
/// A candidate's own failure (a crash, a hang) is a verdict, never this.
class evaluator_lost : public error {
 public:
  using error::error;
};

/// One member of a pool: an evaluator, a label for journals and progress ("cuda:0", "rank 2 cuda:1",
/// "host"), and the device it times on. Members that name the same device (two worker processes on
/// one GPU) never time at once: their measure() and measure_baseline() calls take turns.
struct pool_member {
  evaluator* ev = nullptr;
  std::string label;
  std::string device;  ///< empty: a device of its own
  /// Members with the same node share a compile cache (one machine, one process or rank): a proposed
  /// candidate's background compile (evaluator::prefetch) is started on the first member of each node.
  std::string node;
};

class evaluator_pool {
 public:
  evaluator_pool() = default;
  /// A pool of one: what search(problem, policies, evaluator&) uses.
  explicit evaluator_pool(evaluator& e, std::string label = "local") { add(e, std::move(label)); }

  /// Adds `e` (not owned: it must outlive the search). `device`: see pool_member.
  evaluator_pool& add(evaluator& e, std::string label, std::string device = {}, std::string node = {}) {
    members_.push_back(pool_member{&e, std::move(label), std::move(device), std::move(node)});
    return *this;
  }

  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }
  [[nodiscard]] bool empty() const noexcept { return members_.empty(); }
  [[nodiscard]] std::span<pool_member const> members() const noexcept { return members_; }
  [[nodiscard]] pool_member const& operator[](std::size_t i) const { return members_.at(i); }

  /// The journal header's evaluator: the members' distinct fingerprints, in member order, joined by
  /// " | " (one fingerprint when every device is alike, as on a node of identical GPUs).
  [[nodiscard]] std::string fingerprint() const {
    if (members_.empty()) throw error("evaluator_pool: no members");
    std::vector<std::string> seen;
    std::string out;
    for (auto const& m : members_) {
      auto f = m.ev->fingerprint();
      if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
      if (!out.empty()) out += " | ";
      out += f;
      seen.push_back(std::move(f));
    }
    return out;
  }

 private:
  std::vector<pool_member> members_;
};

}  // namespace kernelbrain
