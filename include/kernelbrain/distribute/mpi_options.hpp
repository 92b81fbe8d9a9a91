// The MPI evaluation pool's options: heartbeats, how long silence means a lost rank, how long rank 0
// waits for the other ranks to connect (see mpi_pool.hpp).
#pragma once
#include <functional>

namespace kernelbrain::mpi {

struct options {
  double heartbeat_seconds = 1;  ///< serving ranks (and rank 0) send a heartbeat this often
  /// Rank 0 declares a rank lost after this long without any message from it; a serving rank stops
  /// after this long without any message from rank 0.
  double lost_after_seconds = 60;
  /// Rank 0 waits this long for every rank's hello. A serving rank waits this long plus
  /// lost_after_seconds for rank 0's first message: construct the remote_pool early on rank 0.
  double connect_timeout_seconds = 120;
  /// Tests only: while this returns true the rank sends nothing (messages are dropped), but it still
  /// reads what comes and a serving rank obeys rank 0's stop: a rank behind a dead link, as the other
  /// side sees it. Called on the thread that makes the MPI calls (serve()'s; rank 0's pool thread).
  std::function<bool()> test_silence;
};

}  // namespace kernelbrain::mpi
