// CollectSink: the sink that keeps every op in memory, for the commands that need
// cross-rank views (view, anomalies, export, tests). Reachable through reader.h.
//
// Contract: like every OpSink, one instance is called by one reader thread;
// read_merged() then merges the per-thread instances with merge().
#pragma once

#include <vector>

#include "src/analysis/reader.h"

namespace ni::analysis {

// Holds every op (88 bytes each).
class CollectSink : public OpSink {
 public:
  explicit CollectSink(bool detail = false) : detail_(detail) {}
  bool wants_detail() const override { return detail_; }
  void on_op(const Op& op, const OpDetail* d, const FileInfo&) override;
  void merge(CollectSink&& o);
  std::vector<Op> ops;
  // With detail: per op index, its HCA use and slowest channel (-1 unknown).
  struct Extra {
    std::vector<HcaUse> hcas;
    int slowest_channel = -1;
    double slowest_ratio = 0;  // slowest channel time / median channel time
    float slowest_us = 0;      // the slowest channel's time (us)
    float median_us = 0;       // the median channel time (us)
  };
  std::vector<Extra> extra;
  // An op's Extra from its detail (nullptr: none).
  static Extra extra_of(const OpDetail* d);

 private:
  bool detail_;
};

}  // namespace ni::analysis
