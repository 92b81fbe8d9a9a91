#include <kernelbrain/backends/cuda/diagnosis.hpp>
#include <cstdio>
#include <random>
using namespace kernelbrain;
int main() {
  std::mt19937_64 g(12345);
  std::uniform_real_distribution<double> u(0, 1);
  std::size_t fired = 0;
  for (int it = 0; it < 200000; ++it) {
    std::map<std::string, double> m;
    for (auto name : ncu_metrics) {
      const double r = u(g);
      if (r < 0.25) continue;  // missing
      double v;
      const double k = u(g);
      if (k < 0.05) v = 0;
      else if (k < 0.08) v = -1;
      else if (k < 0.1) v = std::nan("");
      else if (k < 0.6) v = 100 * u(g);
      else if (k < 0.8) v = 4 * u(g);
      else v = 1e6 * u(g);
      if (std::string_view(name).starts_with("launch__occupancy_limit")) v = std::floor(40 * u(g)) - (u(g) < 0.05 ? 1 : 0);
      m[std::string(name)] = v;
    }
    roofline_position roof;
    const double rb = u(g);
    roof.bytes = rb < 0.2 ? 0 : rb < 0.25 ? std::nan("") : 1e6 * u(g);
    const auto t = diagnose_profile(m, roof);
    fired += t.size();
    std::printf("%d\n%s\n", it, render(t).c_str());
  }
  std::fprintf(stderr, "tags fired: %zu\n", fired);
}
