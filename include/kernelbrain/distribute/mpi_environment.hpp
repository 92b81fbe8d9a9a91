// RAII for MPI in the evaluation pool (MPI_Init_thread ... MPI_Finalize, errors returned as
// kernelbrain::error), and the device key that tells members of different machines apart. Includes
// MPI's C API only (see mpi_pool.hpp).
#pragma once
// The C API only: Open MPI's C++ bindings are deprecated and need libmpi_cxx at link time.
#if !defined(OMPI_SKIP_MPICXX)
#define OMPI_SKIP_MPICXX 1
#endif
#if !defined(MPICH_SKIP_MPICXX)
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include "kernelbrain/core/error.hpp"

namespace kernelbrain::mpi {

namespace detail {

/// Throws kernelbrain::error with MPI's own words for a failed call (errors return rather than abort:
/// environment sets MPI_ERRORS_RETURN).
inline void check(int rc, char const* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int n = 0;
  if (MPI_Error_string(rc, text, &n) != MPI_SUCCESS) n = 0;
  throw error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(n)) +
              " (an MPI failure ends the evaluation pool: see the MPI library's messages, and check that "
              "every rank is still running)");
}

}  // namespace detail

/// RAII for MPI: MPI_Init_thread (MPI_THREAD_SERIALIZED or better) ... MPI_Finalize. One per process,
/// made before anything else uses MPI and destroyed after the remote_pool (or serve()) is done.
class environment {
 public:
  environment(int* argc, char*** argv) {
    int already = 0;
    detail::check(MPI_Initialized(&already), "MPI_Initialized");
    if (already)
      throw error(
          "mpi::environment: MPI is already initialised: make one mpi::environment, before anything "
          "else in the program uses MPI");
    int provided = MPI_THREAD_SINGLE;
    detail::check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw error("the MPI library provides thread level " + std::to_string(provided) +
                  ", below MPI_THREAD_SERIALIZED, which the MPI evaluation pool needs (its communication "
                  "thread is not the main thread): use an MPI built with thread support (Open MPI and MPICH "
                  "are by default)");
    }
    // Failures become kernelbrain::error with MPI's message instead of aborting the job unexplained.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int n = 0;
    if (MPI_Get_processor_name(name, &n) == MPI_SUCCESS && n > 0) node_.assign(name, static_cast<std::size_t>(n));
    if (node_.empty()) node_ = "unknown";
  }
  ~environment() { MPI_Finalize(); }
  environment(environment const&) = delete;
  environment& operator=(environment const&) = delete;

  // Read once at construction: callable from any thread while the pool's thread owns MPI.
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] std::string node() const { return node_; }  ///< MPI_Get_processor_name

  /// Ends every rank of the job (MPI_Abort on MPI_COMM_WORLD). For a fatal error only: it does not
  /// wait for the pool's thread, which may be inside MPI at that moment.
  [[noreturn]] void abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return; if it does, do not run destructors that use MPI
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string node_;
};

/// The device key of a member on `node` (a processor name): members that time on the same device of
/// the same machine, whichever rank they belong to, must share it (evaluator_pool makes them take
/// turns), and those of different machines must not. Empty stays empty: a device of its own.
[[nodiscard]] inline std::string device_key(std::string const& node, std::string const& device) {
  return device.empty() ? std::string() : node + "/" + device;
}

}  // namespace kernelbrain::mpi
