// `iterations`: per-iteration statistics between consecutive `mark` records
// (ncclInspectorMark) of each process.
#include "src/analysis/iterations.h"

#include <algorithm>
#include <map>

#include "src/analysis/analysis.h"
#include "src/analysis/stats.h"

namespace ni::analysis {

void add_iteration_section(Report& r, const std::vector<Op>& ops, const ReadResult& res) {
  // Per file: sorted mark times; an op belongs to the iteration whose mark precedes its start.
  struct Iter {
    std::string label;
    std::vector<double> wall_ms, comm_us;
    std::uint64_t ops = 0, bytes = 0;
    QuantileSketch bw;
  };
  std::vector<Iter> iters;
  std::vector<std::vector<MarkInfo>> marks(res.files.size());
  bool any = false;
  for (std::size_t f = 0; f < res.files.size(); ++f) {
    marks[f] = res.files[f].marks;
    std::sort(marks[f].begin(), marks[f].end(), [](const MarkInfo& a, const MarkInfo& b) { return a.wall_ns < b.wall_ns; });
    any = any || !marks[f].empty();
    if (marks[f].size() > iters.size()) iters.resize(marks[f].size());
    for (std::size_t i = 0; i < marks[f].size(); ++i) {
      if (iters[i].label.empty()) iters[i].label = marks[f][i].label;
      if (i + 1 < marks[f].size())
        iters[i].wall_ms.push_back(static_cast<double>(marks[f][i + 1].wall_ns - marks[f][i].wall_ns) / 1e6);
    }
  }
  if (!any) return;
  std::vector<std::map<std::uint32_t, double>> comm(iters.size());  // iteration -> file -> comm us
  std::uint64_t enqueue_timed = 0;
  for (const auto& op : ops) {
    if (!op.has_start() || op.file_idx >= marks.size()) continue;
    const auto& m = marks[op.file_idx];
    auto it = std::upper_bound(m.begin(), m.end(), op.start_wall_ns,
                               [](std::int64_t t, const MarkInfo& x) { return t < x.wall_ns; });
    if (it == m.begin()) continue;
    const std::size_t i = static_cast<std::size_t>(it - m.begin()) - 1;
    Iter& I = iters[i];
    ++I.ops;
    I.bytes += op.bytes;
    if (op.has_busbw()) I.bw.add(op.busbw_gbs);
    if (duration_is_enqueue(op.timing)) ++enqueue_timed;  // not the op's run time (model.h)
    else comm[i][op.file_idx] += op.dur_us;
  }
  Section& s = r.add("iterations", "Per iteration (between mark records)");
  s.table.columns = {"iter", "label", "wall_ms_p50", "ops", "bytes", "comm_ms_per_process_p50", "comm_pct", "busbw_p50_gbs"};
  for (std::size_t i = 0; i < iters.size(); ++i) {
    Iter& I = iters[i];
    std::vector<double> c;
    for (auto& [f, us] : comm[i]) c.push_back(us / 1000.0);
    const double wall = median_of(I.wall_ms), cm = median_of(c);
    s.table.rows.push_back({static_cast<int>(i), I.label, Cell(wall, 3), I.ops, I.bytes, Cell(cm, 3),
                            Cell(wall > 0 ? 100.0 * cm / wall : kNaN, 1), Cell(I.bw.quantile(0.5), 2)});
  }
  s.notes.push_back("comm_pct: time inside NCCL kernels per process / iteration wall time (overlap counts twice)");
  if (enqueue_timed)
    s.notes.push_back(std::to_string(enqueue_timed) +
                      " ops timed only by their enqueue (no GPU timer, or copy-engine collectives) left out of comm time");
}

namespace {

class IterationsAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "iterations"; }
  std::string_view help() const override { return "per-iteration stats between ncclInspectorMark records"; }
  Input input() const override { return Input::kOps; }
  AnalysisResult run(const AnalysisInput& in) override {
    AnalysisResult r;
    add_iteration_section(r.report, in.data.ops, in.res);
    if (r.report.sections.empty()) {
      r.exit = kExitUsage;
      r.error = "no mark records in the input (call ncclInspectorMark each iteration)";
    }
    return r;
  }
  // Not in the report so far: the page has no per-iteration view.
  bool tables_in_report() const override { return false; }
};

}  // namespace

std::unique_ptr<Analysis> make_iterations_analysis() { return std::make_unique<IterationsAnalysis>(); }

}  // namespace ni::analysis
