// Not a test: what anomalies' change-point median costs per value (scripts/bench).
// rolling_median keeps a sorted window that slides; the per-window way (each
// window copied and handed to median_of, as rolling_median still does for an
// input holding a NaN) is measured in the same run, on the same values, so the
// ratio of the two holds on any machine. Google Benchmark (libbenchmark-dev).
#include <benchmark/benchmark.h>

#include <cstddef>
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

void MedianPerWindow(benchmark::State& state) {
  const auto h = static_cast<std::size_t>(state.range(0));
  const std::vector<double>& x = values();
  std::vector<double> out(x.size()), win;
  for (auto _ : state) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t lo = i >= h ? i - h : 0, hi = std::min(x.size(), i + h + 1);
      win.assign(x.begin() + static_cast<std::ptrdiff_t>(lo), x.begin() + static_cast<std::ptrdiff_t>(hi));
      out[i] = ni::analysis::median_of(win);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

// h = 15: the window of 31 anomalies uses for its change points.
BENCHMARK(RollingMedian)->Arg(15)->Unit(benchmark::kMillisecond);
BENCHMARK(MedianPerWindow)->Arg(15)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
