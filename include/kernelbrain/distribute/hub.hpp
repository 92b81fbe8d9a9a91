// Rank 0's side of the MPI evaluation pool: the communication thread that makes every MPI call, the
// calls waiting on it, and what it knows of each serving rank (see mpi_pool.hpp).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator_pool.hpp"
#include "kernelbrain/distribute/mpi_environment.hpp"
#include "kernelbrain/distribute/mpi_options.hpp"
#include "kernelbrain/distribute/transport.hpp"
#include "kernelbrain/distribute/wire.hpp"

namespace kernelbrain::mpi {

namespace detail {

/// Rank 0's side: the communication thread, the calls waiting on it, and what it knows of each rank.
class hub {
 public:
  hub(environment const& env, options o) : o_(std::move(o)), ranks_(static_cast<std::size_t>(env.size())) {
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].rank = static_cast<int>(r);
    thread_ = std::thread([this] { run(); });
  }
  ~hub() { shutdown(); }
  hub(hub const&) = delete;
  hub& operator=(hub const&) = delete;

  /// Every rank's hello, once all have said it or connect_timeout_seconds have passed (nothing for a
  /// rank that did not say it in time). Index: rank; [0] is empty.
  std::vector<std::optional<wire::hello>> await_hellos() {
    std::unique_lock lk(mu_);
    const auto all = [&] {
      for (std::size_t r = 1; r < ranks_.size(); ++r)
        if (!ranks_[r].said) return false;
      return true;
    };
    changed_.wait_until(lk, clock::now() + seconds(o_.connect_timeout_seconds), [&] { return all() || finished_; });
    if (!broken_.empty()) throw error(broken_);
    std::vector<std::optional<wire::hello>> out(ranks_.size());
    for (std::size_t r = 1; r < ranks_.size(); ++r) out[r] = ranks_[r].said;
    return out;
  }

  /// "rank R (node X)", X as rank R named its node in its hello: for messages.
  [[nodiscard]] std::string where(int r) const {
    std::lock_guard lk(mu_);
    return where_locked(r);
  }

  /// Sends `req` to rank `r` and waits for its reply. Throws evaluator_lost when the rank is lost
  /// (before or while waiting), kernelbrain::error once the pool is shut down.
  wire::reply call(int r, wire::request req) {
    req.call = next_call_.fetch_add(1);
    auto body = wire::encode(req);
    std::future<wire::reply> f;
    {
      std::lock_guard lk(mu_);
      refuse_if_closed(r);
      std::promise<wire::reply> p;
      f = p.get_future();
      pending_.emplace(req.call, pending{r, std::move(p)});
      queue_.push_back({r, wire::tag_request, std::move(body)});
    }
    wake_.notify_one();
    return f.get();
  }

  /// Sends `req` without waiting for anything (prefetch: a hint, dropped when the rank is lost).
  void post(int r, wire::request req) {
    req.call = next_call_.fetch_add(1);
    auto body = wire::encode(req);
    {
      std::lock_guard lk(mu_);
      if (ranks_.at(static_cast<std::size_t>(r)).lost || stop_asked_ || finished_) return;
      queue_.push_back({r, wire::tag_request, std::move(body)});
    }
    wake_.notify_one();
  }

  [[nodiscard]] std::size_t lost_ranks() const {
    std::lock_guard lk(mu_);
    std::size_t n = 0;
    for (auto const& r : ranks_) n += r.lost ? 1 : 0;
    return n;
  }

  /// Tells every rank to stop and waits for the acknowledgements of those still alive (at most
  /// lost_after_seconds), then ends the communication thread. Idempotent.
  void shutdown() {
    std::call_once(shut_, [this] {
      {
        std::lock_guard lk(mu_);
        stop_asked_ = true;
      }
      wake_.notify_one();
      if (thread_.joinable()) thread_.join();
    });
  }

 private:
  struct rank_state {
    int rank = 0;
    // Guarded by mu_:
    std::optional<wire::hello> said;
    bool lost = false;
    std::string lost_why;
    // The communication thread's own:
    clock::time_point last_heard{};
    bool stop_sent = false;
    bool acked = false;
  };
  struct pending {
    int rank = 0;
    std::promise<wire::reply> reply;
  };
  struct outgoing {
    int rank = 0;
    int tag = 0;
    std::string body;
  };

  [[nodiscard]] std::string where_locked(int r) const {
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    return "rank " + std::to_string(r) + " (node " + (s.said ? s.said->node : std::string("unknown")) + ")";
  }

  void refuse_if_closed(int r) const {
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    if (s.lost) throw evaluator_lost(s.lost_why);
    if (stop_asked_ || finished_)
      throw error("the MPI evaluation pool is shut down: " + where_locked(r) +
                  " takes no more calls (finish the search before remote_pool::shutdown())");
  }

  /// The communication thread: the only one that calls MPI on rank 0 once the pool exists.
  void run() {
    outbox out;
    try {
      auto last_beat = clock::now();
      std::optional<clock::time_point> stop_at;
      for (;;) {
        bool busy = false;
        const auto now = clock::now();
        for (int i = 0; i < 64; ++i) {  // bounded, so that sends and liveness still get their turn
          auto m = poll(MPI_ANY_SOURCE);
          if (!m) break;
          busy = true;
          on_message(*m, now, out);
        }
        std::deque<outgoing> todo;
        bool stop = false;
        {
          std::lock_guard lk(mu_);
          todo.swap(queue_);
          stop = stop_asked_;
        }
        for (auto& t : todo) {
          busy = true;
          if (!alive(t.rank)) continue;  // its callers already have their evaluator_lost
          send(out, t.rank, t.tag, std::move(t.body));
        }
        if (stop && !stop_at) {
          begin_stop(out);
          stop_at = now;
        }
        if (!stop_at && now - last_beat >= seconds(o_.heartbeat_seconds)) {
          for (std::size_t r = 1; r < ranks_.size(); ++r)
            if (alive(static_cast<int>(r))) send(out, static_cast<int>(r), wire::tag_heartbeat, {});
          last_beat = now;
        }
        check_liveness(now, out);
        out.progress();
        if (stop_at && stopped(now, *stop_at)) break;
        if (!busy) {
          std::unique_lock lk(mu_);
          wake_.wait_for(lk, idle_wait, [&] { return !queue_.empty() || (stop_asked_ && !stop_at); });
        }
      }
      out.drain(seconds(std::min(5.0, o_.lost_after_seconds)));
    } catch (std::exception const& e) {
      fail_everything(std::string("the MPI evaluation pool's communication thread failed: ") + e.what());
    } catch (...) {
      fail_everything("the MPI evaluation pool's communication thread failed with an unknown exception");
    }
    {
      std::lock_guard lk(mu_);
      finished_ = true;
    }
    changed_.notify_all();
  }

  /// Every send of the communication thread: none while options::test_silence says so.
  void send(outbox& out, int r, int tag, std::string body) {
    if (!(o_.test_silence && o_.test_silence())) out.send(r, tag, std::move(body));
  }

  /// Said hello and not lost.
  bool alive(int r) {
    std::lock_guard lk(mu_);
    auto const& s = ranks_.at(static_cast<std::size_t>(r));
    return s.said && !s.lost;
  }

  void on_message(message& m, clock::time_point now, outbox& out) {
    if (m.source <= 0 || static_cast<std::size_t>(m.source) >= ranks_.size()) return;
    auto& s = ranks_[static_cast<std::size_t>(m.source)];
    s.last_heard = now;  // any message at all shows the rank is alive
    switch (m.tag) {
      case wire::tag_hello: {
        wire::hello h;
        try {
          h = wire::decode_hello(m.body);
        } catch (error const& e) {
          h.refused = std::string("its hello cannot be read: ") + e.what();
        }
        {
          std::lock_guard lk(mu_);
          s.said = std::move(h);
        }
        changed_.notify_all();
        break;
      }
      case wire::tag_reply: {
        if (!alive(m.source)) break;  // a late reply from a lost rank: its calls were re-queued
        wire::reply r;
        try {
          r = wire::decode_reply(m.body);
        } catch (error const& e) {
          lose(
              s,
              where(m.source) + " sent a reply this rank cannot read (" + e.what() + "): its evaluations are re-queued",
              out);
          break;
        }
        std::optional<std::promise<wire::reply>> p;
        {
          std::lock_guard lk(mu_);
          if (auto it = pending_.find(r.call); it != pending_.end() && it->second.rank == m.source) {
            p = std::move(it->second.reply);
            pending_.erase(it);
          }
        }
        if (p) p->set_value(std::move(r));
        break;
      }
      case wire::tag_stop_ack:
        s.acked = true;
        break;
      default:  // heartbeats, and anything else, only show that the rank is alive
        break;
    }
  }

  void check_liveness(clock::time_point now, outbox& out) {
    for (std::size_t r = 1; r < ranks_.size(); ++r) {
      auto& s = ranks_[r];
      if (!alive(s.rank) || s.acked || now - s.last_heard <= seconds(o_.lost_after_seconds)) continue;
      lose(s,
           where(s.rank) + " sent nothing for " + show_seconds(o_.lost_after_seconds) +
               " s: its evaluations are re-queued on the other members (if that rank was only busy, not gone, "
               "raise the lost-after time)",
           out);
    }
  }

  /// Rank `s` is gone: its waiting calls throw evaluator_lost, later ones too, and it is told to stop
  /// in case it is only slow.
  void lose(rank_state& s, std::string const& why, outbox& out) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      if (s.lost) return;
      s.lost = true;
      s.lost_why = why;
      for (auto it = pending_.begin(); it != pending_.end();)
        if (it->second.rank == s.rank) {
          failed.push_back(std::move(it->second.reply));
          it = pending_.erase(it);
        } else {
          ++it;
        }
    }
    for (auto& p : failed) p.set_exception(std::make_exception_ptr(evaluator_lost(why)));
    if (!s.stop_sent) {
      s.stop_sent = true;
      send(out, s.rank, wire::tag_stop, wire::encode_stop("rank 0 gave up on this rank: " + why));
    }
    changed_.notify_all();
  }

  void begin_stop(outbox& out) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      for (auto& [id, p] : pending_) failed.push_back(std::move(p.reply));
      pending_.clear();
    }
    for (auto& p : failed)
      p.set_exception(std::make_exception_ptr(
          error("the MPI evaluation pool was shut down while this call waited for its reply (finish the search "
                "before remote_pool::shutdown())")));
    for (std::size_t r = 1; r < ranks_.size(); ++r) {
      auto& s = ranks_[r];
      if (s.stop_sent) continue;
      s.stop_sent = true;
      send(out, s.rank, wire::tag_stop, wire::encode_stop("the search is over"));
    }
  }

  /// Every rank that is alive has acknowledged the stop, or it has waited long enough. Ranks that
  /// never said hello are not waited for: they have their stop message when they come.
  bool stopped(clock::time_point now, clock::time_point since) {
    if (now - since > seconds(o_.lost_after_seconds)) return true;
    for (std::size_t r = 1; r < ranks_.size(); ++r)
      if (alive(static_cast<int>(r)) && !ranks_[r].acked) return false;
    return true;
  }

  void fail_everything(std::string const& why) {
    std::vector<std::promise<wire::reply>> failed;
    {
      std::lock_guard lk(mu_);
      broken_ = why;
      for (auto& s : ranks_)
        if (s.rank != 0 && !s.lost) {
          s.lost = true;
          s.lost_why = why;
        }
      for (auto& [id, p] : pending_) failed.push_back(std::move(p.reply));
      pending_.clear();
    }
    for (auto& p : failed) p.set_exception(std::make_exception_ptr(evaluator_lost(why)));
  }

  options o_;
  mutable std::mutex mu_;
  std::condition_variable wake_;     ///< the communication thread: work queued, or stop asked
  std::condition_variable changed_;  ///< a hello came, or the communication thread ended
  std::vector<rank_state> ranks_;    ///< by rank; [0] is this one, unused
  std::deque<outgoing> queue_;
  std::map<std::uint64_t, pending> pending_;
  std::atomic<std::uint64_t> next_call_{1};
  bool stop_asked_ = false;
  bool finished_ = false;
  std::string broken_;  ///< why the communication thread failed
  std::once_flag shut_;
  std::thread thread_;  // last: started once everything it uses exists
};

}  // namespace detail

}  // namespace kernelbrain::mpi
