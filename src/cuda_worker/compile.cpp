// --compile: NVRTC-compiles a candidate's source to a cubin for the evaluator (run under a time
// limit); prints the compiler log, exit 1 on failure.
#include <nvrtc.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>
#include "modes.hpp"
#include "one_shot.hpp"

namespace kernelbrain::cuda_worker {

int compile_mode(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: kernelbrain-cuda-worker --compile SRC OUT.cubin [NVRTC OPTIONS...]\n");
    return 2;
  }
  die_with_parent();
  const std::string src = read_text(argv[2]);
  std::vector<char const*> opts;
  for (int i = 4; i < argc; ++i) opts.push_back(argv[i]);
  opts.push_back("--ptxas-options=-v");  // spill counts, when ptxas runs (not on a compute-cache hit)
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src.c_str(), "candidate.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    std::printf("nvrtcCreateProgram failed\n");
    return 1;
  }
  const auto rc = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  std::size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  std::string log(n, '\0');
  if (n) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  std::fwrite(log.data(), 1, log.size(), stdout);
  std::printf("\n");
  if (rc != NVRTC_SUCCESS) {
    std::printf("NVRTC: %s\n", nvrtcGetErrorString(rc));
    return 1;
  }
  std::size_t cn = 0;
  if (nvrtcGetCUBINSize(prog, &cn) != NVRTC_SUCCESS || cn == 0) {
    std::printf("NVRTC produced no cubin\n");
    return 1;
  }
  std::string bin(cn, '\0');
  nvrtcGetCUBIN(prog, bin.data());
  nvrtcDestroyProgram(&prog);
  const std::string tmp = std::string(argv[3]) + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(bin.data(), static_cast<std::streamsize>(bin.size()));
    if (!out) {
      std::printf("cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), argv[3]) != 0) {
    std::printf("cannot rename %s\n", tmp.c_str());
    return 1;
  }
  return 0;
}

}  // namespace kernelbrain::cuda_worker
