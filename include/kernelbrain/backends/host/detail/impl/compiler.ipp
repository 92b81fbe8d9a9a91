// Bodies of kernelbrain/backends/host/detail/compiler.hpp.
// Included by its header (header-only form) or by kernelbrain/src.hpp (separate compilation): see
// kernelbrain/config.hpp.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include "kernelbrain/backends/host/detail/compiler.hpp"
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/hash.hpp"
#include "kernelbrain/isolation/worker_process.hpp"

namespace kernelbrain::detail {
namespace host_build {

namespace fs = std::filesystem;

/// Written next to the artifacts and force-included into every compile: a kb_kernel with another
/// signature becomes a compile error, and one written without extern "C" still gets C linkage.
inline constexpr char const* prelude_text =
    "/* Written by KernelBrain's host backend; every host source is compiled with -include of this file. */\n"
    "#include \"kernelbrain/evaluate/host_abi.h\"\n"
    "#ifdef __cplusplus\n"
    "extern \"C\" void kb_kernel(const kb_args* args);\n"
    "#endif\n";

inline std::string read_file(fs::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes a file through a unique temporary name and a rename: readers never see half a file.
inline bool write_file_atomically(fs::path const& p, std::string_view text) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = p.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out.write(text.data(), static_cast<std::streamsize>(text.size()))) return false;
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return true;
}

inline void replace_all(std::string& s, std::string const& from, std::string const& to) {
  if (from.empty()) return;
  for (std::size_t i = 0; (i = s.find(from, i)) != std::string::npos; i += to.size()) s.replace(i, from.size(), to);
}

/// The first lines of compiler output: enough to see the error, short enough for a journal line.
inline std::string first_lines(std::string const& text, std::size_t max_lines = 20, std::size_t max_chars = 2500) {
  std::string out;
  std::size_t lines = 0, pos = 0;
  while (pos < text.size() && lines < max_lines && out.size() < max_chars) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.append(text, pos, nl - pos);
    out += '\n';
    pos = nl + 1;
    ++lines;
  }
  if (out.size() > max_chars) out.resize(max_chars);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (pos < text.size()) out += "\n[...]";
  return out;
}

inline std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", s);
  return b;
}

}  // namespace host_build

host_compiler::host_compiler(host_compiler_options o) : opt_(std::move(o)) {
  using namespace detail::host_build;
  if (opt_.include_dir.empty()) {
    // This file is <include>/kernelbrain/backends/host/detail/impl/compiler.ipp: <include> is the
    // parent of the nearest folder named kernelbrain.
    fs::path dir = fs::path(__FILE__).parent_path();
    while (dir.has_relative_path() && dir.filename() != "kernelbrain") dir = dir.parent_path();
    opt_.include_dir = dir.parent_path().string();
  }
  // Candidates include kernelbrain/evaluate/host_abi.h, which includes the ABI itself
  // (kernelbrain/backends/host/abi.h); the ABI's text is part of every artifact's cache key.
  const fs::path abi_path = fs::path(opt_.include_dir) / "kernelbrain" / "evaluate" / "host_abi.h";
  const fs::path abi = fs::path(opt_.include_dir) / "kernelbrain" / "backends" / "host" / "abi.h";
  for (fs::path const& p : {abi_path, abi})
    if (!fs::exists(p))
      throw error("host backend: cannot find the candidate ABI header '" + p.string() +
                  "': set host_options::include_dir to the directory that holds kernelbrain/evaluate/host_abi.h");
  abi_text_ = read_file(abi);

  auto probe = run_captured({opt_.compiler, "--version"}, std::chrono::seconds(30));
  if (!probe.succeeded())
    throw error("host backend: cannot run the C++ compiler '" + opt_.compiler + "' (" +
                (probe.started ? (probe.timed_out ? std::string("no answer to --version in 30 s")
                                                  : describe_wait_status(probe.wait_status))
                               : probe.output) +
                "): install one (e.g. g++) or set host_options::compiler");
  version_ = probe.output.substr(0, probe.output.find('\n'));

  if (opt_.cache_dir.empty()) opt_.cache_dir = default_cache_dir();
  dir_ = (fs::path(opt_.cache_dir) / "host").string();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::path prelude = fs::path(dir_) / "kb_prelude.h";
  const bool prelude_ok = !ec && ((fs::exists(prelude) && read_file(prelude) == prelude_text) ||
                                  write_file_atomically(prelude, prelude_text));
  if (!prelude_ok)
    throw error("host backend: cannot use the artifact cache directory '" + dir_ + "'" +
                (ec ? ": " + ec.message() : std::string{}) +
                ": set host_options::cache_dir (or KERNELBRAIN_CACHE_DIR) to a writable directory");
  prelude_ = prelude.string();
  if (opt_.limiter.empty())
    throw error("host backend: host_compiler needs the worker executable to apply compile limits");
}

std::string host_compiler::flags_text() const {
  std::string s;
  for (auto const& f : opt_.flags) {
    if (!s.empty()) s += ' ';
    s += f;
  }
  return s;
}

compile_result host_compiler::compile(std::string_view source) {
  using namespace detail::host_build;
  static std::atomic<unsigned> counter{0};
  compile_result out;
  const std::string key = to_hex(hasher{}
                                     .bytes("host-compile/v1")
                                     .bytes(source)
                                     .bytes(flags_text())
                                     .bytes(version_)
                                     .bytes(opt_.compiler)
                                     .bytes(abi_text_)
                                     .bytes(prelude_text)
                                     .digest());
  const fs::path so = fs::path(dir_) / (key + ".so");
  std::error_code ec;
  if (fs::exists(so, ec)) {
    out.artifact = so.string();
    out.cache_hit = true;
    return out;
  }
  const std::string stem =
      (fs::path(dir_) / ("tmp-" + key + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
  const std::string cpp = stem + ".cpp", tmp_so = stem + ".so";
  {
    std::ofstream f(cpp, std::ios::binary | std::ios::trunc);
    if (!f.write(source.data(), static_cast<std::streamsize>(source.size())))
      throw error("host backend: cannot write '" + cpp + "': is the cache directory full or read-only?");
  }
  std::vector<std::string> argv{opt_.compiler};
  argv.insert(argv.end(), opt_.flags.begin(), opt_.flags.end());
  for (char const* f : {"-fPIC", "-shared", "-pthread", "-Wl,--no-undefined"}) argv.emplace_back(f);
  argv.insert(argv.end(), {"-I", opt_.include_dir, "-include", prelude_, "-o", tmp_so, cpp});
  const double limit_s = static_cast<double>(opt_.time_limit.count()) / 1000.0;
  process_limits lim;
  lim.address_space_bytes = opt_.memory_bytes;
  lim.cpu_seconds = static_cast<std::uint64_t>(std::ceil(limit_s)) + 1;
  lim.file_size_bytes = std::uint64_t{512} << 20;
  const auto r = run_captured(limited_command(opt_.limiter, lim, argv), opt_.time_limit, 256 * 1024);
  out.seconds = r.seconds;
  std::string text = r.output;
  replace_all(text, cpp, "candidate.cpp");
  replace_all(text, tmp_so, "candidate.so");
  replace_all(text, prelude_, "kb_prelude.h");
  auto cleanup = [&] {
    fs::remove(cpp, ec);
    fs::remove(tmp_so, ec);
  };
  if (!r.started) {
    cleanup();
    throw error("host backend: cannot start the compile wrapper '" + opt_.limiter + "': " + r.output);
  }
  const bool killed = r.timed_out || (WIFSIGNALED(r.wait_status) &&
                                      (WTERMSIG(r.wait_status) == SIGKILL || WTERMSIG(r.wait_status) == SIGXCPU));
  if (killed || !r.succeeded()) cleanup();
  if (killed) {
    out.result =
        verdict::reject(stage::compile, "compile exceeded " + seconds_text(limit_s) +
                                            " s and was killed (a compile bomb, or raise the compile time limit)");
    return out;
  }
  if (!r.succeeded()) {
    if (text.find("cannot run '") != std::string::npos && WIFEXITED(r.wait_status) && WEXITSTATUS(r.wait_status) == 127)
      throw error("host backend: " + first_lines(text, 3) +
                  ": set host_options::compiler to an installed C++ compiler");
    const bool memory = text.find("virtual memory exhausted") != std::string::npos ||
                        text.find("out of memory") != std::string::npos ||
                        text.find("std::bad_alloc") != std::string::npos;
    const bool signature =
        text.find("kb_kernel") != std::string::npos &&
        (text.find("conflicting") != std::string::npos || text.find("ambiguating") != std::string::npos ||
         text.find("exception specifier") != std::string::npos || text.find("later 'static'") != std::string::npos);
    if (signature)
      out.result = verdict::reject(
          stage::signature,
          "kb_kernel must be declared extern \"C\" void kb_kernel(const kb_args* args):\n" + first_lines(text));
    else if (memory)
      out.result = verdict::reject(stage::compile, "compile ran out of its " + std::to_string(opt_.memory_bytes >> 20) +
                                                       " MiB memory limit:\n" + first_lines(text));
    else
      out.result = verdict::reject(stage::compile, "compile error:\n" + first_lines(text));
    return out;
  }
  // Publish atomically: other processes sharing the cache see a whole artifact or none.
  fs::rename(tmp_so, so, ec);
  if (ec) {
    cleanup();
    throw error("host backend: cannot move the compiled artifact into '" + dir_ + "': " + ec.message());
  }
  fs::rename(cpp, fs::path(dir_) / (key + ".cpp"), ec);  // the source beside its artifact, for inspection
  out.artifact = so.string();
  return out;
}

}  // namespace kernelbrain::detail
