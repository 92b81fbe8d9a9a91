// A serving rank of the MPI evaluation pool: its MPI loop, one thread per member, and serve() and
// refuse(), which run it (see mpi_pool.hpp).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include "kernelbrain/core/error.hpp"
#include "kernelbrain/core/evaluator.hpp"
#include "kernelbrain/core/evaluator_pool.hpp"
#include "kernelbrain/core/problem.hpp"
#include "kernelbrain/distribute/mpi_environment.hpp"
#include "kernelbrain/distribute/mpi_options.hpp"
#include "kernelbrain/distribute/transport.hpp"
#include "kernelbrain/distribute/wire.hpp"

namespace kernelbrain::mpi {

namespace detail {

/// A serving rank: its MPI loop on the calling thread, one thread per member, one for prefetches.
class server {
 public:
  server(environment const& env, std::span<pool_member const> members, problem const* prob, std::string problem_name,
         std::optional<std::string> refused, options o)
      : env_(&env),
        members_(members.begin(), members.end()),
        prob_(prob),
        problem_name_(std::move(problem_name)),
        refused_(std::move(refused)),
        o_(std::move(o)),
        queues_(members_.size()) {}
  server(server const&) = delete;
  server& operator=(server const&) = delete;
  ~server() { stop_threads(); }

  void run() {
    if (env_->rank() == 0)
      throw error(
          "mpi::serve() and mpi::refuse() are for ranks 1 and up: rank 0 runs the search with a "
          "mpi::remote_pool");
    wire::hello h;
    h.node = env_->node();
    h.problem = problem_name_;
    h.refused = refused_;
    if (!refused_ && members_.empty()) h.refused = "it has no evaluators to serve";
    if (!h.refused) {
      try {
        for (auto const& m : members_) {
          if (!m.ev) throw error("pool member '" + m.label + "' has no evaluator");
          h.members.push_back({m.label, m.device, m.ev->fingerprint()});
        }
      } catch (std::exception const& e) {
        h.members.clear();
        h.refused = std::string("its evaluators cannot say what they are: ") + e.what();
      }
    }
    refused_ = h.refused;
    if (!refused_) start_threads();

    outbox out;
    if (!silent()) out.send(0, wire::tag_hello, wire::encode(h));
    const auto hello_at = clock::now();
    std::optional<clock::time_point> last_heard;
    auto last_beat = hello_at;
    std::string failure;
    for (;;) {
      bool busy = false;
      bool stop = false;
      while (auto m = poll(0)) {
        busy = true;
        last_heard = clock::now();
        if (m->tag == wire::tag_stop) {
          stop = true;
          break;
        }
        if (m->tag == wire::tag_request) on_request(m->body, out);
      }
      std::vector<std::string> replies;
      {
        std::lock_guard lk(mu_);
        replies.swap(replies_);
      }
      for (auto& r : replies)
        if (!silent()) out.send(0, wire::tag_reply, std::move(r));
      busy = busy || !replies.empty();
      const auto now = clock::now();
      if (now - last_beat >= seconds(o_.heartbeat_seconds)) {
        if (!silent()) out.send(0, wire::tag_heartbeat, {});
        last_beat = now;
      }
      out.progress();
      if (stop) {
        if (!silent()) out.send(0, wire::tag_stop_ack, {});  // before the members finish: rank 0 need not wait
        break;
      }
      const auto limit =
          last_heard ? seconds(o_.lost_after_seconds) : seconds(o_.connect_timeout_seconds + o_.lost_after_seconds);
      if (now - last_heard.value_or(hello_at) > limit) {
        failure =
            "rank " + std::to_string(env_->rank()) + " (node " + env_->node() + "): rank 0 sent nothing for " +
            show_seconds(last_heard ? o_.lost_after_seconds : o_.connect_timeout_seconds + o_.lost_after_seconds) +
            " s (" + (last_heard ? "it is gone or stuck" : "it never started its remote_pool") +
            "), so this rank stops serving; see rank 0's output";
        break;
      }
      if (!busy) {
        std::unique_lock lk(mu_);
        replied_.wait_for(lk, idle_wait, [&] { return !replies_.empty(); });
      }
    }
    // A member inside a call finishes it (the evaluator is the caller's); meanwhile this thread keeps
    // MPI moving: rank 0 may be receiving a large reply of ours, which needs this side's progress.
    begin_stopping();
    for (;;) {
      {
        std::lock_guard lk(mu_);
        if (running_ == 0) break;
      }
      out.progress();
      std::this_thread::sleep_for(idle_wait);
    }
    stop_threads();
    out.drain(seconds(std::min(5.0, o_.lost_after_seconds)));
    if (!failure.empty()) throw error(failure);
  }

 private:
  [[nodiscard]] bool silent() const { return o_.test_silence && o_.test_silence(); }

  void on_request(std::string const& body, outbox& out) {
    wire::request r;
    try {
      r = wire::decode_request(body);
    } catch (error const& e) {
      const auto call = wire::request_call(body);
      if (!call) throw error(std::string("rank 0 sent a request without a call id: ") + e.what());
      answer_now(*call, wire::method::build, e.what(), out);
      return;
    }
    if (refused_) {
      if (r.what != wire::method::prefetch)
        answer_now(r.call, r.what, "rank " + std::to_string(env_->rank()) + " refused to serve: " + *refused_, out);
      return;
    }
    if (r.member >= members_.size()) {
      if (r.what != wire::method::prefetch)
        answer_now(r.call, r.what,
                   "rank " + std::to_string(env_->rank()) + " has no member " + std::to_string(r.member) +
                       " (it serves " + std::to_string(members_.size()) + "): every rank must run the same build",
                   out);
      return;
    }
    {
      std::lock_guard lk(mu_);
      (r.what == wire::method::prefetch ? prefetches_ : queues_[r.member]).push_back(std::move(r));
    }
    work_.notify_all();
  }

  void answer_now(std::uint64_t call, wire::method what, std::string why, outbox& out) {
    wire::reply rep;
    rep.call = call;
    rep.what = what;
    rep.error = std::move(why);
    if (!silent()) out.send(0, wire::tag_reply, wire::encode(rep));
  }

  void start_threads() {
    running_ = members_.size() + 1;
    const auto ended = [this] {
      std::lock_guard lk(mu_);
      --running_;
    };
    for (std::size_t i = 0; i < members_.size(); ++i)
      threads_.emplace_back([this, i, ended] {
        serve_member(i);
        ended();
      });
    threads_.emplace_back([this, ended] {
      serve_prefetches();
      ended();
    });
  }

  /// Queued calls are dropped; the threads end once their current call is done.
  void begin_stopping() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
      for (auto& q : queues_) q.clear();
      prefetches_.clear();
    }
    work_.notify_all();
  }

  void stop_threads() {
    begin_stopping();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  void serve_member(std::size_t i) {
    auto& ev = *members_[i].ev;
    for (;;) {
      wire::request r;
      {
        std::unique_lock lk(mu_);
        work_.wait(lk, [&] { return stopping_ || !queues_[i].empty(); });
        if (stopping_) return;
        r = std::move(queues_[i].front());
        queues_[i].pop_front();
      }
      auto body = wire::encode(execute(ev, r));
      {
        std::lock_guard lk(mu_);
        if (stopping_) return;
        replies_.push_back(std::move(body));
      }
      replied_.notify_one();
    }
  }

  wire::reply execute(evaluator& ev, wire::request const& r) {
    wire::reply out;
    out.call = r.call;
    out.what = r.what;
    try {
      switch (r.what) {
        case wire::method::inspect:
          out.v = ev.inspect(r.cand);
          break;
        case wire::method::build:
          out.v = ev.build(r.cand);
          break;
        case wire::method::check:
          out.v = ev.check(r.cand, r.shapes, r.trials, r.seed);
          break;
        case wire::method::assure:
          out.v = ev.assure(r.cand, r.seed);
          break;
        case wire::method::measure:
          out.m = ev.measure(r.cand, r.at, measure_request{r.seed, r.incumbent ? &*r.incumbent : nullptr, r.shapes});
          break;
        case wire::method::measure_baseline:
          if (!prob_)
            throw error("rank " + std::to_string(env_->rank()) +
                        " cannot measure the baseline: it serves with mpi::serve(env, members, problem_name), "
                        "which has no problem to time; call mpi::serve(env, members, problem_name, problem) there");
          out.b = ev.measure_baseline(*prob_);
          break;
        case wire::method::prefetch:
          break;
      }
    } catch (std::exception const& e) {
      out.error = e.what();
    } catch (...) {
      out.error = "the evaluator of rank " + std::to_string(env_->rank()) + " threw an unknown exception";
    }
    try {
      out.device_seconds = ev.take_device_seconds();
    } catch (std::exception const& e) {
      if (!out.error) out.error = e.what();
    }
    return out;
  }

  void serve_prefetches() {
    for (;;) {
      wire::request r;
      {
        std::unique_lock lk(mu_);
        work_.wait(lk, [&] { return stopping_ || !prefetches_.empty(); });
        if (stopping_) return;
        r = std::move(prefetches_.front());
        prefetches_.pop_front();
      }
      try {
        members_[r.member].ev->prefetch(r.cand);
      } catch (...) {  // a hint: the build that follows reports what went wrong
      }
    }
  }

  environment const* env_;
  std::vector<pool_member> members_;
  problem const* prob_;
  std::string problem_name_;
  std::optional<std::string> refused_;
  options o_;
  std::mutex mu_;
  std::condition_variable work_;                   ///< member and prefetch threads: a request came, or stop
  std::condition_variable replied_;                ///< the MPI loop: a reply is ready
  std::vector<std::deque<wire::request>> queues_;  ///< per member
  std::deque<wire::request> prefetches_;
  std::vector<std::string> replies_;  ///< encoded, for the MPI loop to send
  bool stopping_ = false;
  std::size_t running_ = 0;  ///< threads not yet ended
  std::vector<std::thread> threads_;
};

}  // namespace detail

/// Serves this rank's members to rank 0 until rank 0 says stop, then returns (after the calls in
/// progress have finished). One thread per member runs its calls, so the rank's GPUs work at once.
/// `problem_name` goes in the hello, so that rank 0 can refuse a rank that loaded another problem
/// (remote_pool compares it with its own, as given). `prob`: this rank's problem (every rank loads the
/// same), whose reference the members time when rank 0 asks for their baseline. Throws
/// kernelbrain::error when rank 0 goes silent for lost_after_seconds.
inline void serve(environment& env, std::span<pool_member const> members, std::string const& problem_name,
                  problem const& prob, options o = {}) {
  detail::server(env, members, &prob, problem_name, std::nullopt, std::move(o)).run();
}

/// As above, for a rank that knows its problem by name only: its members cannot measure the
/// baseline then (the remote evaluator's measure_baseline throws, naming this overload). A search
/// measures every member's baseline: pass the problem as well.
inline void serve(environment& env, std::span<pool_member const> members, std::string const& problem_name,
                  options o = {}) {
  detail::server(env, members, nullptr, problem_name, std::nullopt, std::move(o)).run();
}

/// For a serving rank that could not set up (no GPU, a bad problem file): answers the hello with
/// `why`, so that rank 0 fails with a message naming this rank and its node, then waits for rank 0's
/// stop. Throws kernelbrain::error when rank 0 goes silent.
inline void refuse(environment& env, std::string const& why, options o = {}) {
  detail::server(env, {}, nullptr, {}, why.empty() ? std::string("no reason given") : why, std::move(o)).run();
}

}  // namespace kernelbrain::mpi
