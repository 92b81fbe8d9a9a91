// kernelbrain report: what the page shows, taken out of journals read by kernelbrain::read_journal.
// Everything is computed here (curves, bands, funnels, lineages, table rows); the page's script only
// draws it. docs/report.md describes each figure and how it is computed.
#pragma once
#include <boost/json/object.hpp>
#include <filesystem>
#include <kernelbrain/io/journal.hpp>
#include <string>
#include <vector>

namespace kernelbrain::cli::report {

/// A journal as the report reads it: the file it came from and what it holds.
struct loaded_journal {
  std::filesystem::path file;
  journal_contents contents;
  /// The problem's shape names by index, where the problem the header names was found and has as many
  /// shapes as the journal's baseline (journals keep shape indices only); empty otherwise (shown as #i).
  std::vector<std::string> shape_names = {};
};

/// The page's data (embedded in the page as JSON): the journals' header blocks and, per problem, the
/// progress curves with seed bands, the rung funnels, the best kernel with its lineage, and the candidate
/// rows. `title` is the page's title; `generated` when it was made (UTC, ISO 8601).
[[nodiscard]] boost::json::object report_data(std::vector<loaded_journal> const& journals, std::string const& title,
                                              std::string const& generated, std::string const& chartjs_version);

/// The rung names of a header's ladder digest ("smoke,screen,confirm/c7bd55cc" -> smoke, screen, confirm).
[[nodiscard]] std::vector<std::string> rung_names(std::string const& ladder);

}  // namespace kernelbrain::cli::report
