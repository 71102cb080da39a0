#include "src/analysis/slow_channel.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "src/analysis/stats.h"

namespace ni::analysis {

namespace {

struct Sample {
  int rank;
  int channel;      // the op's longest channel
  double ratio;     // (slowest - wait) / (median - wait)
  double excess_us; // slowest - median
};

bool usable(const Op& op, const CollectSink::Extra& e) {
  return op.kind == OpKind::kColl && op.comm_hash != 0 && op.rank >= 0 && e.slowest_channel >= 0 && e.median_us > 0;
}

}  // namespace

SlowChannelResult find_slow_channels(const CollectSink& c, const ReadResult& res, const SlowChannelOptions& o) {
  SlowChannelResult out;
  if (c.extra.size() != c.ops.size()) return out;
  // Collective instances: (comm, func, seq) -> op indices.
  std::vector<std::uint32_t> idx;
  for (std::uint32_t i = 0; i < c.ops.size(); ++i)
    if (usable(c.ops[i], c.extra[i])) idx.push_back(i);
  auto key = [&](std::uint32_t i) {
    const Op& op = c.ops[i];
    return std::make_tuple(op.comm_hash, static_cast<int>(op.func), op.seq);
  };
  std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  std::map<std::uint64_t, std::vector<Sample>> per_comm;
  std::map<std::uint64_t, int> max_channels;
  std::map<std::pair<std::uint64_t, int>, std::string> host_of;
  for (std::size_t b = 0; b < idx.size();) {
    std::size_t e = b + 1;
    while (e < idx.size() && key(idx[e]) == key(idx[b])) ++e;
    bool gpu = true;
    double shortest = kNaN;
    for (std::size_t i = b; i < e; ++i) {
      const Op& op = c.ops[idx[i]];
      gpu = gpu && gpu_timed(op.timing) && std::isfinite(op.dur_us) && op.dur_us > 0;
      if (gpu) shortest = std::isnan(shortest) ? op.dur_us : std::min(shortest, op.dur_us);
    }
    if (!gpu) {
      out.not_gpu_timed += e - b;
      b = e;
      continue;
    }
    for (std::size_t i = b; i < e; ++i) {
      const Op& op = c.ops[idx[i]];
      const CollectSink::Extra& x = c.extra[idx[i]];
      // Its wait for the others: the same on every one of its channels.
      const double wait = op.dur_us - shortest;
      const double med = static_cast<double>(x.median_us) - wait;
      if (!(med > 0.05 * shortest)) continue;  // a wait that eats the median channel: the op does not fit the model
      ++out.samples;
      out.unaligned += e - b == 1;
      if (op.file_idx < res.files.size()) host_of.emplace(std::make_pair(op.comm_hash, op.rank), res.files[op.file_idx].host);
      int& mc = max_channels[op.comm_hash];
      mc = std::max(mc, static_cast<int>(op.nchannels));
      per_comm[op.comm_hash].push_back(
          {op.rank, x.slowest_channel, (static_cast<double>(x.slowest_us) - wait) / med,
           static_cast<double>(x.slowest_us) - static_cast<double>(x.median_us)});
    }
    b = e;
  }
  for (auto& [comm, samples] : per_comm) {
    if (samples.size() < o.min_samples) continue;
    ++out.comms_measured;
    const double n = static_cast<double>(samples.size());
    const double min_share = std::max(o.min_share, 2.0 / std::max(2, max_channels[comm]));
    std::map<int, std::vector<double>> ratios, excess;
    std::map<int, std::map<int, std::vector<double>>> by_rank;  // channel -> rank -> ratios when it was the longest
    std::map<int, std::size_t> rank_samples;
    for (const Sample& s : samples) {
      ratios[s.channel].push_back(s.ratio);
      excess[s.channel].push_back(s.excess_us);
      by_rank[s.channel][s.rank].push_back(s.ratio);
      ++rank_samples[s.rank];
    }
    std::vector<std::pair<int, double>> evidence;
    for (const auto& [ch, v] : ratios) evidence.emplace_back(ch, static_cast<double>(v.size()) / n);
    for (auto& [ch, v] : ratios) {
      const double share = static_cast<double>(v.size()) / n;
      if (v.size() < o.min_samples || share < min_share) continue;
      std::sort(v.begin(), v.end());
      const double med = sorted_quantile(v, 0.5), p25 = sorted_quantile(v, 0.25);
      if (med < o.ratio || p25 < 1.0 + (o.ratio - 1.0) / 2) continue;
      SlowChannel f;
      f.comm = comm;
      f.channel = ch;
      f.factor = med;
      f.p25 = p25;
      f.excess_us = median_of(excess[ch]);
      f.samples = samples.size();
      f.slowest_share = share;
      f.ranks_measured = static_cast<int>(rank_samples.size());
      std::set<std::string> seen;
      for (auto& [rank, rv] : by_rank[ch]) {
        const double rs = static_cast<double>(rv.size()) / static_cast<double>(rank_samples[rank]);
        if (rs < min_share || median_of(rv) < o.ratio) continue;
        f.slow_ranks.push_back(rank);
        const std::string& h = host_of[{comm, rank}];
        if (seen.insert(h).second) f.hosts.push_back(h);
      }
      f.every_rank = static_cast<int>(f.slow_ranks.size()) == f.ranks_measured;
      f.channels = evidence;
      out.found.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace ni::analysis
