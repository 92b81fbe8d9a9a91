// A recorded sweep of a problem's template space on one device: for every recorded point its gate
// verdict, compile time, resources and diagnosis, and at every timed shape its verdict, device cost
// and raw timed samples; plus the reference's times. Written by `kernelbrain record` (one JSON object
// per line: a header, then one line per point, so an interrupted recording keeps what it measured and
// a later part appends to it), read back by the replay backend (backends/replay/evaluator.hpp) and by
// `kernelbrain ablate`. Files ending in .gz are gzip-compressed (zlib). Bodies: impl/recording.ipp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include "kernelbrain/config.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/measurement.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain {

/// The format written in every header; a reader refuses any other.
inline constexpr char const* recording_format = "kernelbrain-recording/1";

/// One timed shape of one point: what a one-shape measurement with `recording_header::samples` timed
/// samples gave.
struct recorded_shape {
  std::size_t shape = 0;        ///< index into problem::shapes
  verdict result;               ///< pass, or why that shape's measurement was refused
  std::vector<double> samples;  ///< timed samples, seconds (empty when refused)
  double check_seconds = 0;     ///< device seconds of one fresh-input correctness trial at this shape
  double measure_seconds = 0;   ///< device seconds of the whole one-shape measurement (trial, warm-up, samples)
};

/// One point of a template space, as recorded.
struct recorded_point {
  std::string family;  ///< the catalogue hint
  parameters params;
  std::uint64_t content = 0;   ///< content_key(source, launch) of the instantiated candidate
  verdict gate;                ///< the gate's verdict (source policy, build, correctness shapes)
  double compile_seconds = 0;  ///< wall seconds of its NVRTC (or host compiler) run; 0 when cached or unknown
  double gate_seconds = 0;     ///< device seconds of the gate's correctness trials
  std::optional<resources> res;
  std::string diagnosis;                  ///< the diagnosis a profiled rung gave (static where ncu was off)
  std::map<std::string, double> profile;  ///< the metrics behind it
  std::vector<recorded_shape> shapes;     ///< every timed shape, in problem order, when the gate passed

  [[nodiscard]] recorded_shape const* at_shape(std::size_t s) const noexcept {
    for (auto const& r : shapes)
      if (r.shape == s) return &r;
    return nullptr;
  }
};

struct recording_header {
  std::string format = recording_format;
  std::string problem;               ///< problem name
  std::uint64_t problem_digest = 0;  ///< problem_digest() of what was recorded: templates, shapes, reference
  std::string fingerprint;           ///< the recording evaluator's fingerprint (device, driver, compiler)
  std::string recorded;              ///< UTC date and time of the first part
  std::string command;               ///< the command that re-records it
  int samples = 0;                   ///< timed samples per shape and point
  int warmup = 0;                    ///< untimed runs before them
  std::vector<std::size_t> gate_shapes;
  int gate_trials = 0;
  std::uint64_t space_points = 0;        ///< admitted points of the catalogue's template spaces
  std::uint64_t sample_seed = 0;         ///< seed of the point sample (all points when it covers the space)
  std::vector<std::string> shape_names;  ///< problem shape names, checked on reading
  std::vector<std::vector<double>> baseline_samples;  ///< the reference's samples per problem shape
};

struct recording {
  recording_header header;
  std::vector<recorded_point> points;
};

/// A digest of what a recording depends on in `p`: name, shapes (names, dims, weights, tiers),
/// tolerance, reference, and every template's source, launch and space, except the catalogue entries
/// `kernelbrain adopt` added (those with provenance): adopting a model's kernel leaves the problem's
/// recordings valid. Replay refuses a recording whose digest differs from the problem it is asked to replay.
[[nodiscard]] KERNELBRAIN_DECL std::uint64_t problem_digest(problem const& p);
/// The content key of an instantiated template: a hash of its source and launch plan text.
[[nodiscard]] KERNELBRAIN_DECL std::uint64_t content_key(candidate const& c);

/// Reads a recording (.jsonl, or .jsonl.gz). Throws kernelbrain::error naming the file, the line and
/// what is wrong. A truncated last line (a part killed while writing) is skipped, not an error.
[[nodiscard]] KERNELBRAIN_DECL recording read_recording(std::filesystem::path const& file);

/// One line of JSON (no newline) for the header / a point, as read_recording reads them.
[[nodiscard]] KERNELBRAIN_DECL std::string header_line(recording_header const& h);
[[nodiscard]] KERNELBRAIN_DECL std::string point_line(recorded_point const& p);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/io/impl/recording.ipp"
#endif
