// `stragglers`: finds the ranks and hosts that arrive last at collectives,
// measured without trusting clocks. Every rank of a collective instance (comm,
// op, seq) finishes at about the same time, so a rank's GPU kernel time is the
// common end minus its arrival: the late rank's kernel is the shortest, and
// how late it came is the difference of kernel times (no cross-process clock
// involved). The same common end calibrates each rank's wall clock against the
// others' (its end-time offset). Start skew per communicator and P2P skew are
// clock-dependent and shown as such.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/analysis/locate.h"
#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct StragglerOptions {
  double threshold_us = 5.0;        // NPKit: > 5 us between ranks is a synchronisation problem
  double min_last_fraction = 0.3;   // and last this often (and far above chance, binomial z > 4)
};

// Each rank's lateness in one instance (ops[idx[b..e)]), in us after the
// earliest arrival, into `late` (resized to e - b), measured from kernel
// times: false (nothing measured) unless every rank's op is GPU-timed. A
// CPU-timed start is when a CPU saw the op, not when the rank arrived.
// With kernel phases on every rank (Op::sync_us), lateness comes from the
// ranks' initial_sync waits instead, and *from_phases (when given) says so.
bool instance_lateness(const std::vector<Op>& ops, const std::vector<std::uint32_t>& idx, std::size_t b,
                       std::size_t e, std::vector<double>& late, bool* from_phases = nullptr);

struct RankLateness {
  std::uint64_t comm = 0;
  int rank = -1;
  int nranks = 0;
  std::string host;
  std::uint32_t file = UINT32_MAX;  // its process's log (ReadResult::files)
  std::uint64_t ops = 0;          // instances where its arrival was measured (from kernel times)
  std::uint64_t last = 0;         // instances where it arrived last
  double last_margin_us = 0;      // mean (its arrival - the next latest arrival) when last
  double margin_sd_us = 0;        // standard deviation of that margin
  double mean_lateness_us = 0;    // mean (its arrival - earliest arrival)
  double z = 0;                   // binomial z of `last` against chance (1/nranks)
  bool flagged = false;           // a straggler (StragglerOptions)
  // Its wall clock against the other ranks' of the comm, from the instances'
  // common end (GPU-timed instances with >= 2 ranks): median of (its end - the
  // instance's median end); + = its times run ahead. NaN without such instances.
  std::uint64_t clock_samples = 0;
  double clock_offset_us = kNaN;
  double clock_spread_us = kNaN;  // 1.4826 x MAD of those residuals: the offset's scatter
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

// Per communicator: how far its ranks' wall clocks disagree (from the
// ranks' end-time offsets).
struct CommClock {
  std::uint64_t comm = 0;
  int ranks = 0;               // ranks with an offset estimate
  double range_us = 0;         // max - min offset
  double spread_us = 0;        // largest per-rank scatter (uncertainty of an offset)
  int ahead_rank = -1, behind_rank = -1;
  std::string ahead_host, behind_host;
};

// The flagged ranks by process (RankProcesses): one late GPU is a rank of
// each of its communicators, each flagged on its own.
struct LateProcess {
  std::string process;  // "host pid P" (+ " GPU d")
  std::vector<std::pair<std::uint64_t, int>> ranks;  // (comm, rank), sorted
};

struct StragglerResult {
  std::vector<RankLateness> ranks;
  std::vector<LateProcess> late_processes;  // by flagged ranks, most first (finish_stragglers)
  std::vector<CommSkew> comms;
  std::vector<CommClock> clocks;
  std::vector<P2pSkew> p2p;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> hosts;  // host -> (last, instances measured)
  std::uint64_t aligned = 0, single_rank = 0, no_start = 0;
  std::uint64_t measured = 0;      // aligned instances with every rank GPU-timed
  std::uint64_t measured_by_phases = 0;  // of them: with kernel phases on every rank (lateness from initial_sync)
  std::uint64_t no_identity = 0;   // collectives without comm hash or rank (ABI v1-v3): not aligned
  // Where the flagged ranks' processes concentrate (locate.h): a host or a rack.
  std::vector<Concentration> where;
};

StragglerResult find_stragglers(const std::vector<Op>& ops, const ReadResult& res,
                                const StragglerOptions& o);
// The same in parts (partition.h): every op of a communicator in one part;
// each part's result merged, then finished (ordered, concentrations found),
// equals find_stragglers on all the ops.
StragglerResult find_stragglers_part(const std::vector<Op>& ops, const ReadResult& res, const StragglerOptions& o);
void merge_stragglers(StragglerResult& into, StragglerResult&& part);
void finish_stragglers(StragglerResult& r, const ReadResult& res);

// Every rank on one timeline: each (comm, rank)'s times shifted by its clock
// offset from the collectives' common end, relative to the rank of its comm
// whose clock is least ahead. The plugin's GPU->wall estimate errs only one
// way (the CPU sees a kernel start after the GPU made it), so that rank's is
// the best and the others are brought to it. A comm is corrected when its
// ranks' offsets spread by more than kMinCorrectionUs and 3x their scatter.
struct ClockCalibration {
  static constexpr double kMinCorrectionUs = 1.0;
  std::map<std::pair<std::uint64_t, int>, std::int64_t> shift_ns;  // (comm, rank) -> ns subtracted from its times
  std::vector<CommClock> comms;  // the comms corrected: their offsets before correction
  std::size_t comms_measured = 0;  // comms with an offset estimate
};
ClockCalibration calibrate_clocks(const StragglerResult& r);
// The same in parts (whole communicators, partition.h): a comm's shifts need
// only its own ops. Finds the part's stragglers on its logged ops (into
// `logged`), shifts the part's ops by the calibration they give and merges
// that into `into`; over every part, `into` is calibrate_clocks(find_stragglers(
// every op)). True when it shifted no clock: the ops are the logged ones, and
// `logged` is their find_stragglers_part (AnalysisInput::stragglers).
bool calibrate_part(std::vector<Op>& ops, const ReadResult& res, ClockCalibration& into, StragglerResult& logged);
// Shifts every op's start_wall_ns (collectives, P2P and CE ops of a corrected (comm, rank)).
void apply_clock_calibration(const ClockCalibration& c, std::vector<Op>& ops);
Report stragglers_report(const StragglerResult& r, const ReadResult& res, const StragglerOptions& o);

// Display label of a communicator: "name (0x1234abcd)" or the full hash.
std::string comm_display(std::uint64_t h, const ReadResult& res);

}  // namespace ni::analysis
