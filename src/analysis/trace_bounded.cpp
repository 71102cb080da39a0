// `trace` in bounded memory: see trace_bounded.h for the passes.
#include "src/analysis/trace_bounded.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <utility>

#include "src/analysis/analysis.h"
#include "src/analysis/partition.h"
#include "src/analysis/view.h"

namespace ni::analysis {

namespace {

using Key = TraceGlobals::Key;

// The first read: every op spilled by communicator with the detectors' detail,
// and the per-key and global facts the trace needs (TraceGlobals).
class ScanSink : public SpillSink {
 public:
  // sample: the sampling asked for (TraceOptions::sample).
  ScanSink(std::string dir, std::uint64_t sample)
      : SpillSink(std::move(dir), Partition::kComm, true, true), sample_(std::max<std::uint64_t>(1, sample)) {}
  // The ViewSink the ops in memory would fill reads every field.
  std::uint32_t op_fields() const override { return kOpFieldsAll; }
  void on_op(const Op& op, const OpDetail* d, const FileInfo& file) override {
    SpillSink::on_op(op, d, file);
    ++ops_;
    const Key k{op.file_idx, op.comm_hash, op.rank};
    if (last_ == nullptr || !(last_key_ == k)) {  // a file's ops come in runs of a few keys
      last_ = &keys_[k];
      last_key_ = k;
    }
    last_->add(op);
    no_start_ += !op.has_start();
    sampled_ += op.has_start() && op.seq % sample_ == 0;
    if (d != nullptr) {
      ch_entries_ += d->ch_times.size();
      tagged_ = tagged_ || d->user_tag != 0;
    }
  }
  void merge(ScanSink&& o) {
    SpillSink::merge(std::move(o));
    for (const auto& [k, b] : o.keys_) keys_[k].merge(b);
    ops_ += o.ops_;
    no_start_ += o.no_start_;
    sampled_ += o.sampled_;
    ch_entries_ += o.ch_entries_;
    tagged_ = tagged_ || o.tagged_;
    o.keys_.clear();
    last_ = o.last_ = nullptr;
  }

  KeySpans keys_;
  // sampled_: ops with a start and a seq the sampling asked for keeps: what a
  // trace without filters keeps before it samples further (trace_sample).
  std::uint64_t ops_ = 0, no_start_ = 0, sampled_ = 0, ch_entries_ = 0;
  bool tagged_ = false;

 private:
  std::uint64_t sample_;
  Key last_key_;
  KeySpan* last_ = nullptr;
};

}  // namespace

void map_keys(const KeySpans& keys, const ReadResult& res, const ClockCalibration* cal, TraceGlobals& g) {
  std::vector<Op> skel;
  skel.reserve(keys.size());
  for (const auto& [k, a] : keys) {
    Op o;
    o.file_idx = k.file;
    o.comm_hash = k.comm;
    o.rank = k.rank;
    o.nranks = a.nranks;
    skel.push_back(o);
  }
  g.gm = map_gpus(skel, res);
  std::size_t i = 0;
  for (const auto& [k, a] : keys) {
    TraceGlobals::KeyInfo& ki = g.keys[k];
    ki.gpu = g.gm.op_gpu[i++];
    ki.any_start = a.any_start;
    if (!a.any_start) continue;
    std::int64_t shift = 0;
    if (cal != nullptr)
      if (auto s = cal->shift_ns.find({k.comm, k.rank}); s != cal->shift_ns.end()) shift = s->second;
    g.t0 = std::min(g.t0, a.first_start - shift);
    ki.last_end = a.last_end - shift;
  }
  g.gm.op_gpu.clear();
}

BoundedTraceResult write_trace_bounded(const std::vector<std::string>& files, const ReadOptions& ro, int threads,
                                       TraceOptions o, const BoundedTrace& b, const std::string& path) {
  BoundedTraceResult out;
  using St = BoundedTraceResult::Status;
  auto scan = read_merged<ScanSink>(files, ro, threads, out.res, b.tmpdir, o.sample);
  if (!scan->error().empty()) {
    out.status = St::kSpillFailed;
    out.error = scan->error();
    return out;
  }
  if (b.after_read && !b.after_read(out.res)) {
    out.status = St::kRefused;
    return out;
  }
  const ReadResult& res = out.res;
  out.spilled_ops = scan->ops();
  out.max_batch_ops = batch_ops(b.limit);
  auto sweep = [&](const std::function<void(CollectSink&)>& fn) {
    out.batches = scan->for_each_batch(out.max_batch_ops, fn);
    out.largest_batch = scan->largest_batch();
    return scan->error().empty();
  };
  auto spill_failed = [&] {
    out.status = St::kSpillFailed;
    out.error = scan->error();
    return out;
  };

  // The clock calibration, as calibrate_clocks(find_stragglers(every op)):
  // a sweep of its own when --from/--to need the calibrated first op (t0)
  // before the detectors' sweep; else each batch's, in that sweep (a comm's
  // shifts need only its own ops).
  const bool cal_first = b.calibrate && (!o.from.empty() || !o.to.empty());
  if (cal_first) {
    StragglerResult sr;
    if (!sweep([&](CollectSink& part) { merge_stragglers(sr, find_stragglers_part(part.ops, res, {})); }))
      return spill_failed();
    finish_stragglers(sr, res);
    out.cal = calibrate_clocks(sr);
  }

  TraceGlobals g;
  g.ops_input = scan->ops_;
  g.ops_no_start = scan->no_start_;
  g.ch_any = scan->ch_entries_ > 0;
  g.ch_capped = scan->ch_entries_ > ViewSink::kMaxChannelEntries;
  g.tagged = scan->tagged_;
  map_keys(scan->keys_, res, &out.cal, g);  // t0 and the ends are the logged ones until the sweep's calibration

  // Calibrated: the detectors' markers and the count that sets the sampling.
  TraceFilter filter;
  std::string filter_error;
  const bool filtered = g.t0 != std::numeric_limits<std::int64_t>::max() && filter.init(o, g.gm, res, g.t0, filter_error);
  std::vector<std::unique_ptr<Analysis>> parts;
  if (o.findings && filtered)  // else the trace stops at the filter's error: no detector to run for it
    for (auto& a : make_analyses())
      if (a->runs_on_ops()) parts.push_back(std::move(a));
  const std::uint64_t sample = std::max<std::uint64_t>(1, o.sample);
  // Without filters the first read counted what the trace keeps before it
  // samples further: the sampling is known now, and the detectors' sweep
  // keeps the ops to show. Else a last sweep does, once the count is known.
  const bool unfiltered = o.comms.empty() && o.ops.empty() && o.ranks.empty() && o.from.empty() && o.to.empty();
  const bool keep_now = filtered && unfiltered;
  if (keep_now) g.sample = trace_sample(sample, scan->sampled_, o.max_ops);  // as TraceBuild::select_ops
  auto view = std::make_unique<ViewSink>();
  // The ops of a calibrated batch the trace shows, with what it draws of them (counted while the sampling is unknown).
  std::uint64_t kept = 0;
  const Key* last = nullptr;
  int last_rank = -1;
  auto shown = [&](CollectSink& part, bool count) {
    const CollectSink::ViewCols& vc = part.view;
    for (std::size_t i = 0; i < part.ops.size(); ++i) {
      const Op& op = part.ops[i];
      if (!op.has_start()) continue;
      const Key k{op.file_idx, op.comm_hash, op.rank};
      if (last == nullptr || !(*last == k)) {
        auto it = g.keys.find(k);
        if (it == g.keys.end()) continue;  // every op's key was kept by the first read
        last = &it->first;
        last_rank = g.gm.gpus[it->second.gpu].rank;
      }
      if (!filter.passes(op, last_rank)) continue;
      if (count) {
        ++g.ops_selected;
        kept += op.seq % sample == 0;
      }
      if (count && !keep_now) continue;
      if (op.seq % g.sample != 0) continue;
      const std::uint32_t from = i == 0 ? 0 : vc.ch_end[i - 1];
      view->add(op, std::move(part.extra[i]), vc.ch.data() + from, vc.ch_end[i] - from, vc.net_bytes[i], vc.tag[i]);
    }
  };
  if (filtered || !parts.empty() || (b.calibrate && !cal_first)) {
    const bool ok = sweep([&](CollectSink& part) {
      StragglerResult logged;
      bool same = false;  // the calibrated ops are the logged ones
      if (b.calibrate && !cal_first) same = calibrate_part(part.ops, res, out.cal, logged);
      else apply_clock_calibration(out.cal, part.ops);
      for (auto& a : parts)
        if (a->keeps_ops() && a->partition() == Partition::kComm)
          a->run_part(AnalysisInput{part, res, same ? &logged : nullptr});
      if (filtered) shown(part, true);
    });
    if (!ok) return spill_failed();
  }
  if (b.calibrate && !cal_first) {  // the calibrated t0 and ends (the GPUs are the same)
    TraceGlobals cg;
    map_keys(scan->keys_, res, &out.cal, cg);
    g.t0 = cg.t0;
    g.keys = std::move(cg.keys);
    last = nullptr;  // it pointed into the keys replaced
  }
  scan->keys_.clear();
  // The count the sampling needs, as the filters passed it; should the
  // first read's have set another sampling, the ops kept go and the last
  // sweep keeps those of this one.
  bool keep_later = filtered && !keep_now;
  if (keep_now && trace_sample(sample, kept, o.max_ops) != g.sample) {
    view = std::make_unique<ViewSink>();
    keep_later = true;
  }
  g.sample = trace_sample(sample, kept, o.max_ops);  // as TraceBuild::select_ops
  const CollectSink none;
  for (auto& a : parts) {
    AnalysisResult r;
    if (!a->keeps_ops()) r = a->run(AnalysisInput{none, res});
    else if (a->partition() == Partition::kComm) r = a->finish_parts(res);
    else if (a->has_markers()) out.left_out.emplace_back(a->name());
    for (auto& m : r.markers) g.markers.push_back(std::move(m));
  }
  // The last sweep, when the ops to show were not kept in the first.
  if (keep_later && !sweep([&](CollectSink& part) {
        apply_clock_calibration(out.cal, part.ops);
        shown(part, false);
      }))
    return spill_failed();
  scan.reset();  // the spill files go
  o.given = &g;
  o.calibration = b.calibrate ? &out.cal : nullptr;
  if (!write_trace_file(*view, res, o, path, out.stats, out.error)) out.status = St::kTraceFailed;
  return out;
}

}  // namespace ni::analysis
