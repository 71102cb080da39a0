#include "src/analysis/summary.h"

#include "src/analysis/locate.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "include/nccl_inspector/schema.h"
#include "src/analysis/analysis.h"
#include "src/analysis/hangs.h"
#include "src/analysis/locate.h"

namespace ni::analysis {

std::size_t GroupKeyHash::operator()(const GroupKey& k) const {
  std::uint64_t h = k.group * 0x9E3779B97F4A7C15ULL;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0xff51afd7ed558ccdULL; h ^= h >> 32; };
  mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.nranks)) << 32 |
      static_cast<std::uint32_t>(k.rank));
  mix(static_cast<std::uint64_t>(k.nnodes) << 40 | static_cast<std::uint64_t>(static_cast<std::uint8_t>(k.bucket)) << 32 |
      static_cast<std::uint64_t>(k.func) << 24 | static_cast<std::uint64_t>(k.algo) << 16 |
      static_cast<std::uint64_t>(k.proto) << 8 | static_cast<std::uint64_t>(k.kind) |
      static_cast<std::uint64_t>(k.timed) << 56);
  return static_cast<std::size_t>(h);
}

void GroupAcc::add(const Op& op) {
  int lb = -1, bb = -1;
  add(op, lb, bb);
}
void GroupAcc::add(const Op& op, int& lat_bucket, int& bw_bucket) {
  ++count;
  bytes += op.bytes;
  intra += op.transport == 1;
  network += op.transport == 2;
  // NaN: an assembled call of CPU-timed parts (or of GPU-timed parts not all
  // with a start). A symmetric plan's head: the plan's time, not this op's
  // (counted, no latency; OpHealth says how many).
  if (!std::isnan(op.dur_us) && op.sym_plan == 0) lat.add(op.dur_us, lat_bucket);
  if (op.has_busbw()) bw.add(op.busbw_gbs, bw_bucket);
  if (const double pct = op.wait_pct(); !std::isnan(pct)) [[unlikely]] {
    sync.add(op.sync_us);
    wait_pct.add(pct);
  }
}
void GroupAcc::merge(const GroupAcc& o) {
  count += o.count;
  bytes += o.bytes;
  intra += o.intra;
  network += o.network;
  lat.merge(o.lat);
  bw.merge(o.bw);
  sync.merge(o.sync);
  wait_pct.merge(o.wait_pct);
}

void OpHealth::add(const Op& op) {
  ++by_timing[static_cast<int>(op.timing)];
  ++by_kind[static_cast<int>(op.kind)];
  if (op.flags & kFlagReclaimed) ++reclaimed;
  if (op.flags & kFlagPartial) ++partial;
  if (op.flags & kFlagGraph) ++graph;
  if (!op.has_busbw()) ++no_busbw;
  if (cpu_timed(op.timing)) ++cpu_timed_ops;
  if (op.flags & kFlagKernelDesync) ++kernel_desync;
  if (!op.has_start()) ++no_start;
  if (op.sym_plan != 0) [[unlikely]] ++sym_plan_heads;
}
void OpHealth::merge(const OpHealth& o) {
  for (int i = 0; i < static_cast<int>(Timing::kCount_); ++i) by_timing[i] += o.by_timing[i];
  for (int i = 0; i < 3; ++i) by_kind[i] += o.by_kind[i];
  reclaimed += o.reclaimed;
  partial += o.partial;
  no_busbw += o.no_busbw;
  cpu_timed_ops += o.cpu_timed_ops;
  kernel_desync += o.kernel_desync;
  no_start += o.no_start;
  graph += o.graph;
  sym_plan_heads += o.sym_plan_heads;
}

bool parse_peak(const std::string& s, std::map<std::string, double>& out) {
  std::string key = "*", val = s;
  if (auto eq = s.find('='); eq != std::string::npos) {
    key = s.substr(0, eq);
    val = s.substr(eq + 1);
  }
  try {
    std::size_t used = 0;
    const double v = std::stod(val, &used);
    if (used != val.size() || !(v > 0)) return false;
    if (key == "net") key = "network";
    if (key == "intra" || key == "nvlink") key = "intra_node";
    if (key != "*" && key != "network" && key != "intra_node") {
      const Func f = parse_func(key);
      if (f == Func::kOther) return false;
      key = std::string(to_string(f));
    }
    out[key] = v;
  } catch (...) {
    return false;
  }
  return true;
}

void SummarySink::on_op(const Op& op, const OpDetail* d, const FileInfo& file) {
  if (op.flags & kFlagAssembled) {
    ++assembled;  // not a record: the health section counts records
    const bool untimed = std::isnan(op.dur_us);
    assembled_cpu += untimed && cpu_timed(op.timing);
    assembled_unplaced += untimed && !cpu_timed(op.timing);
  }
  else
    health.add(op);
  GroupKey k;
  if (opt_->group_by == GroupBy::kComm) {
    k.group = op.comm_hash;
  } else if (opt_->group_by == GroupBy::kTag) {
    k.group = d != nullptr ? d->user_tag : 0;  // named at the end (the logs' tag records may come later)
  } else {
    if (op.file_idx != last_file_) {
      std::string label = file.host.empty() ? "(unknown host)" : file.host;
      if (opt_->group_by == GroupBy::kRack) {
        auto it = opt_->host_map.find(file.host);
        label = it == opt_->host_map.end() ? "(unmapped)" : it->second;
      }
      last_group_ = std::hash<std::string>{}(label);
      labels.emplace(last_group_, std::move(label));
      last_file_ = op.file_idx;
    }
    k.group = last_group_;
  }
  k.nranks = op.nranks;
  k.nnodes = op.nnodes;
  k.bucket = static_cast<std::int8_t>(size_bucket(op.bytes));
  k.func = op.func;
  k.algo = op.algo;
  k.proto = op.proto;
  k.kind = op.kind;
  k.timed = timed_by(op.timing);
  k.rank = opt_->per_rank ? op.rank : -1;
  Slot& slot = lookup(k);
  int lat_bucket = -1, bw_bucket = -1;  // computed at most once for both accumulators
  slot.acc->add(op, lat_bucket, bw_bucket);
  if (slot.adv) slot.adv->add(op, lat_bucket, bw_bucket);
}

SummarySink::Slot& SummarySink::lookup(const GroupKey& k) {
  if (index_used_ * 2 >= index_.size()) {  // keep the load factor <= 1/2
    std::vector<Slot> old(std::max<std::size_t>(64, index_.size() * 2));
    old.swap(index_);
    index_used_ = 0;
    for (const Slot& s : old) {
      if (!s.acc) continue;
      std::size_t i = GroupKeyHash{}(s.key) & (index_.size() - 1);
      while (index_[i].acc) i = (i + 1) & (index_.size() - 1);
      index_[i] = s;
      ++index_used_;
    }
  }
  const std::size_t mask = index_.size() - 1;
  std::size_t i = GroupKeyHash{}(k) & mask;
  for (;; i = (i + 1) & mask) {
    Slot& s = index_[i];
    if (!s.acc) break;
    if (s.key == k) return s;
  }
  // First op of this key in this sink.
  Slot& s = index_[i];
  s.key = k;
  s.acc = &groups[k];
  if (opt_->advice && k.kind == OpKind::kColl) {
    GroupKey a = k;
    a.group = 0;
    a.rank = -1;
    s.adv = &advice[a];
  }
  ++index_used_;
  return s;
}

void SummarySink::merge(SummarySink&& o) {
  for (auto& [k, v] : o.groups) groups[k].merge(v);
  for (auto& [k, v] : o.advice) advice[k].merge(v);
  labels.merge(o.labels);
  health.merge(o.health);
  assembled += o.assembled;
  assembled_cpu += o.assembled_cpu;
  assembled_unplaced += o.assembled_unplaced;
}

DropTotals drop_totals(const ReadResult& res) {
  DropTotals t;
  struct Output {
    const StatsInfo* last = nullptr;
    bool end = false;
    std::uint64_t read = 0;  // op records and marks in its files
  };
  std::map<std::tuple<std::string, std::int64_t, std::string>, Output> outputs;
  for (const auto& f : res.files) {
    if (f.format != FileFormat::kOurs) continue;
    Output& o = outputs[{f.host, f.pid, f.instance}];
    o.end = o.end || f.has_end;
    o.read += f.ops + f.marks.size();
    if (f.stats.present && (!o.last || f.stats.wall_ns >= o.last->wall_ns)) o.last = &f.stats;
  }
  for (const auto& [key, o] : outputs) {
    ++t.outputs;
    if (!o.end) ++t.outputs_without_end;
    if (!o.last) continue;
    const StatsInfo& s = *o.last;
    ++t.outputs_with_stats;
    std::uint64_t dropped_at_ring = 0;  // dropped after the op completed (pool_exhausted: before)
    for (const auto& [k, n] : s.dropped) {
      t.dropped[k] += n;
      if (k != ni::counters::key(ni::counters::Id::dropped_pool_exhausted)) dropped_at_ring += n;
    }
    for (const auto& [k, n] : s.filtered) t.filtered[k] += n;
    for (const auto& [k, n] : s.faults) t.faults[k] += n;
    t.reclaimed_ops += s.reclaimed_ops;
    // ops_completed = records_written + dropped (ring_full, write_error, at_exit) + records_pending
    const std::uint64_t accounted = s.records_written + dropped_at_ring + s.records_pending;
    if (o.end && s.ops_completed > accounted) {
      t.unaccounted += s.ops_completed - accounted;
      ++t.outputs_unaccounted;
    }
    if (s.records_written > o.read) {
      t.written_not_read += s.records_written - o.read;
      ++t.outputs_not_read;
    }
  }
  return t;
}

CountList count_list(const std::map<std::string, std::uint64_t>& counts) {
  CountList c;
  for (const auto& [k, n] : counts) {
    c.total += n;
    if (n != 0) c.list += (c.list.empty() ? "" : ", ") + k + "=" + std::to_string(n);
  }
  return c;
}

namespace {

// Rows of the health section: item, value, detail.
struct HealthRows {
  Section& s;
  void operator()(std::string item, Cell v, std::string detail = "") const {
    s.table.rows.push_back({std::move(item), std::move(v), std::move(detail)});
  }
};

// Files, formats, lines and what could not be read.
void file_rows(const HealthRows& row, const ReadResult& res) {
  std::size_t ours = 0, up = 0, unknown = 0;
  std::set<std::int64_t> versions;
  for (const auto& f : res.files) {
    if (f.format == FileFormat::kOurs) {
      ++ours;
      versions.insert(f.format_version);
    } else if (f.format == FileFormat::kUpstreamV4) {
      ++up;
    } else {
      ++unknown;
    }
  }
  std::string vs;
  for (const std::int64_t v : versions) {
    vs += (vs.empty() ? "v" : ", v") + std::to_string(v);
    if (v < 1 || v > ni::schema::kFormatVersion) vs += " (not a version this analyzer reads)";
  }
  row("files", static_cast<std::uint64_t>(res.files.size()),
      std::to_string(ours) + " nccl-inspector" + (vs.empty() ? "" : " (" + vs + ")") + ", " +
          std::to_string(up) + " upstream v4.0, " + std::to_string(unknown) + " unrecognised");
  row("ops", res.ops);
  row("lines", res.lines, format_bytes(static_cast<double>(res.uncompressed_bytes)) + " of JSON from " +
                              format_bytes(static_cast<double>(res.compressed_bytes)) + " on disk");
  std::string trunc;
  for (const auto& f : res.files)
    if (f.truncated && trunc.size() < 300) trunc += (trunc.empty() ? "" : "; ") + f.path + ": " + f.error;
  row("truncated files", res.truncated_files, trunc);
  std::string corrupt;
  for (const auto& f : res.files)
    if (f.corrupt && corrupt.size() < 300) corrupt += (corrupt.empty() ? "" : "; ") + f.path + ": " + f.error;
  row("corrupt files", res.corrupt_files, corrupt);
  std::string failed;
  for (const auto& f : res.files)
    if (f.failed && failed.size() < 300) failed += (failed.empty() ? "" : "; ") + f.path + ": " + f.error;
  row("files not read to the end", res.failed_files, failed);
  row("bad lines", res.bad_lines,
      "not JSON objects or op records missing comm_hash/func" +
          (res.long_lines ? "; " + std::to_string(res.long_lines) + " over the " +
                                std::to_string(kMaxLineBytes >> 20) + " MiB line limit, skipped unread"
                          : std::string()));
  row("ops without duration", res.no_duration, "timing \"none\": no usable time; counted, not analysed");
  std::map<std::string, std::uint64_t> ut;
  for (const auto& f : res.files)
    for (const auto& [k, n] : f.unknown_types) ut[k] += n;
  row("unknown records (skipped)", res.unknown_records, count_list(ut).list);
}

// Drops, configuration filters and faults from the processes' last stats records.
void drop_rows(const HealthRows& row, const DropTotals& d) {
  const CountList dropped = count_list(d.dropped);
  row("dropped records", dropped.total,
      dropped.list + (d.outputs ? std::string(dropped.list.empty() ? "" : " ") + "(last stats of " +
                                      std::to_string(d.outputs_with_stats) + "/" + std::to_string(d.outputs) +
                                      " plugin outputs)"
                                : ""));
  if (d.unaccounted)
    row("records lost uncounted", d.unaccounted,
        "completed but neither written nor counted as dropped, in " + std::to_string(d.outputs_unaccounted) +
            " output(s) that ended (older plugins left records still in their rings at exit uncounted)");
  if (d.written_not_read)
    row("written records not read", d.written_not_read,
        "counted as written by " + std::to_string(d.outputs_not_read) +
            " output(s) but not in the files read: a rotated file missing or not given, or cut short");
  const CountList filtered = count_list(d.filtered);
  row("filtered by configuration", filtered.total, filtered.list);
  const CountList faults = count_list(d.faults);
  row("profiler faults", faults.total, faults.list);
  row("outputs without end record", d.outputs_without_end,
      "killed or still running (an output: one start of the plugin in a process)");
}

// What the ops themselves say: reclaimed, partial, timing sources, kinds.
void op_rows(const HealthRows& row, const OpHealth& ops, const DropTotals& d) {
  row("reclaimed ops", ops.reclaimed, "stats say " + std::to_string(d.reclaimed_ops));
  row("partial ops", ops.partial, "some channel never stopped");
  row("ops without busbw", ops.no_busbw,
      ops.cpu_timed_ops ? std::to_string(ops.cpu_timed_ops) +
                              " CPU-timed: their time is when the CPU saw the op, not how long its bytes moved, "
                              "so they feed no bandwidth, util, peak or detector"
                        : std::string());
  if (ops.kernel_desync)
    row("GPU times NCCL misattributed", ops.kernel_desync,
        "CPU-timed instead: after a Send/Recv to itself (AlltoAll, Gather, Scatter) or a Broadcast on NCCL 2.29+, "
        "NCCL hands a communicator's kernel events another op's GPU stamps (its host and device work counters "
        "fall out of step; NVIDIA/nccl PR #2369), or an op's stamps ended before they started; see "
        "troubleshooting.md");
  std::string ts;
  for (int i = 0; i < static_cast<int>(Timing::kCount_); ++i)
    if (ops.by_timing[i])
      ts += (ts.empty() ? "" : ", ") + std::string(to_string(static_cast<Timing>(i))) + "=" +
            std::to_string(ops.by_timing[i]);
  row("timing sources", ops.by_timing[static_cast<int>(Timing::kGpu)] +
                            ops.by_timing[static_cast<int>(Timing::kKernelGpu)] +
                            ops.by_timing[static_cast<int>(Timing::kCudaEvent)],
      "GPU-timed ops; all: " + ts);
  row("ops by kind", ops.by_kind[0] + ops.by_kind[1] + ops.by_kind[2],
      "coll=" + std::to_string(ops.by_kind[0]) + ", p2p=" + std::to_string(ops.by_kind[1]) +
          ", ce=" + std::to_string(ops.by_kind[2]));
}

// Clock alignment: each process's final GPU->wall estimate per communicator.
void clock_row(const HealthRows& row, const ReadResult& res) {
  std::vector<double> unc_us;
  double worst = -1;
  std::string worst_where;
  for (const auto& f : res.files) {
    std::map<std::uint64_t, std::int64_t> last;  // comm -> its last estimate's uncertainty in this file
    for (const auto& c : f.clocks)
      if (c.uncertainty_ns >= 0) last[c.comm_hash] = c.uncertainty_ns;
    for (const auto& [comm, u] : last) {
      const double us = static_cast<double>(u) / 1000.0;
      unc_us.push_back(us);
      if (us > worst) {
        worst = us;
        worst_where = hex_hash(comm) + " on " + f.host + " pid " + std::to_string(f.pid);
      }
    }
  }
  if (unc_us.empty()) {
    row("clock uncertainty (us)", kNaN, "no clock estimates: cross-rank times are not aligned on GPU clocks");
  } else {
    std::sort(unc_us.begin(), unc_us.end());
    char det[256];
    std::snprintf(det, sizeof det,
                  "final GPU->wall estimates (%zu comm x process): median %.1f us, max %.1f us (%s); start skew "
                  "across processes below it is not meaningful (stragglers measures lateness without clocks)",
                  unc_us.size(), unc_us[unc_us.size() / 2], worst, worst_where.c_str());
    row("clock uncertainty (us)", Cell(worst, 1), det);
  }
}

}  // namespace

void add_health_section(Report& r, const ReadResult& res, const OpHealth* ops) {
  Section& s = r.add("health", "Health");
  s.table.columns = {"item", "value", "detail"};
  const HealthRows row{s};
  file_rows(row, res);
  const DropTotals d = drop_totals(res);
  drop_rows(row, d);
  if (ops) op_rows(row, *ops, d);
  clock_row(row, res);
}

namespace {
std::string comm_label(std::uint64_t h, const ReadResult& res) {
  auto it = res.comm_names.find(h);
  const std::string hex = hex_hash(h);
  if (it == res.comm_names.end() || it->second.empty()) return hex;
  return it->second + " (" + hex + ")";
}
std::string algo_env(Algo a) {
  switch (a) {
    case Algo::kRing: return "Ring";
    case Algo::kTree: return "Tree";
    case Algo::kCollnetDirect: return "CollnetDirect";
    case Algo::kCollnetChain: return "CollnetChain";
    case Algo::kNvls: return "NVLS";
    case Algo::kNvlsTree: return "NVLSTree";
    case Algo::kPat: return "PAT";
    default: return "";
  }
}
// The summary table: one row per group key, sorted by label then key.
void summary_table(Report& r, const SummarySink& s, const ReadResult& res, const SummaryOptions& o) {
  const TagNames tags = o.group_by == GroupBy::kTag ? tag_names(res, o.tag_names) : TagNames();
  struct Row {
    std::string label;
    const GroupKey* k;
    const GroupAcc* a;
  };
  std::vector<Row> rows;
  for (const auto& [k, a] : s.groups) {
    std::string label;
    if (o.group_by == GroupBy::kComm) label = comm_label(k.group, res);
    else if (o.group_by == GroupBy::kTag) label = tags.label(k.group);
    else if (auto it = s.labels.find(k.group); it != s.labels.end()) label = it->second;
    rows.push_back({std::move(label), &k, &a});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& x, const Row& y) {
    return std::tie(x.label, x.k->func, x.k->bucket, x.k->algo, x.k->proto, x.k->nranks, x.k->rank) <
           std::tie(y.label, y.k->func, y.k->bucket, y.k->algo, y.k->proto, y.k->nranks, y.k->rank);
  });
  // Best observed busbw (max of group medians) per (op, nranks, nnodes), for utilisation.
  std::map<std::tuple<Func, int, int>, double> best;
  for (const auto& [k, a] : s.groups) {
    if (a.bw.count() == 0) continue;
    double& b = best[{k.func, k.nranks, k.nnodes}];
    b = std::max(b, a.bw.quantile(0.5));
  }
  const char* group_col = o.group_by == GroupBy::kComm   ? "comm"
                          : o.group_by == GroupBy::kHost ? "host"
                          : o.group_by == GroupBy::kRack ? "rack"
                                                         : "tag";
  Section& sec = r.add("summary", "Summary");
  sec.table.columns = {group_col, "op", "algo", "proto", "size", "nranks", "nnodes"};
  if (o.per_rank) sec.table.columns.push_back("rank");
  for (const char* c : {"count", "bytes", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us",
                        "busbw_p50_gbs", "busbw_p10_gbs", "busbw_min_gbs", "util_pct", "timing"})
    sec.table.columns.push_back(c);
  bool any_sketch = false, any_cpu = false;
  for (const auto& row : rows) {
    const GroupKey& k = *row.k;
    const GroupAcc& a = *row.a;
    std::vector<Cell> c = {row.label, std::string(to_string(k.func)), std::string(to_string(k.algo)),
                           std::string(proto_label(k.algo, k.proto)), size_bucket_label(k.bucket), k.nranks,
                           static_cast<int>(k.nnodes)};
    if (o.per_rank) c.push_back(k.rank);
    c.push_back(a.count);
    c.push_back(a.bytes);
    c.push_back(Cell(a.lat.quantile(0.5), 2));
    c.push_back(Cell(a.lat.quantile(0.9), 2));
    c.push_back(Cell(a.lat.quantile(0.99), 2));
    c.push_back(Cell(a.lat.count() ? a.lat.max() : kNaN, 2));
    c.push_back(Cell(a.bw.quantile(0.5), 2));
    c.push_back(Cell(a.bw.quantile(0.1), 2));
    c.push_back(Cell(a.bw.count() ? a.bw.min() : kNaN, 2));
    double peak = kNaN;
    if (auto it = o.peak_busbw.find(std::string(to_string(k.func))); it != o.peak_busbw.end()) peak = it->second;
    else if (auto lt = o.peak_busbw.find(a.network >= a.intra ? "network" : "intra_node");
             (a.network || a.intra) && lt != o.peak_busbw.end())
      peak = lt->second;
    else if (auto st = o.peak_busbw.find("*"); st != o.peak_busbw.end()) peak = st->second;
    else if (auto b = best.find({k.func, k.nranks, k.nnodes}); b != best.end()) peak = b->second;
    c.push_back(Cell(a.bw.count() && peak > 0 ? 100.0 * a.bw.quantile(0.5) / peak : kNaN, 1));
    c.push_back(std::string(k.timed == TimedBy::kGpu ? "gpu" : k.timed == TimedBy::kCpu ? "cpu" : "unknown"));
    any_cpu = any_cpu || k.timed == TimedBy::kCpu;
    any_sketch = any_sketch || !a.lat.exact() || !a.bw.exact();
    sec.table.rows.push_back(std::move(c));
  }
  sec.notes.push_back(o.peak_busbw.empty()
                          ? "util_pct: busbw P50 / best P50 observed for the same (op, nranks, nnodes)"
                          : "util_pct: busbw P50 / --peak-busbw (by op, else by link type of most ops, else the default)");
  sec.notes.push_back("busbw per record and per rank (nccl-tests factors); never averaged across ranks");
  if (std::string n = tags.note(); !n.empty()) sec.notes.push_back(std::move(n));
  if (s.health.sym_plan_heads != 0)
    sec.notes.push_back(std::to_string(s.health.sym_plan_heads) +
                        " records are heads of symmetric-kernel plans of several tasks (NCCL 2.31+, sym_plan_tasks): "
                        "their kernel time is the whole plan's, so they are counted without latency or bandwidth; "
                        "the plans' other tasks are CPU-timed rows");
  if (o.group_by == GroupBy::kTag &&
      std::all_of(s.groups.begin(), s.groups.end(), [](const auto& g) { return g.first.group == 0; })) {
    int abi = 0;
    for (const FileInfo& f : res.files) abi = std::max(abi, f.abi_version);
    sec.notes.push_back("no call carries a user tag: NCCL passes them from 2.31 on, to a plugin bound through profiler "
                        "ABI v7 only" +
                        (abi > 0 ? " (these logs: ABI v" + std::to_string(abi) + ")" : std::string()) +
                        ", and only for calls the application tagged (ncclCollConfig_t.userProfilerTag)");
  }
  if (any_cpu)
    sec.notes.push_back(
        "timing cpu: latency as the CPU saw it (the proxy thread, network progress, or just the enqueue of a "
        "copy-engine collective or of one NCCL showed at API level only, e.g. Broadcast on 2.29+), not the "
        "transfer's; no bandwidth");
  if (s.assembled > 0)
    sec.notes.push_back("AlltoAll, Gather, Scatter: " + std::to_string(s.assembled) +
                        " calls assembled from the Send/Recv records of their launch group (NCCL reports their "
                        "parts only; AlltoAll on every rank, Gather/Scatter at the root); the parts are also in "
                        "the Send/Recv rows");
  if (s.assembled_cpu > 0)
    sec.notes.push_back(std::to_string(s.assembled_cpu) +
                        " of them from CPU-timed parts (no GPU timer before NCCL 2.26; from 2.26 the part to the rank "
                        "itself puts NCCL's kernel stamps out of step, kernel_desync): counted with their bytes, no "
                        "latency or bandwidth");
  if (s.assembled_unplaced > 0)
    sec.notes.push_back(std::to_string(s.assembled_unplaced) +
                        " of them from GPU-timed parts, one or more written before their communicator had a clock "
                        "estimate (no start_wall_ns, so the parts' spans cannot be put side by side): counted with "
                        "their bytes, no latency or bandwidth, in the gpu rows (whose count can then exceed the "
                        "latencies behind their percentiles)");
  if (any_sketch)
    sec.notes.push_back("groups with more than 4096 records use a log-bucketed sketch: percentiles within 1%");

  // Kernel phases (NCCL 2.31+ with NCCL_INSPECTOR_ENABLE_PHASES=1): how much
  // of each group's kernel time its channels spent waiting for their peers.
  bool any_phases = false;
  for (const auto& row : rows) any_phases = any_phases || row.a->sync.count() > 0;
  if (!any_phases) return;
  Section& ph = r.add("phases", "Kernel phases: waiting for the peers");
  ph.table.columns = {group_col, "op", "algo", "proto", "size", "nranks"};
  if (o.per_rank) ph.table.columns.push_back("rank");
  for (const char* c : {"ops", "initial_sync_p50_us", "initial_sync_p90_us", "wait_pct_p50", "wait_pct_p90"})
    ph.table.columns.push_back(c);
  for (const auto& row : rows) {
    const GroupKey& k = *row.k;
    const GroupAcc& a = *row.a;
    if (a.sync.count() == 0) continue;
    std::vector<Cell> c = {row.label, std::string(to_string(k.func)), std::string(to_string(k.algo)),
                           std::string(proto_label(k.algo, k.proto)), size_bucket_label(k.bucket), k.nranks};
    if (o.per_rank) c.push_back(k.rank);
    c.push_back(a.sync.count());
    c.push_back(Cell(a.sync.quantile(0.5), 2));
    c.push_back(Cell(a.sync.quantile(0.9), 2));
    c.push_back(Cell(a.wait_pct.quantile(0.5), 1));
    c.push_back(Cell(a.wait_pct.quantile(0.9), 1));
    ph.table.rows.push_back(std::move(c));
  }
  ph.notes.push_back("initial_sync: the op's median channel's time waiting for its peers before moving data (NCCL "
                     "2.31+ kernel phases); wait_pct: that wait as a share of the op's kernel time. A large share "
                     "means the op's time went to waiting for a late rank, not to the transfer: see stragglers "
                     "(whose arrivals come from these waits) before tuning the network");
  ph.notes.push_back("only GPU-timed ops with phases; the rest of the summary counts every op");
}

// The advice table: (algo, proto) choices of one (op, size, job shape) that beat others.
void advice_table(Report& r, const SummarySink& s) {
  // Advice: several (algo, proto) for the same (op, size bucket, nranks, nnodes).
  std::map<std::tuple<Func, int, int, int>, std::vector<std::pair<const GroupKey*, const GroupAcc*>>> choices;
  for (const auto& [k, a] : s.advice) {
    if (k.algo == Algo::kUnknown && k.proto == Proto::kUnknown) continue;
    // Only GPU times compare choices: a CPU time (the proxy's view, an enqueue,
    // a comm whose kernel stamps were out of step) is not the transfer's.
    if (k.timed != TimedBy::kGpu) continue;
    if (a.lat.count() < 5) continue;
    choices[{k.func, k.bucket, k.nranks, k.nnodes}].push_back({&k, &a});
  }
  Section& adv = r.add("advice", "Advice (observations, not guarantees)");
  adv.table.columns = {"op", "size", "nranks", "nnodes", "best", "best_lat_p50_us", "best_busbw_p50_gbs",
                       "other", "other_lat_p50_us", "speedup", "pin_with"};
  for (auto& [key, v] : choices) {
    if (v.size() < 2) continue;
    std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
      return x.second->lat.quantile(0.5) < y.second->lat.quantile(0.5);
    });
    const auto* bk = v.front().first;
    const auto* ba = v.front().second;
    for (std::size_t i = 1; i < v.size(); ++i) {
      const auto* ok = v[i].first;
      const auto* oa = v[i].second;
      const double speedup = oa->lat.quantile(0.5) / ba->lat.quantile(0.5);
      if (!(speedup > 1.05)) continue;
      std::string pin;
      if (bk->algo != ok->algo && !algo_env(bk->algo).empty()) pin += "NCCL_ALGO=" + algo_env(bk->algo);
      if (bk->proto != ok->proto && bk->proto != Proto::kUnknown)
        pin += std::string(pin.empty() ? "" : " ") + "NCCL_PROTO=" + std::string(to_string(bk->proto));
      adv.table.rows.push_back({std::string(to_string(std::get<0>(key))), size_bucket_label(std::get<1>(key)),
                                std::get<2>(key), std::get<3>(key),
                                std::string(to_string(bk->algo)) + "/" + std::string(proto_label(bk->algo, bk->proto)),
                                Cell(ba->lat.quantile(0.5), 2), Cell(ba->bw.quantile(0.5), 2),
                                std::string(to_string(ok->algo)) + "/" + std::string(proto_label(ok->algo, ok->proto)),
                                Cell(oa->lat.quantile(0.5), 2), Cell(speedup, 2), pin});
    }
  }
  adv.notes.push_back(
      "observed in this run for the same op, size bucket and job shape; pinning affects every size: "
      "check with the full size range (and NCCL_TUNER) before relying on it");
}

}  // namespace

void add_summary_sections(Report& r, const SummarySink& s, const ReadResult& res, const SummaryOptions& o) {
  summary_table(r, s, res, o);
  if (o.advice) advice_table(r, s);
}

// ---- the registered analysis

namespace {

// `summary`: streams every op into per-group sketches (bounded memory), so it reads
// the files itself instead of running on collected ops.
class SummaryAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "summary"; }
  std::string_view help() const override {
    return "percentiles per communicator/op/algo/proto/size, health, advice";
  }
  Input input() const override { return Input::kFiles; }
  void options(std::vector<OptionSpec>& o) override {
    o.push_back({"--per-rank", "one row per rank", &opt_.per_rank});
    o.push_back({"--group-by", "comm | host | rack (with --host-map) | tag (the calls' user tags, NCCL 2.31+)",
                 &group_by_, true});
    o.push_back({"--host-map", "file of 'host rack' lines for --group-by rack", &host_map_});
    o.push_back({"--tag-map", "file of 'tag name' lines naming the user tags for --group-by tag (over the logs' tag records)", &tag_map_});
    o.push_back({"--peak-busbw",
                 "peak busbw in GB/s for utilisation: 300, AllReduce=300, network=25 or intra_node=300 (repeatable)",
                 &peaks_});
    o.push_back({"--no-advice", "skip the algorithm/protocol advice", &no_advice_});
  }
  std::string check(const std::string&) override {
    if (group_by_ == "comm") opt_.group_by = GroupBy::kComm;
    else if (group_by_ == "host") opt_.group_by = GroupBy::kHost;
    else if (group_by_ == "rack") opt_.group_by = GroupBy::kRack;
    else if (group_by_ == "tag") opt_.group_by = GroupBy::kTag;
    else return "--group-by must be comm, host, rack or tag";
    if (!tag_map_.empty()) {
      if (opt_.group_by != GroupBy::kTag) return "--tag-map goes with --group-by tag";
      if (std::string err; !load_tag_map(tag_map_, opt_.tag_names, err)) return err;
    }
    if (opt_.group_by == GroupBy::kRack && host_map_.empty()) return "--group-by rack needs --host-map FILE";
    std::string err;
    HostMap m;
    if (!host_map_.empty()) {
      if (!load_host_map(host_map_, m, err)) return err;
      opt_.host_map = std::move(m.rack_of);
    }
    for (const auto& p : peaks_)
      if (!parse_peak(p, opt_.peak_busbw)) return "bad --peak-busbw '" + p + "' (expected 300 or AllReduce=300)";
    opt_.advice = !no_advice_;
    return {};
  }
  AnalysisResult run_files(const FilesInput& in) override {
    AnalysisResult r;
    ReadResult res;
    auto s = read_merged<SummarySink>(in.files, in.ro, in.threads, res, opt_);
    if (!check_read(res)) {
      r.exit = kExitUsage;
      r.done = true;
      return r;
    }
    add_summary_sections(r.report, *s, res, opt_);
    add_health_section(r.report, res, &s->health);
    // A job that hung: the verdicts (`hangs` has the details and exit code 4).
    if (HangResult h = find_hangs(res); !h.findings.empty()) {
      add_hang_sections(r.report, h, res);
      r.note = "the job hung: see the hangs section (nccl-inspector hangs for the details)";
    }
    return r;
  }

 private:
  SummaryOptions opt_;
  std::string group_by_ = "comm", host_map_, tag_map_;
  std::vector<std::string> peaks_;
  bool no_advice_ = false;
};

}  // namespace

std::unique_ptr<Analysis> make_summary_analysis() { return std::make_unique<SummaryAnalysis>(); }

}  // namespace ni::analysis
