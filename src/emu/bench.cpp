// Bench mode: a tight loop of N-channel collectives through the bound table
// (Group start, Coll start, Coll stop, Group stop, then per channel KernelCh
// start, record 22, stop: 28 callbacks for 8 channels on v4+), single thread,
// median ns per collective over several runs. Works for any plugin.
#include <algorithm>
#include <chrono>

#include "src/emu/binding.h"

namespace ni::emu {

using namespace ni::abi;

BenchResult bench(const BenchOptions& o) {
  BenchResult r;
  unsigned avail = 0;
  std::string err;
  if (!o.plugin_path.empty()) {
    if (!probe_plugin(o.plugin_path, &avail, &err)) {
      r.error = err;
      return r;
    }
  } else {
    avail = avail_mask_of(o.tables);
  }
  if (select_abi(o.nccl, avail) == 0) {
    r.error = "plugin exports no ncclProfiler_vN that NCCL " + o.nccl.str() + " would bind";
    return r;
  }
  if (o.channels < 1 || o.channels > kMaxChannels || o.iters < 1 || o.runs < 1) {
    r.error = "bench: channels must be 1..64, iters and runs >= 1";
    return r;
  }
  Loader loader(o.plugin_path, o.tables);
  PluginTables t;
  if (!loader.acquire(&t, &err)) {
    r.error = err;
    return r;
  }
  Binding b(o.nccl, t);
  r.bound_abi = b.bound();
  alignas(64) int mask = 0;
  void* ctx = nullptr;
  CommInit ci;
  ci.comm_hash = 0x1234;
  ci.comm_name = "bench";
  ci.nnodes = 1;
  ci.nranks = 8;
  ci.logfn = nccl_logger();
  b.init(&ctx, &mask, ci);
  const int minor = o.nccl.minor;
  Ev g;
  g.type = kGroup;
  Ev c;
  c.type = kColl;
  c.func = kFuncAllReduce;
  c.count = 1 << 20;
  c.dtype = kBfloat16;
  c.nchannels = static_cast<uint8_t>(o.channels);
  c.nwarps = 16;
  c.algo = kAlgoRing;
  c.proto = kProtoSimple;
  Ev k;
  k.type = kKernelCh;
  St s;
  uint64_t ptimer = 1000000000ull;
  auto one = [&] {
    void* gh = b.start(ctx, g);
    c.parent = minor >= 28 ? nullptr : gh;
    c.parent_group = gh;
    ++c.seq;
    void* ch = b.start(ctx, c);
    if (ch) b.stop(kColl, ch);
    if (gh) b.stop(kGroup, gh);
    if (minor < 26) return;
    k.parent = ch;
    for (int i = 0; i < o.channels; ++i) {
      k.channel = static_cast<uint8_t>(i);
      k.ptimer = minor >= 27 ? ptimer : 0;
      void* kh = b.start(ctx, k);
      if (!kh) continue;
      if (minor >= 27) {
        s.ptimer = ptimer + 5000;
        b.record(kKernelCh, kh, kKernelChStop, s);
      }
      b.stop(kKernelCh, kh);
    }
    ptimer += 10000;
  };
  auto total_calls = [&] {
    uint64_t n = 0;
    for (int i = 0; i < kNumTypes; ++i)
      n += b.counters().start[i].load(std::memory_order_relaxed) + b.counters().stop[i].load(std::memory_order_relaxed) +
           b.counters().record[i].load(std::memory_order_relaxed);
    return n;
  };
  const uint64_t before = total_calls();
  one();
  r.callbacks_per_coll = static_cast<int>(total_calls() - before);
  for (int i = 0; i < std::min(o.iters, 1000); ++i) one();  // warm up
  std::vector<double> per;
  for (int run = 0; run < o.runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) one();
    const auto t1 = std::chrono::steady_clock::now();
    per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / o.iters);
  }
  std::sort(per.begin(), per.end());
  r.ns_per_coll = per[per.size() / 2];
  r.ns_per_callback = r.callbacks_per_coll > 0 ? r.ns_per_coll / r.callbacks_per_coll : 0;
  if (minor <= 27 || ctx != nullptr) b.finalize(ctx);
  loader.release();
  r.ok = true;
  return r;
}

}  // namespace ni::emu
