// Reader, summary, validate, export, CLI: behaviour on fixture logs written by the tests.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "src/analysis/anomalies.h"
#include "src/analysis/collect_sink.h"
#include "src/analysis/export.h"
#include "src/analysis/iterations.h"
#include "tests/analysis/fixtures.h"
#include "src/analysis/reader.h"
#include "src/analysis/reader_record.h"
#include "src/analysis/stats.h"
#include "src/analysis/summary.h"
#include "src/analysis/tags.h"
#include "src/analysis/validate.h"
#include "src/analysis/watch.h"

namespace ana = ni::analysis;
namespace fs = std::filesystem;
using ni::test::JobSpec;

namespace {

struct Cmd {
  int rc;
  std::string out;
};
Cmd run(const std::string& cmd) {
  Cmd c{-1, ""};
  FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) return c;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) c.out.append(buf, n);
  const int st = ::pclose(p);
  c.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return c;
}

ana::ReadResult read_summary(const std::string& dir, ana::SummaryOptions so, std::unique_ptr<ana::SummarySink>& out,
                             int threads = 2) {
  auto d = ana::discover_files({dir});
  EXPECT_EQ(d.error, "");
  ana::ReadResult res;
  ana::ReadOptions ro;
  ro.progress = 0;
  out = ana::read_merged<ana::SummarySink>(d.files, ro, threads, res, so);
  return res;
}

const ana::SummaryOptions kDefault{};

}  // namespace

TEST(Reader, ReadsCleanJobCompletely) {
  const auto dir = ni::test::temp_dir("clean_read");
  JobSpec s;
  s.iterations = 50;
  const auto truth = ni::test::write_job(dir, s);
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  EXPECT_EQ(res.files.size(), 8u);
  EXPECT_EQ(res.ops, truth.ops);
  EXPECT_EQ(res.bad_lines, 0u);
  EXPECT_EQ(res.truncated_files, 0u);
  EXPECT_EQ(res.unknown_records, 0u);
  EXPECT_EQ(res.comm_names.at(truth.comm_dp), "dp");
  for (const auto& f : res.files) {
    EXPECT_EQ(f.format, ana::FileFormat::kOurs);
    EXPECT_TRUE(f.meta_first);
    EXPECT_TRUE(f.has_end);
    EXPECT_EQ(f.job_id, "42");
  }
  EXPECT_EQ(ana::drop_totals(res).dropped.at("ring_full"), 7u);
}

TEST(Reader, TruncatedMemberAndCutLineAreCountedNotFatal) {
  const auto dir = ni::test::temp_dir("trunc");
  std::vector<std::string> lines = {
      R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})"};
  for (int i = 0; i < 1000; ++i)
    lines.push_back(R"({"type":"coll","comm_hash":"0x0000000000000001","rank":0,"nranks":2,"seq":)" +
                    std::to_string(i) + R"(,"func":"AllReduce","bytes":1024,"start_wall_ns":1,"dur_us":10.5})");
  ni::test::write_gz(dir + "/cut-member.jsonl.gz", lines, 100, 200);  // last member loses its tail
  // A complete gzip whose last line is cut.
  std::vector<std::string> l2 = lines;
  l2.back() = l2.back().substr(0, 40);
  std::string text;
  for (std::size_t i = 0; i < l2.size(); ++i) text += l2[i] + (i + 1 < l2.size() ? "\n" : "");
  ni::test::write_gz(dir + "/cut-line.jsonl.gz", {text}, 1000);
  // Hmm: write_gz adds a trailing newline; rewrite without it through a raw member.
  {
    std::vector<std::string> one = {text};
    ni::test::write_gz(dir + "/cut-line.jsonl.gz", one, 1000);
  }
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  ASSERT_EQ(res.files.size(), 2u);
  const auto& member = res.files[0].path.find("cut-member") != std::string::npos ? res.files[0] : res.files[1];
  const auto& cutline = &member == &res.files[0] ? res.files[1] : res.files[0];
  EXPECT_TRUE(member.truncated);
  EXPECT_FALSE(member.corrupt);
  EXPECT_GT(member.ops, 850u);  // every complete member and most of the cut one
  EXPECT_LT(member.ops, 1000u);
  // The cut-line file: the writer added '\n' after the cut line, so it is a bad line,
  // not a truncation; either way 999 good ops and no crash.
  EXPECT_EQ(cutline.ops, 999u);
  EXPECT_EQ(res.truncated_files, 1u);
}

TEST(Reader, CutLastLineWithoutNewlineIsTruncation) {
  const auto dir = ni::test::temp_dir("cutline");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})"
                     "\n"
                     R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","seq":1,"bytes":8,"dur_us":3.5,"start_wall_ns":5})"
                     "\n"
                     R"({"type":"coll","comm_hash":"0x01","func":"AllRed)";
  ni::test::write_text(dir + "/x.jsonl", text);
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  EXPECT_EQ(res.ops, 1u);
  EXPECT_EQ(res.bad_lines, 0u);
  EXPECT_TRUE(res.files[0].truncated);
  EXPECT_EQ(res.files[0].truncated_lines, 1u);
}

TEST(Reader, UnknownFieldsAndTypesTolerated) {
  const auto dir = ni::test::temp_dir("unknown");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1,"new":{"x":[1]}})"
                     "\n"
                     R"({"type":"hologram","x":1})"
                     "\n"
                     R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","dur_us":3.5,"zzz":"q"})"
                     "\n"
                     R"({"type":"p2p","comm_hash":"0x01","func":"Send","peer":1,"seq":0,"bytes":64,"dur_us":2})"
                     "\n";
  ni::test::write_text(dir + "/x.jsonl", text);
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  EXPECT_EQ(res.ops, 2u);
  EXPECT_EQ(res.unknown_records, 1u);
  EXPECT_EQ(res.files[0].unknown_types.at("hologram"), 1u);
  EXPECT_EQ(res.bad_lines, 0u);
}

TEST(Reader, UpstreamV4Format) {
  const auto dir = ni::test::temp_dir("upstream");
  ni::test::write_upstream_log(dir + "/uphost-rank0.log", 0, 4, 30);
  ni::test::write_upstream_log(dir + "/uphost-rank1.log", 1, 4, 30);
  std::unique_ptr<ana::SummarySink> sink;
  ana::SummaryOptions so;
  so.per_rank = true;
  const auto res = read_summary(dir, so, sink);
  EXPECT_EQ(res.ops, 120u);
  EXPECT_EQ(res.bad_lines, 0u);
  for (const auto& f : res.files) {
    EXPECT_EQ(f.format, ana::FileFormat::kUpstreamV4);
    EXPECT_EQ(f.format_string, "v4.0");
    EXPECT_EQ(f.host, "uphost");
    EXPECT_EQ(f.pid, 77);
  }
  std::uint64_t coll = 0, p2p = 0;
  for (const auto& [k, a] : sink->groups) {
    EXPECT_EQ(k.group, 0xabcdefu);
    EXPECT_EQ(k.nranks, 4);
    if (k.func == ana::Func::kAllReduce) {
      coll += a.count;
      EXPECT_EQ(k.bucket, 20);
      EXPECT_NEAR(a.lat.quantile(0.5), 103.0, 1e-9);
      EXPECT_NEAR(a.bw.max(), 1048576 / 100e3 * 1.5, 1e-5);
    } else {
      EXPECT_EQ(k.func, ana::Func::kSend);
      p2p += a.count;
      // kernel_cpu: the CPU's gettimeofday around the KernelCh callbacks, no
      // measure of the transfer: the line's busbw is not used (model.h: cpu_timed).
      EXPECT_EQ(a.bw.count(), 0u);
    }
  }
  EXPECT_EQ(coll, 60u);
  EXPECT_EQ(p2p, 60u);
  EXPECT_EQ(sink->health.no_start, 120u);  // dump timestamps are not op times
}

TEST(Reader, CorruptInputNeverCrashes) {
  const auto dir = ni::test::temp_dir("corrupt");
  std::mt19937 rng(7);
  std::string good = R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","seq":1,"bytes":8,"dur_us":3.5,"channels":[1,2],"hcas":[{"dev":"m","bytes":3}],"ch_times":[[0,1,2]]})";
  for (int f = 0; f < 30; ++f) {
    std::string text;
    for (int i = 0; i < 200; ++i) {
      std::string l = good;
      const int muts = static_cast<int>(rng() % 4);
      for (int m = 0; m < muts; ++m) l[rng() % l.size()] = static_cast<char>(rng() % 256);
      if (rng() % 5 == 0) l = l.substr(0, rng() % l.size());
      text += l + "\n";
    }
    ni::test::write_text(dir + "/t" + std::to_string(f) + ".jsonl", text);
    std::vector<std::string> lines = {text};
    ni::test::write_gz(dir + "/g" + std::to_string(f) + ".jsonl.gz", lines, 1);
    std::string gz = ni::test::read_text(dir + "/g" + std::to_string(f) + ".jsonl.gz");
    for (int m = 0; m < 3; ++m) gz[10 + rng() % (gz.size() - 10)] = static_cast<char>(rng() % 256);
    ni::test::write_text(dir + "/g" + std::to_string(f) + ".jsonl.gz", gz);
    std::string junk(static_cast<std::size_t>(rng() % 5000), '\0');
    for (auto& c : junk) c = static_cast<char>(rng() % 256);
    if (f % 3 == 0 && junk.size() > 2) junk[0] = '\x1f', junk[1] = '\x8b';
    ni::test::write_text(dir + "/r" + std::to_string(f) + ".log", junk);
  }
  auto d = ana::discover_files({dir});
  ASSERT_EQ(d.files.size(), 90u);
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult res;
  auto c = ana::read_merged<ana::CollectSink>(d.files, ro, 2, res, true);
  EXPECT_GT(res.ops, 0u);
  EXPECT_GT(res.bad_lines, 0u);
  auto v = ana::validate_files(d.files, 2, ro, false);
  EXPECT_FALSE(v.valid);
}

TEST(Summary, ExactPercentilesAndGroups) {
  const auto dir = ni::test::temp_dir("exact");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"hA","pid":1})" "\n";
  // 11 ops, durations 1..11 us -> P50 6, P90 10, P99 10.9; busbw 10/dur.
  for (int i = 1; i <= 11; ++i)
    text += R"({"type":"coll","comm_hash":"0x0a","comm_name":"dp","rank":0,"nranks":2,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":)" +
            std::to_string(i) + R"(,"bytes":3000,"start_wall_ns":1,"dur_us":)" + std::to_string(i) +
            R"(,"busbw_gbs":)" + std::to_string(10.0 / i) + "}\n";
  ni::test::write_text(dir + "/a.jsonl", text);
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  ASSERT_EQ(sink->groups.size(), 1u);
  const auto& [k, a] = *sink->groups.begin();
  EXPECT_EQ(k.bucket, 11);  // 3000 B in [2048, 4096)
  EXPECT_EQ(a.count, 11u);
  EXPECT_EQ(a.bytes, 33000u);
  EXPECT_DOUBLE_EQ(a.lat.quantile(0.5), 6);
  EXPECT_DOUBLE_EQ(a.lat.quantile(0.9), 10);
  EXPECT_NEAR(a.lat.quantile(0.99), 10.9, 1e-6);
  EXPECT_DOUBLE_EQ(a.lat.max(), 11);
  EXPECT_NEAR(a.bw.min(), 10.0 / 11, 1e-5);
  ana::Report r;
  ana::add_summary_sections(r, *sink, res, kDefault);
  std::ostringstream os;
  ana::render(r, ana::Format::kJson, os);
  const auto j = nlohmann::json::parse(os.str());
  EXPECT_EQ(j["summary"]["rows"][0]["comm"], "dp (0x000000000000000a)");
  EXPECT_EQ(j["summary"]["rows"][0]["size"], "2KiB");
  EXPECT_DOUBLE_EQ(j["summary"]["rows"][0]["util_pct"].get<double>(), 100.0);
}

TEST(Summary, SketchBoundedErrorOnLargeInput) {
  ana::QuantileSketch q;
  std::vector<double> v;
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> d(5, 1);
  for (int i = 0; i < 200000; ++i) {
    v.push_back(d(rng));
    q.add(v.back());
  }
  std::sort(v.begin(), v.end());
  EXPECT_FALSE(q.exact());
  for (double p : {0.1, 0.5, 0.9, 0.99}) {
    const double exact = ana::sorted_quantile(v, p);
    EXPECT_NEAR(q.quantile(p) / exact, 1.0, 0.011) << p;
  }
}

// The report folds sketches in batches whose order depends on the spill and
// the threads (report_model.h): the same values must give the same quantiles
// added in any order or merged. Values just above a histogram bucket's edge
// as doubles but not as floats (the exact part keeps floats) were bucketed by
// their double when added after the switch to the histogram, and by their
// float when they came through the exact part.
// The sliding window gives each window's median_of, bit for bit: odd and even
// windows (the clipped ends), ties, runs that rise and fall, windows wider
// than the input, and an input with a NaN (then each window as median_of).
TEST(Stats, RollingMedianIsEachWindowsMedian) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {0, 1, 2, 5, 40, 333}) {
    for (std::size_t h : {0, 1, 2, 7, 15, 400}) {
      for (int shape = 0; shape < 4; ++shape) {
        std::vector<double> x(n);
        for (std::size_t i = 0; i < n; ++i) {
          const double r = static_cast<double>(rng() % 1000) / 37.0;
          x[i] = shape == 0 ? r : shape == 1 ? static_cast<double>(rng() % 4) : shape == 2 ? static_cast<double>(i % 9) * 1.5 : r;
        }
        if (shape == 3 && n > 2) x[n / 2] = std::nan("");
        const std::vector<double> got = ana::rolling_median(x, h);
        ASSERT_EQ(got.size(), n);
        for (std::size_t i = 0; i < n; ++i) {
          std::vector<double> w(x.begin() + static_cast<std::ptrdiff_t>(i >= h ? i - h : 0),
                                x.begin() + static_cast<std::ptrdiff_t>(std::min(n, i + h + 1)));
          const double want = ana::median_of(w);
          if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i]));
          else EXPECT_EQ(got[i], want) << "n " << n << " h " << h << " shape " << shape << " at " << i;
        }
      }
    }
  }
}

TEST(Summary, SketchQuantilesDoNotDependOnTheOrder) {
  const double gamma = (1 + ana::QuantileSketch::kAlpha) / (1 - ana::QuantileSketch::kAlpha);
  double v = 0;
  for (int j = 1200; j < 1400 && v == 0; ++j) {  // edges near 1e-6 * gamma^1300 ~ 2e5
    const double edge = 1e-6 * std::pow(gamma, j);
    const double above = std::nextafter(edge, 2 * edge);
    if (static_cast<double>(static_cast<float>(above)) <= edge) v = above;
  }
  ASSERT_GT(v, 0) << "no edge whose float rounds below it";
  std::vector<double> values;
  for (int i = 0; i < 100; ++i) values.push_back(v / 2);
  for (int i = 0; i < 4900; ++i) values.push_back(v);
  for (int i = 0; i < 100; ++i) values.push_back(v * 2);
  ana::QuantileSketch one;  // one by one: the last 1000 values after the switch to the histogram
  for (double x : values) one.add(x);
  ana::QuantileSketch merged;  // from parts that each stay exact
  for (std::size_t at = 0; at < values.size(); at += 1700) {
    ana::QuantileSketch part;
    for (std::size_t i = at; i < std::min(values.size(), at + 1700); ++i) part.add(values[i]);
    merged.merge(part);
  }
  ana::QuantileSketch reversed;
  for (auto it = values.rbegin(); it != values.rend(); ++it) reversed.add(*it);
  ASSERT_FALSE(one.exact());
  for (double q : {0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99}) {
    EXPECT_EQ(one.quantile(q), merged.quantile(q)) << q;
    EXPECT_EQ(one.quantile(q), reversed.quantile(q)) << q;
  }
}

TEST(Summary, GroupByHostRackAndPerRank) {
  const auto dir = ni::test::temp_dir("groupby");
  JobSpec s;
  s.iterations = 20;
  ni::test::write_job(dir, s);
  ana::SummaryOptions so;
  so.group_by = ana::GroupBy::kRack;
  so.host_map = {{"host0", "rackA"}, {"host1", "rackB"}};
  std::unique_ptr<ana::SummarySink> sink;
  read_summary(dir, so, sink);
  std::set<std::string> labels;
  for (auto& [id, l] : sink->labels) labels.insert(l);
  EXPECT_EQ(labels, (std::set<std::string>{"rackA", "rackB"}));
  so = {};
  so.per_rank = true;
  read_summary(dir, so, sink);
  std::set<int> ranks;
  for (auto& [k, a] : sink->groups) ranks.insert(k.rank);
  EXPECT_EQ(ranks.size(), 8u);
}

TEST(Summary, CrossCheckAgainstPandas) {
  if (::system("/usr/bin/python3 -c 'import pandas' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "pandas not available for /usr/bin/python3 (apt-get install python3-pandas)";
  const auto dir = ni::test::temp_dir("pandas");
  JobSpec s;
  s.iterations = 120;
  s.fault = ni::test::Fault::kBimodal;  // two algo/proto groups
  ni::test::write_job(dir, s);
  JobSpec p;
  p.iterations = 30;
  p.fault = ni::test::Fault::kSlowHca;  // p2p records
  fs::create_directories(dir + "/pp");
  ni::test::write_job(dir + "/pp", p);
  const Cmd py = run(std::string("/usr/bin/python3 ") + NI_CROSSCHECK + " " + dir);
  ASSERT_EQ(py.rc, 0);
  const auto expect = nlohmann::json::parse(py.out);
  std::unique_ptr<ana::SummarySink> sink;
  read_summary(dir, kDefault, sink);
  ASSERT_EQ(sink->groups.size(), expect.size());
  for (const auto& e : expect) {
    ana::GroupKey k;
    ASSERT_TRUE(ana::parse_hash(e["comm_hash"].get<std::string>(), k.group));
    bool found = false;
    for (const auto& [gk, a] : sink->groups) {
      if (gk.group != k.group || ana::to_string(gk.func) != e["func"].get<std::string>() ||
          ana::to_string(gk.algo) != e.value("algo", "unknown") || gk.bucket != e["bucket"].get<int>())
        continue;
      if (!e["proto"].is_null() && ana::to_string(gk.proto) != e["proto"].get<std::string>()) continue;
      found = true;
      EXPECT_EQ(a.count, e["count"].get<std::uint64_t>());
      EXPECT_EQ(a.bytes, e["bytes"].get<std::uint64_t>());
      for (auto [q, name] : {std::pair{0.5, "lat_p50"}, {0.9, "lat_p90"}, {0.99, "lat_p99"}})
        EXPECT_NEAR(a.lat.quantile(q), e[name].get<double>(), 1e-5 * e[name].get<double>()) << name;
      EXPECT_NEAR(a.lat.max(), e["lat_max"].get<double>(), 1e-4);
      EXPECT_NEAR(a.bw.quantile(0.5), e["busbw_p50"].get<double>(), 1e-5 * e["busbw_p50"].get<double>());
      EXPECT_NEAR(a.bw.quantile(0.1), e["busbw_p10"].get<double>(), 1e-5 * e["busbw_p10"].get<double>());
      EXPECT_NEAR(a.bw.min(), e["busbw_min"].get<double>(), 1e-5 * e["busbw_min"].get<double>());
    }
    EXPECT_TRUE(found) << e.dump();
  }
}

TEST(Export, CsvAndJsonlRoundTrip) {
  const auto dir = ni::test::temp_dir("export");
  JobSpec s;
  s.iterations = 10;
  const auto truth = ni::test::write_job(dir, s);
  auto d = ana::discover_files({dir});
  ana::ReadOptions ro;
  ro.progress = 0;
  std::ostringstream csv, jl;
  ana::export_ops(d.files, ana::ExportFormat::kCsv, 2, ro, csv);
  ana::export_ops(d.files, ana::ExportFormat::kJsonl, 2, ro, jl);
  std::istringstream ci(csv.str()), ji(jl.str());
  std::string line;
  std::getline(ci, line);
  EXPECT_EQ(line.substr(0, 14), "host,pid,kind,");
  std::size_t rows = 0;
  while (std::getline(ci, line)) ++rows;
  EXPECT_EQ(rows, truth.ops);
  rows = 0;
  while (std::getline(ji, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("busbw_gbs"));
    EXPECT_EQ(j["kind"], "coll");
    ++rows;
  }
  EXPECT_EQ(rows, truth.ops);
}

namespace {
// A log of one process whose AllReduce calls carry user tags (NCCL 2.31+): 5
// with tag 12, 3 with 9007199254740993 (above 2^53), 2 untagged.
std::string tagged_allreduces() {
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  auto coll = [&](int seq, const char* tag) {
    text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":4,"nnodes":1,"seq":)" + std::to_string(seq) +
            R"(,"func":"AllReduce","bytes":1048576,"dur_us":100,"timing":"gpu","busbw_gbs":10)" +
            (tag != nullptr ? std::string(R"(,"user_tag":)") + tag : std::string()) + "}\n";
  };
  for (int i = 0; i < 5; ++i) coll(i, "12");
  for (int i = 5; i < 8; ++i) coll(i, "9007199254740993");
  for (int i = 8; i < 10; ++i) coll(i, nullptr);
  return text;
}
}  // namespace

// --tag-map files: "tag name" lines (decimal or 0x tags, names with spaces,
// comments, blank and CRLF lines); a bad line, a second name for a tag, an
// empty or missing file are errors that say where.
TEST(Tags, TagMapIsReadOrRefusedWithTheLine) {
  const auto dir = ni::test::temp_dir("tagmap");
  std::map<std::uint64_t, std::string> m;
  std::string err;
  ni::test::write_text(dir + "/ok", "# tag name\n12 layer 12 fwd  # fc1\r\n\n0x1F\tlayer 31 bwd\n12 layer 12 fwd\n");
  ASSERT_TRUE(ana::load_tag_map(dir + "/ok", m, err)) << err;
  const std::map<std::uint64_t, std::string> want = {{12, "layer 12 fwd"}, {31, "layer 31 bwd"}};
  EXPECT_EQ(m, want);
  auto refused = [&](const std::string& name, const std::string& text, const std::string& says) {
    std::map<std::uint64_t, std::string> bad;
    std::string e;
    if (!text.empty()) ni::test::write_text(dir + "/" + name, text);
    EXPECT_FALSE(ana::load_tag_map(dir + "/" + name, bad, e)) << name;
    EXPECT_NE(e.find(says), std::string::npos) << name << ": " << e;
  };
  refused("noname", "12 a\n13\n", "noname:2: expected \"tag name\"");
  refused("zero", "0 none\n", "zero:1: expected");
  refused("twice", "12 a\n0xc b\n", "twice:2: tag 0xc is named a already");
  refused("empty", "# nothing\n\n", "tag map " + dir + "/empty names no tag");
  refused("missing", "", "cannot read tag map " + dir + "/missing");
}

// The user_tag column (NCCL 2.31+): the call's tag as an exact 64-bit integer
// (above 2^53 too), empty in CSV and null in JSON lines for an untagged call.
TEST(Export, UserTagColumn) {
  const auto dir = ni::test::temp_dir("export_tag");
  std::string text = tagged_allreduces();
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  auto d = ana::discover_files({dir});
  ana::ReadOptions ro;
  ro.progress = 0;
  const std::map<std::string, int> want = {{"12", 5}, {"9007199254740993", 3}, {"", 2}};
  std::ostringstream csv, jl;
  ana::export_ops(d.files, ana::ExportFormat::kCsv, 1, ro, csv);
  std::istringstream ci(csv.str());
  std::string line;
  std::getline(ci, line);
  ASSERT_EQ(line.substr(line.rfind(',') + 1), "user_tag");
  std::map<std::string, int> got;
  while (std::getline(ci, line)) ++got[line.substr(line.rfind(',') + 1)];
  EXPECT_EQ(got, want);
  ana::export_ops(d.files, ana::ExportFormat::kJsonl, 1, ro, jl);
  std::istringstream ji(jl.str());
  got.clear();
  while (std::getline(ji, line)) {
    const auto j = nlohmann::json::parse(line);
    ASSERT_TRUE(j.contains("user_tag"));
    ++got[j["user_tag"].is_null() ? "" : std::to_string(j["user_tag"].get<std::uint64_t>())];
  }
  EXPECT_EQ(got, want);
}

TEST(Validate, CleanValidCorruptInvalidTruncatedReported) {
  const auto dir = ni::test::temp_dir("validate");
  JobSpec s;
  s.iterations = 10;
  ni::test::write_job(dir, s);
  ana::ReadOptions ro;
  ro.progress = 0;
  auto v = ana::validate_files(ana::discover_files({dir}).files, 2, ro, false);
  EXPECT_TRUE(v.valid);
  // Truncated: still valid unless strict.
  std::vector<std::string> lines = {R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})"};
  for (int i = 0; i < 300; ++i)
    lines.push_back(R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","seq":)" + std::to_string(i) +
                    R"(,"bytes":8,"start_wall_ns":1,"dur_us":1})");
  ni::test::write_gz(dir + "/t.jsonl.gz", lines, 50, 30);
  v = ana::validate_files(ana::discover_files({dir}).files, 2, ro, false);
  EXPECT_TRUE(v.valid);
  EXPECT_TRUE(v.truncated);
  EXPECT_FALSE(ana::validate_files(ana::discover_files({dir}).files, 2, ro, true).valid);
  // Schema problem: op without seq, newer format version.
  ni::test::write_text(dir + "/bad.jsonl",
                      R"({"type":"meta","format":"nccl-inspector-log","format_version":99,"host":"h","pid":1})" "\n"
                      R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","bytes":8,"start_wall_ns":1,"dur_us":1})" "\n");
  v = ana::validate_files(ana::discover_files({dir}).files, 2, ro, false);
  EXPECT_FALSE(v.valid);
  std::ostringstream os;
  ana::render(v.report, ana::Format::kTable, os);
  EXPECT_NE(os.str().find("unsupported format_version 99"), std::string::npos);
  EXPECT_NE(os.str().find("op record without seq"), std::string::npos);
}

// seq_gaps counts the numbers missing per (comm, rank, func) in sequence
// order, not forward jumps in file order (records reach a file in completion
// order); an op without start_wall_ns (no clock estimate yet: allowed by
// docs/log-format.md) is valid.
TEST(Validate, GapsInSequenceOrderAndOpsWithoutStartTime) {
  const auto dir = ni::test::temp_dir("validate_gaps");
  auto file = [&](const std::string& name, const std::vector<int>& seqs) {
    std::string t = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
    for (int q : seqs)
      t += R"({"type":"coll","comm_hash":"0x01","rank":0,"func":"AllReduce","seq":)" + std::to_string(q) +
           R"(,"bytes":8,"dur_us":1})" "\n";  // no start_wall_ns
    // Another function of the same comm has its own numbers.
    t += R"({"type":"coll","comm_hash":"0x01","rank":0,"func":"AllGather","seq":0,"bytes":8,"dur_us":1})" "\n";
    ni::test::write_text(dir + "/" + name, t);
  };
  file("shuffled.jsonl", {0, 1, 3, 2, 5, 4, 8, 6, 7, 9});  // nothing missing
  file("holes.jsonl", {0, 1, 2, 5, 6, 10, 9});              // 3, 4, 7, 8 missing
  ana::ReadOptions ro;
  ro.progress = 0;
  const auto v = ana::validate_files(ana::discover_files({dir}).files, 1, ro, false);
  EXPECT_TRUE(v.valid);
  const auto& rows = v.report.sections[0].table.rows;
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    const std::string path = r[0].text();
    EXPECT_EQ(r[9].i, path.find("holes") != std::string::npos ? 4 : 0) << path;
    EXPECT_EQ(r[12].text(), "ok") << path;
  }
}

// csv is one table (pandas reads it as one): the first section, or the one
// --section names; every format takes --section; numbers carry no more
// digits than 4 decimals past what the table shows.
TEST(Cli, CsvIsOneTableAndSectionPicksOne) {
  const std::string cli = NI_CLI;
  const auto dir = ni::test::temp_dir("cli_section");
  JobSpec s;
  s.iterations = 20;
  ni::test::write_job(dir, s);
  auto rows_of = [](const std::string& csv) {
    std::vector<std::string> lines;
    std::istringstream in(csv);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  };
  auto fields = [](const std::string& line) {  // outside quotes
    std::size_t n = 1;
    bool q = false;
    for (char c : line) {
      if (c == '"') q = !q;
      if (c == ',' && !q) ++n;
    }
    return n;
  };
  Cmd c = run(cli + " summary --no-progress -f csv " + dir);
  ASSERT_EQ(c.rc, 0);
  auto lines = rows_of(c.out);
  ASSERT_GT(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("comm,op,", 0), 0u) << lines[0];
  for (const auto& l : lines) {
    EXPECT_NE(l[0], '#') << l;
    EXPECT_EQ(fields(l), fields(lines[0])) << l;
    // no number with more than 6 decimals (the widest column precision is 2)
    std::size_t run_digits = 0;
    bool after_dot = false;
    for (char ch : l) {
      if (ch == '.') {
        after_dot = true;
        run_digits = 0;
      } else if (std::isdigit(static_cast<unsigned char>(ch)) && after_dot) {
        EXPECT_LE(++run_digits, 6u) << l;
      } else {
        after_dot = false;
      }
    }
  }
  c = run(cli + " summary --no-progress -f csv --section health " + dir);
  ASSERT_EQ(c.rc, 0);
  EXPECT_EQ(rows_of(c.out)[0], "item,value,detail");
  c = run(cli + " summary --no-progress -f json --section health " + dir);
  ASSERT_EQ(c.rc, 0);
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_TRUE(j.contains("health"));
  EXPECT_FALSE(j.contains("summary"));
  EXPECT_EQ(run(cli + " summary --no-progress --section nope " + dir).rc, 2);
}

TEST(Cli, ErrorsAndExitCodes) {
  const std::string cli = NI_CLI;
  EXPECT_EQ(run(cli + " summary /nonexistent/dir").rc, 2);
  const auto empty = ni::test::temp_dir("cli_empty");
  EXPECT_EQ(run(cli + " summary " + empty).rc, 2);
  ni::test::write_text(empty + "/x.log", "hello\nworld\n");
  EXPECT_EQ(run(cli + " summary " + empty).rc, 2);  // no ops, unknown format
  EXPECT_EQ(run(cli + " validate " + empty).rc, 1);
  const auto dir = ni::test::temp_dir("cli_ok");
  JobSpec s;
  s.iterations = 20;
  ni::test::write_job(dir, s);
  for (const char* f : {"table", "csv", "json", "markdown"}) {
    const Cmd c = run(cli + " summary --no-progress -f " + f + " " + dir);
    EXPECT_EQ(c.rc, 0) << f;
    EXPECT_NE(c.out.find("AllReduce"), std::string::npos) << f;
  }
  const Cmd j = run(cli + " summary -f json --peak-busbw AllReduce=300 " + dir);
  ASSERT_EQ(j.rc, 0);
  const auto js = nlohmann::json::parse(j.out);
  EXPECT_TRUE(js.contains("health"));
  // The fixture's clock records say 800 ns: the health table reports the
  // processes' final estimates.
  bool clock_row = false;
  for (const auto& row : js["health"]["rows"])
    if (row["item"] == "clock uncertainty (us)") {
      clock_row = true;
      EXPECT_DOUBLE_EQ(row["value"].get<double>(), 0.8);
    }
  EXPECT_TRUE(clock_row);
  EXPECT_EQ(run(cli + " summary --peak-busbw Bogus=3 " + dir).rc, 2);
  EXPECT_EQ(run(cli + " summary --group-by rack " + dir).rc, 2);
  EXPECT_EQ(run(cli + " validate " + dir).rc, 0);
  EXPECT_EQ(run(cli + " export -f jsonl " + dir).rc, 0);
}

TEST(Reader, FastScannerAgreesWithSimdjson) {
  // The fast scanner (default) and simdjson's DOM path (validate mode) must read the same ops.
  const auto dir = ni::test::temp_dir("fastpath");
  JobSpec s;
  s.iterations = 30;
  s.fault = ni::test::Fault::kDegradedChannel;
  ni::test::write_job(dir, s);
  ni::test::write_text(dir + "/tricky.jsonl",
                      R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h\"q","pid":1,"job":{"job_id":"7"}})" "\n"
                      R"({ "type" : "coll" , "comm_hash":"0x02","comm_name":"a\nb","func":"AllReduce","seq":1e2,"bytes":4096.0,"dur_us":-0,"x":["]",{"}":"["}],"hcas":[{"dev":3,"bytes":9}]} )" "\n"
                      R"({"type":"coll","comm_hash":"0x02","func":"Reduce","seq":-3,"bytes":18446744073709551615,"dur_us":1.5e1,"rank":-9223372036854775808,"graph":true,"reclaimed":true})" "\n"
                      R"({"type":"coll","comm_hash":"0x02","func":"Reduce","seq":1,"bytes":1,"dur_us":1,"extra":[1,2,}] })" "\n"
                      R"({"type":"coll","comm_hash":"0x02","func":"Reduce","seq":1,"bytes":1,"dur_us":1}{})" "\n");
  const auto files = ana::discover_files({dir}).files;
  ana::ReadOptions fast, dom;
  fast.progress = dom.progress = 0;
  dom.validate = true;
  ana::ReadResult rf, rd;
  auto a = ana::read_merged<ana::CollectSink>(files, fast, 1, rf, true);
  auto b = ana::read_merged<ana::CollectSink>(files, dom, 1, rd, true);
  ASSERT_EQ(a->ops.size(), b->ops.size());
  EXPECT_EQ(rf.bad_lines, rd.bad_lines);
  EXPECT_EQ(rf.bad_lines, 2u);  // the unbalanced nested value and the trailing object
  for (std::size_t i = 0; i < a->ops.size(); ++i) {
    const auto &x = a->ops[i], &y = b->ops[i];
    EXPECT_EQ(x.comm_hash, y.comm_hash);
    EXPECT_EQ(x.seq, y.seq) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
    EXPECT_EQ(x.rank, y.rank) << i;
    EXPECT_EQ(x.func, y.func);
    EXPECT_DOUBLE_EQ(x.dur_us, y.dur_us);
    EXPECT_EQ(std::isnan(x.busbw_gbs), std::isnan(y.busbw_gbs));
    if (!std::isnan(x.busbw_gbs)) {
      EXPECT_DOUBLE_EQ(x.busbw_gbs, y.busbw_gbs);
    }
    EXPECT_EQ(x.ch_balance, y.ch_balance);
    EXPECT_EQ(x.nchannels, y.nchannels) << i;
    EXPECT_EQ(x.start_wall_ns, y.start_wall_ns);
    EXPECT_EQ(x.flags, y.flags);
    EXPECT_EQ(a->extra[i].hcas.size(), b->extra[i].hcas.size());
    EXPECT_EQ(a->extra[i].slowest_channel, b->extra[i].slowest_channel);
  }
  for (std::size_t f = 0; f < rf.files.size(); ++f) {
    EXPECT_EQ(rf.files[f].host, rd.files[f].host);
    EXPECT_EQ(rf.files[f].job_id, rd.files[f].job_id);
  }
}

namespace {
// Random JSON lines for the fast scanner's edge cases: numbers of every length (SWAR
// blocks of 8, decimals split at every position, fallbacks past 15 digits), hex
// hashes of every length and case, whitespace around tokens, key orders that change
// (the cached key patterns), keys near the 16-byte pattern limit, flat/nested/odd
// arrays, escapes (the DOM path), marks and stats (wall_ns converted on demand).
std::string random_lines(std::mt19937_64& rng, int n) {
  auto pick = [&](int k) { return static_cast<int>(rng() % static_cast<std::uint64_t>(k)); };
  auto digits = [&](int len, bool lead_nonzero) {
    std::string d;
    for (int i = 0; i < len; ++i) d += static_cast<char>('0' + ((i == 0 && lead_nonzero) ? 1 + pick(9) : pick(10)));
    return d;
  };
  auto integer = [&](int max_len, bool allow_neg) {
    const int len = 1 + pick(max_len);
    std::string v = len == 1 ? digits(1, false) : digits(len, true);
    if (len == 20) v = "1" + std::to_string(pick(8)) + digits(18, false);  // <= UINT64_MAX (simdjson rejects more)
    return (allow_neg && pick(4) == 0 && v != "0" ? "-" : "") + v;
  };
  auto decimal = [&]() {
    std::string v = pick(5) == 0 ? "-" : "";
    const int il = 1 + pick(pick(3) == 0 ? 17 : 6);
    v += il == 1 ? digits(1, false) : digits(il, true);
    if (pick(5) != 0) v += "." + digits(1 + pick(pick(3) == 0 ? 16 : 7), false);
    if (pick(10) == 0) v += std::string(pick(2) ? "e" : "E") + (pick(2) ? "-" : pick(2) ? "+" : "") + digits(1 + pick(2), true);
    return v;
  };
  auto hexhash = [&]() {
    std::string h = pick(6) == 0 ? "0X" : "0x";
    const int len = pick(8) == 0 ? 1 + pick(18) : 16;
    for (int i = 0; i < len; ++i) {
      const char c = "0123456789abcdef"[pick(16)];
      h += pick(3) == 0 ? static_cast<char>(std::toupper(c)) : c;
    }
    if (pick(12) == 0) h[2 + static_cast<std::size_t>(pick(len))] = "gG:/@`x "[pick(8)];  // not a hex digit
    return pick(15) == 0 ? digits(1 + pick(20), true) : h;  // sometimes a decimal string
  };
  auto ws = [&]() { return pick(12) == 0 ? std::string(" \t"[pick(2)] == '\t' ? "\t" : " ") : std::string(); };
  const char* funcs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv", "Bogus"};
  const char* algos[] = {"RING", "TREE", "NVLS", "COLLNET_DIRECT", "PAT", "unknown-algorithm-name"};
  const char* protos[] = {"SIMPLE", "LL", "LL128"};
  const char* timings[] = {"gpu", "cpu", "none", "kernel"};
  const char* transports[] = {"network", "intra_node", "shm"};
  std::string out;
  for (int i = 0; i < n; ++i) {
    std::vector<std::pair<std::string, std::string>> f;
    const int kind = pick(40);
    if (kind == 0) {
      f = {{"type", "\"mark\""}, {"wall_ns", integer(19, true)}, {"label", "\"iter\""}};
    } else if (kind == 1) {
      f = {{"type", "\"stats\""}, {"wall_ns", integer(18, false)}, {"records_written", integer(8, false)},
           {"dropped", "{\"queue_full\":" + integer(4, false) + "}"}};
    } else {
      f = {{"type", pick(20) ? "\"coll\"" : "\"p2p\""},
           {"wall_ns", integer(19, false)},
           {"comm_hash", pick(30) ? "\"" + hexhash() + "\"" : integer(19, false)},
           {"rank", pick(30) ? integer(9, true) : pick(2) ? "-9.5e30" : "1e19"},  // out of range: absent
           {"nranks", integer(4, false)},
           {"nnodes", integer(3, false)},
           {"seq", pick(10) ? integer(20, false) : decimal()},
           {"func", std::string("\"") + funcs[pick(7)] + "\""},
           {"bytes", pick(10) ? integer(20, false) : decimal()},
           {"algo", std::string("\"") + algos[pick(6)] + "\""},
           {"proto", std::string("\"") + protos[pick(3)] + "\""},
           {"start_wall_ns", integer(18, true)},
           {"dur_us", decimal()},
           {"timing", std::string("\"") + timings[pick(4)] + "\""},
           {"busbw_gbs", decimal()},
           {"ch_balance", decimal()},
           {"transport", std::string("\"") + transports[pick(3)] + "\""}};
      switch (pick(7)) {  // the channels array, flat (any length) or not
        case 0: f.emplace_back("channels", "[]"); break;
        case 1: f.emplace_back("channels", "[ ]"); break;
        case 2: f.emplace_back("channels", "[[0,1],[2]]"); break;
        case 3: f.emplace_back("channels", "[\"a,b\",\"]\"]"); break;
        default: {
          std::string a = "[";
          const int len = pick(40);
          for (int c = 0; c < len; ++c) a += (c ? (pick(6) ? "," : " , ") : "") + std::to_string(c);
          f.emplace_back("channels", a + "]");
        }
      }
      if (pick(3) == 0) f.emplace_back("nchannels", integer(2, false));
      if (pick(8) == 0) f.emplace_back("reclaimed", pick(2) ? "true" : "false");
      if (pick(8) == 0) f.emplace_back("graph", pick(2) ? "true" : "null");
      if (pick(6) == 0) f.emplace_back("abcdefghijklm", "1");  // 13-byte key: the longest a pattern holds
      if (pick(6) == 0) f.emplace_back("abcdefghijklmn", "\"x\"");  // 14: scanned every time
      if (pick(10) == 0) f.emplace_back("comm_name", "\"a\\\"b\"");  // an escape: the DOM path
      if (pick(10) == 0) f.emplace_back("ran\\u006b", "3");  // an escaped key ("rank")
      if (pick(5) == 0) std::swap(f[static_cast<std::size_t>(1 + pick(5))], f[static_cast<std::size_t>(6 + pick(8))]);
    }
    std::string line = ws() + "{";
    for (std::size_t k = 0; k < f.size(); ++k) {
      if (k) line += ws() + "," + ws();
      line += "\"" + f[k].first + "\"" + ws() + ":" + ws() + f[k].second;
    }
    line += ws() + "}" + (pick(20) == 0 ? " \r" : "");
    out += line + "\n";
  }
  return out;
}
}  // namespace

TEST(Reader, FastScannerEdgeCasesAcrossMembers) {
  // Every layout (plain, one member, members split every few bytes so that lines and
  // numbers straddle members) and both parsers (fast, DOM) read the same ops.
  std::mt19937_64 rng(7);
  const std::string text = random_lines(rng, 3000);
  const auto dir = ni::test::temp_dir("fastedges");
  ni::test::write_text(dir + "/plain.jsonl", text);
  ni::test::write_gz_split(dir + "/one.jsonl.gz", text, 1u << 30);
  ni::test::write_gz_split(dir + "/split7.jsonl.gz", text, 7);
  ni::test::write_gz_split(dir + "/split61.jsonl.gz", text, 61);
  ni::test::write_gz_split(dir + "/split4096.jsonl.gz", text, 4096);
  std::vector<std::unique_ptr<ana::CollectSink>> sinks;
  std::vector<ana::ReadResult> results;
  for (const char* file : {"plain.jsonl", "one.jsonl.gz", "split7.jsonl.gz", "split61.jsonl.gz", "split4096.jsonl.gz"}) {
    for (bool validate : {false, true}) {
      ana::ReadOptions o;
      o.progress = 0;
      o.validate = validate;
      results.emplace_back();
      sinks.push_back(ana::read_merged<ana::CollectSink>({dir + "/" + file}, o, 1, results.back(), false));
    }
  }
  const auto& ref = *sinks[1];  // plain, DOM
  ASSERT_GT(ref.ops.size(), 2000u);
  for (std::size_t r = 0; r < sinks.size(); ++r) {
    SCOPED_TRACE("layout/parser " + std::to_string(r));
    EXPECT_EQ(results[r].bad_lines, results[1].bad_lines);
    EXPECT_EQ(results[r].lines, results[1].lines);
    ASSERT_EQ(sinks[r]->ops.size(), ref.ops.size());
    for (std::size_t i = 0; i < ref.ops.size(); ++i) {
      const auto &x = sinks[r]->ops[i], &y = ref.ops[i];
      ASSERT_EQ(x.comm_hash, y.comm_hash) << i;
      EXPECT_EQ(x.seq, y.seq) << i;
      EXPECT_EQ(x.bytes, y.bytes) << i;
      EXPECT_EQ(x.rank, y.rank) << i;
      EXPECT_EQ(x.nranks, y.nranks) << i;
      EXPECT_EQ(x.nnodes, y.nnodes) << i;
      EXPECT_EQ(x.func, y.func) << i;
      EXPECT_EQ(x.algo, y.algo) << i;
      EXPECT_EQ(x.proto, y.proto) << i;
      EXPECT_EQ(x.timing, y.timing) << i;
      EXPECT_EQ(x.transport, y.transport) << i;
      EXPECT_EQ(x.kind, y.kind) << i;
      // Bit-identical doubles: both parsers round correctly.
      EXPECT_EQ(std::isnan(x.dur_us), std::isnan(y.dur_us)) << i;
      if (!std::isnan(y.dur_us)) {
        EXPECT_EQ(x.dur_us, y.dur_us) << i;
      }
      EXPECT_EQ(std::isnan(x.busbw_gbs), std::isnan(y.busbw_gbs)) << i;
      if (!std::isnan(y.busbw_gbs)) {
        EXPECT_EQ(x.busbw_gbs, y.busbw_gbs) << i;
      }
      EXPECT_EQ(x.ch_balance, y.ch_balance) << i;
      EXPECT_EQ(x.nchannels, y.nchannels) << i;
      EXPECT_EQ(x.start_wall_ns, y.start_wall_ns) << i;
      EXPECT_EQ(x.flags, y.flags) << i;
    }
    const auto &fx = results[r].files[0], &fy = results[1].files[0];
    ASSERT_EQ(fx.marks.size(), fy.marks.size());
    for (std::size_t m = 0; m < fx.marks.size(); ++m) EXPECT_EQ(fx.marks[m].wall_ns, fy.marks[m].wall_ns) << m;
    EXPECT_EQ(fx.stats.wall_ns, fy.stats.wall_ns);
    EXPECT_EQ(fx.stats.records_written, fy.stats.records_written);
  }
}

TEST(Reader, RepeatedFieldTextThenChanges) {
  // The scanner reuses a field whose whole text repeats from the previous line: runs of
  // identical lines, then one field changed in every way that keeps the line valid
  // (value longer, shorter, same length, type, whitespace, the last field, field order)
  // must read exactly as the DOM parser reads them.
  const std::string base = R"({"type":"coll","comm_hash":"0x00000000000000ab","rank":3,"nranks":16,"nnodes":2,"func":"AllReduce","bytes":1024,"algo":"RING","channels":[0,1,2,3],"dur_us":12.5,"busbw_gbs":7.25,"transport":"network"})";
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"\"nranks\":16,", "\"nranks\":161,"},        {"\"nranks\":16,", "\"nranks\":1,"},
      {"\"nranks\":16,", "\"nranks\":17,"},         {"\"nranks\":16,", "\"nranks\":16 ,"},
      {"\"nranks\":16,", "\"nranks\":\"16\","},     {"\"nranks\":16,", "\"nranks\": 16,"},
      {"\"rank\":3,", "\"rank\":3.5,"},             {"\"rank\":3,", "\"rank\":-3,"},
      {"\"algo\":\"RING\",", "\"algo\":\"TREE\","}, {"\"algo\":\"RING\",", "\"algo\":\"RINGS\","},
      {"\"channels\":[0,1,2,3],", "\"channels\":[0,1,2],"}, {"\"channels\":[0,1,2,3],", "\"channels\":[0,1,2,3,4],"},
      {"\"transport\":\"network\"}", "\"transport\":\"intra_node\"}"},
      {"\"transport\":\"network\"}", "\"transport\":\"network\" }"},
      {"\"transport\":\"network\"}", "\"transport\":\"network\",\"graph\":true}"},
      {"\"dur_us\":12.5,", "\"dur_us\":12.25,"},    {"\"dur_us\":12.5,", "\"dur_us\":1e1,"},
      {"\"nnodes\":2,\"func\"", "\"func\""},        {"\"nnodes\":2,", "\"nnodes\":2,\"nnodes\":3,"}};
  std::string text;
  for (const auto& [from, to] : edits) {
    for (int i = 0; i < 12; ++i) text += base + "\n";  // learn, hit, and past the pause after a change
    std::string changed = base;
    const auto at = changed.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    changed.replace(at, from.size(), to);
    for (int i = 0; i < 3; ++i) text += changed + "\n";
  }
  const auto dir = ni::test::temp_dir("memo");
  ni::test::write_text(dir + "/memo.jsonl", text);
  ana::ReadOptions fast, dom;
  fast.progress = dom.progress = 0;
  dom.validate = true;
  ana::ReadResult rf, rd;
  auto a = ana::read_merged<ana::CollectSink>({dir + "/memo.jsonl"}, fast, 1, rf, false);
  auto b = ana::read_merged<ana::CollectSink>({dir + "/memo.jsonl"}, dom, 1, rd, false);
  EXPECT_EQ(rf.bad_lines, 0u);
  EXPECT_EQ(rd.bad_lines, 0u);
  ASSERT_EQ(a->ops.size(), b->ops.size());
  ASSERT_EQ(a->ops.size(), edits.size() * 15);
  for (std::size_t i = 0; i < a->ops.size(); ++i) {
    const auto &x = a->ops[i], &y = b->ops[i];
    EXPECT_EQ(x.nranks, y.nranks) << i;
    EXPECT_EQ(x.rank, y.rank) << i;
    EXPECT_EQ(x.nnodes, y.nnodes) << i;
    EXPECT_EQ(x.algo, y.algo) << i;
    EXPECT_EQ(x.nchannels, y.nchannels) << i;
    EXPECT_EQ(x.transport, y.transport) << i;
    EXPECT_EQ(x.dur_us, y.dur_us) << i;
    EXPECT_EQ(x.busbw_gbs, y.busbw_gbs) << i;
    EXPECT_EQ(x.flags, y.flags) << i;
  }
  // Spot checks against the text itself.
  EXPECT_EQ(a->ops[12].nranks, 161);
  EXPECT_EQ(a->ops[15 + 12].nranks, 1);
}

TEST(Reader, SinkWithoutOptionalFieldsGetsDefaults) {
  // A sink that declares no optional fields gets the same ops, with seq, nchannels
  // and ch_balance left at their defaults.
  struct Lean : ana::CollectSink {
    std::uint32_t op_fields() const override { return 0; }
  };
  const auto dir = ni::test::temp_dir("leanfields");
  JobSpec s;
  s.iterations = 20;
  ni::test::write_job(dir, s);
  const auto files = ana::discover_files({dir}).files;
  ana::ReadOptions o;
  o.progress = 0;
  ana::CollectSink full;
  Lean lean;
  ana::read_logs(files, o, {&full});
  ana::read_logs(files, o, {&lean});
  ASSERT_EQ(full.ops.size(), lean.ops.size());
  ASSERT_FALSE(full.ops.empty());
  bool any_seq = false;
  for (std::size_t i = 0; i < full.ops.size(); ++i) {
    EXPECT_EQ(lean.ops[i].seq, 0u);
    EXPECT_EQ(lean.ops[i].nchannels, 0u);
    EXPECT_EQ(lean.ops[i].ch_balance, -1.0f);
    EXPECT_EQ(lean.ops[i].comm_hash, full.ops[i].comm_hash);
    EXPECT_EQ(lean.ops[i].dur_us, full.ops[i].dur_us);
    EXPECT_EQ(lean.ops[i].start_wall_ns, full.ops[i].start_wall_ns);
    any_seq = any_seq || full.ops[i].seq != 0;
  }
  EXPECT_TRUE(any_seq);
}

TEST(Reader, ParseHashEveryLengthAndCase) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 20000; ++iter) {
    const std::size_t len = rng() % 20;  // 0..19 digits: 17+ are too long for 64 bits
    std::string digits;
    for (std::size_t i = 0; i < len; ++i) {
      const char c = "0123456789abcdefABCDEF"[rng() % 22];
      digits += c;
    }
    const bool bad = len > 0 && rng() % 4 == 0;
    if (bad) digits[rng() % len] = "gGzZ:/@`.- \x7f\x80"[rng() % 14];
    const std::string s = (rng() % 2 ? "0x" : "0X") + digits;
    std::uint64_t got = 12345;
    const bool ok = ana::parse_hash(s, got);
    const bool want_ok = !bad && len >= 1 && len <= 16;
    ASSERT_EQ(ok, want_ok) << s;
    if (ok) {
      EXPECT_EQ(got, std::stoull(digits, nullptr, 16)) << s;
    } else {
      EXPECT_EQ(got, 12345u) << s;  // untouched on failure
    }
  }
  std::uint64_t v = 0;
  EXPECT_TRUE(ana::parse_hash("0x8D3a5C7e91B20f44", v));
  EXPECT_EQ(v, 0x8d3a5c7e91b20f44ULL);
  EXPECT_TRUE(ana::parse_hash("0xFFFFFFFFFFFFFFFF", v));
  EXPECT_EQ(v, ~0ULL);
  EXPECT_TRUE(ana::parse_hash("0x0000000100000002", v));
  EXPECT_EQ(v, 0x100000002ULL);
  EXPECT_TRUE(ana::parse_hash("12345678901234567890", v));
  EXPECT_EQ(v, 12345678901234567890ULL);
  EXPECT_FALSE(ana::parse_hash("0x", v));
  EXPECT_FALSE(ana::parse_hash("0x1234567g", v));
  EXPECT_FALSE(ana::parse_hash("0x00000000000000001", v));  // 17 digits
}

TEST(Summary, PeakBusbwPerOpAndLinkType) {
  std::map<std::string, double> peaks;
  EXPECT_TRUE(ana::parse_peak("AllReduce=40", peaks));
  EXPECT_TRUE(ana::parse_peak("intra_node=20", peaks));
  EXPECT_TRUE(ana::parse_peak("network=10", peaks));
  EXPECT_FALSE(ana::parse_peak("Bogus=3", peaks));
  EXPECT_FALSE(ana::parse_peak("AllReduce=-1", peaks));
  const auto dir = ni::test::temp_dir("peaks");
  JobSpec s;
  s.iterations = 20;
  ni::test::write_job(dir, s);
  ana::SummaryOptions so;
  so.peak_busbw = peaks;
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, so, sink);
  ana::Report r;
  ana::add_summary_sections(r, *sink, res, so);
  for (const auto& row : r.sections[0].table.rows) {
    const double p50 = row[13].d, util = row[16].d;
    const double peak = row[1].text() == "AllReduce" ? 40 : 20;  // AllGather on tp is intra_node
    EXPECT_NEAR(util, 100.0 * p50 / peak, 0.2) << row[1].text();
  }
}

// CPU-timed ops (here enqueue-timed copy-engine AllGathers whose lines carry
// the 22,075 GB/s an older plugin computed from 0.6 us) keep their latency but
// feed no bandwidth: the GPU-timed AllGather row is the peak (util 100%, not
// 0.5%), the CPU row has no busbw and says "cpu", and health counts them.
TEST(Summary, CpuTimedOpsFeedNoBandwidthUtilOrPeak) {
  const auto dir = ni::test::temp_dir("cpu_timed");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  for (int i = 0; i < 20; ++i) {
    char line[512];
    std::snprintf(line, sizeof line,
                  R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":8,"nnodes":1,"seq":%d,"func":"AllGather",)"
                  R"("bytes":1048576,"algo":"RING","proto":"SIMPLE","dur_us":%d,"timing":"gpu","busbw_gbs":100})"
                  "\n",
                  i, 100 + i);
    text += line;
    std::snprintf(line, sizeof line,
                  R"({"type":"ce","comm_hash":"0x0a","rank":0,"nranks":8,"nnodes":1,"seq":%d,"func":"AllGather",)"
                  R"("bytes":1048576,"dur_us":0.6,"timing":"enqueue_cpu","algbw_gbs":29434,"busbw_gbs":22075})"
                  "\n",
                  100 + i);
    text += line;
  }
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json " + dir);
  ASSERT_EQ(c.rc, 0);
  const auto js = nlohmann::json::parse(c.out);
  int gpu_rows = 0, cpu_rows = 0;
  for (const auto& row : js["summary"]["rows"]) {
    if (row["timing"] == "gpu") {
      ++gpu_rows;
      EXPECT_DOUBLE_EQ(row["busbw_p50_gbs"].get<double>(), 100.0);
      EXPECT_DOUBLE_EQ(row["util_pct"].get<double>(), 100.0);
    } else {
      ASSERT_EQ(row["timing"], "cpu");
      ++cpu_rows;
      EXPECT_TRUE(row["busbw_p50_gbs"].is_null()) << row.dump();
      EXPECT_TRUE(row["util_pct"].is_null()) << row.dump();
      EXPECT_DOUBLE_EQ(row["lat_p50_us"].get<double>(), 0.6);
    }
  }
  EXPECT_EQ(gpu_rows, 1);
  EXPECT_EQ(cpu_rows, 1);
  bool counted = false;
  for (const auto& row : js["health"]["rows"])
    if (row["item"] == "ops without busbw") {
      counted = true;
      EXPECT_EQ(row["value"].get<int>(), 20);
      EXPECT_NE(row["detail"].get<std::string>().find("20 CPU-timed"), std::string::npos);
    }
  EXPECT_TRUE(counted);
}

// Records the plugin wrote CPU-timed because NCCL's kernel stamps were out of
// step (kernel_desync) are counted in their own health row, which says why;
// a log without them has no such row.
TEST(Summary, KernelDesyncRecordsAreCountedInHealth) {
  const auto dir = ni::test::temp_dir("kernel_desync");
  for (int desync : {0, 5}) {
    std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
    for (int i = 0; i < 10; ++i)
      text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":8,"nnodes":1,"seq":)" + std::to_string(i) +
              R"(,"func":"AllReduce","bytes":1048576,"dur_us":100,"timing":"gpu","busbw_gbs":10})" "\n";
    for (int i = 0; i < desync; ++i)
      text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":8,"nnodes":1,"seq":)" + std::to_string(10 + i) +
              R"(,"func":"AllReduce","bytes":1048576,"dur_us":3.5,"timing":"enqueue_cpu","kernel_desync":true})" "\n";
    const std::string sub = dir + "/d" + std::to_string(desync);
    std::filesystem::create_directories(sub);
    ni::test::write_text(sub + "/h-pid1.jsonl", text);
    const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json " + sub);
    ASSERT_EQ(c.rc, 0) << c.out;
    const auto js = nlohmann::json::parse(c.out);
    int rows = 0;
    for (const auto& h : js["health"]["rows"])
      if (h["item"] == "GPU times NCCL misattributed") {
        ++rows;
        EXPECT_EQ(h["value"].get<int>(), desync);
        EXPECT_NE(h["detail"].get<std::string>().find("Send/Recv to itself"), std::string::npos) << h.dump();
      }
    EXPECT_EQ(rows, desync ? 1 : 0);
  }
}

// An AlltoAll whose parts are CPU-timed (NCCL 2.26+: the part to the rank
// itself puts the kernel stamps out of step) is a summary row with its count
// and bytes, no latency and no bandwidth, and the notes say why; a GPU-timed
// one keeps its span, unless a part has no start (no clock estimate yet):
// counted, no time, a note. Its parts stay in the Send/Recv rows.
TEST(Summary, AlltoAllOfCpuTimedPartsIsCountedWithoutATime) {
  const auto dir = ni::test::temp_dir("asm_cpu");
  const int n = 4;
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  text += R"({"type":"comm","comm_id":1,"comm_hash":"0xa1","rank":1,"nranks":4,"nnodes":1})" "\n";
  const std::int64_t t0 = 1700000000000000000;
  for (int g = 1; g <= 4; ++g)
    for (const char* f : {"Send", "Recv"})
      for (int p = 0; p < n; ++p) {
        const bool cpu = g > 1;
        char b[512];
        std::snprintf(b, sizeof b,
                      R"({"type":"p2p","comm_id":1,"comm_hash":"0xa1","rank":1,"nranks":4,"seq":%d,"func":"%s",)"
                      R"("peer":%d,"group":%d,"bytes":65536,"nchannels":1,"start_wall_ns":%lld,"dur_us":%.1f,)"
                      R"("timing":"%s"%s})" "\n",
                      g, f, p, g, static_cast<long long>(t0 + g * 1000000LL), 10.0 + p, cpu ? "enqueue_cpu" : "gpu",
                      cpu ? R"(,"kernel_desync":true)" : R"(,"busbw_gbs":6.5)");
        text += b;
      }
  // Group 5, twice the size: GPU-timed parts, one written before the comm had
  // a clock estimate (no start_wall_ns): counted, no span to take.
  for (const char* f : {"Send", "Recv"})
    for (int p = 0; p < n; ++p) {
      const bool placed = !(p == 2 && f[0] == 'S');
      text += std::string(R"({"type":"p2p","comm_id":1,"comm_hash":"0xa1","rank":1,"nranks":4,"seq":5,"func":")") + f +
              R"(","peer":)" + std::to_string(p) + R"(,"group":5,"bytes":131072,"nchannels":1,)" +
              (placed ? R"("start_wall_ns":1700000000005000000,)" : "") + R"("dur_us":12,"timing":"gpu"})" + "\n";
    }
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json " + dir);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  int gpu = 0, cpu = 0, unplaced = 0;
  for (const auto& row : js["summary"]["rows"]) {
    if (row["op"] != "AlltoAll") continue;
    EXPECT_EQ(row["nranks"], n);
    if (row["bytes"] == 131072 * n) {
      ++unplaced;
      EXPECT_EQ(row["timing"], "gpu");
      EXPECT_EQ(row["count"], 1);
      for (const char* col : {"lat_p50_us", "lat_max_us", "busbw_p50_gbs", "util_pct"})
        EXPECT_TRUE(row[col].is_null()) << col << ": " << row.dump();
    } else if (row["timing"] == "gpu") {
      ++gpu;
      EXPECT_EQ(row["count"], 1);
      EXPECT_EQ(row["bytes"], 65536 * n);
      EXPECT_DOUBLE_EQ(row["lat_p50_us"].get<double>(), 13.0);  // first part start to last part end
      // nccl-tests: 262144 B / 13 us * 3/4
      EXPECT_NEAR(row["busbw_p50_gbs"].get<double>(), 262144.0 / 13e3 * 0.75, 0.01);
    } else {
      ++cpu;
      EXPECT_EQ(row["timing"], "cpu");
      EXPECT_EQ(row["count"], 3);
      EXPECT_EQ(row["bytes"], 3 * 65536 * n);
      for (const char* col : {"lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_max_us", "busbw_p50_gbs", "util_pct"})
        EXPECT_TRUE(row[col].is_null()) << col << ": " << row.dump();
    }
  }
  EXPECT_EQ(gpu, 1);
  EXPECT_EQ(cpu, 1);
  EXPECT_EQ(unplaced, 1);
  std::string notes;
  for (const auto& note : js["summary"]["notes"]) notes += note.get<std::string>() + "\n";
  EXPECT_NE(notes.find("5 calls assembled"), std::string::npos) << notes;
  EXPECT_NE(notes.find("3 of them from CPU-timed parts"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 of them from GPU-timed parts, one or more written before their communicator had a clock"),
            std::string::npos) << notes;
  // The health table counts the 32 records, not the assembled calls.
  int misattributed = -1;
  for (const auto& h : js["health"]["rows"])
    if (h["item"] == "GPU times NCCL misattributed") misattributed = h["value"].get<int>();
  EXPECT_EQ(misattributed, 24);
  // compare: such calls are "not timed" (counted on both sides), never "too few ops".
  const Cmd cmp = run(std::string(NI_CLI) + " compare --no-progress -f json " + dir + " " + dir);
  const auto cj = nlohmann::json::parse(cmp.out);
  int not_timed = 0, unplaced_rows = 0;
  for (const auto& row : cj["compare"]["rows"]) {
    if (row["op"] != "AlltoAll") continue;
    if (row["size"] == "512KiB") {  // group 5, its parts not all placed: not timed either
      ++unplaced_rows;
      EXPECT_EQ(row["verdict"], "not timed") << row.dump();
      EXPECT_EQ(row["base_n"], 1);
      continue;
    }
    if (row["base_n"] == 1) continue;  // the one GPU-timed call: too few ops
    EXPECT_EQ(row["verdict"], "not timed") << row.dump();
    EXPECT_EQ(row["base_n"], 3);
    EXPECT_EQ(row["run_n"], 3);
    ++not_timed;
  }
  EXPECT_EQ(not_timed, 1);
  EXPECT_EQ(unplaced_rows, 1);
}

// --group-by tag: one group per user tag (NCCL 2.31+), named from --tag-map,
// the number itself when the map has no name, "(untagged)" for calls without
// one; an AlltoAll assembled from its parts is in its call's tag's group.
TEST(Summary, GroupByTagNamesTheTagsFromTheMap) {
  const auto dir = ni::test::temp_dir("by_tag");
  std::string text = tagged_allreduces();
  for (const char* f : {"Send", "Recv"})
    for (int p = 0; p < 4; ++p)
      text += std::string(R"({"type":"p2p","comm_hash":"0x0a","rank":0,"nranks":4,"seq":1,"func":")") + f +
              R"(","peer":)" + std::to_string(p) +
              R"(,"group":7,"bytes":65536,"start_wall_ns":1700000000000000000,"dur_us":10,"timing":"gpu",)"
              R"("busbw_gbs":6.5,"user_tag":12})" "\n";
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  ni::test::write_text(dir + ".tags", "# tag name\n12 layer 12 forward, TP AllReduce\n0x5 unused\n");
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json --group-by tag --tag-map " + dir + ".tags " +
                    dir);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  std::map<std::pair<std::string, std::string>, int> count;  // (tag, op) -> count
  for (const auto& row : js["summary"]["rows"]) count[{row["tag"], row["op"]}] += row["count"].get<int>();
  const std::map<std::pair<std::string, std::string>, int> want = {
      {{"layer 12 forward, TP AllReduce", "AllReduce"}, 5}, {{"layer 12 forward, TP AllReduce", "AlltoAll"}, 1},
      {{"layer 12 forward, TP AllReduce", "Send"}, 4},      {{"layer 12 forward, TP AllReduce", "Recv"}, 4},
      {{"9007199254740993", "AllReduce"}, 3},              {{"(untagged)", "AllReduce"}, 2}};
  EXPECT_EQ(count, want);
  // A bad map line is a usage error that names it.
  ni::test::write_text(dir + ".bad", "12 layer12\nx13 nope\n");
  const Cmd bad =
      run("sh -c '" + std::string(NI_CLI) + " summary --no-progress --group-by tag --tag-map " + dir + ".bad " + dir + " 2>&1'");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find(":2: expected \"tag name\""), std::string::npos) << bad.out;
  const Cmd alone = run("sh -c '" + std::string(NI_CLI) + " summary --no-progress --tag-map " + dir + ".tags " + dir + " 2>&1'");
  EXPECT_NE(alone.rc, 0);
  EXPECT_NE(alone.out.find("--tag-map goes with --group-by tag"), std::string::npos) << alone.out;
}

// Tag names from the logs' "tag" records (ncclInspectorNameTag), wherever in
// the file they come (here after the ops): a --tag-map name wins; two
// processes naming one tag differently keep the earliest name, and the note
// says so; a tag record without a tag is a bad line.
TEST(Summary, GroupByTagNamesTheTagsFromTheLogsTagRecords) {
  const auto dir = ni::test::temp_dir("by_tag_records");
  auto file = [&](int pid, const std::string& names) {
    std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":)" +
                       std::to_string(pid) + "}\n";
    for (int i = 0; i < 6; ++i)
      text += R"({"type":"coll","comm_hash":"0x0a","rank":)" + std::to_string(pid) + R"(,"nranks":2,"nnodes":1,"seq":)" +
              std::to_string(i) + R"(,"func":"AllReduce","bytes":1048576,"dur_us":100,"timing":"gpu","busbw_gbs":10,)" +
              R"("user_tag":)" + std::to_string(12 + i % 3) + "}\n";
    ni::test::write_text(dir + "/h-pid" + std::to_string(pid) + ".jsonl", text + names);
  };
  file(0, R"({"type":"tag","wall_ns":1700000000000000100,"user_tag":12,"label":"fwd"})" "\n"
          R"({"type":"tag","wall_ns":1700000000000000100,"user_tag":13,"label":"bwd"})" "\n"
          R"({"type":"tag","wall_ns":1700000000000000100,"label":"no tag"})" "\n");
  file(1, R"({"type":"tag","wall_ns":1700000000000000200,"user_tag":12,"label":"forward"})" "\n"
          R"({"type":"tag","wall_ns":1700000000000000200,"user_tag":14,"label":"x"})" "\n");
  ni::test::write_text(dir + ".tags", "14 from the map\n");
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json --group-by tag --tag-map " + dir + ".tags " + dir);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  std::map<std::string, int> count;
  for (const auto& row : js["summary"]["rows"]) count[row["tag"]] += row["count"].get<int>();
  const std::map<std::string, int> want = {{"fwd", 4}, {"bwd", 4}, {"from the map", 4}};
  EXPECT_EQ(count, want);
  EXPECT_NE(c.out.find("tag names: 3 (2 from the logs' tag records); 1 tag(s) named differently"), std::string::npos)
      << c.out;
  ana::ReadResult res;
  ana::ReadOptions ro;
  auto sink = ana::read_merged<ana::CollectSink>({dir + "/h-pid0.jsonl", dir + "/h-pid1.jsonl"}, ro, 1, res, false);
  ASSERT_EQ(res.files.size(), 2u);
  EXPECT_EQ(res.files[0].bad_lines, 1u) << "the tag record without a tag";
  EXPECT_EQ(res.files[0].tag_names.size(), 2u);
  const ana::TagNames t = ana::tag_names(res, {});
  EXPECT_EQ(t.label(12), "fwd");
  EXPECT_EQ(t.label(14), "x");
  EXPECT_EQ(t.label(15), "15");
  EXPECT_EQ(t.label(0), "(untagged)");
  EXPECT_EQ(t.conflicts, 1u);
}

// NCCL 2.31.2 symmetric plans: a plan's head (sym_plan_tasks) has the plan's
// kernel time, so summary counts it without a latency (the group's latency is
// its single ops') and says how many; anomalies leave the heads out (three
// times the single ops' time is no outlier) and say so.
TEST(Summary, SymmetricPlanHeadsGiveNoLatencyAndAreSaid) {
  const auto dir = ni::test::temp_dir("sym_plans");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  auto coll = [&](int seq, double dur, const std::string& extra) {
    text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":4,"nnodes":1,"seq":)" + std::to_string(seq) +
            R"(,"func":"AllReduce","bytes":1048576,"algo":"AGxLL_R","proto":"","sym":true,"kernel_variant":"AllReduce_AGxLL_R","dur_us":)" +
            std::to_string(dur) + extra + "}\n";
  };
  int seq = 0;
  for (int i = 0; i < 40; ++i) coll(seq++, 100 + i % 3, R"(,"timing":"gpu","nchannels":4,"busbw_gbs":10)");
  for (int i = 0; i < 5; ++i) {
    coll(seq++, 300, R"(,"timing":"gpu","nchannels":4,"sym_plan_tasks":3)");
    coll(seq++, 20, R"(,"timing":"enqueue_cpu")");
    coll(seq++, 20, R"(,"timing":"enqueue_cpu")");
  }
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json " + dir);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  int gpu_rows = 0;
  for (const auto& row : js["summary"]["rows"]) {
    if (row["timing"] != "gpu") continue;
    ++gpu_rows;
    EXPECT_EQ(row["algo"], "sym:AGxLL_R");
    EXPECT_EQ(row["count"], 45) << "the heads are counted";
    EXPECT_LE(row["lat_max_us"].get<double>(), 102.0) << "no head's plan time among the latencies: " << row.dump();
    EXPECT_DOUBLE_EQ(row["busbw_p50_gbs"].get<double>(), 10.0);
  }
  EXPECT_EQ(gpu_rows, 1);
  EXPECT_NE(c.out.find("5 records are heads of symmetric-kernel plans"), std::string::npos) << c.out;
  const Cmd a = run(std::string(NI_CLI) + " anomalies --no-progress -f json " + dir);
  EXPECT_NE(a.out.find("5 heads of symmetric-kernel plans of several tasks not analysed"), std::string::npos) << a.out;
  ana::ReadResult res;
  ana::ReadOptions ro;
  auto sink = ana::read_merged<ana::CollectSink>({dir + "/h-pid1.jsonl"}, ro, 1, res, false);
  const ana::AnomalyResult ar = ana::find_anomalies(*sink, res, {});
  EXPECT_EQ(ar.sym_plan_heads, 5u);
  EXPECT_EQ(ar.outlier_count, 0u) << "a plan's time is no outlier among single ops";
}

// compare --by-tag: the tag is part of the key, so the one tagged collective
// that got slower is the one named REGRESSION, by the name the logs gave it;
// its untouched sibling is within noise. --tag-map needs --by-tag.
TEST(Compare, ByTagNamesTheTaggedCollectiveThatRegressed) {
  const auto base = ni::test::temp_dir("cmp_tag_base"), slow = ni::test::temp_dir("cmp_tag_run");
  auto job = [](const std::string& dir, double bwd_busbw) {
    std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n"
                       R"({"type":"tag","wall_ns":1700000000000000000,"user_tag":12,"label":"layer 12 fwd"})" "\n"
                       R"({"type":"tag","wall_ns":1700000000000000000,"user_tag":13,"label":"layer 12 bwd"})" "\n";
    for (int i = 0; i < 40; ++i) {
      const bool bwd = i % 2 == 1;
      const double bw = (bwd ? bwd_busbw : 10.0) * (1.0 + 0.001 * (i % 5));
      text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":2,"nnodes":1,"seq":)" + std::to_string(i) +
              R"(,"func":"AllReduce","bytes":1048576,"dur_us":)" + std::to_string(1048576.0 / (bw * 1e3)) +
              R"(,"timing":"gpu","busbw_gbs":)" + std::to_string(bw) + R"(,"user_tag":)" + (bwd ? "13" : "12") + "}\n";
    }
    ni::test::write_text(dir + "/h-pid1.jsonl", text);
  };
  job(base, 10.0);
  job(slow, 5.0);
  const Cmd c = run(std::string(NI_CLI) + " compare --no-progress -f json --by-tag " + base + " " + slow);
  EXPECT_EQ(c.rc, 3) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  std::map<std::string, std::string> verdict;
  for (const auto& row : js["compare"]["rows"]) verdict[row["tag"]] = row["verdict"];
  const std::map<std::string, std::string> want = {{"layer 12 bwd", "REGRESSION"}, {"layer 12 fwd", "within noise"}};
  EXPECT_EQ(verdict, want) << c.out;
  ni::test::write_text(base + ".tags", "13 backward of layer 12\n");
  const Cmd m = run(std::string(NI_CLI) + " compare --no-progress -f json --by-tag --tag-map " + base + ".tags " + base +
                    " " + slow);
  EXPECT_NE(m.out.find("\"backward of layer 12\""), std::string::npos) << m.out;
  const Cmd alone = run("sh -c '" + std::string(NI_CLI) + " compare --no-progress --tag-map " + base + ".tags " + base +
                        " " + slow + " 2>&1'");
  EXPECT_EQ(alone.rc, 2) << alone.out;
  EXPECT_NE(alone.out.find("--tag-map goes with --by-tag"), std::string::npos) << alone.out;
}

// Copy-engine collectives timed with CUDA events on their stream (timing
// "cuda_event", NCCL 2.29+ with a driver in the process) measure the copies:
// they keep their bandwidth and count as GPU-timed.
TEST(Summary, CudaEventTimedCopyEngineOpsKeepTheirBandwidth) {
  const auto dir = ni::test::temp_dir("cuda_event");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  for (int i = 0; i < 20; ++i)
    text += R"({"type":"ce","comm_hash":"0x0a","rank":0,"nranks":8,"nnodes":1,"seq":)" + std::to_string(i) +
            R"(,"func":"AllGather","bytes":1048576,"dur_us":250,"timing":"cuda_event","algbw_gbs":33.6,"busbw_gbs":29.4})"
            "\n";
  ni::test::write_text(dir + "/h-pid1.jsonl", text);
  const Cmd c = run(std::string(NI_CLI) + " summary --no-progress -f json " + dir);
  ASSERT_EQ(c.rc, 0) << c.out;
  const auto js = nlohmann::json::parse(c.out);
  ASSERT_EQ(js["summary"]["rows"].size(), 1u);
  const auto& row = js["summary"]["rows"][0];
  EXPECT_EQ(row["timing"], "gpu");
  EXPECT_DOUBLE_EQ(row["busbw_p50_gbs"].get<double>(), 29.4);
  for (const auto& h : js["health"]["rows"])
    if (h["item"] == "timing sources") {
      EXPECT_EQ(h["value"].get<int>(), 20) << "GPU-timed";
      EXPECT_NE(h["detail"].get<std::string>().find("cuda_event=20"), std::string::npos) << h.dump();
    }
}

// `iterations` per GPU: one process drives two GPUs (cuda_dev 0 and 1), and
// GPU 0 runs ops of two comms at once. Comm time is the union of each GPU's op
// intervals clipped to the iteration, so comm_pct is per GPU and never over
// 100 % (summed per process it read 110 % here, and 482-928 % in real jobs).
TEST(Iterations, CommTimeIsPerGpuUnionClippedToTheIteration) {
  const auto dir = ni::test::temp_dir("iters_gpu");
  const std::int64_t t0 = 1767225600000000000;
  const std::int64_t ms = 1000000;
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":7})" "\n";
  for (auto [hash, name, dev] : {std::tuple{"0x0a", "tpA", 0}, {"0x0b", "dpB", 0}, {"0x0c", "tpC", 1}})
    text += std::string(R"({"type":"comm","wall_ns":1,"comm_id":0,"comm_hash":")") + hash + R"(","comm_name":")" +
            name + R"(","rank":0,"nranks":2,"nnodes":1,"cuda_dev":)" + std::to_string(dev) + "}\n";
  for (int i = 0; i < 3; ++i)
    text += R"({"type":"mark","wall_ns":)" + std::to_string(t0 + i * 10 * ms) + R"(,"label":"step )" +
            std::to_string(i) + "\"}\n";
  int seq = 0;
  auto op = [&](const char* hash, std::int64_t start, double dur_us) {
    text += std::string(R"({"type":"coll","comm_hash":")") + hash +
            R"(","rank":0,"nranks":2,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"SIMPLE","seq":)" +
            std::to_string(seq++) + R"(,"bytes":1048576,"timing":"gpu","start_wall_ns":)" + std::to_string(start) +
            R"(,"dur_us":)" + std::to_string(dur_us) + "}\n";
  };
  op("0x0a", t0 + 1 * ms, 2000);       // GPU 0: [1, 3] ms
  op("0x0b", t0 + 2 * ms, 3000);       // GPU 0, another comm, overlapping: [2, 5] -> union 4 ms
  op("0x0c", t0 + ms / 2, 6000);       // GPU 1: [0.5, 6.5] -> 6 ms
  op("0x0a", t0 + 19 * ms, 3000);      // iteration 1, cut by the next mark at 20 ms: 1 ms
  ni::test::write_text(dir + "/h-pid7.jsonl", text);
  auto d = ana::discover_files({dir});
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult res;
  auto c = ana::read_merged<ana::CollectSink>(d.files, ro, 1, res, false);
  ASSERT_EQ(c->ops.size(), 4u);
  ana::Report r;
  ana::add_iteration_section(r, c->ops, res);
  ASSERT_EQ(r.sections.size(), 1u);
  const auto& t = r.sections[0].table;
  ASSERT_EQ(t.columns[5], "comm_ms_per_gpu_p50");
  ASSERT_EQ(t.columns[6], "comm_pct");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_NEAR(t.rows[0][2].d, 10.0, 1e-9);  // wall
  EXPECT_EQ(t.rows[0][3].i, 3);             // ops
  EXPECT_NEAR(t.rows[0][5].d, 5.0, 1e-6);   // median of 4 and 6 ms
  EXPECT_NEAR(t.rows[0][6].d, 50.0, 1e-6);  // median of 40 % and 60 %
  EXPECT_NEAR(t.rows[1][5].d, 1.0, 1e-6);
  EXPECT_NEAR(t.rows[1][6].d, 10.0, 1e-6);
  EXPECT_TRUE(std::isnan(t.rows[2][6].d));  // the last mark opens an iteration with no end
}

// One grammar: the fast scanner (summary and every analysis) and simdjson
// alone (validate) accept and reject the same lines, and read the same values
// from the ones they accept. A line is invalid JSON for simdjson (and jq,
// DuckDB, pandas) when a number has a leading zero, a bare '.', no digit
// after the exponent, or an integer beyond int64/uint64; then it is a bad line
// for both. Values that are valid JSON but wrong for the schema (a negative
// duration, a numeric comm_hash) are read the same way by both, and validate
// also reports them.
TEST(Reader, OneGrammarForTheFastPathAndValidate) {
  const std::string head = R"({"type":"coll","comm_hash":"0x01","rank":0,"func":"AllReduce","seq":)";
  auto op = [&](const std::string& seq, const std::string& dur, const std::string& extra = "") {
    return head + seq + R"(,"bytes":8,"start_wall_ns":1767225600000000000,"dur_us":)" + dur + extra + "}";
  };
  struct Case {
    std::string line;
    bool json;  // valid JSON (simdjson reads it)
  };
  const std::vector<Case> corpus = {
      {op("1", "5.5"), true}, {op("1", "5."), false}, {op("00012", "5"), false}, {op("1", "-3"), true},
      {op("1", "0.25"), true}, {op("1", "-0.5"), true}, {op("0", "0"), true}, {op("-0", "5"), true},
      {op("1", ".5"), false}, {op("1", "1e2"), true}, {op("1", "1.5E+2"), true}, {op("1", "1e"), false},
      {op("1", "1e+"), false}, {op("1", "1.e2"), false}, {op("1", "1.2.3"), false}, {op("+1", "5"), false},
      {op("1", "5-3"), false}, {op("1", "--5"), false}, {op("1", "0x10"), false}, {op("1", "01.5"), false},
      {op("18446744073709551615", "5"), true}, {op("18446744073709551616", "5"), false},
      {op("99999999999999999999", "5"), false}, {op("1", "5", R"(,"zz":-9223372036854775808)"), true},
      {op("1", "5", R"(,"zz":-9223372036854775809)"), false}, {op("1", "5", R"(,"zz":0012)"), false},
      {op("1", "5", R"(,"channels":[0,1,2,3])"), true}, {op("1", "5", R"(,"channels":[0,01])"), false},
      {op("1", "5", R"(,"channels":[0,,1])"), false}, {op("1", "5", R"(,"net":{"a":1.,"b":2})"), false},
      {op("1", "5", R"(,"net":{"a" 1})"), false}, {op("1", "5", R"(,"x":[true,false,null,"s",{"k":[1e3]}])"), true},
      {op("1", "5", R"(,"x":[tru])"), false}, {op("1", "5", std::string(R"(,"s":"a)") + '\x01' + "b\""), false},
      {op("1", "5", R"(,"s":"caf\u00e9")"), true}, {op("1", "5", ",\"s\":\"caf\xc3\xa9\""), true},
      {op("1", "5", ",\"s\":\"bad\xc3\""), false},
      {R"({"type":"coll","comm_hash":1,"rank":0,"func":"AllReduce","seq":1,"bytes":8,"dur_us":5})", true},
  };
  const auto dir = ni::test::temp_dir("one_grammar");
  ana::ReadOptions ro;
  ro.progress = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::string path = dir + "/c" + std::to_string(i) + ".jsonl";
    ni::test::write_text(path, R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})"
                               "\n" + corpus[i].line + "\n");
    ana::ReadResult fast;
    auto ops = ana::read_merged<ana::CollectSink>({path}, ro, 1, fast, true);
    ana::ReadOptions vo = ro;
    vo.validate = true;
    ana::ReadResult strict;
    auto vops = ana::read_merged<ana::CollectSink>({path}, vo, 1, strict, true);
    const std::string& line = corpus[i].line;
    EXPECT_EQ(fast.bad_lines, corpus[i].json ? 0u : 1u) << line;
    EXPECT_EQ(strict.bad_lines, fast.bad_lines) << line;
    ASSERT_EQ(vops->ops.size(), ops->ops.size()) << line;
    for (std::size_t k = 0; k < ops->ops.size(); ++k) {
      EXPECT_EQ(vops->ops[k].seq, ops->ops[k].seq) << line;
      EXPECT_EQ(vops->ops[k].bytes, ops->ops[k].bytes) << line;
      EXPECT_EQ(vops->ops[k].comm_hash, ops->ops[k].comm_hash) << line;
      EXPECT_EQ(std::isnan(vops->ops[k].dur_us), std::isnan(ops->ops[k].dur_us)) << line;
      if (!std::isnan(ops->ops[k].dur_us)) {
        EXPECT_EQ(vops->ops[k].dur_us, ops->ops[k].dur_us) << line;
      }
      EXPECT_EQ(vops->ops[k].start_wall_ns, ops->ops[k].start_wall_ns) << line;
    }
  }
}

// AlltoAll assembly when the parts of many launch groups interleave, as a
// 100 ms dump cycle writes them: each thread's ring in turn, and a part sits in
// the ring of whichever thread completed it (launching or proxy thread). Here
// 70 groups' Sends come before any of their Recvs, SendRecv groups (2 parts,
// never an op) sit between them, one AlltoAll part is CPU-timed and one is
// GPU-timed without a start (written before its communicator had a clock
// estimate): each of those groups is an op with its bytes and no time.
struct AsmSink : ana::CollectSink {
  bool wants_assembled() const override { return true; }
  void merge(AsmSink&& o) { CollectSink::merge(std::move(o)); }
};

TEST(Assembly, AlltoAllFromPartsOfManyInterleavedGroups) {
  const auto dir = ni::test::temp_dir("asm_interleaved");
  const int n = 4, groups = 70, rank = 1;
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":1})" "\n";
  text += R"({"type":"comm","comm_id":1,"comm_hash":"0xa1","rank":1,"nranks":4,"nnodes":1})" "\n";
  const std::int64_t t0 = 1700000000000000000;
  auto part = [&](int g, const char* f, int peer, std::int64_t start, double dur, const char* timing = "gpu") {
    char b[512];
    const std::string at = start < 0 ? "" : "\"start_wall_ns\":" + std::to_string(start) + ",";  // < 0: none
    std::snprintf(b, sizeof b,
                  R"({"type":"p2p","comm_id":1,"comm_hash":"0xa1","rank":%d,"nranks":%d,"seq":%d,"func":"%s","peer":%d,)"
                  R"("group":%d,"bytes":1024,"nchannels":1,%s"dur_us":%.3f,"timing":"%s"})" "\n",
                  rank, n, g, f, peer, g, at.c_str(), dur, timing);
    return std::string(b);
  };
  // Group g (AlltoAll, odd numbers) starts at t0 + g ms; its parts end at
  // start + 10 us + peer us, so its span is 10 + 3 us (the last peer, 3).
  for (int g = 1; g <= 2 * groups; g += 2)
    for (int p = 0; p < n; ++p)
      text += part(g, "Send", p, g == 7 && p == 3 ? -1 : t0 + g * 1000000LL, 10.0 + p,
                   g == 5 && p == 2 ? "proxy_cpu" : "gpu");
  for (int g = 2; g <= 2 * groups; g += 2) text += part(g, "Send", (rank + 1) % n, t0 + g * 1000000LL, 5);
  for (int g = 1; g <= 2 * groups; g += 2)
    for (int p = 0; p < n; ++p) text += part(g, "Recv", p, t0 + g * 1000000LL, 10.0 + p);
  for (int g = 2; g <= 2 * groups; g += 2) text += part(g, "Recv", (rank + n - 1) % n, t0 + g * 1000000LL, 5);
  ni::test::write_gz(dir + "/h-pid1.jsonl.gz", {text});
  auto d = ana::discover_files({dir});
  ASSERT_EQ(d.error, "");
  ana::ReadResult res;
  ana::ReadOptions ro;
  ro.progress = 0;
  auto sink = ana::read_merged<AsmSink>(d.files, ro, 1, res);
  std::map<std::uint64_t, const ana::Op*> got;  // group -> op
  std::size_t records = 0;
  for (const ana::Op& op : sink->ops) {
    if (!(op.flags & ana::kFlagAssembled)) {
      ++records;
      continue;
    }
    EXPECT_TRUE(got.emplace(op.seq, &op).second) << "group " << op.seq << " twice";
  }
  EXPECT_EQ(records, static_cast<std::size_t>(groups) * (2 * n + 2));
  ASSERT_EQ(got.size(), static_cast<std::size_t>(groups));  // every AlltoAll, none of the SendRecvs
  for (const auto& [g, op] : got) {
    EXPECT_EQ(g % 2, 1u);
    EXPECT_EQ(op->func, ana::Func::kAllToAll);
    EXPECT_EQ(op->bytes, 1024u * n);
    if (g == 7) {  // a GPU-timed part with no start: no span to take, the call counted with its bytes
      EXPECT_EQ(op->timing, ana::Timing::kGpu);
      EXPECT_TRUE(std::isnan(op->dur_us) && std::isnan(op->busbw_gbs));
      EXPECT_FALSE(op->has_start());
      continue;
    }
    EXPECT_EQ(op->start_wall_ns, t0 + static_cast<std::int64_t>(g) * 1000000LL);
    if (g == 5) {  // a CPU-timed part: the call is counted, its time and bandwidth are not known
      EXPECT_EQ(op->timing, ana::Timing::kProxyCpu);
      EXPECT_TRUE(std::isnan(op->dur_us) && std::isnan(op->busbw_gbs));
      continue;
    }
    EXPECT_EQ(op->timing, ana::Timing::kGpu);
    EXPECT_NEAR(op->dur_us, 13.0, 1e-9) << "group " << g;
    EXPECT_EQ(op->rank, rank);
  }

  // Bounded: 5,000 groups opened after groups 1-10 sent and before they
  // received push them out (4,096 open at most). Their late parts then make
  // no op, never a wrong one; a later complete AlltoAll still does.
  text = text.substr(0, text.find("\n", text.find("\"comm\"")) + 1);
  for (int g = 1; g <= 10; ++g)
    for (int p = 0; p < n; ++p) text += part(g, "Send", p, t0 + g * 1000000LL, 10.0 + p);
  for (int g = 11; g <= 5010; ++g) text += part(g, "Send", 0, t0 + g * 1000000LL, 5);
  for (int g = 1; g <= 10; ++g)
    for (int p = 0; p < n; ++p) text += part(g, "Recv", p, t0 + g * 1000000LL, 10.0 + p);
  for (const char* f : {"Send", "Recv"})
    for (int p = 0; p < n; ++p) text += part(6000, f, p, t0 + 6000 * 1000000LL, 10.0 + p);
  ni::test::write_gz(dir + "/h-pid1.jsonl.gz", {text});
  ana::ReadResult res2;
  sink = ana::read_merged<AsmSink>(ana::discover_files({dir}).files, ro, 1, res2);
  std::vector<std::uint64_t> assembled;
  for (const ana::Op& op : sink->ops)
    if (op.flags & ana::kFlagAssembled) assembled.push_back(op.seq);
  EXPECT_EQ(assembled, std::vector<std::uint64_t>{6000});

  // Groups that never complete on one communicator (pipeline Send/Recv, one
  // part each here) fill the budget; the AlltoAlls of another communicator,
  // each sending before it receives, still assemble: the oldest groups leave
  // first, not the newest communicator's own unfinished ones.
  text = text.substr(0, text.find("\n", text.find("\"comm\"")) + 1);
  text += R"({"type":"comm","comm_id":2,"comm_hash":"0xb2","rank":1,"nranks":4,"nnodes":1})" "\n";
  for (int g = 1; g <= 5000; ++g) text += part(g, "Send", 0, t0 + g * 1000LL, 5);
  std::string ep;
  for (int g = 5001; g <= 5010; ++g)
    for (int p = 0; p < n; ++p) ep += part(g, "Send", p, t0 + g * 1000000LL, 10.0 + p);
  for (int g = 5001; g <= 5010; ++g)
    for (int p = 0; p < n; ++p) ep += part(g, "Recv", p, t0 + g * 1000000LL, 10.0 + p);
  for (std::size_t at = 0; (at = ep.find("0xa1", at)) != std::string::npos;) ep.replace(at, 4, "0xb2");
  text += ep;
  ni::test::write_gz(dir + "/h-pid1.jsonl.gz", {text});
  ana::ReadResult res3;
  sink = ana::read_merged<AsmSink>(ana::discover_files({dir}).files, ro, 1, res3);
  assembled.clear();
  for (const ana::Op& op : sink->ops) {
    if (op.flags & ana::kFlagAssembled) {
      assembled.push_back(op.seq);
      EXPECT_EQ(op.comm_hash, 0xb2u);
    }
  }
  std::sort(assembled.begin(), assembled.end());
  EXPECT_EQ(assembled.size(), 10u);
  if (!assembled.empty()) {
    EXPECT_EQ(assembled.front(), 5001u);
  }
}

// `watch` follows files as a running plugin writes them: each poll reads only
// what was appended, a gzip member cut anywhere yields the lines written so
// far and the rest on the next poll, a cut line waits for its end, and no op
// is read twice. A plain-text log is followed the same way.
TEST(Follow, AppendedBytesAreReadOnceWhereverTheyAreCut) {
  const auto dir = ni::test::temp_dir("follow");
  std::vector<std::string> lines = {
      R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":7})"};
  for (int i = 0; i < 3000; ++i)
    lines.push_back(R"({"type":"coll","comm_hash":"0x01","rank":0,"nranks":2,"seq":)" + std::to_string(i) +
                    R"(,"func":"AllReduce","bytes":1024,"dur_us":)" + std::to_string(10 + i % 7) + R"(,"timing":"gpu"})");
  for (const bool gzip : {true, false}) {
    const std::string whole = dir + (gzip ? "/whole.jsonl.gz" : "/whole.jsonl");
    if (gzip) {
      ni::test::write_gz(whole, lines, 250);  // 13 members
    } else {
      std::string text;
      for (const auto& l : lines) text += l + "\n";
      ni::test::write_text(whole, text);
    }
    const std::string bytes = ni::test::read_text(whole);
    const std::string path = dir + (gzip ? "/live.jsonl.gz" : "/live.jsonl");
    ni::test::write_text(path, "");
    ana::FileInfo info;
    info.path = path;
    ana::CollectSink sink;
    ana::reader_detail::Follower f(info, 0, sink);
    EXPECT_EQ(f.poll(), 0u);  // nothing written yet
    // Appended in pieces of prime sizes: members and lines cut everywhere.
    std::size_t at = 0, polls = 0, last_ops = 0;
    bool grew_mid_file = false;
    for (std::size_t step = 997; at < bytes.size(); step = step * 3 % 7919 + 101) {
      const std::size_t n = std::min(step, bytes.size() - at);
      {
        std::ofstream o(path, std::ios::binary | std::ios::app);
        o.write(bytes.data() + at, static_cast<std::streamsize>(n));
      }
      at += n;
      EXPECT_EQ(f.poll(), n);
      ++polls;
      grew_mid_file = grew_mid_file || (sink.ops.size() > last_ops && at < bytes.size());
      last_ops = sink.ops.size();
    }
    EXPECT_EQ(f.poll(), 0u);
    EXPECT_FALSE(f.stopped()) << info.error;
    EXPECT_TRUE(grew_mid_file);
    ASSERT_EQ(sink.ops.size(), 3000u) << (gzip ? "gzip" : "plain") << " after " << polls << " polls";
    for (std::size_t i = 0; i < sink.ops.size(); ++i) EXPECT_EQ(sink.ops[i].seq, i);
    EXPECT_EQ(info.host, "h");
    EXPECT_EQ(info.pid, 7);
    EXPECT_EQ(info.bad_lines, 0u);
    EXPECT_EQ(info.gzip, gzip);
  }
  // A followed file that shrinks (replaced) stops being followed and says why.
  const std::string path = dir + "/shrinks.jsonl";
  ni::test::write_text(path, lines[0] + "\n" + lines[1] + "\n");
  ana::FileInfo info;
  info.path = path;
  ana::CollectSink sink;
  ana::reader_detail::Follower f(info, 0, sink);
  EXPECT_GT(f.poll(), 0u);
  ni::test::write_text(path, lines[0] + "\n");
  EXPECT_EQ(f.poll(), 0u);
  EXPECT_TRUE(f.stopped());
  EXPECT_NE(info.error.find("shrank"), std::string::npos) << info.error;
  // Garbage where the next member should start: corrupt, stopped, said.
  const std::string gz = dir + "/garbage.jsonl.gz";
  ni::test::write_gz(gz, {lines[0], lines[1]});
  ana::FileInfo ginfo;
  ginfo.path = gz;
  ana::reader_detail::Follower g(ginfo, 0, sink);
  g.poll();
  {
    std::ofstream o(gz, std::ios::binary | std::ios::app);
    o << "not gzip at all";
  }
  g.poll();
  EXPECT_TRUE(g.stopped());
  EXPECT_TRUE(ginfo.corrupt);
  EXPECT_NE(ginfo.error.find("gzip"), std::string::npos) << ginfo.error;
}

// watch's screen on a dump dir: one process (the file with no meta record is
// a bad line, not a process that stalled), the ops of a backlog counted but only
// the last window's in the op-group table, drops from the latest stats record
// of the process (not summed over its records).
TEST(Watch, ScreenCountsBacklogOnceAndDamageIsNoProcess) {
  const auto dir = ni::test::temp_dir("watch_screen");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h1","pid":7})" "\n";
  text += R"({"type":"comm","comm_id":1,"comm_hash":"0x01","comm_name":"tp","rank":0,"nranks":2,"nnodes":1})" "\n";
  const std::int64_t t0 = 1700000000000000000;
  // 600 ops one per second (10 minutes), then a stats record saying 5 drops, later one saying 7.
  for (int i = 0; i < 600; ++i)
    text += R"({"type":"coll","comm_hash":"0x01","rank":0,"nranks":2,"seq":)" + std::to_string(i) +
            R"(,"func":"AllReduce","bytes":1048576,"start_wall_ns":)" + std::to_string(t0 + i * 1000000000LL) +
            R"(,"dur_us":100,"timing":"gpu","busbw_gbs":10})" "\n";
  text += R"({"type":"stats","wall_ns":)" + std::to_string(t0 + 100) + R"(,"dropped":{"ring_full":5}})" "\n";
  text += R"({"type":"stats","wall_ns":)" + std::to_string(t0 + 200) + R"(,"dropped":{"ring_full":7}})" "\n";
  ni::test::write_gz(dir + "/h1-pid7.jsonl.gz", {text});
  ni::test::write_text(dir + "/h2-pid9.jsonl.gz", "this is not gzip, and has no meta record\n");
  ana::WatchOptions o;
  o.inputs = {dir};
  o.window_s = 60;
  ana::Watch w(o);
  w.poll(1);
  EXPECT_EQ(w.ops_total(), 600u);
  const std::string screen = w.render(t0 + 600 * 1000000000LL);
  EXPECT_NE(screen.find("processes 1 on 1 host(s), 2 file(s) | ops 600 | - ops/s | dropped by the plugin 7 | "
                        "bad lines 1"), std::string::npos) << screen;
  EXPECT_NE(screen.find("(61 ops)"), std::string::npos) << screen;  // starts within 60 s of the newest
  EXPECT_NE(screen.find("tp (0x0000000000000001)  "), std::string::npos) << screen;
  EXPECT_EQ(screen.find("nothing written"), std::string::npos) << screen;
  // Nothing new: nothing read again.
  w.poll(2'000'000'000);
  EXPECT_EQ(w.ops_total(), 600u);
}

// A watch slower than the job (a large backlog, a sanitizer build, a busy
// node) reads each poll for its budget only (time or bytes: here one read of
// 256 KiB, which a fast machine can repeat within the 10 ms floor of the time
// budget and finish the file in two polls), then redraws: the screen
// says how far it is behind, later polls catch up, every op is read once, and
// Ctrl-C ends a poll before it reads anything more. (The CI run of watch in
// tmux under a sanitizer saw one poll take over 50 s and Ctrl-C go unanswered.)
TEST(Watch, AReaderBehindTheJobRedrawsAndCatchesUp) {
  const auto dir = ni::test::temp_dir("watch_behind");
  std::vector<std::string> lines = {
      R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h1","pid":7})",
      R"({"type":"comm","comm_id":1,"comm_hash":"0x01","comm_name":"tp","rank":0,"nranks":2,"nnodes":1})"};
  const std::int64_t t0 = 1700000000000000000;
  for (std::int64_t i = 0; i < 40000; ++i)  // random-ish durations: ~1 MiB compressed, several 256 KiB reads
    lines.push_back(R"({"type":"coll","comm_hash":"0x01","rank":0,"nranks":2,"seq":)" + std::to_string(i) +
                    R"(,"func":"AllReduce","bytes":1048576,"start_wall_ns":)" + std::to_string(t0 + i * 1000000LL) +
                    R"(,"dur_us":)" + std::to_string(100 + (i * 7919) % 997) + "." +
                    std::to_string((i * 104729) % 1000) + R"(,"timing":"gpu","busbw_gbs":10})");
  ni::test::write_gz(dir + "/h1-pid7.jsonl.gz", lines, 500);
  ASSERT_GT(std::filesystem::file_size(dir + "/h1-pid7.jsonl.gz"), std::size_t{600} << 10);
  volatile std::sig_atomic_t stop = 0;
  ana::WatchOptions o;
  o.inputs = {dir};
  o.poll_budget_s = 0;  // the shortest time budget (10 ms), and
  o.max_poll_bytes = std::size_t{256} << 10;  // one 256 KiB read per poll however fast this machine reads
  o.stop = &stop;
  ana::Watch w(o);
  w.poll(1);
  const std::uint64_t first = w.ops_total();
  EXPECT_GT(first, 0u);
  EXPECT_LT(first, 40000u);
  std::string screen = w.render(t0);
  EXPECT_NE(screen.find("reading behind the job: "), std::string::npos) << screen;
  stop = 1;  // Ctrl-C: the next poll reads nothing
  w.poll(2);
  EXPECT_EQ(w.ops_total(), first);
  stop = 0;
  int polls = 1;
  for (std::uint64_t last = first; polls < 100; ++polls) {
    w.poll(3 + polls);
    EXPECT_GE(w.ops_total(), last);
    if (w.ops_total() == last) break;
    last = w.ops_total();
  }
  EXPECT_GT(polls, 2);
  EXPECT_EQ(w.ops_total(), 40000u);
  screen = w.render(t0);
  EXPECT_EQ(screen.find("reading behind"), std::string::npos) << screen;
}

// A poll that runs out of budget part-way through its files starts the next
// poll where it stopped: with one 256 KiB read per poll, the second file is
// read by the second poll, not after the first file has been read to its end.
TEST(Watch, APollResumesWithTheFileItDidNotReach) {
  const auto dir = ni::test::temp_dir("watch_resume");
  const std::int64_t t0 = 1700000000000000000;
  for (int h = 1; h <= 2; ++h) {
    std::vector<std::string> lines = {R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h)" +
                                      std::to_string(h) + R"(","pid":7})"};
    for (std::int64_t i = 0; i < 40000; ++i)
      lines.push_back(R"({"type":"coll","comm_hash":"0x01","rank":0,"nranks":2,"seq":)" + std::to_string(i) +
                      R"(,"func":"AllReduce","bytes":1048576,"start_wall_ns":)" + std::to_string(t0 + i * 1000000LL) +
                      R"(,"dur_us":)" + std::to_string(100 + (i * 7919 + h) % 997) + "." +
                      std::to_string((i * 104729) % 1000) + R"(,"timing":"gpu","busbw_gbs":10})");
    ni::test::write_gz(dir + "/h" + std::to_string(h) + "-pid7.jsonl.gz", lines, 500);
    ASSERT_GT(std::filesystem::file_size(dir + "/h" + std::to_string(h) + "-pid7.jsonl.gz"), std::size_t{600} << 10);
  }
  ana::WatchOptions o;
  o.inputs = {dir};
  o.max_poll_bytes = std::size_t{256} << 10;  // one read per poll
  o.poll_budget_s = 3600;
  ana::Watch w(o);
  w.poll(1);
  EXPECT_NE(w.render(t0).find("processes 1 on 1 host(s)"), std::string::npos) << w.render(t0);
  w.poll(2);
  EXPECT_NE(w.render(t0).find("processes 2 on 2 host(s)"), std::string::npos) << w.render(t0);
  for (int i = 3; i < 200 && w.ops_total() < 80000; ++i) w.poll(i);
  EXPECT_EQ(w.ops_total(), 80000u);
}

// Kernel phases (NCCL 2.31+): the reader takes initial_sync's median into the
// op; summary's phases section gives its percentiles and its share of the
// kernel time, for GPU-timed ops only; a malformed phases object is ignored.
TEST(Summary, KernelPhasesSectionFromInitialSync) {
  const auto dir = ni::test::temp_dir("phases");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"hA","pid":1})" "\n";
  // 10 ops of 100 us; initial_sync medians 10, 20, ... 100 us.
  for (int i = 1; i <= 10; ++i)
    text += R"({"type":"coll","comm_hash":"0x0b","comm_name":"tp","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":)" +
            std::to_string(i) + R"(,"bytes":3000,"start_wall_ns":1,"dur_us":100,"timing":"gpu","phases":{"initial_sync":[1,)" +
            std::to_string(10 * i) + R"(,100,4],"compute":[0,1,2,4]}})" "\n";
  // CPU-timed (left out), and a phases array that is no [min, median, max, n] (ignored).
  text += R"({"type":"coll","comm_hash":"0x0b","comm_name":"tp","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":11,"bytes":3000,"dur_us":100,"timing":"enqueue_cpu","phases":{"initial_sync":[1,99,100,4]}})" "\n";
  text += R"({"type":"coll","comm_hash":"0x0b","comm_name":"tp","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":12,"bytes":3000,"dur_us":100,"timing":"gpu","phases":{"initial_sync":[5,1,100,4]}})" "\n";
  ni::test::write_text(dir + "/a.jsonl", text);
  std::unique_ptr<ana::SummarySink> sink;
  const auto res = read_summary(dir, kDefault, sink);
  ana::Report r;
  ana::add_summary_sections(r, *sink, res, kDefault);
  std::ostringstream os;
  ana::render(r, ana::Format::kJson, os);
  const auto j = nlohmann::json::parse(os.str());
  ASSERT_TRUE(j.contains("phases")) << os.str();
  ASSERT_EQ(j["phases"]["rows"].size(), 1u);
  const auto& row = j["phases"]["rows"][0];
  EXPECT_EQ(row["ops"], 10);
  EXPECT_DOUBLE_EQ(row["initial_sync_p50_us"].get<double>(), 55);
  EXPECT_DOUBLE_EQ(row["initial_sync_p90_us"].get<double>(), 91);
  EXPECT_DOUBLE_EQ(row["wait_pct_p50"].get<double>(), 55);
  // No phases in a log: no section.
  const auto dir2 = ni::test::temp_dir("nophases");
  ni::test::write_text(dir2 + "/a.jsonl", R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"hA","pid":1})" "\n"
      R"({"type":"coll","comm_hash":"0x0b","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":1,"bytes":3000,"dur_us":100,"timing":"gpu"})" "\n");
  ana::Report r2;
  const auto res2 = read_summary(dir2, kDefault, sink);
  ana::add_summary_sections(r2, *sink, res2, kDefault);
  std::ostringstream os2;
  ana::render(r2, ana::Format::kJson, os2);
  EXPECT_FALSE(nlohmann::json::parse(os2.str()).contains("phases"));
}
