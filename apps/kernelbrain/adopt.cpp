// kernelbrain adopt: a kernel a model wrote during a search becomes a fixed template of the problem's
// catalogue, with where it came from. The journal says which candidates a model wrote (origin "llm..."),
// what they scored at the top rung and which exchange produced them; adopt writes the candidate's source as
// DIR/templates/<name>.cu (.cpp for host problems), appends a catalogue entry with a "provenance" object to
// DIR/problem.json (inserted into the file's text, so that the rest of it, comments included, is kept byte
// for byte), and loads the problem again to prove the entry parses and instantiates (docs/llm.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <kernelbrain/core/template_space.hpp>
#include <kernelbrain/io/journal.hpp>
#include <kernelbrain/io/problem_loader.hpp>
#include <kernelbrain/report/data.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include "commands.hpp"
#include "validators.hpp"

namespace kernelbrain::cli {

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr char const* adopt_footer =
    R"(JOURNAL is a journal of a search with a model (tune --journal, docs/llm.md). Without --candidate, adopt takes
the model-written candidate (origin llm...) with the best score measured at the top rung of the journal's
ladder; with --candidate, that one, which must be model-written and measured at the top rung.

Writes DIR/templates/NAME.cu (.cpp for a host problem: the candidate's source, unchanged) and appends to
DIR/problem.json's catalogue an entry NAME with its launch plan and a "provenance" object (journal,
candidate, origin, model, prompt key, score, dates). A fixed kernel: the entry has no parameters. The rest
of problem.json is kept as it is. Never overwrites a file or an entry; after writing, the problem is loaded
again and the entry instantiated, and problem.json is restored if that fails.

Examples:
  kernelbrain adopt run.jsonl --problem examples/cuda_problems/softmax --dry-run
  kernelbrain adopt run.jsonl --problem examples/cuda_problems/softmax --candidate 3f2a9c0e1b7d4a65 --name fused-row)";

struct adopt_options {
  std::string journal;
  std::string problem;
  std::string candidate;  ///< "" = the best model-written one at the top rung
  std::string name;       ///< "" = "llm-" + the id's first 8 hex digits
  bool dry_run = false;
};

std::string quoted(fs::path const& p) { return "'" + p.string() + "'"; }

/// Today in UTC: "2026-12-08".
std::string utc_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 16> buf{};
  const auto n = std::strftime(buf.data(), buf.size(), "%Y-%m-%d", &tm);
  return std::string(buf.data(), n);
}

std::optional<std::string> read_text(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return text;
}

/// Replaces `p` with `text` through a file beside it and a rename, keeping its permissions.
void replace_file(fs::path const& p, std::string const& text) {
  const fs::path tmp = p.string() + ".adopt-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw error(fmt::format("cannot write {}", quoted(tmp)));
  }
  std::error_code ec;
  fs::permissions(tmp, fs::status(p, ec).permissions(), ec);
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw error(fmt::format("cannot replace {}: {}", quoted(p), ec.message()));
  }
}

// ---- the journal's candidate ---------------------------------------------------------------------

/// What adopt takes out of the journal about one candidate.
struct adoptee {
  candidate cand;
  score best;                               ///< its best measured score at the top rung
  model_exchange const* made_by = nullptr;  ///< the exchange whose reply became it, if the journal has it
};

bool model_written(candidate const& c) { return c.origin.starts_with("llm"); }

/// "gpt-5"; "exchange (answered outside the tool)" for the exchange client, which names no model.
std::string model_name(model_exchange const* x) {
  if (x == nullptr) return "unknown (the journal records no exchange that produced it)";
  if (x->model.empty()) return "unknown (its exchange names no model)";
  if (x->model == "exchange") return "exchange (answered outside the tool)";
  return x->model;
}

adoptee pick(journal_contents const& jc, fs::path const& file, std::string const& wanted) {
  const auto rungs = report::rung_names(jc.header.ladder);
  if (rungs.empty()) throw error(fmt::format("journal {} names no rung in its header's ladder", quoted(file)));
  const std::size_t top = rungs.size() - 1;
  const std::string top_text = fmt::format("the top rung ('{}', rung {} of {})", rungs[top], top + 1, rungs.size());

  std::vector<candidate const*> proposed;  // the content of each candidate, in the order first proposed
  std::map<candidate_id, candidate const*> by_id;
  for (auto const& je : jc.events)
    if (je.cand && by_id.try_emplace(je.cand->id, &*je.cand).second) proposed.push_back(&*je.cand);
  auto content = [&](candidate_id id) -> candidate const* {
    auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };
  std::map<candidate_id, score> top_scores;  // each candidate's best measured score at the top rung
  for (auto const& je : jc.events)
    if (je.e.kind == event_kind::measured && je.e.rung == top && je.e.value)
      if (auto [it, fresh] = top_scores.try_emplace(je.e.id, *je.e.value);
          !fresh && je.e.value->value > it->second.value)
        it->second = *je.e.value;
  auto best_at_top = [&](candidate_id id) -> std::optional<score> {
    if (auto it = top_scores.find(id); it != top_scores.end()) return it->second;
    return std::nullopt;
  };

  std::optional<adoptee> chosen;
  if (!wanted.empty()) {
    std::uint64_t raw = 0;
    if (!from_hex(wanted, raw))
      throw usage_error(fmt::format(
          "--candidate '{}' is not a candidate id (16 lower-case hex digits, as the journal prints it)", wanted));
    auto const* c = content(candidate_id{raw});
    if (c == nullptr) throw usage_error(fmt::format("journal {} proposes no candidate {}", quoted(file), wanted));
    if (!model_written(*c))
      throw usage_error(
          fmt::format("candidate {} was not written by a model (origin '{}'): adopt takes only "
                      "kernels a model wrote (origin llm...)",
                      wanted, c->origin));
    const auto s = best_at_top(c->id);
    if (!s)
      throw usage_error(
          fmt::format("candidate {} was never measured at {} of journal {}: only a kernel confirmed "
                      "there is adopted",
                      wanted, top_text, quoted(file)));
    chosen = adoptee{*c, *s, nullptr};
  } else {
    for (auto const* c : proposed) {
      if (!model_written(*c)) continue;
      const auto s = best_at_top(c->id);
      if (s && (!chosen || s->value > chosen->best.value)) chosen = adoptee{*c, *s, nullptr};
    }
    if (!chosen)
      throw usage_error(
          fmt::format("journal {} has no model-written candidate (origin llm...) measured at {}: "
                      "nothing to adopt",
                      quoted(file), top_text));
  }
  for (auto const& je : jc.exchanges)
    if (je.x.candidate && *je.x.candidate == chosen->cand.id) {
      chosen->made_by = &je.x;
      break;
    }
  return *chosen;
}

// ---- the catalogue entry as text -----------------------------------------------------------------

/// A JSON value written one member or element a line, `unit` more indentation per level than `indent`
/// (the first line unindented: it follows what is already on the line); empty containers as {} and [].
void pretty(std::string& out, json::value const& v, std::string const& indent, std::string const& unit,
            std::string const& nl) {
  if (v.is_object() && !v.get_object().empty()) {
    out += '{';
    bool first = true;
    for (auto const& kv : v.get_object()) {
      out += (first ? "" : ",") + nl + indent + unit + json::serialize(json::string(kv.key())) + ": ";
      pretty(out, kv.value(), indent + unit, unit, nl);
      first = false;
    }
    out += nl + indent + '}';
  } else if (v.is_array() && !v.get_array().empty()) {
    out += '[';
    bool first = true;
    for (auto const& e : v.get_array()) {
      out += (first ? "" : ",") + nl + indent + unit;
      pretty(out, e, indent + unit, unit, nl);
      first = false;
    }
    out += nl + indent + ']';
  } else if (v.is_double()) {
    out += std::isfinite(v.get_double()) ? fmt::format("{}", v.get_double()) : std::string("null");
  } else {
    out += json::serialize(v);
  }
}

/// A scanner of problem.json's text (JSON with comments, as the loader reads it) that finds where a new
/// catalogue entry goes, so that the rest of the text is kept as it is.
class text_scanner {
 public:
  explicit text_scanner(std::string const& text) : t_(text) {}

  /// Past white space and comments from `i`.
  [[nodiscard]] std::size_t skip(std::size_t i) const {
    while (i < t_.size()) {
      const char c = t_[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
      } else if (c == '/' && i + 1 < t_.size() && t_[i + 1] == '/') {
        i = t_.find('\n', i);
        if (i == std::string::npos) return t_.size();
      } else if (c == '/' && i + 1 < t_.size() && t_[i + 1] == '*') {
        i = t_.find("*/", i + 2);
        if (i == std::string::npos) return t_.size();
        i += 2;
      } else {
        break;
      }
    }
    return i;
  }

  /// Past the string that starts at `i` (a '"').
  [[nodiscard]] std::size_t string_end(std::size_t i) const {
    for (++i; i < t_.size(); ++i) {
      if (t_[i] == '\\')
        ++i;
      else if (t_[i] == '"')
        return i + 1;
    }
    fail("a string is not closed");
  }

  /// Past the value that starts at `i`.
  [[nodiscard]] std::size_t value_end(std::size_t i) const {
    if (i >= t_.size()) fail("a value is missing");
    if (t_[i] == '"') return string_end(i);
    if (t_[i] != '{' && t_[i] != '[') {
      while (i < t_.size() && std::string_view(",]} \t\r\n/").find(t_[i]) == std::string_view::npos) ++i;
      return i;
    }
    int depth = 0;
    while (i < t_.size()) {
      i = skip(i);
      if (i >= t_.size()) break;
      const char c = t_[i];
      if (c == '"') {
        i = string_end(i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++i;
      if (depth == 0) return i;
    }
    fail("an object or array is not closed");
  }

  [[nodiscard]] char at(std::size_t i) const {
    if (i >= t_.size()) fail("it ends early");
    return t_[i];
  }

  /// The white space that starts the line `i` is on, when only white space is before `i` on it.
  [[nodiscard]] std::optional<std::string> line_indent(std::size_t i) const {
    const auto start = t_.rfind('\n', i == 0 ? 0 : i - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    const auto lead = t_.substr(from, i - from);
    if (lead.find_first_not_of(" \t") != std::string::npos) return std::nullopt;
    return lead;
  }

  [[noreturn]] static void fail(std::string const& why) {
    throw error("problem.json's text could not be scanned for its catalogue (" + why + ")");
  }

 private:
  std::string const& t_;
};

/// problem.json's text with `entry` appended to its catalogue (one made if it has none).
std::string with_entry(std::string const& text, json::object const& entry) {
  const text_scanner s(text);
  const std::string nl = text.find("\r\n") != std::string::npos ? "\r\n" : "\n";
  std::size_t i = s.skip(0);
  if (s.at(i) != '{') text_scanner::fail("the top level is not an object");
  i = s.skip(i + 1);
  std::string unit = " ";  // one level of indentation: the first key's, else one space
  if (auto lead = s.line_indent(i); lead && !lead->empty()) unit = *lead;
  std::size_t last_end = i;  // past the last top-level value
  std::optional<std::pair<std::size_t, std::size_t>> catalogue;
  while (s.at(i) != '}') {
    if (s.at(i) != '"') text_scanner::fail("a key is not a string");
    const auto key_end = s.string_end(i);
    const bool is_catalogue = text.compare(i, key_end - i, "\"catalogue\"") == 0;
    i = s.skip(key_end);
    if (s.at(i) != ':') text_scanner::fail("a key has no ':'");
    const auto value = s.skip(i + 1);
    last_end = s.value_end(value);
    if (is_catalogue) catalogue.emplace(value, last_end);
    i = s.skip(last_end);
    if (s.at(i) == ',') i = s.skip(i + 1);
  }

  std::string out;
  if (!catalogue) {
    std::string entry_text;
    pretty(entry_text, entry, unit + unit, unit, nl);
    out = text.substr(0, last_end) + "," + nl + unit + "\"catalogue\": [" + nl + unit + unit + entry_text + nl + unit +
          "]" + text.substr(last_end);
    return out;
  }
  const auto [open, close] = *catalogue;
  if (text[open] != '[') text_scanner::fail("\"catalogue\" is not an array");
  const std::string array_indent = s.line_indent(open).value_or(unit);
  std::size_t j = s.skip(open + 1);
  if (text[j] == ']') {  // an empty catalogue: the array written anew
    std::string entry_text;
    pretty(entry_text, entry, array_indent + unit, unit, nl);
    return text.substr(0, open) + "[" + nl + array_indent + unit + entry_text + nl + array_indent + "]" +
           text.substr(close);
  }
  const std::string entry_indent = s.line_indent(j).value_or(array_indent + unit);
  std::size_t last_element_end = j;
  while (j < close - 1) {
    last_element_end = s.value_end(j);
    j = s.skip(last_element_end);
    if (text[j] == ',') j = s.skip(j + 1);
    if (text[j] == ']') break;
  }
  std::string entry_text;
  pretty(entry_text, entry, entry_indent, unit, nl);
  return text.substr(0, last_element_end) + "," + nl + entry_indent + entry_text + text.substr(last_element_end);
}

json::value parse_with_comments(std::string const& text, fs::path const& file) {
  json::parse_options opts;
  opts.allow_comments = true;
  std::error_code ec;
  auto v = json::parse(text, ec, {}, opts);
  if (ec) throw error(fmt::format("{} is not valid JSON: {}", quoted(file), ec.message()));
  return v;
}

/// Placeholder-free text: a ${...} in the source or plan would be read as a template parameter.
void check_no_placeholders(std::string const& text, std::string_view what, candidate const& c) {
  if (const auto at = text.find("${"); at != std::string::npos) {
    const auto close = text.find('}', at);
    throw usage_error(fmt::format(
        "candidate {}'s {} holds '{}', which a catalogue template reads as a parameter: it cannot be adopted "
        "as a fixed kernel",
        c.id.str(), what, text.substr(at, close == std::string::npos ? 2 : close - at + 1)));
  }
}

bool valid_name(std::string const& name) {
  if (name.empty() || name.front() == '.' || name.front() == '-') return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '_' || ch == '.')) return false;
  return true;
}

/// The catalogue entry the adopted kernel becomes.
json::object make_entry(adoptee const& a, std::string const& name, std::string const& template_path,
                        journal_contents const& jc, std::string const& journal_arg, std::string const& top_rung) {
  const std::string model = model_name(a.made_by);
  json::object prov;
  prov["journal"] = journal_arg;
  prov["candidate"] = a.cand.id.str();
  prov["origin"] = a.cand.origin;
  prov["model"] = model;
  if (a.made_by) prov["prompt_key"] = a.made_by->key;
  json::object sc;
  sc["rung"] = top_rung;
  sc["speedup"] = a.best.speedup;
  sc["value"] = a.best.value;
  prov["score"] = std::move(sc);
  prov["date"] = jc.date;
  prov["adopted"] = utc_today();

  json::object e;
  e["name"] = name;
  e["prose"] = fmt::format(
      "A fixed kernel written by a model ({}; origin {}) in a search of {} (journal {}, candidate {}): measured "
      "at {:.3g}x the reference's speed at the top rung ('{}'). Adopted as is with kernelbrain adopt.",
      model, a.cand.origin, jc.header.problem, fs::path(journal_arg).filename().string(), a.cand.id.str(),
      a.best.speedup, top_rung);
  e["template"] = template_path;
  if (!a.cand.launch.empty()) {
    // A CUDA launch plan is JSON text: kept as JSON, like the catalogue's own plans; other plans as text.
    std::error_code ec;
    auto plan = json::parse(a.cand.launch, ec);
    if (!ec && (plan.is_object() || plan.is_array()))
      e["launch"] = std::move(plan);
    else
      e["launch"] = a.cand.launch;
  }
  e["provenance"] = std::move(prov);
  return e;
}

/// Loads the problem again and instantiates the new entry's one point; "" when all is well, else why not.
std::string verify(fs::path const& dir, std::string const& name, candidate const& c) {
  try {
    const auto prob = load_problem(dir);
    auto const* h = find_hint(prob, name);
    if (h == nullptr) return "the reloaded problem has no catalogue entry '" + name + "'";
    if (!h->templ) return "the entry '" + name + "' carries no template";
    if (h->templ->space.cardinality() != 1 || !h->templ->space.params.empty())
      return "the entry '" + name + "' is not a single point";
    if (h->provenance.empty()) return "the entry '" + name + "' kept no provenance";
    const auto k = instantiate(*h, h->templ->space.at(0), "adopted");
    if (k.source != c.source) return "the entry's kernel source differs from the candidate's";
    if (c.launch.empty() != k.launch.empty()) return "the entry's launch plan differs from the candidate's";
    if (!c.launch.empty() && k.launch != c.launch) {
      std::error_code e1, e2;
      const auto a = json::parse(c.launch, e1), b = json::parse(k.launch, e2);
      if (e1 || e2 || a != b) return "the entry's launch plan differs from the candidate's";
    }
  } catch (std::exception const& e) {
    return e.what();
  }
  return {};
}

int run_adopt(adopt_options const& o) {
  // The journal.
  const fs::path journal(o.journal);
  std::error_code ec;
  if (!fs::exists(journal, ec)) throw usage_error(fmt::format("journal {} not found", quoted(journal)));
  if (!fs::is_regular_file(journal, ec)) throw usage_error(fmt::format("journal {} is not a file", quoted(journal)));
  if (!std::ifstream(journal)) throw usage_error(fmt::format("journal {} cannot be read", quoted(journal)));
  const auto jc = read_journal(journal);
  if (!jc.has_header())
    throw usage_error(fmt::format("{} has no header line: not a KernelBrain journal", quoted(journal)));

  // The problem directory.
  const fs::path dir(o.problem);
  const fs::path problem_file = dir / problem_file_name;
  if (!fs::is_directory(dir, ec)) throw usage_error(fmt::format("problem directory {} not found", quoted(dir)));
  if (!fs::is_regular_file(problem_file, ec))
    throw usage_error(fmt::format("{} holds no {}: --problem names a problem directory", quoted(dir),
                                  std::string(problem_file_name)));
  const auto original = read_text(problem_file);
  if (!original) throw usage_error(fmt::format("{} cannot be read", quoted(problem_file)));
  const auto prob = load_problem(dir);
  if (prob.name != jc.header.problem)
    throw usage_error(fmt::format("journal {} is a search of problem '{}', but {} is problem '{}'", quoted(journal),
                                  jc.header.problem, quoted(problem_file), prob.name));

  // The candidate and what it becomes.
  const auto a = pick(jc, journal, o.candidate);
  check_no_placeholders(a.cand.source, "source", a.cand);
  check_no_placeholders(a.cand.launch, "launch plan", a.cand);
  if (a.cand.source.empty()) throw usage_error(fmt::format("candidate {} has no source", a.cand.id.str()));
  const std::string name = o.name.empty() ? "llm-" + a.cand.id.str().substr(0, 8) : o.name;
  if (!valid_name(name))
    throw usage_error(
        fmt::format("--name '{}': use letters, digits, '-', '_' and '.' (it names the template file too)", name));
  if (find_hint(prob, name) != nullptr)
    throw usage_error(
        fmt::format("problem '{}' already has a catalogue entry '{}' (adopted before?): choose "
                    "another name with --name",
                    prob.name, name));
  const std::string template_path = "templates/" + name + (prob.backend == "host" ? ".cpp" : ".cu");
  const fs::path template_file = dir / template_path;
  if (fs::exists(template_file, ec) || fs::is_symlink(template_file, ec))
    throw usage_error(fmt::format("{} exists: adopt never overwrites a file; choose another name with --name",
                                  quoted(template_file)));

  const auto rungs = report::rung_names(jc.header.ladder);
  const auto entry = make_entry(a, name, template_path, jc, o.journal, rungs.back());
  const std::string updated = with_entry(*original, entry);
  // What was inserted must be exactly the entry, and nothing else changed.
  {
    auto expected = parse_with_comments(*original, problem_file);
    auto& top = expected.as_object();
    if (auto* cat = top.if_contains("catalogue"); cat != nullptr && cat->is_array())
      cat->get_array().push_back(entry);
    else
      top["catalogue"] = json::array{entry};
    if (parse_with_comments(updated, problem_file) != expected)
      throw error(fmt::format("adopt could not insert the entry into {}'s text: add it by hand", quoted(problem_file)));
  }

  const std::string speed = fmt::format("{:.3g}x at the top rung ('{}')", a.best.speedup, rungs.back());
  if (o.dry_run) {
    fmt::print("would adopt candidate {} ({}, {}) of journal {} as '{}': {}\n", a.cand.id.str(), a.cand.origin,
               model_name(a.made_by), quoted(journal), name, speed);
    fmt::print("would write {} ({} bytes):\n{}{}", quoted(template_file), a.cand.source.size(), a.cand.source,
               a.cand.source.ends_with('\n') ? "" : "\n");
    std::string entry_text;
    pretty(entry_text, entry, "", "  ", "\n");
    fmt::print("would append to the catalogue of {}:\n{}\n(dry run: nothing written)\n", quoted(problem_file),
               entry_text);
    return exit_ok;
  }

  // Write: the template (never over a file), then problem.json.
  const fs::path templates = template_file.parent_path();
  const bool made_folder = !fs::exists(templates, ec);
  if (made_folder && !fs::create_directories(templates, ec))
    throw error(fmt::format("cannot create {}: {}", quoted(templates), ec.message()));
  {
    std::FILE* f = std::fopen(template_file.c_str(), "wbx");  // x: fails if the file appeared meanwhile
    if (f == nullptr) throw error(fmt::format("cannot create {}", quoted(template_file)));
    const bool ok = std::fwrite(a.cand.source.data(), 1, a.cand.source.size(), f) == a.cand.source.size();
    if (std::fclose(f) != 0 || !ok) {
      fs::remove(template_file, ec);
      throw error(fmt::format("cannot write {}", quoted(template_file)));
    }
  }
  auto undo = [&] {
    std::error_code ignored;
    fs::remove(template_file, ignored);
    if (made_folder) fs::remove(templates, ignored);
  };
  try {
    replace_file(problem_file, updated);
  } catch (...) {
    undo();
    throw;
  }
  if (const auto why = verify(dir, name, a.cand); !why.empty()) {
    replace_file(problem_file, *original);
    undo();
    std::fflush(stdout);
    fmt::print(stderr, "kernelbrain: error: the adopted entry '{}' does not load ({}): {} restored, {} removed\n", name,
               why, quoted(problem_file), quoted(template_file));
    return exit_internal;
  }
  fmt::print("adopted candidate {} ({}, {}) of journal {} as '{}': {}\n", a.cand.id.str(), a.cand.origin,
             model_name(a.made_by), quoted(journal), name, speed);
  fmt::print("  wrote {} ({} bytes)\n", quoted(template_file), a.cand.source.size());
  fmt::print("  appended catalogue entry '{}' to {}; the problem loads with it (one point)\n", name,
             quoted(problem_file));
  return exit_ok;
}

}  // namespace

subcommand register_adopt(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "adopt",
      "make a model-written kernel of a journal a fixed template of a problem's catalogue, with its provenance");
  cmd->footer(adopt_footer);
  auto o = std::make_shared<adopt_options>();
  cmd->add_option("journal", o->journal, "a journal of a search with a model (tune --journal)")
      ->required()
      ->check(not_empty("a journal"))
      ->type_name("JOURNAL");
  cmd->add_option("--problem", o->problem, "the problem directory to add the kernel to (its problem.json)")
      ->required()
      ->check(not_empty("a problem directory"))
      ->type_name("DIR");
  cmd->add_option("--candidate", o->candidate,
                  "the candidate's id, 16 hex digits as the journal prints it (default: the best model-written one "
                  "at the top rung)")
      ->check(not_empty("a candidate id"))
      ->type_name("ID");
  cmd->add_option("--name", o->name, "the catalogue entry's and template's name (default: llm-<first 8 hex of the id>)")
      ->check(not_empty("a name"))
      ->type_name("NAME");
  cmd->add_flag("--dry-run", o->dry_run, "print what would be written and change nothing");
  return {cmd, [o] { return run_adopt(*o); }};
}

}  // namespace kernelbrain::cli
