// Slow channel: one kernel channel of a communicator that takes longer than
// its siblings op after op (an asymmetric NVLink, a degraded link in that
// channel's ring). Each record names its longest channel with that channel's
// time and the median channel time (`ch_slow`; from `ch_times` in verbose
// logs). Every rank of a collective ends together, so a rank's kernel time =
// its wait for the others + the collective's own time; the wait is the same
// for all its channels and is taken out before they are compared (the
// instance's shortest kernel, the last arrival's, has none):
//
//   wait(rank)  = kernel(rank) - min over the instance's ranks of kernel
//   ratio(rank) = (slowest - wait) / (median channel - wait)
//
// A channel is slow on a comm when it is the longest channel in at least 40 %
// of the comm's (instance, rank) samples (and twice what chance gives with the
// comm's channel count), with a median ratio there of at least
// SlowChannelOptions::ratio and a 25th percentile above the midpoint (slow op
// after op, not now and then). The ranks where the same holds say where: every
// rank (the channel's path, which a ring's ranks share) or some (one GPU, one link).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/collect_sink.h"

namespace ni::analysis {

struct SlowChannelOptions {
  double ratio = 1.3;                 // median (slowest - wait) / (median channel - wait)
  double min_share = 0.4;             // longest channel in at least this fraction of samples
  std::size_t min_samples = 10;       // (instance, rank) samples of a comm, at least
};

struct SlowChannel {
  std::uint64_t comm = 0;
  int channel = -1;
  double factor = 0;         // median ratio over the samples where it was the longest
  double p25 = 0;            // their 25th percentile
  double excess_us = 0;      // median (its time - the median channel time) there
  double slowest_share = 0;  // fraction of the comm's samples where it was the longest channel
  std::uint64_t samples = 0;       // the comm's samples
  int ranks_measured = 0;
  std::vector<int> slow_ranks;      // ranks whose own median ratio reaches the threshold
  std::vector<std::string> hosts;   // their hosts (distinct, in rank order)
  bool every_rank = false;
  // Evidence: each channel that was ever the longest, (channel, share of samples).
  std::vector<std::pair<int, double>> channels;
};

struct SlowChannelResult {
  std::vector<SlowChannel> found;
  std::uint64_t samples = 0;          // (instance, rank) samples measured
  std::uint64_t unaligned = 0;        // of those: the only rank of its instance in the logs (wait not removed)
  std::uint64_t not_gpu_timed = 0;    // collectives with channel times that are not GPU-timed on every rank
  std::uint64_t comms_measured = 0;
};

// Needs a CollectSink read with detail (ch_slow or ch_times).
SlowChannelResult find_slow_channels(const CollectSink& c, const ReadResult& res, const SlowChannelOptions& o);

}  // namespace ni::analysis
