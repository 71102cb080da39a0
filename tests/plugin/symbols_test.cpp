// Loads the built plugin with dlopen(RTLD_NOW|RTLD_LOCAL), as NCCL does, and
// checks which symbols it offers: exactly the six profiler tables (plus the
// small ncclInspector* marker API), nothing else of ours.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include "plugin/abi/all.h"

namespace {

std::set<std::string> dynamic_defined_symbols(const char* path) {
  std::string cmd = std::string("nm -D --defined-only ") + path;
  std::set<std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    auto sp = s.rfind(' ');
    if (sp == std::string::npos) continue;
    std::string name = s.substr(sp + 1);
    auto at = name.find('@');
    if (at != std::string::npos) name = name.substr(0, at);
    out.insert(name);
  }
  pclose(p);
  return out;
}

TEST(PluginSymbols, ExportsExactlyTheSevenTables) {
  auto syms = dynamic_defined_symbols(NI_PLUGIN_PATH);
  std::set<std::string> ours;
  for (const auto& s : syms) {
    // Linker-provided version-node symbols are not ours.
    if (s.empty() || s[0] == '_') continue;
    ours.insert(s);
  }
  std::set<std::string> allowed = {"ncclProfiler_v1", "ncclProfiler_v2", "ncclProfiler_v3",
                                   "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6",
                                   "ncclProfiler_v7"};
  for (const auto& s : ours) {
    bool ok = allowed.count(s) || s.rfind("ncclInspector", 0) == 0;
    EXPECT_TRUE(ok) << "unexpected exported symbol: " << s;
  }
  for (const auto& s : allowed) EXPECT_TRUE(ours.count(s)) << "missing " << s;
}

TEST(PluginSymbols, TablesResolveWithDlopenAndHaveEveryFunction) {
  void* lib = dlopen(NI_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  for (int v = 1; v <= 7; ++v) {
    std::string name = "ncclProfiler_v" + std::to_string(v);
    // All tables share one shape (profiler-abi.md §4); read it as v1's.
    auto* t = static_cast<ni::abi::ProfilerV1*>(dlsym(lib, name.c_str()));
    ASSERT_NE(t, nullptr) << name;
    EXPECT_NE(t->name, nullptr);
    EXPECT_NE(reinterpret_cast<void*>(t->init), nullptr);
    EXPECT_NE(reinterpret_cast<void*>(t->startEvent), nullptr);
    EXPECT_NE(reinterpret_cast<void*>(t->stopEvent), nullptr);
    EXPECT_NE(reinterpret_cast<void*>(t->recordEventState), nullptr);
    EXPECT_NE(reinterpret_cast<void*>(t->finalize), nullptr);
  }
  EXPECT_EQ(dlsym(lib, "ncclProfiler_v8"), nullptr);
  EXPECT_EQ(dlsym(lib, "_ZN2ni4core9comm_initERKNS0_8InitArgsE"), nullptr) << "core symbols must be hidden";
  dlclose(lib);
}

TEST(PluginSymbols, NoCudaOrNcclDependency) {
  std::string cmd = std::string("objdump -p ") + NI_PLUGIN_PATH + " | grep NEEDED";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512];
  std::string all;
  while (std::fgets(line, sizeof line, p)) all += line;
  pclose(p);
  EXPECT_EQ(all.find("cuda"), std::string::npos) << all;
  EXPECT_EQ(all.find("nccl"), std::string::npos) << all;
  if (NI_STATIC_RUNTIME) {  // sanitizer builds link the shared runtime on purpose
    EXPECT_EQ(all.find("libstdc++"), std::string::npos) << "libstdc++ must be linked statically: " << all;
  }
}

}  // namespace
