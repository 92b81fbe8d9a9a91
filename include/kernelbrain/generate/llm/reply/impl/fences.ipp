// Bodies of kernelbrain/generate/llm/reply/fences.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <utility>
#include "kernelbrain/generate/llm/reply/fences.hpp"
#include "kernelbrain/generate/llm/reply/text.hpp"

namespace kernelbrain::llm::reply_detail {

KERNELBRAIN_DECL bool fence_of(std::string_view line, char& ch, std::size_t& len, std::string_view& info) noexcept {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  ch = line[i];
  std::size_t j = i;
  while (j < line.size() && line[j] == ch) ++j;
  len = j - i;
  if (len < 3) return false;
  info = trim(line.substr(j));
  // CommonMark: a backtick fence's info string holds no backtick (else it is inline code).
  return !(ch == '`' && info.find('`') != std::string_view::npos);
}

KERNELBRAIN_DECL std::vector<block> split_blocks(std::string_view text, bool& any_fence) {
  std::vector<block> out;
  any_fence = false;
  bool open = false;
  char ch = 0;
  std::size_t len = 0;
  std::size_t body = 0;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  block cur;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    const std::size_t next = eol == std::string_view::npos ? text.size() : eol + 1;
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    ++line_no;
    char c = 0;
    std::size_t n = 0;
    std::string_view info;
    if (fence_of(line, c, n, info)) {
      if (!open) {
        any_fence = true;
        open = true;
        ch = c;
        len = n;
        body = next;
        cur = block{};
        std::string_view word = info.substr(0, std::min(info.size(), max_label_bytes));
        const std::size_t sp = word.find_first_of(" \t{");
        if (sp != std::string_view::npos) word = word.substr(0, sp);
        while (!word.empty() && (word.front() == '.' || word.front() == '{')) word.remove_prefix(1);
        cur.label = lower(word);
        cur.line = line_no;
      } else if (c == ch && n >= len && info.empty()) {
        cur.text = std::string(text.substr(body, pos - body));
        cur.closed = true;
        out.push_back(std::move(cur));
        cur = block{};
        open = false;
      }
    }
    pos = next;
  }
  if (open) {
    cur.text = std::string(text.substr(std::min(body, text.size())));
    cur.closed = false;
    out.push_back(std::move(cur));
  }
  return out;
}

KERNELBRAIN_DECL bool c_family_label(std::string_view l) noexcept {
  for (std::string_view k : {"cuda", "cu", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "cuh"})
    if (l == k) return true;
  return false;
}

KERNELBRAIN_DECL bool non_code_label(std::string_view l) noexcept {
  for (std::string_view k : {"python", "py", "bash", "sh", "shell", "console", "text", "txt", "diff", "patch",
                             "markdown", "md", "output", "log", "yaml", "toml", "ini"})
    if (l == k) return true;
  return false;
}

KERNELBRAIN_DECL void collect(std::string_view text, int depth, bool top, std::vector<block>& out, bool& any_fence) {
  bool fenced = false;
  std::vector<block> bs = split_blocks(text, fenced);
  if (top) any_fence = fenced;
  for (auto& b : bs) {
    if (depth < max_nesting && !c_family_label(b.label) && b.label != "json" && b.label != "jsonc") {
      bool inner_fence = false;
      std::vector<block> inner;
      collect(b.text, depth + 1, false, inner, inner_fence);
      bool any = false;
      for (auto const& ib : inner)
        if (!trim(ib.text).empty()) any = true;
      if (any) {
        for (auto& ib : inner) {
          ib.closed = ib.closed || b.closed;  // bounded by its container
          ib.line = b.line;
          out.push_back(std::move(ib));
        }
        continue;
      }
    }
    out.push_back(std::move(b));
  }
}

}  // namespace kernelbrain::llm::reply_detail
