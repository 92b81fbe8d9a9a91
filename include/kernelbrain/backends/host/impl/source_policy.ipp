// Bodies of kernelbrain/backends/host/source_policy.hpp: a small C++ lexer (comments, literals, raw
// strings, digit separators, line splicing, digraphs) that is just enough to find forbidden tokens.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <algorithm>
#include <cctype>
#include <cstring>
#include "kernelbrain/backends/host/source_policy.hpp"

namespace kernelbrain {
namespace detail::source_scan {

struct forbidden_name {
  std::string_view name;
  std::string_view what;
};

inline constexpr forbidden_name forbidden_names[] = {
    {"asm", "inline assembly"},
    {"__asm", "inline assembly"},
    {"__asm__", "inline assembly"},
    {"system", "starting processes"},
    {"popen", "starting processes"},
    {"fork", "starting processes"},
    {"vfork", "starting processes"},
    {"clone", "starting processes"},
    {"clone3", "starting processes"},
    {"execl", "starting processes"},
    {"execle", "starting processes"},
    {"execlp", "starting processes"},
    {"execv", "starting processes"},
    {"execve", "starting processes"},
    {"execvp", "starting processes"},
    {"execvpe", "starting processes"},
    {"fexecve", "starting processes"},
    {"posix_spawn", "starting processes"},
    {"posix_spawnp", "starting processes"},
    {"kill", "signalling processes"},
    {"dlopen", "loading code at run time"},
    {"dlmopen", "loading code at run time"},
    {"dlsym", "loading code at run time"},
    {"dlvsym", "loading code at run time"},
    {"syscall", "raw system calls"},
    {"mmap", "mapping memory"},
    {"mmap64", "mapping memory"},
    {"munmap", "mapping memory"},
    {"mprotect", "mapping memory"},
    {"mremap", "mapping memory"},
    {"shm_open", "mapping memory"},
    {"memfd_create", "mapping memory"},
    {"brk", "mapping memory"},
    {"sbrk", "mapping memory"},
    {"ptrace", "tracing processes"},
    {"prctl", "changing process attributes"},
    {"setrlimit", "changing resource limits"},
    {"prlimit", "changing resource limits"},
    {"prlimit64", "changing resource limits"},
    {"signal", "installing signal handlers"},
    {"sigaction", "installing signal handlers"},
    {"sigaltstack", "installing signal handlers"},
    {"bsd_signal", "installing signal handlers"},
    {"sysv_signal", "installing signal handlers"},
    {"fopen", "file I/O"},
    {"fopen64", "file I/O"},
    {"freopen", "file I/O"},
    {"fdopen", "file I/O"},
    {"open", "file I/O"},
    {"open64", "file I/O"},
    {"openat", "file I/O"},
    {"creat", "file I/O"},
    {"read", "file I/O"},
    {"write", "file I/O"},
    {"pread", "file I/O"},
    {"pwrite", "file I/O"},
    {"readv", "file I/O"},
    {"writev", "file I/O"},
    {"fread", "file I/O"},
    {"fwrite", "file I/O"},
    {"fprintf", "file I/O"},
    {"fputs", "file I/O"},
    {"fscanf", "file I/O"},
    {"unlink", "file I/O"},
    {"unlinkat", "file I/O"},
    {"truncate", "file I/O"},
    {"ftruncate", "file I/O"},
    {"ifstream", "file I/O"},
    {"ofstream", "file I/O"},
    {"fstream", "file I/O"},
    {"filebuf", "file I/O"},
    {"FILE", "file I/O"},
    {"filesystem", "file I/O"},
    {"socket", "network I/O"},
    {"socketpair", "network I/O"},
    {"connect", "network I/O"},
    {"listen", "network I/O"},
    {"accept", "network I/O"},
    {"accept4", "network I/O"},
    {"send", "network I/O"},
    {"sendto", "network I/O"},
    {"sendmsg", "network I/O"},
    {"recv", "network I/O"},
    {"recvfrom", "network I/O"},
    {"recvmsg", "network I/O"},
    {"getaddrinfo", "network I/O"},
    {"gethostbyname", "network I/O"},
};

inline constexpr std::string_view allowed_directives[] = {"define", "undef",   "if",       "ifdef", "ifndef",
                                                          "elif",   "elifdef", "elifndef", "else",  "endif",
                                                          "pragma", "error",   "warning",  "line",  "include"};

inline bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class scanner {
 public:
  scanner(std::string_view src, host_source_policy const& pol) : pol_(pol) { splice(src); }

  verdict run() {
    const std::size_t n = t_.size();
    std::size_t i = 0;
    bool bol = true;
    while (i < n) {
      const char c = t_[i];
      if (c == '\n') {
        bol = true;
        ++i;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      if (c == '/' && at(i + 1) == '/') {
        while (i < n && t_[i] != '\n') ++i;
        continue;
      }
      if (c == '/' && at(i + 1) == '*') {
        const auto e = t_.find("*/", i + 2);
        i = e == std::string::npos ? n : e + 2;
        continue;
      }
      if (c == '#' || (c == '%' && at(i + 1) == ':')) {
        const std::size_t len = c == '#' ? 1 : 2;
        if (at(i + len) == '#' || (at(i + len) == '%' && at(i + len + 1) == ':'))
          return refuse(i, "token pasting (##) can assemble names the policy forbids, so it is not allowed");
        if (bol) {
          bol = false;
          if (auto v = directive(i + len, i); !v) return v;
          continue;
        }
        i += len;  // stringizing inside a #define body
        continue;
      }
      bol = false;
      if (ident_start(c)) {
        std::size_t j = i;
        while (j < n && ident_char(t_[j])) ++j;
        const std::string_view id(t_.data() + i, j - i);
        if (j < n && (t_[j] == '"' || t_[j] == '\'') && literal_prefix(id, t_[j])) {
          i = literal(j, id.back() == 'R' && t_[j] == '"');
          prev_ = "literal";
          continue;
        }
        if (prev_ != "." && prev_ != "->")
          if (auto v = check_identifier(id, i); !v) return v;
        prev_ = id;
        i = j;
        // __has_include(<sys/syscall.h>) asks whether a header exists; it includes nothing, and the
        // words of its header name are not tokens of the program.
        if (id == "__has_include" || id == "__has_include_next") i = skip_header_name_argument(i);
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && std::isdigit(static_cast<unsigned char>(at(i + 1))))) {
        i = number(i);
        prev_ = "0";
        continue;
      }
      if (c == '"' || c == '\'') {
        i = literal(i, false);
        prev_ = "literal";
        continue;
      }
      if (c == '-' && at(i + 1) == '>') {
        prev_ = "->";
        i += 2;
        continue;
      }
      prev_ = std::string_view(t_.data() + i, 1);
      ++i;
    }
    return verdict::pass();
  }

 private:
  /// Translation phase 2: backslash-newline joins lines. Keeps each character's original line.
  void splice(std::string_view s) {
    int line = 1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\') {
        std::size_t j = i + 1;
        if (j < s.size() && s[j] == '\r') ++j;
        if (j < s.size() && s[j] == '\n') {
          i = j;
          ++line;
          continue;
        }
      }
      t_ += s[i];
      line_.push_back(line);
      if (s[i] == '\n') ++line;
    }
  }
  [[nodiscard]] char at(std::size_t i) const noexcept { return i < t_.size() ? t_[i] : '\0'; }
  [[nodiscard]] int line_of(std::size_t i) const noexcept {
    return line_.empty() ? 1 : line_[std::min(i, line_.size() - 1)];
  }

  verdict refuse(std::size_t pos, std::string const& why) const {
    return verdict::reject(stage::policy, "forbidden construct at line " + std::to_string(line_of(pos)) + ": " + why);
  }

  verdict check_identifier(std::string_view id, std::size_t pos) const {
    for (auto const& f : forbidden_names)
      if (f.name == id)
        return refuse(pos, "'" + std::string(id) + "' (" + std::string(f.what) +
                               ") is not allowed in host candidates (if it is your own name, rename it)");
    for (auto const& x : pol_.extra_forbidden)
      if (x == id) return refuse(pos, "'" + std::string(id) + "' is not allowed by this problem's source policy");
    return verdict::pass();
  }

  static bool literal_prefix(std::string_view id, char quote) {
    for (std::string_view p : {"L", "u", "U", "u8"})
      if (id == p) return true;
    if (quote == '"')
      for (std::string_view p : {"R", "LR", "uR", "UR", "u8R"})
        if (id == p) return true;
    return false;
  }

  /// Skips a string or character literal starting at its quote; returns the position after it.
  std::size_t literal(std::size_t q, bool raw) const {
    const std::size_t n = t_.size();
    if (raw) {
      const auto open = t_.find('(', q + 1);
      if (open == std::string::npos) return n;
      const std::string close = ")" + t_.substr(q + 1, open - q - 1) + "\"";
      const auto e = t_.find(close, open + 1);
      return e == std::string::npos ? n : e + close.size();
    }
    const char quote = t_[q];
    std::size_t i = q + 1;
    while (i < n && t_[i] != quote && t_[i] != '\n') i += t_[i] == '\\' ? 2 : 1;
    return std::min(n, i + 1);
  }

  /// After `__has_include`: past `( <name> )` or `( "name" )` when that is what follows on the line
  /// (the header name is skipped, the parentheses are left to the scanner); else `i` unchanged.
  [[nodiscard]] std::size_t skip_header_name_argument(std::size_t i) const {
    std::size_t k = i;
    while (at(k) == ' ' || at(k) == '\t') ++k;
    if (at(k) != '(') return i;
    ++k;
    while (at(k) == ' ' || at(k) == '\t') ++k;
    const char open = at(k);
    if (open != '<' && open != '"') return i;
    const char close = open == '<' ? '>' : '"';
    for (std::size_t e = k + 1; e < t_.size() && t_[e] != '\n'; ++e)
      if (t_[e] == close) return e + 1;
    return i;
  }

  /// A pp-number, digit separators (1'000) and exponent signs included.
  std::size_t number(std::size_t i) const {
    const std::size_t n = t_.size();
    while (i < n) {
      const char c = t_[i];
      if ((c == '+' || c == '-') && i > 0 && std::strchr("eEpP", t_[i - 1])) {
        ++i;
        continue;
      }
      if (c == '\'' && i + 1 < n && ident_char(t_[i + 1])) {
        i += 2;
        continue;
      }
      if (ident_char(c) || c == '.') {
        ++i;
        continue;
      }
      break;
    }
    return i;
  }

  /// A directive whose name starts after `from` (the '#' was at `hash`); advances past what it consumed.
  verdict directive(std::size_t from, std::size_t& i) {
    const std::size_t n = t_.size();
    std::size_t j = from;
    while (j < n && (t_[j] == ' ' || t_[j] == '\t')) ++j;
    std::size_t k = j;
    while (k < n && ident_char(t_[k])) ++k;
    const std::string_view name(t_.data() + j, k - j);
    const std::size_t hash = i;
    i = k;
    if (name.empty()) return verdict::pass();  // the null directive
    if (std::find(std::begin(allowed_directives), std::end(allowed_directives), name) == std::end(allowed_directives))
      return refuse(hash, "preprocessor directive #" + std::string(name) + " is not allowed in host candidates");
    if (name == "error" || name == "warning") {  // the rest of the line is a diagnostic's text, not code
      const auto nl = t_.find('\n', k);
      i = nl == std::string::npos ? n : nl;
      return verdict::pass();
    }
    if (name != "include") return verdict::pass();
    while (k < n && (t_[k] == ' ' || t_[k] == '\t')) ++k;
    const char open = at(k);
    if (open != '<' && open != '"')
      return refuse(hash, "computed #include (a macro instead of <header> or \"header\") is not allowed");
    const char close = open == '<' ? '>' : '"';
    const auto e = t_.find(close, k + 1);
    const auto nl = t_.find('\n', k + 1);
    if (e == std::string::npos || (nl != std::string::npos && e > nl)) return refuse(hash, "malformed #include");
    const std::string header = t_.substr(k + 1, e - k - 1);
    i = e + 1;
    if (std::find(pol_.allowed_includes.begin(), pol_.allowed_includes.end(), header) != pol_.allowed_includes.end())
      return verdict::pass();
    std::string allowed;
    for (auto const& h : pol_.allowed_includes) allowed += (allowed.empty() ? "<" : ", <") + h + ">";
    return refuse(hash, "#include " + std::string(1, open) + header + std::string(1, close) +
                            " is not allowed in host candidates; allowed headers: " + allowed);
  }

  host_source_policy const& pol_;
  std::string t_;
  std::vector<int> line_;
  std::string_view prev_;
};

}  // namespace detail::source_scan

verdict inspect_host_source(std::string_view source, host_source_policy const& policy) {
  if (!policy.enabled) return verdict::pass();
  return detail::source_scan::scanner(source, policy).run();
}

}  // namespace kernelbrain
