// Statistics helpers: exact-then-sketched quantiles, median/MAD.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ni::analysis {

// Quantiles of a stream of non-negative values.
//
// Exact (linear interpolation between order statistics, the definition of
// pandas' quantile() and DuckDB's quantile_cont) while at most kExactMax values
// were added; beyond that the values move into a log-bucketed histogram
// (DDSketch-style, gamma = (1+a)/(1-a) with a = 1%), so any quantile is
// returned with a relative error of at most 1% and memory is a fixed ~11 KiB
// per series, whatever the number of records. min, max, count and sum stay exact.
// The same values give the same quantiles in any order, added one by one or
// merged from sketches (a value is bucketed as the float the exact part keeps);
// only sum() depends on the order (floating-point addition).
class QuantileSketch {
 public:
  static constexpr std::size_t kExactMax = 4096;
  static constexpr double kAlpha = 0.01;

  void add(double v);
  // The same; bucket caches v's histogram bucket for the next sketch that gets the
  // same value (-1: not computed yet; left as is while this sketch is exact).
  void add(double v, int& bucket);
  void merge(const QuantileSketch& o);
  double quantile(double q) const;  // q in [0,1]; NaN when empty
  std::uint64_t count() const { return count_; }
  double min() const { return min_; }
  double max() const { return max_; }
  double sum() const { return sum_; }
  bool exact() const { return hist_.empty(); }

 private:
  void to_hist();
  void add_hist(double v, std::uint32_t n);
  int index(double v) const;
  double value_of(int idx) const;

  std::uint64_t count_ = 0;
  double min_ = 0, max_ = 0, sum_ = 0;
  mutable std::vector<float> exact_;
  mutable bool sorted_ = true;
  std::vector<std::uint32_t> hist_;  // bucket counts; index 0 holds zeros
};

// Linear-interpolated quantile of a sorted vector.
double sorted_quantile(const std::vector<double>& sorted, double q);
// Median of an unsorted vector (partially reorders it).
double median_of(std::vector<double>& v);
// The running median of x: out[i] is the median of x[i-h .. i+h] (clipped at
// the ends), the value median_of gives for that window (up to the sign of a
// zero). A sorted window slides along instead of each window being reordered
// afresh: for windows of 31, ≈ 90 ns per value instead of ≈ 550 (500,000
// values; bench_stats, run by scripts/bench, measures both in one run).
std::vector<double> rolling_median(const std::vector<double>& x, std::size_t h);
// Median absolute deviation (unscaled) around med.
double mad_of(const std::vector<double>& v, double med);

}  // namespace ni::analysis
