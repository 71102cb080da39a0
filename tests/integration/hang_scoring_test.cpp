// `hangs` scored against the emulator's truth: jobs of 8-64 ranks on 2-8
// emulated hosts (one nccl-emu process per host, as a launcher starts them),
// the real plugin writing the logs, a hang planted by the emulator (a rank
// that stops issuing, a kernel that never runs, a receive that never gets its
// data, a rank that issues another collective, a process killed), the hung
// processes SIGKILLed after a while as a watchdog would. From what reached the
// disk, `hangs` must name the communicator, the function, the sequence number
// and the culprit rank(s) exactly (and the peer of a stuck link), and a clean
// job, also one that ends with ops in flight at finalize, must give no
// finding. Every job counts: misses and false alarms are both failures.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "src/analysis/collect_sink.h"
#include "src/analysis/hangs.h"
#include "tests/integration/harness.h"

namespace {

using ni::it::fs::path;
namespace ana = ni::analysis;
using json = nlohmann::json;

struct Shape {
  int world, hosts, tp;  // tp: ranks per host (one TP comm per host); dp: one rank per host, strided
};

bool sanitized() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

std::vector<Shape> shapes() {
  if (sanitized()) return {{16, 4, 4}};
  return {{8, 2, 4}, {16, 4, 4}, {32, 8, 4}, {64, 8, 8}};
}
int seeds() { return 2; }
// How long the hung processes live before their "watchdog" kill: long
// enough for HANG_MS (300 ms) and alive lines, under the sanitizers too.
int hold_ms() { return sanitized() ? 4000 : 1500; }

std::string workload(const Shape& s, const json& truth) {
  json w;
  w["world"] = s.world;
  w["nodes"] = s.hosts;
  w["comms"] = json::array({json{{"name", "tp"}, {"nranks", s.tp}, {"layout", "contiguous"}, {"nchannels", 8}},
                            json{{"name", "dp"}, {"nranks", s.world / s.tp}, {"layout", "strided"}, {"nchannels", 4}}});
  w["mix"] = json::array(
      {json{{"comm", "tp"}, {"func", "AllReduce"}, {"dtype", "ncclBfloat16"}, {"bytes", {1048576, 4194304}}, {"weight", 2}},
       json{{"comm", "tp"}, {"func", "AllGather"}, {"dtype", "ncclBfloat16"}, {"bytes", {262144}}, {"weight", 1}},
       json{{"comm", "dp"}, {"func", "AllReduce"}, {"dtype", "ncclFloat32"}, {"bytes", {4194304}}, {"weight", 1}},
       json{{"comm", "dp"}, {"func", "Broadcast"}, {"dtype", "ncclFloat32"}, {"bytes", {1048576}}, {"weight", 1}}});
  w["iterations"] = 24;
  w["net_profiler"] = "ib";
  w["truth"] = truth;
  return w.dump();
}

struct Job {
  std::string error;
  ana::ReadResult res;
  json hang;  // the truth's hang line (null: none planted)
  // Whether the hung collective reached the plugin as a Coll event (not so:
  // Broadcast on 2.29+, which only a CollApi event shows, with no seq).
  bool hang_visible = true;
};

// Runs the job (the hung processes die of SIGKILL: expected) and reads its logs.
// Every other seed, the timeout reclaims the hung ops (700 ms) before the
// kill, as it does in a real hang (10 s, while watchdogs wait minutes): the
// verdict must not need them in flight at the end.
Job run_job(const Shape& s, int seed, const json& truth, const std::string& tag, const std::string& fault = "") {
  Job job;
  const path dir = ni::it::temp_dir("hang-" + tag + "-" + std::to_string(s.world) + "-" + std::to_string(seed));
  std::ofstream(dir / "job.json") << workload(s, truth);
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long start_at = static_cast<long long>(ts.tv_sec) * 1000000000LL + ts.tv_nsec + 300000000LL;
  const int per_host = s.world / s.hosts;
  std::string cmd = "cd " + dir.string() + " && export NCCL_DEBUG=WARN NCCL_INSPECTOR_DUMP_DIR=" +
                    (dir / "logs").string() + " NCCL_INSPECTOR_ENABLE_NET=1 NCCL_INSPECTOR_HANG_MS=300" +
                    (seed % 2 == 0 ? " NCCL_INSPECTOR_OP_TIMEOUT_MS=700" : "") + "; ";
  for (int k = 0; k < s.hosts; ++k)
    cmd += "NCCL_INSPECTOR_HOSTNAME=node" + std::to_string(k) + " " + NI_EMU_PATH + " --plugin " + NI_PLUGIN_PATH +
           " --nccl 2.29 --workload job.json --pace none --quiet --seed " + std::to_string(seed) +
           (fault.empty() ? "" : " --fault " + fault) + " --start-at " + std::to_string(start_at) + " --ranks " +
           std::to_string(k * per_host) + "-" + std::to_string(k * per_host + per_host - 1) + " --truth truth-" +
           std::to_string(k) + ".jsonl > emu-" + std::to_string(k) + ".log 2>&1 & ";
  // Exit statuses: 0, or killed by SIGKILL (bash: 137) when a hang was planted.
  cmd += "fail=0; for p in $(jobs -p); do wait $p; st=$?; [ $st -eq 0 ] || [ $st -eq 137 ] || fail=1; done; exit $fail";
  const int st = std::system(("bash -c '" + cmd + "'").c_str());
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::ifstream in(dir / "emu-0.log");
    job.error = "emulator failed: " + std::string(std::istreambuf_iterator<char>(in), {});
    return job;
  }
  for (int k = 0; k < s.hosts; ++k) {
    std::ifstream in(dir / ("truth-" + std::to_string(k) + ".jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("\"type\":\"hang\"") != std::string::npos) job.hang = json::parse(line);
      if (line.find("\"hang\"]") != std::string::npos && json::parse(line)["visible"] == false) job.hang_visible = false;
    }
  }
  ana::ReadOptions ro;
  ro.progress = 0;
  (void)ana::read_merged<ana::CollectSink>(ana::discover_files({(dir / "logs").string()}).files, ro, 2, job.res, false);
  ni::it::fs::remove_all(dir);
  return job;
}

std::string expected_kind(const std::string& planted) {
  if (planted == "stop_issuing" || planted == "killed") return "missing_ranks";
  if (planted == "desync") return "desync";
  return "stuck_collective";
}

// What `hangs` said against the truth: "" when exactly right.
std::string judge(const Job& job, const ana::HangResult& h) {
  if (job.hang.is_null()) {
    if (h.findings.empty()) return "";
    return "false alarm on a clean job: " + h.findings[0].verdict;
  }
  if (h.findings.size() != 1) {
    std::string s = std::to_string(h.findings.size()) + " findings:";
    for (const auto& f : h.findings) s += " [" + f.comm_name + ": " + f.verdict + "]";
    return s;
  }
  const ana::HangFinding& f = h.findings[0];
  const json& t = job.hang;
  std::uint64_t hash = 0;
  ana::parse_hash(t["comm_hash"].get<std::string>(), hash);
  std::vector<int> want = t["culprit_comm_ranks"].get<std::vector<int>>();
  std::sort(want.begin(), want.end());
  // A desync between two ranks: one against one, which is wrong cannot be
  // told; both must be named, and no function or seq claimed.
  const bool tie = t["kind"] == "desync" && t["group_world_ranks"].size() == 2;
  if (tie) want = {0, 1};
  std::string err;
  if (f.comm != hash) err += " comm " + f.comm_name;
  if (f.kind != expected_kind(t["kind"])) err += " kind " + f.kind;
  if (tie) {
    if (!f.func.empty() || f.has_seq) err += " a function or seq claimed in a tie";
  } else if (f.func != t["func"].get<std::string>()) {
    err += " func " + f.func;
  }
  if (!tie && job.hang_visible && (!f.has_seq || f.seq != t["seq"].get<std::uint64_t>()))
    err += " seq " + std::to_string(f.seq);
  if (!job.hang_visible && f.has_seq) err += " a seq claimed for a collective NCCL did not report";
  if (f.culprits != want) err += " culprits";
  if (t.contains("peer_comm_rank") && f.peer != t["peer_comm_rank"].get<int>()) err += " peer " + std::to_string(f.peer);
  // A killed process: its rank died, or left no log of the comm at all
  // (killed before its first write); a rank that stopped issuing: alive.
  for (int r : want) {
    const std::string st = r < static_cast<int>(f.ranks.size()) ? f.ranks[static_cast<std::size_t>(r)].state : "";
    if (t["kind"] == "killed" && st != "died" && st != "no_log") err += " rank " + std::to_string(r) + " state " + st;
    if (t["kind"] == "stop_issuing" && st != "missing") err += " rank " + std::to_string(r) + " state " + st;
  }
  return err.empty() ? "" : t.dump() + " ->" + err + ": " + f.verdict;
}

TEST(HangScoring, HangsNamedExactlyAndCleanJobsQuietAgainstEmulatorTruth) {
  const std::vector<std::string> kinds = {"stop_issuing", "kernel_stuck", "recv_stuck", "desync", "killed"};
  std::map<std::string, std::pair<int, int>> score;  // kind -> (right, jobs)
  std::vector<std::string> wrong;
  for (const Shape& s : shapes()) {
    const int dp = s.world / s.tp;
    for (int seed = 1; seed <= seeds(); ++seed) {
      for (std::size_t ki = 0; ki < kinds.size(); ++ki) {
        const std::string& kind = kinds[ki];
        // The culprit: any world rank; the comm: DP (across hosts) or, for
        // the kinds that need no network or second host, TP every other job.
        const int culprit = static_cast<int>((seed * 7919 + ki * 104729 + s.world) % s.world);
        const bool on_tp = (kind == "stop_issuing" || kind == "kernel_stuck" || kind == "desync") && (seed + ki) % 2;
        json hang = {{"kind", kind},       {"world_rank", culprit}, {"comm", on_tp ? "tp" : "dp"},
                     {"at_op", 2 + (seed + static_cast<int>(ki)) % 4}, {"hold_ms", hold_ms()}};
        (void)dp;
        Job job = run_job(s, seed, json{{"hang", hang}}, kind);
        ASSERT_TRUE(job.error.empty()) << job.error;
        ASSERT_FALSE(job.hang.is_null()) << kind;
        const std::string err = judge(job, ana::find_hangs(job.res));
        auto& sc = score[kind];
        ++sc.second;
        if (err.empty()) ++sc.first;
        else wrong.push_back(std::to_string(s.world) + " ranks, seed " + std::to_string(seed) + ": " + err);
      }
      // Clean jobs: one plain, one whose ops are in flight at finalize.
      for (const std::string fault : {"", "kernelch-never-stopped"}) {
        Job job = run_job(s, seed, json::object(), "clean", fault);
        ASSERT_TRUE(job.error.empty()) << job.error;
        const std::string err = judge(job, ana::find_hangs(job.res));
        auto& sc = score[fault.empty() ? "clean" : "clean, ops in flight at finalize"];
        ++sc.second;
        if (err.empty()) ++sc.first;
        else wrong.push_back(std::to_string(s.world) + " ranks, seed " + std::to_string(seed) + ": " + err);
      }
    }
  }
  for (const auto& [k, sc] : score) std::printf("  %-34s %d/%d right\n", k.c_str(), sc.first, sc.second);
  for (const auto& w : wrong) ADD_FAILURE() << w;
}

}  // namespace
