// Each detector finds its planted fault, and nothing on the clean job.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "src/analysis/anomalies.h"
#include "src/analysis/compare.h"
#include "tests/analysis/fixtures.h"
#include "src/analysis/iterations.h"
#include "src/analysis/locate.h"
#include "src/analysis/reader.h"
#include "src/analysis/slow_hca.h"
#include "src/analysis/stragglers.h"
#include "src/analysis/summary.h"

namespace ana = ni::analysis;
using ni::test::Fault;
using ni::test::JobSpec;

namespace {

struct Loaded {
  ana::ReadResult res;
  std::unique_ptr<ana::CollectSink> ops;
};

Loaded load(const std::string& dir) {
  Loaded l;
  ana::ReadOptions ro;
  ro.progress = 0;
  l.ops = ana::read_merged<ana::CollectSink>(ana::discover_files({dir}).files, ro, 2, l.res, true);
  return l;
}

Loaded job(const std::string& name, Fault f, JobSpec s = {}) {
  s.fault = f;
  const auto dir = ni::test::temp_dir(name);
  ni::test::write_job(dir, s);
  return load(dir);
}

std::vector<ana::Finding> of_kind(const ana::AnomalyResult& r, const std::string& kind) {
  std::vector<ana::Finding> v;
  for (const auto& f : r.findings)
    if (f.kind == kind) v.push_back(f);
  return v;
}

int cli_rc(const std::string& args) {
  const int st = std::system((std::string(NI_CLI) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST(Detectors, CleanJobHasNoFindings) {
  const Loaded l = job("det_clean", Fault::kNone);
  const auto a = ana::find_anomalies(*l.ops, l.res, {});
  for (const auto& f : a.findings) ADD_FAILURE() << f.kind << " " << f.where << " " << f.evidence;
  EXPECT_EQ(a.outlier_count, 0u);
  EXPECT_EQ(ana::anomalies_report(a).sections.at(1).notes.at(0), "0 outlier ops");
  const auto s = ana::find_stragglers(l.ops->ops, l.res, {});
  EXPECT_GT(s.aligned, 0u);
  for (const auto& r : s.ranks) EXPECT_FALSE(r.flagged) << r.rank << " z " << r.z;
  for (const auto& c : s.comms) EXPECT_LT(c.p99, 5.0);
}

TEST(Detectors, StragglerRankFlaggedFromKernelTimes) {
  JobSpec s;
  s.straggler_rank = 5;
  const Loaded l = job("det_straggler", Fault::kStraggler, s);
  const auto r = ana::find_stragglers(l.ops->ops, l.res, {});
  int flagged = 0;
  for (const auto& k : r.ranks) {
    if (!k.flagged) continue;
    ++flagged;
    EXPECT_EQ(k.rank, 5);
    EXPECT_EQ(k.host, "host1");
    EXPECT_EQ(k.comm, 0x8d3a5c7e91b20f44ULL);
    EXPECT_NEAR(k.last_margin_us, 40.0, 5.0);                        // planted 40 us
    EXPECT_GT(static_cast<double>(k.last) / static_cast<double>(k.ops), 0.95);
  }
  EXPECT_EQ(flagged, 1);
  // Its process, from the comm records: one entry with its one flagged (comm, rank).
  ASSERT_EQ(r.late_processes.size(), 1u);
  EXPECT_EQ(r.late_processes[0].process.rfind("host1 pid ", 0), 0u) << r.late_processes[0].process;
  EXPECT_EQ(r.late_processes[0].ranks, (std::vector<std::pair<std::uint64_t, int>>{{0x8d3a5c7e91b20f44ULL, 5}}));
  EXPECT_EQ(r.measured, r.aligned);  // every instance GPU-timed: measured without clocks
  bool dp = false;
  for (const auto& c : r.comms)
    if (c.comm == 0x8d3a5c7e91b20f44ULL) {
      dp = true;
      EXPECT_GT(c.p50, 35.0);
      EXPECT_GT(c.frac_over, 0.99);
    }
  EXPECT_TRUE(dp);
  std::ostringstream os;
  ana::render(ana::stragglers_report(r, l.res, {}), ana::Format::kTable, os);
  EXPECT_NE(os.str().find("LATE"), std::string::npos);
  EXPECT_NE(os.str().find("LATE ranks by process (and GPU, where the comm records name it): " +
                          r.late_processes[0].process + " ("),
            std::string::npos)
      << os.str();
}

// A clock offset between hosts looks like lateness by start time; kernel
// times (nobody waits for the "late" ranks) say it is not, and the common
// end of the collectives measures the offset itself.
TEST(Detectors, ClockOffsetBetweenHostsIsNotAStragglerAndIsMeasured) {
  JobSpec s;
  s.hosts = 2;
  s.ranks_per_host = 1;  // as the demo's cross-process "dp" pairs: one rank per clock
  s.clock_offset_us = 2000;
  const Loaded l = job("det_clock_offset", Fault::kNone, s);
  const auto r = ana::find_stragglers(l.ops->ops, l.res, {});
  for (const auto& k : r.ranks) EXPECT_FALSE(k.flagged) << "rank " << k.rank << " last " << k.last << " of " << k.ops;
  ASSERT_EQ(r.clocks.size(), 1u);  // the dp comm: one rank per host
  const auto& c = r.clocks[0];
  EXPECT_NEAR(c.range_us, 2000.0, 10.0);
  EXPECT_LT(c.spread_us, 10.0);
  EXPECT_EQ(c.ahead_host, "host1");
  EXPECT_EQ(c.behind_host, "host0");
  for (const auto& cs : r.comms) EXPECT_GT(cs.p50, 1900.0);  // the start skew shows the offset, not lateness
  std::ostringstream os;
  ana::render(ana::stragglers_report(r, l.res, {}), ana::Format::kCsv, os);
  EXPECT_EQ(os.str().find(",LATE\n"), std::string::npos);
  EXPECT_NE(os.str().find("offset_range_us"), std::string::npos);
}

// A real straggler on a host whose clock is also off: still found, and only it.
TEST(Detectors, StragglerFoundDespiteAClockOffset) {
  JobSpec s;
  s.straggler_rank = 5;  // host1
  s.clock_offset_us = 300;
  const Loaded l = job("det_straggler_offset", Fault::kStraggler, s);
  const auto r = ana::find_stragglers(l.ops->ops, l.res, {});
  int flagged = 0;
  for (const auto& k : r.ranks)
    if (k.flagged) {
      ++flagged;
      EXPECT_EQ(k.rank, 5);
      EXPECT_NEAR(k.last_margin_us, 40.0, 5.0);  // the clock offset does not enter the margin
    }
  EXPECT_EQ(flagged, 1);
}

TEST(Detectors, SlowHcaFound) {
  JobSpec s;
  s.straggler_rank = 6;  // host1, mlx5_2
  const Loaded l = job("det_hca", Fault::kSlowHca, s);
  const auto a = ana::find_anomalies(*l.ops, l.res, {});
  const auto h = of_kind(a, "hca_slow");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].host, "host1");
  EXPECT_EQ(h[0].hca, "mlx5_2");
  EXPECT_GT(h[0].magnitude, 1.5);
  // P2P send/recv pairs are aligned too.
  const auto r = ana::find_stragglers(l.ops->ops, l.res, {});
  EXPECT_EQ(r.p2p.size(), 8u);
}

// A NIC is slow when most of its sends are: 12 sends at 5 GB/s among peers
// at 12.5 are named; 7 slow and 5 at full speed (a sending thread that was
// descheduled during some requests: the median is low, the 75th percentile
// is not) are not, nor 12 sends at 9 GB/s (within the 1.5 ratio).
TEST(Detectors, SlowHcaNeedsMostOfItsSendsSlow) {
  auto judge = [](const std::vector<double>& rank1) {
    ana::HcaSeries s;
    for (int r = 0; r < 4; ++r)
      for (std::size_t i = 0; i < 12; ++i) {
        const double g = r == 1 ? rank1[i] : 12.5 - 0.01 * static_cast<double>(i % 3);
        const ana::HcaSeries::Key k{0xabcULL, r, "mlx5_0"};
        s.series[k].push_back({static_cast<std::int64_t>(i) * 1000, i, 0, g});
        s.file_of[k] = static_cast<std::uint32_t>(r);
      }
    ana::ReadResult res;
    res.files.resize(4);
    for (int r = 0; r < 4; ++r) res.files[static_cast<std::size_t>(r)].host = "host" + std::to_string(r);
    return ana::judge_slow_hcas(s, res, {});
  };
  const auto slow = judge(std::vector<double>(12, 5.0));
  ASSERT_EQ(slow.found.size(), 1u);
  EXPECT_EQ(slow.found[0].host, "host1");
  EXPECT_NEAR(slow.found[0].factor, 2.5, 0.01);
  std::vector<double> stretched(12, 12.5);
  for (std::size_t i = 0; i < 7; ++i) stretched[i * 12 / 7] = 5.0;
  EXPECT_TRUE(judge(stretched).found.empty());
  EXPECT_TRUE(judge(std::vector<double>(12, 9.0)).found.empty());
}

TEST(Detectors, DegradedChannelFound) {
  JobSpec s;
  s.straggler_rank = 2;
  const Loaded l = job("det_channel", Fault::kDegradedChannel, s);
  const auto a = ana::find_anomalies(*l.ops, l.res, {});
  const auto c = of_kind(a, "channel_imbalance");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].rank, 2);
  EXPECT_EQ(c[0].host, "host0");
  EXPECT_EQ(c[0].channel, 6);  // ch_times index 3 is real channel id 6
  EXPECT_LT(c[0].magnitude, 0.6);
}

TEST(Detectors, CongestionWindowChangePoint) {
  JobSpec s;
  s.congestion_first = 150;
  s.congestion_last = 210;
  const Loaded l = job("det_congestion", Fault::kCongestion, s);
  const auto a = ana::find_anomalies(*l.ops, l.res, {});
  const auto c = of_kind(a, "change_point");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].comm, 0x8d3a5c7e91b20f44ULL);
  EXPECT_NEAR(static_cast<double>(c[0].seq_first), 150, 4);
  EXPECT_NEAR(static_cast<double>(c[0].seq_last), 210, 4);
  EXPECT_NEAR(c[0].magnitude, 2.2, 0.3);
  EXPECT_LT(c[0].start_ns, c[0].end_ns);
  EXPECT_TRUE(of_kind(a, "bimodal").empty());  // a window, not switching
}

TEST(Detectors, ProtocolBimodality) {
  const Loaded l = job("det_bimodal", Fault::kBimodal);
  const auto a = ana::find_anomalies(*l.ops, l.res, {});
  const auto b = of_kind(a, "bimodal");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].comm, 0x8d3a5c7e91b20f44ULL);
  EXPECT_NE(b[0].evidence.find("NCCL is switching"), std::string::npos);
  EXPECT_NEAR(b[0].magnitude, 95.0 / 40.0, 0.3);
  EXPECT_TRUE(of_kind(a, "change_point").empty());
}

// A group of a few dozen collectives is judged too, when each mode has 5 or
// more and the modes are cleanly apart or use different algo/proto; 12
// instances are too few; and unimodal groups of 16-39 instances with the
// fixture's noise never read as bimodal (20 seeds each).
TEST(Detectors, BimodalityInASmallGroup) {
  for (int iters : {20, 30}) {
    JobSpec s;
    s.iterations = iters;
    const Loaded l = job("det_bimodal_few" + std::to_string(iters), Fault::kBimodal, s);
    const auto b = of_kind(ana::find_anomalies(*l.ops, l.res, {}), "bimodal");
    ASSERT_EQ(b.size(), 1u) << iters << " iterations";
    EXPECT_EQ(b[0].comm, 0x8d3a5c7e91b20f44ULL);
    EXPECT_NEAR(b[0].magnitude, 95.0 / 40.0, 0.3);
  }
  {
    JobSpec s;
    s.iterations = 12;
    const Loaded l = job("det_bimodal_12", Fault::kBimodal, s);
    EXPECT_TRUE(of_kind(ana::find_anomalies(*l.ops, l.res, {}), "bimodal").empty());
  }
  for (int iters : {16, 24, 39})
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      JobSpec s;
      s.iterations = iters;
      s.seed = seed;
      const Loaded l = job("det_unimodal_few", Fault::kNone, s);
      const auto b = of_kind(ana::find_anomalies(*l.ops, l.res, {}), "bimodal");
      EXPECT_TRUE(b.empty()) << iters << " iterations, seed " << seed << ": " << b.front().evidence;
    }
}

TEST(Advice, BestAlgoProtoAndPinning) {
  const auto dir = ni::test::temp_dir("advice");
  JobSpec js;
  js.fault = Fault::kBimodal;
  ni::test::write_job(dir, js);
  ana::SummaryOptions so;
  ana::ReadResult res;
  ana::ReadOptions ro;
  ro.progress = 0;
  auto s = ana::read_merged<ana::SummarySink>(ana::discover_files({dir}).files, ro, 2, res, so);
  ana::Report r;
  ana::add_summary_sections(r, *s, res, so);
  const auto& adv = r.sections.back();
  ASSERT_EQ(adv.name, "advice");
  ASSERT_EQ(adv.table.rows.size(), 1u);
  EXPECT_EQ(adv.table.rows[0][4].text(), "TREE/LL");
  EXPECT_EQ(adv.table.rows[0][10].text(), "NCCL_ALGO=Tree NCCL_PROTO=LL");
  EXPECT_GT(adv.table.rows[0][9].d, 2.0);
}

// Advice compares GPU times only: the CPU-timed records of the same (algo,
// proto) (on real NCCL 2.28.9, a comm's collectives after its first AlltoAll,
// kernel_desync) are no "other choice", however much slower they read.
TEST(Advice, NeverComparesCpuTimedRecords) {
  const auto dir = ni::test::temp_dir("advice_cpu");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  auto line = [&](int seq, const char* algo, const char* proto, double dur, bool gpu) {
    text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":2,"nnodes":2,"seq":)" + std::to_string(seq) +
            R"(,"func":"AllReduce","bytes":1048576,"algo":")" + algo + R"(","proto":")" + proto +
            R"(","dur_us":)" + std::to_string(dur) +
            (gpu ? R"(,"timing":"gpu","busbw_gbs":1})" : R"(,"timing":"enqueue_cpu","kernel_desync":true})") + "\n";
  };
  int seq = 0;
  for (int i = 0; i < 10; ++i) line(seq++, "RING", "SIMPLE", 4600 + i, true);
  for (int i = 0; i < 10; ++i) line(seq++, "RING", "SIMPLE", 4900 + i, false);
  for (int i = 0; i < 10; ++i) line(seq++, "TREE", "LL", 9000 + i, false);
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  ana::SummaryOptions so;
  ana::ReadResult res;
  ana::ReadOptions ro;
  ro.progress = 0;
  auto s = ana::read_merged<ana::SummarySink>(ana::discover_files({dir}).files, ro, 1, res, so);
  ana::Report r;
  ana::add_summary_sections(r, *s, res, so);
  const auto& adv = r.sections.back();
  ASSERT_EQ(adv.name, "advice");
  EXPECT_TRUE(adv.table.rows.empty()) << adv.table.rows.size() << " rows; first: "
                                      << (adv.table.rows.empty() ? "" : adv.table.rows[0][7].text());
  // The same lines GPU-timed: TREE/LL is another choice, and slower.
  std::string gpu_text;
  for (std::size_t p = 0, q; (q = text.find('\n', p)) != std::string::npos; p = q + 1) {
    std::string l = text.substr(p, q - p + 1);
    if (const auto at = l.find(R"("timing":"enqueue_cpu","kernel_desync":true)"); at != std::string::npos)
      l.replace(at, 43, R"("timing":"gpu","busbw_gbs":1)");
    gpu_text += l;
  }
  ni::test::write_text(dir + "/h-pid1.jsonl", gpu_text);
  ana::ReadResult res2;
  s = ana::read_merged<ana::SummarySink>(ana::discover_files({dir}).files, ro, 1, res2, so);
  ana::Report r2;
  ana::add_summary_sections(r2, *s, res2, so);
  ASSERT_EQ(r2.sections.back().table.rows.size(), 1u);
  EXPECT_EQ(r2.sections.back().table.rows[0][4].text(), "RING/SIMPLE");
  EXPECT_EQ(r2.sections.back().table.rows[0][7].text(), "TREE/LL");
}

TEST(Iterations, PerIterationFromMarks) {
  const auto dir = ni::test::temp_dir("marks");
  JobSpec js;
  js.iterations = 12;
  js.marks = true;
  ni::test::write_job(dir, js);
  const Loaded l = load(dir);
  ana::Report r;
  ana::add_iteration_section(r, l.ops->ops, l.res);
  ASSERT_EQ(r.sections.size(), 1u);
  ASSERT_EQ(r.sections[0].table.rows.size(), 12u);
  EXPECT_EQ(r.sections[0].table.rows[0][1].text(), "step");
  EXPECT_EQ(r.sections[0].table.rows[0][3].i, 16);  // 8 AllReduce + 8 AllGather records
  EXPECT_NEAR(r.sections[0].table.rows[0][2].d, 1.0, 1e-6);  // 1 ms between marks
}

TEST(Compare, RegressionExitsThree) {
  const auto base = ni::test::temp_dir("cmp_base"), same = ni::test::temp_dir("cmp_same"),
             slow = ni::test::temp_dir("cmp_slow");
  JobSpec s;
  s.iterations = 100;
  ni::test::write_job(base, s);
  s.seed = 2;
  ni::test::write_job(same, s);
  s.slowdown = 1.2;
  ni::test::write_job(slow, s);
  EXPECT_EQ(cli_rc("compare " + base + " " + same), 0);
  EXPECT_EQ(cli_rc("compare " + base + " " + slow), 3);
  EXPECT_EQ(cli_rc("compare --threshold 30 " + base + " " + slow), 0);
  ana::ReadOptions ro;
  ro.progress = 0;
  const auto cr = ana::compare_runs(ana::discover_files({base}).files, ana::discover_files({slow}).files, 2, ro, {});
  EXPECT_EQ(cr.regressions, 2u);  // dp AllReduce and tp AllGather
  EXPECT_EQ(cli_rc("stragglers " + base), 0);
  EXPECT_EQ(cli_rc("anomalies -f json " + base), 0);
}

// compare_runs prints nothing: each side's read notes and a side with nothing
// to compare come back in its result, named by their side, for the caller.
TEST(Compare, ReadNotesAndErrorsComeBackNamedBySide) {
  const auto base = ni::test::temp_dir("cmp_notes_base"), run = ni::test::temp_dir("cmp_notes_run"),
             other = ni::test::temp_dir("cmp_notes_other");
  JobSpec s;
  s.iterations = 40;
  ni::test::write_job(base, s);  // rank 0's stats: 7 records dropped
  s.drops = false;
  ni::test::write_job(run, s);
  std::ofstream(other + "/not-a-log.jsonl") << "{\"hello\": 1}\n";
  ana::ReadOptions ro;
  ro.progress = 0;
  const auto files = [](const std::string& d) { return ana::discover_files({d}).files; };
  const auto cr = ana::compare_runs(files(base), files(run), 2, ro, {});
  EXPECT_TRUE(cr.error.empty()) << cr.error;
  ASSERT_EQ(cr.notes.size(), 1u);
  EXPECT_EQ(cr.notes[0].rfind("note: BASE: the plugin dropped 7 record(s) (ring_full=7)", 0), 0u) << cr.notes[0];
  const auto back = ana::compare_runs(files(run), files(base), 2, ro, {});
  ASSERT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.notes[0].rfind("note: RUN: the plugin dropped 7 record(s)", 0), 0u) << back.notes[0];
  const auto bad = ana::compare_runs(files(base), files(other), 2, ro, {});
  EXPECT_EQ(bad.error,
            "RUN: no op records in 1 file(s) (unknown format: not nccl-inspector or upstream Inspector v4.0 logs); "
            "try: nccl-inspector validate");
  EXPECT_TRUE(bad.report.sections.empty());
}

namespace {

// `ranks` ranks of one communicator, `n` AllReduce instances of 1 MiB timed by
// `timing`, ≈ 100 us with a little jitter; dur(seq, rank) overrides where it
// returns > 0. Ranks 0-3 are in file 0, 4-7 in file 1 (two_hosts()).
template <typename Dur>
ni::analysis::CollectSink ring_job(int n, int ranks, ni::analysis::Timing timing, Dur dur) {
  ni::analysis::CollectSink c;
  for (int seq = 0; seq < n; ++seq)
    for (int rank = 0; rank < ranks; ++rank) {
      ni::analysis::Op op;
      op.comm_hash = 0xc0;
      op.kind = ni::analysis::OpKind::kColl;
      op.func = ni::analysis::Func::kAllReduce;
      op.bytes = 1 << 20;
      op.seq = static_cast<std::uint64_t>(seq);
      op.rank = rank;
      op.nranks = ranks;
      op.file_idx = static_cast<std::uint32_t>(rank / 4);
      op.timing = timing;
      const double d = dur(seq, rank);
      op.dur_us = d > 0 ? d : 100.0 + (seq * 7 + rank * 3) % 5;
      op.start_wall_ns = 1'700'000'000'000'000'000 + seq * 1'000'000;
      c.ops.push_back(op);
    }
  return c;
}
template <typename Dur>
ni::analysis::CollectSink ring_job(int n, Dur dur) {
  return ring_job(n, 8, ni::analysis::Timing::kGpu, dur);
}

ni::analysis::ReadResult two_hosts() {
  ni::analysis::ReadResult res;
  res.files.resize(2);
  res.files[0].host = "h0";
  res.files[1].host = "h1";
  return res;
}

}  // namespace

// An op timed only by its enqueue (NCCL 2.23-2.25, copy-engine collectives) has
// a duration that is the CPU's enqueue: a 10x "slow" enqueue is no finding, and
// the report says how many ops were left out. The control, the same ops
// GPU-timed, finds the outlier, so the detector itself is not what is silent.
TEST(Anomalies, EnqueueTimedDurationsAreNotFindings) {
  const auto res = two_hosts();
  auto make = [](ni::analysis::Timing t) {
    return ring_job(40, 1, t, [](int seq, int) { return seq == 25 ? 1000.0 : 0.0; });
  };
  const ni::analysis::AnomalyOptions o;
  const auto cpu = ni::analysis::find_anomalies(make(ni::analysis::Timing::kEnqueueCpu), res, o);
  EXPECT_EQ(cpu.outlier_count, 0u);
  EXPECT_TRUE(cpu.findings.empty());
  EXPECT_EQ(cpu.enqueue_timed, 40u);
  const auto rep = ni::analysis::anomalies_report(cpu);
  bool noted = false;
  for (const auto& n : rep.sections.at(0).notes) noted = noted || n.find("40 ops timed only by their enqueue") == 0;
  EXPECT_TRUE(noted);
  const auto gpu = ni::analysis::find_anomalies(make(ni::analysis::Timing::kGpu), res, o);
  EXPECT_EQ(gpu.outlier_count, 1u);
  EXPECT_EQ(gpu.enqueue_timed, 0u);
}

// ---- hosts and racks (locate.h)

TEST(Locate, RackFromHostname) {
  EXPECT_EQ(ana::rack_from_hostname("r12n03"), "r12");
  EXPECT_EQ(ana::rack_from_hostname("rack12-node03"), "rack12");
  EXPECT_EQ(ana::rack_from_hostname("sc-a12-07.cluster.example"), "sc-a12");
  EXPECT_EQ(ana::rack_from_hostname("node017"), "");
  EXPECT_EQ(ana::rack_from_hostname("localhost"), "");
  EXPECT_EQ(ana::rack_from_hostname("12-03"), "");  // no letters before the rack number
  EXPECT_EQ(ana::rack_from_hostname(""), "");
}

TEST(Locate, HostMapIsReadOrRefusedWithTheLine) {
  const std::string dir = ni::test::temp_dir("hostmap");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  ana::HostMap m;
  std::string err;
  ASSERT_TRUE(ana::load_host_map(write("ok", "# host rack\nnode0 rackA\nnode1,rackA\n , \nnode2=rackB  # spare\n\n"), m, err))
      << err;
  EXPECT_EQ(m.rack_of.size(), 3u);
  EXPECT_EQ(m.rack_of["node2"], "rackB");
  ana::HostMap bad;
  EXPECT_FALSE(ana::load_host_map(write("one", "node0 rackA\nnode1\n"), bad, err));
  EXPECT_NE(err.find(":2:"), std::string::npos) << err;
  EXPECT_FALSE(ana::load_host_map(write("twice", "node0 rackA\nnode0 rackB\n"), bad, err));
  EXPECT_NE(err.find("rack rackA already"), std::string::npos) << err;
  ana::HostMap none;
  EXPECT_FALSE(ana::load_host_map(write("empty", "# nothing\n"), none, err));
  EXPECT_NE(err.find("names no host"), std::string::npos) << err;
  EXPECT_FALSE(ana::load_host_map(dir + "/missing", bad, err));
  EXPECT_NE(err.find("cannot read"), std::string::npos);
  // The CLI refuses a bad map with a usage error, before any analysis.
  const std::string logs = ni::test::temp_dir("hostmap_logs");
  ni::test::write_job(logs, {});
  EXPECT_EQ(cli_rc("stragglers " + logs + " --host-map " + dir + "/one"), 2);
  EXPECT_EQ(cli_rc("stragglers " + logs + " --host-map " + dir + "/ok"), 0);
}

TEST(Locate, HypergeometricTail) {
  EXPECT_NEAR(ana::hypergeom_tail(4, 2, 2, 2), 1.0 / 6.0, 1e-12);
  EXPECT_NEAR(ana::hypergeom_tail(10, 5, 3, 0), 1.0, 1e-12);
  EXPECT_NEAR(ana::hypergeom_tail(32, 16, 8, 8), 12870.0 / 10518300.0, 1e-12);
  EXPECT_EQ(ana::hypergeom_tail(10, 2, 3, 3), 0.0);  // 3 of 3 drawn from a group of 2: impossible
}

// 8 hosts in 4 racks, 4 units per host: the affected units decide what is named.
TEST(Locate, ConcentrationOnlyBeyondChance) {
  ana::ReadResult res;
  for (int h = 0; h < 8; ++h) {
    ana::FileInfo f;
    f.host = "node" + std::to_string(h);
    f.rack = "rack" + std::to_string(h / 2);
    res.files.push_back(f);
  }
  auto units = [&](const std::set<std::pair<int, int>>& hit) {  // (host, unit) affected
    std::vector<ana::Judged> v;
    for (int h = 0; h < 8; ++h)
      for (int u = 0; u < 4; ++u) v.push_back({static_cast<std::uint32_t>(h), hit.count({h, u}) != 0});
    return v;
  };
  // One affected unit: no place.
  EXPECT_TRUE(ana::concentrations(res, units({{3, 0}})).empty());
  // Two, on two racks: no place.
  EXPECT_TRUE(ana::concentrations(res, units({{0, 0}, {7, 0}})).empty());
  // Every unit of rack1's two hosts: the rack (not a host: each has half).
  auto c = ana::concentrations(res, units({{2, 0}, {2, 1}, {2, 2}, {2, 3}, {3, 0}, {3, 1}, {3, 2}, {3, 3}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].level, "rack");
  EXPECT_EQ(c[0].where, "rack1");
  EXPECT_EQ(c[0].affected_here, 8);
  EXPECT_EQ(c[0].measured_here, 8);
  EXPECT_EQ(c[0].measured_total, 32);
  EXPECT_EQ(c[0].hosts, (std::vector<std::string>{"node2", "node3"}));
  EXPECT_NE(c[0].text().find("8 of 8 affected ranks are in rack rack1"), std::string::npos) << c[0].text();
  // All on one host: the host, and not its rack (one host says it).
  c = ana::concentrations(res, units({{5, 0}, {5, 1}, {5, 2}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].level, "host");
  EXPECT_EQ(c[0].where, "node5");
  // Spread over the job: nothing, though rack1 has the most.
  EXPECT_TRUE(ana::concentrations(res, units({{2, 0}, {3, 0}, {0, 1}, {5, 2}, {6, 3}})).empty());
  // Racks unknown: hosts still work, no rack is named.
  for (auto& f : res.files) f.rack.clear();
  c = ana::concentrations(res, units({{2, 0}, {2, 1}, {2, 2}, {2, 3}, {3, 0}, {3, 1}, {3, 2}, {3, 3}}));
  EXPECT_TRUE(c.empty());
}

// ---- outliers: one row per collective instance

// A collective slow on every rank is one row naming its ranks, not a row per
// rank; one slow on all ranks but one names the rank that was not (the one the
// others may have waited for). The count of outlier ops stays per rank.
TEST(Anomalies, OutliersAreOneRowPerInstance) {
  const auto res = two_hosts();
  const auto c = ring_job(60, [](int seq, int rank) {
    if (seq == 20) return 400.0 + rank;              // every rank slow
    if (seq == 40 && rank != 7) return 300.0 + rank;  // rank 7 was not
    return 0.0;
  });
  const auto a = ni::analysis::find_anomalies(c, res, {});
  EXPECT_EQ(a.outlier_count, 15u);
  EXPECT_EQ(a.outlier_instances, 2u);
  EXPECT_EQ(a.outliers_explained, 0u);
  ASSERT_EQ(a.outliers.size(), 2u);
  const auto& all = a.outliers[0];
  EXPECT_EQ(all.seq_first, 20u);
  EXPECT_EQ(all.rank, 7) << "the slowest rank";
  EXPECT_EQ(all.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(all.where, "ranks 0-7 (8 of 8 in the logs), slowest rank 7 on h1");
  EXPECT_NE(all.evidence.find("slow on all 8 ranks"), std::string::npos) << all.evidence;
  EXPECT_NEAR(all.magnitude, 407.0 / 102.0, 0.05);
  const auto& but_one = a.outliers[1];
  EXPECT_EQ(but_one.seq_first, 40u);
  EXPECT_EQ(but_one.rank, 6);
  EXPECT_EQ(but_one.ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(but_one.where, "ranks 0-6 (7 of 8 in the logs), slowest rank 6 on h1");
  EXPECT_EQ(but_one.not_slow, std::vector<int>{7});
  EXPECT_TRUE(all.not_slow.empty());
  EXPECT_NE(but_one.evidence.find("rank 7 was not slow"), std::string::npos) << but_one.evidence;
  const auto rep = ni::analysis::anomalies_report(a);
  ASSERT_EQ(rep.sections.size(), 2u);
  EXPECT_EQ(rep.sections[1].table.rows.size(), 2u);
  EXPECT_EQ(rep.sections[1].notes.at(0).rfind("15 outlier ops in total, in 2 collective instances", 0), 0u)
      << rep.sections[1].notes.at(0);
}

// One late GPU's rows on two communicators (rank 7 of one, rank 0 of the
// other) come together under its process and device from the comm records; a
// row with two ranks not slow names neither in the roll-up.
TEST(Anomalies, RowsWaitingForOneGpuOnSeveralCommsAreRolledUpByProcess) {
  auto res = two_hosts();
  res.files[0].pid = 100;
  res.files[1].pid = 200;
  for (int r = 0; r < 8; ++r) {
    ni::analysis::CommInfo ci;
    ci.comm_hash = 0xc0;
    ci.rank = r;
    ci.cuda_dev = r % 4;
    res.files[static_cast<std::size_t>(r / 4)].comms.push_back(ci);
  }
  for (int r = 0; r < 2; ++r) {  // the second comm: file 1's GPU 3 is its rank 0, file 0's GPU 0 its rank 1
    ni::analysis::CommInfo ci;
    ci.comm_hash = 0xd0;
    ci.rank = r;
    ci.cuda_dev = r == 0 ? 3 : 0;
    res.files[r == 0 ? 1 : 0].comms.push_back(ci);
  }
  auto c = ring_job(60, [](int seq, int rank) {
    if (seq == 40 && rank != 7) return 300.0 + rank;  // all waited for rank 7
    if (seq == 20 && rank < 6) return 300.0 + rank;   // ranks 6 and 7 not slow: no one rank named
    return 0.0;
  });
  for (int seq = 0; seq < 60; ++seq)
    for (int rank = 0; rank < 2; ++rank) {
      ni::analysis::Op op = c.ops[0];
      op.comm_hash = 0xd0;
      op.seq = static_cast<std::uint64_t>(seq);
      op.rank = rank;
      op.nranks = 2;
      op.file_idx = rank == 0 ? 1 : 0;
      op.dur_us = seq == 30 && rank == 1 ? 320.0 : 100.0 + (seq * 7 + rank * 3) % 5;
      op.start_wall_ns = 1'700'000'000'000'000'000 + seq * 1'000'000 + 500'000;
      c.ops.push_back(op);
    }
  const auto a = ni::analysis::find_anomalies(c, res, {});
  ASSERT_EQ(a.outliers.size(), 3u);
  ASSERT_EQ(a.waited_for.size(), 1u);
  const auto& w = a.waited_for[0];
  EXPECT_EQ(w.process, "h1 pid 200 GPU 3");
  EXPECT_EQ(w.rows, 2u);
  ASSERT_EQ(w.ranks.size(), 2u);
  EXPECT_EQ(std::get<1>(w.ranks[0]), 0xc0u);
  EXPECT_EQ(std::get<2>(w.ranks[0]), 7);
  EXPECT_EQ(std::get<1>(w.ranks[1]), 0xd0u);
  EXPECT_EQ(std::get<2>(w.ranks[1]), 0);
  const auto rep = ni::analysis::anomalies_report(a);
  const auto& notes = rep.sections.at(1).notes;
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("by process: h1 pid 200 GPU 3 in 2 rows ("), std::string::npos) << notes[1];
  EXPECT_NE(notes[1].find(" rank 7, "), std::string::npos) << notes[1];
}

// A straggler (rank 2, last to every op, so it waits little: ~10 us where the
// others wait ~160) is not slow by the group's median when it waits for a rank
// later still (rank 5 at seq 40): its own median says it waited, so the row
// names rank 5 alone as the one awaited and rank 2 apart. When every rank not
// slow waited longer than usual (seq 50), all are named, as before.
TEST(Anomalies, OutlierRowSetsApartARankThatWaitedLongerThanUsual) {
  const auto res = two_hosts();
  const auto c = ring_job(60, [](int seq, int rank) {
    if (seq == 40) return rank == 5 ? 10.0 : rank == 2 ? 180.0 : 330.0 + rank;
    if (seq == 50) return rank == 5 ? 240.0 : rank == 2 ? 180.0 : 300.0 + rank;
    if (rank == 2) return 10.0 + seq % 3;
    return 0.0;  // the usual ~160
  });
  // ring_job's usual is 100-104 us: make it 160-164.
  auto ops = c;
  for (auto& op : ops.ops)
    if (op.dur_us >= 100 && op.dur_us < 105) op.dur_us += 60;
  const auto a = ni::analysis::find_anomalies(ops, res, {});
  ASSERT_EQ(a.outliers.size(), 2u);
  const auto& late = a.outliers[0].seq_first == 40 ? a.outliers[0] : a.outliers[1];
  const auto& all_waited = a.outliers[0].seq_first == 50 ? a.outliers[0] : a.outliers[1];
  ASSERT_EQ(late.seq_first, 40u);
  ASSERT_EQ(all_waited.seq_first, 50u);
  EXPECT_EQ(late.ranks, (std::vector<int>{0, 1, 3, 4, 6, 7}));
  EXPECT_EQ(late.not_slow, std::vector<int>{5});
  EXPECT_NE(late.evidence.find("rank 5 was not slow"), std::string::npos) << late.evidence;
  EXPECT_NE(late.evidence.find("; rank 2 waited longer than usual too (over half the delay above its own median), so "
                               "arrived before the rank waited for"),
            std::string::npos)
      << late.evidence;
  EXPECT_EQ(all_waited.not_slow, (std::vector<int>{2, 5}));
  EXPECT_NE(all_waited.evidence.find("ranks 2,5 were not slow"), std::string::npos) << all_waited.evidence;
  EXPECT_EQ(all_waited.evidence.find("longer than usual"), std::string::npos) << all_waited.evidence;
}

// P2P ops are rows of their own: their seq counts per peer and direction, so
// two ranks' sends with the same seq are no instance. An op without a duration
// (NaN) is left out and counted, not ranked.
TEST(Anomalies, P2pOutliersAreRowsOfTheirOwnAndNanDurationsAreLeftOut) {
  const auto res = two_hosts();
  auto c = ring_job(60, [](int seq, int rank) { return seq == 20 && rank < 2 ? 400.0 + rank : 0.0; });
  for (auto& op : c.ops) {
    op.kind = ni::analysis::OpKind::kP2p;
    op.func = ni::analysis::Func::kSend;
  }
  c.ops[8 * 30 + 3].dur_us = std::numeric_limits<double>::quiet_NaN();
  const auto a = ni::analysis::find_anomalies(c, res, {});
  EXPECT_EQ(a.no_duration, 1u);
  EXPECT_EQ(a.outlier_count, 2u);
  EXPECT_EQ(a.outlier_instances, 0u);
  EXPECT_EQ(a.outlier_ops_alone, 2u);
  ASSERT_EQ(a.outliers.size(), 2u);
  EXPECT_EQ(a.outliers[0].rank, 1);
  EXPECT_EQ(a.outliers[0].where, "rank 1 on h0");
  EXPECT_EQ(a.outliers[1].rank, 0);
  for (const auto& f : a.outliers) {
    EXPECT_EQ(f.ranks.size(), 1u);
    EXPECT_TRUE(f.not_slow.empty());
  }
  const auto rep = ni::analysis::anomalies_report(a);
  bool noted = false;
  for (const auto& n : rep.sections.at(0).notes) noted = noted || n.rfind("1 ops without a duration", 0) == 0;
  EXPECT_TRUE(noted);
  EXPECT_EQ(rep.sections.at(1).notes.at(0).rfind("2 outlier ops in total, in 0 collective instances (one row each, named "
                                                 "by its slowest rank) and 2 P2P ops or ops of an unknown rank (a row each)",
                                                 0),
            0u)
      << rep.sections.at(1).notes.at(0);
}

// The instances of a degradation window are outliers of their group too, but
// explained by the window: listed after an unexplained spike even where that
// spike is smaller, each saying which window it is in.
TEST(Anomalies, OutliersInsideAChangeWindowComeAfterTheUnexplained) {
  const auto res = two_hosts();
  const auto c = ring_job(300, [](int seq, int) {
    if (seq >= 150 && seq < 190) return 260.0;  // a window of 40 instances at 2.6x
    if (seq == 60) return 200.0;                // one spike at 2x
    return 0.0;
  });
  const auto a = ni::analysis::find_anomalies(c, res, {});
  const ni::analysis::Finding* window = nullptr;
  for (const auto& f : a.findings)
    if (f.kind == "change_point") window = &f;
  ASSERT_NE(window, nullptr) << "the window itself is found";
  ASSERT_EQ(window->seq_ranges.size(), 1u);
  const auto& w = window->seq_ranges[0];
  EXPECT_EQ(a.outlier_instances, 41u);
  EXPECT_EQ(a.outliers_explained, 40u) << "window " << w.first << ".." << w.last;
  ASSERT_EQ(a.outliers.size(), 20u);
  EXPECT_EQ(a.outliers[0].seq_first, 60u) << "the unexplained spike first, though its z is the smaller";
  EXPECT_FALSE(a.outliers[0].explained);
  for (std::size_t i = 1; i < a.outliers.size(); ++i) {
    const auto& o = a.outliers[i];
    EXPECT_TRUE(o.explained);
    EXPECT_TRUE(o.seq_first >= w.first && o.seq_first <= w.last) << o.seq_first;
    EXPECT_NE(o.evidence.find("inside the change_point window of AllReduce seq " + std::to_string(w.first) + ".." +
                              std::to_string(w.last)),
              std::string::npos)
        << o.evidence;
  }
}

// A bimodal group's slow mode is explained by the bimodal finding; an op far
// beyond the slow mode is not, and comes first.
TEST(Anomalies, OutliersInABimodalSlowModeAreExplained) {
  const auto res = two_hosts();
  const auto c = ring_job(200, [](int seq, int) {
    if (seq == 101) return 1000.0;       // far beyond either mode
    if (seq % 4 == 0) return 250.0 + seq % 3;  // the slow mode: every 4th instance
    return 0.0;
  });
  const auto a = ni::analysis::find_anomalies(c, res, {});
  std::size_t bimodal = 0;
  for (const auto& f : a.findings) bimodal += f.kind == "bimodal";
  ASSERT_EQ(bimodal, 1u);
  EXPECT_EQ(a.outlier_instances, 51u);
  EXPECT_EQ(a.outliers_explained, 50u);
  ASSERT_FALSE(a.outliers.empty());
  EXPECT_EQ(a.outliers[0].seq_first, 101u);
  EXPECT_FALSE(a.outliers[0].explained);
  for (std::size_t i = 1; i < a.outliers.size(); ++i) {
    EXPECT_TRUE(a.outliers[i].explained);
    EXPECT_NE(a.outliers[i].evidence.find("the slow mode (median 25"), std::string::npos) << a.outliers[i].evidence;
  }
}

// Program order without agreeing clocks: two functions of one comm take turns
// (AllReduce, AllGather, ...), ops 100..159 of 240 are 2.5x slow. The ranks'
// clocks disagree by 1-3 ms (ten times the gap between two collectives), and
// rank 0's -- the earliest -- moves 3 ms back after op 151 (a GPU clock
// estimate that moved mid-run: the plugin converts each record with the
// estimate of the moment it writes it). Merged by earliest start, the
// functions interleave wrongly across the window's end and the window breaks;
// by the ranks' own sequences (the median rank's place) it is exact.
TEST(Anomalies, ChangePointWindowExactWhenOneRanksClockMovesMidRun) {
  const auto res = two_hosts();
  ni::analysis::CollectSink c;
  for (int i = 0; i < 240; ++i)
    for (int rank = 0; rank < 4; ++rank) {
      ni::analysis::Op op;
      op.comm_hash = 0xc1;
      op.kind = ni::analysis::OpKind::kColl;
      op.func = i % 2 ? ni::analysis::Func::kAllGather : ni::analysis::Func::kAllReduce;
      op.bytes = i % 2 ? 256u << 10 : 1u << 20;
      op.seq = static_cast<std::uint64_t>(i / 2);
      op.rank = rank;
      op.nranks = 4;
      op.file_idx = 0;
      op.timing = ni::analysis::Timing::kGpu;
      op.dur_us = (i >= 100 && i < 160 ? 250.0 : 100.0) + (i * 7 + rank * 3) % 5;
      std::int64_t t = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(i) * 100'000 + rank * 1'000'000;
      if (rank == 0 && i > 151) t -= 3'000'000;
      op.start_wall_ns = t;
      op.flags = ni::analysis::kFlagHasStart;
      c.ops.push_back(op);
    }
  const auto a = ni::analysis::find_anomalies(c, res, {});
  std::vector<ni::analysis::Finding> cp;
  for (const auto& f : a.findings)
    if (f.kind == "change_point") cp.push_back(f);
  ASSERT_EQ(cp.size(), 1u);
  ASSERT_EQ(cp[0].seq_ranges.size(), 2u);
  for (const auto& r : cp[0].seq_ranges) {
    EXPECT_EQ(r.first, 50u) << ni::analysis::to_string(r.func);
    EXPECT_EQ(r.last, 79u) << ni::analysis::to_string(r.func);
    EXPECT_EQ(r.count, 30u) << ni::analysis::to_string(r.func);
  }
  EXPECT_NEAR(cp[0].magnitude, 2.5, 0.1);
}
