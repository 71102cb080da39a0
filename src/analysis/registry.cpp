// The registry: every analysis, listed once. The CLI makes a subcommand of each,
// in this order; `report` and `trace` run those that work on ops.
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "src/analysis/analysis.h"
#include "src/analysis/summary.h"

namespace ni::analysis {

// One line per analysis: X(name) stands for the factory make_<name>_analysis()
// its own file defines.
#define NI_ANALYSES(X) \
  X(summary)           \
  X(validate)          \
  X(export)            \
  X(stragglers)        \
  X(anomalies)         \
  X(compare)           \
  X(iterations)        \
  X(hangs)

#define NI_DECLARE(n) std::unique_ptr<Analysis> make_##n##_analysis();
NI_ANALYSES(NI_DECLARE)
#undef NI_DECLARE

std::vector<AnalysisFactory>& extra_analyses() {
  static std::vector<AnalysisFactory> v;
  return v;
}

std::vector<std::unique_ptr<Analysis>> make_analyses() {
  std::vector<std::unique_ptr<Analysis>> v;
#define NI_MAKE(n) v.push_back(make_##n##_analysis());
  NI_ANALYSES(NI_MAKE)
#undef NI_MAKE
  for (auto* extra : extra_analyses()) v.push_back(extra());
  return v;
}

std::vector<RanAnalysis> run_op_analyses(const CollectSink& data, const ReadResult& res) {
  std::vector<RanAnalysis> out;
  for (auto& a : make_analyses()) {
    if (!a->in_views()) continue;
    AnalysisResult r = a->run(AnalysisInput{data, res});
    out.push_back({std::move(a), std::move(r)});
  }
  return out;
}

AnalysisResult Analysis::run(const AnalysisInput&) {
  AnalysisResult r;
  r.exit = kExitUsage;
  r.error = std::string(name()) + " does not run on ops";
  return r;
}

AnalysisResult Analysis::finish_parts(const ReadResult&) {
  AnalysisResult r;
  r.exit = kExitUsage;
  r.error = std::string(name()) + " does not run in parts";
  return r;
}

AnalysisResult Analysis::run_files(const FilesInput&) {
  AnalysisResult r;
  r.exit = kExitUsage;
  r.error = std::string(name()) + " does not read files";
  return r;
}

namespace {
// The start of a message about one of several inputs: "BASE: ", or nothing.
std::string input_prefix(std::string_view input) { return input.empty() ? "" : std::string(input) + ": "; }
}  // namespace

std::string read_error(const ReadResult& res, std::string_view input) {
  if (res.ops != 0) return "";
  std::string e = input_prefix(input) + "no op records in " + std::to_string(res.files.size()) + " file(s)";
  std::size_t unknown = 0;
  for (const auto& f : res.files) unknown += f.format == FileFormat::kUnknown;
  if (unknown == res.files.size()) e += " (unknown format: not nccl-inspector or upstream Inspector v4.0 logs)";
  return e + "; try: nccl-inspector validate";
}

std::vector<std::string> read_notes(const ReadResult& res, std::string_view input) {
  const std::string of = input_prefix(input);
  std::vector<std::string> notes;
  if (res.truncated_files || res.corrupt_files || res.bad_lines)
    notes.push_back("note: " + of + std::to_string(res.truncated_files) + " truncated file(s), " +
                    std::to_string(res.corrupt_files) + " corrupt file(s), " + std::to_string(res.bad_lines) +
                    " bad line(s) skipped (see the health section)");
  // What the plugin lost before it reached these logs (its stats records) and
  // what it wrote that is not in the files given: every subcommand's verdicts
  // see only the records read, so each says so.
  const DropTotals d = drop_totals(res);
  const CountList dropped = count_list(d.dropped);
  std::vector<std::string> lost;
  if (dropped.total != 0)
    lost.push_back("the plugin dropped " + std::to_string(dropped.total) + " record(s) (" + dropped.list +
                   ") before they reached these logs");
  if (d.unaccounted != 0)
    lost.push_back("the plugin lost " + std::to_string(d.unaccounted) +
                   " record(s) uncounted (completed, neither written nor counted as dropped)");
  if (d.written_not_read != 0)
    lost.push_back(std::to_string(d.written_not_read) +
                   " record(s) the plugin counts as written are not in the files read (a rotated file missing or not "
                   "given, or cut short)");
  if (!lost.empty()) {
    std::string n = "note: " + of;
    for (std::size_t i = 0; i < lost.size(); ++i)
      n += (i == 0 ? "" : i + 1 == lost.size() ? " and " : ", ") + lost[i];
    notes.push_back(n + ": what follows is on the records read (per output: `nccl-inspector summary`, its health "
                        "section)");
  }
  for (const auto& f : res.files)
    if (f.failed) notes.push_back("warning: " + of + f.path + ": " + f.error);
  return notes;
}

bool check_read(const ReadResult& res, std::string_view input) {
  if (const std::string e = read_error(res, input); !e.empty()) {
    std::cerr << "nccl-inspector: " << e << "\n";
    return false;
  }
  note_read(res, input);
  return true;
}

void note_read(const ReadResult& res, std::string_view input) {
  for (const std::string& n : read_notes(res, input)) std::cerr << "nccl-inspector: " << n << "\n";
}

bool discover(const std::vector<std::string>& inputs, std::vector<std::string>& files) {
  Discovery d = discover_files(inputs);
  if (!d.error.empty()) {
    std::cerr << "nccl-inspector: " << d.error << "\n";
    return false;
  }
  files = std::move(d.files);
  return true;
}

}  // namespace ni::analysis
