#include "compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stats.h"
#include "summary.h"

namespace nccl_inspector::analysis {

namespace {
struct CmpKey {
  Func func;
  int bucket;
  int nranks;
  Algo algo;
  Proto proto;
  auto tie() const { return std::tie(func, bucket, nranks, algo, proto); }
  bool operator<(const CmpKey& o) const { return tie() < o.tie(); }
};
std::map<CmpKey, GroupAcc> collapse(const SummarySink& s) {
  std::map<CmpKey, GroupAcc> m;
  for (const auto& [k, a] : s.groups)
    if (k.kind == OpKind::kColl || k.kind == OpKind::kP2p)
      m[{k.func, k.bucket, k.nranks, k.algo, k.proto}].merge(a);
  return m;
}
double se_median(const QuantileSketch& q) {
  const double sigma = (q.quantile(0.75) - q.quantile(0.25)) / 1.349;
  return 1.2533 * sigma / std::sqrt(static_cast<double>(std::max<std::uint64_t>(1, q.count())));
}
}  // namespace

CompareResult compare_runs(const std::vector<std::string>& base, const std::vector<std::string>& run, int threads,
                           const ReadOptions& ro, const CompareOptions& o) {
  CompareResult cr;
  SummaryOptions so;
  so.advice = false;
  ReadResult rb, rr;
  auto sb = read_merged<SummarySink>(base, ro, threads, rb, so);
  auto sr = read_merged<SummarySink>(run, ro, threads, rr, so);
  if (rb.ops == 0) cr.error = "no op records in BASE";
  else if (rr.ops == 0) cr.error = "no op records in RUN";
  if (!cr.error.empty()) return cr;
  const auto mb = collapse(*sb), mr = collapse(*sr);
  Section& s = cr.report.add("compare", "BASE vs RUN");
  s.table.columns = {"op", "size", "nranks", "algo", "proto", "metric", "base_n", "run_n", "base_p50", "run_p50",
                     "change_pct", "noise_pct", "verdict"};
  std::map<CmpKey, int> keys;
  for (const auto& [k, a] : mb) keys[k] |= 1;
  for (const auto& [k, a] : mr) keys[k] |= 2;
  for (const auto& [k, where] : keys) {
    std::vector<Cell> row = {std::string(to_string(k.func)), size_bucket_label(k.bucket), k.nranks,
                             std::string(to_string(k.algo)), std::string(to_string(k.proto))};
    if (where != 3) {
      const GroupAcc& a = where == 1 ? mb.at(k) : mr.at(k);
      row.insert(row.end(), {"-", where == 1 ? Cell(a.count) : Cell(0), where == 2 ? Cell(a.count) : Cell(0),
                             Cell(kNaN), Cell(kNaN), Cell(kNaN), Cell(kNaN), where == 1 ? "only in base" : "only in run"});
      s.table.rows.push_back(std::move(row));
      continue;
    }
    const GroupAcc& a = mb.at(k);
    const GroupAcc& b = mr.at(k);
    const bool bw = a.bw.count() >= o.min_count && b.bw.count() >= o.min_count;
    const QuantileSketch& qa = bw ? a.bw : a.lat;
    const QuantileSketch& qb = bw ? b.bw : b.lat;
    const double ma = qa.quantile(0.5), mbv = qb.quantile(0.5);
    // Positive "better" = higher busbw or lower latency.
    const double change = ma > 0 ? 100.0 * (mbv - ma) / ma : 0;
    const double better = bw ? change : -change;
    const double noise = ma > 0 ? 100.0 * 3.0 * std::hypot(se_median(qa), se_median(qb)) / ma : 0;
    std::string verdict;
    if (qa.count() < o.min_count || qb.count() < o.min_count) {
      verdict = "too few ops";
    } else {
      ++cr.compared;
      if (std::fabs(change) <= noise) verdict = "within noise";
      else if (better <= -o.threshold_pct) {
        verdict = "REGRESSION";
        ++cr.regressions;
      } else if (better >= o.threshold_pct) {
        verdict = "improvement";
        ++cr.improvements;
      } else {
        verdict = "small change";
      }
    }
    row.insert(row.end(), {bw ? "busbw_gbs" : "lat_us", a.count, b.count, Cell(ma, 2), Cell(mbv, 2), Cell(change, 1),
                           Cell(noise, 1), verdict});
    s.table.rows.push_back(std::move(row));
  }
  s.notes.push_back("REGRESSION: busbw P50 down (or latency P50 up) by more than " +
                    std::to_string(static_cast<int>(o.threshold_pct)) +
                    "% and by more than noise_pct (3 standard errors of the medians, sigma from the IQR)");
  s.notes.push_back(std::to_string(cr.regressions) + " regressions, " + std::to_string(cr.improvements) +
                    " improvements in " + std::to_string(cr.compared) + " compared groups");
  return cr;
}

void add_iteration_section(Report& r, const std::vector<OpRecord>& ops, const ReadResult& res) {
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
    comm[i][op.file_idx] += op.dur_us;
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
}

}  // namespace nccl_inspector::analysis
