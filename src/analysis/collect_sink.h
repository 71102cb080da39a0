// CollectSink: the sink that keeps every op in memory, for the commands that need
// cross-rank views (view, anomalies, export, tests). Reachable through reader.h.
//
// Contract: like every OpSink, one instance is called by one reader thread;
// read_merged() then merges the per-thread instances with merge().
#pragma once

#include <cstdint>
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
  // Its slowest channel fields only (hcas left as they are): what the spill
  // writes along with d->hcas, without copying them.
  static void slowest_of(const OpDetail& d, Extra& e);

  // What a trace shows of an op beyond its Extra, as ViewSink keeps it: its
  // channel times, network bytes and user tag. Filled only by a spill read
  // back with view detail (SpillSink, partition.h); empty otherwise.
  struct ChSpan {
    std::uint16_t channel = 0;
    float off_us = 0;  // start offset from the op start
    float dur_us = 0;
    // As every view keeps a channel time: its id clamped to 16 bits, times as floats.
    static ChSpan of(const ChTime& c) {
      return {static_cast<std::uint16_t>(c.channel < 0 ? 0 : c.channel > 65535 ? 65535 : c.channel),
              static_cast<float>(c.start_off_us), static_cast<float>(c.dur_us)};
    }
  };
  struct ViewCols {
    std::vector<ChSpan> ch;             // every op's channel times, concatenated
    std::vector<std::uint32_t> ch_end;  // per op: end index into ch (begin: the previous op's end)
    std::vector<std::uint64_t> net_bytes, tag;  // per op: network send + recv bytes, user tag (0: none)
    void clear() {
      ch.clear();
      ch_end.clear();
      net_bytes.clear();
      tag.clear();
    }
  };
  ViewCols view;

 private:
  bool detail_;
};

}  // namespace ni::analysis
