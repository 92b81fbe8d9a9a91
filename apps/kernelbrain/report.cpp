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
#include <kernelbrain/io/problem_loader.hpp>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include "commands.hpp"
#include "report_data.hpp"
#include "report_page.hpp"
#include "timestamps.hpp"

namespace kernelbrain::cli {

namespace {

namespace fs = std::filesystem;

struct report_options {
  std::vector<std::string> journals;
  std::string output;
  std::string chartjs;  ///< "" = $KERNELBRAIN_CHARTJS, else Debian's
  std::string title;    ///< "" = from the problems
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

/// "3.9.1" from the banner comment ("Chart.js v3.9.1"), or "unknown".
std::string chartjs_version(std::string const& text) {
  static const std::regex banner(R"(Chart\.js v([0-9][0-9A-Za-z.\-]*))");
  std::smatch m;
  const std::string head = text.substr(0, 2000);
  return std::regex_search(head, m, banner) ? m[1].str() : "unknown";
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

/// The shape names of the problem a journal's header names (journals keep shape indices only), looked
/// up as tune looks up a built-in problem, with the backend the evaluator fingerprint starts with. Empty
/// where it is not found, does not load, or has another number of shapes than the journal's baseline: a
/// name is only a label, and "#i" is shown instead.
std::vector<std::string> shape_names(journal_contents const& j) {
  auto const& fp = j.header.evaluator;
  const auto backend = backends().for_fingerprint(fp);
  if (!backend || !backend->problem_files || !j.reference) return {};
  try {
    const auto prob = load_problem(problem_directory(j.header.problem, backend->name));
    if (prob.shapes.size() != j.reference->seconds.size()) return {};
    std::vector<std::string> names;
    for (auto const& s : prob.shapes) names.push_back(s.name);
    return names;
  } catch (std::exception const&) {
    return {};
  }
}

std::vector<report::loaded_journal> read_journals(std::vector<std::string> const& files) {
  std::vector<report::loaded_journal> out;
  std::set<fs::path> seen;
  for (auto const& f : files) {
    const fs::path p(f);
    std::error_code ec;
    if (fs::is_directory(p, ec))
      throw usage_error(fmt::format("journal {} is a folder: give its journal.jsonl", quoted(p)));
    const auto canonical = fs::weakly_canonical(p, ec);
    if (!ec && !seen.insert(canonical).second)
      throw usage_error(fmt::format("journal {} is given twice: each journal is one seed of a run", quoted(p)));
    auto contents = read_journal(p);  // throws kernelbrain::error naming the file (and line)
    if (!contents.has_header())
      throw usage_error(fmt::format(
          "{} is not a KernelBrain journal: it has no header line (an empty file, or a run killed before it "
          "wrote one)",
          quoted(p)));
    auto names = shape_names(contents);
    out.push_back({p, std::move(contents), std::move(names)});
  }
  return out;
}

/// JSON inside <script type="application/json">: nothing in it may end the element or open a comment,
/// and U+2028/U+2029 are escaped for older JavaScript parsers. Only strings can hold these characters,
/// where \uXXXX means the same.
std::string json_for_script(std::string const& json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

/// A script's text inside <script>: "</script" (any case) would end the element and "<!--" would
/// change how the HTML parser finds its end. "<\/" and "<\!" mean the same in JavaScript strings and
/// regular expressions, where a minified library has them.
std::string script_text(std::string const& js) {
  std::string out;
  out.reserve(js.size());
  for (std::size_t i = 0; i < js.size(); ++i) {
    if (js[i] == '<' && i + 1 < js.size()) {
      const std::string_view rest = std::string_view(js).substr(i + 1, 7);
      std::string lower(rest);
      for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower.starts_with("/script")) {
        out += "<\\/";
        ++i;  // the '/' is written
        continue;
      }
      if (lower.starts_with("!--")) {
        out += "<\\!";
        ++i;
        continue;
      }
    }
    out += js[i];
  }
  return out;
}

std::string html_text(std::string_view s) {
  std::string out;
  for (char c : s) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

/// The template with each @@KB_NAME@@ replaced by its value. The values are not scanned again.
std::string fill(std::string_view page, std::map<std::string, std::string> const& values) {
  std::string out;
  out.reserve(page.size() + 4096);
  std::size_t at = 0;
  while (true) {
    const auto open = page.find("@@KB_", at);
    if (open == std::string_view::npos) break;
    const auto close = page.find("@@", open + 5);
    if (close == std::string_view::npos) break;
    const std::string name(page.substr(open + 5, close - open - 5));
    auto it = values.find(name);
    if (it == values.end()) throw error("report page template: unknown placeholder " + name);  // a bug
    out.append(page.substr(at, open - at));
    out += it->second;
    at = close + 2;
  }
  out.append(page.substr(at));
  return out;
}

/// 128 random bits for the Content-Security-Policy nonce: only the page's own scripts carry it.
std::string nonce() {
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 4; ++i) s += fmt::format("{:08x}", rd());
  return s;
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
  check_output(out);
  const auto chart_file = chartjs_path(o);
  const std::string chartjs = read_chartjs(chart_file);
  const auto journals = read_journals(o.journals);

  std::vector<std::string> problems;
  for (auto const& j : journals)
    if (std::find(problems.begin(), problems.end(), j.contents.header.problem) == problems.end())
      problems.push_back(j.contents.header.problem);
  std::string title = o.title;
  if (title.empty()) {
    title = "KernelBrain report: ";
    for (std::size_t i = 0; i < problems.size(); ++i) title += (i ? ", " : "") + problems[i];
  }
  const std::string version = chartjs_version(chartjs);
  const auto data = report::report_data(journals, title, utc_now(), version);
  const std::string page = fill(report::page_template, {{"TITLE", html_text(title)},
                                                        {"NONCE", nonce()},
                                                        {"CHARTJS_VERSION", html_text(version)},
                                                        {"CHARTJS", script_text(chartjs)},
                                                        {"DATA", json_for_script(boost::json::serialize(data))}});
  write_file(out, page);
  fmt::print("wrote {} ({} journal{}, {} problem{}, {:.0f} KiB; Chart.js {} from {})\n", out.string(), journals.size(),
             journals.size() == 1 ? "" : "s", problems.size(), problems.size() == 1 ? "" : "s",
             static_cast<double>(page.size()) / 1024.0, version, chart_file.string());
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
  cmd->add_option("-o,--output", o->output, "the HTML file to write")->required()->type_name("FILE");
  cmd->add_option("--chartjs", o->chartjs,
                  fmt::format("Chart.js UMD build to inline (default $KERNELBRAIN_CHARTJS, else {})", debian_chartjs))
      ->type_name("FILE");
  cmd->add_option("--title", o->title, "the page's title (default: from the problems)")->type_name("TEXT");
  cmd->footer(R"(Example:
  kernelbrain tune synthetic --budget 60evals --seed 1 --journal s1.jsonl
  kernelbrain tune synthetic --budget 60evals --seed 2 --journal s2.jsonl
  kernelbrain report s1.jsonl s2.jsonl -o report.html
The page needs no network: Chart.js (apt-get install libjs-chart.js) is inlined. See docs/report.md.)");
  return {cmd, [o] { return run_report(*o); }};
}

}  // namespace kernelbrain::cli
