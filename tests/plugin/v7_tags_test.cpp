// The plugin reads the v7 user tag only from an NCCL whose descriptors have
// one: called from an NCCL-named library, every record carries its call's
// tag; from an RCCL-named one (RCCL's v7 has no tag fields), no tag is read
// (a read past RCCL's shorter Coll descriptor would fault: it ends at a page
// the process may not read) and no record carries one.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::vector<nlohmann::json> ops_written(const fs::path& dir) {
  std::vector<nlohmann::json> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().string().find(".jsonl.gz") == std::string::npos) continue;
    gzFile f = gzopen(e.path().c_str(), "rb");
    std::string text;
    char buf[65536];
    int n = 0;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
    std::size_t p = 0;
    for (std::size_t q; (q = text.find('\n', p)) != std::string::npos; p = q + 1) {
      auto j = nlohmann::json::parse(text.substr(p, q - p));
      if (j["type"] == "coll" || j["type"] == "p2p") out.push_back(j);
    }
  }
  return out;
}

std::vector<nlohmann::json> run_caller(const char* caller, const std::string& name, uint64_t tag, int rccl_layout) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("ni-v7-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dir.c_str(), 1);
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  void* lib = dlopen(caller, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(lib, nullptr) << dlerror();
  if (lib == nullptr) return {};
  auto call = reinterpret_cast<int (*)(const char*, uint64_t, int)>(dlsym(lib, "ni_v7_call"));
  EXPECT_NE(call, nullptr);
  if (call == nullptr) return {};
  EXPECT_EQ(call(NI_PLUGIN_PATH, tag, rccl_layout), 0);
  dlclose(lib);
  auto ops = ops_written(dir);
  fs::remove_all(dir);
  return ops;
}

TEST(V7Tags, FromNcclEveryRecordCarriesItsCallsTag) {
  const uint64_t tag = 0x4000000000000123ull;  // past 2^53: must survive as an integer
  const auto ops = run_caller(NI_NCCL_CALLER, "nccl", tag, 0);
  ASSERT_EQ(ops.size(), 2u);
  for (const auto& op : ops) {
    ASSERT_TRUE(op.contains("user_tag")) << op.dump();
    EXPECT_EQ(op["user_tag"].get<uint64_t>(), tag) << op.dump();
  }
}

TEST(V7Tags, FromRcclNoTagIsRead) {
  const auto ops = run_caller(NI_RCCL_CALLER, "rccl", 0, 1);
  ASSERT_EQ(ops.size(), 2u);
  for (const auto& op : ops) EXPECT_FALSE(op.contains("user_tag")) << op.dump();
}

// The same short descriptors from an NCCL-named library would be read past:
// the guard is the caller, not luck. (NVIDIA's own descriptors are never short.)
TEST(V7Tags, TheGuardPageCatchesAReadPastRcclsDescriptor) {
  EXPECT_DEATH(run_caller(NI_NCCL_CALLER, "nccl-short", 0, 1), "");
}

}  // namespace
