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
  explicit ScanSink(std::string dir) : SpillSink(std::move(dir), Partition::kComm, true) {}
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
    ch_entries_ += o.ch_entries_;
    tagged_ = tagged_ || o.tagged_;
    o.keys_.clear();
    last_ = o.last_ = nullptr;
  }

  KeySpans keys_;
  std::uint64_t ops_ = 0, no_start_ = 0, ch_entries_ = 0;
  bool tagged_ = false;

 private:
  Key last_key_;
  KeySpan* last_ = nullptr;
};

// What the second read keeps: the ops the trace shows, calibrated.
struct Keep {
  const TraceGlobals* g = nullptr;
  const TraceFilter* filter = nullptr;
  const ClockCalibration* cal = nullptr;
  std::uint32_t inputs = 0;  // the inputs' own logs keep their index; further logs of a concatenation
  std::map<std::string, std::uint32_t> file_of_path;  // are found by name ("INPUT (log 2)")
  std::vector<std::uint64_t> file_ops;  // the ops the first read gave per file
};

class KeepSink : public ViewSink {
 public:
  explicit KeepSink(const Keep* k) : k_(k), seen_(k->file_ops.size(), 0) {}
  void on_op(const Op& op, const OpDetail* d, const FileInfo& file) override {
    if (op.file_idx != read_file_) {  // a concatenation's further logs may have other indices in this read
      read_file_ = op.file_idx;
      auto it = k_->file_of_path.find(file.path);
      file_ = op.file_idx < k_->inputs ? op.file_idx : it == k_->file_of_path.end() ? UINT32_MAX : it->second;
    }
    if (file_ >= seen_.size()) return;
    // A log still being written: what the first read saw of it, no more.
    if (++seen_[file_] > k_->file_ops[file_]) return;
    if (!op.has_start() || op.seq % k_->g->sample != 0) return;
    Op o = op;
    o.file_idx = file_;
    auto key = k_->g->keys.find({o.file_idx, o.comm_hash, o.rank});
    if (key == k_->g->keys.end()) return;  // the logs changed between the reads
    if (auto s = k_->cal->shift_ns.find({o.comm_hash, o.rank}); s != k_->cal->shift_ns.end())
      o.start_wall_ns -= s->second;
    if (!k_->filter->passes(o, k_->g->gm.gpus[key->second.gpu].rank)) return;
    ViewSink::on_op(o, d, file);
  }
  void merge(KeepSink&& o) {
    ViewSink::merge(std::move(o));
    for (std::size_t f = 0; f < seen_.size() && f < o.seen_.size(); ++f) seen_[f] += o.seen_[f];
  }
  // The ops each file gave this read (all of them, kept or not).
  const std::vector<std::uint64_t>& seen() const { return seen_; }

 private:
  const Keep* k_;
  std::uint32_t read_file_ = UINT32_MAX, file_ = UINT32_MAX;
  std::vector<std::uint64_t> seen_;
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
  auto scan = read_merged<ScanSink>(files, ro, threads, out.res, b.tmpdir);
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
  std::uint64_t kept = 0;
  if (filtered || !parts.empty() || (b.calibrate && !cal_first)) {
    const Key* last = nullptr;
    int last_rank = -1;
    const bool ok = sweep([&](CollectSink& part) {
      if (b.calibrate && !cal_first) {
        ClockCalibration cal = calibrate_clocks(find_stragglers_part(part.ops, res, {}));
        apply_clock_calibration(cal, part.ops);
        merge_calibration(out.cal, std::move(cal));
      } else {
        apply_clock_calibration(out.cal, part.ops);
      }
      for (auto& a : parts)
        if (a->keeps_ops() && a->partition() == Partition::kComm) a->run_part(AnalysisInput{part, res});
      if (!filtered) return;
      for (const Op& op : part.ops) {
        const Key k{op.file_idx, op.comm_hash, op.rank};
        if (last == nullptr || !(*last == k)) {
          auto it = g.keys.find(k);
          if (it == g.keys.end()) continue;  // every op's key was kept by the first read
          last = &it->first;
          last_rank = g.gm.gpus[it->second.gpu].rank;
        }
        if (!filter.passes(op, last_rank)) continue;
        ++g.ops_selected;
        kept += op.seq % sample == 0;
      }
    });
    if (!ok) return spill_failed();
  }
  if (b.calibrate && !cal_first) {  // the calibrated t0 and ends (the GPUs are the same)
    TraceGlobals cg;
    map_keys(scan->keys_, res, &out.cal, cg);
    g.t0 = cg.t0;
    g.keys = std::move(cg.keys);
  }
  scan->keys_.clear();
  g.sample = trace_sample(sample, kept, o.max_ops);  // as TraceBuild::select_ops
  const CollectSink none;
  for (auto& a : parts) {
    AnalysisResult r;
    if (!a->keeps_ops()) r = a->run(AnalysisInput{none, res});
    else if (a->partition() == Partition::kComm) r = a->finish_parts(res);
    else if (a->has_markers()) out.left_out.emplace_back(a->name());
    for (auto& m : r.markers) g.markers.push_back(std::move(m));
  }
  scan.reset();  // the spill files go

  // The second read: only the ops to show.
  Keep keep;
  keep.g = &g;
  keep.filter = &filter;
  keep.cal = &out.cal;
  keep.inputs = static_cast<std::uint32_t>(files.size());
  for (std::size_t f = files.size(); f < res.files.size(); ++f)
    keep.file_of_path.emplace(res.files[f].path, static_cast<std::uint32_t>(f));
  for (const FileInfo& f : res.files) keep.file_ops.push_back(f.ops);
  std::unique_ptr<KeepSink> view;
  if (filtered) {
    ReadResult again;
    view = read_merged<KeepSink>(files, ro, threads, again, &keep);
    for (std::size_t f = 0; f < res.files.size(); ++f)
      if (view->seen()[f] < keep.file_ops[f]) {  // shrunk, rotated away or damaged since the first read
        out.status = St::kSpillFailed;
        out.error = res.files[f].path + " changed between the trace's two reads (" + std::to_string(keep.file_ops[f]) +
                    " ops, then " + std::to_string(view->seen()[f]) + "): no trace from part of its ops";
        return out;
      }
  } else {
    view = std::make_unique<KeepSink>(&keep);  // nothing to show: the trace says why, as with every op in memory
  }
  o.given = &g;
  o.calibration = b.calibrate ? &out.cal : nullptr;
  if (!write_trace_file(*view, res, o, path, out.stats, out.error)) out.status = St::kTraceFailed;
  return out;
}

}  // namespace ni::analysis
