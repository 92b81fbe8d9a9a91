// The prompt builder: what a model is told. A prompt is made from editable templates (text with
// {{placeholder}} fields) and sections the builder renders from the search's history: the problem
// (signature, semantics, tensors, shapes, tolerance, reference), the parent's source and launch plan
// with its per-shape times, share of the roofline floor and speedup, its static resources and the
// profiler's diagnosis, the chosen expert hint, the lineage's recent failures with their verdicts, and
// the answer-format rules of the backend. Deterministic: the same history gives the same prompt, byte
// for byte (no dates, no wall-clock times), which recorded answers and resumed exchanges rely on.
// The templates, their fields and how to edit them: docs/llm-prompts.md.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/backends/registry.hpp"
#include "kernelbrain/core/candidate.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/core/search_view.hpp"
#include "kernelbrain/core/verdict.hpp"
#include "kernelbrain/generate/llm/model_client.hpp"

namespace kernelbrain::llm {

/// The four templates. Fields: {{problem}} {{reference}} {{hint}} {{parent}} {{incumbent}} {{failures}}
/// {{answer_format}} {{backend}} {{language}}; a field whose section is empty renders as nothing.
struct prompt_templates {
  std::string system;   ///< the rules that hold for the whole search
  std::string explore;  ///< a new kernel, following a hint (coarse rounds)
  std::string mutate;   ///< improve a measured parent, given its numbers and diagnosis (fine rounds)
  std::string repair;   ///< fix a rejected kernel, given its verdict

  /// The shipped templates.
  [[nodiscard]] static prompt_templates defaults() {
    prompt_templates t;
    t.system =
        "You are an expert {{language}} performance engineer. Each answer is one complete, self-contained "
        "kernel for KernelBrain, an autotuner that compiles it, checks every output element against a trusted "
        "reference on fresh random and adversarial inputs (huge magnitudes, ties, signed zeros, odd sizes), "
        "and times it at several problem sizes. A wrong answer at any size is rejected, however fast.\n\n"
        "{{answer_format}}";
    t.explore =
        "# Task\n\nWrite a new, fast implementation of the problem below{{hint_clause}}. Correctness at every "
        "shape comes first; then speed at the benchmark shapes.\n\n{{problem}}{{reference}}{{hint}}{{incumbent}}"
        "{{failures}}";
    t.mutate =
        "# Task\n\nMake the kernel below faster. Its measurements and the profiler's diagnosis say where the time "
        "goes{{hint_task}}. Keep it correct at every shape.\n\n{{problem}}{{parent}}{{hint}}{{failures}}";
    t.repair =
        "# Task\n\nThe kernel below was rejected; the verdict says why. Fix it, keeping its approach, so that it "
        "compiles and is correct at every shape.\n\n{{problem}}{{parent}}{{failures}}";
    return t;
  }

  /// The shipped templates, with any of system.md, explore.md, mutate.md and repair.md found in `dir`
  /// in their place. Throws kernelbrain::error for an unreadable file, one over 64 KiB, and a field
  /// that is not one of the known ones (a typo would otherwise silently drop a section).
  [[nodiscard]] static prompt_templates from_directory(std::filesystem::path const& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      throw error("prompt templates: '" + dir.string() + "' is not a directory");
    prompt_templates t = defaults();
    const std::array<std::pair<char const*, std::string*>, 4> files{
        {{"system.md", &t.system}, {"explore.md", &t.explore}, {"mutate.md", &t.mutate}, {"repair.md", &t.repair}}};
    for (auto [name, slot] : files) {
      const auto p = dir / name;
      if (!std::filesystem::exists(p, ec)) continue;
      if (std::filesystem::file_size(p, ec) > 65536) throw error("prompt template '" + p.string() + "' is over 64 KiB");
      std::ifstream in(p, std::ios::binary);
      if (!in) throw error("prompt template '" + p.string() + "' cannot be read");
      std::ostringstream ss;
      ss << in.rdbuf();
      *slot = ss.str();
      if (auto bad = unknown_field(*slot); !bad.empty())
        throw error("prompt template '" + p.string() + "': unknown field {{" + bad +
                    "}}; known fields: " + known_fields_text());
    }
    return t;
  }

  /// Writes the shipped templates to `dir` (for editing); refuses to overwrite a file.
  static void write_defaults(std::filesystem::path const& dir) {
    std::filesystem::create_directories(dir);
    const auto t = defaults();
    const std::array<std::pair<char const*, std::string const*>, 4> files{
        {{"system.md", &t.system}, {"explore.md", &t.explore}, {"mutate.md", &t.mutate}, {"repair.md", &t.repair}}};
    for (auto [name, text] : files) {
      const auto p = dir / name;
      if (std::filesystem::exists(p)) throw error("'" + p.string() + "' exists; not overwritten");
      std::ofstream out(p, std::ios::binary);
      out << *text << '\n';
      if (!out) throw error("cannot write '" + p.string() + "'");
    }
  }

  [[nodiscard]] static std::vector<std::string_view> known_fields() {
    return {"problem",   "reference", "hint",          "hint_clause", "hint_task", "parent",
            "incumbent", "failures",  "answer_format", "backend",     "language"};
  }
  [[nodiscard]] static std::string known_fields_text() {
    std::string s;
    for (auto f : known_fields()) s += (s.empty() ? "" : ", ") + std::string(f);
    return s;
  }
  /// The first {{field}} of `text` that is not known ("" when all are).
  [[nodiscard]] static std::string unknown_field(std::string_view text) {
    for (std::size_t at = text.find("{{"); at != std::string_view::npos; at = text.find("{{", at + 2)) {
      const auto end = text.find("}}", at + 2);
      if (end == std::string_view::npos) return std::string(text.substr(at, 20));
      const auto name = text.substr(at + 2, end - at - 2);
      bool known = false;
      for (auto f : known_fields()) known = known || f == name;
      if (!known) return std::string(name);
    }
    return {};
  }
};

/// Replaces each {{field}} of `templ` by fields[field] ("" when absent).
[[nodiscard]] inline std::string render_template(std::string_view templ,
                                                 std::map<std::string, std::string, std::less<>> const& fields) {
  std::string out;
  out.reserve(templ.size() + 4096);
  std::size_t pos = 0;
  while (pos < templ.size()) {
    const auto at = templ.find("{{", pos);
    if (at == std::string_view::npos) break;
    const auto end = templ.find("}}", at + 2);
    if (end == std::string_view::npos) break;
    out.append(templ.substr(pos, at - pos));
    if (auto it = fields.find(templ.substr(at + 2, end - at - 2)); it != fields.end()) out += it->second;
    pos = end + 2;
  }
  out.append(templ.substr(pos));
  return out;
}

/// A rejected candidate of a lineage and why, for the {{failures}} section.
struct failure_note {
  candidate_id id;
  std::string origin;
  verdict why;
};

/// What one prompt is about.
struct prompt_subject {
  enum class kind { explore, mutate, repair } what = kind::explore;
  expert_hint const* hint = nullptr;            ///< explore, mutate: the hint to follow (null: none)
  candidate_record const* parent = nullptr;     ///< mutate: the measured parent; repair: the rejected one
  candidate_record const* incumbent = nullptr;  ///< explore: the best so far, shown for reference
  std::vector<failure_note> failures;           ///< recent failures of this lineage, newest last
  bool blind = false;   ///< no hint, no measurements, no diagnosis, no failures (the blind ablation)
  std::string no_hint;  ///< mutate without a hint: why, shown in the hint's place ("": nothing shown)
};

/// Builds prompts for one problem from templates and the search's history.
class prompt_builder {
 public:
  explicit prompt_builder(prompt_templates t = prompt_templates::defaults(), std::size_t max_failure_text = 1500)
      : t_(std::move(t)), max_failure_text_(max_failure_text) {}

  [[nodiscard]] prompt build(search_view const& v, prompt_subject const& s) const {
    auto const& p = v.problem();
    std::map<std::string, std::string, std::less<>> f;
    f["backend"] = p.backend;
    f["language"] = backends().traits_of(p).language;
    f["answer_format"] = answer_format(p);
    f["problem"] = problem_section(v);
    f["reference"] = reference_section(p);
    if (!s.blind && s.hint) {
      put_hint(f, *s.hint);
    } else if (!s.blind && !s.no_hint.empty()) {
      f["hint"] = "## Expert hint: none\n\n" + s.no_hint + "\n\n";
    }
    if (s.parent) f["parent"] = candidate_section(v, *s.parent, s.what == prompt_subject::kind::repair, s.blind);
    if (s.incumbent && !s.blind) f["incumbent"] = incumbent_section(v, *s.incumbent);
    if (!s.blind && !s.failures.empty()) f["failures"] = failures_section(s.failures);
    prompt out;
    out.system = render_template(t_.system, f);
    std::string const* templ = &t_.explore;
    if (s.what == prompt_subject::kind::mutate) templ = &t_.mutate;
    if (s.what == prompt_subject::kind::repair) templ = &t_.repair;
    out.user = render_template(*templ, f);
    return out;
  }

  /// A prompt like a search's first for `p`, built without a search (the start-up check sends one):
  /// the system prompt, and an explore prompt with the problem's text, its reference and its first
  /// hint (no measurements: there are none yet).
  [[nodiscard]] prompt sample(problem const& p) const {
    std::map<std::string, std::string, std::less<>> f;
    f["backend"] = p.backend;
    f["language"] = backends().traits_of(p).language;
    f["answer_format"] = answer_format(p);
    f["problem"] = "## Problem: " + p.name + "\n\n" +
                   (p.signature.empty() ? "" : "Signature: " + p.signature + "\n\n") +
                   (p.description.empty() ? "" : p.description + "\n\n");
    f["reference"] = reference_section(p);
    if (!p.catalogue.empty()) put_hint(f, p.catalogue.front());
    prompt out;
    out.system = render_template(t_.system, f);
    out.user = render_template(t_.explore, f);
    return out;
  }

  [[nodiscard]] prompt_templates const& templates() const noexcept { return t_; }

  /// The answer-format rules of a backend (the {{answer_format}} field).
  [[nodiscard]] static std::string answer_format(problem const& p) {
    const auto t = backends().traits_of(p);
    return t.answer_format ? t.answer_format(p) : std::string{};
  }

 private:
  /// The fields a hint fills: its section, the explore task's clause and the mutate task's.
  static void put_hint(std::map<std::string, std::string, std::less<>>& f, expert_hint const& h) {
    f["hint"] = "## Expert hint: " + h.name + "\n\n" + h.prose + "\n\n";
    f["hint_clause"] = ", following the expert hint '" + h.name + "'";
    f["hint_task"] = "; the expert hint says what to try";
  }
  static std::string num(double x, char const* fmt = "%.4g") {
    char b[64];
    std::snprintf(b, sizeof b, fmt, x);
    return b;
  }
  static std::string fenced(std::string_view lang, std::string_view text) {
    std::string s = "```" + std::string(lang) + "\n" + std::string(text);
    if (!s.empty() && s.back() != '\n') s += '\n';
    return s + "```\n\n";
  }

  static std::string problem_section(search_view const& v) {
    auto const& p = v.problem();
    std::string s = "## Problem: " + p.name + "\n\n";
    if (!p.signature.empty()) s += "Signature: " + p.signature + "\n\n";
    if (!p.description.empty()) s += p.description + "\n\n";
    auto tensors = [&](char const* what, std::vector<tensor_spec> const& ts) {
      for (auto const& t : ts) {
        s += std::string("- ") + what + " `" + t.name + "`: " + t.dtype + "[" + t.size + "]";
        if (std::string_view(what) == "input") s += ", " + t.distribution + " values";
        s += "\n";
      }
    };
    tensors("input", p.inputs);
    tensors("output", p.outputs);
    if (!p.dim_order.empty()) {
      s += "- dims, in this order:";
      for (auto const& d : p.dim_order) s += " " + d;
      s += "\n";
    }
    s += "- tolerance: |out - ref| <= " + num(p.tol.atol) + " + " + num(p.tol.rtol) + " * max|ref|\n\n";
    const bool wide =
        std::any_of(p.shapes.begin(), p.shapes.end(), [](shape const& sh) { return !is_timed_shape(sh); });
    s += "Shapes (correctness is checked at every one; the time is a weighted geometric mean over the benchmark "
         "tiers; " +
         std::string(wide ? "tier wide is checked, never timed: size no buffer for the timed shapes only; " : "") +
         "floor = the roofline lower bound " + ceilings(p.machine) + "):\n\n" +
         "| shape | dims | tier | weight | floor (us) |\n|---|---|---|---|---|\n";
    for (std::size_t i = 0; i < p.shapes.size(); ++i) {
      auto const& sh = p.shapes[i];
      std::string dims;
      for (auto const& [k, val] : sh.dims) dims += (dims.empty() ? "" : ", ") + k + "=" + std::to_string(val);
      const double floor = i < v.baseline().floor_seconds.size() ? v.baseline().floor_seconds[i] : 0.0;
      s += "| " + sh.name + " | " + dims + " | " + sh.tier + " | " + num(sh.weight) + " | " +
           (floor > 0 ? num(floor * 1e6) : std::string("-")) + " |\n";
    }
    return s + "\n";
  }

  /// The problem's roofline ceilings in words, so that a model can read "% of floor" (a host stand-in for a
  /// GPU problem carries a GPU's ceilings, and its CPU kernels sit at a few percent of them).
  static std::string ceilings(roofline const& m) {
    std::string s = "at the problem's ceilings of ";
    if (m.bytes_per_second > 0) s += num(m.bytes_per_second / 1e9, "%.0f") + " GB/s";
    if (m.bytes_per_second > 0 && m.flops_per_second > 0) s += " and ";
    if (m.flops_per_second > 0) s += num(m.flops_per_second / 1e9, "%.0f") + " GFLOP/s";
    return m.bytes_per_second > 0 || m.flops_per_second > 0 ? s : std::string("(no ceilings given: 0)");
  }

  static std::string reference_section(problem const& p) {
    if (p.reference_source.empty()) return {};
    std::string s = "## Reference (trusted, obviously correct, slow)\n\n";
    s += fenced(backends().traits_of(p).fence, p.reference_source);
    if (!p.reference_launch.empty()) s += "Its launch plan:\n\n" + fenced("json", p.reference_launch);
    return s;
  }

  /// Per-shape table of a candidate's best (highest-rung) passing measurement.
  static std::string measurement_section(search_view const& v, candidate_record const& r) {
    measurement const* m = nullptr;
    std::size_t rung = 0;
    for (std::size_t i = r.results.size(); i-- > 0;)
      if (r.results[i] && r.results[i]->result.passed()) {
        m = &*r.results[i];
        rung = i;
        break;
      }
    if (!m) return "Not measured yet.\n\n";
    auto const& p = v.problem();
    std::string s = "Measured at rung '" + (rung < v.rungs().size() ? v.rungs()[rung].name : std::string("?")) +
                    "':\n\n| shape | median (us) | % of floor | speedup vs reference baseline |\n|---|---|---|---|\n";
    for (auto const& t : m->timings) {
      const double med = t.stats.median;
      const double floor = t.shape < v.baseline().floor_seconds.size() ? v.baseline().floor_seconds[t.shape] : 0.0;
      const double base = t.shape < v.baseline().seconds.size() ? v.baseline().seconds[t.shape] : 0.0;
      s += "| " + (t.shape < p.shapes.size() ? p.shapes[t.shape].name : std::to_string(t.shape)) + " | " +
           num(med * 1e6) + " | " + (floor > 0 && med > 0 ? num(100.0 * floor / med, "%.1f") : std::string("-")) +
           " | " + (base > 0 && med > 0 ? num(base / med, "%.3g") + "x" : std::string("-")) + " |\n";
    }
    s += "\n";
    if (m->res &&
        (m->res->registers >= 0 || m->res->spill_bytes >= 0 || m->res->shared_bytes >= 0 || m->res->occupancy >= 0)) {
      auto const& res = *m->res;
      s += "Static resources: ";
      s += res.registers >= 0 ? std::to_string(res.registers) + " registers/thread" : std::string("registers ?");
      s += res.spill_bytes >= 0 ? ", " + std::to_string(res.spill_bytes) + " bytes spilled" : std::string();
      s += res.shared_bytes >= 0 ? ", " + std::to_string(res.shared_bytes) + " bytes static shared memory"
                                 : std::string();
      s += res.occupancy >= 0 ? ", theoretical occupancy " + num(100.0 * res.occupancy, "%.0f") + "%" : std::string();
      s += "\n\n";
    }
    if (!m->diagnosis.empty()) {
      s += "Profiler diagnosis:\n\n" + m->diagnosis + (m->diagnosis.back() == '\n' ? "\n" : "\n\n");
    } else if (auto const traits = backends().traits_of(p); !traits.profiles) {
      s += "Profiler diagnosis: none (the " + traits.name +
           " backend has no profiler; the per-shape times and the floors above are what there is).\n\n";
    } else {
      // The first rung that profiles (or the top rung), and whether this measurement is below it.
      std::size_t profiling = v.rungs().empty() ? 0 : v.rungs().size() - 1;
      for (std::size_t i = 0; i < v.rungs().size(); ++i)
        if (v.rungs()[i].profile) {
          profiling = i;
          break;
        }
      s += rung < profiling && profiling < v.rungs().size()
               ? "Profiler diagnosis: none yet (the profiler runs on candidates promoted to rung '" +
                     v.rungs()[profiling].name + "').\n\n"
               : std::string("Profiler diagnosis: none for this kernel (the profiler gave no finding).\n\n");
    }
    return s;
  }

  std::string candidate_section(search_view const& v, candidate_record const& r, bool rejected, bool blind) const {
    std::string s = rejected ? "## The rejected kernel\n\n" : "## The kernel to improve\n\n";
    s += fenced(backends().traits_of(v.problem()).fence, r.cand.source);
    if (!r.cand.launch.empty()) s += "Its launch plan:\n\n" + fenced("json", r.cand.launch);
    if (rejected) {
      s += "Verdict: rejected at stage '" + std::string(to_string(r.last.where)) +
           "': " + clip(r.last.detail, max_failure_text_) + "\n\n";
    } else if (!blind) {
      s += measurement_section(v, r);
    }
    return s;
  }

  static std::string incumbent_section(search_view const& v, candidate_record const& r) {
    std::string s = "## The best kernel measured so far (for reference; a different approach is welcome)\n\n";
    s += fenced(backends().traits_of(v.problem()).fence, r.cand.source);
    if (!r.cand.launch.empty()) s += "Its launch plan:\n\n" + fenced("json", r.cand.launch);
    return s + measurement_section(v, r);
  }

  std::string failures_section(std::vector<failure_note> const& fs) const {
    std::string s = "## Recent attempts from this lineage that were rejected (avoid their mistakes)\n\n";
    for (auto const& f : fs)
      s += "- " + f.id.str() + " (" + f.origin + "), stage '" + std::string(to_string(f.why.where)) +
           "': " + clip(f.why.detail, max_failure_text_) + "\n";
    return s + "\n";
  }

  static std::string clip(std::string const& text, std::size_t n) {
    if (text.size() <= n) return text;
    return text.substr(0, n) + " [... " + std::to_string(text.size() - n) + " more bytes]";
  }

  prompt_templates t_;
  std::size_t max_failure_text_;
};

}  // namespace kernelbrain::llm
