// The reply parser: turns a model's answer (prose plus fenced code) into a kernel candidate's source and
// launch plan, applies a few small recorded repairs, and says in a typed status why it could not when it
// cannot. Deterministic, text-level only (no JSON library), and total: parse_reply never throws and
// reads nothing beyond a reply's size limit. The rules are in docs/llm-replies.md.
#pragma once
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "kernelbrain/backends/traits.hpp"
#include "kernelbrain/core/verdict.hpp"

namespace kernelbrain::llm {

/// Why a reply did or did not yield a candidate.
enum class reply_status {
  ok,            ///< a source (and, where required, a launch plan) was found
  no_code,       ///< nothing usable: no block holds a kernel of the expected backend
  truncated,     ///< the reply ends inside a code block (cut off)
  too_large,     ///< the reply is over the size limit; it was not read
  ambiguous,     ///< several different candidate sources (or plans) and no rule picks one
  missing_plan,  ///< a CUDA source but no launch plan, and the problem requires one
};

[[nodiscard]] constexpr std::string_view to_string(reply_status s) noexcept {
  switch (s) {
    case reply_status::ok:
      return "ok";
    case reply_status::no_code:
      return "no_code";
    case reply_status::truncated:
      return "truncated";
    case reply_status::too_large:
      return "too_large";
    case reply_status::ambiguous:
      return "ambiguous";
    case reply_status::missing_plan:
      return "missing_plan";
  }
  return "unknown";
}

/// What the problem expects of a reply.
struct reply_expectations {
  /// Kernels a launch plan launches (CUDA: `__global__` functions, the plan in a ```json block); false:
  /// one source that defines the entry point (host: kb_kernel). From backend_traits::launch_plan.
  bool launch_plan = true;
  std::string language = "CUDA";  ///< what the source is written in, for messages
  std::vector<std::string>
      entry_points;           ///< launch plans: the kernel names the problem requires, if it says; else kb_kernel
  bool plan_required = true;  ///< launch plans: the reply must carry one ({"launches": ...})
  std::size_t max_reply_bytes = std::size_t{1} << 20;  ///< a longer reply is too_large
};

/// What a reply for a problem of backend `t` must hold (a launch plan where its kernels need one).
[[nodiscard]] inline reply_expectations expectations_for(backend_traits const& t) {
  reply_expectations e;
  e.launch_plan = t.launch_plan;
  e.plan_required = t.launch_plan;
  e.language = t.language;
  return e;
}

/// The outcome of parse_reply.
struct parsed_reply {
  reply_status status = reply_status::no_code;
  std::string source;                ///< the kernel source, repaired; empty unless one was found
  std::string plan;                  ///< the launch plan's JSON text, repaired; empty if none
  std::vector<std::string> repairs;  ///< one short text per repair applied, in order
  std::string message;               ///< for people: what was found, or why nothing was

  [[nodiscard]] bool ok() const noexcept { return status == reply_status::ok; }

  /// pass for ok; otherwise a reject: too_large -> policy (a size limit), truncated -> compile (the text
  /// cannot compile), no_code, ambiguous and missing_plan -> signature (no usable entry point or plan).
  [[nodiscard]] verdict to_verdict() const {
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
};

namespace reply_detail {

/// Bounds on work for hostile inputs.
inline constexpr int max_nesting = 3;               ///< fenced blocks inside fenced blocks
inline constexpr std::size_t max_kernels = 64;      ///< __global__ functions examined per source
inline constexpr std::size_t max_label_bytes = 64;  ///< of a fence's info word

struct block {
  std::string label;     ///< the info string's first word, lower case
  std::string text;      ///< the content, without the fence lines
  bool closed = true;    ///< false: the text ran to the end of its container
  std::size_t line = 0;  ///< 1-based line of the opening fence in its container
};

[[nodiscard]] inline bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
[[nodiscard]] inline bool is_ident(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

[[nodiscard]] inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

[[nodiscard]] inline std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// A fence line: up to 3 spaces of indentation (any amount: models indent fences inside lists), then
/// at least 3 backticks or tildes. Sets the character, the run length and the info string.
[[nodiscard]] inline bool fence_of(std::string_view line, char& ch, std::size_t& len, std::string_view& info) noexcept {
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

/// Splits text (LF line endings) into fenced blocks. An unterminated fence takes the rest of the text.
/// Linear in the text's size.
[[nodiscard]] inline std::vector<block> split_blocks(std::string_view text, bool& any_fence) {
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

[[nodiscard]] inline bool c_family_label(std::string_view l) noexcept {
  for (std::string_view k : {"cuda", "cu", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "cuh"})
    if (l == k) return true;
  return false;
}
[[nodiscard]] inline bool non_code_label(std::string_view l) noexcept {
  for (std::string_view k : {"python", "py", "bash", "sh", "shell", "console", "text", "txt", "diff", "patch",
                             "markdown", "md", "output", "log", "yaml", "toml", "ini"})
    if (l == k) return true;
  return false;
}

/// Blocks of a reply, with the blocks inside a markdown-like block (or an unlabelled one) replacing it.
/// A fence left open inside a closed block ends with that block, not with the reply.
inline void collect(std::string_view text, int depth, bool top, std::vector<block>& out, bool& any_fence) {
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

/// The text with comments, string and character literals blanked to spaces (quotes kept, newlines
/// kept), so that offsets match the original. Raw strings are treated as ordinary strings.
[[nodiscard]] inline std::string mask_code(std::string_view s) {
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

/// Offsets of the identifier `word` (whole word) in masked text.
[[nodiscard]] inline std::vector<std::size_t> find_words(std::string_view m, std::string_view word,
                                                         std::size_t limit = std::string_view::npos) {
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
[[nodiscard]] inline bool has_word(std::string_view m, std::string_view word) {
  return !find_words(m, word, 1).empty();
}

[[nodiscard]] inline std::size_t skip_space(std::string_view m, std::size_t i) noexcept {
  while (i < m.size() && is_space(m[i])) ++i;
  return i;
}

/// Offset just past the parenthesis group that opens at m[i] == '(' (or npos when it never closes).
[[nodiscard]] inline std::size_t past_parens(std::string_view m, std::size_t i) noexcept {
  int depth = 0;
  for (; i < m.size(); ++i) {
    if (m[i] == '(') ++depth;
    if (m[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

/// Whether the masked text defines a function named `name` (name, parameter list, then a body).
[[nodiscard]] inline bool defines_function(std::string_view m, std::string_view name) {
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

/// One __global__ function of a source.
struct kernel_decl {
  std::string name;
  std::size_t decl_start = 0;  ///< where its declaration begins (after the previous ';', '{', '}' or directive)
  bool has_extern_c = false;   ///< extern "C" on it or around it
  bool repairable = true;      ///< not a template nor static: extern "C" may be added
};

/// The __global__ functions of a source (at most max_kernels).
[[nodiscard]] inline std::vector<kernel_decl> kernels_of(std::string_view src, std::string_view m) {
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

/// A JSON-ish text with // and /* */ comments and trailing commas removed, outside strings.
[[nodiscard]] inline std::string clean_json(std::string_view t, bool& had_comments, bool& had_commas) {
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

/// The string values of every "kernel" key in a JSON text: (offset of the value's first character
/// after its quote, value).
[[nodiscard]] inline std::vector<std::pair<std::size_t, std::string>> plan_kernels(std::string_view t) {
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

[[nodiscard]] inline bool is_plan(std::string_view text) {
  const std::string_view t = trim(text);
  return !t.empty() && t.front() == '{' && t.find("\"launches\"") != std::string_view::npos &&
         t.find("__global__") == std::string_view::npos;
}

[[nodiscard]] inline bool includes(std::string_view src, std::string_view header) {
  return src.find("<" + std::string(header) + ">") != std::string_view::npos ||
         src.find("\"" + std::string(header) + "\"") != std::string_view::npos;
}

/// Host: standard headers for facilities used without their include (all on the host policy's list).
inline void add_host_includes(std::string& src, std::vector<std::string>& repairs) {
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

/// Replaces the identifier `from` by `to` in code (not in comments or strings).
[[nodiscard]] inline std::string rename_identifier(std::string_view src, std::string_view from, std::string_view to) {
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

/// Lines that start code in a reply without fences; the prose before the first of them is dropped.
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

/// Extracts a candidate from a model's reply. Never throws: an allocation failure reads as no_code.
[[nodiscard]] inline parsed_reply parse_reply(std::string_view reply, reply_expectations const& expect) noexcept {
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
