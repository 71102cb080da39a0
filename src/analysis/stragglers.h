// `stragglers`: aligns every (comm, op, seq) across ranks on the wall clock
// (P2P: a send with the matching recv by comm/peer/order) and finds the ranks
// and hosts that arrive last, with the duration asymmetry (the late rank waits
// least, so its kernel is the shortest) as a clock-free confirmation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct StragglerOptions {
  double threshold_us = 5.0;        // NPKit: > 5 us between ranks is a synchronisation problem
  double min_last_fraction = 0.3;   // and last this often (and far above chance, binomial z > 4)
  double min_confirm_z = 3.0;       // and, when last, the shortest kernel far above chance
};

struct RankLateness {
  std::uint64_t comm = 0;
  int rank = -1;
  int nranks = 0;
  std::string host;
  std::uint64_t ops = 0;          // aligned instances the rank took part in
  std::uint64_t last = 0;         // instances where it started last
  double last_margin_us = 0;      // mean (its start - next latest start) when last
  double mean_lateness_us = 0;    // mean (its start - earliest start)
  std::uint64_t confirmed = 0;    // when last, its duration was also the shortest
  double z = 0;                   // binomial z of `last` against chance (1/nranks)
  double confirm_z = 0;           // binomial z of `confirmed` against chance (1/nranks of `last`)
  // Late by start time and confirmed by durations: a straggler.
  bool flagged = false;
  // Late by start time only: its kernels are not the shortest when it is last,
  // so the lateness is most likely an offset between the clocks of processes
  // or hosts (each aligns its GPU clock on its own), not a late rank.
  bool clock_suspect = false;
};

struct CommSkew {
  std::uint64_t comm = 0;
  int nranks = 0;
  std::uint64_t instances = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  double frac_over = 0;  // fraction of instances with spread > threshold
  std::vector<std::uint64_t> hist;  // spread buckets: <1, 1-5, 5-20, 20-100, 100-1000, >=1000 us
};

struct P2pSkew {
  std::uint64_t comm = 0;
  int sender = -1, receiver = -1;
  std::uint64_t pairs = 0;
  double p50_us = 0;   // median (recv start - send start)
  double p90_abs_us = 0;
};

struct StragglerResult {
  std::vector<RankLateness> ranks;
  std::vector<CommSkew> comms;
  std::vector<P2pSkew> p2p;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> hosts;  // host -> (last, instances)
  std::uint64_t aligned = 0, single_rank = 0, no_start = 0;
};

StragglerResult find_stragglers(const std::vector<Op>& ops, const ReadResult& res,
                                const StragglerOptions& o);
Report stragglers_report(const StragglerResult& r, const ReadResult& res, const StragglerOptions& o);

// Display label of a communicator: "name (0x1234abcd)" or the full hash.
std::string comm_display(std::uint64_t h, const ReadResult& res);

}  // namespace ni::analysis
