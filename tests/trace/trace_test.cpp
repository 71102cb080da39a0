// `nccl-inspector trace`: the Chrome Trace Event Format schema (every event has
// ph/name/cat, integer pid/tid, numeric ts; X has dur >= 0; flows paired; no
// partial overlap on a track; M names for every pid/tid used), the content
// (ops, flows, markers, filters, overflow lanes), the 1M-op size bound, and two
// real consumers when Node is present: Chrome DevTools' trace engine and
// speedscope in headless Chromium.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <string>
#include <vector>

#include "tests/analysis/fixtures.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_any(const std::string& path) {  // plain or gzip
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  if (!f) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

int run(const std::string& cmd, std::string* output = nullptr) {
  const std::string log = ni::test::temp_dir("cmd") + "/out.txt";
  const int rc = std::system((cmd + " >" + log + " 2>&1").c_str());
  if (output) *output = ni::test::read_text(log);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

std::string cli() { return NI_CLI; }

struct Slice {
  std::int64_t start, end;
};

// Everything the tests assert on, gathered in one pass over the events.
struct TraceCheck {
  std::vector<std::string> errors;
  json metadata;
  std::uint64_t events = 0, x = 0, x_ops = 0, x_channel = 0, s = 0, f = 0, i = 0, c = 0, m = 0;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::pair<int, int>, std::uint64_t> x_per_track;
  std::vector<json> instants;
  std::vector<json> ops;  // X events of ops (cat coll/p2p/ce)
  void error(const std::string& e) {
    if (errors.size() < 20) errors.push_back(e);
  }
};

// The writer puts one event per line; the whole file must also be valid JSON.
TraceCheck check_trace(const std::string& path, bool keep_ops = true) {
  TraceCheck t;
  const std::string text = read_any(path);
  if (!json::accept(text)) {
    t.error("not valid JSON");
    return t;
  }
  std::istringstream in(text);
  std::string line;
  std::map<std::pair<int, int>, std::vector<Slice>> tracks;
  std::map<std::string, int> flow_s, flow_f;
  std::set<int> pids_used;
  std::set<std::pair<int, int>> tids_used;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      if (line != "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[") t.error("unexpected first line: " + line.substr(0, 80));
      header = false;
      continue;
    }
    if (line.rfind("],\"metadata\":", 0) == 0) {
      t.metadata = json::parse(line.substr(13, line.size() - 14));
      continue;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    json e = json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object()) {
      t.error("bad event line: " + line.substr(0, 80));
      continue;
    }
    ++t.events;
    if (!e.contains("ph") || !e["ph"].is_string() || !e.contains("name") || !e["name"].is_string() ||
        !e.contains("cat") || !e["cat"].is_string()) {
      t.error("event without ph/name/cat: " + line.substr(0, 120));
      continue;
    }
    if (!e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("tid") || !e["tid"].is_number_integer()) {
      t.error("event without integer pid/tid: " + line.substr(0, 120));
      continue;
    }
    if (!e.contains("ts") || !e["ts"].is_number()) {
      t.error("event without numeric ts: " + line.substr(0, 120));
      continue;
    }
    const std::string ph = e["ph"];
    const int pid = e["pid"], tid = e["tid"];
    const std::int64_t ts = std::llround(e["ts"].get<double>() * 1000.0);
    if (ph == "M") {
      ++t.m;
      if (!e.contains("args") || !e["args"].is_object()) t.error("M without args");
      else if (e["name"] == "process_name") t.process_names[pid] = e["args"]["name"];
      else if (e["name"] == "thread_name") t.thread_names[{pid, tid}] = e["args"]["name"];
      continue;
    }
    pids_used.insert(pid);
    tids_used.insert({pid, tid});
    if (ph == "X") {
      ++t.x;
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) {
        t.error("X without dur >= 0: " + line.substr(0, 120));
        continue;
      }
      const std::int64_t d = std::llround(e["dur"].get<double>() * 1000.0);
      tracks[{pid, tid}].push_back({ts, ts + d});
      ++t.x_per_track[{pid, tid}];
      const std::string cat = e["cat"];
      if (cat == "channel") ++t.x_channel;
      if (cat == "coll" || cat == "p2p" || cat == "ce") {
        ++t.x_ops;
        if (keep_ops) t.ops.push_back(std::move(e));
      }
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e["id"].is_string()) {
        t.error("flow without a string id");
        continue;
      }
      (ph == "s" ? flow_s : flow_f)[e["id"]]++;
      (ph == "s" ? t.s : t.f)++;
      if (ph == "f" && e.value("bp", "") != "e") t.error("f without bp:e");
    } else if (ph == "i") {
      ++t.i;
      t.instants.push_back(std::move(e));
    } else if (ph == "C") {
      ++t.c;
      if (!e.contains("args") || !e["args"].is_object()) t.error("C without args");
      else
        for (const auto& [k, v] : e["args"].items())
          if (!v.is_number()) t.error("C arg " + k + " not a number");
    } else {
      t.error("unexpected phase " + ph);
    }
  }
  for (const auto& [id, n] : flow_s)
    if (n != 1 || !flow_f.count(id) || flow_f[id] != 1) t.error("flow " + id + " not paired");
  for (const auto& [id, n] : flow_f)
    if (!flow_s.count(id)) t.error("flow " + id + " finishes without a start");
  for (int pid : pids_used)
    if (!t.process_names.count(pid)) t.error("pid " + std::to_string(pid) + " without process_name");
  for (const auto& pt : tids_used)
    if (!t.thread_names.count(pt))
      t.error("tid " + std::to_string(pt.second) + " of pid " + std::to_string(pt.first) + " without thread_name");
  // no partial overlap: slices on a track nest or are disjoint
  for (auto& [pt, v] : tracks) {
    std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) {
      return a.start < b.start || (a.start == b.start && a.end > b.end);
    });
    std::vector<std::int64_t> stack;
    for (const auto& sl : v) {
      while (!stack.empty() && stack.back() <= sl.start) stack.pop_back();
      if (!stack.empty() && sl.end > stack.back()) {
        t.error("partial overlap on pid " + std::to_string(pt.first) + " tid " + std::to_string(pt.second) + " at " +
                std::to_string(sl.start));
        break;
      }
      stack.push_back(sl.end);
    }
  }
  return t;
}

std::string errors_of(const TraceCheck& t) {
  std::string s;
  for (const auto& e : t.errors) s += e + "\n";
  return s;
}

bool have_node_modules() {
  return std::system("node --version >/dev/null 2>&1") == 0 &&
         fs::exists(std::string(NI_SOURCE_DIR) + "/tests/js/node_modules/@paulirish/trace_engine/package.json");
}
bool have_chromium() {
  const char* c = std::getenv("CHROMIUM");
  return fs::exists(c ? c : "/usr/bin/chromium") &&
         fs::exists(std::string(NI_SOURCE_DIR) + "/tests/js/node_modules/speedscope/package.json");
}
std::string js_modules() { return std::string(NI_SOURCE_DIR) + "/tests/js/node_modules"; }
std::string js_script(const char* name) { return std::string(NI_SOURCE_DIR) + "/tests/trace/" + name; }

// A job from the fixture writer: 8 ranks on 2 hosts, rank 5 late, marks, drops on rank 0.
struct Fixture {
  std::string dir;
  ni::test::JobTruth truth;
  ni::test::JobSpec spec;
};
const Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.dir = ni::test::temp_dir("trace_fixture");
    x.spec.fault = ni::test::Fault::kStraggler;
    x.spec.iterations = 200;
    x.spec.marks = true;
    x.truth = ni::test::write_job(x.dir, x.spec);
    return x;
  }();
  return f;
}

TEST(Trace, FixtureSchemaAndContent) {
  const Fixture& fx = fixture();
  const std::string out = ni::test::temp_dir("trace_fx") + "/t.json";
  std::string log;
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + out, &log), 0) << log;
  const TraceCheck t = check_trace(out);
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  const int n = fx.spec.hosts * fx.spec.ranks_per_host;
  EXPECT_EQ(t.x_ops, fx.truth.ops);
  EXPECT_EQ(t.metadata["ops_written"], fx.truth.ops);
  EXPECT_EQ(t.x_channel, fx.truth.ops * 8);  // 8 ch_times per op in the fixture
  // one process per rank (+ pid 0 findings); names carry host and the global or comm rank
  EXPECT_EQ(t.process_names.size(), static_cast<std::size_t>(n) + 1);
  EXPECT_EQ(t.process_names.at(0), "findings");
  EXPECT_NE(t.process_names.at(1).find("host0 \u00b7 dp rank 0 \u00b7 pid 1000"), std::string::npos) << t.process_names.at(1);
  // flows: from the earliest rank to each other rank of every instance, but
  // none to a rank that started at the same nanosecond (the slices say which)
  const std::uint64_t per_iter = static_cast<std::uint64_t>((n - 1) + fx.spec.hosts * (fx.spec.ranks_per_host - 1));
  std::map<std::tuple<int, std::string, std::uint64_t>, std::vector<double>> starts;  // (comm track, op, seq)
  for (const json& o : t.ops) starts[{o["tid"].get<int>(), o["name"].get<std::string>(), o["args"]["seq"].get<std::uint64_t>()}].push_back(o["ts"].get<double>());
  std::uint64_t ties = 0;
  for (auto& [k, v] : starts) {
    const double first = *std::min_element(v.begin(), v.end());
    ties += static_cast<std::uint64_t>(std::count(v.begin(), v.end(), first)) - 1;
  }
  EXPECT_LT(ties, 10u);  // rare: the fixture jitters every start
  EXPECT_EQ(t.s, per_iter * static_cast<std::uint64_t>(fx.spec.iterations) - ties);
  EXPECT_EQ(t.f, t.s);
  // args
  const json& a = t.ops.front()["args"];
  for (const char* k : {"op", "bytes", "seq", "algo", "proto", "busbw_gbs", "timing", "transport", "net_bytes", "rank"})
    EXPECT_TRUE(a.contains(k)) << k << " missing in " << a.dump();
  // the late rank: late_us on its ops, a straggler marker on its process and on the findings process
  std::size_t straggler = 0, marks = 0, drops = 0;
  for (const auto& e : t.instants) {
    const std::string name = e["name"];
    if (name.rfind("straggler: rank 5 of dp", 0) == 0) ++straggler;
    if (name == "mark: step") ++marks;
    if (name.rfind("drops: 7", 0) == 0) ++drops;
  }
  EXPECT_EQ(straggler, 2u);
  EXPECT_EQ(marks, static_cast<std::size_t>(n * fx.spec.iterations));
  EXPECT_EQ(drops, 1u);
  double late5 = 0;
  int n5 = 0;
  for (const auto& e : t.ops)
    if (e["args"]["rank"] == 5 && e["args"]["op"] == "AllReduce" && e["args"].contains("late_us")) {
      late5 += e["args"]["late_us"].get<double>();
      ++n5;
    }
  ASSERT_GT(n5, 0);
  EXPECT_GT(late5 / n5, 30.0);
  // counters: HCA and network per process
  EXPECT_GT(t.c, 0u);
  EXPECT_TRUE(t.metadata.contains("clock_uncertainty_ns"));
}

// One host's clock estimate 2 ms ahead: the trace measures it from the
// collectives' common end and shifts that host's ranks back, so the ranks of
// each dp AllReduce end together on the trace; --no-clock-calibration keeps
// the logged times (2 ms apart).
TEST(Trace, ClockOffsetBetweenHostsIsCalibrated) {
  ni::test::JobSpec spec;
  spec.iterations = 100;
  spec.clock_offset_us = 2000;  // host1
  const std::string dir = ni::test::temp_dir("trace_clock");
  ni::test::write_job(dir, spec);
  // Per dp AllReduce instance (seq): the spread of its ranks' end times on the trace.
  auto end_spread = [&](const std::string& extra, TraceCheck& t) {
    const std::string out = dir + "/t" + std::to_string(extra.size()) + ".json";
    std::string log;
    EXPECT_EQ(run(cli() + " trace " + dir + " -o " + out + extra, &log), 0) << log;
    t = check_trace(out);
    EXPECT_TRUE(t.errors.empty()) << errors_of(t);
    std::map<std::uint64_t, std::pair<double, double>> ends;  // seq -> (min, max)
    for (const auto& e : t.ops) {
      if (e["args"]["op"] != "AllReduce" || e["args"]["nranks"] != spec.hosts * spec.ranks_per_host) continue;
      const double end = e["ts"].get<double>() + e["dur"].get<double>();
      auto [it, fresh] = ends.try_emplace(e["args"]["seq"].get<std::uint64_t>(), end, end);
      it->second.first = std::min(it->second.first, end);
      it->second.second = std::max(it->second.second, end);
    }
    std::vector<double> spreads;
    for (const auto& [seq, mm] : ends) spreads.push_back(mm.second - mm.first);
    std::sort(spreads.begin(), spreads.end());
    EXPECT_EQ(spreads.size(), static_cast<std::size_t>(spec.iterations));
    return spreads.empty() ? -1.0 : spreads[spreads.size() / 2];
  };
  TraceCheck cal, raw;
  const double calibrated = end_spread("", cal);
  const double logged = end_spread(" --no-clock-calibration", raw);
  EXPECT_GT(logged, 1900.0);  // the offset as logged
  EXPECT_LT(calibrated, 20.0);  // the fixture's ends scatter by a few us per rank
  ASSERT_TRUE(cal.metadata.contains("clock_calibration_us"));
  bool dp = false;
  for (const auto& [comm, c] : cal.metadata["clock_calibration_us"].items()) {
    if (comm.rfind("dp ", 0) != 0) continue;
    dp = true;
    EXPECT_NEAR(c["range"].get<double>(), 2000.0, 20.0);
    // host1's ranks (4-7) shifted by about 2 ms, host0's by about nothing
    for (const auto& [rank, shift] : c["shift"].items()) {
      const int r = std::stoi(rank.substr(5));
      EXPECT_NEAR(shift.get<double>(), r >= 4 ? 2000.0 : 0.0, 20.0) << rank;
    }
  }
  EXPECT_TRUE(dp);
  EXPECT_FALSE(raw.metadata.contains("clock_calibration_us"));
  // Over the memory budget each batch of communicators is calibrated as it
  // comes (the time axis, from the calibrated first op and ends, only after
  // the sweep): the trace is the one every op in memory gives, byte for byte,
  // with the detectors' markers (congestion: change points, outliers), with and
  // without a window (whose seconds count from the calibrated first op: then
  // the calibration is a sweep of its own first).
  spec.fault = ni::test::Fault::kCongestion;
  spec.congestion_first = 30;
  spec.congestion_last = 60;
  const std::string late = ni::test::temp_dir("trace_clock_late");
  ni::test::write_job(late, spec);
  for (const std::string extra : {"", " --from 0.01 --to 0.05"}) {
    std::string log;
    ASSERT_EQ(run(cli() + " trace " + late + " -o " + late + "/mem.json" + extra, &log), 0) << log;
    const std::string mem = ni::test::read_text(late + "/mem.json");
    EXPECT_NE(mem.find("finding,"), std::string::npos) << "no detector's marker";
    ASSERT_EQ(run(cli() + " trace " + late + " -o " + late + "/parts.json --memory-limit 1" + extra, &log), 0) << log;
    EXPECT_NE(log.find("batches of whole communicators"), std::string::npos) << log;
    EXPECT_TRUE(mem == ni::test::read_text(late + "/parts.json")) << extra;
  }
}

TEST(Trace, GzipEqualsPlain) {
  const Fixture& fx = fixture();
  const std::string d = ni::test::temp_dir("trace_gz");
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/t.json"), 0);
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/t.json.gz"), 0);
  const std::string plain = ni::test::read_text(d + "/t.json");
  const std::string gz = ni::test::read_text(d + "/t.json.gz");
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_LT(gz.size() * 5, plain.size());
  EXPECT_EQ(read_any(d + "/t.json.gz"), plain);  // also: deterministic output
}

TEST(Trace, Filters) {
  const Fixture& fx = fixture();
  const std::string d = ni::test::temp_dir("trace_filters");
  std::string log;
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/w.json --comm dp --op allreduce --rank 0 --rank 1 "
                "--from 0.05 --to 0.1",
                &log),
            0)
      << log;
  TraceCheck t = check_trace(d + "/w.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  ASSERT_GT(t.x_ops, 60u);
  EXPECT_LT(t.x_ops, 120u);  // ~50 iterations x 2 ranks
  for (const auto& e : t.ops) {
    EXPECT_EQ(e["args"]["op"], "AllReduce");
    EXPECT_TRUE(e["args"]["rank"] == 0 || e["args"]["rank"] == 1);
    EXPECT_GE(e["ts"].get<double>() + e["dur"].get<double>(), 50000.0);
    EXPECT_LE(e["ts"].get<double>(), 100000.0);
  }
  EXPECT_EQ(t.process_names.size() - t.process_names.count(0), 2u);  // 2 ranks (+ findings, if any)
  // sampling: every 10th seq, on every rank (flows still connect the kept instances)
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/s.json --sample 10", &log), 0) << log;
  t = check_trace(d + "/s.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  EXPECT_EQ(t.x_ops, fx.truth.ops / 10);
  EXPECT_EQ(t.s, static_cast<std::uint64_t>(fx.spec.iterations / 10) * 13u);
  for (const auto& e : t.ops) EXPECT_EQ(e["args"]["seq"].get<std::uint64_t>() % 10, 0u);
  // --max-ops samples automatically; no channel sub-tracks above --channel-ops-max
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/m.json --max-ops 500 --channel-ops-max 100", &log), 0);
  t = check_trace(d + "/m.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  EXPECT_LE(t.x_ops, 500u);
  EXPECT_GT(t.metadata["sample_every"].get<int>(), 1);
  EXPECT_EQ(t.x_channel, 0u);
  EXPECT_EQ(t.metadata["channel_tracks"], false);
  // ISO times and errors
  ASSERT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/iso.json --from 2026-01-01T00:00:00.050Z --to 2026-01-01T00:00:00.1Z"), 0);
  EXPECT_GT(check_trace(d + "/iso.json").x_ops, 0u);
  EXPECT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/x.json --comm nosuchcomm", &log), 2);
  EXPECT_NE(log.find("matches no communicator"), std::string::npos);
  EXPECT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/x.json --from yesterday", &log), 2);
  // A window that ends before it starts is an error, not an empty trace.
  EXPECT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/late.json --from 0.1 --to 0.05", &log), 2);
  EXPECT_NE(log.find("--from 0.1 is not before --to 0.05"), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(d + "/late.json"));
  EXPECT_EQ(run(cli() + " trace " + fx.dir + " -o " + d + "/late.json --from 2026-01-01T00:00:00.1Z --to 0.05", &log), 2);
  EXPECT_EQ(run(cli() + " trace " + fx.dir, &log), 2);  // -o is required
}

// Ops that partially overlap on one comm track (clock noise, concurrent ops) go to an overflow lane.
TEST(Trace, PartialOverlapGoesToOverflowLane) {
  const std::string d = ni::test::temp_dir("trace_overlap");
  std::vector<std::string> lines = {
      "{\"type\":\"meta\",\"wall_ns\":1,\"format\":\"nccl-inspector-log\",\"format_version\":1,\"plugin_version\":\"0.1.0\","
      "\"host\":\"h\",\"pid\":7,\"file_seq\":0,\"job\":{\"global_rank\":\"3\",\"global_rank_source\":\"RANK\"}}",
      "{\"type\":\"comm\",\"wall_ns\":1,\"comm_id\":1,\"comm_hash\":\"0x00000000000000aa\",\"comm_name\":\"w\",\"rank\":3,\"nranks\":4,\"nnodes\":1}"};
  const long long t0 = 1767225600000000000LL;
  const double spans[][2] = {{0, 100}, {50, 100}, {60, 10}, {200, 10}, {205, 1}};
  int seq = 0;
  for (const auto& sp : spans) {
    char b[512];
    std::snprintf(b, sizeof b,
                  "{\"type\":\"coll\",\"comm_hash\":\"0x00000000000000aa\",\"rank\":3,\"nranks\":4,\"seq\":%d,"
                  "\"func\":\"AllReduce\",\"bytes\":1024,\"algo\":\"RING\",\"proto\":\"LL\",\"start_wall_ns\":%lld,"
                  "\"dur_us\":%.3f,\"timing\":\"gpu\"}",
                  seq++, t0 + static_cast<long long>(sp[0] * 1000), sp[1]);
    lines.push_back(b);
  }
  ni::test::write_gz(d + "/h-pid7-0.jsonl.gz", lines);
  std::string log;
  ASSERT_EQ(run(cli() + " trace " + d + " -o " + d + "/t.json", &log), 0) << log;
  const TraceCheck t = check_trace(d + "/t.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  EXPECT_EQ(t.x_ops, 5u);
  EXPECT_EQ(t.metadata["overflow_ops"], 3);
  EXPECT_EQ(t.process_names.at(1), "h \u00b7 rank 3 \u00b7 pid 7");  // meta job.global_rank
  std::set<int> tids;
  for (const auto& e : t.ops) tids.insert(e["tid"].get<int>());
  EXPECT_EQ(tids, (std::set<int>{10000, 10001, 10002}));
  EXPECT_NE(t.thread_names.at({1, 10001}).find("overflow 1"), std::string::npos);
}

// NCCL 2.31+ user tags: a tagged call's slice is named after its tag ("AllReduce (layer 12 fwd)", the logs'
// tag record naming it; "(tag 99)" when nothing names it; --tag-map names win), with user_tag and tag_name in its
// args; untagged calls keep the function's name, and flows still join the ranks' slices.
TEST(Trace, TaggedCallsAreNamedInTheirSlices) {
  const std::string d = ni::test::temp_dir("trace_tags");
  const long long t0 = 1767225600000000000LL;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> lines = {
        "{\"type\":\"meta\",\"wall_ns\":1,\"format\":\"nccl-inspector-log\",\"format_version\":1,\"host\":\"h\","
        "\"pid\":" + std::to_string(10 + rank) + "}",
        "{\"type\":\"comm\",\"wall_ns\":1,\"comm_id\":1,\"comm_hash\":\"0x00000000000000aa\",\"comm_name\":\"tp\","
        "\"rank\":" + std::to_string(rank) + ",\"nranks\":2,\"nnodes\":1}"};
    if (rank == 1) lines.push_back("{\"type\":\"tag\",\"wall_ns\":5,\"user_tag\":12,\"label\":\"layer 12 fwd\"}");
    for (int seq = 0; seq < 7; ++seq) {
      char b[512];
      std::snprintf(b, sizeof b,
                    "{\"type\":\"coll\",\"comm_hash\":\"0x00000000000000aa\",\"rank\":%d,\"nranks\":2,\"seq\":%d,"
                    "\"func\":\"AllReduce\",\"bytes\":1024,\"algo\":\"RING\",\"proto\":\"LL\",\"start_wall_ns\":%lld,"
                    "\"dur_us\":10,\"timing\":\"gpu\"%s}",
                    rank, seq, t0 + seq * 100000LL + rank * 2000LL, seq == 6 ? "" : seq % 2 == 0 ? ",\"user_tag\":12" : ",\"user_tag\":99");
      lines.push_back(b);
    }
    ni::test::write_gz(d + "/h-pid" + std::to_string(10 + rank) + "-0.jsonl.gz", lines);
  }
  std::string log;
  ASSERT_EQ(run(cli() + " trace --no-clock-calibration " + d + " -o " + d + "/t.json", &log), 0) << log;
  TraceCheck t = check_trace(d + "/t.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  std::map<std::string, int> names;
  for (const auto& e : t.ops) {
    names[e["name"].get<std::string>()]++;
    const int tag = e["args"].value("user_tag", 0);
    if (tag == 12) {
      EXPECT_EQ(e["args"].value("tag_name", ""), "layer 12 fwd") << e.dump();
    } else if (tag == 99) {
      EXPECT_FALSE(e["args"].contains("tag_name")) << e.dump();
    }
  }
  const std::map<std::string, int> want = {{"AllReduce (layer 12 fwd)", 6}, {"AllReduce (tag 99)", 6}, {"AllReduce", 2}};
  EXPECT_EQ(names, want);
  EXPECT_GT(t.s, 0u) << "flows between the two ranks' slices";
  ni::test::write_text(d + ".tags", "99 mapped\n12 from the map\n");
  ASSERT_EQ(run(cli() + " trace --no-clock-calibration --tag-map " + d + ".tags " + d + " -o " + d + "/t2.json", &log), 0)
      << log;
  t = check_trace(d + "/t2.json");
  names.clear();
  for (const auto& e : t.ops) names[e["name"].get<std::string>()]++;
  const std::map<std::string, int> mapped = {{"AllReduce (from the map)", 6}, {"AllReduce (mapped)", 6}, {"AllReduce", 2}};
  EXPECT_EQ(names, mapped);
  // Over the memory budget the shown ops come back from the spill with their tags: the same trace.
  ASSERT_EQ(run(cli() + " trace --no-clock-calibration " + d + " -o " + d + "/t3.json --memory-limit 1", &log), 0) << log;
  EXPECT_NE(log.find("of whole communicators"), std::string::npos) << log;
  EXPECT_TRUE(ni::test::read_text(d + "/t.json") == ni::test::read_text(d + "/t3.json"));
  ni::test::write_text(d + ".bad", "zz\n");
  EXPECT_EQ(run(cli() + " trace --tag-map " + d + ".bad " + d + " -o " + d + "/t3.json", &log), 2) << log;
}

TEST(Trace, NoStartTimes) {
  const std::string d = ni::test::temp_dir("trace_upstream");
  ni::test::write_upstream_log(d + "/rank0.log", 0, 2, 10);
  std::string log;
  EXPECT_EQ(run(cli() + " trace " + d + " -o " + d + "/t.json", &log), 2);
  EXPECT_NE(log.find("no op has a start time"), std::string::npos) << log;
}

// The real plugin inside nccl-emu, verbose (ch_times) with network events (HCAs), 2 processes x 4 GPUs.
const std::string& real_trace() {
  static std::string path = [] {
    const std::string d = ni::test::temp_dir("trace_real");
    const std::string logs = d + "/logs";
    const std::string env = "NCCL_INSPECTOR_DUMP_DIR=" + logs +
                            " NCCL_INSPECTOR_ENABLE_NET=1 NCCL_INSPECTOR_DUMP_VERBOSE=1 NCCL_DEBUG=WARN ";
    const std::string emu = std::string(NCCL_EMU) + " --plugin " + INSPECTOR_SO + " --nccl 2.30 --workload " +
                            NI_SOURCE_DIR + "/scripts/demo-job.json --world 8 --seed 7 --start-at $S ";
    const std::string cmd = "S=$(( $(date +%s%N) + 300000000 )); " + env + emu + "--ranks 0-3 & " + env + emu +
                            "--ranks 4-7; wait";
    std::string log;
    if (run("bash -c '" + cmd + "'", &log) != 0) return std::string();
    if (run(cli() + " trace " + logs + " -o " + d + "/real.json.gz", &log) != 0) return std::string();
    return d + "/real.json.gz";
  }();
  return path;
}

TEST(Trace, RealPluginSchema) {
  const std::string& p = real_trace();
  ASSERT_FALSE(p.empty());
  const TraceCheck t = check_trace(p);
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  EXPECT_GT(t.x_ops, 1000u);
  EXPECT_GT(t.x_channel, t.x_ops);  // per-channel sub-tracks from ch_times
  EXPECT_GT(t.s, 0u);
  EXPECT_GT(t.c, 0u);               // net / HCA counters
  EXPECT_EQ(t.process_names.size() - (t.process_names.count(0) ? 1 : 0), 8u);
  bool channel_track = false;
  for (const auto& [pt, name] : t.thread_names) channel_track |= name.find(" \u00b7 ch ") != std::string::npos;
  EXPECT_TRUE(channel_track);
}

// Consumer 1: Chrome DevTools' trace engine parses it; processes, threads and slices as written.
TEST(TraceConsumers, DevToolsTraceEngine) {
  if (!have_node_modules()) GTEST_SKIP() << "node or tests/js/node_modules missing (npm ci --prefix tests/js)";
  for (const std::string& p : {real_trace(), std::string()}) {
    std::string trace = p;
    if (trace.empty()) {  // and the fixture trace (with findings, marks, drops)
      trace = ni::test::temp_dir("trace_te") + "/fx.json";
      ASSERT_EQ(run(cli() + " trace " + fixture().dir + " -o " + trace), 0);
    }
    ASSERT_FALSE(trace.empty());
    const TraceCheck t = check_trace(trace);
    std::string out;
    ASSERT_EQ(run("node " + js_script("trace_engine.mjs") + " " + js_modules() + " " + trace, &out), 0) << out;
    const json r = json::parse(out.substr(out.find('{')));
    std::set<int> pids_with_slices;
    for (const auto& [pt, n] : t.x_per_track) pids_with_slices.insert(pt.first);
    std::size_t seen = 0;
    for (const auto& p2 : r["processes"]) {
      const int pid = p2["pid"];
      if (!pids_with_slices.count(pid)) continue;
      ++seen;
      EXPECT_EQ(p2["name"], t.process_names.at(pid));
      for (const auto& th : p2["threads"]) {
        const int tid = th["tid"];
        ASSERT_TRUE(t.thread_names.count({pid, tid})) << pid << " " << tid;
        EXPECT_EQ(th["name"], t.thread_names.at({pid, tid}));
        if (tid >= 10000) {
          EXPECT_EQ(th["entries"].get<std::uint64_t>(), t.x_per_track.at({pid, tid})) << pid << " " << tid;
        }
      }
    }
    EXPECT_EQ(seen, pids_with_slices.size());
    // Every flow arrow binds to its two slices (0 did when the flows' category
    // differed from the slices').
    EXPECT_GT(t.s, 0u);
    EXPECT_EQ(r["flows"].get<std::size_t>(), t.s) << trace;
  }
}

// Consumer 2: speedscope renders it in headless Chromium (imports, no warnings about nesting).
TEST(TraceConsumers, SpeedscopeInChromium) {
  if (!have_node_modules() || !have_chromium()) GTEST_SKIP() << "node, chromium or tests/js/node_modules missing";
  const std::string& trace = real_trace();
  ASSERT_FALSE(trace.empty());
  const std::string png = ni::test::temp_dir("trace_ss") + "/speedscope.png";
  std::string out;
  ASSERT_EQ(run("node " + js_script("speedscope.mjs") + " " + js_modules() + " " + trace + " " + png, &out), 0) << out;
  const json r = json::parse(out.substr(out.find('{')));
  EXPECT_TRUE(r["imported"].get<bool>()) << out;
  EXPECT_NE(r["title"].get<std::string>().find("speedscope"), std::string::npos);
  EXPECT_NE(r["title"].get<std::string>().find("real.json.gz"), std::string::npos) << out;
  EXPECT_TRUE(r["errors"].empty()) << out;
  EXPECT_TRUE(r["warnings"].empty()) << out;
  EXPECT_GT(fs::file_size(png), 10000u);
}

// A 1M-op log gives a trace within the documented bound (docs/analysis.md, "Size"):
// --max-ops 250000 by default, <= 700 bytes of JSON per op written.
TEST(Trace, OneMillionOpsSizeBound) {
  const std::string d = ni::test::temp_dir("trace_1m");
  const int ranks = 8, per_rank = 125000;
  const long long t0 = 1767225600000000000LL;
  for (int r = 0; r < ranks; ++r) {
    gzFile f = gzopen((d + "/h" + std::to_string(r / 4) + "-pid" + std::to_string(100 + r) + "-0.jsonl.gz").c_str(), "wb1");
    ASSERT_NE(f, nullptr);
    std::string buf;
    char b[640];
    std::snprintf(b, sizeof b,
                  "{\"type\":\"meta\",\"wall_ns\":1,\"format\":\"nccl-inspector-log\",\"format_version\":1,"
                  "\"plugin_version\":\"0.1.0\",\"host\":\"h%d\",\"pid\":%d,\"file_seq\":0,\"job\":{\"global_rank\":\"%d\"}}\n",
                  r / 4, 100 + r, r);
    buf += b;
    for (int i = 0; i < per_rank; ++i) {
      std::snprintf(b, sizeof b,
                    "{\"type\":\"coll\",\"comm_id\":1,\"comm_hash\":\"0x00000000000000bb\",\"rank\":%d,\"nranks\":%d,"
                    "\"seq\":%d,\"func\":\"AllReduce\",\"dtype\":\"bfloat16\",\"count\":524288,\"bytes\":1048576,"
                    "\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"nchannels\":8,\"nwarps\":16,\"start_wall_ns\":%lld,"
                    "\"dur_us\":%.3f,\"timing\":\"gpu\",\"algbw_gbs\":60,\"busbw_gbs\":105,\"ch_util\":0.9,"
                    "\"ch_balance\":0.95,\"transport\":\"network\"}\n",
                    r, ranks, i, t0 + i * 25000LL + (r * 37 + i * 11) % 900, 14.0 + (i % 7) * 0.5);
      buf += b;
      if (buf.size() > (1u << 20)) {
        ASSERT_GT(gzwrite(f, buf.data(), static_cast<unsigned>(buf.size())), 0);
        buf.clear();
      }
    }
    if (!buf.empty()) {
      ASSERT_GT(gzwrite(f, buf.data(), static_cast<unsigned>(buf.size())), 0);
    }
    gzclose(f);
  }
  std::string log;
  const std::string out = d + "/big.json";
  ASSERT_EQ(run(cli() + " trace " + d + " -o " + out, &log), 0) << log;
  const std::uint64_t size = fs::file_size(out);
  const TraceCheck t = check_trace(out, false);
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  EXPECT_EQ(t.metadata["ops_input"], 1000000);
  EXPECT_LE(t.x_ops, 250000u);
  EXPECT_GE(t.x_ops, 200000u);
  EXPECT_LE(size, t.x_ops * 700 + (1u << 20)) << size << " bytes for " << t.x_ops << " ops";
  std::printf("1M-op log: %llu ops written (sample every %d), %llu events, %llu bytes (%.0f B/op, %.0f B/event)\n",
              static_cast<unsigned long long>(t.x_ops), t.metadata["sample_every"].get<int>(),
              static_cast<unsigned long long>(t.events), static_cast<unsigned long long>(size),
              static_cast<double>(size) / static_cast<double>(t.x_ops), static_cast<double>(size) / static_cast<double>(t.events));
  fs::remove_all(d);
}

}  // namespace

namespace {

json report_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"ni-data\">";
  const auto a = html.find(open);
  if (a == std::string::npos) return json();
  const auto b = html.find("</script>", a);
  return json::parse(html.substr(a + open.size(), b - a - open.size()), nullptr, false);
}

// The inlined Plotly.js (between its script tags) and the page without it.
const char kPlotlyOpen[] = "<script id=\"ni-plotly\">\n";
std::string report_plotly(const std::string& html) {
  const auto a = html.find(kPlotlyOpen);
  if (a == std::string::npos) return {};
  const auto from = a + sizeof kPlotlyOpen - 1;
  const auto b = html.find("\n</script>", from);
  return b == std::string::npos ? std::string() : html.substr(from, b - from);
}
std::string report_without_plotly(const std::string& html) {
  const std::string js = report_plotly(html);
  const auto a = html.find(kPlotlyOpen);
  return a == std::string::npos ? html : html.substr(0, a) + html.substr(a + sizeof kPlotlyOpen - 1 + js.size());
}

// The bundle the build embedded (web/node_modules), when there is one.
std::string plotly_bundle() { return fs::exists(NI_PLOTLY_JS) ? ni::test::read_text(NI_PLOTLY_JS) : std::string(); }

// Data points of one chart of the data block, counted from its arrays: box = boxes, line = points + outlier
// marks, bar = non-null values, heatmap = non-null cells. The page must draw exactly these.
std::size_t chart_points(const json& p) {
  std::size_t n = 0;
  const std::string type = p.value("type", "");
  if (type == "box") {
    for (const auto& se : p["series"]) n += se["boxes"].size();
  } else if (type == "line") {
    for (const auto& se : p["series"]) n += se["points"].size();
    n += p.value("marks", json::array()).size();
  } else if (type == "bar") {
    for (const auto& se : p["series"])
      for (const auto& v : se["values"]) n += !v.is_null();
  } else if (type == "heatmap") {
    for (const auto& r : p["values"])
      for (const auto& v : r) n += !v.is_null();
  }
  return n;
}

// "wrote FILE: N charts, ..." from the CLI's stderr.
int cli_charts(const std::string& log) {
  const auto a = log.find("wrote ");
  const auto b = a == std::string::npos ? a : log.find(": ", a);
  return b == std::string::npos ? -1 : std::atoi(log.c_str() + b + 2);
}

// `report` on a job whose host1 clock runs 2 ms ahead: the health section
// opens with the findings and says what the calibration shifted.
TEST(Report, ClockCalibrationTable) {
  if (plotly_bundle().empty()) GTEST_SKIP() << "built without " << NI_PLOTLY_JS << " (npm ci --prefix web)";
  ni::test::JobSpec spec;
  spec.iterations = 60;
  spec.clock_offset_us = 2000;
  const std::string dir = ni::test::temp_dir("report_clock");
  ni::test::write_job(dir, spec);
  std::string log;
  ASSERT_EQ(run(cli() + " report " + dir + " -o " + dir + "/r.html", &log), 0) << log;
  EXPECT_NE(log.find("clocks calibrated"), std::string::npos) << log;
  const json data = report_data(ni::test::read_text(dir + "/r.html"));
  ASSERT_TRUE(data.is_object());
  const json& health = data["sections"][0];
  ASSERT_EQ(health["id"], "health");
  EXPECT_EQ(health["tables"][0]["title"].get<std::string>().rfind("Findings", 0), 0u);
  bool found = false;
  for (const auto& t : health["tables"]) {
    if (t["title"].get<std::string>().rfind("Clock calibration", 0) != 0) continue;
    found = true;
    bool dp = false;
    for (const auto& r : t["rows"])
      if (r[0].get<std::string>().rfind("dp", 0) == 0) {
        dp = true;
        EXPECT_NEAR(r[2].get<double>(), 2000.0, 20.0);  // offset range before
        EXPECT_EQ(r[4].get<std::string>().find("host1"), r[4].get<std::string>().size() - 5);  // most ahead
      }
    EXPECT_TRUE(dp);
  }
  EXPECT_TRUE(found);
}

// `report`: one self-contained page; the data block lists every chart; a baseline adds dashed curves; Plotly.js is
// inlined verbatim, license banner first.
TEST(Report, SelfContainedWithBaseline) {
  const std::string bundle = plotly_bundle();
  if (bundle.empty()) GTEST_SKIP() << "built without " << NI_PLOTLY_JS << " (npm ci --prefix web)";
  const Fixture& fx = fixture();
  const std::string d = ni::test::temp_dir("report_fx");
  ni::test::JobSpec slow = fx.spec;
  slow.slowdown = 1.3;
  const std::string base = ni::test::temp_dir("report_fx_base");
  ni::test::write_job(base, slow);
  std::string log;
  ASSERT_EQ(run(cli() + " report " + fx.dir + " -o " + d + "/r.html --baseline " + base, &log), 0) << log;
  const std::string html = ni::test::read_text(d + "/r.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // Plotly.js as npm ships it, its MIT banner included
  const std::string js = report_plotly(html);
  EXPECT_EQ(js.size(), bundle.size());
  EXPECT_TRUE(js == bundle) << "the inlined Plotly.js differs from " << NI_PLOTLY_JS;
  EXPECT_EQ(js.rfind("/**\n* plotly.js", 0), 0u);
  EXPECT_NE(js.find("Licensed under the MIT license"), std::string::npos);
  // our part of the page asks for nothing from outside (Plotly's own strings, e.g. its logo link, are checked by
  // running it: ReportConsumers.ChromiumOfflineRender)
  const std::string page = report_without_plotly(html);
  for (const char* bad : {"<link", "src=\"http", "href=\"http", "@import", "url(http", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(page.find(bad), std::string::npos) << bad;
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(page.find("displaylogo: false"), std::string::npos);
  const json data = report_data(html);
  ASSERT_TRUE(data.is_object());
  std::set<std::string> ids;
  std::size_t plots = 0, dashed = 0, points = 0;
  for (const auto& s : data["sections"]) {
    ids.insert(s["id"].get<std::string>());
    plots += s["plots"].size();
    for (const auto& p : s["plots"]) {
      EXPECT_EQ(p["points"], chart_points(p)) << p["title"];
      EXPECT_GT(chart_points(p), 0u) << p["title"];
      points += chart_points(p);
      if (p.contains("series"))
        for (const auto& se : p["series"]) dashed += se.value("dash", false);
    }
  }
  // "hangs": the registered analysis's own section (here: no hang, and why).
  EXPECT_EQ(ids, (std::set<std::string>{"health", "busbw", "size", "latency", "time", "stragglers", "channels", "occupancy",
                                        "hangs"}));
  // busbw box, 2 size charts, 3 comms over time, heatmap, channel busy, balance, HCA, occupancy, gaps
  EXPECT_EQ(plots, 12u);
  EXPECT_EQ(data["expected_plots"], plots);
  EXPECT_EQ(cli_charts(log), static_cast<int>(plots)) << log;
  EXPECT_EQ(data["expected_points"], points);
  EXPECT_EQ(data["plotly"].get<std::string>().rfind("plotly.js", 0), 0u) << data["plotly"];
  EXPECT_GE(dashed, 2u);  // baseline curves for AllReduce and AllGather
  // the late rank shows as a flagged row
  EXPECT_NE(html.find("\"LATE\""), std::string::npos);
  // the page around Plotly.js stays small: data and script
  EXPECT_LT(page.size(), 400000u);
  EXPECT_EQ(html.size(), page.size() + sizeof kPlotlyOpen - 1 + js.size());
}

// `report` with kernel phases (NCCL 2.31+): the "phases" section, a box per
// (op, communicator) of the share of kernel time waiting for the peers and a
// row per (communicator, op, size); the comm whose ops wait half their time
// shows 50 %, the other 1 %.
TEST(Report, KernelTimeSplitFromPhases) {
  if (plotly_bundle().empty()) GTEST_SKIP() << "built without " << NI_PLOTLY_JS << " (npm ci --prefix web)";
  const std::string dir = ni::test::temp_dir("report_phases");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"hA","pid":1})" "\n";
  for (int i = 0; i < 20; ++i)
    for (const auto& [hash, sync] : {std::pair<const char*, int>{"0x0a", 50}, {"0x0b", 1}})
      text += std::string(R"({"type":"coll","comm_hash":")") + hash +
              R"(","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING","proto":"LL","seq":)" +
              std::to_string(i) + R"(,"bytes":1048576,"start_wall_ns":)" + std::to_string(1000000000 + i * 1000000) +
              R"(,"dur_us":100,"timing":"gpu","busbw_gbs":10,"phases":{"initial_sync":[0,)" + std::to_string(sync) +
              R"(,100,4]}})" "\n";
  ni::test::write_text(dir + "/a.jsonl", text);
  std::string log;
  ASSERT_EQ(run(cli() + " report " + dir + " -o " + dir + "/r.html", &log), 0) << log;
  const json data = report_data(ni::test::read_text(dir + "/r.html"));
  const json* ph = nullptr;
  for (const auto& sec : data["sections"])
    if (sec["id"] == "phases") ph = &sec;
  ASSERT_NE(ph, nullptr) << data.dump().substr(0, 2000);
  ASSERT_EQ((*ph)["plots"].size(), 1u);
  EXPECT_EQ((*ph)["plots"][0]["type"], "box");
  EXPECT_EQ((*ph)["plots"][0]["series"].size(), 2u);
  ASSERT_EQ((*ph)["tables"].size(), 1u);
  const json& rows = (*ph)["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 2u);
  std::set<double> shares;
  for (const auto& r : rows) {
    EXPECT_EQ(r[3].get<int>(), 20) << r.dump();
    shares.insert(r[6].get<double>());
  }
  EXPECT_EQ(shares, (std::set<double>{1.0, 50.0}));
  // Over a memory limit (each communicator a batch of its own): the same page.
  ASSERT_EQ(run(cli() + " report --memory-limit 1 " + dir + " -o " + dir + "/b.html", &log), 0) << log;
  EXPECT_NE(log.find("over the memory limit"), std::string::npos) << log;
  EXPECT_TRUE(ni::test::read_text(dir + "/b.html") == ni::test::read_text(dir + "/r.html"));
}

// NCCL 2.31+ user tags: the Tags section gives each tag (named by the logs' tag record, or its number) and the
// untagged calls their records, kernel time summed over ranks and its share, busiest first, with a busbw box per
// tag; a log without tags has no such section.
TEST(Report, TagsSectionSplitsTheTimePerTag) {
  if (plotly_bundle().empty()) GTEST_SKIP() << "built without " << NI_PLOTLY_JS << " (npm ci --prefix web)";
  const std::string dir = ni::test::temp_dir("report_tags");
  std::string text = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"hA","pid":1})" "\n"
                     R"({"type":"tag","wall_ns":1000000000,"user_tag":12,"label":"layer 12 fwd"})" "\n";
  auto coll = [&](int seq, int dur, int busbw, const char* tag) {
    text += R"({"type":"coll","comm_hash":"0x0a","rank":0,"nranks":4,"nnodes":1,"func":"AllReduce","algo":"RING",)"
            R"("proto":"LL","seq":)" + std::to_string(seq) + R"(,"bytes":1048576,"start_wall_ns":)" +
            std::to_string(1000000000 + seq * 1000000) + R"(,"dur_us":)" + std::to_string(dur) +
            R"(,"timing":"gpu","busbw_gbs":)" + std::to_string(busbw) + (tag ? std::string(R"(,"user_tag":)") + tag : "") +
            "}\n";
  };
  int seq = 0;
  for (int i = 0; i < 10; ++i) coll(seq++, 100, 10, "12");
  for (int i = 0; i < 10; ++i) coll(seq++, 300, 5, "13");
  for (int i = 0; i < 5; ++i) coll(seq++, 100, 10, nullptr);
  ni::test::write_text(dir + "/a.jsonl", text);
  std::string log;
  ASSERT_EQ(run(cli() + " report " + dir + " -o " + dir + "/r.html", &log), 0) << log;
  const json data = report_data(ni::test::read_text(dir + "/r.html"));
  const json* tg = nullptr;
  for (const auto& sec : data["sections"])
    if (sec["id"] == "tags") tg = &sec;
  ASSERT_NE(tg, nullptr) << data.dump().substr(0, 2000);
  ASSERT_EQ((*tg)["plots"].size(), 1u);
  EXPECT_EQ((*tg)["plots"][0]["categories"], json::parse(R"x(["13","layer 12 fwd","(untagged)"])x"));
  const json& rows = (*tg)["tables"][0]["rows"];
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::tuple<std::string, int, double, double>> want = {
      {"13", 10, 3.0, 3000.0 / 45}, {"layer 12 fwd", 10, 1.0, 1000.0 / 45}, {"(untagged)", 5, 0.5, 500.0 / 45}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(rows[i][0], std::get<0>(want[i])) << rows[i].dump();
    EXPECT_EQ(rows[i][2], std::get<1>(want[i])) << rows[i].dump();
    EXPECT_NEAR(rows[i][3].get<double>(), std::get<2>(want[i]), 1e-6) << rows[i].dump();
    EXPECT_NEAR(rows[i][4].get<double>(), std::get<3>(want[i]), 1e-3) << rows[i].dump();
  }
  ni::test::write_text(dir + ".tags", "13 layer 13 bwd\n");
  ASSERT_EQ(run(cli() + " report --tag-map " + dir + ".tags " + dir + " -o " + dir + "/r2.html", &log), 0) << log;
  EXPECT_NE(ni::test::read_text(dir + "/r2.html").find("\"layer 13 bwd\""), std::string::npos);
  // Over a memory limit: the same page.
  ASSERT_EQ(run(cli() + " report --memory-limit 1 " + dir + " -o " + dir + "/b.html", &log), 0) << log;
  EXPECT_NE(log.find("over the memory limit"), std::string::npos) << log;
  EXPECT_TRUE(ni::test::read_text(dir + "/b.html") == ni::test::read_text(dir + "/r.html"));
  // Without tags: no section.
  const std::string plain = ni::test::temp_dir("report_no_tags");
  std::string untagged = text;
  std::size_t at = 0;
  while ((at = untagged.find(R"(,"user_tag":12)")) != std::string::npos) untagged.erase(at, 14);
  while ((at = untagged.find(R"(,"user_tag":13)")) != std::string::npos) untagged.erase(at, 14);
  ni::test::write_text(plain + "/a.jsonl", untagged);
  ASSERT_EQ(run(cli() + " report " + plain + " -o " + plain + "/r.html", &log), 0) << log;
  const json plain_data = report_data(ni::test::read_text(plain + "/r.html"));
  for (const auto& sec : plain_data["sections"]) EXPECT_NE(sec["id"], "tags");
}

// A build without the bundle says how to get one and writes nothing; --plotly-js inlines a given file (escaping
// "</script"), and refuses a file that is not Plotly.js.
TEST(Report, WithoutBundle) {
  const Fixture& fx = fixture();
  const std::string d = ni::test::temp_dir("report_nobundle");
  const std::string nob = NI_CLI_NOBUNDLE;
  std::string log;
  EXPECT_EQ(run(nob + " report " + fx.dir + " -o " + d + "/r.html", &log), 2) << log;
  EXPECT_NE(log.find("no Plotly.js"), std::string::npos) << log;
  EXPECT_NE(log.find("npm ci --prefix web"), std::string::npos) << log;
  EXPECT_NE(log.find("--plotly-js FILE"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(d + "/r.html"));
  // a file that is not Plotly.js
  EXPECT_EQ(run(nob + " report " + fx.dir + " -o " + d + "/r.html --plotly-js " + fx.dir, &log), 2) << log;
  EXPECT_NE(log.find("not a Plotly.js bundle"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(d + "/r.html"));
  // a stand-in bundle with an end tag in a string: inlined, the tag made harmless
  {
    std::ofstream f(d + "/fake.js");
    f << "/* fake */ window.Plotly = {newPlot: async () => {}}; const s = \"</SCRIPT><b>\";";
  }
  ASSERT_EQ(run(nob + " report " + fx.dir + " -o " + d + "/r.html --plotly-js " + d + "/fake.js", &log), 0) << log;
  std::string html = ni::test::read_text(d + "/r.html");
  EXPECT_NE(html.find("const s = \"<\\/SCRIPT><b>\";"), std::string::npos);
  EXPECT_EQ(html.find("</SCRIPT>"), std::string::npos);
  EXPECT_EQ(report_plotly(html).rfind("/* fake */", 0), 0u);
  // the real one through the option gives the same page as the built-in one
  const std::string bundle = plotly_bundle();
  if (bundle.empty()) return;
  ASSERT_EQ(run(nob + " report " + fx.dir + " -o " + d + "/opt.html --plotly-js " + NI_PLOTLY_JS, &log), 0) << log;
  ASSERT_EQ(run(cli() + " report " + fx.dir + " -o " + d + "/emb.html", &log), 0) << log;
  html = ni::test::read_text(d + "/opt.html");
  EXPECT_TRUE(report_plotly(html) == bundle);
  EXPECT_EQ(report_data(html)["sections"], report_data(ni::test::read_text(d + "/emb.html"))["sections"]);
}

// The page in headless Chromium, every request blocked and counted: none attempted, no console error, and every
// chart of the data block drawn by Plotly with exactly the data points the C++ side wrote.
TEST(ReportConsumers, ChromiumOfflineRender) {
  if (!have_node_modules() || !have_chromium()) GTEST_SKIP() << "node, chromium or tests/js/node_modules missing";
  if (plotly_bundle().empty()) GTEST_SKIP() << "built without " << NI_PLOTLY_JS << " (npm ci --prefix web)";
  for (const bool real : {false, true}) {
    const std::string d = ni::test::temp_dir(real ? "report_real" : "report_cr");
    std::string input = fixture().dir;
    if (real) {
      ASSERT_FALSE(real_trace().empty());
      input = fs::path(real_trace()).parent_path().string() + "/logs";
    }
    std::string log, out;
    ASSERT_EQ(run(cli() + " report " + input + " -o " + d + "/r.html", &log), 0) << log;
    // what the page must show, from its data block
    const json data = report_data(ni::test::read_text(d + "/r.html"));
    std::vector<std::pair<std::string, std::size_t>> want;  // (type, points) per chart, in page order
    for (const auto& s : data["sections"])
      for (const auto& p : s["plots"]) want.push_back({p["type"].get<std::string>(), chart_points(p)});
    EXPECT_EQ(cli_charts(log), static_cast<int>(want.size())) << log;
    ASSERT_EQ(run("node " + js_script("report_page.mjs") + " " + js_modules() + " " + d + "/r.html " + d + "/r.png", &out), 0) << out;
    const json r = json::parse(out.substr(out.find('{')));
    EXPECT_TRUE(r["requests"].empty()) << out;
    EXPECT_TRUE(r["errors"].empty()) << out;
    EXPECT_EQ(r["modebar_links"], 0) << out;
    EXPECT_TRUE(r["plotly_version"].is_string()) << out;
    // fixture: busbw, 2 sizes, 3 comms, heatmap, channels, balance, HCA, occupancy, gaps; the emulated job more
    EXPECT_GE(want.size(), real ? 14u : 11u) << out;
    EXPECT_EQ(r["expected"], want.size()) << out;
    EXPECT_EQ(r["plotly_divs"], want.size()) << out;
    EXPECT_EQ(r["rendered"], want.size()) << out;
    ASSERT_EQ(r["plots"].size(), want.size()) << out;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const json& p = r["plots"][i];
      EXPECT_EQ(p["type"], want[i].first) << p;
      EXPECT_EQ(p["points"], want[i].second) << p;
      EXPECT_EQ(p["expected"], want[i].second) << p;
      EXPECT_GT(p["traces"].get<int>(), 0) << p;
      EXPECT_GT(p["marks"].get<int>(), 0) << p;  // SVG points, bars, boxes or the heatmap image
      EXPECT_EQ(p["svg"].get<int>() > 0, true) << p;
      if (want[i].first != "heatmap") {  // one SVG mark per point at least (change points add markers)
        EXPECT_GE(p["marks"].get<std::size_t>(), want[i].second) << p;
      }
    }
    EXPECT_GE(r["tables"].get<int>(), 5);
    EXPECT_GT(fs::file_size(d + "/r.png"), 50000u);
    std::printf("report (%s): %zu charts, %s points, %s kB, rendered in %d ms\n", real ? "emulated job" : "fixture",
                want.size(), r["expected_points"].dump().c_str(), std::to_string(fs::file_size(d + "/r.html") / 1000).c_str(),
                r["render_ms"].get<int>());
  }
}

}  // namespace

namespace {

// One process driving 8 GPUs (two "tp" comms of 4 local ranks, four "dp" comms of 2): 8 distinct processes in
// the trace, each GPU's tp and dp tracks together (the k-th tp/dp comm record of the process is GPU k).
TEST(Trace, MultiGpuProcess) {
  const std::string d = ni::test::temp_dir("trace_multi");
  std::string log;
  ASSERT_EQ(run("NCCL_INSPECTOR_DUMP_DIR=" + d + "/logs " + NCCL_EMU + " --plugin " + INSPECTOR_SO +
                " --nccl 2.30 --iters 12 --quiet", &log), 0) << log;
  ASSERT_EQ(run(cli() + " trace " + d + "/logs -o " + d + "/t.json", &log), 0) << log;
  const TraceCheck t = check_trace(d + "/t.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  std::set<std::string> names;
  for (const auto& [pid, name] : t.process_names)
    if (pid > 0) names.insert(name);
  EXPECT_EQ(names.size(), 8u);
  for (const auto& n : names) EXPECT_NE(n.find(" GPU "), std::string::npos) << n;
  // every GPU has exactly one tp and one dp track (+ markers)
  std::map<int, std::set<std::string>> comms_per_pid;
  for (const auto& [pt, name] : t.thread_names)
    if (pt.first > 0 && pt.second >= 10000 && pt.second % 10000 == 0) comms_per_pid[pt.first].insert(name.substr(0, 2));
  ASSERT_EQ(comms_per_pid.size(), 8u);
  for (const auto& [pid, c] : comms_per_pid) EXPECT_EQ(c, (std::set<std::string>{"dp", "tp"})) << pid;
}

}  // namespace

namespace {

// A process driving two GPUs whose comm records name their CUDA devices in an
// order the init-order heuristic would get wrong: the plugin's cuda_dev wins.
TEST(Trace, MultiGpuProcessNamedByTheCommRecords) {
  const std::string d = ni::test::temp_dir("trace_cuda_dev");
  std::vector<std::string> lines = {
      R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"n1","pid":10,"wall_ns":1000})",
      // tp (both local ranks), then two dp comms of 2 ranks (their other rank lives elsewhere)
      R"({"type":"comm","wall_ns":1000,"comm_id":0,"comm_hash":"0x00000000000000a1","comm_name":"tp","rank":0,"nranks":2,"nnodes":1,"abi_version":6,"cuda_dev":5,"pci_bus_id":"0000:9a:00.0"})",
      R"({"type":"comm","wall_ns":1000,"comm_id":1,"comm_hash":"0x00000000000000a1","comm_name":"tp","rank":1,"nranks":2,"nnodes":1,"abi_version":6,"cuda_dev":2,"pci_bus_id":"0000:1b:00.0"})",
      R"({"type":"comm","wall_ns":1000,"comm_id":2,"comm_hash":"0x00000000000000b1","comm_name":"dp","rank":0,"nranks":2,"nnodes":2,"abi_version":6,"cuda_dev":2,"pci_bus_id":"0000:1b:00.0"})",
      R"({"type":"comm","wall_ns":1000,"comm_id":3,"comm_hash":"0x00000000000000b2","comm_name":"dp","rank":0,"nranks":2,"nnodes":2,"abi_version":6,"cuda_dev":5,"pci_bus_id":"0000:9a:00.0"})"};
  auto op = [](const char* hash, int rank, int seq, long long start) {
    char b[400];
    std::snprintf(b, sizeof b,
                  R"({"type":"coll","comm_hash":"%s","rank":%d,"nranks":2,"seq":%d,"func":"AllReduce","bytes":1048576,"start_wall_ns":%lld,"dur_us":50,"timing":"gpu","busbw_gbs":20})",
                  hash, rank, seq, start);
    return std::string(b);
  };
  for (int i = 0; i < 5; ++i) {
    const long long t = 2000000000LL + i * 1000000LL;
    lines.push_back(op("0x00000000000000a1", 0, i, t));
    lines.push_back(op("0x00000000000000a1", 1, i, t + 10));
    lines.push_back(op("0x00000000000000b1", 0, i, t + 200000));
    lines.push_back(op("0x00000000000000b2", 0, i, t + 400000));
  }
  std::filesystem::create_directories(d + "/logs");
  ni::test::write_gz(d + "/logs/n1-pid10-0.jsonl.gz", lines);
  std::string log;
  ASSERT_EQ(run(cli() + " trace " + d + "/logs -o " + d + "/t.json", &log), 0) << log;
  const TraceCheck t = check_trace(d + "/t.json");
  ASSERT_TRUE(t.errors.empty()) << errors_of(t);
  int gpu5 = 0, gpu2 = 0;
  for (const auto& [pid, name] : t.process_names) {
    if (name.find(" GPU 5") != std::string::npos) gpu5 = pid;
    if (name.find(" GPU 2") != std::string::npos) gpu2 = pid;
  }
  ASSERT_GT(gpu5, 0);
  ASSERT_GT(gpu2, 0);
  ASSERT_NE(gpu5, gpu2);
  // GPU 5 holds tp rank 0 and dp b2; GPU 2 holds tp rank 1 and dp b1.
  std::map<int, std::set<std::string>> tracks;  // pid -> comm track names
  for (const auto& [pt, name] : t.thread_names)
    if (pt.second >= 10000 && pt.second % 10000 == 0) tracks[pt.first].insert(name);
  EXPECT_EQ(tracks[gpu5], (std::set<std::string>{"dp (0x00000000000000b2)", "tp (0x00000000000000a1)"}));
  EXPECT_EQ(tracks[gpu2], (std::set<std::string>{"dp (0x00000000000000b1)", "tp (0x00000000000000a1)"}));
  std::map<int, std::set<int>> ranks;  // pid -> ranks of its ops
  for (const auto& e : t.ops) ranks[e["pid"].get<int>()].insert(e["args"]["rank"].get<int>());
  EXPECT_EQ(ranks[gpu5], (std::set<int>{0}));
  EXPECT_EQ(ranks[gpu2], (std::set<int>{0, 1}));  // tp rank 1 and dp b1 rank 0
}

}  // namespace
