// `iterations`: per-iteration statistics between consecutive `mark` records of each process.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/stats.h"
#include "src/analysis/table.h"

namespace ni::analysis {

// Adds the "iterations" section; adds nothing when the input has no mark records.
void add_iteration_section(Report& r, const std::vector<Op>& ops, const ReadResult& res);

// The same in parts: add() once per batch of whole processes (every op of a
// process in one call: its GPUs' busy time is a union over them), then
// report(). The marks and the iterations' wall times come from the read result.
class IterationAcc {
 public:
  explicit IterationAcc(const ReadResult& res);
  void add(const std::vector<Op>& ops);
  void report(Report& r);  // nothing when the input has no mark records

 private:
  struct Iter {
    std::string label;
    std::vector<double> wall_ms;  // per process with a next mark
    std::vector<double> comm_ms, pct;  // per GPU
    std::uint64_t ops = 0, bytes = 0;
    QuantileSketch bw;
  };
  const ReadResult& res_;
  std::vector<std::vector<MarkInfo>> marks_;  // per file, by time
  std::map<std::pair<std::string, std::int64_t>, std::size_t> marks_of_;  // (host, pid) -> its file with marks
  std::vector<Iter> iters_;
  std::uint64_t enqueue_timed_ = 0;
  bool any_ = false;
};

}  // namespace ni::analysis
