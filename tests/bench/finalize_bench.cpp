// How long the last comm's finalize takes with records pending and a long
// dump interval (it must drain at once, never wait out the interval).
// Usage: finalize_bench PLUGIN.so  (prints one JSON line; set the interval
// with NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS, scripts/bench uses 5 s)
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "plugin/abi/all.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::vector<double> us;
  for (int run = 0; run < 5; ++run) {
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return 2;
    auto* t = static_cast<ni::abi::ProfilerV5*>(dlsym(lib, "ncclProfiler_v5"));
    int mask = 0;
    void* ctx = nullptr;
    t->init(&ctx, 1, &mask, "fin", 1, 2, 0, nullptr);
    for (int i = 0; i < 1000; ++i) {
      ni::abi::EventDescrV5 d{};
      d.type = ni::abi::kColl;
      d.coll.func = "AllReduce";
      d.coll.datatype = "ncclFloat32";
      d.coll.count = 4096;
      d.coll.nChannels = 1;
      void* h = nullptr;
      t->startEvent(ctx, &h, &d);
      t->stopEvent(h);
      ni::abi::EventDescrV5 k{};
      k.type = ni::abi::kKernelCh;
      k.parentObj = h;
      void* kh = nullptr;
      t->startEvent(ctx, &kh, &k);
      ni::abi::StateArgsV5 a{};
      a.kernelCh.pTimer = 10;
      t->recordEventState(kh, ni::abi::kKernelChStop, &a);
      t->stopEvent(kh);
    }
    const auto t0 = std::chrono::steady_clock::now();
    t->finalize(ctx);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    dlclose(lib);
  }
  std::sort(us.begin(), us.end());
  std::printf("{\"finalize_us_median\": %.0f, \"finalize_us_max\": %.0f, \"pending_records\": 1000}\n",
              us[us.size() / 2], us.back());
  return 0;
}
