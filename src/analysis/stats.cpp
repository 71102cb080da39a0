#include "src/analysis/stats.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>

namespace ni::analysis {
namespace {
// Buckets cover [kLow, kLow * gamma^kBuckets) ~ [1e-6, 1e12); values outside are
// clamped into the first/last bucket (min/max stay exact).
constexpr double kLow = 1e-6;
constexpr int kBuckets = 2800;
const double kGamma = (1 + QuantileSketch::kAlpha) / (1 - QuantileSketch::kAlpha);
}  // namespace

namespace {
// Bucket placement tables, built once.
// edges[j] = kLow * gamma^j: bucket 1 + j holds (edges[j-1], edges[j]].
// start[] gives, for every (binary exponent, top kMantBits mantissa bits) cell of
// a positive double, the bucket of the cell's lowest value. A cell spans a ratio
// of at most 1 + 2^-kMantBits (< gamma), so the exact position is at most one
// edge comparison away: no log() or frexp() per insert.
struct Tables {
  static constexpr int kMantBits = 6;
  static constexpr int kExpLo = -22, kExpHi = 63;  // 2^kExpLo < kLow, 2^kExpHi > edges.back()
  std::vector<double> edges;
  std::vector<std::uint16_t> start;
  Tables() : edges(kBuckets) {
    for (int j = 0; j < kBuckets; ++j) edges[static_cast<std::size_t>(j)] = kLow * std::pow(kGamma, j);
    const int cells = (kExpHi - kExpLo + 1) << kMantBits;
    start.resize(static_cast<std::size_t>(cells));
    for (int c = 0; c < cells; ++c) {
      const double lo = std::ldexp(1.0 + static_cast<double>(c & ((1 << kMantBits) - 1)) / (1 << kMantBits),
                                   kExpLo + (c >> kMantBits));
      // Cells rise with c, so the walk starts at the previous cell's bucket (from
      // bucket 0 each time, building the table cost ≈ 30 M instructions).
      start[static_cast<std::size_t>(c)] =
          static_cast<std::uint16_t>(search(lo, c == 0 ? 0 : start[static_cast<std::size_t>(c - 1)]));
    }
  }
  // The unique j in [0, kBuckets-2] with (j == 0 or v > edges[j-1]) and
  // (j == kBuckets-2 or v <= edges[j]), walking from the guess j.
  int search(double v, int j) const {
    j = std::clamp(j, 0, kBuckets - 2);
    while (j > 0 && v <= edges[static_cast<std::size_t>(j - 1)]) --j;
    while (j < kBuckets - 2 && v > edges[static_cast<std::size_t>(j)]) ++j;
    return j;
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
}  // namespace

int QuantileSketch::index(double v) const {
  if (v <= 0) return 0;
  const Tables& t = tables();
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const int exp = static_cast<int>(bits >> 52) - 1023;  // v > 0: no sign bit
  int guess;
  if (exp < Tables::kExpLo) {
    guess = 0;
  } else if (exp > Tables::kExpHi) {
    guess = kBuckets - 2;
  } else {
    const auto cell = static_cast<std::size_t>(((exp - Tables::kExpLo) << Tables::kMantBits) |
                                               static_cast<int>((bits >> (52 - Tables::kMantBits)) &
                                                                ((1u << Tables::kMantBits) - 1)));
    guess = t.start[cell];
  }
  return 1 + t.search(v, guess);
}
double QuantileSketch::value_of(int idx) const {
  if (idx == 0) return 0;
  // Bucket i covers (kLow*g^(i-1), kLow*g^i]; this representative is within alpha of both ends.
  return kLow * std::pow(kGamma, idx - 2) * 2 * kGamma / (kGamma + 1);
}

void QuantileSketch::add(double v) {
  int bucket = -1;
  add(v, bucket);
}

void QuantileSketch::add(double v, int& bucket) {
  if (std::isnan(v)) return;
  if (count_ == 0) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  ++count_;
  sum_ += v;
  if (hist_.empty()) {
    exact_.push_back(static_cast<float>(v));
    sorted_ = false;
    if (exact_.size() > kExactMax) to_hist();
  } else {
    // Bucketed as the float the exact part would have held: the histogram of a
    // set of values is then the same whatever order they come in, added one by
    // one or merged (the report's batches, report_model.h).
    if (bucket < 0) bucket = index(static_cast<float>(v));
    ++hist_[static_cast<std::size_t>(bucket)];
  }
}

void QuantileSketch::add_hist(double v, std::uint32_t n) {
  hist_[static_cast<std::size_t>(index(v))] += n;
}

void QuantileSketch::to_hist() {
  hist_.assign(kBuckets, 0);
  for (float f : exact_) add_hist(f, 1);
  exact_.clear();
  exact_.shrink_to_fit();
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.count_ == 0) return;
  if (count_ == 0) {
    min_ = o.min_;
    max_ = o.max_;
  } else {
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }
  count_ += o.count_;
  sum_ += o.sum_;
  if (hist_.empty() && o.hist_.empty() && exact_.size() + o.exact_.size() <= kExactMax) {
    exact_.insert(exact_.end(), o.exact_.begin(), o.exact_.end());
    sorted_ = false;
    return;
  }
  if (hist_.empty()) to_hist();
  for (float f : o.exact_) add_hist(f, 1);
  for (std::size_t i = 0; i < o.hist_.size(); ++i) hist_[i] += o.hist_[i];
}

namespace {
// The exact values are kept as float, which holds 7 significant digits; a
// quantile of them is rounded to those, so that 0.6 prints as 0.6 and not as
// the float's 0.600000024 (tests/analysis: Summary.CpuTimedOps...).
double seven_digits(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return std::strtod(buf, nullptr);
}
}  // namespace

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0) return min_;
  if (q == 1) return max_;
  if (hist_.empty()) {
    if (!sorted_) {
      std::sort(exact_.begin(), exact_.end());
      sorted_ = true;
    }
    const double pos = q * static_cast<double>(exact_.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(pos);
    const std::size_t hi = std::min(lo + 1, exact_.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return seven_digits(static_cast<double>(exact_[lo]) +
                        frac * (static_cast<double>(exact_[hi]) - static_cast<double>(exact_[lo])));
  }
  const double rank = q * static_cast<double>(count_ - 1);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < hist_.size(); ++i) {
    seen += hist_[i];
    if (static_cast<double>(seen) > rank) return std::clamp(value_of(static_cast<int>(i)), min_, max_);
  }
  return max_;
}

double sorted_quantile(const std::vector<double>& s, double q) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(s.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (pos - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

double median_of(std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = v.size(), m = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  const double hi = v[m];
  if (n % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m));
  return (lo + hi) / 2;
}

std::vector<double> rolling_median(const std::vector<double>& x, std::size_t h) {
  const std::size_t n = x.size();
  std::vector<double> out(n);
  std::vector<double> win;
  if (std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); })) {
    // No order to keep a window sorted by: each window as median_of takes it.
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t lo = i >= h ? i - h : 0, hi = std::min(n, i + h + 1);
      win.assign(x.begin() + static_cast<std::ptrdiff_t>(lo), x.begin() + static_cast<std::ptrdiff_t>(hi));
      out[i] = median_of(win);
    }
    return out;
  }
  win.reserve(2 * h + 1);
  std::size_t lo = 0, hi = 0;  // win holds x[lo, hi), sorted
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t want = std::min(n, i + h + 1); hi < want; ++hi)
      win.insert(std::upper_bound(win.begin(), win.end(), x[hi]), x[hi]);
    for (const std::size_t want = i >= h ? i - h : 0; lo < want; ++lo)
      win.erase(std::lower_bound(win.begin(), win.end(), x[lo]));  // an element equal to x[lo]
    const std::size_t m = win.size() / 2;
    out[i] = win.size() % 2 ? win[m] : (win[m - 1] + win[m]) / 2;  // as median_of: (lower + upper) / 2
  }
  return out;
}

double mad_of(const std::vector<double>& v, double med) {
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::fabs(x - med));
  return median_of(d);
}

}  // namespace ni::analysis
