// `trace` in bounded memory (--memory-limit), for inputs whose ops would not
// fit: the trace holds only the ops it shows (sampled to --max-ops), never
// every op, and is the trace the ops in memory give, byte for byte.
//
//  1. One read: every op spilled by communicator to $TMPDIR (partition.h, with
//     the detail the detectors read), and what the trace needs of every op
//     kept per (file, comm, rank): its nranks, earliest start and latest end
//     (TraceGlobals), with the counts, channel-time and tag presence.
//  2. The spill in batches of whole communicators: the clock calibration
//     (stragglers in parts), then, calibrated, the detectors' markers
//     (analyses that run in parts) and the count of ops the filters pass,
//     which sets the sampling.
//  3. A second read of the logs keeps the ops to show, calibrated.
//  4. The trace from them, with TraceGlobals standing for every op.
#pragma once

#include <cstdint>
#include <functional>
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
  // kSpillFailed: the spill could not be written or read back, or a log
  // shrank between the two reads (one still growing is read as far as the
  // first read saw it); kTraceFailed: write_trace_file's error. Why:
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
