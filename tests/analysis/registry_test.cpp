// The registry (analysis.h): an analysis reaches the report and the trace through
// its registration alone, and every registered analysis is a CLI subcommand.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "src/analysis/analysis.h"
#include "tests/analysis/fixtures.h"
#include "src/analysis/reader.h"
#include "src/analysis/report.h"
#include "src/analysis/trace.h"
#include "src/analysis/view.h"

namespace ana = ni::analysis;

namespace {

// An analysis no file registers: one table row and one marker per communicator,
// at the communicator's first op.
class ProbeAnalysis : public ana::Analysis {
 public:
  std::string_view name() const override { return "probe"; }
  std::string_view help() const override { return "probe of the registry"; }
  ana::Input input() const override { return ana::Input::kOps; }
  ana::AnalysisResult run(const ana::AnalysisInput& in) override {
    ana::AnalysisResult r;
    ana::Section& s = r.report.add("probe", "Probe table");
    s.table.columns = {"comm", "first_rank"};
    std::map<std::uint64_t, const ana::Op*> first;
    for (const auto& op : in.data.ops)
      if (op.has_start() &&
          (!first.count(op.comm_hash) || op.start_wall_ns < first[op.comm_hash]->start_wall_ns))
        first[op.comm_hash] = &op;
    for (const auto& [comm, op] : first) {
      s.table.rows.push_back({ana::hex_hash(comm), static_cast<int>(op->rank)});
      ana::Marker m;
      m.kind = "probe";
      m.where = "rank " + std::to_string(op->rank);
      m.evidence = "first op of its communicator";
      m.track = "probe track";
      m.comm = comm;
      m.rank = op->rank;
      m.start_ns = op->start_wall_ns;
      r.markers.push_back(std::move(m));
    }
    return r;
  }
};

std::unique_ptr<ana::Analysis> make_probe() {
  return std::make_unique<ProbeAnalysis>();
}

// The same analysis with nothing the report or the trace shows (no markers,
// no section of its own, as `iterations`): they must not run it.
int silent_runs = 0;
class SilentProbe : public ProbeAnalysis {
 public:
  std::string_view name() const override { return "silent"; }
  bool has_markers() const override { return false; }
  bool tables_in_report() const override { return false; }
  ana::AnalysisResult run(const ana::AnalysisInput& in) override {
    ++silent_runs;
    return ProbeAnalysis::run(in);
  }
};
std::unique_ptr<ana::Analysis> make_silent() {
  return std::make_unique<SilentProbe>();
}

struct Views {
  std::string report, trace;
};

Views views_of(const ana::ViewSink& v, const ana::ReadResult& res) {
  Views out;
  std::ostringstream r;
  ana::ReportOptions ro;
  ro.plotly_js = "/* Plotly */";
  ana::write_report(v, res, ro, r);
  out.report = r.str();
  std::ostringstream t;
  std::string err;
  ana::write_trace(v, res, ana::TraceOptions{}, t, err);
  EXPECT_EQ(err, "");
  out.trace = t.str();
  return out;
}

std::string cli_out(const std::string& args, int& rc) {
  std::string out;
  FILE* p = ::popen((std::string(NI_CLI) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = ::pclose(p);
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

}  // namespace

TEST(Registry, AnalysisReachesReportAndTraceThroughRegistration) {
  const auto dir = ni::test::temp_dir("registry_probe");
  ni::test::JobSpec js;
  js.iterations = 20;
  ni::test::write_job(dir, js);
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult res;
  auto v = ana::read_merged<ana::ViewSink>(ana::discover_files({dir}).files, ro, 2, res);
  ASSERT_GT(res.ops, 0u);

  const Views before = views_of(*v, res);
  EXPECT_EQ(before.report.find("\"id\":\"probe\""), std::string::npos);
  EXPECT_EQ(before.trace.find("finding,probe"), std::string::npos);

  ana::extra_analyses().push_back(&make_probe);
  const Views after = views_of(*v, res);
  ana::extra_analyses().pop_back();

  // The report: a section with its table, and its markers in the findings table.
  EXPECT_NE(after.report.find("\"id\":\"probe\",\"nav\":\"probe\""), std::string::npos);
  EXPECT_NE(after.report.find("\"title\":\"Probe table\""), std::string::npos);
  EXPECT_NE(after.report.find("[\"probe\",\"\",\"rank "), std::string::npos);
  // The trace: instants on a findings track of its own, named after it.
  EXPECT_NE(after.trace.find("\"cat\":\"finding,probe\""), std::string::npos);
  EXPECT_NE(after.trace.find("\"args\":{\"name\":\"probe track\"}"), std::string::npos);
  EXPECT_GT(after.trace.size(), before.trace.size());

  // An analysis whose result neither shows is not run for them: the page and
  // the trace are those without it.
  ana::extra_analyses().push_back(&make_silent);
  const Views silent = views_of(*v, res);
  ana::extra_analyses().pop_back();
  EXPECT_EQ(silent_runs, 0);
  EXPECT_TRUE(silent.report == before.report);
  EXPECT_TRUE(silent.trace == before.trace);
}

TEST(Registry, EveryAnalysisIsASubcommand) {
  int rc = -1;
  const std::string help = cli_out("--help", rc);
  EXPECT_EQ(rc, 0) << help;
  for (const auto& a : ana::make_analyses()) {
    const std::string name(a->name());
    EXPECT_NE(help.find(name), std::string::npos) << name;
    const std::string sub = cli_out(name + " --help", rc);
    EXPECT_EQ(rc, 0) << name << ": " << sub;
    EXPECT_NE(sub.find(std::string(a->help())), std::string::npos) << name << ": " << sub;
    std::vector<ana::OptionSpec> specs;
    a->options(specs);
    for (const auto& o : specs) EXPECT_NE(sub.find(o.names), std::string::npos) << name << " " << o.names;
    // --help offers exactly the formats the analysis takes (export: csv | jsonl).
    const std::string formats(a->formats());
    EXPECT_NE(sub.find("--format TEXT=" + std::string(a->default_format()) + "  "), std::string::npos) << name;
    EXPECT_NE(sub.find(formats), std::string::npos) << name << ": " << sub;
    std::set<std::string> offered;
    for (std::size_t at = 0; at <= formats.size();) {
      const std::size_t bar = std::min(formats.find(" | ", at), formats.size());
      offered.insert(formats.substr(at, bar - at));
      at = bar + 3;
    }
    for (const std::string f : {"table", "csv", "json", "markdown", "jsonl"}) {
      if (offered.count(f)) {
        EXPECT_EQ(a->check(f), "") << name << " offers " << f << " but rejects it";
      } else if (f != "json" && f != "jsonl") {  // (export reads json as jsonl)
        EXPECT_NE(a->check(f), "") << name << " takes " << f << " but does not offer it";
      }
    }
  }
}

// A first word that is no command is named as such, with the closest command,
// and exits as a usage error (CLI11 alone says "A subcommand is required").
TEST(Registry, UnknownCommandIsNamedWithTheClosestOne) {
  int rc = -1;
  std::string out = cli_out("frobnicate", rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  EXPECT_EQ(out.find("did you mean"), std::string::npos) << out;  // nothing is close
  EXPECT_NE(out.find("commands: summary,"), std::string::npos) << out;
  out = cli_out("sumary /nonexistent", rc);
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown command 'sumary' (did you mean 'summary'?)"), std::string::npos) << out;
  out = cli_out("strglers x", rc);
  EXPECT_NE(out.find("did you mean 'stragglers'?"), std::string::npos) << out;
  // Options before the command are still CLI11's.
  out = cli_out("--version", rc);
  EXPECT_EQ(rc, 0) << out;
}

// Records the plugin dropped (its stats records: the fixture job's rank 0
// counts 7 ring_full) are named by every subcommand that reads logs, not only
// `summary`: a verdict is on the records logged. Logs without drops get no note.
TEST(Registry, DroppedRecordsNamedByEverySubcommand) {
  const auto dir = ni::test::temp_dir("registry_drops");
  ni::test::JobSpec js;
  js.iterations = 20;
  js.marks = true;  // `iterations` needs them
  ni::test::write_job(dir, js);
  for (const std::string cmd : {"summary", "stragglers", "anomalies", "hangs", "iterations"}) {
    int rc = -1;
    const std::string out = cli_out(cmd + " " + dir, rc);
    EXPECT_EQ(rc, 0) << cmd << ": " << out;
    EXPECT_NE(out.find("note: the plugin dropped 7 record(s) (ring_full=7) before they reached these logs"),
              std::string::npos)
        << cmd << ": " << out;
  }
  // The same job with no drop counted: no note.
  const auto clean = ni::test::temp_dir("registry_no_drops");
  js.drops = false;
  ni::test::write_job(clean, js);
  int rc = -1;
  const std::string out = cli_out("anomalies " + clean, rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("dropped"), std::string::npos) << out;
  // Two inputs: each side's note names its side.
  const std::string cmp = cli_out("compare " + dir + " " + clean, rc);
  EXPECT_EQ(rc, 0) << cmp;
  EXPECT_NE(cmp.find("note: BASE: the plugin dropped 7 record(s) (ring_full=7)"), std::string::npos) << cmp;
  EXPECT_EQ(cmp.find("RUN: the plugin dropped"), std::string::npos) << cmp;
  const std::string rev = cli_out("compare " + clean + " " + dir, rc);
  EXPECT_NE(rev.find("note: RUN: the plugin dropped 7 record(s) (ring_full=7)"), std::string::npos) << rev;
  const auto html = ni::test::temp_dir("registry_drops_report") + "/r.html";
  const std::string rep = cli_out("report " + clean + " --baseline " + dir + " -o " + html, rc);
  EXPECT_EQ(rc, 0) << rep;
  EXPECT_NE(rep.find("note: baseline " + dir + ": the plugin dropped 7 record(s)"), std::string::npos) << rep;
}

// Records the plugin counts as written that no file read holds (a rotated
// file not given): named on stderr with the number the health section shows.
TEST(Registry, WrittenRecordsNotReadNamed) {
  const auto dir = ni::test::temp_dir("registry_unread");
  ni::test::JobSpec js;
  js.iterations = 20;
  js.drops = false;
  js.unread = 13;
  ni::test::write_job(dir, js);
  for (const std::string cmd : {"summary", "stragglers", "hangs"}) {
    int rc = -1;
    const std::string out = cli_out(cmd + " " + dir, rc);
    EXPECT_EQ(rc, 0) << cmd << ": " << out;
    EXPECT_NE(out.find("note: 13 record(s) the plugin counts as written are not in the files read (a rotated "
                       "file missing"),
              std::string::npos)
        << cmd << ": " << out;
    EXPECT_EQ(out.find("the plugin dropped"), std::string::npos) << cmd << ": " << out;
  }
  int rc = -1;
  const std::string csv = cli_out("summary -f csv --section health " + dir, rc);
  EXPECT_NE(csv.find("written records not read,13,"), std::string::npos) << csv;
  // With drops too: one note names both.
  const auto both = ni::test::temp_dir("registry_unread_drops");
  js.drops = true;
  ni::test::write_job(both, js);
  const std::string out = cli_out("anomalies " + both, rc);
  EXPECT_NE(out.find("note: the plugin dropped 7 record(s) (ring_full=7) before they reached these logs and "
                     "13 record(s) the plugin counts as written"),
            std::string::npos)
      << out;
}
