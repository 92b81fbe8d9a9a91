// kernelbrain report: one self-contained HTML page from journals: best-so-far against device seconds per
// strategy (seed bands), the rung funnel, the best kernel's lineage with the model's prompts and replies,
// a sortable candidate table, the profiler's diagnosis and the best kernel's source (docs/report.md).
//
// The page opens offline: Chart.js is inlined (Debian's libjs-chart.js by default), the data is one
// JSON block, nothing is fetched. Journals hold model replies and kernel sources, so every string is
// treated as hostile: the JSON is escaped for a <script> element, the page's script writes text with
// textContent only, and a Content-Security-Policy with a per-page nonce runs no other script.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <kernelbrain/report/data.hpp>
#include <kernelbrain/report/page.hpp>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include "commands.hpp"
#include "timestamps.hpp"

namespace kernelbrain::cli {

namespace {

namespace fs = std::filesystem;

struct report_options {
  std::vector<std::string> journals;
  std::string output;
  std::string chartjs;             ///< "" = $KERNELBRAIN_CHARTJS, else Debian's
  std::string title;               ///< "" = from the problems
  bool markdown = false;           ///< --markdown: the per-shape tables as Markdown instead of the page
  std::string over = "reference";  ///< --over: what the progress curves are a speed-up over
  std::string command_line;        ///< as typed, for the Markdown's "made by" line
};

constexpr std::string_view debian_chartjs = "/usr/share/javascript/chart.js/chart.min.js";

std::string quoted(fs::path const& p) { return "'" + p.string() + "'"; }

/// Chart.js's UMD build (it defines window.Chart): --chartjs, else $KERNELBRAIN_CHARTJS, else Debian's.
fs::path chartjs_path(report_options const& o) {
  if (!o.chartjs.empty()) return o.chartjs;
  if (char const* env = std::getenv("KERNELBRAIN_CHARTJS"); env != nullptr && *env != '\0') return env;
  return fs::path(debian_chartjs);
}

std::string read_chartjs(fs::path const& path) {
  std::error_code ec;
  const auto missing = [&](std::string_view why) {
    return usage_error(fmt::format(
        "Chart.js (the plotting library the report inlines) {} at {}: install it with 'apt-get install "
        "libjs-chart.js', or pass --chartjs FILE (or set KERNELBRAIN_CHARTJS) naming its UMD build, chart.min.js",
        why, quoted(path)));
  };
  if (!fs::exists(path, ec)) throw missing("is not");
  if (fs::is_directory(path, ec)) throw missing("is a directory, not a file,");
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw missing("cannot be read");
  if (text.empty()) throw missing("is an empty file");
  return text;
}

/// The output file's folder must exist and the output must not be a folder; checked before any work.
void check_output(fs::path const& out) {
  std::error_code ec;
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::exists(dir, ec))
    throw usage_error(fmt::format("-o {}: the folder {} does not exist: create it first", quoted(out), quoted(dir)));
  if (!fs::is_directory(dir, ec)) throw usage_error(fmt::format("-o {}: {} is not a folder", quoted(out), quoted(dir)));
  if (fs::is_directory(out, ec))
    throw usage_error(fmt::format("-o {} is a folder: give the HTML file to write, e.g. {}", quoted(out),
                                  quoted(out / "report.html")));
}

void write_file(fs::path const& out, std::string const& text) {
  std::FILE* f = std::fopen(out.c_str(), "wb");
  if (f == nullptr)
    throw usage_error(fmt::format("cannot write the report to {}: {}", quoted(out), std::strerror(errno)));
  const std::size_t wrote = std::fwrite(text.data(), 1, text.size(), f);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (wrote != text.size() || !closed)
    throw usage_error(fmt::format("writing the report to {} failed: {}", quoted(out),
                                  std::strerror(wrote != text.size() ? write_errno : errno)));
}

int run_report(report_options const& o) {
  const fs::path out(o.output);
  if (o.markdown) {
    if (o.output != "-") check_output(out);
    const auto journals = report::read_journals(o.journals);
    const auto data = report::report_data(journals, o.title.empty() ? report::default_title(journals) : o.title,
                                          utc_now(), "", o.over);
    const auto md = report::markdown_tables(data, o.command_line);
    if (o.output == "-") {
      fmt::print("{}", md);
    } else {
      write_file(out, md);
      fmt::print("wrote {} ({} journal{}, Markdown tables)\n", out.string(), journals.size(),
                 journals.size() == 1 ? "" : "s");
    }
    std::fflush(stdout);
    return exit_ok;
  }
  check_output(out);
  const auto chart_file = chartjs_path(o);
  report::page_inputs page_in;
  page_in.chartjs = read_chartjs(chart_file);
  const auto journals = report::read_journals(o.journals);
  const auto problems = report::problem_names(journals);
  page_in.title = o.title.empty() ? report::default_title(journals) : o.title;
  page_in.generated = utc_now();
  page_in.nonce = report::new_nonce();
  page_in.over = o.over;
  const std::string page = report::html_page(journals, page_in);
  write_file(out, page);
  fmt::print("wrote {} ({} journal{}, {} problem{}, {:.0f} KiB; Chart.js {} from {})\n", out.string(), journals.size(),
             journals.size() == 1 ? "" : "s", problems.size(), problems.size() == 1 ? "" : "s",
             static_cast<double>(page.size()) / 1024.0, report::chartjs_version(page_in.chartjs), chart_file.string());
  std::fflush(stdout);
  return exit_ok;
}

}  // namespace

subcommand register_report(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "one self-contained HTML page (progress with seed bands, funnel, lineage, candidates) from journals");
  auto o = std::make_shared<report_options>();
  cmd->add_option("journals", o->journals,
                  "journals (tune --journal); several seeds of a strategy make a band, several problems a section each")
      ->required()
      ->type_name("JOURNAL");
  cmd->add_option("-o,--output", o->output, "the HTML file to write (with --markdown: the Markdown file, - for stdout)")
      ->required()
      ->type_name("FILE");
  cmd->add_flag("--markdown", o->markdown,
                "write the per-problem, per-shape tables (best kernel against the reference,\n"
                "PyTorch eager and torch.compile, % of the roofline floor) as Markdown");
  cmd->add_option("--over", o->over,
                  "what the progress curves are a speed-up over: reference (default), eager or\n"
                  "compile (PyTorch's, from the journals' PyTorch measurement)")
      ->type_name("BASELINE")
      ->check(CLI::IsMember({"reference", "eager", "compile"}));
  cmd->add_option("--chartjs", o->chartjs,
                  fmt::format("Chart.js UMD build to inline (default $KERNELBRAIN_CHARTJS, else {})", debian_chartjs))
      ->type_name("FILE");
  cmd->add_option("--title", o->title, "the page's title (default: from the problems)")->type_name("TEXT");
  cmd->footer(R"(Example:
  kernelbrain tune synthetic --budget 60evals --seed 1 --journal s1.jsonl
  kernelbrain tune synthetic --budget 60evals --seed 2 --journal s2.jsonl
  kernelbrain report s1.jsonl s2.jsonl -o report.html
The page needs no network: Chart.js (apt-get install libjs-chart.js) is inlined. See docs/report.md.)");
  return {cmd, [o] {
            // The command as given, for the Markdown's "made by" line: tables say how to make them again.
            std::string line = "kernelbrain report";
            for (auto const& j : o->journals) line += " " + j;
            line += " --markdown -o " + o->output;
            if (o->over != "reference") line += " --over " + o->over;
            o->command_line = line;
            return run_report(*o);
          }};
}

}  // namespace kernelbrain::cli
