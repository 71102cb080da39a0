// The real nccl-emu binary against the real libnccl-profiler-inspector.so.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace {

int sh(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(EmuCli, BindsEachVersionOfTheRealPlugin) {
  const std::pair<const char*, int> cases[] = {{"2.23", 1}, {"2.27", 4}, {"2.28", 5}, {"2.30", 6},
                                                {"2.31", 7}, {"2.32", 7}};
  for (auto [ver, abi] : cases) {
    std::string out;
    const int rc = sh(std::string("NCCL_DEBUG=INFO ") + NCCL_EMU + " --nccl " + ver + " --plugin " + INSPECTOR_SO +
                          " --pace none --iters 5",
                      &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("bound ncclProfiler_v" + std::to_string(abi)), std::string::npos) << out;
    if (abi >= 4) { EXPECT_NE(out.find("bound profiler ABI v" + std::to_string(abi)), std::string::npos) << out; }
  }
}

TEST(EmuCli, ClearErrors) {
  std::string out;
  EXPECT_NE(sh(std::string(NCCL_EMU) + " --nccl 2.99 --plugin " + INSPECTOR_SO, &out), 0);
  EXPECT_NE(out.find("unknown NCCL version"), std::string::npos) << out;
  EXPECT_NE(sh(std::string(NCCL_EMU) + " --plugin /no/such/plugin.so", &out), 0);
  EXPECT_NE(out.find("not found"), std::string::npos) << out;
  EXPECT_NE(sh(std::string(NCCL_EMU) + " --plugin " + NCCL_EMU, &out), 0);
  EXPECT_NE(sh(std::string(NCCL_EMU) + " --plugin " + INSPECTOR_SO + " --fault nope", &out), 0);
  EXPECT_NE(out.find("unknown fault"), std::string::npos) << out;
  for (const char* bad : {"zz", "0x10000", "-1", "0x8002junk"}) {
    EXPECT_EQ(sh(std::string(NCCL_EMU) + " --nccl 2.31 --plugin " + INSPECTOR_SO + " --ras-mask " + bad, &out), 2) << bad;
    EXPECT_NE(out.find("bad --ras-mask"), std::string::npos) << out;
  }
}

TEST(EmuCli, BenchNullPluginFloor) {
  std::string out;
  EXPECT_EQ(sh(std::string(NCCL_EMU) + " bench --plugin " + NULL_SO + " --iters 2000 --runs 3", &out), 0) << out;
  EXPECT_NE(out.find("bound ncclProfiler_v5"), std::string::npos) << out;
  EXPECT_NE(out.find("28 callbacks/collective"), std::string::npos) << out;
  EXPECT_NE(out.find("ns/collective"), std::string::npos) << out;
}

TEST(EmuCli, TruthFileAndRealtimePace) {
  std::string out;
  const std::string truth = ::testing::TempDir() + "/emu_truth.jsonl";
  EXPECT_EQ(sh(std::string(NCCL_EMU) + " --nccl 2.28 --plugin " + INSPECTOR_SO + " --iters 5 --fault-op 0 --pace realtime --truth " +
                   truth + " --fault pxn --fault kernelch-double-stop --net-profiler ib",
               &out),
            0)
      << out;
  std::string t;
  ASSERT_EQ(sh("cat " + truth, &t), 0);
  EXPECT_NE(t.find("\"type\":\"op\""), std::string::npos);
  EXPECT_NE(t.find("\"type\":\"summary\""), std::string::npos);
  EXPECT_NE(t.find("\"ptimer_to_monotonic_ns\""), std::string::npos);
  EXPECT_NE(t.find("\"pxn\""), std::string::npos);
}

// Runs argv directly (no shell between, so the status is the emulator's own)
// with extra environment entries; returns the wait status.
int spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> a;
    for (const std::string& x : argv) a.push_back(const_cast<char*>(x.c_str()));
    a.push_back(nullptr);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDOUT_FILENO);
    execv(a[0], a.data());
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

// truth.hang with end "kill": the process holds its hung ranks for hold_ms,
// writes its truth, then dies of SIGKILL; with "exit" it exits 0 instead.
TEST(EmuCli, HangEndsTheProcess) {
  const std::string dir = ::testing::TempDir();
  const std::string workload = dir + "/emu_hang_workload.json";
  std::ofstream(workload) << R"({"world": 8, "nodes": 2, "net_profiler": "ib",
    "comms": [{"name": "tp", "nranks": 4, "nchannels": 4}, {"name": "dp", "nranks": 2, "layout": "strided", "nchannels": 2}],
    "program": [{"comm": "tp", "func": "AllReduce", "bytes": 1048576}, {"comm": "dp", "func": "AllReduce", "bytes": 1048576},
                {"comm": "dp", "func": "ReduceScatter", "bytes": 1048576}, {"comm": "tp", "func": "AllReduce", "bytes": 1048576}]})";
  for (const std::string end : {"kill", "exit"}) {
    const std::string truth = dir + "/emu_hang_truth_" + end + ".jsonl";
    std::remove(truth.c_str());
    const std::string hang = R"({"kind": "kernel_stuck", "world_rank": 5, "comm": "dp", "at_op": 1, "hold_ms": 200, "end": ")" +
                             end + "\"}";
    const int st = spawn({NCCL_EMU, "--nccl", "2.28", "--plugin", INSPECTOR_SO, "--workload", workload, "--pace", "none",
                          "--truth", truth, "--hang", hang},
                         {"NCCL_INSPECTOR_DUMP_DIR=" + dir + "/emu_hang_logs", "NCCL_DEBUG=WARN"});
    if (end == "kill") {
      ASSERT_TRUE(WIFSIGNALED(st)) << "status " << st;
      EXPECT_EQ(WTERMSIG(st), SIGKILL);
    } else {
      ASSERT_TRUE(WIFEXITED(st)) << "status " << st;
      EXPECT_EQ(WEXITSTATUS(st), 0);
    }
    std::ifstream in(truth);
    ASSERT_TRUE(in) << truth;
    std::string line;
    int hang_lines = 0, hung_ops = 0;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      if (j["type"] == "hang") {
        ++hang_lines;
        EXPECT_EQ(j["kind"], "kernel_stuck");
        EXPECT_EQ(j["func"], "ReduceScatter");
        EXPECT_EQ(j["seq"], 0);
        EXPECT_EQ(j["culprit_world_ranks"], nlohmann::json::array({5}));
        EXPECT_EQ(j["group_world_ranks"], nlohmann::json::array({1, 5}));
        EXPECT_EQ(j["end"], end);
      } else if (j["type"] == "op" && j["comm"] == "dp" && j["comm_index"] == 1 && j["func"] == "ReduceScatter") {
        EXPECT_EQ(j["faults"], nlohmann::json::array({"hang"}));
        ++hung_ops;
      }
    }
    EXPECT_EQ(hang_lines, 1);
    EXPECT_EQ(hung_ops, 2);  // ranks 1 and 5
  }
}

}  // namespace
