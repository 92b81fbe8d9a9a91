// read_text and die_with_parent, for the worker's one-shot modes.
#include "one_shot.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include "kernelbrain/isolation/process_supervision.hpp"

namespace kernelbrain::cuda_worker {

std::string read_text(char const* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void die_with_parent() {
  if (!kernelbrain::detail::supervision::die_with_parent()) std::_Exit(3);
}

}  // namespace kernelbrain::cuda_worker
