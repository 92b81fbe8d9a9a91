// kernelbrain CLI: what a search shows while it runs (the progress line on stderr) and when it ends
// (the summary table and the per-shape table on stdout).
//
// Scripts and tests read the summary: each row is two spaces, the name padded to 16 columns, a
// space and the value ("  stop reason      evaluation budget spent"; "  speedup ...", "  score ..."
// under "best candidate"). Keep the row names and that layout when adding rows.
#pragma once
#include <chrono>
#include <cstdint>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/search.hpp>
#include <map>
#include <span>
#include <string>
#include <string_view>

namespace kernelbrain::cli {

/// What the model's replies came to, from model_reply events ("purpose: status/parse_status").
struct model_tally {
  std::size_t replies = 0;
  std::size_t usable = 0;                       ///< parsed into a candidate
  std::map<std::string, std::size_t> unusable;  ///< by call or parse status
  bool estimated = false;                       ///< some token counts are estimates
};

/// The progress line on stderr, redrawn in place at most ten times a second, and the per-stage
/// reject counts for the summary (a resumed run replays every event, so these cover the whole run).
class progress_line final : public observer {
 public:
  explicit progress_line(bool draw) : draw_(draw) {}

  void on_event(event const& e, search_view const& v) override;
  /// Ends the line so that what follows starts on a fresh one.
  void finish();
  [[nodiscard]] model_tally const& model() const noexcept { return model_; }
  [[nodiscard]] std::map<std::string, std::size_t> const& rejected_by_stage() const noexcept {
    return rejected_by_stage_;
  }

 private:
  void redraw(search_view const& v);
  /// A failed or cancelled model request, on stderr: each kind the first time, then at 2, 4, 8...
  void report_failure(std::string const& note);

  bool draw_;
  bool drawn_ = false;
  std::size_t last_width_ = 0;
  std::chrono::steady_clock::time_point last_{};
  std::map<std::string, std::size_t> rejected_by_stage_;
  model_tally model_;
  std::map<std::string, std::size_t> failures_;  ///< model request failures by kind (digits masked)
};

/// What the summary's head says about the run.
struct run_description {
  std::string problem_name;
  std::string backend;
  std::string strategy;  ///< canonical text, as the journal records it
  std::uint64_t seed = 0;
  std::string budget_text;
  std::string backend_note;  ///< one line from the backend (e.g. CUDA compiles and worker starts); may be empty
  std::string model;         ///< what answers prompts (empty: no model)
};

/// The end-of-run summary table on stdout.
void print_summary(run_description const& run, search_result const& r, progress_line const& progress,
                   std::span<rung const> rungs, jsonl_journal const* journal);

/// One row per timing: the reference's median (`reference`, by problem shape), the `column` kernel's,
/// the speedup and the share of the shape's roofline floor.
/// With `pytorch` measured, also PyTorch eager's and torch.compile's medians and the kernel's speed-up
/// over each.
void print_shape_table(problem const& p, std::span<shape_timing const> timings, std::span<double const> reference,
                       std::string_view column, pytorch_timing const* pytorch = nullptr);

/// The summary's rows on PyTorch: the speed-up of `timings` over eager and torch.compile (geometric mean,
/// range, where it loses) and what PyTorch was measured with; or why it was not measured.
void print_pytorch_rows(pytorch_timing const* pytorch, std::span<shape_timing const> timings);

/// Per-shape times of the incumbent against the reference, at the incumbent's best rung (nothing when
/// no candidate passed).
void print_shapes(problem const& p, search_result const& r);

}  // namespace kernelbrain::cli
