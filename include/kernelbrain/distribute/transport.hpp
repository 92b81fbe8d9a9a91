// The MPI evaluation pool's transport: sends in flight kept until MPI says they are done (outbox), and
// polling for a message that has arrived (never waiting inside MPI; see mpi_pool.hpp).
#pragma once
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/distribute/mpi_environment.hpp"

namespace kernelbrain::mpi {

namespace detail {

using clock = std::chrono::steady_clock;

[[nodiscard]] inline clock::duration seconds(double s) {
  return std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s));
}

/// "60", "2.5": seconds in messages.
[[nodiscard]] inline std::string show_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

/// How long an idle MPI loop sleeps: short enough for latency, long enough not to spin a core.
inline constexpr auto idle_wait = std::chrono::microseconds(500);

/// Sends in flight. Each body lives in a list node, which never moves, until MPI_Test says its send
/// is done.
class outbox {
 public:
  outbox() = default;
  outbox(outbox const&) = delete;
  outbox& operator=(outbox const&) = delete;
  ~outbox() { abandon(); }

  void send(int dest, int tag, std::string body) {
    if (body.size() > static_cast<std::size_t>(INT_MAX))
      throw error("an MPI message of " + std::to_string(body.size()) +
                  " bytes is over MPI's 2 GiB count limit (a candidate's source this large is a mistake)");
    auto& e = sends_.emplace_back();
    e.body = std::move(body);
    const int rc =
        MPI_Isend(e.body.data(), static_cast<int>(e.body.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &e.request);
    if (rc != MPI_SUCCESS) sends_.pop_back();
    check(rc, "MPI_Isend");
  }

  /// Retires the sends that are done.
  void progress() {
    for (auto it = sends_.begin(); it != sends_.end();) {
      int done = 0;
      check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      it = done ? sends_.erase(it) : std::next(it);
    }
  }
  [[nodiscard]] bool empty() const noexcept { return sends_.empty(); }

  /// Waits up to `limit` for the sends to be done (a receiver that is gone never takes a large one),
  /// then abandons the rest.
  void drain(clock::duration limit) {
    const auto until = clock::now() + limit;
    while (!sends_.empty() && clock::now() < until) {
      progress();
      if (!sends_.empty()) std::this_thread::sleep_for(idle_wait);
    }
    for (auto& e : sends_) MPI_Request_free(&e.request);  // MPI completes them on its own
    abandon();
  }

 private:
  struct entry {
    std::string body;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  /// Sends still in flight when the loop ends keep their buffers until the process ends (after
  /// MPI_Finalize): MPI may still read them, and freeing them now would be a use after free in MPI.
  void abandon() noexcept {
    if (sends_.empty()) return;
    static std::mutex mu;
    static std::list<entry> kept;
    std::lock_guard lk(mu);
    kept.splice(kept.end(), sends_);  // moves no buffer: list nodes stay where they are
  }
  std::list<entry> sends_;
};

struct message {
  int source = 0;
  int tag = 0;
  std::string body;
};

/// The next message from `source` (or MPI_ANY_SOURCE) that has arrived, or nothing: never waits for
/// one to come.
inline std::optional<message> poll(int source) {
  int arrived = 0;
  MPI_Status st{};
  check(MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &st), "MPI_Iprobe");
  if (!arrived) return std::nullopt;
  int n = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &n), "MPI_Get_count");
  message m{st.MPI_SOURCE, st.MPI_TAG, std::string(static_cast<std::size_t>(n), '\0')};
  check(MPI_Recv(m.body.data(), n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  return m;
}

}  // namespace detail

}  // namespace kernelbrain::mpi
