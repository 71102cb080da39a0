// `report` in bounded memory (--memory-limit), for inputs whose ops would not
// fit: the report's folds (report_model.h) over ops spilled to $TMPDIR, never
// every op at once, and the page the ops in memory give, byte for byte.
//
//  1. One read: every op spilled twice, by communicator and by process
//     (partition.h, with the detectors' detail), and folded into ReportScan.
//  2. The communicator spill in batches of whole communicators: each batch's
//     clock calibration (stragglers in parts; a communicator's shifts need
//     only its own ops), then, calibrated, the detectors that run by
//     communicator. The time axis is then known (ReportModel::plan): the
//     process spill in batches of whole processes feeds the detectors that
//     run by process and ProcPass, and a second sweep of the communicator
//     spill CommPass and the points the detectors marked on the charts.
//  3. The page from the folds.
// Memory: a batch's ops (at most the budget's worth, unless one communicator or
// process alone is larger), the folds (per communicator, GPU and group, not per
// op), and the readers' spill buffers.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/report.h"
#include "src/analysis/stragglers.h"

namespace ni::analysis {

// What `report` holds per op in memory (the op, its detail, the detectors' and
// the report's state): inputs whose estimate (partition.h estimate_ops) times
// this passes the budget take the bounded read.
inline constexpr std::uint64_t kReportBytesPerOpInMemory = 300;

struct BoundedReport {
  std::uint64_t limit = 0;  // the memory budget (bytes)
  std::string tmpdir;       // where the spills go
  bool calibrate = true;    // measure and apply the clock calibration
  // After the read: the caller's checks (check_read, the rack map); false stops here.
  std::function<bool(ReadResult&)> after_read;
};

struct BoundedReportResult {
  enum class Status { kOk, kRefused, kSpillFailed } status = Status::kOk;
  std::string error;  // kSpillFailed: why
  ReadResult res;
  ClockCalibration cal;  // applied (empty without calibration)
  ReportStats stats;
  std::uint64_t spilled_ops = 0;
  std::size_t comm_batches = 0, process_batches = 0, max_batch_ops = 0, largest_batch = 0;
  std::vector<std::string> left_out;  // analyses that run neither by communicator nor by process
};

// Reads the files as above and writes the page to out (o.calibration is set
// to the result's calibration when b.calibrate).
BoundedReportResult write_report_bounded(const std::vector<std::string>& files, const ReadOptions& ro, int threads,
                                         ReportOptions o, const BoundedReport& b, std::ostream& out);

}  // namespace ni::analysis
