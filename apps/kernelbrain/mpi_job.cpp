// mpi_job over Open MPI (or any MPI): kernelbrain/distribute/mpi_pool.hpp wired for kernelbrain tune.
#include <kernelbrain/distribute/mpi_pool.hpp>
#include <memory>
#include <optional>
#include <string>
#include "pool.hpp"

namespace kernelbrain::cli {

struct mpi_job::impl {
  mpi::environment env{nullptr, nullptr};
  mpi::options opt;
  std::optional<mpi::remote_pool> remote;  ///< rank 0, once connected; destroyed before env
};

mpi_job::mpi_job(double lost_after_seconds) : p_(std::make_unique<impl>()) {
  p_->opt.lost_after_seconds = lost_after_seconds;
}
mpi_job::~mpi_job() {
  if (p_ && p_->remote) p_->remote->shutdown();
}
int mpi_job::rank() const { return p_->env.rank(); }
int mpi_job::size() const { return p_->env.size(); }
std::string mpi_job::node() const { return p_->env.node(); }

void mpi_job::serve(evaluator_pool const& local, problem const& prob, std::string const& problem_name) {
  try {
    mpi::serve(p_->env, local.members(), problem_name, prob, p_->opt);
  } catch (std::exception const& e) {
    // MPI_Finalize would wait for rank 0, which is gone: end the job instead.
    std::fprintf(stderr, "kernelbrain: error (MPI rank %d): %s\n", rank(), e.what());
    abort(exit_internal);
  }
}

void mpi_job::refuse(std::string const& why) {
  try {
    mpi::refuse(p_->env, why, p_->opt);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "kernelbrain: error (MPI rank %d): %s\n", rank(), e.what());
    abort(exit_usage);
  }
}

void mpi_job::connect(evaluator_pool& pool, std::string const& problem_name) {
  p_->remote.emplace(p_->env, problem_name, p_->opt);
  p_->remote->add_to(pool);
}

std::size_t mpi_job::lost_ranks() const { return p_->remote ? p_->remote->lost_ranks() : 0; }

void mpi_job::shutdown() {
  if (p_->remote) p_->remote->shutdown();
}

void mpi_job::abort(int code) { p_->env.abort(code); }

}  // namespace kernelbrain::cli
