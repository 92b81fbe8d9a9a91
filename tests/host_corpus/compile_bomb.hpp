// The corpus's compile bomb (compile_bomb.cpp beside this file) for a test whose problem is not the
// corpus's: tests/test_cli.cpp kills a search while cc1plus compiles it. One text for both, so that
// the bomb the compile limit is shown to stop is the bomb a kill is shown to reap.
#pragma once
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include "../temp_dir.hpp"

namespace kb_corpus {

/// compile_bomb.cpp with the root of its instantiation tree at `index` (a number, or a template's
/// ${PARAM}: each value is then another bomb, which no artifact cache answers) and its result stored
/// in outputs[`output`][0]. The corpus's header lines stay, as comments.
inline std::string compile_bomb(std::string_view index, int output = 0) {
  const auto file = std::filesystem::path(KB_SOURCE_DIR) / "tests" / "host_corpus" / "compile_bomb.cpp";
  auto text = kb_test::slurp(file);
  auto swap = [&](std::string_view from, std::string const& to) {
    const auto at = text.find(from);
    if (at == std::string::npos)
      throw std::logic_error(file.string() + " no longer holds '" + std::string(from) + "': update " + __FILE__);
    text.replace(at, from.size(), to);
  };
  swap("node<40, 0>::value", "node<40, " + std::string(index) + ">::value");
  swap("a->outputs[1][0]", "a->outputs[" + std::to_string(output) + "][0]");
  return text;
}

}  // namespace kb_corpus
