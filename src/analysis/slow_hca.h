// Slow HCA / link: one NIC of one rank that moves data slower than the same
// device index on the other ranks of its communicator and than its rank's
// other devices (a link that came up at a lower speed, a bad cable). The
// measure is each HCA's send bandwidth on the wire (hcas[].wire_us: the union
// of its send work requests' post -> completion intervals, log-format.md),
// which is the sender's own: in a ring slowed by one NIC every rank's kernels
// and channels through that HCA index are slow, but the others' requests,
// once posted, complete at their link's speed.
//
// Per (comm, rank, device) over its ops that sent >= min_bytes through it:
// the median bandwidth B and its 75th percentile B75. It is slow when B and
// B75 are both < (median of the other ranks' B for that device) / ratio and,
// if the rank has other devices, both also < (median of its other devices' B)
// / ratio: most of its sends are slow, not a few stretched ones (a sending
// thread descheduled now and then makes a wide spread, a slow link a narrow one). The same NIC seen in several
// communicators is one finding (per process and device). A receive-limited
// NIC also slows the requests of the rank sending to it; that sender's send
// bandwidth then reads low too, and both are named.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "src/analysis/collect_sink.h"

namespace ni::analysis {

struct SlowHcaOptions {
  double ratio = 1.5;                   // slower than the references by at least this
  std::uint64_t min_bytes = 256 << 10;  // per op and device: smaller sends are latency, not bandwidth
  std::size_t min_ops = 5;              // per (comm, rank, device)
  // A send faster than any NIC's line rate (800 Gb/s) was not timed on the
  // wire: events delivered back to back (an emulator without wire time, a net
  // plugin that stops its events at post). Such samples are left out, counted.
  double max_gbs = 100;
  std::size_t min_segment = 8;          // degradation: ops on each side of the step, at least
  double others_ratio = 1.25;           // degradation: the other ranks fell by less than this
};

struct SlowHca {
  std::uint32_t file = 0;   // the process (ReadResult::files)
  std::string host;
  std::string dev;
  double gbs = 0;           // its median send bandwidth (GB/s)
  double peers_gbs = 0;     // the same device index on the comm's other ranks (median)
  double own_gbs = 0;       // its rank's other devices (median); 0 if none
  double factor = 0;        // peers_gbs / gbs
  std::uint64_t ops = 0;
  std::vector<std::pair<std::uint64_t, int>> comm_ranks;  // (comm, rank) it was measured as
};

// A link that degrades during the run: one (comm, rank, device) whose send
// bandwidth steps down at some op and stays there. Its ops in program order
// (by seq when they are one function, else by its process's clock); the split
// is the peak of the CUSUM of signs around the geometric mean of the series'
// 15th and 85th percentiles (robust to stalled requests), with at least
// max(min_segment, n/4) ops on each side (a
// shorter spell at either end is a passing load as often as a link). Flagged when the median after is below the median
// before / ratio, the later ops' 75th percentile is below the earlier ops'
// 25th, the last min_segment ops' median too (it stays down), and over the
// same two spans neither the same device on the comm's
// other ranks (else the fabric slowed, and change points say it) nor the
// rank's other devices, nor (median) its process's HCAs in other comms (else
// its process or host did) fell by others_ratio.
// With no other rank to compare with, nothing is flagged.
struct HcaDegraded {
  std::uint32_t file = 0;
  std::string host, dev;
  std::uint64_t comm = 0;
  int rank = -1;
  double before_gbs = 0, after_gbs = 0;          // its medians
  double others_before = 0, others_after = 0;    // the same device on the other ranks (medians; 0 none)
  std::uint64_t ops_before = 0, ops_after = 0;
  std::uint64_t first_seq = 0;                   // the first slow op's seq
  std::int64_t from_ns = 0;                      // and its start (its process's wall clock; 0 unknown)
};

struct SlowHcaResult {
  std::vector<SlowHca> found;
  std::vector<HcaDegraded> degraded;
  std::uint64_t ops_with_wire = 0;    // ops with a wire time on some HCA
  std::uint64_t ops_without_wire = 0; // ops with HCA traffic but no wire time (no IB QP events, or unfinished)
  std::size_t measured = 0;           // (comm, rank, device) with enough ops
  std::size_t alone = 0;              // of those: no other rank of the comm to compare with (not judged)
  std::uint64_t implausible = 0;      // (op, HCA) samples faster than max_gbs: left out
};

SlowHcaResult find_slow_hcas(const CollectSink& c, const ReadResult& res, const SlowHcaOptions& o);

// The same in parts: what the judgement reads of the ops, per (comm, rank,
// device) its sends' wire bandwidth in program order (24 bytes per op and
// HCA), collected batch by batch, then judged at once. A NIC is judged against
// its process's devices in other communicators, so the series of every batch
// are kept until the end (partition.h: not bounded by the budget, but ~10x
// smaller than the ops).
struct HcaSeries {
  using Key = std::tuple<std::uint64_t, int, std::string>;  // (comm, rank, device)
  struct Point {
    std::int64_t t;
    std::uint64_t seq;
    int func;
    double gbs;
  };
  std::map<Key, std::vector<Point>> series;
  std::map<Key, std::uint32_t> file_of;
  std::uint64_t ops_with_wire = 0, ops_without_wire = 0, implausible = 0;
};
void collect_hca_series(const CollectSink& c, const SlowHcaOptions& o, HcaSeries& into);
SlowHcaResult judge_slow_hcas(HcaSeries& s, const ReadResult& res, const SlowHcaOptions& o);

}  // namespace ni::analysis
