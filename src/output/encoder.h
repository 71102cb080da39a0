// JSON-lines encoder: one OpRecord (or meta/comm/clock/stats/end) -> one line
// of the log schema (include/nccl_inspector/schema.h, docs/log-format.md).
//
// Purpose-built for the dump thread: appends straight into a Buf, integers via
// to_chars, µs with 3 decimals from integer ns, bandwidth/ratios with 3
// decimals; never NaN/Inf (an undefined value is omitted). Field order is
// fixed, which also helps deflate.
//
// Contract: const methods, no shared state: any thread may encode with its own
// Encoder; the dump thread owns the one it uses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "include/nccl_inspector/counters.h"
#include "src/core/record.h"
#include "src/core/runtime.h"
#include "src/output/buf.h"
#include "src/output/job.h"

namespace ni::out {

// CLOCK_REALTIME at the moment CLOCK_MONOTONIC (the core's clock) read mono_ns.
struct ClockAnchor {
  int64_t wall_ns = 0;
  uint64_t mono_ns = 0;
  int64_t to_wall(uint64_t mono) const {
    // Unsigned arithmetic: wraps instead of overflowing on garbage input.
    return static_cast<int64_t>(static_cast<uint64_t>(wall_ns) + (mono - mono_ns));
  }
};

struct MetaInfo {
  std::string plugin_version;
  std::string host;
  int64_t pid = 0;
  std::string instance;  // this output's id: 16 hex digits, shared by its rotated files
  JobInfo job;
  int abi_version = 0;  // 0 = not known yet (no comm seen)
  // Effective configuration: (env name, JSON value text already encoded).
  std::vector<std::pair<std::string, std::string>> config;
};

// The counters a stats record shows: the core's, plus the rows of
// include/nccl_inspector/counters.h the dump thread keeps itself
// (records_written: drained and written out; dropped_write_error: drained but
// lost to write errors).
struct StatsSnapshot {
  CoreStats core;
#define NI_OUTPUT_STAT(id, key, group, origin, ...) NI_COUNTER_IF_OUTPUT(origin, uint64_t id = 0;)
  NI_COUNTERS(NI_OUTPUT_STAT)
#undef NI_OUTPUT_STAT
};

// Every counter's value, in the row order of counters.h (kCounters[i] -> [i]).
std::array<uint64_t, ni::counters::kCount> counter_values(const StatsSnapshot& s);

struct OpTiming;

class Encoder {
 public:
  Encoder() = default;
  Encoder(ClockAnchor anchor, bool verbose) : anchor_(anchor), verbose_(verbose) {}

  void set_anchor(ClockAnchor a) { anchor_ = a; }
  const ClockAnchor& anchor() const { return anchor_; }
  int64_t mono_to_wall(uint64_t mono_ns) const { return anchor_.to_wall(mono_ns); }

  // coll / p2p / ce / mark line (with '\n'). comm may be null (unknown comm:
  // nranks 0, so n-dependent bandwidths are omitted); clk may be null or
  // invalid (GPU-timed ops then carry dur_us but no start_wall_ns).
  void op(Buf& b, const OpRecord& r, const CommInfo* comm, const ClockEstimate* clk) const;

  // wall_ns/mono_ns of the meta line are the clock anchors.
  void meta(Buf& b, const MetaInfo& m, uint32_t file_seq) const;
  void comm(Buf& b, const CommInfo& c, int64_t wall_ns) const;
  void comm_end(Buf& b, const CommInfo& c, int64_t wall_ns) const;
  void clock(Buf& b, const ClockEstimate& e, uint64_t comm_hash, int64_t wall_ns) const;
  void stats(Buf& b, const StatsSnapshot& s, int64_t wall_ns) const;
  void end(Buf& b, const StatsSnapshot& s, int64_t wall_ns) const;
  // progress line: the comm's issue state and its ops in flight >= HANG_MS.
  void progress(Buf& b, const CommProgress& p, const CommInfo& c, uint64_t now_mono_ns) const;
  // alive line: the process is alive (nothing else written for HANG_MS).
  void alive(Buf& b, int64_t wall_ns) const;

 private:
  void mark(Buf& b, const OpRecord& r) const;
  void op_identity(Buf& b, const OpRecord& r, const CommInfo* comm, int nranks) const;
  void op_times(Buf& b, const OpRecord& r, const ClockEstimate* clk, const OpTiming& t) const;
  ClockAnchor anchor_;
  bool verbose_ = false;
};

// Duration and bandwidths of an op as the log reports them (shared with the
// Prometheus writer). algbw = bytes x traffic_multiplier / span; busbw =
// algbw x busbw_factor (names.h); absent when the span is 0/unknown, bytes are
// 0, or the factor needs nranks and nranks is unknown (0).
struct OpTiming {
  bool has_span = false;
  uint64_t span_ns = 0;
  bool has_algbw = false;
  bool has_busbw = false;
  double algbw_gbs = 0;  // GB/s = bytes per ns
  double busbw_gbs = 0;
};
OpTiming op_timing(const OpRecord& r, int nranks);

// Effective configuration as (name, JSON value) pairs, from ni::describe()
// and the settings table (typed: bools/ints as numbers, strings quoted).
std::vector<std::pair<std::string, std::string>> config_json_fields(const Config& c);

}  // namespace ni::out
