#include "src/analysis/compare.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>

#include "src/analysis/analysis.h"
#include "src/analysis/stats.h"
#include "src/analysis/summary.h"

namespace ni::analysis {

namespace {
struct CmpKey {
  std::uint64_t tag;  // 0 unless --by-tag
  Func func;
  int bucket;
  int nranks;
  Algo algo;
  Proto proto;
  TimedBy timed;  // GroupKey::timed: GPU- and CPU-timed latencies are never compared with each other
  auto tie() const { return std::tie(tag, func, bucket, nranks, algo, proto, timed); }
  bool operator<(const CmpKey& o) const { return tie() < o.tie(); }
};
std::map<CmpKey, GroupAcc> collapse(const SummarySink& s, bool by_tag) {
  std::map<CmpKey, GroupAcc> m;
  for (const auto& [k, a] : s.groups)
    if (k.kind == OpKind::kColl || k.kind == OpKind::kP2p)
      m[{by_tag ? k.group : 0, k.func, k.bucket, k.nranks, k.algo, k.proto, k.timed}].merge(a);
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
  if (o.by_tag) so.group_by = GroupBy::kTag;
  ReadResult rb, rr;
  auto sb = read_merged<SummarySink>(base, ro, threads, rb, so);
  auto sr = read_merged<SummarySink>(run, ro, threads, rr, so);
  cr.error = read_error(rb, "BASE");
  if (cr.error.empty()) cr.error = read_error(rr, "RUN");
  if (!cr.error.empty()) return cr;
  // Each side's drops and damage, named by its side: a side that lost records
  // compares what it kept.
  cr.notes = read_notes(rb, "BASE");
  for (std::string& n : read_notes(rr, "RUN")) cr.notes.push_back(std::move(n));
  const auto mb = collapse(*sb, o.by_tag), mr = collapse(*sr, o.by_tag);
  const TagNames tags = o.by_tag ? tag_names(rb, rr, o.tag_map) : TagNames();
  Section& s = cr.report.add("compare", "BASE vs RUN");
  if (o.by_tag) s.table.columns = {"tag"};
  for (const char* c : {"op", "size", "nranks", "algo", "proto", "metric", "base_n", "run_n", "base_p50", "run_p50",
                        "change_pct", "noise_pct", "verdict"})
    s.table.columns.push_back(c);
  std::map<CmpKey, int> keys;
  for (const auto& [k, a] : mb) keys[k] |= 1;
  for (const auto& [k, a] : mr) keys[k] |= 2;
  for (const auto& [k, where] : keys) {
    std::vector<Cell> row;
    if (o.by_tag) row.push_back(tags.label(k.tag));
    row.insert(row.end(), {std::string(to_string(k.func)), size_bucket_label(k.bucket), k.nranks,
                           std::string(to_string(k.algo)), std::string(proto_label(k.algo, k.proto))});
    if (where != 3) {
      const GroupAcc& a = where == 1 ? mb.at(k) : mr.at(k);
      row.insert(row.end(), {"-", where == 1 ? Cell(a.count) : Cell(0), where == 2 ? Cell(a.count) : Cell(0),
                             Cell(kNaN), Cell(kNaN), Cell(kNaN), Cell(kNaN), where == 1 ? "only in base" : "only in run"});
      s.table.rows.push_back(std::move(row));
      continue;
    }
    const GroupAcc& a = mb.at(k);
    const GroupAcc& b = mr.at(k);
    if (a.lat.count() == 0 && b.lat.count() == 0) {
      // Counted without a time on both sides (an AlltoAll assembled from
      // CPU-timed parts, or from GPU-timed parts not all placed on the wall
      // clock): nothing to compare but the counts.
      row.insert(row.end(), {"-", a.count, b.count, Cell(kNaN), Cell(kNaN), Cell(kNaN), Cell(kNaN), "not timed"});
      s.table.rows.push_back(std::move(row));
      continue;
    }
    const bool bw = a.bw.count() >= o.min_count && b.bw.count() >= o.min_count;
    const QuantileSketch& qa = bw ? a.bw : a.lat;
    const QuantileSketch& qb = bw ? b.bw : b.lat;
    const double ma = qa.quantile(0.5), mbv = qb.quantile(0.5);
    // Positive "better" = higher busbw or lower latency.
    const double change = ma > 0 ? 100.0 * (mbv - ma) / ma : 0;
    const double better = bw ? change : -change;
    // sqrt of the sum of squares, not std::hypot: glibc 2.35 versioned hypot anew, which would raise the
    // analyzer's glibc floor (docs/deployment.md); standard errors of latencies and bandwidths cannot overflow.
    const double sea = se_median(qa), seb = se_median(qb);
    const double noise = ma > 0 ? 100.0 * 3.0 * std::sqrt(sea * sea + seb * seb) / ma : 0;
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
    row.insert(row.end(), {bw ? "busbw_gbs" : k.timed == TimedBy::kCpu ? "lat_us_cpu_timed" : "lat_us", a.count, b.count, Cell(ma, 2), Cell(mbv, 2), Cell(change, 1),
                           Cell(noise, 1), verdict});
    s.table.rows.push_back(std::move(row));
  }
  s.notes.push_back("REGRESSION: busbw P50 down (or latency P50 up) by more than " +
                    std::to_string(static_cast<int>(o.threshold_pct)) +
                    "% and by more than noise_pct (3 standard errors of the medians, sigma from the IQR)");
  s.notes.push_back("lat_us_cpu_timed: latency as the CPU saw it (no GPU timer, or a copy-engine collective's "
                    "enqueue), compared only with the same in the other run");
  s.notes.push_back("not timed: calls counted without a time in both runs (AlltoAll, Gather, Scatter assembled from "
                    "CPU-timed parts, or from GPU-timed parts without a start, docs/analysis.md): only their counts "
                    "are shown");
  if (std::string n = tags.note(); !n.empty()) s.notes.push_back(std::move(n));
  s.notes.push_back(std::to_string(cr.regressions) + " regressions, " + std::to_string(cr.improvements) +
                    " improvements in " + std::to_string(cr.compared) + " compared groups");
  return cr;
}

// ---- the registered analysis

namespace {

// `compare BASE RUN`: two inputs of its own, so it reads them itself.
class CompareAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "compare"; }
  std::string_view help() const override {
    return "BASE vs RUN per (op, size, nranks, algo/proto; --by-tag: per user tag too); exit 3 on a regression";
  }
  Input input() const override { return Input::kOwnInputs; }
  void options(std::vector<OptionSpec>& o) override {
    o.push_back({"base", "baseline dump dir or file", &base_, false, true});
    o.push_back({"run", "new dump dir or file", &run_, false, true});
    o.push_back({"--threshold", "regression threshold in percent of busbw/latency", &opt_.threshold_pct, true});
    o.push_back({"--by-tag", "compare per user tag too (NCCL 2.31+; names from the logs' tag records)", &opt_.by_tag});
    o.push_back({"--tag-map", "file of 'tag name' lines naming the user tags for --by-tag (over the logs')", &tag_map_});
  }
  std::string check(const std::string& /*format*/) override {
    if (tag_map_.empty()) return "";
    if (!opt_.by_tag) return "--tag-map goes with --by-tag";
    std::string err;
    load_tag_map(tag_map_, opt_.tag_map, err);
    return err;
  }
  AnalysisResult run_files(const FilesInput& in) override {
    AnalysisResult r;
    std::vector<std::string> bf, rf;
    if (!discover({base_}, bf) || !discover({run_}, rf)) {
      r.exit = kExitUsage;
      r.done = true;
      return r;
    }
    CompareResult cr = compare_runs(bf, rf, in.threads, in.ro, opt_);
    for (const std::string& n : cr.notes) std::cerr << "nccl-inspector: " << n << "\n";
    if (!cr.error.empty()) {
      r.exit = kExitUsage;
      r.error = cr.error;
      return r;
    }
    r.report = std::move(cr.report);
    if (cr.regressions) {
      std::ostringstream note;
      note << cr.regressions << " regression(s) beyond " << opt_.threshold_pct << "%";
      r.note = note.str();
      r.exit = kExitRegression;
    }
    return r;
  }

 private:
  CompareOptions opt_;
  std::string base_, run_, tag_map_;
};

}  // namespace

std::unique_ptr<Analysis> make_compare_analysis() { return std::make_unique<CompareAnalysis>(); }

}  // namespace ni::analysis
