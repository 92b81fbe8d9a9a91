// The report's data model: journals read for a report, and what the report page shows, taken out of them
// (curves, bands, funnels, lineages, table rows). The page's script only draws it (report/page.hpp);
// docs/report.md describes each figure and how it is computed.
//
// Compiled into kernelbrain::tools (src/tools/report_data.cpp): link it to use these.
#pragma once
#include <boost/json/object.hpp>
#include <filesystem>
#include <string>
#include <vector>
#include "kernelbrain/io/journal.hpp"

namespace kernelbrain::report {

/// A journal as the report reads it: the file it came from and what it holds.
struct loaded_journal {
  std::filesystem::path file;
  journal_contents contents;
  /// The problem's shape names by index, where the problem the header names was found and has as many
  /// shapes as the journal's baseline (journals keep shape indices only); empty otherwise (shown as #i).
  std::vector<std::string> shape_names = {};
  std::vector<std::string> shape_tiers = {};  ///< the same problem's shape tiers, likewise
};

/// The shape names of the problem a journal's header names (journals keep shape indices only), looked up
/// as tune looks up a built-in problem (backends().problem_directory), with the backend the evaluator
/// fingerprint starts with. Empty where it is not found, does not load, or has another number of shapes
/// than the journal's baseline: a name is only a label, and "#i" is shown instead.
[[nodiscard]] std::vector<std::string> shape_names(journal_contents const& j);

/// Reads journals for a report, each with its shape names. Throws kernelbrain::error for a folder, a
/// journal given twice, a file that does not read as a journal (naming it and the line) and one with no
/// header line.
[[nodiscard]] std::vector<loaded_journal> read_journals(std::vector<std::string> const& files);

/// The problems of the journals, in the order their first journal was given.
[[nodiscard]] std::vector<std::string> problem_names(std::vector<loaded_journal> const& journals);

/// The page's title when none is given: "KernelBrain report: " and the problems, comma-separated.
[[nodiscard]] std::string default_title(std::vector<loaded_journal> const& journals);

/// The page's data (embedded in the page as JSON): the journals' header blocks and, per problem, the
/// progress curves with seed bands, the rung funnels, the best kernel with its lineage, and the candidate
/// rows. `title` is the page's title; `generated` when it was made (UTC, ISO 8601). `over` is what the
/// progress curves are a speed-up over: "reference" (the score's), "eager" or "compile" (PyTorch's, from
/// the journals' PyTorch measurement: the geometric mean over the shapes the incumbent's rung timed;
/// kernelbrain::error when a journal has none).
[[nodiscard]] boost::json::object report_data(std::vector<loaded_journal> const& journals, std::string const& title,
                                              std::string const& generated, std::string const& chartjs_version,
                                              std::string const& over = "reference");

/// The per-problem, per-shape tables docs/results.md shows, in Markdown, from the report's data: for
/// each problem its best kernel's median per shape against the reference and, where the journal
/// measured them, PyTorch eager and torch.compile, with the share of the roofline floor; then what
/// each journal is (file, strategy, seed, device, torch). `command` is printed above the tables.
[[nodiscard]] std::string markdown_tables(boost::json::object const& data, std::string const& command);

/// The rung names of a header's ladder digest ("smoke,screen,confirm/c7bd55cc" -> smoke, screen, confirm).
[[nodiscard]] std::vector<std::string> rung_names(std::string const& ladder);

}  // namespace kernelbrain::report
