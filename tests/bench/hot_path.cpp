// The plugin's hot path in isolation: 8-channel collectives through the real
// ABI v5 adapters and core, as NCCL 2.28 issues them with our mask (Group
// start, Coll start/stop, Group stop, 8 x KernelCh start/record/stop = 28
// callbacks). Prints ns per collective (median of runs). Under callgrind,
// `--toggle-collect=run_ops` counts only the callbacks.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "plugin/abi/all.h"
#include "src/core/memory_sink.h"

extern "C" nccl_abi::ProfilerV5 ncclProfiler_v5;

namespace {
using namespace nccl_abi;

void* start(void* ctx, EventDescrV5& d) {
  void* h = nullptr;
  ncclProfiler_v5.startEvent(ctx, &h, &d);
  return h;
}

// Issues n collectives; returns the number of callbacks made.
__attribute__((noinline)) uint64_t run_ops(void* ctx, uint64_t n, uint64_t seq0) {
  uint64_t calls = 0;
  StateArgsV5 a{};
  for (uint64_t i = 0; i < n; ++i) {
    EventDescrV5 g{};
    g.type = kGroup;
    void* gh = start(ctx, g);
    EventDescrV5 d{};
    d.type = kColl;
    d.parentObj = nullptr;
    d.coll.seqNumber = seq0 + i;
    d.coll.func = "AllReduce";
    d.coll.count = 1 << 20;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 8;
    d.coll.nWarps = 16;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.parentGroup = gh;
    void* op = start(ctx, d);
    ncclProfiler_v5.stopEvent(op);
    ncclProfiler_v5.stopEvent(gh);
    calls += 4;
    for (uint8_t ch = 0; ch < 8; ++ch) {
      EventDescrV5 k{};
      k.type = kKernelCh;
      k.parentObj = op;
      k.kernelCh.channelId = ch;
      k.kernelCh.pTimer = 1000 * i + ch;
      void* kh = start(ctx, k);
      a.kernelCh.pTimer = 1000 * i + 500 + ch;
      ncclProfiler_v5.recordEventState(kh, kKernelChStop, &a);
      ncclProfiler_v5.stopEvent(kh);
      calls += 3;
    }
  }
  return calls;
}
}  // namespace

int main(int argc, char** argv) {
  uint64_t ops = 20000;
  int runs = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ops")) ops = std::strtoull(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  int mask = 0;
  void* ctx = nullptr;
  ncclProfiler_v5.init(&ctx, 0x1234, &mask, "bench", 1, 8, 0, nullptr);
  const uint64_t chunk = 256;  // drain between chunks so the ring never fills
  std::vector<double> ns_per_op;
  uint64_t seq = 0, calls = 0;
  for (int r = 0; r < runs; ++r) {
    double total_ns = 0;
    for (uint64_t done = 0; done < ops; done += chunk) {
      auto t0 = std::chrono::steady_clock::now();
      calls += run_ops(ctx, chunk, seq);
      auto t1 = std::chrono::steady_clock::now();
      total_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
      seq += chunk;
      ni::MemorySink::current_->take();
    }
    ns_per_op.push_back(total_ns / static_cast<double>(((ops + chunk - 1) / chunk) * chunk));
  }
  std::sort(ns_per_op.begin(), ns_per_op.end());
  ni::CoreStats s = ni::stats();
  std::printf("{\"ns_per_collective\": %.1f, \"callbacks_per_collective\": 28, \"ns_per_callback\": %.2f, "
              "\"ops\": %llu, \"dropped\": %llu}\n",
              ns_per_op[ns_per_op.size() / 2], ns_per_op[ns_per_op.size() / 2] / 28.0,
              static_cast<unsigned long long>(seq),
              static_cast<unsigned long long>(s.dropped_ring_full + s.dropped_pool_exhausted));
  ncclProfiler_v5.finalize(ctx);
  (void)calls;
  return 0;
}
