// Rank 0's view of the other ranks of the MPI evaluation pool: one remote evaluator per member of
// each, to add to the search's evaluator_pool (see mpi_pool.hpp).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/distribute/hub.hpp"
#include "kernelbrain/distribute/mpi_environment.hpp"
#include "kernelbrain/distribute/mpi_options.hpp"
#include "kernelbrain/distribute/remote_evaluator.hpp"

namespace kernelbrain::mpi {

/// Rank 0's view of the other ranks: one remote evaluator per member of each, to add to the search's
/// evaluator_pool. Must outlive the search that uses them, and be destroyed before the environment.
class remote_pool {
 public:
  /// Waits for every other rank's hello (connect_timeout_seconds). Throws kernelbrain::error naming
  /// each rank (and node) that refused, did not say hello in time, or loaded another problem; every
  /// rank that did say hello has been told to stop by then.
  remote_pool(environment& env, std::string const& problem_name, options o = {}) {
    if (env.rank() != 0)
      throw error("mpi::remote_pool is rank 0's; rank " + std::to_string(env.rank()) + " serves with mpi::serve()");
    const double connect = o.connect_timeout_seconds;
    hub_ = std::make_unique<detail::hub>(env, std::move(o));
    const auto hellos = hub_->await_hellos();
    std::string wrong;
    const auto complain = [&](std::string what) { wrong += (wrong.empty() ? "" : "; ") + std::move(what); };
    for (std::size_t r = 1; r < hellos.size(); ++r) {
      auto const& h = hellos[r];
      const auto who = "rank " + std::to_string(r);
      if (!h) {
        complain(who + " did not say hello within " + detail::show_seconds(connect) +
                 " s: see its output for why it did not start serving, or allow it more time to set up");
        continue;
      }
      const auto at = who + " (node " + h->node + ")";
      if (h->protocol != wire::protocol_version)
        complain(at + " speaks protocol " + std::to_string(h->protocol) + ", this rank " +
                 std::to_string(wire::protocol_version) + ": run the same KernelBrain build on every rank");
      else if (h->refused)
        complain(at + " refused to serve: " + *h->refused);
      else if (h->problem != problem_name)
        complain(at + " loaded problem '" + h->problem + "', rank 0 '" + problem_name +
                 "': give every rank the same command line");
    }
    if (!wrong.empty()) {
      hub_->shutdown();
      throw error("the MPI evaluation pool cannot start: " + wrong);
    }
    for (std::size_t r = 1; r < hellos.size(); ++r)
      for (std::size_t i = 0; i < hellos[r]->members.size(); ++i) {
        auto const& m = hellos[r]->members[i];
        const auto rank = std::to_string(r);
        members_.push_back({std::make_unique<detail::remote_evaluator>(*hub_, static_cast<int>(r), i, m.fingerprint),
                            "rank " + rank + " " + m.label, device_key(hellos[r]->node, m.device),
                            hellos[r]->node + "/rank " + rank});
      }
  }
  ~remote_pool() { shutdown(); }
  remote_pool(remote_pool const&) = delete;
  remote_pool& operator=(remote_pool const&) = delete;

  /// Adds every remote member to `pool`: label "rank R <label>" ("rank 2 cuda:1"), device key
  /// device_key(node, device), node "<processor name>/rank R" (a rank shares one compile cache).
  void add_to(evaluator_pool& pool) {
    for (auto& m : members_) pool.add(*m.ev, m.label, m.device, m.node);
  }

  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }  ///< remote members
  [[nodiscard]] std::size_t lost_ranks() const { return hub_->lost_ranks(); }

  /// Tells every rank to stop serving and waits (at most lost_after_seconds) for the acknowledgement
  /// of each that is not lost. Idempotent; calls after it throw kernelbrain::error.
  void shutdown() { hub_->shutdown(); }

 private:
  struct member {
    std::unique_ptr<detail::remote_evaluator> ev;
    std::string label, device, node;
  };
  std::unique_ptr<detail::hub> hub_;
  std::vector<member> members_;
};

}  // namespace kernelbrain::mpi
