// Plugin memory with N communicators: dlopens the real plugin (with its dump
// thread and file output), initialises N comms through ABI v5, runs a burst
// of 8-channel collectives on each from an app thread and one progress thread
// per comm (as NCCL does), and reports the resident-set growth.
// Usage: mem_bench PLUGIN.so NCOMMS [OPS_PER_COMM]
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "plugin/abi/all.h"

namespace {
using namespace ni::abi;

long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mem_bench PLUGIN.so NCOMMS [OPS_PER_COMM]\n");
    return 2;
  }
  const int ncomms = std::atoi(argv[2]);
  const int ops = argc > 3 ? std::atoi(argv[3]) : 2000;
  const long before = rss_kb();
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  auto* t = static_cast<ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
  int mask = 0;
  std::vector<void*> ctx(static_cast<size_t>(ncomms));
  for (int i = 0; i < ncomms; ++i) {
    std::string name = "comm" + std::to_string(i);
    t->init(&ctx[static_cast<size_t>(i)], 0x1000u + static_cast<uint64_t>(i), &mask, name.c_str(), 1, 8, 0, nullptr);
  }
  const long after_init = rss_kb();
  // One app thread and one progress thread per comm.
  std::vector<std::thread> threads;
  for (int i = 0; i < ncomms; ++i) {
    threads.emplace_back([&, i] {
      void* c = ctx[static_cast<size_t>(i)];
      StateArgsV5 a{};
      for (int k = 0; k < ops; ++k) {
        EventDescrV5 d{};
        d.type = kColl;
        d.coll.func = "AllReduce";
        d.coll.datatype = "ncclFloat32";
        d.coll.count = 1 << 20;
        d.coll.nChannels = 8;
        d.coll.algo = "RING";
        d.coll.proto = "SIMPLE";
        d.coll.seqNumber = static_cast<uint64_t>(k);
        void* op = nullptr;
        t->startEvent(c, &op, &d);
        t->stopEvent(op);
        for (uint8_t ch = 0; ch < 8; ++ch) {
          EventDescrV5 kd{};
          kd.type = kKernelCh;
          kd.parentObj = op;
          kd.kernelCh.channelId = ch;
          kd.kernelCh.pTimer = 1000u * static_cast<uint64_t>(k);
          void* kh = nullptr;
          t->startEvent(c, &kh, &kd);
          a.kernelCh.pTimer = 1000u * static_cast<uint64_t>(k) + 500;
          t->recordEventState(kh, kKernelChStop, &a);
          t->stopEvent(kh);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const long peak = rss_kb();
  for (void* c : ctx) t->finalize(c);
  std::printf("{\"comms\": %d, \"ops_per_comm\": %d, \"rss_growth_kb\": %ld, \"rss_after_init_kb\": %ld}\n", ncomms, ops,
              peak - before, after_init - before);
  dlclose(lib);
  return 0;
}
