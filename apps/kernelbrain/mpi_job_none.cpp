// mpi_job without MPI: this kernelbrain was built without an MPI library, so --mpi is refused.
#include <cstdlib>
#include <string>
#include "pool.hpp"

namespace kernelbrain::cli {

struct mpi_job::impl {};

mpi_job::mpi_job(double /*lost_after_seconds*/) {
  throw usage_error(
      "--mpi: this kernelbrain was built without MPI (CMake found no MPI library): install Open MPI "
      "(apt-get install libopenmpi-dev openmpi-bin) and build again, or run without --mpi");
}
mpi_job::~mpi_job() = default;
int mpi_job::rank() const { return 0; }
int mpi_job::size() const { return 1; }
std::string mpi_job::node() const { return {}; }
void mpi_job::serve(evaluator_pool const& /*local*/, problem const& /*prob*/, std::string const& /*problem_name*/) {}
void mpi_job::refuse(std::string const& /*why*/) {}
void mpi_job::connect(evaluator_pool& /*pool*/, std::string const& /*problem_name*/) {}
std::size_t mpi_job::lost_ranks() const { return 0; }
void mpi_job::shutdown() {}
void mpi_job::abort(int code) { std::exit(code); }

}  // namespace kernelbrain::cli
