// kernelbrain tune's evaluation pool: the evaluators of this process (one per CUDA device, times
// --workers-per-device; one host or synthetic backend, times --workers-per-device) and, under --mpi,
// the job's other ranks (mpi_job). docs/scaling.md.
#pragma once
#include <any>
#include <kernelbrain/search.hpp>
#include <memory>
#include <string>
#include <vector>
#include "arguments.hpp"

namespace kernelbrain::cli {

/// The evaluators this process owns, and the pool they make (which remote members may join).
struct local_pool {
  std::vector<std::unique_ptr<evaluator>> backends;  ///< the backend evaluators, one per member
  std::vector<std::unique_ptr<evaluator>> wrappers;  ///< --slow-eval-ms wrappers around them, if any
  evaluator_pool pool;
};

/// Makes this process's members for `backend` (a registered backend; `context`: backend_request::context,
/// the synthetic backend's landscape).
/// Under MPI, `label_prefix` ("rank 0 ") starts each label and `node` (the host name) each device key,
/// so that members of several ranks on one machine that time on one device take turns; both empty
/// otherwise.
[[nodiscard]] local_pool make_local_pool(problem const& prob, std::string const& backend, tune_options const& o,
                                         std::any const& context = {}, std::string const& label_prefix = {},
                                         std::string const& node = {});

/// One line about the backends' work for the summary (empty when they have nothing to say).
[[nodiscard]] std::string backend_note(local_pool const& local);

/// A whole MPI job: rank 0 searches, the others serve their members (apps/kernelbrain/mpi_job.cpp;
/// without MPI, mpi_job_none.cpp refuses --mpi). MPI is initialised by the constructor and finalised
/// by the destructor.
class mpi_job {
 public:
  explicit mpi_job(double lost_after_seconds);
  ~mpi_job();
  mpi_job(mpi_job const&) = delete;
  mpi_job& operator=(mpi_job const&) = delete;

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  [[nodiscard]] std::string node() const;  ///< this rank's host name
  /// Ranks > 0: serves `local` to rank 0 until the search ends.
  void serve(evaluator_pool const& local, problem const& prob, std::string const& problem_name);
  /// Ranks > 0 that could not make their members: tells rank 0 why, then waits for the end.
  void refuse(std::string const& why);
  /// Rank 0: adds every other rank's members to `pool`. Throws kernelbrain::error naming a rank that
  /// refused or did not answer.
  void connect(evaluator_pool& pool, std::string const& problem_name);
  /// Rank 0: how many ranks were given up during the search.
  [[nodiscard]] std::size_t lost_ranks() const;
  /// Rank 0: tells every rank the search is over.
  void shutdown();
  /// Ends the whole job now (MPI_Abort), with `code`: what a rank does after an error it printed.
  [[noreturn]] void abort(int code);

 private:
  struct impl;
  std::unique_ptr<impl> p_;
};

}  // namespace kernelbrain::cli
