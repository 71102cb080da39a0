// `summary`: per group (communicator, host or rack) x op x algo/proto x size
// bucket: counts, bytes, latency and busbw percentiles, utilisation; health;
// advice on algorithm/protocol choices. Memory is bounded by the number of
// groups (QuantileSketch), not by the number of records.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/stats.h"
#include "src/analysis/table.h"
#include "src/analysis/tags.h"

namespace ni::analysis {

enum class GroupBy { kComm, kHost, kRack, kTag };

struct SummaryOptions {
  GroupBy group_by = GroupBy::kComm;
  std::map<std::string, std::string> host_map;  // host -> rack/switch (GroupBy::kRack)
  std::map<std::uint64_t, std::string> tag_names;  // user tag -> name (GroupBy::kTag, --tag-map)
  bool per_rank = false;
  std::map<std::string, double> peak_busbw;      // func name, "network", "intra_node" or "*" -> GB/s
  bool advice = true;
};


// Parses "300", "AllReduce=300" or "network=25" / "intra_node=300" into the map.
bool parse_peak(const std::string& s, std::map<std::string, double>& out);

struct GroupKey {
  std::uint64_t group = 0;  // comm hash, hash of the host/rack label, or the user tag
  std::int32_t nranks = 0;
  std::int32_t rank = -1;
  std::uint16_t nnodes = 0;
  std::int8_t bucket = -1;
  Func func = Func::kOther;
  Algo algo = Algo::kUnknown;
  Proto proto = Proto::kUnknown;
  OpKind kind = OpKind::kColl;
  // CPU-timed rows have latency only, and say so (model.h: cpu_timed).
  TimedBy timed = TimedBy::kGpu;
  bool operator==(const GroupKey&) const = default;
};
struct GroupKeyHash {
  std::size_t operator()(const GroupKey& k) const;
};
struct GroupAcc {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t intra = 0, network = 0;  // ops by transport (for per-link-type peaks)
  QuantileSketch lat;
  QuantileSketch bw;
  // Kernel phases (NCCL 2.31+): the ops' initial_sync (median channel's wait
  // for its peers, us) and that wait as a share of the op's kernel time (%).
  QuantileSketch sync, wait_pct;
  void add(const Op& op);
  // The same; lat_bucket/bw_bucket carry the values' sketch buckets between the
  // accumulators one op goes to (-1: not computed yet).
  void add(const Op& op, int& lat_bucket, int& bw_bucket);
  void merge(const GroupAcc& o);
};

// Counters about the ops themselves (the file-level health is in ReadResult).
struct OpHealth {
  std::uint64_t by_timing[static_cast<int>(Timing::kCount_)] = {};
  std::uint64_t reclaimed = 0, partial = 0, no_busbw = 0, no_start = 0, graph = 0;
  std::uint64_t kernel_desync = 0;  // CPU-timed because NCCL's KernelCh stamps were another work's
  std::uint64_t cpu_timed_ops = 0;  // of no_busbw: CPU-timed (model.h: cpu_timed), bandwidth never used
  std::uint64_t sym_plan_heads = 0; // heads of symmetric plans (Op::sym_plan): no latency, no bandwidth
  std::uint64_t by_kind[3] = {};
  void add(const Op& op);
  void merge(const OpHealth& o);
};

class SummarySink : public OpSink {
 public:
  explicit SummarySink(const SummaryOptions& o) : opt_(&o) {}
  void on_op(const Op& op, const OpDetail*, const FileInfo& file) override;
  std::uint32_t op_fields() const override { return 0; }  // no seq, channels or balance
  bool wants_detail() const override { return opt_->group_by == GroupBy::kTag; }  // the op's user tag
  bool wants_assembled() const override { return true; }   // AlltoAll/Gather/Scatter rows (reader.h)
  void merge(SummarySink&& o);

  std::unordered_map<GroupKey, GroupAcc, GroupKeyHash> groups;
  std::unordered_map<GroupKey, GroupAcc, GroupKeyHash> advice;  // group=0, rank=-1: across comms
  std::map<std::uint64_t, std::string> labels;  // group id -> label (host/rack modes)
  OpHealth health;
  std::uint64_t assembled = 0;  // AlltoAll/Gather/Scatter ops assembled from Send/Recv records (not in health)
  std::uint64_t assembled_cpu = 0;  // of those, from CPU-timed parts: counted with bytes, no latency
  std::uint64_t assembled_unplaced = 0;  // of those, GPU-timed parts without a wall start: the same

 private:
  // Per-op lookup: an open-addressed table (power-of-two size, linear probing) from
  // the group key to its accumulators in `groups` and, for collectives with advice
  // on, in `advice` (unordered_map nodes never move). One probe per op instead of
  // two unordered_map lookups (each a modulo by a prime and a chain walk).
  struct Slot {
    GroupKey key;
    GroupAcc* acc = nullptr;  // nullptr: empty slot
    GroupAcc* adv = nullptr;  // nullptr: no advice for this key
  };
  Slot& lookup(const GroupKey& k);
  std::vector<Slot> index_;
  std::size_t index_used_ = 0;

  const SummaryOptions* opt_;
  std::uint32_t last_file_ = ~0u;
  std::uint64_t last_group_ = 0;
};

// Adds the health section (files, formats, drops, truncation, timing sources, ...).
void add_health_section(Report& r, const ReadResult& res, const OpHealth* ops);
// Adds the summary, utilisation and advice sections.
void add_summary_sections(Report& r, const SummarySink& s, const ReadResult& res, const SummaryOptions& o);

// Aggregated drop counters: per (host,pid) the last cumulative stats, summed.
// What the plugin's stats records say was lost, summed over its outputs: one
// per start of the plugin in a process (meta.instance; a process that
// finalized every comm and made new ones has two, and so do two containers
// whose processes share a pid), each counted by its last stats record. Logs
// without meta.instance (plugins before it existed) count per (host, pid).
struct DropTotals {
  std::map<std::string, std::uint64_t> dropped, filtered, faults;
  std::uint64_t reclaimed_ops = 0, outputs = 0, outputs_with_stats = 0, outputs_without_end = 0;
  // Outputs that ended (an end record) whose last stats count records as
  // completed that are neither written, dropped nor pending: lost uncounted.
  std::uint64_t unaccounted = 0, outputs_unaccounted = 0;
  // Records the outputs' last stats count as written that are not in the
  // files read (a rotated file missing, not given, or cut short).
  std::uint64_t written_not_read = 0, outputs_not_read = 0;
};
DropTotals drop_totals(const ReadResult& res);

// Counters by name (dropped, filtered, faults): their sum and the non-zero
// ones as "name=n, name=n", as the health section and the read notes print them.
struct CountList {
  std::uint64_t total = 0;
  std::string list;
};
CountList count_list(const std::map<std::string, std::uint64_t>& counts);

}  // namespace ni::analysis
