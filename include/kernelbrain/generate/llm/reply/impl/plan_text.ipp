// Bodies of kernelbrain/generate/llm/reply/plan_text.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include "kernelbrain/generate/llm/reply/code_scan.hpp"
#include "kernelbrain/generate/llm/reply/plan_text.hpp"
#include "kernelbrain/generate/llm/reply/text.hpp"

namespace kernelbrain::llm::reply_detail {

KERNELBRAIN_DECL std::string clean_json(std::string_view t, bool& had_comments, bool& had_commas) {
  std::string out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '"') {
      const std::size_t b = i++;
      while (i < t.size() && t[i] != '"') {
        if (t[i] == '\\') ++i;
        ++i;
      }
      out.append(t.substr(b, std::min(i, t.size() - 1) - b + 1));
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      had_comments = true;
      while (i + 1 < t.size() && t[i + 1] != '\n') ++i;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      had_comments = true;
      const std::size_t e = t.find("*/", i + 2);
      i = e == std::string_view::npos ? t.size() : e + 1;
    } else if (c == '}' || c == ']') {
      std::size_t j = out.size();
      while (j > 0 && is_space(out[j - 1])) --j;
      if (j > 0 && out[j - 1] == ',') {
        had_commas = true;
        out.erase(j - 1, 1);
      }
      out.push_back(c);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

KERNELBRAIN_DECL std::vector<std::pair<std::size_t, std::string>> plan_kernels(std::string_view t) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::vector<std::pair<std::size_t, std::string>> strings;  // every string token
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '"') continue;
    const std::size_t b = ++i;
    while (i < t.size() && t[i] != '"') {
      if (t[i] == '\\') ++i;
      ++i;
    }
    strings.emplace_back(b, std::string(t.substr(b, std::min(i, t.size()) - b)));
  }
  for (std::size_t k = 0; k + 1 < strings.size(); ++k) {
    if (strings[k].second != "kernel") continue;
    const std::size_t after = strings[k].first + 7;  // past "kernel" and its closing quote
    const std::size_t colon = skip_space(t, after);
    if (colon >= t.size() || t[colon] != ':') continue;
    const std::size_t v = skip_space(t, colon + 1);
    if (v < t.size() && t[v] == '"' && strings[k + 1].first == v + 1) out.push_back(strings[k + 1]);
  }
  return out;
}

KERNELBRAIN_DECL bool is_plan(std::string_view text) {
  const std::string_view t = trim(text);
  return !t.empty() && t.front() == '{' && t.find("\"launches\"") != std::string_view::npos &&
         t.find("__global__") == std::string_view::npos;
}

}  // namespace kernelbrain::llm::reply_detail
