// nccl-inspector: analyzer CLI. Exit codes: 0 ok; 1 invalid input (validate) or
// an unexpected error; 2 usage error, missing input, empty input; 3 regression (compare).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <iostream>
#include <memory>

#include "anomalies.h"
#include "compare.h"
#include "export.h"
#include "plotly_bundle.h"
#include "reader.h"
#include "report.h"
#include "stragglers.h"
#include "summary.h"
#include "trace.h"
#include "validate.h"

namespace ana = nccl_inspector::analysis;

namespace {

constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRegression = 3;

struct Common {
  std::vector<std::string> inputs;
  std::string format = "table";
  std::string output;
  int threads = 0;
  bool progress = false, no_progress = false;
};

void add_common(CLI::App* app, Common& c, bool inputs = true) {
  if (inputs) app->add_option("inputs", c.inputs, "dump directories (searched recursively) or log files")->required();
  app->add_option("--format,-f", c.format, "table | csv | json | markdown")->capture_default_str();
  app->add_option("--output,-o", c.output, "write to this file instead of stdout");
  app->add_option("--threads,-j", c.threads, "reader threads (default: all cores)");
  app->add_flag("--progress", c.progress, "always show a progress bar on stderr");
  app->add_flag("--no-progress", c.no_progress, "never show a progress bar");
}

ana::ReadOptions read_opts(const Common& c) {
  ana::ReadOptions ro;
  ro.progress = c.no_progress ? 0 : c.progress ? 1 : -1;
  return ro;
}
int threads(const Common& c) { return c.threads > 0 ? c.threads : ana::default_threads(); }

// Expands inputs; prints the error and returns false on a missing path / no files.
bool discover(const std::vector<std::string>& inputs, std::vector<std::string>& files) {
  ana::Discovery d = ana::discover_files(inputs);
  if (!d.error.empty()) {
    std::cerr << "nccl-inspector: " << d.error << "\n";
    return false;
  }
  files = std::move(d.files);
  return true;
}

bool check_read(const ana::ReadResult& res) {
  if (res.ops == 0) {
    std::cerr << "nccl-inspector: no op records in " << res.files.size() << " file(s)";
    std::size_t unknown = 0;
    for (const auto& f : res.files) unknown += f.format == ana::FileFormat::kUnknown;
    if (unknown == res.files.size()) std::cerr << " (unknown format: not nccl-inspector or upstream Inspector v4.0 logs)";
    std::cerr << "; try: nccl-inspector validate\n";
    return false;
  }
  if (res.truncated_files || res.corrupt_files || res.bad_lines)
    std::cerr << "nccl-inspector: note: " << res.truncated_files << " truncated file(s), " << res.corrupt_files
              << " corrupt file(s), " << res.bad_lines << " bad line(s) skipped (see the health section)\n";
  return true;
}

// Renders to -o FILE or stdout.
int emit(const ana::Report& r, const Common& c) {
  ana::Format f;
  if (!ana::parse_format(c.format, f)) {
    std::cerr << "nccl-inspector: unknown --format '" << c.format << "' (table, csv, json, markdown)\n";
    return kExitUsage;
  }
  if (c.output.empty()) {
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nccl-inspector: analyze NCCL profiler logs (nccl-inspector *.jsonl.gz and upstream Inspector v4.0 *.log)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "nccl-inspector 0.1.0");

  // ---- summary
  Common sc;
  ana::SummaryOptions so;
  std::string group_by = "comm", host_map;
  std::vector<std::string> peaks;
  bool no_advice = false;
  auto* sum = app.add_subcommand("summary", "percentiles per communicator/op/algo/proto/size, health, advice");
  add_common(sum, sc);
  sum->add_flag("--per-rank", so.per_rank, "one row per rank");
  sum->add_option("--group-by", group_by, "comm | host | rack (with --host-map)")->capture_default_str();
  sum->add_option("--host-map", host_map, "file of 'host rack' lines for --group-by rack");
  sum->add_option("--peak-busbw", peaks, "peak busbw in GB/s for utilisation: 300, AllReduce=300, network=25 or intra_node=300 (repeatable)");
  sum->add_flag("--no-advice", no_advice, "skip the algorithm/protocol advice");

  // ---- validate
  Common vc;
  bool strict = false;
  auto* val = app.add_subcommand("validate", "check files against the schema; exit 1 on invalid input");
  add_common(val, vc);
  val->add_flag("--strict", strict, "also fail on truncated files");

  // ---- export
  Common ec;
  ec.format = "csv";
  auto* exp = app.add_subcommand("export", "flat per-op table (csv or jsonl) for pandas/Spark/DuckDB");
  add_common(exp, ec);

  // ---- stragglers
  Common stc;
  ana::StragglerOptions sto;
  auto* str = app.add_subcommand("stragglers", "cross-rank alignment: late ranks/hosts and start skew");
  add_common(str, stc);
  str->add_option("--threshold-us", sto.threshold_us, "start skew that counts as late (NPKit: 5 us)")->capture_default_str();
  str->add_option("--min-last-fraction", sto.min_last_fraction, "flag a rank last in at least this fraction of its ops")->capture_default_str();

  // ---- anomalies
  Common ac;
  ana::AnomalyOptions ao;
  auto* ano = app.add_subcommand("anomalies", "outliers, change points, bimodality, channel and HCA imbalance");
  add_common(ano, ac);
  ano->add_option("--z", ao.z_threshold, "robust z-score threshold for outliers")->capture_default_str();
  ano->add_option("--top", ao.top, "worst outliers to list")->capture_default_str();
  ano->add_option("--shift", ao.shift_ratio, "change point: rolling median / baseline ratio")->capture_default_str();
  ano->add_option("--min-ch-balance", ao.min_ch_balance, "channel imbalance: median ch_balance below this")->capture_default_str();

  // ---- compare
  Common cc;
  ana::CompareOptions co;
  std::string base, run;
  auto* cmp = app.add_subcommand("compare", "BASE vs RUN per (op, size, nranks, algo/proto); exit 3 on a regression");
  add_common(cmp, cc, false);
  cmp->add_option("base", base, "baseline dump dir or file")->required();
  cmp->add_option("run", run, "new dump dir or file")->required();
  cmp->add_option("--threshold", co.threshold_pct, "regression threshold in percent of busbw/latency")->capture_default_str();

  // ---- iterations
  Common ic;
  auto* itr = app.add_subcommand("iterations", "per-iteration stats between ncclInspectorMark records");
  add_common(itr, ic);

  // ---- trace
  Common tc;
  ana::TraceOptions to;
  bool no_flows = false, no_counters = false, no_findings = false;
  auto* trc = app.add_subcommand("trace", "Chrome/Perfetto trace (JSON, .gz): every rank on one clock, flows, findings");
  add_common(trc, tc);
  trc->remove_option(trc->get_option("--format"));
  trc->get_option("--output")->required()->description("trace file: .json or .json.gz");
  trc->add_option("--from", to.from, "start of the window: seconds from the first op (12.5) or ISO 8601 UTC time");
  trc->add_option("--to", to.to, "end of the window: seconds from the first op or ISO 8601 UTC time");
  trc->add_option("--comm", to.comms, "only this communicator (name or 0x hash; repeatable)");
  trc->add_option("--rank", to.ranks, "only this rank (as in the process names; repeatable)");
  trc->add_option("--op", to.ops, "only this NCCL function (AllReduce, Send, ...; repeatable)");
  trc->add_option("--sample", to.sample, "keep ops whose seq is a multiple of N (all ranks keep the same instances)")->capture_default_str();
  trc->add_option("--max-ops", to.max_ops, "sample more when more ops remain (0: no limit)")->capture_default_str();
  trc->add_option("--channel-ops-max", to.channel_ops_max, "per-channel sub-tracks only up to this many ops (0: never)")->capture_default_str();
  trc->add_flag("--no-flows", no_flows, "no flow arrows between ranks");
  trc->add_flag("--no-counters", no_counters, "no network/HCA counter tracks");
  trc->add_flag("--no-findings", no_findings, "do not run the detectors (no straggler/change point/outlier markers)");

  // ---- report
  Common rpc;
  ana::ReportOptions rpo;
  std::string baseline_dir;
  auto* rep = app.add_subcommand("report", "self-contained offline HTML report: busbw, latency, stragglers, balance, gaps, health");
  add_common(rep, rpc);
  rep->remove_option(rep->get_option("--format"));
  rep->get_option("--output")->required()->description("the HTML file to write");
  rep->add_option("--baseline", baseline_dir, "a baseline dump dir: busbw vs size drawn against it");
  rep->add_option("--title", rpo.title, "page title")->capture_default_str();
  std::string plotly_file;
  rep->add_option("--plotly-js", plotly_file,
                  "inline this Plotly.js bundle instead of the one built in (plotly.js-cartesian-dist-min or "
                  "plotly.js-dist-min, 4.x)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  try {
    std::vector<std::string> files;
    if (*sum) {
      if (group_by == "comm") so.group_by = ana::GroupBy::kComm;
      else if (group_by == "host") so.group_by = ana::GroupBy::kHost;
      else if (group_by == "rack") so.group_by = ana::GroupBy::kRack;
      else {
        std::cerr << "nccl-inspector: --group-by must be comm, host or rack\n";
        return kExitUsage;
      }
      if (so.group_by == ana::GroupBy::kRack && host_map.empty()) {
        std::cerr << "nccl-inspector: --group-by rack needs --host-map FILE\n";
        return kExitUsage;
      }
      std::string err;
      if (!host_map.empty() && !ana::load_host_map(host_map, so.host_map, err)) {
        std::cerr << "nccl-inspector: " << err << "\n";
        return kExitUsage;
      }
      for (const auto& p : peaks)
        if (!ana::parse_peak(p, so.peak_busbw)) {
          std::cerr << "nccl-inspector: bad --peak-busbw '" << p << "' (expected 300 or AllReduce=300)\n";
          return kExitUsage;
        }
      so.advice = !no_advice;
      if (!discover(sc.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      auto s = ana::read_merged<ana::SummarySink>(files, read_opts(sc), threads(sc), res, so);
      if (!check_read(res)) return kExitUsage;
      ana::Report r;
      ana::add_summary_sections(r, *s, res, so);
      ana::add_health_section(r, res, &s->health);
      return emit(r, sc);
    }
    if (*val) {
      if (!discover(vc.inputs, files)) return kExitUsage;
      ana::ValidateResult v = ana::validate_files(files, threads(vc), read_opts(vc), strict);
      const int rc = emit(v.report, vc);
      if (rc) return rc;
      std::cerr << "nccl-inspector: " << (v.valid ? "valid" : "INVALID") << (v.truncated ? " (with truncated files)" : "") << "\n";
      return v.valid ? 0 : kExitInvalid;
    }
    if (*exp) {
      ana::ExportFormat f;
      if (ec.format == "csv") f = ana::ExportFormat::kCsv;
      else if (ec.format == "jsonl" || ec.format == "json") f = ana::ExportFormat::kJsonl;
      else {
        std::cerr << "nccl-inspector: export --format must be csv or jsonl\n";
        return kExitUsage;
      }
      if (!discover(ec.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      if (ec.output.empty()) {
        std::ios::sync_with_stdio(false);
        res = ana::export_ops(files, f, threads(ec), read_opts(ec), std::cout);
      } else {
        std::ofstream out(ec.output, std::ios::binary);
        if (!out) {
          std::cerr << "nccl-inspector: cannot write " << ec.output << "\n";
          return kExitUsage;
        }
        res = ana::export_ops(files, f, threads(ec), read_opts(ec), out);
      }
      return check_read(res) ? 0 : kExitUsage;
    }
    if (*str) {
      if (!discover(stc.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      auto c = ana::read_merged<ana::CollectSink>(files, read_opts(stc), threads(stc), res, false);
      if (!check_read(res)) return kExitUsage;
      ana::Report r = ana::stragglers_report(ana::find_stragglers(c->ops, res, sto), res, sto);
      return emit(r, stc);
    }
    if (*ano) {
      if (!discover(ac.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      auto c = ana::read_merged<ana::CollectSink>(files, read_opts(ac), threads(ac), res, true);
      if (!check_read(res)) return kExitUsage;
      ana::Report r = ana::anomalies_report(ana::find_anomalies(*c, res, ao));
      return emit(r, ac);
    }
    if (*itr) {
      if (!discover(ic.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      auto c = ana::read_merged<ana::CollectSink>(files, read_opts(ic), threads(ic), res, false);
      if (!check_read(res)) return kExitUsage;
      ana::Report r;
      ana::add_iteration_section(r, c->ops, res);
      if (r.sections.empty()) {
        std::cerr << "nccl-inspector: no mark records in the input (call ncclInspectorMark each iteration)\n";
        return kExitUsage;
      }
      return emit(r, ic);
    }
    if (*trc) {
      to.flows = !no_flows;
      to.counters = !no_counters;
      to.findings = !no_findings;
      if (!discover(tc.inputs, files)) return kExitUsage;
      ana::ReadResult res;
      auto v = ana::read_merged<ana::ViewSink>(files, read_opts(tc), threads(tc), res);
      if (!check_read(res)) return kExitUsage;
      ana::TraceStats ts;
      std::string err;
      if (!ana::write_trace_file(*v, res, to, tc.output, ts, err)) {
        std::cerr << "nccl-inspector: " << err << "\n";
        return err.rfind("write", 0) == 0 || err.rfind("cannot", 0) == 0 ? kExitInvalid : kExitUsage;
      }
      std::cerr << "nccl-inspector: wrote " << tc.output << ": " << ts.ops_written << " ops of " << ts.ops_input
                << " (" << ts.ops_selected << " selected";
      if (ts.sample > 1) std::cerr << ", every " << ts.sample << "th seq";
      std::cerr << "), " << ts.events << " events, " << ts.processes << " ranks, " << ts.threads << " tracks, "
                << ts.flows / 2 << " flows, " << ts.instants << " markers, " << ts.bytes / 1000 << " kB of JSON";
      if (!ts.channel_tracks) std::cerr << "; no channel sub-tracks: " << ts.channel_note;
      if (ts.sample > to.sample) std::cerr << "; sampled to stay under --max-ops " << to.max_ops;
      if (ts.ops_no_start) std::cerr << "; " << ts.ops_no_start << " ops without a start time skipped";
      std::cerr << "\n";
      return 0;
    }
    if (*rep) {
      // The charting library first: without it there is no page to write.
      ana::PlotlyBundle plotly = ana::embedded_plotly();
      std::string plotly_text;
      if (!plotly_file.empty()) {
        std::error_code fs_ec;
        if (std::filesystem::is_regular_file(plotly_file, fs_ec)) {
          std::ifstream in(plotly_file, std::ios::binary);
          plotly_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        }
        if (plotly_text.find("Plotly") == std::string::npos) {
          std::cerr << "nccl-inspector: --plotly-js " << plotly_file
                    << ": cannot read it, or it is not a Plotly.js bundle\n";
          return kExitUsage;
        }
        plotly = {plotly_text, plotly_file};
      }
      if (plotly.js.empty()) {
        std::cerr << "nccl-inspector: this build of nccl-inspector has no Plotly.js, which the report embeds to draw "
                     "its charts\n(web/node_modules was not installed when it was built). Either:\n"
                     "  npm ci --prefix web        (in the source tree; needs Node.js and npm), then rebuild, or\n"
                     "  nccl-inspector report ... --plotly-js FILE   with FILE a plotly.js 4.x bundle, e.g.\n"
                     "      plotly-cartesian.min.js from the npm package plotly.js-cartesian-dist-min\n";
        return kExitUsage;
      }
      rpo.plotly_js = plotly.js;
      rpo.plotly_label = plotly.label;
      if (!discover(rpc.inputs, files)) return kExitUsage;
      ana::ReadResult res, bres;
      auto v = ana::read_merged<ana::ViewSink>(files, read_opts(rpc), threads(rpc), res);
      if (!check_read(res)) return kExitUsage;
      std::unique_ptr<ana::ViewSink> b;
      if (!baseline_dir.empty()) {
        std::vector<std::string> bf;
        if (!discover({baseline_dir}, bf)) return kExitUsage;
        b = ana::read_merged<ana::ViewSink>(bf, read_opts(rpc), threads(rpc), bres);
        if (!check_read(bres)) return kExitUsage;
      }
      std::ofstream out(rpc.output, std::ios::binary);
      if (!out) {
        std::cerr << "nccl-inspector: cannot write " << rpc.output << "\n";
        return kExitUsage;
      }
      const ana::ReportStats rs = ana::write_report(*v, res, b.get(), b ? &bres : nullptr, rpo, out);
      out.close();
      if (!out) {
        std::cerr << "nccl-inspector: write error on " << rpc.output << "\n";
        return kExitInvalid;
      }
      std::cerr << "nccl-inspector: wrote " << rpc.output << ": " << rs.plots << " charts, " << rs.tables << " tables, "
                << rs.bytes / 1000 << " kB (" << rs.data_bytes / 1000 << " kB of data, " << rpo.plotly_js.size() / 1000
                << " kB of " << rpo.plotly_label << ")\n";
      return 0;
    }
    if (*cmp) {
      std::vector<std::string> bf, rf;
      if (!discover({base}, bf) || !discover({run}, rf)) return kExitUsage;
      ana::CompareResult cr = ana::compare_runs(bf, rf, threads(cc), read_opts(cc), co);
      if (!cr.error.empty()) {
        std::cerr << "nccl-inspector: " << cr.error << "\n";
        return kExitUsage;
      }
      const int rc = emit(cr.report, cc);
      if (rc) return rc;
      if (cr.regressions) {
        std::cerr << "nccl-inspector: " << cr.regressions << " regression(s) beyond " << co.threshold_pct << "%\n";
        return kExitRegression;
      }
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "nccl-inspector: error: " << e.what() << "\n";
    return kExitInvalid;
  }
  return 0;
}
