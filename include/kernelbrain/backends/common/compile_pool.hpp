// compile_pool: background jobs keyed by content, for backends whose builds are slow (NVRTC, the
// system C++ compiler). evaluator::prefetch queues a job; build() takes its result, or runs it
// inline when it is still queued, so a key is never worked on twice at the same time in one
// process. Results the `remember` predicate accepts stay available (a failed compile, which is not
// cached on disk); others are forgotten once taken (their artifact is on disk).
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kernelbrain::detail {

template <class Result>
class compile_pool {
 public:
  using work = std::function<Result()>;

  /// `threads` background workers, started on the first prefetch; `remember(result)`: keep it.
  explicit compile_pool(std::function<bool(Result const&)> remember, unsigned threads = default_threads())
      : remember_(std::move(remember)), threads_(std::max(1u, threads)) {}
  ~compile_pool() {
    {
      std::lock_guard lk(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    for (auto& t : pool_) t.join();
  }
  compile_pool(compile_pool const&) = delete;
  compile_pool& operator=(compile_pool const&) = delete;

  /// One per core, leaving one for the caller; at least 1, at most 16.
  static unsigned default_threads() { return std::clamp(std::thread::hardware_concurrency(), 2u, 17u) - 1; }

  /// Queues `w` under `key` unless that key is queued, running or remembered.
  void prefetch(std::uint64_t key, work w) {
    std::lock_guard lk(mu_);
    if (closing_ || jobs_.contains(key)) return;
    auto j = std::make_shared<job>();
    j->w = std::move(w);
    jobs_.emplace(key, std::move(j));
    queue_.push_back(key);
    if (pool_.empty())
      for (unsigned i = 0; i < threads_; ++i) pool_.emplace_back([this] { run(); });
    cv_.notify_one();
  }

  /// The result for `key`: a remembered, finished or running job's (waiting for it), else `w` run
  /// on this thread (taking over a job that is still queued). Exceptions from the work propagate.
  Result get(std::uint64_t key, work w) {
    std::shared_ptr<job> j;
    bool mine = false;
    {
      std::lock_guard lk(mu_);
      if (auto it = jobs_.find(key); it != jobs_.end()) {
        j = it->second;
        if (!j->started) mine = j->started = true;
      } else {
        j = std::make_shared<job>();
        j->w = std::move(w);
        j->started = mine = true;
        jobs_.emplace(key, j);
      }
    }
    if (mine) finish(key, j);
    return j->result.get();
  }

 private:
  struct job {
    work w;
    bool started = false;
    std::promise<Result> done;
    std::shared_future<Result> result = done.get_future().share();
  };

  void finish(std::uint64_t key, std::shared_ptr<job> const& j) {
    bool keep = true;  // an exception stays, like a remembered failure
    try {
      Result r = j->w();
      keep = remember_(r);
      j->done.set_value(std::move(r));
    } catch (...) {
      j->done.set_exception(std::current_exception());
    }
    std::lock_guard lk(mu_);
    j->w = nullptr;  // what it captured (a source text) is no longer needed
    if (!keep) jobs_.erase(key);
  }

  void run() {
    for (;;) {
      std::uint64_t key = 0;
      std::shared_ptr<job> j;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return closing_ || !queue_.empty(); });
        if (closing_) return;
        key = queue_.front();
        queue_.pop_front();
        auto it = jobs_.find(key);
        if (it == jobs_.end() || it->second->started) continue;  // taken inline meanwhile
        j = it->second;
        j->started = true;
      }
      finish(key, j);
    }
  }

  std::function<bool(Result const&)> remember_;
  unsigned threads_;
  std::mutex mu_;  ///< guards jobs_, queue_, pool_, closing_; never held while working
  std::condition_variable cv_;
  std::unordered_map<std::uint64_t, std::shared_ptr<job>> jobs_;
  std::deque<std::uint64_t> queue_;
  std::vector<std::thread> pool_;  // joined by the destructor
  bool closing_ = false;
};

}  // namespace kernelbrain::detail
