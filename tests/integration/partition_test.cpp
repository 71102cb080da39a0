// Bounded memory (src/analysis/partition.h), end to end: an emulated job of
// several hosts (one nccl-emu process per host, as a launcher starts them),
// with a planted late rank and P2P, analysed by the CLI in memory and then over
// budgets that force the spill and batches of whole communicators. Every
// output must be byte for byte what the in-memory path printed, and the
// stderr must say how the input was split.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/integration/harness.h"

namespace {

using ni::it::fs::path;
using json = nlohmann::json;

struct Out {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Out cli(const path& dir, const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " + NI_CLI + " " + args + " > " + (dir / "out").string() + " 2> " + (dir / "err").string();
  Out o;
  const int st = std::system(cmd.c_str());
  o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.out = slurp(dir / "out");
  o.err = slurp(dir / "err");
  return o;
}

// world ranks over `hosts` processes; tp groups within a host, dp across.
path run_job(const std::string& tag, int world, int hosts, int seed, const json& truth = json{{"rank_skew_us", json{{"5", 60}}}},
             const json& extra = json::object()) {
  const path dir = ni::it::temp_dir("part-" + tag);
  json w;
  w["world"] = world;
  w["nodes"] = hosts;
  w["comms"] = json::array({json{{"name", "tp"}, {"nranks", 4}, {"layout", "contiguous"}, {"nchannels", 4}},
                            json{{"name", "dp"}, {"nranks", world / 4}, {"layout", "strided"}, {"nchannels", 2}}});
  w["mix"] = json::array({json{{"comm", "tp"}, {"func", "AllReduce"}, {"bytes", {1048576, 4194304}}, {"weight", 2}},
                          json{{"comm", "tp"}, {"func", "AllGather"}, {"bytes", {262144}}, {"weight", 1}},
                          json{{"comm", "dp"}, {"func", "AllReduce"}, {"bytes", {4194304}}, {"weight", 1}},
                          json{{"comm", "dp"}, {"func", "SendRecv"}, {"bytes", {65536}}, {"weight", 1}}});
  w["iterations"] = 25;
  w["mark_every"] = 5;
  w["iteration_gap_us"] = 200;
  w["truth"] = truth;
  for (const auto& [k, v] : extra.items()) w[k] = v;
  const bool net = extra.contains("net_profiler");
  std::ofstream(dir / "job.json") << w.dump();
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long start_at = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec + 300000000LL;
  const int per = world / hosts;
  std::string cmd = "cd " + dir.string() + " && export NCCL_DEBUG=WARN NCCL_INSPECTOR_DUMP_DIR=" + (dir / "logs").string() +
                    (net ? " NCCL_INSPECTOR_ENABLE_NET=1 NCCL_INSPECTOR_DUMP_VERBOSE=1" : "") + "; ";
  for (int k = 0; k < hosts; ++k)
    cmd += "NCCL_INSPECTOR_HOSTNAME=node" + std::to_string(k) + " " + NI_EMU_PATH + " --plugin " + NI_PLUGIN_PATH +
           " --nccl 2.28 --workload job.json --pace none --quiet --seed " + std::to_string(seed) + " --start-at " +
           std::to_string(start_at) + (net ? " --wire-lock " + (dir / "wire.lock").string() : std::string()) +
           " --ranks " + std::to_string(k * per) + "-" + std::to_string(k * per + per - 1) +
           " > emu-" + std::to_string(k) + ".log 2>&1 & ";
  cmd += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  const int st = std::system(("bash -c '" + cmd + "'").c_str());
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << cmd;
  return dir;
}

// The number of batches stderr reports ("... analysed in N batches of whole
// communicators"); 0 when it reports none. (No std::regex: GCC 12 warns in its
// headers under the sanitizers.)
std::size_t batches_of(const std::string& err) {
  const std::string at = "analysed in ";
  const std::size_t p = err.find(at);
  if (p == std::string::npos) return 0;
  std::size_t n = 0, i = p + at.size();
  for (; i < err.size() && err[i] >= '0' && err[i] <= '9'; ++i) n = n * 10 + static_cast<std::size_t>(err[i] - '0');
  const std::string rest = err.substr(i, 40);
  if (rest.rfind(" batch", 0) != 0 || rest.find("of whole") == std::string::npos) return 0;
  return n;
}

// `args` under each budget of `limits` (all under the input's estimate, so
// every run spills), with one reader thread and two: each prints `want`
// byte for byte and says it ran in batches of whole `unit`. Returns the most
// batches any run reported.
std::size_t expect_same_in_batches(const path& dir, const std::string& args, const std::string& want,
                                   std::initializer_list<const char*> limits, const std::string& unit) {
  std::size_t most = 0;
  for (const char* lim : limits)
    for (const char* j : {"-j 1", "-j 2"}) {
      const Out part = cli(dir, args + " " + j + " --memory-limit " + std::string(lim));
      EXPECT_EQ(part.rc, 0) << part.err;
      EXPECT_EQ(part.out, want) << args << " --memory-limit " << lim << " " << j << "\n" << part.err;
      const std::size_t n = batches_of(part.err);
      EXPECT_GE(n, 1u) << "--memory-limit " << lim << " spills: " << part.err;
      EXPECT_NE(part.err.find("of whole " + unit), std::string::npos) << part.err;
      most = std::max(most, n);
    }
  return most;
}

TEST(MemoryLimit, StragglersInBatchesPrintWhatTheyPrintInMemory) {
  for (const auto& [world, hosts, seed] : {std::tuple{16, 4, 3}, std::tuple{32, 8, 4}}) {
    const path dir = run_job("late" + std::to_string(world), world, hosts, seed);
    const std::string logs = (dir / "logs").string();
    for (const char* fmt : {"json", "table"}) {
      const std::string args = std::string("stragglers --no-progress -f ") + fmt + " " + logs;
      const Out mem = cli(dir, args);
      ASSERT_EQ(mem.rc, 0) << mem.err;
      EXPECT_EQ(batches_of(mem.err), 0u) << "small input: in memory\n" << mem.err;
      if (std::string(fmt) == "json") {
        // What is compared is a real verdict: the planted rank's context flagged.
        const json j = json::parse(mem.out);
        ASSERT_TRUE(j.is_object() || j.is_array());
        EXPECT_NE(mem.out.find("LATE"), std::string::npos) << mem.out.substr(0, 2000);
      }
      // One op per batch (every bucket alone), budgets between, one reader thread or two.
      const std::size_t most = expect_same_in_batches(dir, args, mem.out, {"1", "5K", "20K", "60K", "150K"}, "communicators");
      EXPECT_GE(most, static_cast<std::size_t>(world / 4 + 1)) << "every communicator in a batch of its own at 1 byte";
    }
    if (!HasFailure()) ni::it::fs::remove_all(dir);
  }
}

// iterations: batches of whole processes (a GPU's busy time is a union over
// its process's ops); every process here drives 4 GPUs.
TEST(MemoryLimit, IterationsInBatchesPrintWhatTheyPrintInMemory) {
  const path dir = run_job("iters", 32, 8, 5);
  const std::string logs = (dir / "logs").string();
  for (const char* fmt : {"json", "table"}) {
    const std::string args = std::string("iterations --no-progress -f ") + fmt + " " + logs;
    const Out mem = cli(dir, args);
    ASSERT_EQ(mem.rc, 0) << mem.err;
    EXPECT_EQ(batches_of(mem.err), 0u) << mem.err;
    EXPECT_NE(mem.out.find("iteration 4"), std::string::npos) << mem.out.substr(0, 2000);
    const std::size_t most = expect_same_in_batches(dir, args, mem.out, {"1", "10K", "40K", "100K"}, "processes");
    EXPECT_GE(most, 4u) << "the 8 processes in several batches at 1 byte";
  }
  if (!HasFailure()) ni::it::fs::remove_all(dir);
}

// A job with a slow NIC (world rank 6, HCA 1, x3), a slow channel (3, x1.6)
// and a late rank (9), IB network events on, channel times verbose.
json nic_job_truth() {
  return {{"rank_skew_us", json{{"9", 80}}},
          {"slow_hcas", json::array({json{{"world_rank", 6}, {"hca", 1}, {"factor", 3.0}}})},
          {"channel_slowdown", json{{"3", 1.6}}}};
}
json nic_job_extra() { return {{"net_profiler", "ib"}, {"model", {{"hca_gbps", 12.5}}}}; }

// anomalies: batches of whole communicators, each op's HCA use and slowest
// channel spilled with it; the HCA judgements (a NIC across its process's
// communicators) from what every batch collected. A job with a slow NIC, a
// slow channel and a late rank, IB network events on, channel times verbose.
TEST(MemoryLimit, AnomaliesInBatchesPrintWhatTheyPrintInMemory) {
  const path dir = run_job("anom", 16, 4, 2, nic_job_truth(), nic_job_extra());
  if (std::getenv("NI_KEEP")) std::printf("logs: %s\n", dir.c_str());
  const std::string logs = (dir / "logs").string();
  for (const char* fmt : {"json", "table"}) {
    const std::string args = std::string("anomalies --no-progress -f ") + fmt + " " + logs;
    const Out mem = cli(dir, args);
    ASSERT_EQ(mem.rc, 0) << mem.err;
    EXPECT_EQ(batches_of(mem.err), 0u) << mem.err;
    if (std::string(fmt) == "table") {
      // What is compared holds findings of every kind the batches split: per comm and across comms.
      EXPECT_NE(mem.out.find("slow_hca"), std::string::npos) << mem.out.substr(0, 3000);
      EXPECT_NE(mem.out.find("slow_channel"), std::string::npos) << mem.out.substr(0, 3000);
    }
    const std::size_t most = expect_same_in_batches(dir, args, mem.out, {"1", "20K", "80K", "200K"}, "communicators");
    EXPECT_GE(most, 5u) << "tp and dp communicators in batches of their own at 1 byte";
  }
  if (!HasFailure() && !std::getenv("NI_KEEP")) ni::it::fs::remove_all(dir);
}

// trace: over the budget it holds only the ops it shows; the trace (to
// stdout) is the one every op in memory gives, byte for byte: clock
// calibration, the detectors' markers, sampling to --max-ops, filters,
// channel sub-tracks and network/HCA counters (verbose logs, IB events), and
// two processes' logs concatenated on stdin.
TEST(MemoryLimit, TraceInBatchesWritesWhatItWritesInMemory) {
  const path dir = run_job("trace", 16, 4, 6, nic_job_truth(), nic_job_extra());
  const std::string logs = (dir / "logs").string();
  for (const char* opts : {"", " --max-ops 150", " --rank 1 --comm dp --from 0.004 --to 0.5 --op AllReduce",
                           " --sample 2 --no-clock-calibration --no-findings --no-counters"}) {
    const std::string args = "trace --no-progress " + logs + " -o -" + opts;
    const Out mem = cli(dir, args);
    ASSERT_EQ(mem.rc, 0) << mem.err;
    EXPECT_EQ(batches_of(mem.err), 0u) << mem.err;
    EXPECT_TRUE(json::accept(mem.out)) << "not JSON:" << opts;
    if (*opts == '\0') {  // what is compared holds every part of a trace
      for (const char* part : {"\"ph\":\"X\"", "\"ph\":\"C\"", "\"ph\":\"s\"", "\"ph\":\"i\"", " \u00b7 ch ", "slow_hca",
                               "clock_calibration"})
        EXPECT_NE(mem.out.find(part), std::string::npos) << part;
      EXPECT_NE(mem.err.find("clocks calibrated"), std::string::npos) << mem.err;
    }
    const std::size_t most = expect_same_in_batches(dir, args, mem.out, {"1", "40K"}, "communicators");
    EXPECT_GE(most, 5u) << "tp and dp communicators in batches of their own at 1 byte";
  }
  // The four processes' logs concatenated on stdin (the stream is
  // kept in a temporary file): the trace of the directory.
  const std::string pipe = "cat " + logs + "/*.gz |";
  const Out d = cli(dir, "trace --no-progress " + logs + " -o - --max-ops 300");
  const Out s = cli(dir, "trace --no-progress - -o - --max-ops 300 --memory-limit 1", pipe);
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_GE(batches_of(s.err), 1u) << s.err;
  EXPECT_TRUE(s.out == d.out) << "the stream's trace differs from the directory's (" << s.out.size() << " and "
                              << d.out.size() << " bytes)";
  if (!HasFailure()) ni::it::fs::remove_all(dir);
}

// report: over the budget it folds spilled ops in batches of whole
// communicators and processes (report_bounded.h) and writes the page every op
// in memory gives, byte for byte: calibrated clocks, the detectors' findings
// and their marks on the busbw-over-time charts, the lateness heatmap,
// occupancy, channel busy time and balance, HCA bytes and wire bandwidth.
// Over a baseline too, and from a stream on stdin.
TEST(MemoryLimit, ReportInBatchesWritesWhatItWritesInMemory) {
  json truth = nic_job_truth();
  truth["congestion"] = {{"from", 8}, {"to", 16}, {"factor", 4}};
  const path dir = run_job("report", 16, 4, 6, truth, nic_job_extra());
  const std::string logs = (dir / "logs").string();
  for (const char* opts : {"", " --no-clock-calibration --baseline " }) {
    std::string args = "report --no-progress " + logs + " -o -" + opts;
    if (*opts != '\0') args += logs;
    const Out mem = cli(dir, args);
    ASSERT_EQ(mem.rc, 0) << mem.err;
    EXPECT_EQ(batches_of(mem.err), 0u) << mem.err;
    if (*opts == '\0') {  // what is compared holds every part of the page
      for (const char* part : {"\"id\":\"stragglers\",", "\"type\":\"heatmap\"", "slow_hca", "slow_channel",
                               "busy time per channel", "send bandwidth on the wire", "network bytes per rank",
                               "median channel balance", "communication occupancy", "\"marks\":[["})
        EXPECT_NE(mem.out.find(part), std::string::npos) << part;
      EXPECT_NE(mem.err.find("clocks calibrated"), std::string::npos) << mem.err;
    }
    std::size_t most = 0;
    for (const char* lim : {"1", "60K"})
      for (const char* j : {"-j 1", "-j 2"}) {
        const Out part = cli(dir, args + " " + j + " --memory-limit " + lim);
        EXPECT_EQ(part.rc, 0) << part.err;
        EXPECT_TRUE(part.out == mem.out) << args << " --memory-limit " << lim << " " << j << " differs ("
                                         << part.out.size() << " and " << mem.out.size() << " bytes)\n" << part.err;
        EXPECT_NE(part.err.find("of whole communicators and "), std::string::npos) << part.err;
        most = std::max(most, batches_of(part.err));
      }
    EXPECT_GE(most, 5u) << "tp and dp communicators in batches of their own at 1 byte";
  }
  // The four processes' logs concatenated on stdin (kept in a temporary file, spilled from there).
  const std::string pipe = "cat " + logs + "/*.gz |";
  const Out d = cli(dir, "report --no-progress - -o -", pipe);
  const Out s = cli(dir, "report --no-progress - -o - --memory-limit 1", pipe);
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_GE(batches_of(s.err), 1u) << s.err;
  EXPECT_TRUE(s.out == d.out) << "the stream's report in batches differs from the one in memory";
  if (!HasFailure()) ni::it::fs::remove_all(dir);
}

// A spill that cannot be made fails with the reason and prints or writes no
// result: no analysis of part of the ops.
TEST(MemoryLimit, AnUnwritableSpillDirectoryFailsClearly) {
  const path dir = run_job("tmpdir", 8, 2, 1);
  const Out o = cli(dir, "stragglers --no-progress --memory-limit 1 " + (dir / "logs").string(),
                    "TMPDIR=" + (dir / "no-such-dir").string());
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("cannot create a spill file in " + (dir / "no-such-dir").string()), std::string::npos) << o.err;
  // report builds its page before it opens the output: a failed spill leaves no page, not half of one.
  const path page = dir / "report.html";
  const Out r = cli(dir, "report --no-progress --memory-limit 1 " + (dir / "logs").string() + " -o " + page.string(),
                    "TMPDIR=" + (dir / "no-such-dir").string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot create a spill file in " + (dir / "no-such-dir").string()), std::string::npos) << r.err;
  EXPECT_FALSE(ni::it::fs::exists(page)) << "a page written from part of the ops";
  const Out bad = cli(dir, "stragglers --no-progress --memory-limit 12Q " + (dir / "logs").string());
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("--memory-limit '12Q': not a size"), std::string::npos) << bad.err;
  if (!HasFailure()) ni::it::fs::remove_all(dir);
}

}  // namespace
