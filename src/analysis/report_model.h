// What `report` draws, gathered from the ops in three folds that keep no op
// beyond a batch, so that the report of ops in memory (write_report) and the
// report in bounded memory (write_report_bounded, report.h) are one
// computation and the same page, byte for byte:
//  1. ReportScan: every op once, in any order, split across reader threads and
//     merged: counts, the (file, comm, rank) spans that give the GPUs and the
//     time span, and the distributions that need neither the ranks of an
//     instance together nor calibrated clocks (busbw, latency, busbw vs size,
//     kernel phases, tags, channel busy time).
//  2. CommPass: batches of whole communicators, calibrated: the busbw-over-time
//     series of the charted communicators, the lateness heatmap, and the busbw
//     of the ops the detectors mark.
//  3. ProcPass: batches of whole processes (so whole GPUs), calibrated:
//     occupancy and gaps, channel balance, HCA bytes and wire bandwidth per GPU.
// Every fold gives the same whatever the order of its ops and batches:
// sketches hold the same values for any order (stats.h), sums are integers
// (ns, bytes), medians are over a whole communicator's or GPU's values.
#pragma once

#include <compare>
#include <cstddef>
#include <limits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/analysis/analysis.h"
#include "src/analysis/recent.h"
#include "src/analysis/stats.h"
#include "src/analysis/trace_bounded.h"

namespace ni::analysis {

struct ReportOptions;

// A number in the report's JSON: 6 significant digits, null when not finite.
std::string json_num(double v);

// An op's algorithm and protocol as the report groups them ("Ring/Simple",
// "P2P"): compact while folding, a label at the end.
struct AlgoProto {
  OpKind kind = OpKind::kColl;
  Algo algo = Algo::kUnknown;
  Proto proto = Proto::kUnknown;
  auto operator<=>(const AlgoProto&) const = default;
  static AlgoProto of(const Op& op) { return {op.kind, op.algo, op.proto}; }
  std::string label() const;
};

// busbw per (func, algo/proto, size bucket): a run's curves against a baseline's.
using SizeCurves = std::map<std::tuple<Func, AlgoProto, int>, QuantileSketch>;
// Whether an op has a point on the busbw-vs-size curves (what add_size_curve adds).
inline bool on_size_curve(const Op& op) { return op.has_busbw() && op.bytes != 0; }
void add_size_curve(SizeCurves& m, const Op& op);

// The baseline's curves, read without keeping its ops.
class SizeCurveSink : public OpSink {
 public:
  std::uint32_t op_fields() const override { return kOpFieldsAll; }
  void on_op(const Op& op, const OpDetail*, const FileInfo&) override { add_size_curve(curves, op); }
  void merge(SizeCurveSink&& o);
  SizeCurves curves;
};

struct ReportScan {
  struct TagAcc {
    std::uint64_t records = 0;
    std::int64_t gpu_ns = 0;  // GPU-timed kernel time, summed over ranks
    QuantileSketch lat, bw;
    std::set<Func> funcs;
    std::uint32_t func_bits = 0;  // funcs as bits: the set is looked up once per function
  };
  std::uint64_t ops = 0, no_start = 0, reclaimed = 0, partial = 0;
  std::map<Timing, std::uint64_t> timing;
  KeySpans keys;
  std::map<std::pair<Func, std::uint64_t>, QuantileSketch> busbw;  // (func, comm)
  SizeCurves size;
  std::map<std::tuple<std::uint64_t, Func, int, AlgoProto>, QuantileSketch> latency;  // (comm, func, bucket, ...)
  std::map<std::pair<Func, std::uint64_t>, QuantileSketch> wait_share;  // (func, comm): initial_sync share (%)
  std::map<std::tuple<std::uint64_t, Func, int>, std::pair<QuantileSketch, QuantileSketch>> wait_rows;  // sync us, share
  std::map<std::uint64_t, TagAcc> tags;  // 0: the untagged ops
  bool tagged = false;
  std::map<std::uint64_t, std::uint64_t> time_count;  // per comm: ops with a start and a busbw
  std::map<std::uint64_t, std::map<int, std::int64_t>> ch_busy_ns;  // per comm and channel id
  std::uint64_t ch_entries = 0;
  bool ch_capped = false;  // more channel entries than the in-memory read keeps (ViewSink::kMaxChannelEntries)

  void add(const Op& op, std::uint64_t tag);
  void add_channel(std::uint64_t comm, std::uint16_t channel, float dur_us);
  void merge(ReportScan&& o);

 private:
  // The maps' recent entries (recent.h): a std::map lookup per op and map
  // was a fifth of the scan.
  Recent<decltype(timing)> last_timing_;
  Recent<KeySpans> last_key_;
  Recent<decltype(busbw)> last_busbw_;
  Recent<SizeCurves> last_size_;
  Recent<decltype(latency)> last_latency_;
  Recent<decltype(tags)> last_tag_;
  Recent<decltype(time_count)> last_time_;
};

// A (comm, rank, start) the detectors marked on a busbw-over-time chart, and
// the busbw of its op (the largest of the ops there, should several share it).
using MarkKey = std::tuple<std::uint64_t, int, std::int64_t>;

struct ReportModel;

struct CommPass {
  std::map<std::uint64_t, std::pair<std::string, std::size_t>> series;  // charted comm -> series JSON, points
  std::vector<std::int64_t> heat_sum_ns;  // gpu * heat_bins + bin: lateness summed over instances
  std::vector<std::uint32_t> heat_cnt;
  std::uint64_t instances = 0;
  std::map<MarkKey, double> mark_bw;  // filled by marks()
  // A batch of whole communicators (op_gpu: each op's GPU).
  void add(const ReportModel& m, const std::vector<Op>& ops, const std::vector<std::uint32_t>& op_gpu);
  void marks(const std::vector<Op>& ops);
};

struct ProcPass {
  struct Occupancy {
    std::uint64_t ops = 0;  // with a start
    std::int64_t span_ns = 0, busy_ns = 0;
    std::uint64_t gaps = 0;
    double gap_box[5] = {0, 0, 0, 0, 0};  // P5, P25, P50, P75, P95 (us)
    double gap_p90 = 0, gap_max = 0;
  };
  std::vector<Occupancy> occupancy;                        // per GPU
  std::vector<double> balance;                             // per GPU: median channel balance (NaN: none)
  std::map<std::string, std::vector<std::uint64_t>> hca_bytes;  // per HCA: bytes per GPU
  std::map<std::string, std::vector<double>> wire_gbs;     // per HCA: median send GB/s per GPU (NaN: none)
  // A batch of whole processes; extra: the ops' HCA use (null: none read).
  // A GPU is one process's (view.h), and a process's logs are spilled
  // together by the host and pid of their meta record, which comes before
  // their first op (a meta record after an op starts another log): every
  // GPU's ops come in one batch.
  void add(const ReportModel& m, const std::vector<Op>& ops, const std::vector<CollectSink::Extra>* extra,
           const std::vector<std::uint32_t>& op_gpu);
};

struct ReportModel {
  ReportScan scan;
  TraceGlobals g;  // the GPUs of every (file, comm, rank), t0
  std::int64_t t1 = std::numeric_limits<std::int64_t>::min();
  bool timed = false;
  std::size_t time_bins = 200, heat_bins = 120;
  std::vector<std::string> gpu_labels;
  std::vector<std::uint64_t> charted;  // busbw-over-time charts: the busiest comms first
  std::size_t comms_with_busbw = 0;
  std::set<std::uint64_t> charted_set;
  CommPass comm;
  ProcPass proc;
  std::vector<RanAnalysis> analyses;
  const SizeCurves* baseline = nullptr;

  // After the scan: the GPUs, the time span (shifted by cal, null for ops
  // already calibrated) and the charted communicators.
  void plan(const ReadResult& res, const ClockCalibration* cal, const ReportOptions& o);
  // Each op's GPU, by its (file, comm, rank).
  std::vector<std::uint32_t> gpus_of(const std::vector<Op>& ops) const;
  double sec(std::int64_t ns) const { return static_cast<double>(ns - g.t0) / 1e9; }
  // After the analyses ran: the points the detectors marked on the charted
  // communicators, for CommPass::marks to find; false when there are none.
  bool prepare_marks();
};

}  // namespace ni::analysis
