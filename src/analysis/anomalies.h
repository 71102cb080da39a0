// `anomalies`: robust outliers (median/MAD z-scores of latency within
// (comm, op, size bucket)), change points over time per communicator (rolling
// median shift: a degradation window with a start and an end), bimodal latency
// (an Otsu two-cluster split on log latency, interleaved in time), channel
// imbalance (ch_balance, slowest channel from ch_times) and HCA imbalance/slowness
// (hcas). Every finding says what, where, when, how big, and the evidence.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/analysis/locate.h"
#include "src/analysis/reader.h"
#include "src/analysis/slow_channel.h"
#include "src/analysis/slow_hca.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct AnomalyOptions {
  double z_threshold = 6.0;      // robust z of latency
  double min_outlier_ratio = 1.5; // and at least this many times the group median
  std::size_t top = 20;
  double shift_ratio = 1.3;      // change point: rolling median of latency / baseline
  std::size_t min_window = 8;    // ops in a change window, at least
  double bimodal_eta = 0.85;     // between-cluster / total variance of log latency
  double bimodal_ratio = 1.3;    // slow cluster median / fast cluster median
  double min_ch_balance = 0.7;   // channel imbalance
  double hca_slow_ratio = 1.25;  // HCA slowness: its ops' normalised latency vs all HCAs
  double hca_min_share = 0.5;    // HCA traffic imbalance: min/max bytes across a process's HCAs
  SlowChannelOptions slow_channel;
  SlowHcaOptions slow_hca;
};

struct Finding {
  std::string kind;       // outlier | change_point | bimodal | slow_channel | channel_imbalance | slow_hca | hca_slow |
                          // hca_imbalance | concentration
  std::uint64_t comm = 0;
  std::string comm_label;
  std::string where;      // ranks, host, channel, HCA
  std::string when;       // time / seq range
  double magnitude = 0;   // ratio (x times the baseline) or balance
  std::string evidence;
  // machine-readable extras
  int rank = -1;
  std::string host;
  int channel = -1;
  std::string hca;
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint64_t seq_first = 0, seq_last = 0;
  // change_point: the instances in the window, per function (NCCL numbers
  // each function's collectives on its own): (func, first seq, last seq, count).
  struct SeqRange {
    Func func = Func::kOther;
    std::uint64_t first = 0, last = 0, count = 0;
  };
  std::vector<SeqRange> seq_ranges;
  // slow_channel: the ranks where the channel is slow, and whether that is every rank measured.
  std::vector<int> ranks;
  bool every_rank = false;
  // outlier: the instance's outlier ranks are in `ranks`; explained when it lies
  // inside a change_point window or in the slow mode of a bimodal group.
  bool explained = false;
  std::vector<int> not_slow;  // outlier: the instance's other ranks in the logs (the slow ones may have waited for them)
};

// A rank the slow ranks of outlier rows may have waited for, by process: the
// rows (listed, unexplained) that name one rank alone as not slow, each named
// by its process from the comm records, so that one late GPU's rows on
// several communicators (a rank number of each) come together.
struct WaitedFor {
  std::string process;  // "host pid P" (+ " GPU d" when the comm records give the device)
  std::vector<std::tuple<std::string, std::uint64_t, int>> ranks;  // (comm label, comm, rank in it), sorted
  std::uint64_t rows = 0;
};

struct AnomalyResult {
  std::vector<Finding> findings;   // everything but single outliers
  std::vector<Finding> outliers;   // worst single-op outliers (top N)
  std::vector<WaitedFor> waited_for;  // by rows, most first
  std::uint64_t outlier_count = 0;       // outlier ops (rank-ops)
  std::uint64_t outlier_instances = 0;   // the collective instances they are in: one `outliers` row each
  std::uint64_t outlier_ops_alone = 0;   // P2P ops and ops of an unknown rank among them: a row each
  std::uint64_t outliers_explained = 0;  // of the rows, inside a change_point window or a bimodal group's slow mode
  std::uint64_t enqueue_timed = 0;  // ops left out: their duration is only the enqueue (model.h)
  std::uint64_t no_duration = 0;    // ops left out: no duration (NaN; an assembled op without a common start)
  std::uint64_t sym_plan_heads = 0;  // ops left out: a symmetric plan's head, its time the plan's (Op::sym_plan)
  std::uint64_t short_comms = 0;    // communicators with too few collectives to search for change points
  std::uint64_t min_change_instances = 0;  // that minimum (4 x min_window)
  // slow_channel: (instance, rank) samples measured, those alone in their
  // instance, collectives not GPU-timed on every rank, comms measured.
  std::uint64_t slow_channel_samples = 0, slow_channel_unaligned = 0, slow_channel_not_gpu = 0, slow_channel_comms = 0;
  std::uint64_t hca_wire_ops = 0, hca_no_wire_ops = 0;  // ops whose HCA traffic has / lacks a wire time
  std::uint64_t hca_implausible = 0;  // (op, HCA) wire times faster than any NIC: left out
  std::uint64_t hca_alone = 0;  // (comm, rank, HCA) with wire times but no other rank of the comm in the logs
};

AnomalyResult find_anomalies(const CollectSink& ops, const ReadResult& res, const AnomalyOptions& o);

// HCA use from op durations and bytes, collected batch by batch (anomalies'
// hca_slow and hca_imbalance): per (host, HCA) each op's latency over its
// group's median (8 bytes per op and HCA), per file the bytes per HCA.
struct HcaUseAcc {
  std::map<std::pair<std::string, std::string>, std::vector<double>> per_hca;  // (host, dev) -> ratios
  std::map<std::uint32_t, std::map<std::string, std::uint64_t>> bytes;         // file -> dev -> bytes
};

// find_anomalies in parts (partition.h): add() once per batch of whole
// communicators (with their detail), then finish(), which gives what
// find_anomalies on every op at once gives. The outliers, change points,
// bimodality, slow channels and channel imbalance are each one
// communicator's; the HCA judgements compare a NIC across its process's
// communicators, so their compact inputs (HcaSeries, HcaUseAcc) are kept
// from every batch until finish().
class AnomalyAcc {
 public:
  AnomalyAcc(const ReadResult& res, const AnomalyOptions& o);
  void add(const CollectSink& c);
  AnomalyResult finish();  // once

 private:
  const ReadResult& res_;
  AnomalyOptions o_;
  AnomalyResult out_;  // the counters, summed over the batches
  std::vector<std::pair<double, Finding>> outlier_cands_;  // the worst `top` so far, with their z
  std::vector<Finding> bimodal_, change_, slow_channel_, channel_;
  HcaSeries hca_series_;
  HcaUseAcc hca_use_;
  std::map<std::pair<std::uint64_t, int>, Judged> units_;  // every (comm, rank) judged
};
Report anomalies_report(const AnomalyResult& r);

}  // namespace ni::analysis
