// The budget a search may spend, and the meter that tracks what it has spent.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

namespace kernelbrain {

/// Limits; zero means "no limit" on that axis.
struct budget {
  double device_seconds = 0;
  double wall_seconds = 0;
  std::uint64_t evaluations = 0;  ///< candidate x rung evaluations, gate rejections included
  std::uint64_t candidates = 0;   ///< distinct candidates proposed
  std::uint64_t llm_tokens = 0;
  double llm_cost = 0;            ///< in the currency the LLM client reports
  std::uint64_t llm_answers = 0;  ///< prompts the model answered (model_exchange answered()): the same model
                                  ///< effort for two strategies of an ablation
};

/// What has been spent.
struct budget_usage {
  double device_seconds = 0;
  double wall_seconds = 0;
  std::uint64_t evaluations = 0;
  std::uint64_t candidates = 0;
  std::uint64_t llm_tokens = 0;
  double llm_cost = 0;
  std::uint64_t llm_answers = 0;
};

class budget_meter {
 public:
  explicit budget_meter(budget limit = {}) : limit_(limit), start_(std::chrono::steady_clock::now()) {}

  void charge_device(double seconds) noexcept { used_.device_seconds += seconds; }
  void charge_evaluation() noexcept { ++used_.evaluations; }
  void charge_candidate() noexcept { ++used_.candidates; }
  void charge_llm(std::uint64_t tokens, double cost) noexcept {
    used_.llm_tokens += tokens;
    used_.llm_cost += cost;
  }
  void charge_answer() noexcept { ++used_.llm_answers; }

  [[nodiscard]] budget const& limit() const noexcept { return limit_; }
  [[nodiscard]] budget_usage usage() const noexcept {
    budget_usage u = used_;
    u.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return u;
  }
  /// The largest fraction spent over the limited axes (0 when nothing is limited).
  [[nodiscard]] double fraction_used() const noexcept {
    const auto u = usage();
    double f = 0;
    auto axis = [&f](double used, double lim) {
      if (lim > 0) f = std::max(f, used / lim);
    };
    axis(u.device_seconds, limit_.device_seconds);
    axis(u.wall_seconds, limit_.wall_seconds);
    axis(static_cast<double>(u.evaluations), static_cast<double>(limit_.evaluations));
    axis(static_cast<double>(u.candidates), static_cast<double>(limit_.candidates));
    axis(static_cast<double>(u.llm_tokens), static_cast<double>(limit_.llm_tokens));
    axis(u.llm_cost, limit_.llm_cost);
    axis(static_cast<double>(u.llm_answers), static_cast<double>(limit_.llm_answers));
    return f;
  }
  /// Like fraction_used() but without the wall clock: the axes a replay reproduces exactly (device
  /// seconds are recorded in the journal and charged again on resume). Policies decide by this one,
  /// so that the same seed gives the same search whatever the timing.
  [[nodiscard]] double progress() const noexcept {
    double f = 0;
    auto axis = [&f](double used, double lim) {
      if (lim > 0) f = std::max(f, used / lim);
    };
    axis(used_.device_seconds, limit_.device_seconds);
    axis(static_cast<double>(used_.evaluations), static_cast<double>(limit_.evaluations));
    axis(static_cast<double>(used_.candidates), static_cast<double>(limit_.candidates));
    axis(static_cast<double>(used_.llm_tokens), static_cast<double>(limit_.llm_tokens));
    axis(used_.llm_cost, limit_.llm_cost);
    axis(static_cast<double>(used_.llm_answers), static_cast<double>(limit_.llm_answers));
    return f;
  }
  /// Empty while budget remains; otherwise names the exhausted axis.
  [[nodiscard]] std::string exhausted() const {
    const auto u = usage();
    if (limit_.device_seconds > 0 && u.device_seconds >= limit_.device_seconds) return "device-seconds budget spent";
    if (limit_.wall_seconds > 0 && u.wall_seconds >= limit_.wall_seconds) return "wall-clock budget spent";
    if (limit_.evaluations > 0 && u.evaluations >= limit_.evaluations) return "evaluation budget spent";
    if (limit_.candidates > 0 && u.candidates >= limit_.candidates) return "candidate budget spent";
    if (limit_.llm_tokens > 0 && u.llm_tokens >= limit_.llm_tokens) return "LLM token budget spent";
    if (limit_.llm_cost > 0 && u.llm_cost >= limit_.llm_cost) return "LLM cost budget spent";
    if (limit_.llm_answers > 0 && u.llm_answers >= limit_.llm_answers) return "model-answer budget spent";
    return {};
  }

 private:
  budget limit_;
  budget_usage used_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kernelbrain
