// `compare BASE RUN`: per (op, size bucket, nranks, algo/proto; and user tag
// with --by-tag) the change of
// busbw (or latency when busbw is unknown) P50 between two runs, with a
// noise-aware verdict: a change counts only when it is beyond --threshold
// percent AND beyond 3 standard errors of the two medians (sigma from the
// IQR, se(median) = 1.2533 sigma / sqrt(n)).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include <string>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct CompareOptions {
  double threshold_pct = 5.0;
  std::uint64_t min_count = 5;  // per side, else "too few"
  // --by-tag: the user tag (NCCL 2.31+) is part of the key, so "layer 12
  // forward" is compared with itself; names from tag_map, then the logs.
  bool by_tag = false;
  std::map<std::uint64_t, std::string> tag_map;
};

struct CompareResult {
  Report report;
  std::size_t regressions = 0, improvements = 0, compared = 0;
  std::string error;                // a side with nothing to compare (read_error, "BASE: ..." / "RUN: ...")
  std::vector<std::string> notes;  // each side's read notes (read_notes), for the caller to print
};

CompareResult compare_runs(const std::vector<std::string>& base, const std::vector<std::string>& run, int threads,
                           const ReadOptions& ro, const CompareOptions& o);

}  // namespace ni::analysis
