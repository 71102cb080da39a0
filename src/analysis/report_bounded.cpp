// `report` in bounded memory: see report_bounded.h for the passes.
#include "src/analysis/report_bounded.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "src/analysis/analysis.h"
#include "src/analysis/partition.h"
#include "src/analysis/report_model.h"
#include "src/analysis/view.h"

namespace ni::analysis {

namespace {

// The read: every op spilled by communicator (this sink) and by process (its
// second spill), both with detail, and folded into the scan.
class ReportScanSink : public SpillSink {
 public:
  explicit ReportScanSink(std::string dir)
      : SpillSink(dir, Partition::kComm, true), by_process(std::move(dir), Partition::kProcess, true) {}
  std::uint32_t op_fields() const override { return kOpFieldsAll; }
  void on_op(const Op& op, const OpDetail* d, const FileInfo& file) override {
    SpillSink::on_op(op, d, file);
    by_process.on_op(op, d, file);
    scan.add(op, d != nullptr ? d->user_tag : 0);
    if (d == nullptr) return;
    for (const auto& c : d->ch_times) {
      const CollectSink::ChSpan s = CollectSink::ChSpan::of(c);  // as ViewSink keeps it
      scan.add_channel(op.comm_hash, s.channel, s.dur_us);
    }
  }
  void merge(ReportScanSink&& o) {
    SpillSink::merge(std::move(o));
    by_process.merge(std::move(o.by_process));
    scan.merge(std::move(o.scan));
  }
  // The first failure of either spill ("" none).
  std::string spill_error() const { return !error().empty() ? error() : by_process.error(); }

  SpillSink by_process;
  ReportScan scan;
};

}  // namespace

BoundedReportResult write_report_bounded(const std::vector<std::string>& files, const ReadOptions& ro, int threads,
                                         ReportOptions o, const BoundedReport& b, std::ostream& out) {
  BoundedReportResult r;
  using St = BoundedReportResult::Status;
  auto spill = read_merged<ReportScanSink>(files, ro, threads, r.res, b.tmpdir);
  auto failed = [&] {
    r.status = St::kSpillFailed;
    r.error = spill->spill_error();
    return r;
  };
  if (!spill->spill_error().empty()) return failed();
  if (b.after_read && !b.after_read(r.res)) {
    r.status = St::kRefused;
    return r;
  }
  const ReadResult& res = r.res;
  r.spilled_ops = spill->ops();
  r.max_batch_ops = batch_ops(b.limit);
  auto sweep = [&](SpillSink& s, std::size_t& batches, const std::function<void(CollectSink&)>& fn,
                   bool detail = true) {
    batches = s.for_each_batch(r.max_batch_ops, fn, detail);
    r.largest_batch = std::max(r.largest_batch, s.largest_batch());
    return s.error().empty();
  };

  // The analyses that run on ops and that the page shows, in registry order, in parts.
  std::vector<std::unique_ptr<Analysis>> parts;
  for (auto& a : make_analyses())
    if (a->in_views()) parts.push_back(std::move(a));
  auto run_parts = [&](Partition by, CollectSink& part, const StragglerResult* logged = nullptr) {
    for (auto& a : parts)
      if (a->keeps_ops() && a->partition() == by) a->run_part(AnalysisInput{part, res, logged});
  };
  // One sweep of the communicators: each batch's clock calibration (a comm's
  // shifts need only its own ops: merged, calibrate_clocks(find_stragglers(every
  // op))), then the analyses on its calibrated ops.
  o.calibration = b.calibrate ? &r.cal : nullptr;
  if (!sweep(*spill, r.comm_batches, [&](CollectSink& part) {
        StragglerResult logged;
        const bool same = b.calibrate && calibrate_part(part.ops, res, r.cal, logged);
        run_parts(Partition::kComm, part, same ? &logged : nullptr);
      }))
    return failed();

  ReportModel m;
  m.scan = std::move(spill->scan);
  m.baseline = o.baseline;
  m.plan(res, &r.cal, o);
  if (!sweep(spill->by_process, r.process_batches, [&](CollectSink& part) {
        apply_clock_calibration(r.cal, part.ops);
        run_parts(Partition::kProcess, part);
        m.proc.add(m, part.ops, part.extra.size() == part.ops.size() ? &part.extra : nullptr, m.gpus_of(part.ops));
      }))
    return failed();
  const CollectSink none;
  for (auto& a : parts) {
    AnalysisResult ar;
    if (!a->keeps_ops()) ar = a->run(AnalysisInput{none, res});
    else if (a->partition() != Partition::kNone) ar = a->finish_parts(res);
    else r.left_out.emplace_back(a->name());
    if (a->keeps_ops() && a->partition() == Partition::kNone) continue;
    m.analyses.push_back({std::move(a), std::move(ar)});
  }
  // The report's folds by communicator, once the time axis (plan) and the
  // detectors' marks are known.
  const bool marks = m.prepare_marks();
  std::size_t n = 0;
  if (!sweep(*spill, n, [&](CollectSink& part) {
        apply_clock_calibration(r.cal, part.ops);
        m.comm.add(m, part.ops, m.gpus_of(part.ops));
        if (marks) m.comm.marks(part.ops);
      }, /*detail=*/false))  // neither reads the ops' Extra
    return failed();
  spill.reset();  // the spill files go
  r.stats = write_report_model(m, res, o, out);
  return r;
}

}  // namespace ni::analysis
