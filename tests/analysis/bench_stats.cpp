// Not a test: what anomalies' change-point median costs per value (scripts/bench).
// rolling_median keeps a sorted window that slides; the per-window way (each
// window copied and handed to median_of), which rolling_median takes for an input
// holding a NaN, is timed in the same run on the same values (the last one made a
// NaN), so the ratio of the two holds on any machine. Google Benchmark
// (libbenchmark-dev).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "src/analysis/stats.h"

namespace {

constexpr std::size_t kValues = 500'000;

// Durations as anomalies sees them: a level with noise, a few steps and spikes.
const std::vector<double>& values() {
  static const std::vector<double> v = [] {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> noise(0.0, 0.05);
    std::vector<double> x(kValues);
    for (std::size_t i = 0; i < kValues; ++i) {
      const double level = i < kValues / 2 ? 100.0 : 130.0;
      x[i] = level * noise(rng) * (i % 997 == 0 ? 5.0 : 1.0);
    }
    return x;
  }();
  return v;
}

void RollingMedian(benchmark::State& state) {
  const auto h = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(ni::analysis::rolling_median(values(), h));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

// rolling_median itself on the same values with one NaN appended: a NaN leaves no
// order to keep a window sorted by, so it takes each window to median_of afresh.
void MedianPerWindow(benchmark::State& state) {
  const auto h = static_cast<std::size_t>(state.range(0));
  static const std::vector<double> x = [] {
    std::vector<double> v = values();
    v.back() = std::numeric_limits<double>::quiet_NaN();
    return v;
  }();
  for (auto _ : state) benchmark::DoNotOptimize(ni::analysis::rolling_median(x, h));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

// h = 15: the window of 31 anomalies uses for its change points.
BENCHMARK(RollingMedian)->Arg(15)->Unit(benchmark::kMillisecond);
BENCHMARK(MedianPerWindow)->Arg(15)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
