// nccl-inspector: analyzer CLI. Exit codes: 0 ok; 1 invalid input (validate) or
// an unexpected error; 2 usage error, missing input, empty input; 3 regression (compare).
//
// One subcommand per registered analysis (analysis.h: its options, how it reads,
// how it runs), then `trace` and `report`; main parses and runs the one chosen.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <type_traits>

#include "include/nccl_inspector/version.h"
#include "src/analysis/analysis.h"
#include "src/analysis/partition.h"
#include "src/analysis/plotly_bundle.h"
#include "src/analysis/reader.h"
#include "src/analysis/report.h"
#include "src/analysis/report_bounded.h"
#include "src/analysis/locate.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/tags.h"
#include "src/analysis/trace.h"
#include "src/analysis/trace_bounded.h"
#include "src/analysis/watch.h"
#include "src/core/edit_distance.h"

namespace ana = ni::analysis;

namespace {

using ana::kExitInvalid;
using ana::kExitUsage;

struct Common {
  std::vector<std::string> inputs;
  std::string format = "table";
  std::string output;
  int threads = 0;
  bool progress = false, no_progress = false;
  std::string host_map;
  std::string section;  // --section: the one table to write
  std::string memory_limit;  // --memory-limit ("" : default_memory_limit())
};

void add_common(CLI::App* app, Common& c, bool inputs = true, bool host_map = true) {
  if (inputs)
    app->add_option("inputs", c.inputs, "dump directories (searched recursively), log files, or - (stdin, a pipe)")
        ->required();
  if (inputs && host_map) {
    app->add_option("--host-map", c.host_map,
                    "a file of \"host rack\" lines: where late or slow ranks concentrate is also told per rack "
                    "(default: the rack in hostnames like r12n03, see docs/analysis.md)");
  }
  app->add_option("--format,-f", c.format, "table | csv | json | markdown")->capture_default_str();
  app->add_option("--output,-o", c.output, "write to this file instead of stdout (\"-\": stdout)");
  app->add_option("--threads,-j", c.threads, "reader threads (default: all cores)");
  app->add_flag("--progress", c.progress, "always show a progress bar on stderr");
  app->add_flag("--no-progress", c.no_progress, "never show a progress bar");
}

ana::ReadOptions read_opts(const Common& c) {
  ana::ReadOptions ro;
  ro.progress = c.no_progress ? 0 : c.progress ? 1 : -1;
  return ro;
}
int threads(const Common& c) {
  return c.threads > 0 ? c.threads : ana::default_threads();
}

// Racks of the hosts read (locate.h): from --host-map, else from the hostnames.
bool assign_racks(const Common& c, ana::ReadResult& res) {
  if (c.host_map.empty()) {
    ana::assign_racks(res, nullptr);
    return true;
  }
  ana::HostMap m;
  std::string err;
  if (!ana::load_host_map(c.host_map, m, err)) {
    std::cerr << "nccl-inspector: " << err << "\n";
    return false;
  }
  ana::assign_racks(res, &m);
  std::size_t unmapped = 0;
  for (const auto& f : res.files) unmapped += f.rack.empty();
  if (unmapped)
    std::cerr << "nccl-inspector: " << unmapped << " of " << res.files.size() << " logs come from hosts not in "
              << c.host_map << ": no rack for them\n";
  return true;
}

// Renders to -o FILE or stdout: every section, or the one --section names;
// csv one table only (several in one stream read as one column in pandas).
int emit(const ana::Report& all, const Common& c) {
  ana::Format f;
  if (!ana::parse_format(c.format, f)) {
    std::cerr << "nccl-inspector: unknown --format '" << c.format << "' (table, csv, json, markdown)\n";
    return kExitUsage;
  }
  std::string names;
  for (const auto& s : all.sections) names += (names.empty() ? "" : ", ") + s.name;
  ana::Report one;
  if (!c.section.empty()) {
    for (const auto& s : all.sections)
      if (s.name == c.section) one.sections.push_back(s);
    if (one.sections.empty()) {
      std::cerr << "nccl-inspector: no section '" << c.section << "' in this output (sections: " << names << ")\n";
      return kExitUsage;
    }
  } else if (f == ana::Format::kCsv && all.sections.size() > 1) {
    one.sections.push_back(all.sections.front());
    std::cerr << "nccl-inspector: csv holds one table: '" << all.sections.front().name << "' (others: "
              << names.substr(names.find(", ") + 2) << "; --section NAME)\n";
  }
  const ana::Report& r = one.sections.empty() ? all : one;
  if (c.output.empty() || c.output == "-") {
    ana::render(r, f, std::cout);
    return std::cout ? 0 : kExitInvalid;
  }
  std::ofstream out(c.output);
  if (!out) {
    std::cerr << "nccl-inspector: cannot write " << c.output << "\n";
    return kExitUsage;
  }
  ana::render(r, f, out);
  return out ? 0 : kExitInvalid;
}

// A subcommand: its CLI11 app (chosen when *app) and what runs then.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// ---- registered analyses

void add_spec(CLI::App* app, const ana::OptionSpec& s) {
  std::visit(
      [&](auto* target) {
        if constexpr (std::is_same_v<std::remove_pointer_t<decltype(target)>, bool>) {
          app->add_flag(s.names, *target, s.help);
        } else {
          CLI::Option* o = app->add_option(s.names, *target, s.help);
          if (s.required) o->required();
          if (s.show_default) o->capture_default_str();
        }
      },
      s.target);
}

// What is left after an analysis ran: its error, or its report and note.
int finish(const ana::AnalysisResult& r, const Common& c) {
  if (!r.error.empty()) {
    std::cerr << "nccl-inspector: " << r.error << "\n";
    return r.exit;
  }
  if (r.done) return r.exit;
  if (const int rc = emit(r.report, c)) return rc;
  if (!r.note.empty()) std::cerr << "nccl-inspector: " << r.note << "\n";
  return r.exit;
}

// Where spills go: $TMPDIR, else /tmp.
std::string spill_dir() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

// --memory-limit, or the machine's default (partition.h); false (said) when it is not a size.
bool memory_limit(const Common& c, std::uint64_t& limit) {
  limit = ana::default_memory_limit();
  if (c.memory_limit.empty() || ana::parse_memory_limit(c.memory_limit, limit)) return true;
  std::cerr << "nccl-inspector: --memory-limit '" << c.memory_limit << "': not a size (512M, 2G, bytes)\n";
  return false;
}

// The line that says a run went over the memory limit: how many ops were spilled where, in how many batches of
// what, and the batch the limit could not split.
void say_over_limit(std::uint64_t limit, std::uint64_t spilled, const std::string& dir, std::size_t batches,
                    std::string_view of_what, std::string_view then, std::size_t largest, std::size_t max_ops,
                    const char* unit) {
  std::cerr << "nccl-inspector: over the memory limit (" << ana::format_bytes(static_cast<double>(limit))
            << "): " << spilled << " ops spilled to " << dir << " and analysed in " << batches
            << (batches == 1 ? " batch" : " batches") << " of whole " << of_what << then;
  if (largest > max_ops)
    std::cerr << "; one " << unit << " of " << largest << " ops is larger than the limit allows (" << max_ops
              << "), analysed whole";
  std::cerr << "\n";
}

// Over the memory budget: the ops spilled by communicator or process to
// temporary files, then analysed in batches of whole ones (partition.h).
int run_in_parts(ana::Analysis& a, const Common& c, const ana::FilesInput& in, std::uint64_t limit) {
  ana::keep_freed_memory();
  const std::string dir = spill_dir();
  ana::ReadResult res;
  auto spill = ana::read_merged<ana::SpillSink>(in.files, in.ro, in.threads, res, dir, a.partition(),
                                                a.input() == ana::Input::kOpsDetail);
  auto failed = [&] {  // the spill could not be written or read back: no result from part of the ops
    if (spill->error().empty()) return false;
    std::cerr << "nccl-inspector: " << spill->error() << "\n";
    return true;
  };
  if (failed()) return kExitInvalid;
  if (!ana::check_read(res) || !assign_racks(c, res)) return kExitUsage;
  const std::size_t max_ops = ana::batch_ops(limit);
  const std::size_t batches =
      spill->for_each_batch(max_ops, [&](ana::CollectSink& part) { a.run_part(ana::AnalysisInput{part, res}); });
  if (failed()) return kExitInvalid;
  say_over_limit(limit, spill->ops(), dir, batches, ana::partition_unit(a.partition()), "", spill->largest_batch(),
                 max_ops, a.partition() == ana::Partition::kProcess ? "process" : "communicator");
  return finish(a.finish_parts(res), c);
}

// A registered analysis's subcommand: check its options, find the inputs, read what
// it needs (or let it read), run it, write what it returns.
int run_analysis(ana::Analysis& a, const Common& c) {
  if (const std::string err = a.check(c.format); !err.empty()) {
    std::cerr << "nccl-inspector: " << err << "\n";
    return kExitUsage;
  }
  ana::FilesInput in;
  in.threads = threads(c);
  in.ro = read_opts(c);
  in.output = c.output;
  if (a.input() != ana::Input::kOwnInputs && !ana::discover(c.inputs, in.files)) return kExitUsage;
  if (!a.runs_on_ops()) return finish(a.run_files(in), c);
  if (!a.keeps_ops()) {  // the read result alone: every op read and counted, none kept
    ana::ReadResult res;
    ana::read_merged<ana::DiscardSink>(in.files, in.ro, in.threads, res);
    if (!ana::check_read(res) || !assign_racks(c, res)) return kExitUsage;
    const ana::CollectSink none;
    return finish(a.run(ana::AnalysisInput{none, res}), c);
  }
  if (a.partition() != ana::Partition::kNone) {
    std::uint64_t limit = 0;
    if (!memory_limit(c, limit)) return kExitUsage;
    if (ana::estimate_ops(in.files) * ana::kBytesPerOpInMemory > limit) return run_in_parts(a, c, in, limit);
  }
  ana::ReadResult res;
  auto ops = ana::read_merged<ana::CollectSink>(in.files, in.ro, in.threads, res,
                                                a.input() == ana::Input::kOpsDetail);
  if (!ana::check_read(res) || !assign_racks(c, res)) return kExitUsage;
  return finish(a.run(ana::AnalysisInput{*ops, res}), c);
}

Command analysis_command(CLI::App& app, ana::Analysis& a) {
  auto c = std::make_shared<Common>();
  c->format = std::string(a.default_format());
  CLI::App* sub = app.add_subcommand(std::string(a.name()), std::string(a.help()));
  // The analyses that read ops get --host-map here; the others read files
  // themselves (summary has its own, for --group-by rack).
  add_common(sub, *c, a.input() != ana::Input::kOwnInputs,
             a.runs_on_ops());
  if (a.partition() != ana::Partition::kNone)
    sub->add_option("--memory-limit", c->memory_limit,
                    "memory budget (512M, 2G): larger inputs are spilled to $TMPDIR and analysed in batches of whole " +
                        std::string(ana::partition_unit(a.partition())) + " (default: a quarter of this machine's memory)");
  std::vector<ana::OptionSpec> specs;
  a.options(specs);
  for (const auto& s : specs) add_spec(sub, s);
  if (CLI::Option* f = sub->get_option_no_throw("--format")) f->description(std::string(a.formats()));
  // Tables are written by emit(); trace and report write their own files.
  sub->add_option("--section", c->section,
                  "write only this section (table) of the output, e.g. health; csv always holds one table: "
                  "the first section unless this names another");
  return {sub, [&a, c] { return run_analysis(a, *c); }};
}

// ---- trace

struct TraceArgs {
  Common c;
  ana::TraceOptions to;
  std::string tag_map_file;
  bool no_flows = false, no_counters = false, no_findings = false, no_calibration = false;
};

void print_trace_stats(const TraceArgs& t, const ana::TraceStats& ts);

// Every rank on one timeline (stragglers.h): said on stderr.
void say_calibration(const ana::ClockCalibration& cal) {
  double largest = 0;
  for (const auto& [k, ns] : cal.shift_ns) largest = std::max(largest, static_cast<double>(ns) / 1000.0);
  if (!cal.comms.empty())
    std::cerr << "nccl-inspector: clocks calibrated from the collectives' common end: " << cal.comms.size() << " of "
              << cal.comms_measured << " communicators shifted, by up to " << static_cast<long long>(largest + 0.5)
              << " us (--no-clock-calibration: times as logged)\n";
}

// Measured, applied to the ops, and said.
ana::ClockCalibration calibrate(std::vector<ana::Op>& ops, const ana::ReadResult& res) {
  ana::ClockCalibration cal = ana::calibrate_clocks(ana::find_stragglers(ops, res, {}));
  ana::apply_clock_calibration(cal, ops);
  say_calibration(cal);
  return cal;
}

// Over the memory budget: the trace holds only the ops it shows (trace_bounded.h).
int run_trace_bounded(TraceArgs& t, const std::vector<std::string>& files, std::uint64_t limit) {
  ana::keep_freed_memory();
  ana::BoundedTrace b;
  b.limit = limit;
  b.tmpdir = spill_dir();
  b.calibrate = !t.no_calibration;
  b.after_read = [&t](ana::ReadResult& res) { return ana::check_read(res) && assign_racks(t.c, res); };
  const ana::BoundedTraceResult r = ana::write_trace_bounded(files, read_opts(t.c), threads(t.c), t.to, b, t.c.output);
  using St = ana::BoundedTraceResult::Status;
  if (r.status == St::kRefused) return kExitUsage;
  if (r.status == St::kSpillFailed) {
    std::cerr << "nccl-inspector: " << r.error << "\n";
    return kExitInvalid;
  }
  if (b.calibrate) say_calibration(r.cal);
  say_over_limit(limit, r.spilled_ops, b.tmpdir, r.batches, "communicators",
                 " (clock calibration, detectors, the ops shown)", r.largest_batch,
                 r.max_batch_ops, "communicator");
  if (t.to.max_ops == 0)
    std::cerr << "nccl-inspector: --max-ops 0: every op the trace shows is held in memory, over the limit or not\n";
  for (const auto& name : r.left_out)
    std::cerr << "nccl-inspector: no " << name << " markers: it cannot run in parts (over the memory limit)\n";
  if (r.status == St::kTraceFailed) {
    std::cerr << "nccl-inspector: " << r.error << "\n";
    return r.error.rfind("write", 0) == 0 || r.error.rfind("cannot", 0) == 0 ? kExitInvalid : kExitUsage;
  }
  print_trace_stats(t, r.stats);
  return 0;
}

void print_trace_stats(const TraceArgs& t, const ana::TraceStats& ts) {
  std::cerr << "nccl-inspector: wrote " << t.c.output << ": " << ts.ops_written << " ops of " << ts.ops_input
            << " (" << ts.ops_selected << " selected";
  if (ts.sample > 1) {  // "every 2nd", "3rd", "11th", "21st" seq
    const std::uint64_t n = ts.sample;
    const char* suffix = n % 100 / 10 == 1 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
    std::cerr << ", every " << n << suffix << " seq";
  }
  std::cerr << "), " << ts.events << " events, " << ts.processes << " ranks, " << ts.threads << " tracks, "
            << ts.flows / 2 << " flows, " << ts.instants << " markers, " << ts.bytes / 1000 << " kB of JSON";
  if (!ts.channel_tracks) std::cerr << "; no channel sub-tracks: " << ts.channel_note;
  if (ts.sample > t.to.sample) std::cerr << "; sampled to stay under --max-ops " << t.to.max_ops;
  if (ts.ops_no_start) std::cerr << "; " << ts.ops_no_start << " ops without a start time skipped";
  std::cerr << "\n";
}

int run_trace(TraceArgs& t) {
  t.to.flows = !t.no_flows;
  t.to.counters = !t.no_counters;
  t.to.findings = !t.no_findings;
  if (!t.tag_map_file.empty()) {
    if (std::string err; !ana::load_tag_map(t.tag_map_file, t.to.tag_map, err)) {
      std::cerr << "nccl-inspector: " << err << "\n";
      return kExitUsage;
    }
  }
  std::vector<std::string> files;
  if (!ana::discover(t.c.inputs, files)) return kExitUsage;
  std::uint64_t limit = 0;
  if (!memory_limit(t.c, limit)) return kExitUsage;
  if (ana::estimate_ops(files) * ana::kTraceBytesPerOpInMemory > limit) return run_trace_bounded(t, files, limit);
  ana::ReadResult res;
  auto v = ana::read_merged<ana::ViewSink>(files, read_opts(t.c), threads(t.c), res);
  if (!ana::check_read(res) || !assign_racks(t.c, res)) return kExitUsage;
  ana::ClockCalibration cal;
  if (!t.no_calibration) {
    cal = calibrate(v->coll.ops, res);
    t.to.calibration = &cal;
  }
  ana::TraceStats ts;
  std::string err;
  if (!ana::write_trace_file(*v, res, t.to, t.c.output, ts, err)) {
    std::cerr << "nccl-inspector: " << err << "\n";
    return err.rfind("write", 0) == 0 || err.rfind("cannot", 0) == 0 ? kExitInvalid : kExitUsage;
  }
  print_trace_stats(t, ts);
  return 0;
}

Command trace_command(CLI::App& app) {
  auto t = std::make_shared<TraceArgs>();
  auto& to = t->to;
  auto* trc = app.add_subcommand(
      "trace", "Chrome/Perfetto trace (JSON, .gz): every rank on one clock, flows, findings");
  add_common(trc, t->c);
  trc->remove_option(trc->get_option("--format"));
  trc->get_option("--output")->required()->description("trace file: .json or .json.gz (\"-\": JSON on stdout)");
  trc->add_option("--from", to.from,
                  "start of the window: seconds from the first op (12.5) or ISO 8601 UTC time");
  trc->add_option("--to", to.to, "end of the window: seconds from the first op or ISO 8601 UTC time");
  trc->add_option("--comm", to.comms, "only this communicator (name or 0x hash; repeatable)");
  trc->add_option("--rank", to.ranks, "only this rank (as in the process names; repeatable)");
  trc->add_option("--op", to.ops, "only this NCCL function (AllReduce, Send, ...; repeatable)");
  trc->add_option("--sample", to.sample,
                  "keep ops whose seq is a multiple of N (all ranks keep the same instances)")
      ->capture_default_str();
  trc->add_option("--max-ops", to.max_ops, "sample more when more ops remain (0: no limit)")
      ->capture_default_str();
  trc->add_option("--channel-ops-max", to.channel_ops_max,
                  "per-channel sub-tracks only up to this many ops (0: never)")
      ->capture_default_str();
  trc->add_option("--tag-map", t->tag_map_file,
                  "file of 'tag name' lines naming the user tags in slice names (over the logs' tag records)");
  trc->add_flag("--no-flows", t->no_flows, "no flow arrows between ranks");
  trc->add_flag("--no-clock-calibration", t->no_calibration,
                "place ops at their logged times (default: each rank shifted by its clock offset measured from "
                "the collectives' common end)");
  trc->add_flag("--no-counters", t->no_counters, "no network/HCA counter tracks");
  trc->add_option("--memory-limit", t->c.memory_limit,
                  "memory budget (512M, 2G): larger inputs are spilled to $TMPDIR and read back in batches, "
                  "the trace holding only the ops it shows (default: a quarter of this machine's memory)");
  trc->add_flag("--no-findings", t->no_findings,
                "do not run the detectors (no straggler/change point/outlier markers)");
  return {trc, [t] { return run_trace(*t); }};
}

// ---- report

struct ReportArgs {
  Common c;
  ana::ReportOptions rpo;
  std::string baseline_dir, plotly_file, tag_map_file;
  std::string plotly_text;  // a --plotly-js bundle, which rpo.plotly_js views
  bool no_calibration = false;
};

// The charting library first: without it there is no page to write. false: printed why.
bool load_plotly(ReportArgs& r) {
  ana::PlotlyBundle plotly = ana::embedded_plotly();
  if (!r.plotly_file.empty()) {
    std::error_code fs_ec;
    if (std::filesystem::is_regular_file(r.plotly_file, fs_ec)) {
      std::ifstream in(r.plotly_file, std::ios::binary);
      r.plotly_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (r.plotly_text.find("Plotly") == std::string::npos) {
      std::cerr << "nccl-inspector: --plotly-js " << r.plotly_file
                << ": cannot read it, or it is not a Plotly.js bundle\n";
      return false;
    }
    plotly = {r.plotly_text, r.plotly_file};
  }
  if (plotly.js.empty()) {
    std::cerr
        << "nccl-inspector: this build of nccl-inspector has no Plotly.js, which the report embeds to draw "
           "its charts\n(web/node_modules was not installed when it was built). Either:\n"
           "  npm ci --prefix web        (in the source tree; needs Node.js and npm), then rebuild, or\n"
           "  nccl-inspector report ... --plotly-js FILE   with FILE a plotly.js 4.x bundle, e.g.\n"
           "      plotly-cartesian.min.js from the npm package plotly.js-cartesian-dist-min\n";
    return false;
  }
  r.rpo.plotly_js = plotly.js;
  r.rpo.plotly_label = plotly.label;
  return true;
}

// The page to --output ("-": stdout), then the line that says what it holds.
int write_report_out(const ReportArgs& r, const std::function<ana::ReportStats(std::ostream&)>& write) {
  const bool to_stdout = r.c.output == "-";
  std::ofstream file;
  if (!to_stdout) file.open(r.c.output, std::ios::binary);
  std::ostream& out = to_stdout ? std::cout : file;
  if (!out) {
    std::cerr << "nccl-inspector: cannot write " << r.c.output << "\n";
    return kExitUsage;
  }
  const ana::ReportStats rs = write(out);
  if (to_stdout) {
    out.flush();
  } else {
    file.close();
  }
  if (!out) {
    std::cerr << "nccl-inspector: write error on " << r.c.output << "\n";
    return kExitInvalid;
  }
  std::cerr << "nccl-inspector: wrote " << r.c.output << ": " << rs.plots << " charts, " << rs.tables
            << " tables, " << rs.bytes / 1000 << " kB (" << rs.data_bytes / 1000 << " kB of data, "
            << r.rpo.plotly_js.size() / 1000 << " kB of " << r.rpo.plotly_label << ")\n";
  return 0;
}

// Over the memory budget: the report's folds over spilled ops (report_bounded.h).
int run_report_bounded(ReportArgs& r, const std::vector<std::string>& files, std::uint64_t limit) {
  ana::keep_freed_memory();
  ana::BoundedReport b;
  b.limit = limit;
  b.tmpdir = spill_dir();
  b.calibrate = !r.no_calibration;
  b.after_read = [&r](ana::ReadResult& res) { return ana::check_read(res) && assign_racks(r.c, res); };
  // The page is made before --output is opened: a failed spill leaves no file behind.
  std::ostringstream page;
  const ana::BoundedReportResult br = ana::write_report_bounded(files, read_opts(r.c), threads(r.c), r.rpo, b, page);
  using St = ana::BoundedReportResult::Status;
  if (br.status == St::kRefused) return kExitUsage;
  if (br.status == St::kSpillFailed) {
    std::cerr << "nccl-inspector: " << br.error << "\n";
    return kExitInvalid;
  }
  if (b.calibrate) say_calibration(br.cal);
  say_over_limit(limit, br.spilled_ops, b.tmpdir, br.comm_batches, "communicators",
                 " and " + std::to_string(br.process_batches) + " of whole processes", br.largest_batch,
                 br.max_batch_ops, "communicator or process");
  for (const auto& name : br.left_out)
    std::cerr << "nccl-inspector: no " << name << " section or findings: it cannot run in parts (over the memory limit)\n";
  return write_report_out(r, [&](std::ostream& out) {
    const std::string text = std::move(page).str();
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    return br.stats;
  });
}

int run_report(ReportArgs& r) {
  if (!load_plotly(r)) return kExitUsage;
  if (!r.tag_map_file.empty()) {
    if (std::string err; !ana::load_tag_map(r.tag_map_file, r.rpo.tag_map, err)) {
      std::cerr << "nccl-inspector: " << err << "\n";
      return kExitUsage;
    }
  }
  std::vector<std::string> files;
  if (!ana::discover(r.c.inputs, files)) return kExitUsage;
  std::uint64_t limit = 0;
  if (!memory_limit(r.c, limit)) return kExitUsage;
  // The baseline's busbw vs size curves, read without keeping its ops.
  ana::ReadResult bres;
  std::unique_ptr<ana::SizeCurveSink> base;
  if (!r.baseline_dir.empty()) {
    std::vector<std::string> bf;
    if (!ana::discover({r.baseline_dir}, bf)) return kExitUsage;
    base = ana::read_merged<ana::SizeCurveSink>(bf, read_opts(r.c), threads(r.c), bres);
    if (!ana::check_read(bres, "baseline " + r.baseline_dir)) return kExitUsage;
    r.rpo.baseline = &base->curves;
    r.rpo.baseline_res = &bres;
  }
  if (ana::estimate_ops(files) * ana::kReportBytesPerOpInMemory > limit) return run_report_bounded(r, files, limit);
  ana::ReadResult res;
  auto v = ana::read_merged<ana::ViewSink>(files, read_opts(r.c), threads(r.c), res);
  if (!ana::check_read(res) || !assign_racks(r.c, res)) return kExitUsage;
  ana::ClockCalibration cal;
  if (!r.no_calibration) {
    cal = calibrate(v->coll.ops, res);
    r.rpo.calibration = &cal;
  }
  return write_report_out(r, [&](std::ostream& out) { return ana::write_report(*v, res, r.rpo, out); });
}

Command report_command(CLI::App& app) {
  auto r = std::make_shared<ReportArgs>();
  auto* rep = app.add_subcommand(
      "report", "self-contained offline HTML report: busbw, latency, stragglers, balance, gaps, health");
  add_common(rep, r->c);
  rep->remove_option(rep->get_option("--format"));
  rep->get_option("--output")->required()->description("the HTML file to write (\"-\": stdout)");
  rep->add_option("--baseline", r->baseline_dir, "a baseline dump dir: busbw vs size drawn against it");
  rep->add_flag("--no-clock-calibration", r->no_calibration,
                "charts at the logged times (default: each rank shifted by its clock offset from the collectives' common end)");
  rep->add_option("--title", r->rpo.title, "page title")->capture_default_str();
  rep->add_option("--memory-limit", r->c.memory_limit,
                  "memory budget (512M, 2G): larger inputs are spilled to $TMPDIR and folded in batches of whole "
                  "communicators and processes (default: a quarter of this machine's memory)");
  rep->add_option("--tag-map", r->tag_map_file,
                  "file of 'tag name' lines naming the user tags in the Tags section (over the logs' tag records)");
  rep->add_option("--plotly-js", r->plotly_file,
                  "inline this Plotly.js bundle instead of the one built in (plotly.js-cartesian-dist-min or "
                  "plotly.js-dist-min, 4.x)");
  return {rep, [r] { return run_report(*r); }};
}

// ---- watch

volatile sig_atomic_t g_stop_watch = 0;
extern "C" void on_watch_signal(int) { g_stop_watch = 1; }

struct WatchArgs {
  ana::WatchOptions wo;
  std::string host_map;
  double interval_s = 2;
  int count = 0;
  bool no_color = false;
};

int run_watch(WatchArgs& w) {
  ana::HostMap m;
  if (!w.host_map.empty()) {
    std::string err;
    if (!ana::load_host_map(w.host_map, m, err)) {
      std::cerr << "nccl-inspector: " << err << "\n";
      return kExitUsage;
    }
    w.wo.host_map = &m;
  }
  for (const std::string& in : w.wo.inputs) {
    if (in == "-" || in == "/dev/stdin") {
      std::cerr << "nccl-inspector: watch follows files and directories; stdin cannot be followed\n";
      return kExitUsage;
    }
  }
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  w.wo.color = tty && !w.no_color && std::getenv("NO_COLOR") == nullptr;
  struct sigaction sa {};
  sa.sa_handler = on_watch_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  w.wo.stop = &g_stop_watch;
  w.wo.poll_budget_s = w.interval_s;  // a reader slower than the job still redraws every interval
  ana::Watch watch(w.wo);
  using clock = std::chrono::steady_clock;
  const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(w.interval_s));
  auto next = clock::now();
  for (int shown = 0; !g_stop_watch && (w.count <= 0 || shown < w.count); ++shown) {
    watch.poll(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count());
    const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
    // A terminal is redrawn in place (home, clear); anything else gets one screen after another.
    std::cout << (tty ? "\x1b[H\x1b[2J" : shown ? "\n" : "") << watch.render(wall) << std::flush;
    next = std::max(next + period, clock::now());  // a slow poll delays the next screen, never bunches them
    // Sleep in short steps: Ctrl-C ends the wait at once.
    while (!g_stop_watch && clock::now() < next && (w.count <= 0 || shown + 1 < w.count))
      std::this_thread::sleep_for(std::min<clock::duration>(next - clock::now(), std::chrono::milliseconds(100)));
  }
  if (tty) std::cout << "\n";
  std::cout << std::flush;
  return 0;
}

Command watch_command(CLI::App& app) {
  auto w = std::make_shared<WatchArgs>();
  auto* sub = app.add_subcommand(
      "watch", "follow a running job's logs and redraw its health, op groups, late ranks and findings");
  sub->add_option("inputs", w->wo.inputs, "dump directories (new files are picked up) or log files")->required();
  sub->add_option("--interval", w->interval_s, "seconds between screens")->capture_default_str()->check(
      CLI::Range(0.1, 3600.0));
  sub->add_option("--window", w->wo.window_s, "the op-group and late-rank views cover ops read this many seconds back")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  sub->add_option("--top", w->wo.top, "rows of the op-group table")->capture_default_str();
  sub->add_option("--count", w->count, "exit after this many screens (default: until Ctrl-C)");
  sub->add_option("--host-map", w->host_map, "a file of \"host rack\" lines (as for stragglers)");
  sub->add_flag("--no-color", w->no_color, "no bold or colour (also when NO_COLOR is set or stdout is no terminal)");
  return {sub, [w] { return run_watch(*w); }};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "nccl-inspector: analyze NCCL profiler logs (nccl-inspector *.jsonl.gz and upstream Inspector v4.0 "
      "*.log)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nccl-inspector " + std::string(ni::kVersion));
  const auto analyses = ana::make_analyses();
  std::vector<Command> commands;
  for (const auto& a : analyses) commands.push_back(analysis_command(app, *a));
  commands.push_back(trace_command(app));
  commands.push_back(report_command(app));
  commands.push_back(watch_command(app));

  // A first word that is no command and no option: say so (CLI11 would say
  // only that a subcommand is required), with the closest command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::string names, closest;
    std::size_t best = std::string::npos;
    bool known = false;
    for (const CLI::App* s : app.get_subcommands({})) {
      const std::string& n = s->get_name();
      known = known || n == word;
      names += (names.empty() ? "" : ", ") + n;
      const std::size_t d = ni::edit_distance(word, n);
      if (d < best) best = d, closest = n;
    }
    if (!known) {
      std::cerr << "nccl-inspector: unknown command '" << word << "'";
      if (best <= std::max<std::size_t>(2, word.size() / 3)) std::cerr << " (did you mean '" << closest << "'?)";
      std::cerr << "\ncommands: " << names << "\nRun with --help for more information.\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  try {
    for (const auto& c : commands)
      if (*c.app) return c.run();
  } catch (const std::exception& e) {
    std::cerr << "nccl-inspector: error: " << e.what() << "\n";
    return kExitInvalid;
  }
  return 0;
}
