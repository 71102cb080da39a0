// The real nccl-emu binary against the real libnccl-profiler-inspector.so.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

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
  const std::pair<const char*, int> cases[] = {{"2.23", 1}, {"2.27", 4}, {"2.28", 5}, {"2.30", 6}};
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

}  // namespace
