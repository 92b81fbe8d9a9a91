// One member of a serving rank as rank 0's evaluators see it: an evaluator whose calls go through
// the hub (see mpi_pool.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/distribute/hub.hpp"
#include "kernelbrain/distribute/wire.hpp"

namespace kernelbrain::mpi {

namespace detail {

/// One member of a serving rank, as rank 0's evaluators see it.
class remote_evaluator final : public evaluator {
 public:
  remote_evaluator(hub& h, int rank, std::size_t member, std::string fingerprint)
      : hub_(&h), rank_(rank), member_(member), fingerprint_(std::move(fingerprint)) {}

  [[nodiscard]] std::string fingerprint() const override { return fingerprint_; }
  [[nodiscard]] verdict inspect(candidate const& c) override { return call(with(wire::method::inspect, c)).v; }
  void prefetch(candidate const& c) override { hub_->post(rank_, with(wire::method::prefetch, c)); }
  [[nodiscard]] verdict build(candidate const& c) override { return call(with(wire::method::build, c)).v; }
  [[nodiscard]] verdict check(candidate const& c, std::span<std::size_t const> shapes, int trials,
                              std::uint64_t seed) override {
    auto r = with(wire::method::check, c);
    r.shapes.assign(shapes.begin(), shapes.end());
    r.trials = trials;
    r.seed = seed;
    return call(std::move(r)).v;
  }
  [[nodiscard]] verdict assure(candidate const& c, std::uint64_t seed) override {
    auto r = with(wire::method::assure, c);
    r.seed = seed;
    return call(std::move(r)).v;
  }
  [[nodiscard]] measurement measure(candidate const& c, rung const& at, measure_request const& req) override {
    auto r = with(wire::method::measure, c);
    r.at = at;
    r.seed = req.seed;
    if (req.incumbent) r.incumbent = *req.incumbent;
    r.shapes.assign(req.checked.begin(), req.checked.end());
    return std::move(call(std::move(r)).m);
  }
  /// The serving member times the reference of its own problem (every rank loads the same one; the
  /// hello's problem name is checked).
  [[nodiscard]] baseline measure_baseline(problem const&) override {
    wire::request r;
    r.what = wire::method::measure_baseline;
    return std::move(call(std::move(r)).b);
  }
  [[nodiscard]] double take_device_seconds() override {
    std::lock_guard lk(mu_);
    return std::exchange(device_seconds_, 0.0);
  }

 private:
  [[nodiscard]] wire::request with(wire::method m, candidate const& c) const {
    wire::request r;
    r.member = member_;
    r.what = m;
    r.cand = c;
    return r;
  }
  wire::reply call(wire::request r) {
    r.member = member_;
    auto rep = hub_->call(rank_, std::move(r));
    {
      std::lock_guard lk(mu_);
      device_seconds_ += rep.device_seconds;  // charged even when the call failed: the device was used
    }
    if (rep.error) throw error(*rep.error);
    return rep;
  }

  hub* hub_;
  int rank_;
  std::size_t member_;
  std::string fingerprint_;
  std::mutex mu_;
  double device_seconds_ = 0;
};

}  // namespace detail

}  // namespace kernelbrain::mpi
