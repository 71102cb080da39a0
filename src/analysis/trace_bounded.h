// `trace` in bounded memory (--memory-limit), for inputs whose ops would not
// fit: the trace holds only the ops it shows (sampled to --max-ops), never
// every op, and is the trace the ops in memory give, byte for byte.
//
//  1. One read: every op spilled by communicator to $TMPDIR (partition.h, with
//     the detail the detectors read and what the trace draws of it), and what the trace needs of every op
//     kept per (file, comm, rank): its nranks, earliest start and latest end
//     (TraceGlobals), with the counts, channel-time and tag presence.
//  2. The spill in batches of whole communicators: each batch's clock
//     calibration (stragglers in parts; a communicator's shifts need only its
//     own ops), then, calibrated, the detectors' markers (analyses that run in
//     parts) and the count of ops the filters pass, which sets the sampling.
//     With --from or --to, whose seconds count from the calibrated first op,
//     the calibration is a sweep of its own before that one.
//  3. A last sweep of the spill keeps the ops to show, calibrated (the logs
//     are read once: one still being written is shown as far as it was read).
//  4. The trace from them, with TraceGlobals standing for every op.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/trace.h"

namespace ni::analysis {

// What `trace` holds per op in memory (the op, its channel and network detail,
// the clock calibration's and the detectors' state): measured 288 bytes per
// record at 4 M records. Inputs whose estimate (partition.h estimate_ops)
// times this passes the budget take the bounded read.
inline constexpr std::uint64_t kTraceBytesPerOpInMemory = 300;

// What the trace and the report need of the ops of one (file, comm, rank),
// on the logged clock: its largest nranks (which map_gpus reads), its
// earliest start and its latest end.
struct KeySpan {
  std::int32_t nranks = 0;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_end = std::numeric_limits<std::int64_t>::min();
  bool any_start = false;
  void add(const Op& op) {
    nranks = std::max<std::int32_t>(nranks, op.nranks);
    if (!op.has_start()) return;
    any_start = true;
    first_start = std::min(first_start, op.start_wall_ns);
    last_end = std::max(last_end, trace_end_ns(op.start_wall_ns, op.dur_us));
  }
  void merge(const KeySpan& b) {
    nranks = std::max(nranks, b.nranks);
    first_start = std::min(first_start, b.first_start);
    last_end = std::max(last_end, b.last_end);
    any_start = any_start || b.any_start;
  }
};
using KeySpans = std::map<TraceGlobals::Key, KeySpan>;

// Per (file, comm, rank): its GPU (map_gpus on one op per key with the key's
// largest nranks: it reads no more of the ops than that), whether it has a
// start time, and its last end; t0, the earliest start. Times shifted as the
// clock calibration says (cal: none when null, for ops already calibrated).
void map_keys(const KeySpans& keys, const ReadResult& res, const ClockCalibration* cal, TraceGlobals& g);

struct BoundedTrace {
  std::uint64_t limit = 0;     // the memory budget (bytes)
  std::string tmpdir;          // where the spill goes
  bool calibrate = true;       // measure and apply the clock calibration
  // After the first read: the caller's checks (check_read, the rack map);
  // false stops here.
  std::function<bool(ReadResult&)> after_read;
};

struct BoundedTraceResult {
  enum class Status { kOk, kRefused, kSpillFailed, kTraceFailed } status = Status::kOk;
  // kSpillFailed: the spill could not be written or read back;
  // kTraceFailed: write_trace_file's error. Why:
  std::string error;
  ReadResult res;                    // the first read's
  ClockCalibration cal;              // applied (empty without calibration)
  TraceStats stats;
  std::uint64_t spilled_ops = 0;
  std::size_t batches = 0, max_batch_ops = 0, largest_batch = 0;
  std::vector<std::string> left_out;  // analyses with markers that cannot run in parts
};

// Reads the files as above and writes the trace to path (write_trace_file).
BoundedTraceResult write_trace_bounded(const std::vector<std::string>& files, const ReadOptions& ro, int threads,
                                       TraceOptions o, const BoundedTrace& b, const std::string& path);

}  // namespace ni::analysis
