#include "src/analysis/validate.h"

#include <map>
#include <tuple>

#include "src/analysis/analysis.h"
#include "src/analysis/summary.h"

namespace ni::analysis {

namespace {
// Per (file, comm, rank, func): missing NCCL sequence numbers between consecutive collectives.
class GapSink : public OpSink {
 public:
  void on_op(const Op& op, const OpDetail*, const FileInfo&) override {
    health.add(op);
    if (op.kind != OpKind::kColl || (op.flags & kFlagUpstream && op.seq == 0)) return;
    auto& last = last_[{op.file_idx, op.comm_hash, op.rank, op.func}];
    if (last.second && op.seq > last.first + 1) {
      gaps[op.file_idx] += op.seq - last.first - 1;
    } else if (last.second && op.seq <= last.first) {
      ++out_of_order[op.file_idx];
    }
    if (!last.second || op.seq > last.first) last = {op.seq, true};
  }
  void merge(GapSink&& o) {
    for (auto& [k, v] : o.gaps) gaps[k] += v;
    for (auto& [k, v] : o.out_of_order) out_of_order[k] += v;
    health.merge(o.health);
  }
  std::map<std::uint32_t, std::uint64_t> gaps, out_of_order;
  OpHealth health;

 private:
  std::map<std::tuple<std::uint32_t, std::uint64_t, int, Func>, std::pair<std::uint64_t, bool>> last_;
};
}  // namespace

ValidateResult validate_files(const std::vector<std::string>& files, int threads, const ReadOptions& ro_in,
                              bool strict) {
  ValidateResult v;
  ReadOptions ro = ro_in;
  ro.validate = true;
  ReadResult res;
  auto sink = read_merged<GapSink>(files, ro, threads, res);
  Section& s = v.report.add("files", "Files");
  s.table.columns = {"file", "format", "version", "host", "pid", "lines", "ops", "bad_lines", "unknown",
                     "seq_gaps", "dropped", "end", "status"};
  Section& p = v.report.add("problems", "Problems");
  p.table.columns = {"file", "problem"};
  for (std::size_t i = 0; i < res.files.size(); ++i) {
    const FileInfo& f = res.files[i];
    std::uint64_t dropped = 0;
    for (const auto& [k, n] : f.stats.dropped) dropped += n;
    std::vector<std::string> why;
    if (f.format == FileFormat::kUnknown) why.push_back(f.lines ? "unknown format (no meta record, not upstream v4.0)" : "empty");
    if (f.corrupt) why.push_back(f.error);
    if (f.failed) why.push_back(f.error);
    if (f.bad_lines)
      why.push_back(std::to_string(f.bad_lines) + " bad lines" +
                    (f.long_lines ? " (" + std::to_string(f.long_lines) + " over the line limit)" : ""));
    if (f.format == FileFormat::kOurs && !f.meta_first) why.push_back("first line is not a meta record");
    if (!f.problems.empty()) why.push_back(std::to_string(f.problems.size()) + " schema problems");
    const bool bad = !why.empty();
    if (f.truncated) {
      why.push_back(f.error.empty() ? "truncated" : f.error);
      v.truncated = true;
    }
    if (bad || (strict && f.truncated)) v.valid = false;
    std::string status = bad ? "INVALID" : f.truncated ? "TRUNCATED" : "ok";
    const auto gaps = sink->gaps.count(static_cast<std::uint32_t>(i)) ? sink->gaps.at(static_cast<std::uint32_t>(i)) : 0;
    s.table.rows.push_back({f.path,
                            f.format == FileFormat::kOurs ? "nccl-inspector"
                            : f.format == FileFormat::kUpstreamV4 ? "upstream " + f.format_string
                                                                  : "unknown",
                            f.format_version, f.host, f.pid, f.lines, f.ops, f.bad_lines, f.unknown_records,
                            gaps, dropped, f.format == FileFormat::kOurs ? (f.has_end ? "yes" : "no") : "-",
                            status});
    for (const auto& w : why) p.table.rows.push_back({f.path, w});
    for (const auto& pr : f.problems) p.table.rows.push_back({f.path, pr});
  }
  s.notes.push_back("seq_gaps: missing NCCL sequence numbers per (comm, rank, op); expected when sampling or a min-size filter is on");
  add_health_section(v.report, res, &sink->health);
  return v;
}

// ---- the registered analysis

namespace {

class ValidateAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "validate"; }
  std::string_view help() const override { return "check files against the schema; exit 1 on invalid input"; }
  Input input() const override { return Input::kFiles; }
  void options(std::vector<OptionSpec>& o) override {
    o.push_back({"--strict", "also fail on truncated files", &strict_});
  }
  AnalysisResult run_files(const FilesInput& in) override {
    ValidateResult v = validate_files(in.files, in.threads, in.ro, strict_);
    AnalysisResult r;
    r.report = std::move(v.report);
    r.note = std::string(v.valid ? "valid" : "INVALID") + (v.truncated ? " (with truncated files)" : "");
    r.exit = v.valid ? kExitOk : kExitInvalid;
    return r;
  }

 private:
  bool strict_ = false;
};

}  // namespace

std::unique_ptr<Analysis> make_validate_analysis() { return std::make_unique<ValidateAnalysis>(); }

}  // namespace ni::analysis
