// `iterations`: per-iteration statistics between consecutive `mark` records
// (ncclInspectorMark) of each process.
#include "src/analysis/iterations.h"

#include <algorithm>
#include <map>
#include <memory>

#include "src/analysis/analysis.h"
#include "src/analysis/stats.h"
#include "src/analysis/view.h"

namespace ni::analysis {

namespace {
// Total length of the union of [begin, end) intervals (sorts them).
std::int64_t union_ns(std::vector<std::pair<std::int64_t, std::int64_t>>& iv) {
  std::sort(iv.begin(), iv.end());
  std::int64_t total = 0, lo = 0, hi = 0;
  bool open = false;
  for (const auto& [b, e] : iv) {
    if (open && b <= hi) {
      hi = std::max(hi, e);
      continue;
    }
    if (open) total += hi - lo;
    lo = b;
    hi = e;
    open = true;
  }
  return open ? total + hi - lo : total;
}
}  // namespace

IterationAcc::IterationAcc(const ReadResult& res) : res_(res), marks_(res.files.size()) {
  // Per file: sorted mark times; an op belongs to the iteration whose mark precedes its start.
  for (std::size_t f = 0; f < res.files.size(); ++f) {
    marks_[f] = res.files[f].marks;
    std::sort(marks_[f].begin(), marks_[f].end(), [](const MarkInfo& a, const MarkInfo& b) { return a.wall_ns < b.wall_ns; });
    any_ = any_ || !marks_[f].empty();
    if (marks_[f].size() > iters_.size()) iters_.resize(marks_[f].size());
    for (std::size_t i = 0; i < marks_[f].size(); ++i) {
      if (iters_[i].label.empty()) iters_[i].label = marks_[f][i].label;
      if (i + 1 < marks_[f].size())
        iters_[i].wall_ms.push_back(static_cast<double>(marks_[f][i + 1].wall_ns - marks_[f][i].wall_ns) / 1e6);
    }
  }
  for (std::size_t f = 0; f < res.files.size(); ++f)
    if (!marks_[f].empty()) marks_of_.emplace(std::make_pair(res.files[f].host, res.files[f].pid), f);
}

void IterationAcc::add(const std::vector<Op>& ops) {
  if (!any_) return;
  // Per (iteration, GPU): the intervals its ops kept the GPU in NCCL, clipped
  // to the iteration. A process may drive several GPUs, and one GPU may run
  // ops of several comms at once: the union of the intervals is the GPU's
  // time in NCCL, never more than the iteration. A GPU is one process's, so
  // the ops given hold every op of each GPU they touch (whole processes).
  const GpuMap gm = map_gpus(ops, res_);
  std::vector<std::map<std::uint32_t, std::vector<std::pair<std::int64_t, std::int64_t>>>> busy(iters_.size());
  std::vector<std::pair<std::int64_t, std::int64_t>>* last = nullptr;
  std::size_t last_i = 0;
  std::uint32_t last_gpu = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const Op& op = ops[k];
    if (!op.has_start() || op.file_idx >= marks_.size()) continue;
    const auto& m = marks_[op.file_idx];
    auto it = std::upper_bound(m.begin(), m.end(), op.start_wall_ns,
                               [](std::int64_t t, const MarkInfo& x) { return t < x.wall_ns; });
    if (it == m.begin()) continue;
    const std::size_t i = static_cast<std::size_t>(it - m.begin()) - 1;
    Iter& I = iters_[i];
    ++I.ops;
    I.bytes += op.bytes;
    if (op.has_busbw()) I.bw.add(op.busbw_gbs);
    if (duration_is_enqueue(op.timing)) {  // not the op's run time (model.h)
      ++enqueue_timed_;
      continue;
    }
    std::int64_t end = op.start_wall_ns + static_cast<std::int64_t>(static_cast<double>(op.dur_us) * 1000.0);
    if (it != m.end()) end = std::min(end, it->wall_ns);  // the next mark ends the iteration
    if (end <= op.start_wall_ns) continue;
    // A file's ops come in runs of one iteration and GPU: looked up once per run.
    if (last == nullptr || i != last_i || gm.op_gpu[k] != last_gpu) {
      last_i = i;
      last_gpu = gm.op_gpu[k];
      last = &busy[i][last_gpu];
    }
    last->emplace_back(op.start_wall_ns, end);
  }
  for (std::size_t i = 0; i < iters_.size(); ++i) {
    for (auto& [g, iv] : busy[i]) {
      const double ms = static_cast<double>(union_ns(iv)) / 1e6;
      iters_[i].comm_ms.push_back(ms);
      // Its process's wall time of this iteration (absent for the last one).
      const auto f = marks_of_.find({gm.gpus[g].host, gm.gpus[g].pid});
      if (f != marks_of_.end() && i + 1 < marks_[f->second].size()) {
        const auto& m = marks_[f->second];
        iters_[i].pct.push_back(100.0 * ms * 1e6 / static_cast<double>(m[i + 1].wall_ns - m[i].wall_ns));
      }
    }
  }
}

void IterationAcc::report(Report& r) {
  if (!any_) return;
  Section& s = r.add("iterations", "Per iteration (between mark records)");
  s.table.columns = {"iter", "label", "wall_ms_p50", "ops", "bytes", "comm_ms_per_gpu_p50", "comm_pct", "busbw_p50_gbs"};
  for (std::size_t i = 0; i < iters_.size(); ++i) {
    Iter& I = iters_[i];
    s.table.rows.push_back({static_cast<int>(i), I.label, Cell(median_of(I.wall_ms), 3), I.ops, I.bytes,
                            Cell(median_of(I.comm_ms), 3), Cell(I.pct.empty() ? kNaN : median_of(I.pct), 1),
                            Cell(I.bw.quantile(0.5), 2)});
  }
  s.notes.push_back("comm_ms_per_gpu: per GPU, the time any NCCL op kept it busy in the iteration (ops of several "
                    "comms at once count once); comm_pct: that time / its process's iteration wall time, median over "
                    "GPUs (never over 100 %)");
  if (enqueue_timed_)
    s.notes.push_back(std::to_string(enqueue_timed_) +
                      " ops timed only by their enqueue (no GPU timer, or copy-engine collectives) left out of comm time");
}

void add_iteration_section(Report& r, const std::vector<Op>& ops, const ReadResult& res) {
  IterationAcc a(res);
  a.add(ops);
  a.report(r);
}

namespace {

class IterationsAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "iterations"; }
  std::string_view help() const override { return "per-iteration stats between ncclInspectorMark records"; }
  Input input() const override { return Input::kOps; }
  bool has_markers() const override { return false; }  // a table of iterations, no findings
  AnalysisResult run(const AnalysisInput& in) override {
    IterationAcc a(in.res);
    a.add(in.data.ops);
    return result(a);
  }
  // A GPU's time in NCCL is its process's ops': batches of whole processes.
  Partition partition() const override { return Partition::kProcess; }
  void run_part(const AnalysisInput& in) override {
    if (!acc_) acc_ = std::make_unique<IterationAcc>(in.res);
    acc_->add(in.data.ops);
  }
  AnalysisResult finish_parts(const ReadResult& res) override {
    if (!acc_) acc_ = std::make_unique<IterationAcc>(res);
    AnalysisResult r = result(*acc_);
    acc_.reset();  // the next run in parts starts afresh
    return r;
  }
  // Not in the report so far: the page has no per-iteration view.
  bool tables_in_report() const override { return false; }

 private:
  static AnalysisResult result(IterationAcc& a) {
    AnalysisResult r;
    a.report(r.report);
    if (r.report.sections.empty()) {
      r.exit = kExitUsage;
      r.error = "no mark records in the input (call ncclInspectorMark each iteration)";
    }
    return r;
  }
  std::unique_ptr<IterationAcc> acc_;
};

}  // namespace

std::unique_ptr<Analysis> make_iterations_analysis() { return std::make_unique<IterationsAnalysis>(); }

}  // namespace ni::analysis
