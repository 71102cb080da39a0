#include "src/analysis/validate.h"

#include <map>
#include <tuple>

#include "src/analysis/analysis.h"
#include "src/analysis/summary.h"

namespace ni::analysis {

namespace {
// Per (file, comm, rank, func): the NCCL sequence numbers seen, as disjoint
// runs [first, last] (records reach the file in completion order, per thread
// ring: out of seq order at times, so a forward jump is not yet a gap). The
// gaps are the numbers between the runs once the file is read. Typically one
// run per key: memory follows the gaps, not the records.
class GapSink : public OpSink {
 public:
  void on_op(const Op& op, const OpDetail*, const FileInfo&) override {
    health.add(op);
    if (op.kind != OpKind::kColl || (op.flags & kFlagUpstream && op.seq == 0)) return;
    add(runs_[{op.file_idx, op.comm_hash, op.rank, op.func}], op.seq);
  }
  void merge(GapSink&& o) {
    // Each file is read by one reader: its keys are in one sink only.
    for (auto& [k, runs] : o.runs_) runs_[k] = std::move(runs);
    health.merge(o.health);
  }
  // Missing numbers per file (between the first and last seen of each key).
  std::map<std::uint32_t, std::uint64_t> gaps() const {
    std::map<std::uint32_t, std::uint64_t> g;
    for (const auto& [k, runs] : runs_) {
      std::uint64_t prev_last = 0;
      bool first_run = true;
      for (const auto& [first, last] : runs) {
        if (!first_run) g[std::get<0>(k)] += first - prev_last - 1;
        prev_last = last;
        first_run = false;
      }
    }
    return g;
  }
  OpHealth health;

 private:
  using Runs = std::map<std::uint64_t, std::uint64_t>;  // first -> last
  static void add(Runs& r, std::uint64_t seq) {
    auto next = r.upper_bound(seq);  // the first run starting after seq
    if (next != r.begin()) {
      auto prev = std::prev(next);
      if (seq <= prev->second) return;  // inside a run (a repeated record)
      if (prev->second + 1 == seq) {  // extends the previous run, maybe joining the next
        prev->second = seq;
        if (next != r.end() && next->first == seq + 1) {
          prev->second = next->second;
          r.erase(next);
        }
        return;
      }
    }
    if (next != r.end() && next->first == seq + 1) {  // extends the next run downwards
      const std::uint64_t last = next->second;
      r.erase(next);
      r.emplace(seq, last);
      return;
    }
    r.emplace(seq, seq);
  }
  std::map<std::tuple<std::uint32_t, std::uint64_t, int, Func>, Runs> runs_;
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
  const auto all_gaps = sink->gaps();
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
    const auto gaps = all_gaps.count(static_cast<std::uint32_t>(i)) ? all_gaps.at(static_cast<std::uint32_t>(i)) : 0;
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
  s.notes.push_back("seq_gaps: NCCL sequence numbers missing per (comm, rank, op), in sequence order (records "
                    "reach a file in completion order); expected when sampling or a min-size filter is on");
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
