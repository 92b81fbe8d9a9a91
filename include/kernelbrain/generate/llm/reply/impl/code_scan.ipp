// Bodies of kernelbrain/generate/llm/reply/code_scan.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include "kernelbrain/generate/llm/reply/code_scan.hpp"
#include "kernelbrain/generate/llm/reply/text.hpp"

namespace kernelbrain::llm::reply_detail {

KERNELBRAIN_DECL std::string mask_code(std::string_view s) {
  std::string m(s);
  std::size_t i = 0;
  while (i < m.size()) {
    const char c = m[i];
    if (c == '/' && i + 1 < m.size() && m[i + 1] == '/') {
      while (i < m.size() && m[i] != '\n') m[i++] = ' ';
    } else if (c == '/' && i + 1 < m.size() && m[i + 1] == '*') {
      m[i] = m[i + 1] = ' ';
      i += 2;
      while (i < m.size() && !(m[i] == '*' && i + 1 < m.size() && m[i + 1] == '/')) {
        if (m[i] != '\n') m[i] = ' ';
        ++i;
      }
      if (i < m.size()) {
        m[i] = ' ';
        if (i + 1 < m.size()) m[i + 1] = ' ';
        i += 2;
      }
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < m.size() && m[i] != c && m[i] != '\n') {
        if (m[i] == '\\' && i + 1 < m.size() && m[i + 1] != '\n') m[i++] = ' ';
        m[i++] = ' ';
      }
      ++i;  // the closing quote (or the newline that ends an unterminated literal)
    } else {
      ++i;
    }
  }
  return m;
}

KERNELBRAIN_DECL std::vector<std::size_t> find_words(std::string_view m, std::string_view word, std::size_t limit) {
  std::vector<std::size_t> out;
  std::size_t p = 0;
  while ((p = m.find(word, p)) != std::string_view::npos) {
    const bool left = p == 0 || !is_ident(m[p - 1]);
    const bool right = p + word.size() >= m.size() || !is_ident(m[p + word.size()]);
    if (left && right) {
      out.push_back(p);
      if (out.size() >= limit) break;
    }
    p += word.size();
  }
  return out;
}

KERNELBRAIN_DECL bool has_word(std::string_view m, std::string_view word) { return !find_words(m, word, 1).empty(); }

KERNELBRAIN_DECL std::size_t skip_space(std::string_view m, std::size_t i) noexcept {
  while (i < m.size() && is_space(m[i])) ++i;
  return i;
}

KERNELBRAIN_DECL std::size_t past_parens(std::string_view m, std::size_t i) noexcept {
  int depth = 0;
  for (; i < m.size(); ++i) {
    if (m[i] == '(') ++depth;
    if (m[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

KERNELBRAIN_DECL bool defines_function(std::string_view m, std::string_view name) {
  for (std::size_t p : find_words(m, name, 1024)) {
    std::size_t i = skip_space(m, p + name.size());
    if (i >= m.size() || m[i] != '(') continue;
    i = past_parens(m, i);
    if (i == std::string_view::npos) continue;
    i = skip_space(m, i);
    if (i < m.size() && m[i] == '{') return true;
  }
  return false;
}

KERNELBRAIN_DECL std::vector<kernel_decl> kernels_of(std::string_view src, std::string_view m) {
  // extern "C" { ... } regions.
  std::vector<std::pair<std::size_t, std::size_t>> regions;
  for (std::size_t p : find_words(m, "extern", 4096)) {
    std::size_t i = skip_space(m, p + 6);
    if (i >= m.size() || m[i] != '"' || src.substr(i, 3) != "\"C\"") continue;
    i = skip_space(m, i + 3);
    if (i >= m.size() || m[i] != '{') continue;
    int depth = 0;
    std::size_t j = i;
    for (; j < m.size(); ++j) {
      if (m[j] == '{') ++depth;
      if (m[j] == '}' && --depth == 0) break;
    }
    regions.emplace_back(i, j);
  }
  std::vector<kernel_decl> out;
  for (std::size_t g : find_words(m, "__global__", max_kernels)) {
    kernel_decl k;
    // The declaration's start: back to ';', '{', '}' or the end of a preprocessor line.
    std::size_t s = g;
    while (s > 0) {
      const char c = m[s - 1];
      if (c == ';' || c == '{' || c == '}') break;
      if (c == '\n') {
        std::size_t ls = s - 1;
        while (ls > 0 && m[ls - 1] != '\n') --ls;
        const std::size_t f = skip_space(m.substr(0, s - 1), ls);
        if (f < s - 1 && m[f] == '#') break;
      }
      --s;
    }
    s = skip_space(m, s);
    k.decl_start = s;
    const std::string_view head = m.substr(s, g - s);
    for (std::size_t e : find_words(head, "extern", 16)) {
      const std::size_t i = skip_space(head, e + 6);
      if (src.substr(s + i, 3) == "\"C\"") k.has_extern_c = true;
    }
    for (auto const& [a, b] : regions)
      if (g > a && g < b) k.has_extern_c = true;
    k.repairable = !has_word(head, "template") && !has_word(head, "static");
    // The name: the last identifier before the parameter list, skipping __launch_bounds__(...).
    std::size_t i = g + 10;
    std::string last;
    while (i < m.size()) {
      i = skip_space(m, i);
      if (i >= m.size()) break;
      if (is_ident(m[i])) {
        const std::size_t b = i;
        while (i < m.size() && is_ident(m[i])) ++i;
        last = std::string(m.substr(b, i - b));
        if (last == "__launch_bounds__" || last == "__cluster_dims__" || last == "__maxnreg__") {
          i = skip_space(m, i);
          if (i < m.size() && m[i] == '(') i = past_parens(m, i);
          last.clear();
        }
        continue;
      }
      if (m[i] == '(' || m[i] == ';' || m[i] == '{') break;
      ++i;
    }
    if (i < m.size() && m[i] == '(' && !last.empty()) {
      k.name = std::move(last);
      out.push_back(std::move(k));
    }
  }
  return out;
}

KERNELBRAIN_DECL bool includes(std::string_view src, std::string_view header) {
  return src.find("<" + std::string(header) + ">") != std::string_view::npos ||
         src.find("\"" + std::string(header) + "\"") != std::string_view::npos;
}

KERNELBRAIN_DECL void add_host_includes(std::string& src, std::vector<std::string>& repairs) {
  struct rule {
    std::string_view header;
    std::string_view alt;
    std::vector<std::string_view> words;
  };
  const rule rules[] = {
      {"cstdint",
       "stdint.h",
       {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "intptr_t",
        "uintptr_t"}},
      {"cstddef", "stddef.h", {"size_t", "ptrdiff_t"}},
      {"cstring", "string.h", {"memcpy", "memset", "memmove", "memcmp"}},
      {"cmath",
       "math.h",
       {"sqrt", "sqrtf", "exp", "expf", "fabs", "fabsf", "fma", "fmaf", "tanh", "tanhf", "log", "logf", "rsqrt", "pow",
        "powf"}},
      {"algorithm", "algorithm", {"min", "max", "fill", "fill_n", "copy", "copy_n", "sort"}},
      {"vector", "vector", {"vector"}},
      {"thread", "thread", {"thread"}},
      {"array", "array", {"array"}},
      {"limits", "limits", {"numeric_limits"}},
      {"atomic", "atomic", {"atomic"}},
  };
  const std::string m = mask_code(src);
  std::string prefix;
  if (!includes(src, "kernelbrain/evaluate/host_abi.h") && has_word(m, "kb_args")) {
    prefix += "#include \"kernelbrain/evaluate/host_abi.h\"\n";
    repairs.emplace_back("added #include \"kernelbrain/evaluate/host_abi.h\" (uses kb_args)");
  }
  for (auto const& r : rules) {
    if (includes(src, r.header) || includes(src, r.alt)) continue;
    for (std::string_view w : r.words) {
      // Names of <algorithm> and the containers count only qualified (min/max are also macros and locals).
      const bool qualified = r.header == "algorithm" || r.header == "vector" || r.header == "thread" ||
                             r.header == "array" || r.header == "limits" || r.header == "atomic";
      bool used = false;
      for (std::size_t p : find_words(m, w, 256)) {
        if (!qualified || (p >= 5 && m.substr(p - 5, 5) == "std::")) {
          used = true;
          break;
        }
      }
      if (used) {
        prefix += "#include <" + std::string(r.header) + ">\n";
        repairs.push_back("added #include <" + std::string(r.header) + "> (uses " + std::string(w) + ")");
        break;
      }
    }
  }
  src.insert(0, prefix);
}

KERNELBRAIN_DECL std::string rename_identifier(std::string_view src, std::string_view from, std::string_view to) {
  const std::string m = mask_code(src);
  std::string out;
  std::size_t last = 0;
  for (std::size_t p : find_words(m, from)) {
    out.append(src.substr(last, p - last));
    out.append(to);
    last = p + from.size();
  }
  out.append(src.substr(last));
  return out;
}

}  // namespace kernelbrain::llm::reply_detail
