// The report's folds (report_model.h).
#include "src/analysis/report_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <tuple>

#include "src/analysis/op_sort.h"
#include "src/analysis/report.h"
#include "src/analysis/slow_hca.h"
#include "src/analysis/table.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/view.h"

namespace ni::analysis {

namespace {

std::int64_t end_of(const Op& op) { return trace_end_ns(op.start_wall_ns, op.dur_us); }

template <class K, class V>
void merge_sketches(std::map<K, V>& into, std::map<K, V>& from) {
  for (auto& [k, v] : from) into[k].merge(v);
}

}  // namespace

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string AlgoProto::label() const {
  if (kind != OpKind::kColl) return std::string(to_string(kind));
  const std::string_view p = proto_label(algo, proto);
  return std::string(to_string(algo)) + (p.empty() ? "" : "/" + std::string(p));
}

void add_size_curve(SizeCurves& m, const Op& op) {
  if (on_size_curve(op)) m[{op.func, AlgoProto::of(op), size_bucket(op.bytes)}].add(op.busbw_gbs);
}

void SizeCurveSink::merge(SizeCurveSink&& o) { merge_sketches(curves, o.curves); }

static_assert(static_cast<unsigned>(Func::kCount_) <= 32, "TagAcc::func_bits holds a bit per function");

void ReportScan::add(const Op& op, std::uint64_t tag) {
  ++ops;
  no_start += !op.has_start();
  reclaimed += (op.flags & kFlagReclaimed) != 0;
  partial += (op.flags & kFlagPartial) != 0;
  const int bucket = size_bucket(op.bytes);
  const AlgoProto ap = AlgoProto::of(op);
  ++last_timing_.get(timing, op.timing, static_cast<std::uint64_t>(op.timing));
  // What the caches hash (a collision costs a map lookup, not a wrong entry).
  const std::uint64_t fn = static_cast<std::uint64_t>(op.func) << 56;
  const std::uint64_t sz = (static_cast<std::uint64_t>(static_cast<unsigned>(bucket)) << 8) ^
                           (static_cast<std::uint64_t>(op.algo) << 4) ^ static_cast<std::uint64_t>(op.proto) ^
                           (static_cast<std::uint64_t>(op.kind) << 40);
  last_key_.get(keys, {op.file_idx, op.comm_hash, op.rank},
                op.comm_hash ^ (static_cast<std::uint64_t>(op.file_idx) << 20) ^ static_cast<std::uint64_t>(op.rank)).add(op);
  // A value's histogram bucket is found once for the sketches it goes to.
  int bw_bucket = -1, dur_bucket = -1;
  if (op.has_busbw()) last_busbw_.get(busbw, {op.func, op.comm_hash}, op.comm_hash ^ fn).add(op.busbw_gbs, bw_bucket);
  if (on_size_curve(op)) last_size_.get(size, {op.func, ap, bucket}, fn ^ sz).add(op.busbw_gbs, bw_bucket);
  if (std::isfinite(op.dur_us)) last_latency_.get(latency, {op.comm_hash, op.func, bucket, ap}, op.comm_hash ^ fn ^ sz).add(op.dur_us, dur_bucket);
  if (const double pct = op.wait_pct(); !std::isnan(pct)) {
    wait_share[{op.func, op.comm_hash}].add(pct);
    auto& r = wait_rows[{op.comm_hash, op.func, bucket}];
    r.first.add(op.sync_us);
    r.second.add(pct);
  }
  TagAcc& a = last_tag_.get(tags, tag, tag);
  tagged = tagged || tag != 0;
  ++a.records;
  if (const std::uint32_t bit = 1u << static_cast<unsigned>(op.func); !(a.func_bits & bit)) {
    a.func_bits |= bit;
    a.funcs.insert(op.func);
  }
  if (gpu_timed(op.timing) && std::isfinite(op.dur_us)) {
    a.gpu_ns += std::llround(op.dur_us * 1000.0);
    a.lat.add(op.dur_us, dur_bucket);
    if (op.has_busbw()) a.bw.add(op.busbw_gbs, bw_bucket);
  }
  if (op.has_start() && op.has_busbw()) ++last_time_.get(time_count, op.comm_hash, op.comm_hash);
}

void ReportScan::add_channel(std::uint64_t comm, std::uint16_t channel, float dur_us) {
  ++ch_entries;
  ch_busy_ns[comm][channel] += std::llround(static_cast<double>(dur_us) * 1000.0);
}

void ReportScan::merge(ReportScan&& o) {
  ops += o.ops;
  no_start += o.no_start;
  reclaimed += o.reclaimed;
  partial += o.partial;
  for (const auto& [t, n] : o.timing) timing[t] += n;
  for (const auto& [k, s] : o.keys) keys[k].merge(s);
  merge_sketches(busbw, o.busbw);
  merge_sketches(size, o.size);
  merge_sketches(latency, o.latency);
  merge_sketches(wait_share, o.wait_share);
  for (auto& [k, v] : o.wait_rows) {
    auto& r = wait_rows[k];
    r.first.merge(v.first);
    r.second.merge(v.second);
  }
  for (auto& [t, b] : o.tags) {
    TagAcc& a = tags[t];
    a.records += b.records;
    a.gpu_ns += b.gpu_ns;
    a.lat.merge(b.lat);
    a.bw.merge(b.bw);
    a.funcs.insert(b.funcs.begin(), b.funcs.end());
    a.func_bits |= b.func_bits;
  }
  tagged = tagged || o.tagged;
  for (const auto& [c, n] : o.time_count) time_count[c] += n;
  for (const auto& [c, m] : o.ch_busy_ns)
    for (const auto& [ch, ns] : m) ch_busy_ns[c][ch] += ns;
  ch_entries += o.ch_entries;
  ch_capped = ch_capped || o.ch_capped;
  o = ReportScan();  // its caches point into its own maps: cleared with them
}

void ReportModel::plan(const ReadResult& res, const ClockCalibration* cal, const ReportOptions& o) {
  if (scan.ch_entries > ViewSink::kMaxChannelEntries) scan.ch_capped = true;
  if (scan.ch_capped) scan.ch_busy_ns.clear();
  map_keys(scan.keys, res, cal, g);
  for (const auto& [k, ki] : g.keys)
    if (ki.any_start) t1 = std::max(t1, ki.last_end);
  timed = g.t0 <= t1;
  for (const Gpu& gpu : g.gm.gpus) gpu_labels.push_back(gpu.label);
  time_bins = std::max<std::size_t>(1, o.time_bins);
  heat_bins = std::max<std::size_t>(1, o.heat_bins);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> order;  // (count, comm), the busiest first
  for (const auto& [c, n] : scan.time_count) order.push_back({n, c});
  std::sort(order.rbegin(), order.rend());
  comms_with_busbw = order.size();
  if (order.size() > o.max_comm_charts) order.resize(o.max_comm_charts);
  for (const auto& [n, c] : order) {
    charted.push_back(c);
    charted_set.insert(c);
  }
  const std::size_t ngpus = g.gm.gpus.size();
  comm.heat_sum_ns.assign(ngpus * heat_bins, 0);
  comm.heat_cnt.assign(ngpus * heat_bins, 0);
  proc.occupancy.assign(ngpus, {});
  proc.balance.assign(ngpus, std::numeric_limits<double>::quiet_NaN());
}

std::vector<std::uint32_t> ReportModel::gpus_of(const std::vector<Op>& ops) const {
  std::vector<std::uint32_t> out(ops.size(), UINT32_MAX);
  const TraceGlobals::Key* last = nullptr;
  std::uint32_t last_gpu = UINT32_MAX;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const TraceGlobals::Key k{ops[i].file_idx, ops[i].comm_hash, ops[i].rank};
    if (last == nullptr || !(*last == k)) {
      auto it = g.keys.find(k);
      if (it == g.keys.end()) continue;  // every op's key was scanned: not reached
      last = &it->first;
      last_gpu = it->second.gpu;
    }
    out[i] = last_gpu;
  }
  return out;
}

bool ReportModel::prepare_marks() {
  for (const auto& ran : analyses)
    for (const auto& mk : ran.result.markers)
      if (mk.chart == Marker::Chart::kPoint && mk.start_ns != 0 && charted_set.count(mk.comm))
        comm.mark_bw.emplace(MarkKey{mk.comm, mk.rank, mk.start_ns}, std::numeric_limits<double>::quiet_NaN());
  return !comm.mark_bw.empty();
}

void CommPass::add(const ReportModel& m, const std::vector<Op>& ops, const std::vector<std::uint32_t>& op_gpu) {
  if (!m.timed) return;
  const double span = std::max(1.0, static_cast<double>(m.t1 - m.g.t0));
  // busbw over time: the charted communicators' busiest (op, size) groups, a median per time bin.
  std::map<std::uint64_t, std::vector<std::uint32_t>> of_comm;
  {
    std::vector<std::uint32_t>* at = nullptr;  // the last op's comm's (nullptr: not charted)
    std::uint64_t last = 0;
    bool any = false;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (!ops[i].has_start() || !ops[i].has_busbw()) continue;
      if (!any || ops[i].comm_hash != last) {  // a run of one comm's ops: looked up once
        any = true;
        last = ops[i].comm_hash;
        at = m.charted_set.count(last) ? &of_comm[last] : nullptr;
      }
      if (at != nullptr) at->push_back(i);
    }
  }
  const std::size_t bins = m.time_bins;
  // An op's (func, size bucket) as one index: size_bucket is -1..63.
  constexpr std::size_t kSizes = 65, kGroups = static_cast<std::size_t>(Func::kCount_) * kSizes;
  std::vector<std::uint16_t> gid;
  std::vector<std::size_t> count(kGroups);
  std::vector<int> series_of(kGroups);
  for (const auto& [c, idx] : of_comm) {
    gid.resize(idx.size());
    std::fill(count.begin(), count.end(), 0);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const Op& op = ops[idx[k]];
      gid[k] = static_cast<std::uint16_t>(static_cast<std::size_t>(op.func) * kSizes +
                                          static_cast<std::size_t>(size_bucket(op.bytes) + 1));
      ++count[gid[k]];
    }
    std::vector<std::pair<std::size_t, std::pair<Func, int>>> groups;
    for (std::size_t g = 0; g < kGroups; ++g)
      if (count[g] != 0) groups.push_back({count[g], {static_cast<Func>(g / kSizes), static_cast<int>(g % kSizes) - 1}});
    std::sort(groups.rbegin(), groups.rend());
    if (groups.size() > 4) groups.resize(4);
    // The values of the groups shown, by series and time bin, in one pass.
    std::fill(series_of.begin(), series_of.end(), -1);
    for (std::size_t si = 0; si < groups.size(); ++si)
      series_of[static_cast<std::size_t>(groups[si].second.first) * kSizes +
                static_cast<std::size_t>(groups[si].second.second + 1)] = static_cast<int>(si);
    std::vector<std::vector<std::vector<double>>> vals(groups.size(), std::vector<std::vector<double>>(bins));
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const int si = series_of[gid[k]];
      if (si < 0) continue;
      const Op& op = ops[idx[k]];
      auto b = static_cast<std::size_t>(static_cast<double>(op.start_wall_ns - m.g.t0) / span * static_cast<double>(bins));
      vals[static_cast<std::size_t>(si)][std::min(b, bins - 1)].push_back(op.busbw_gbs);
    }
    std::string out;
    std::size_t npts = 0;
    for (std::size_t si = 0; si < groups.size(); ++si) {
      const auto& grp = groups[si].second;
      std::string pts;
      for (std::size_t b = 0; b < bins; ++b) {
        std::vector<double>& v = vals[si][b];
        if (v.empty()) continue;
        ++npts;
        const double med = median_of(v);
        pts += pts.empty() ? "[" : ",[";
        pts += json_num((static_cast<double>(b) + 0.5) * span / static_cast<double>(bins) / 1e9);
        pts += "," + json_num(med) + "," + std::to_string(v.size()) + "]";
      }
      out += (si ? "," : "") + std::string("{\"name\":\"") +
             json_escape(std::string(to_string(grp.first)) + " " + size_bucket_label(grp.second)) + "\",\"points\":[" + pts + "]}";
    }
    series[c] = {std::move(out), npts};
  }
  // Lateness: every collective instance with several ranks, by the bin of its first start.
  // Sorted as packed keys, not as indices into the ops: a batch holds millions
  // of ops, and comparing through the index misses the cache on every step.
  struct Key {
    std::uint64_t comm, seq;
    std::int64_t start;
    Func func;
    std::uint32_t i;
    bool operator<(const Key& o) const {
      return std::tie(comm, func, seq, start, i) < std::tie(o.comm, o.func, o.seq, o.start, o.i);
    }
  };
  std::vector<std::uint32_t> idx;
  for (std::uint32_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.has_start() && op.kind != OpKind::kP2p && op.nranks > 1 && op_gpu[i] != UINT32_MAX) idx.push_back(i);
  }
  sort_op_indices(
      ops, idx, [](const Op& op, std::uint32_t i) { return Key{op.comm_hash, op.seq, op.start_wall_ns, op.func, i}; },
      std::less<Key>());
  const std::size_t hb = m.heat_bins;
  std::vector<double> late;
  for (std::size_t a = 0; a < idx.size();) {
    std::size_t b = a + 1;
    while (b < idx.size() && ops[idx[b]].comm_hash == ops[idx[a]].comm_hash && ops[idx[b]].func == ops[idx[a]].func &&
           ops[idx[b]].seq == ops[idx[a]].seq)
      ++b;
    if (b - a >= 2 && instance_lateness(ops, idx, a, b, late)) {
      ++instances;
      const std::int64_t first = ops[idx[a]].start_wall_ns;
      const auto bin = std::min(hb - 1, static_cast<std::size_t>(static_cast<double>(first - m.g.t0) / span * static_cast<double>(hb)));
      for (std::size_t j = a; j < b; ++j) {
        const std::size_t cell = op_gpu[idx[j]] * hb + bin;
        heat_sum_ns[cell] += std::llround(late[j - a] * 1000.0);
        ++heat_cnt[cell];
      }
    }
    a = b;
  }
}

void CommPass::marks(const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    auto it = mark_bw.find({op.comm_hash, op.rank, op.start_wall_ns});
    if (it != mark_bw.end() && std::isfinite(op.busbw_gbs) && !(it->second >= op.busbw_gbs)) it->second = op.busbw_gbs;
  }
}

void ProcPass::add(const ReportModel& m, const std::vector<Op>& ops, const std::vector<CollectSink::Extra>* extra,
                   const std::vector<std::uint32_t>& op_gpu) {
  const std::size_t ngpus = m.g.gm.gpus.size();
  std::map<std::uint32_t, std::vector<std::uint32_t>> of_gpu;
  {
    std::vector<std::uint32_t>* at = nullptr;  // a run of one GPU's ops: looked up once
    std::uint32_t last = UINT32_MAX;
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      if (op_gpu[i] == UINT32_MAX) continue;
      if (at == nullptr || op_gpu[i] != last) at = &of_gpu[last = op_gpu[i]];
      at->push_back(i);
    }
  }
  const double kNoValue = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [g, idx] : of_gpu) {
    // Occupancy: the union of the GPU's op intervals, over all its communicators.
    std::vector<std::pair<std::int64_t, std::int64_t>> iv;
    for (std::uint32_t i : idx)
      if (ops[i].has_start()) iv.push_back({ops[i].start_wall_ns, end_of(ops[i])});
    if (!std::is_sorted(iv.begin(), iv.end())) std::sort(iv.begin(), iv.end());  // a log is mostly in time order
    std::int64_t busy = 0, cur_s = 0, cur_e = std::numeric_limits<std::int64_t>::min();
    QuantileSketch gaps;
    for (const auto& [a, b] : iv) {
      if (a > cur_e) {
        if (cur_e != std::numeric_limits<std::int64_t>::min()) {
          busy += cur_e - cur_s;
          gaps.add(static_cast<double>(a - cur_e) / 1000.0);
        }
        cur_s = a;
        cur_e = b;
      } else {
        cur_e = std::max(cur_e, b);
      }
    }
    if (cur_e != std::numeric_limits<std::int64_t>::min()) busy += cur_e - cur_s;
    Occupancy& oc = occupancy[g];
    oc.ops = iv.size();
    oc.span_ns = iv.empty() ? 0 : cur_e - iv.front().first;
    oc.busy_ns = busy;
    oc.gaps = gaps.count();
    const double qs[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
    for (int k = 0; k < 5; ++k) oc.gap_box[k] = gaps.quantile(qs[k]);
    oc.gap_p90 = gaps.quantile(0.9);
    oc.gap_max = gaps.max();
    // Channel balance: ops with several channels.
    std::vector<double> bal;
    for (std::uint32_t i : idx)
      if (ops[i].ch_balance >= 0 && ops[i].nchannels > 1) bal.push_back(static_cast<double>(ops[i].ch_balance));
    balance[g] = bal.empty() ? kNoValue : median_of(bal);
    if (extra == nullptr) continue;
    // HCA bytes, and send bandwidth on the wire (ops sending >= 256 KiB, timed on the wire: slow_hca.h).
    std::map<std::string, std::vector<double>> wire;
    for (std::uint32_t i : idx) {
      if (i >= extra->size()) continue;
      for (const auto& h : (*extra)[i].hcas) {
        auto& bytes = hca_bytes[h.dev];
        if (bytes.empty()) bytes.assign(ngpus, 0);
        bytes[g] += h.bytes;
        if (!std::isfinite(h.wire_us) || h.bytes < (256u << 10)) continue;
        const double gbs = static_cast<double>(h.bytes) / (h.wire_us * 1000.0);
        if (gbs > SlowHcaOptions{}.max_gbs) continue;
        wire[h.dev].push_back(gbs);
      }
    }
    for (auto& [dev, v] : wire) {
      auto& w = wire_gbs[dev];
      if (w.empty()) w.assign(ngpus, kNoValue);
      w[g] = median_of(v);
    }
  }
}

}  // namespace ni::analysis
