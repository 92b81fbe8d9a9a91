// The MPI evaluation pool: one search process (MPI rank 0) dispatches evaluations to evaluators that
// live on the other ranks (their GPUs, or the host backend), and sees each of them as an ordinary
// kernelbrain::evaluator, a member of its evaluator_pool. Header-only and not part of search.hpp:
// include it where MPI is linked (the CMake target kernelbrain::mpi). The messages are JSON, so the
// program needs Boost.JSON's library source once (kernelbrain::runtime, or kernelbrain/src.hpp).
//
// Threads and MPI. On rank 0 one communication thread makes every MPI call after MPI_Init, so
// MPI_THREAD_SERIALIZED is enough; evaluator calls, from many threads, post their request to it and
// wait for the reply. On a serving rank the thread in serve() makes every MPI call, and one thread per
// member runs that member's calls, so the rank's GPUs work at once. Nothing waits inside MPI: sends
// are MPI_Isend, their buffers kept until MPI_Test says they are done, and a message is received only
// after MPI_Iprobe saw it arrive; an idle loop sleeps half a millisecond. Blocking sends of large
// messages in both directions deadlock, and Open MPI's blocking calls spin a core, which would starve
// the evaluators of ranks that share a machine.
//
// Faults. A serving rank sends a heartbeat every heartbeat_seconds, even while its members are busy
// (a three-minute compute-sanitizer run is not a dead rank). Rank 0 declares a rank lost when it has
// heard nothing from it for lost_after_seconds: the calls waiting on it, and every later call to its
// members, throw evaluator_lost, and the pool re-queues those evaluations on other members. Rank 0
// also sends heartbeats, and a serving rank that hears nothing from rank 0 for that long stops with
// an error rather than wait for ever.
//
// Ending. MPI_Finalize waits for every rank, so a program that cannot end normally (remote_pool's
// constructor threw because a rank never said hello, serve() threw) should end the job with
// environment::abort() rather than return.
//
// The pieces, one a file beside this one, all included here: mpi_options.hpp (options),
// mpi_environment.hpp (environment, device_key), wire.hpp (the messages), transport.hpp (sends and
// receives), hub.hpp (rank 0's communication thread), remote_evaluator.hpp, remote_pool.hpp (rank 0's
// view of the other ranks) and server.hpp (a serving rank: serve(), refuse()).
#pragma once
#include "kernelbrain/distribute/hub.hpp"
#include "kernelbrain/distribute/mpi_environment.hpp"
#include "kernelbrain/distribute/mpi_options.hpp"
#include "kernelbrain/distribute/remote_evaluator.hpp"
#include "kernelbrain/distribute/remote_pool.hpp"
#include "kernelbrain/distribute/server.hpp"
#include "kernelbrain/distribute/transport.hpp"
#include "kernelbrain/distribute/wire.hpp"
