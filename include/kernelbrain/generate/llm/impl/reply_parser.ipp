// Bodies of kernelbrain/generate/llm/reply_parser.hpp: the parse itself, from the reply's text to a
// candidate, using the parts in reply/.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/generate/llm/reply/code_scan.hpp"
#include "kernelbrain/generate/llm/reply/fences.hpp"
#include "kernelbrain/generate/llm/reply/plan_text.hpp"
#include "kernelbrain/generate/llm/reply/text.hpp"
#include "kernelbrain/generate/llm/reply_parser.hpp"

namespace kernelbrain::llm {

KERNELBRAIN_DECL reply_expectations expectations_for(backend_traits const& t) {
  reply_expectations e;
  e.launch_plan = t.launch_plan;
  e.plan_required = t.launch_plan;
  e.language = t.language;
  return e;
}

KERNELBRAIN_DECL verdict parsed_reply::to_verdict() const {
  switch (status) {
    case reply_status::ok:
      return verdict::pass();
    case reply_status::too_large:
      return verdict::reject(stage::policy, "reply: " + message);
    case reply_status::truncated:
      return verdict::reject(stage::compile, "reply: " + message);
    case reply_status::no_code:
    case reply_status::ambiguous:
    case reply_status::missing_plan:
      break;
  }
  return verdict::reject(stage::signature, "reply: " + message);
}

namespace reply_detail {

[[nodiscard]] inline bool starts_code(std::string_view line) {
  const std::string_view t = trim(line);
  for (std::string_view k : {"#", "//", "/*", "extern", "__global__", "__device__", "template", "namespace", "static",
                             "constexpr", "typedef", "struct", "using", "void", "inline"})
    if (t.substr(0, k.size()) == k) return true;
  return false;
}

[[nodiscard]] inline parsed_reply fail(reply_status s, std::string message) {
  parsed_reply r;
  r.status = s;
  r.message = std::move(message);
  return r;
}

inline void dedupe(std::vector<std::string>& v) {
  std::vector<std::string> u;
  for (auto& s : v)
    if (std::find(u.begin(), u.end(), s) == u.end()) u.push_back(s);
  v = std::move(u);
}

[[nodiscard]] inline parsed_reply parse(std::string_view reply, reply_expectations const& expect) {
  if (reply.size() > expect.max_reply_bytes)
    return fail(reply_status::too_large, "the reply has " + std::to_string(reply.size()) + " bytes (limit " +
                                             std::to_string(expect.max_reply_bytes) + ")");
  const bool cuda = expect.launch_plan;
  // CRLF (and a lone CR) -> LF.
  std::string text;
  text.reserve(reply.size());
  for (std::size_t i = 0; i < reply.size(); ++i) {
    if (reply[i] == '\r') {
      if (i + 1 < reply.size() && reply[i + 1] == '\n') continue;
      text.push_back('\n');
    } else {
      text.push_back(reply[i]);
    }
  }
  std::vector<block> blocks;
  bool any_fence = false;
  collect(text, 0, true, blocks, any_fence);
  std::vector<std::string> repairs;

  // A fence left open at the end of the reply, with something in it: the reply was cut off.
  for (auto const& b : blocks)
    if (!b.closed && !trim(b.text).empty())
      return fail(reply_status::truncated,
                  "the reply ends inside the code block opened at line " + std::to_string(b.line) + " (cut off)");

  if (!any_fence) {  // a bare source, perhaps after some prose
    std::size_t pos = 0;
    std::size_t dropped = 0;
    while (pos < text.size()) {
      const std::size_t eol = text.find('\n', pos);
      const std::size_t next = eol == std::string::npos ? text.size() : eol + 1;
      if (starts_code(std::string_view(text).substr(pos, next - pos))) break;
      pos = next;
      ++dropped;
    }
    if (pos < text.size()) {
      if (dropped > 0) repairs.push_back("dropped " + std::to_string(dropped) + " line(s) of prose before the code");
      blocks.push_back(block{"", text.substr(pos), true, dropped + 1});
    }
  }

  std::string entry_name = "kb_kernel";
  if (!cuda && !expect.entry_points.empty()) entry_name = expect.entry_points.front();
  std::vector<std::string> sources;
  std::vector<std::string> plans;
  std::size_t other_json = 0;
  for (auto const& b : blocks) {
    if (trim(b.text).empty()) continue;
    if (is_plan(b.text)) {
      plans.push_back(b.text);
      continue;
    }
    if (trim(b.text).front() == '{' || b.label == "json" || b.label == "jsonc") {
      ++other_json;
      continue;
    }
    if (non_code_label(b.label)) continue;
    const std::string m = mask_code(b.text);
    if (cuda ? has_word(m, "__global__") : defines_function(m, entry_name)) sources.push_back(b.text);
  }
  dedupe(sources);
  dedupe(plans);
  if (plans.size() > 1)
    return fail(reply_status::ambiguous, std::to_string(plans.size()) + " different launch plans in the reply");
  std::string plan;
  if (!plans.empty()) {
    bool comments = false;
    bool commas = false;
    plan = clean_json(plans.front(), comments, commas);
    if (comments) repairs.emplace_back("removed comments from the launch plan");
    if (commas) repairs.emplace_back("removed trailing commas from the launch plan");
  }
  const auto plan_names = cuda ? plan_kernels(plan) : std::vector<std::pair<std::size_t, std::string>>{};

  // Several sources: keep those that define the required entry points, then those the plan names.
  if (cuda && sources.size() > 1) {
    auto defines_all = [](std::string const& s, auto const& names) {
      const auto ks = kernels_of(s, mask_code(s));
      for (auto const& n : names) {
        bool found = false;
        for (auto const& k : ks) found = found || k.name == n;
        if (!found) return false;
      }
      return true;
    };
    std::vector<std::string> wanted = expect.entry_points;
    for (int round = 0; round < 2 && sources.size() > 1; ++round) {
      if (round == 1) {
        wanted.clear();
        for (auto const& [at, n] : plan_names) wanted.push_back(n);
      }
      if (wanted.empty()) continue;
      std::vector<std::string> keep;
      for (auto const& s : sources)
        if (defines_all(s, wanted)) keep.push_back(s);
      if (!keep.empty()) sources = std::move(keep);
    }
  }
  if (sources.size() > 1)
    return fail(reply_status::ambiguous,
                std::to_string(sources.size()) + " different candidate sources in the reply and no rule picks one");
  if (sources.empty()) {
    std::string why = cuda ? "no code block holds a __global__ kernel" : "no code block defines " + entry_name;
    if (!plan.empty()) why += " (the reply has a launch plan only)";
    if (other_json > 0) why += " (a JSON block that is not a launch plan was ignored)";
    return fail(reply_status::no_code, why);
  }

  parsed_reply r;
  r.source = sources.front();
  if (cuda) {
    const std::string m = mask_code(r.source);
    auto ks = kernels_of(r.source, m);
    // Renames: exactly one kernel, and the plan (or the problem) names another.
    if (ks.size() == 1) {
      std::string const have = ks.front().name;
      std::vector<std::string> names;
      for (auto const& [at, n] : plan_names)
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      const bool problem_wants_have =
          std::find(expect.entry_points.begin(), expect.entry_points.end(), have) != expect.entry_points.end();
      std::string target;  // rename the function to this
      if (expect.entry_points.size() == 1 && !problem_wants_have) target = expect.entry_points.front();
      if (!target.empty() && !has_word(m, target)) {
        r.source = rename_identifier(r.source, have, target);
        repairs.push_back("renamed kernel '" + have + "' to '" + target + "' (the name the problem requires)");
        ks = kernels_of(r.source, mask_code(r.source));
      }
      std::string const now = ks.empty() ? have : ks.front().name;
      if (names.size() == 1 && names.front() != now) {
        std::string renamed;
        std::size_t last = 0;
        for (auto const& [at, n] : plan_names) {
          renamed.append(plan.substr(last, at - last));
          renamed.append(now);
          last = at + n.size();
        }
        renamed.append(plan.substr(last));
        repairs.push_back("renamed the launch plan's kernel '" + names.front() + "' to '" + now +
                          "' (the source's only __global__ function)");
        plan = std::move(renamed);
      }
    }
    // extern "C" on every kernel that lacks it, back to front so offsets stay valid.
    std::sort(ks.begin(), ks.end(), [](auto const& a, auto const& b) { return a.decl_start > b.decl_start; });
    std::vector<std::string> added;
    for (auto const& k : ks)
      if (!k.has_extern_c && k.repairable) {
        r.source.insert(k.decl_start, "extern \"C\" ");
        added.push_back(k.name);
      }
    for (auto it = added.rbegin(); it != added.rend(); ++it)
      repairs.push_back("added extern \"C\" to __global__ kernel '" + *it + "'");
  } else {
    add_host_includes(r.source, repairs);
  }
  r.plan = cuda ? std::move(plan) : std::string{};
  r.repairs = std::move(repairs);
  if (cuda && expect.plan_required && r.plan.empty()) {
    r.status = reply_status::missing_plan;
    r.message = "a " + expect.language + " source but no launch plan (a JSON object with \"launches\")";
    if (other_json > 0) r.message += "; a JSON block that is not a launch plan was ignored";
    return r;
  }
  r.status = reply_status::ok;
  r.message = "a " + expect.language + " source" + (r.plan.empty() ? "" : " and a launch plan") + ", " +
              std::to_string(r.repairs.size()) + " repair(s)";
  return r;
}

}  // namespace reply_detail

KERNELBRAIN_DECL parsed_reply parse_reply(std::string_view reply, reply_expectations const& expect) noexcept {
  try {
    return reply_detail::parse(reply, expect);
  } catch (...) {
    parsed_reply r;
    try {
      r.message = "the parser ran out of memory";
    } catch (...) {  // NOLINT(bugprone-empty-catch): the message is optional
    }
    return r;
  }
}

}  // namespace kernelbrain::llm
