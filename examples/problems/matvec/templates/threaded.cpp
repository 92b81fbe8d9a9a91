// y = A x on ${THREADS} threads (the caller plus THREADS-1 std::threads, all joined before
// returning). Rows are handed out ${GRAIN} at a time from an atomic counter; within a chunk,
// ${ROWS} rows at a time share each load of x, with ${ACC} partial sums per row.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "kernelbrain/evaluate/host_abi.h"

namespace {

constexpr int THREADS = ${THREADS};
constexpr long long GRAIN = ${GRAIN};
constexpr int ROWS = ${ROWS};
constexpr int ACC = ${ACC};

template <int NR>
void rows_dot(const float* a, const float* x, float* y, long long cols) {
  const long long main_cols = cols - cols % ACC;
  float acc[NR][ACC] = {};
  for (long long c = 0; c < main_cols; c += ACC)
    for (int i = 0; i < NR; ++i)
      for (int k = 0; k < ACC; ++k) acc[i][k] += a[i * cols + c + k] * x[c + k];
  for (int i = 0; i < NR; ++i) {
    float s = 0.0f;
    for (int k = 0; k < ACC; ++k) s += acc[i][k];
    for (long long c = main_cols; c < cols; ++c) s += a[i * cols + c] * x[c];
    y[i] = s;
  }
}

}  // namespace

extern "C" void kb_kernel(const kb_args* args) {
  const float* a = args->inputs[0];
  const float* x = args->inputs[1];
  float* y = args->outputs[0];
  const long long rows = args->dims[0];
  const long long cols = args->dims[1];
  std::atomic<long long> next{0};
  auto work = [&] {
    for (;;) {
      const long long r0 = next.fetch_add(GRAIN, std::memory_order_relaxed);
      if (r0 >= rows) return;
      const long long r1 = std::min(r0 + GRAIN, rows);
      long long r = r0;
      for (; r + ROWS <= r1; r += ROWS) rows_dot<ROWS>(a + r * cols, x, y + r, cols);
      for (; r < r1; ++r) rows_dot<1>(a + r * cols, x, y + r, cols);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(THREADS - 1);
  for (int t = 1; t < THREADS; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;  // no more threads to be had: the ones we have (and this one) do all the rows
    }
  }
  work();
  for (auto& t : pool) t.join();
}
