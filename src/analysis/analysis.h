// The shape every analysis has, and the registry that lists them once.
//
// An analysis declares its name and help (the CLI subcommand), its options (the
// CLI's flags), what it reads (Input) and how it runs. Analyses that run on the
// ops already read (stragglers, anomalies, iterations) also run inside `report`
// and `trace`: their result tables become a report section and their markers go
// into the report's findings table and onto the trace's findings tracks.
// Analyses that read files their own way (summary, validate, export, compare)
// appear in the CLI only.
//
// A new analysis: one file that defines a class derived from Analysis and
// `std::unique_ptr<Analysis> make_<name>_analysis()`, and one line in
// NI_ANALYSES (registry.cpp).
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "src/analysis/partition.h"
#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

// Exit codes of the CLI, which an analysis's result carries.
enum Exit : int { kExitOk = 0, kExitInvalid = 1, kExitUsage = 2, kExitRegression = 3 };

// What an analysis reads before it runs.
enum class Input {
  kOps,        // every op (run(AnalysisInput)); runs in report and trace too when they show it (in_views)
  kOpsDetail,  // the same with HCA use and the slowest channel per op
  kFiles,      // the discovered files of the `inputs` positional (run_files)
  kOwnInputs,  // no `inputs` positional: the analysis's own positionals (run_files)
};

// One option, declared once; the CLI turns it into a flag or a positional.
struct OptionSpec {
  std::string names;  // "--z", "--group-by" or a positional's name ("base")
  std::string help;
  std::variant<bool*, double*, std::size_t*, std::string*, std::vector<std::string>*> target;
  bool show_default = false;
  bool required = false;
};

// A finding as the report's findings table and the trace's markers show it.
struct Marker {
  // The findings table (report): kind, communicator, where, when, magnitude, evidence.
  std::string kind;
  std::string comm_label;
  std::string where, when, evidence;
  double magnitude = 0;
  bool in_table = true;
  // The trace: an instant on the findings process (or a slice when `window`), and
  // a copy on the rank's markers track when rank >= 0 (not for windows).
  bool in_trace = true;
  std::string track;       // the findings process's track, e.g. "outliers"
  std::uint64_t comm = 0;  // 0: not tied to one communicator
  int rank = -1;
  std::int64_t start_ns = 0;  // 0: no time (not drawn) unless at_first_op
  std::int64_t end_ns = 0;
  bool window = false;       // a time range (change windows): a slice on lanes of its track
  bool at_first_op = false;  // drawn at the rank's first op shown in that communicator
  std::string trace_name;    // "" : "<kind>: <comm_label> <where>"
  std::string trace_args;    // "" : kind/where/when/magnitude/evidence
  // The report's busbw-over-time chart of `comm`: a band (windows) or a point.
  enum class Chart : unsigned char { kNone, kBand, kPoint } chart = Chart::kNone;
};

struct AnalysisResult {
  Report report;                // result tables (the CLI renders them)
  std::vector<Marker> markers;  // findings (report table, trace markers)
  std::any detail;              // the typed result, for the views that draw it
  int exit = kExitOk;           // the CLI's exit code
  std::string error;            // printed instead of the report (exit must be non-zero)
  std::string note;             // printed on stderr after the report
  // Nothing left to write: the analysis wrote its output (export) or printed why there is none.
  bool done = false;
};

// What an analysis that runs on ops gets: the ops read and the read result.
struct StragglerResult;  // stragglers.h

struct AnalysisInput {
  const CollectSink& data;
  const ReadResult& res;
  // find_stragglers_part of these very ops with the default options, when the
  // caller has it already (a batch's clock calibration that shifted none of
  // its clocks): the stragglers analysis takes it instead of computing it again.
  const StragglerResult* stragglers = nullptr;
};

// What an analysis that reads files gets (Input::kFiles / kOwnInputs).
struct FilesInput {
  std::vector<std::string> files;  // discovered from `inputs` (kFiles)
  int threads = 1;
  ReadOptions ro;
  std::string output;  // --output as given ("" : stdout)
};

class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual std::string_view name() const = 0;  // the CLI subcommand
  virtual std::string_view help() const = 0;
  virtual Input input() const = 0;
  virtual std::string_view default_format() const { return "table"; }
  // What --format accepts, as --help shows it.
  virtual std::string_view formats() const { return "table | csv | json | markdown"; }
  // Declares its options; the targets must outlive the parse and the run.
  virtual void options(std::vector<OptionSpec>&) {}
  // After parsing, before reading: a usage error ("" : none).
  virtual std::string check(const std::string& /*format*/) { return {}; }
  // Input::kOps / kOpsDetail.
  virtual AnalysisResult run(const AnalysisInput&);
  // Input::kFiles / kOwnInputs.
  virtual AnalysisResult run_files(const FilesInput&);
  // Input::kOps whose findings are each one communicator's (Partition::kComm)
  // or one process's (kProcess): when the input is over the memory budget
  // (--memory-limit, partition.h), run_part() runs on batches of whole
  // communicators or processes, one after the other, and finish_parts() then
  // returns what run() on every op at once would have.
  virtual Partition partition() const { return Partition::kNone; }
  // Input::kOps that reads only the read result (hangs: the files' progress
  // state, bounded per comm rank): the CLI keeps no op, and its memory does
  // not grow with the records.
  virtual bool keeps_ops() const { return true; }
  // Whether its result has markers (findings for the report and the trace):
  // what the bounded trace runs, or says it left out.
  virtual bool has_markers() const { return true; }
  virtual void run_part(const AnalysisInput&) {}
  virtual AnalysisResult finish_parts(const ReadResult&);
  // Whether the report shows the result tables as a section of their own (the
  // built-in analyses have custom sections there).
  virtual bool tables_in_report() const { return true; }
  // Whether it reads the ops the reader hands out (Input::kOps, kOpsDetail).
  bool runs_on_ops() const { return input() == Input::kOps || input() == Input::kOpsDetail; }
  // Whether `report` and `trace` run it: it reads ops and they use its result
  // (its markers, or its tables as a report section of their own).
  bool in_views() const { return runs_on_ops() && (has_markers() || tables_in_report()); }
};

// Every registered analysis, new instances with default options, in CLI order.
std::vector<std::unique_ptr<Analysis>> make_analyses();

// Analyses added at run time, after the registered ones: the seam a test uses to
// show that an analysis reaches the report and the trace through the registry alone.
using AnalysisFactory = std::unique_ptr<Analysis> (*)();
std::vector<AnalysisFactory>& extra_analyses();

// The results of every analysis the report and the trace show (in_views), by
// default options: in registry order.
struct RanAnalysis {
  std::unique_ptr<Analysis> analysis;
  AnalysisResult result;
};
std::vector<RanAnalysis> run_op_analyses(const CollectSink& data, const ReadResult& res);

// Shared by the analyses that read: prints the problem on stderr and returns false
// when there is nothing to analyse (or notes what was lost, note_read, and
// returns true). `input` names which input the read was ("BASE", "baseline")
// where a subcommand reads more than one; its messages begin with it.
bool check_read(const ReadResult& res, std::string_view input = {});
// The stderr notes alone: damaged files and lines skipped, records the plugin
// dropped, lost uncounted or wrote to files not read, files not read to the end.
void note_read(const ReadResult& res, std::string_view input = {});
// What those two print, as text (without the "nccl-inspector: " each line
// gets), for a caller that prints elsewhere or later: the error when there is
// nothing to analyse ("" otherwise), and the notes, "note: ..." or
// "warning: ...", one per line.
std::string read_error(const ReadResult& res, std::string_view input = {});
std::vector<std::string> read_notes(const ReadResult& res, std::string_view input = {});
// Expands inputs; prints the error and returns false on a missing path / no files.
bool discover(const std::vector<std::string>& inputs, std::vector<std::string>& files);

}  // namespace ni::analysis
