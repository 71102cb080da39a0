// Helpers shared by the integration tests: a scratch directory, reading a log
// directory back with the analyzer's reader, and the built plugin loaded with
// dlopen and driven through its v5 table (one Coll op with one GPU-timed
// channel per call).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "plugin/abi/all.h"
#include "src/analysis/reader.h"

namespace ni::it {

namespace fs = std::filesystem;
namespace ana = ni::analysis;

inline fs::path temp_dir(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("ni-it-" + tag + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

struct Read {
  ana::ReadResult result;
  std::vector<ana::Op> ops;
};

inline Read read_dir(const fs::path& dir) {
  ana::Discovery d = ana::discover_files({dir.string()});
  EXPECT_TRUE(d.error.empty()) << d.error;
  Read r;
  ana::ReadOptions o;
  o.progress = 0;
  auto sink = ana::read_merged<ana::CollectSink>(d.files, o, 2, r.result);
  r.ops = std::move(sink->ops);
  return r;
}

struct Plugin {
  void* lib = nullptr;
  ni::abi::ProfilerV5* t = nullptr;
  explicit Plugin(const fs::path& logs) {
    setenv("NCCL_INSPECTOR_DUMP_DIR", logs.c_str(), 1);
    setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
    lib = dlopen(NI_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib) t = static_cast<ni::abi::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  }
  ~Plugin() {
    if (lib) dlclose(lib);
    unsetenv("NCCL_INSPECTOR_DUMP_DIR");
    unsetenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES");
  }
  void* init(uint64_t hash) {
    int mask = 0;
    void* ctx = nullptr;
    t->init(&ctx, hash, &mask, "t", 1, 2, 0, nullptr);
    return ctx;
  }
  void op(void* ctx, uint64_t seq) {
    ni::abi::EventDescrV5 d{};
    d.type = ni::abi::kColl;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.count = 1024;
    d.coll.nChannels = 1;
    d.coll.seqNumber = seq;
    void* h = nullptr;
    t->startEvent(ctx, &h, &d);
    t->stopEvent(h);
    ni::abi::EventDescrV5 k{};
    k.type = ni::abi::kKernelCh;
    k.parentObj = h;
    k.kernelCh.pTimer = 1000 + seq;
    void* kh = nullptr;
    t->startEvent(ctx, &kh, &k);
    ni::abi::StateArgsV5 a{};
    a.kernelCh.pTimer = 2000 + seq;
    t->recordEventState(kh, ni::abi::kKernelChStop, &a);
    t->stopEvent(kh);
  }
};

}  // namespace ni::it
