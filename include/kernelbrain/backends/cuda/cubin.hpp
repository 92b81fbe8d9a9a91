// What a CUDA cubin says about its kernels: entry points, parameters and static resources, read from
// the ELF file itself (symbol table, .nv.info attributes, .nv.shared sections). This, not the ptxas
// report, is the authority: NVRTC prints no report when the CUDA compute cache already holds the
// cubin. No CUDA header or library: it reads bytes, so it runs on machines without a GPU.
// Bodies: impl/cubin.ipp.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>
#include "kernelbrain/config.hpp"

namespace kernelbrain {

/// One entry point (`__global__` function) of a cubin.
struct cubin_kernel {
  std::string name;                            ///< the symbol: the plain name for extern "C", else mangled
  int registers = 0;                           ///< registers per thread (EIATTR_REGCOUNT)
  int local_bytes = 0;                         ///< local memory per thread: the stack frame (EIATTR_FRAME_SIZE)
  int static_smem = 0;                         ///< static shared memory per block, without what the device reserves
  int max_threads = 0;                         ///< __launch_bounds__ threads per block; 0: none declared
  std::array<int, 3> required_block{0, 0, 0};  ///< a required block shape (reqntid); zeros: none
  std::vector<int> param_sizes;                ///< size in bytes of each parameter, in declaration order
};

/// What read_cubin found.
struct cubin_info {
  int sm = 0;  ///< the target (90 for sm_90 and sm_90a)
  std::vector<cubin_kernel> kernels;
  std::vector<std::string> imports;  ///< functions the module calls but does not define (malloc, vprintf, ...)

  [[nodiscard]] cubin_kernel const* find(std::string_view name) const noexcept {
    for (auto const& k : kernels)
      if (k.name == name) return &k;
    return nullptr;
  }
  /// The entry points' names, comma-separated ("none" when there are none).
  [[nodiscard]] std::string names() const {
    std::string s;
    for (auto const& k : kernels) s += (s.empty() ? "" : ", ") + k.name;
    return s.empty() ? "none" : s;
  }
};

/// Reads a cubin image. Throws kernelbrain::error naming what is malformed; never reads outside
/// `image`, whatever its bytes.
[[nodiscard]] KERNELBRAIN_DECL cubin_info read_cubin(std::string_view image);
/// read_cubin on a file's contents. Throws kernelbrain::error when it cannot be read.
[[nodiscard]] KERNELBRAIN_DECL cubin_info read_cubin_file(std::string const& path);

}  // namespace kernelbrain

#if KERNELBRAIN_HEADER_ONLY
#include "kernelbrain/backends/cuda/impl/cubin.ipp"
#endif
