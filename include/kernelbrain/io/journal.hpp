// The JSONL journal: an append-only, crash-safe record of a search, and what a resumed run reads back.
// No JSON library in this header; the bodies are in io/impl/journal.ipp (header-only form: included
// at the end; separately compiled: kernelbrain/src.hpp or kernelbrain::runtime; see config.hpp).
//
// Format: one JSON object per line, each with a "type":
//   header   the run's identity (run_header), its budget, the library version and the date; first line
//   baseline the reference timings the run scores against (a resumed run reuses them)
//   outcome  a finished evaluation in full (written by the evaluation plane as soon as it finishes)
//   event    a search event by seq; a `proposed` event carries the candidate's content
//   exchange a model's prompt and reply (model_exchange) with the seq of its model_reply event
//   resume   a resumed run starts here; events with seq > after_seq written before it are superseded
// Numbers are exact: doubles are written in shortest round-trip form and read back bit for bit;
// non-finite doubles are written as the strings "inf", "-inf" and "nan".
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/budget.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/evaluation.hpp"
#include "kernelbrain/core/event.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/core/journal_sink.hpp"
#include "kernelbrain/core/model_exchange.hpp"
#include "kernelbrain/core/rung.hpp"
#include "kernelbrain/core/score.hpp"

namespace kernelbrain {

/// The journal format written by this library; readers refuse a newer one.
inline constexpr std::int64_t journal_format = 1;

/// A digest of a fidelity ladder for run_header::ladder: readable rung names, then a hash of every
/// rung field, so that two ladders that would measure differently never share a journal.
[[nodiscard]] inline std::string ladder_digest(std::span<rung const> rungs) {
  hasher h;
  std::string names;
  for (auto const& r : rungs) {
    if (!names.empty()) names += ',';
    names += r.name;
    h.bytes(r.name).integer(r.shapes.size());
    for (auto s : r.shapes) h.integer(s);
    h.integer(static_cast<std::uint64_t>(r.samples)).integer(static_cast<std::uint64_t>(r.warmup));
    h.integer(static_cast<std::uint64_t>(r.correctness_trials));
    h.integer(r.interleaved ? 1U : 0U).integer(r.profile ? 1U : 0U);
    if (!r.assure) h.bytes("not assured");  // hashed only when off: ladders of assured rungs keep their digests
  }
  return names + "/" + to_hex(h.digest());
}

/// An event as the journal holds it; `cand` is set for `proposed` events.
struct journal_event {
  event e;
  std::optional<candidate> cand;
  std::size_t segment = 1;  ///< the run segment that wrote it: 1, then +1 per resume (a campaign's round)
};

/// A model exchange as the journal holds it, with the seq of its model_reply event.
struct journal_exchange {
  std::uint64_t seq = 0;
  model_exchange x;
  std::size_t segment = 1;  ///< the run segment that wrote it, as journal_event::segment
};

/// Everything a journal holds, for resume, reports and tests.
struct journal_contents {
  run_header header;
  std::optional<baseline> reference;                  ///< the first baseline line, if the run got that far
  std::map<std::size_t, baseline> member_references;  ///< the first baseline line of each other pool slot
  budget limits;                                      ///< the budget of the latest run segment (header or resume line)
  std::string version;                                ///< library version that wrote the header
  std::string date;                                   ///< when the header was written (UTC, ISO 8601)
  std::vector<evaluation_outcome> outcomes;           ///< every outcome line, in the order written
  std::vector<journal_event> events;                  ///< the run's events in seq order, superseded ones dropped
  std::vector<journal_exchange> exchanges;  ///< model prompts and replies in seq order, superseded ones dropped
  std::uint64_t last_seq = 0;               ///< highest seq among `events`
  /// Evaluations in flight when a run segment died, retried by the next (its resume line lists them),
  /// each with that line's after_seq: a later segment that wrote past it ran into the evaluation again.
  std::vector<std::pair<evaluation_key, std::uint64_t>> interrupted;
  std::size_t segments = 0;           ///< 1 for a run never resumed; +1 per resume
  std::size_t lines = 0;              ///< complete lines read
  std::uintmax_t complete_bytes = 0;  ///< size up to the end of the last complete line
  std::uintmax_t torn_bytes = 0;      ///< bytes after it: a line torn by a kill, ignored
  [[nodiscard]] bool has_header() const noexcept { return segments > 0; }
};

/// Reads a journal. A torn last line (a kill mid-write) is ignored; any other line that is not a
/// valid journal line throws kernelbrain::error naming the file and the line number.
[[nodiscard]] KERNELBRAIN_DECL journal_contents read_journal(std::filesystem::path const& path);

/// What a resumed run needs: the header, the baseline, every finished evaluation, and the last event written.
[[nodiscard]] KERNELBRAIN_DECL resume_state load_journal(std::filesystem::path const& path);

enum class journal_mode {
  create,  ///< a new journal; an existing file is never overwritten
  resume,  ///< continue the run the journal records; its header must match this run's
};

/// What opening a journal for resume found (for the CLI's notes and for tests).
struct journal_resume_info {
  std::size_t outcomes = 0;        ///< finished evaluations the resumed run will not repeat
  std::uint64_t recorded_seq = 0;  ///< last event seq the journal held
  std::uintmax_t torn_bytes = 0;   ///< a torn last line that was cut off before appending
  bool budget_changed = false;     ///< the run's events are re-written from seq 1 (see below)
  budget previous_limits;          ///< the budget the journal was written with
};

/// The JSONL journal_sink. Thread-safe: outcomes come from the evaluation plane, events from the
/// main thread. Each line is flushed as it is written, so a kill -9 loses at most the line in progress.
///
/// Resuming: a run with the same header and budget replays the same deterministic search, so its
/// events up to the recorded seq are already in the file and are not written again. A different
/// budget can change a scheduler's choices (they may depend on the share of budget spent), so then the
/// events are written again from seq 1 after a `resume` line that supersedes the old ones; finished
/// evaluations are reused either way (they are keyed by content and rung, not by position).
class jsonl_journal final : public journal_sink {
 public:
  /// Throws kernelbrain::error when the file cannot be created or opened, when `create` finds an
  /// existing file, when `resume` finds none, and when the recorded header differs from `header`.
  KERNELBRAIN_DECL jsonl_journal(std::filesystem::path path, run_header header, budget limits, journal_mode mode);
  KERNELBRAIN_DECL ~jsonl_journal() override;
  jsonl_journal(jsonl_journal const&) = delete;
  jsonl_journal& operator=(jsonl_journal const&) = delete;

  KERNELBRAIN_DECL void write_outcome(evaluation_outcome const& o) override;
  KERNELBRAIN_DECL void write_event(event const& e, search_view const& v) override;
  KERNELBRAIN_DECL void write_baseline(baseline const& b) override;
  KERNELBRAIN_DECL void write_member_baseline(baseline const& b, std::size_t slot, std::string const& member) override;
  KERNELBRAIN_DECL void write_exchange(model_exchange const& x, std::uint64_t seq) override;

  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }
  /// For journal_mode::resume: the state to pass as search_options::resume (nullopt after create).
  [[nodiscard]] std::optional<resume_state> const& resumed() const noexcept { return resumed_; }
  [[nodiscard]] journal_resume_info const& resume_info() const noexcept { return info_; }
  /// Throws kernelbrain::error if a write failed. An outcome is written on the evaluation thread,
  /// which must not throw, so its failure is kept and reported here (and by the next write_event).
  KERNELBRAIN_DECL void throw_if_failed() const;

 private:
  KERNELBRAIN_DECL void open_new(budget const& limits);
  KERNELBRAIN_DECL void open_for_resume(budget const& limits);
  KERNELBRAIN_DECL void append_line(std::string line);
  KERNELBRAIN_DECL void fail_unlocked(std::string why);

  std::filesystem::path path_;
  run_header header_;
  std::FILE* file_ = nullptr;
  mutable std::mutex mu_;
  std::string failure_;  ///< first write failure, empty while all is well
  std::optional<resume_state> resumed_;
  journal_resume_info info_;
};

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/io/impl/journal.ipp"
#endif
