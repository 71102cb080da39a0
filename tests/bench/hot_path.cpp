// The plugin's hot path in isolation: 8-channel collectives through the real
// ABI v5 adapters and core, as NCCL 2.28 issues them with our mask (Group
// start, Coll start/stop, Group stop, 8 x KernelCh start/record/stop = 28
// callbacks). Prints ns per collective (median of runs). Under callgrind,
// `--toggle-collect=*run_ops*` counts only the callbacks. --v7: the same
// through ABI v7 (NCCL 2.31+, a tagged call); --phases: v7 with
// NCCL_INSPECTOR_ENABLE_PHASES=1 and each channel's three KernelPhase events.
#include <algorithm>
#include <array>
#include <atomic>
#include <thread>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "plugin/abi/all.h"
#include "src/output/memory_sink.h"

extern "C" ni::abi::ProfilerV5 ncclProfiler_v5;
extern "C" ni::abi::ProfilerV7 ncclProfiler_v7;

namespace {
using namespace ni::abi;


// The floor: a table that does nothing but return a handle (what any plugin
// costs at least, including this loop's own descriptor building).
Result null_init(void** c, uint64_t, int* m, const char*, int, int, int, DebugLogger) {
  *c = reinterpret_cast<void*>(1);
  *m = kColl | kKernelCh;
  return kSuccess;
}
Result null_start(void*, void** h, EventDescrV5*) {
  *h = reinterpret_cast<void*>(1);
  return kSuccess;
}
Result null_stop(void*) { return kSuccess; }
Result null_record(void*, EventState, StateArgsV5*) { return kSuccess; }
Result null_fini(void*) { return kSuccess; }
ProfilerV5 g_null = {"null", null_init, null_start, null_stop, null_record, null_fini};
ProfilerV5* g_table = &ncclProfiler_v5;

// The app-thread half of one collective (4 callbacks); returns the Coll handle.
inline void* app_side(void* ctx, uint64_t seq) {
  EventDescrV5 g{};
  g.type = kGroup;
  void* gh = nullptr;
  g_table->startEvent(ctx, &gh, &g);
  EventDescrV5 d{};
  d.type = kColl;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 8;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.parentGroup = gh;
  void* op = nullptr;
  g_table->startEvent(ctx, &op, &d);
  g_table->stopEvent(op);
  g_table->stopEvent(gh);
  return op;
}

// The progress-thread half (8 x KernelCh start/record/stop = 24 callbacks).
inline void progress_side(void* ctx, void* op, uint64_t i) {
  StateArgsV5 a{};
  for (uint8_t ch = 0; ch < 8; ++ch) {
    EventDescrV5 k{};
    k.type = kKernelCh;
    k.parentObj = op;
    k.kernelCh.channelId = ch;
    k.kernelCh.pTimer = 1000 * i + ch;
    void* kh = nullptr;
    g_table->startEvent(ctx, &kh, &k);
    a.kernelCh.pTimer = 1000 * i + 500 + ch;
    g_table->recordEventState(kh, kKernelChStop, &a);
    g_table->stopEvent(kh);
  }
}

// Issues n collectives; returns the number of callbacks made.
__attribute__((noinline)) uint64_t run_ops(void* ctx, uint64_t n, uint64_t seq0) {
  for (uint64_t i = 0; i < n; ++i) progress_side(ctx, app_side(ctx, seq0 + i), seq0 + i);
  return n * 28;
}

// ---- ABI v7 (NCCL 2.31+): the same collective with a user tag, and with
// --phases each channel's three KernelPhase events (start, state 31, stop)
// before its KernelChStop: 28 + 72 = 100 callbacks.
Result null_init7(void** c, uint64_t, int* m, const char*, int, int, int, DebugLogger) {
  *c = reinterpret_cast<void*>(1);
  *m = kColl | kKernelCh | kKernelPhase;
  return kSuccess;
}
Result null_start7(void*, void** h, EventDescrV7*) {
  *h = reinterpret_cast<void*>(1);
  return kSuccess;
}
Result null_record7(void*, EventState, StateArgsV7*) { return kSuccess; }
ProfilerV7 g_null7 = {"null", null_init7, null_start7, null_stop, null_record7, null_fini};
ProfilerV7* g_table7 = &ncclProfiler_v7;
bool g_phases = false;

inline void* app_side7(void* ctx, uint64_t seq) {
  EventDescrV7 g{};
  g.type = kGroup;
  void* gh = nullptr;
  g_table7->startEvent(ctx, &gh, &g);
  EventDescrV7 d{};
  d.type = kColl;
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1 << 20;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 8;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.parentGroup = gh;
  d.coll.userTag = 12;
  void* op = nullptr;
  g_table7->startEvent(ctx, &op, &d);
  g_table7->stopEvent(op);
  g_table7->stopEvent(gh);
  return op;
}

inline void progress_side7(void* ctx, void* op, uint64_t i) {
  StateArgsV7 a{};
  for (uint8_t ch = 0; ch < 8; ++ch) {
    EventDescrV7 k{};
    k.type = kKernelCh;
    k.parentObj = op;
    k.kernelCh.channelId = ch;
    k.kernelCh.pTimer = 1000 * i + ch;
    void* kh = nullptr;
    g_table7->startEvent(ctx, &kh, &k);
    if (g_phases) {
      for (uint8_t p = 0; p < 3; ++p) {
        EventDescrV7 ph{};
        ph.type = kKernelPhase;
        ph.parentObj = kh;
        ph.kernelPhase.channelId = ch;
        ph.kernelPhase.phaseId = p;
        ph.kernelPhase.pTimer = 1000 * i + ch + 100 * p;
        void* h = nullptr;
        g_table7->startEvent(ctx, &h, &ph);
        a.kernelCh.pTimer = 1000 * i + ch + 100 * (p + 1);
        g_table7->recordEventState(h, kKernelPhaseStop, &a);
        g_table7->stopEvent(h);
      }
    }
    a.kernelCh.pTimer = 1000 * i + 500 + ch;
    g_table7->recordEventState(kh, kKernelChStop, &a);
    g_table7->stopEvent(kh);
  }
}

__attribute__((noinline)) uint64_t run_ops_v7(void* ctx, uint64_t n, uint64_t seq0) {
  for (uint64_t i = 0; i < n; ++i) progress_side7(ctx, app_side7(ctx, seq0 + i), seq0 + i);
  return n * (g_phases ? 100 : 28);
}

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void drain() {
  // Drop what was drained: a test sink that kept it would allocate (and
  // unmap) memory in the middle of the measurement.
  if (g_table == &ncclProfiler_v5 && ni::out::MemorySink::current_) ni::out::MemorySink::current_->discard();
}

// App and progress halves on two threads at once vs each alone. Each half's
// cost is the time inside its own callbacks (steady_clock around every call,
// the same way in both settings), so waiting for the other thread and the
// test sink's draining are not counted: what is left is how much one thread
// slows the other (shared cache lines, the op slots moving between cores).
struct Halves {
  double app_alone, prog_alone;  // both halves on one thread: no cache line crosses cores
  double app_apart, prog_apart;  // the halves on two threads taking turns a chunk at a time: the
                                 // handoff between cores is in, running at the same time is not
  double app_both, prog_both, wall_both;  // two threads at the same time
};
Halves concurrency(void* ctx, uint64_t ops) {
  const uint64_t chunk = 256;
  std::vector<void*> q(chunk);
  Halves h{};
  double app = 0, prog = 0;
  for (uint64_t done = 0; done < ops; done += chunk) {
    for (uint64_t i = 0; i < chunk; ++i) {
      const double t = now_ns();
      q[i] = app_side(ctx, done + i);
      app += now_ns() - t;
    }
    for (uint64_t i = 0; i < chunk; ++i) {
      const double t = now_ns();
      progress_side(ctx, q[i], done + i);
      prog += now_ns() - t;
    }
    drain();
  }
  const double n = static_cast<double>(((ops + chunk - 1) / chunk) * chunk);
  h.app_alone = app / n;
  h.prog_alone = prog / n;
  // Apart: a second thread runs the progress half of each chunk while the app
  // thread waits, then the app thread drains and runs the next chunk.
  {
    alignas(64) std::atomic<int> turn{0};  // 0: app thread, 1: progress thread, 2: stop
    double prog_apart = 0;
    uint64_t base = 0;
    std::thread worker([&] {
      double mine = 0;
      for (;;) {
        int t;
        // Acquire pairs with the app thread's release store of turn.
        while ((t = turn.load(std::memory_order_acquire)) == 0) std::this_thread::yield();
        if (t == 2) break;
        for (uint64_t i = 0; i < chunk; ++i) {
          const double t0 = now_ns();
          progress_side(ctx, q[i], base + i);
          mine += now_ns() - t0;
        }
        turn.store(0, std::memory_order_release);  // pairs with the app thread's acquire load
      }
      prog_apart = mine;
    });
    double app_apart = 0;
    for (uint64_t done = 0; done < ops; done += chunk) {
      for (uint64_t i = 0; i < chunk; ++i) {
        const double t0 = now_ns();
        q[i] = app_side(ctx, done + i);
        app_apart += now_ns() - t0;
      }
      base = done;
      turn.store(1, std::memory_order_release);  // pairs with the worker's acquire load
      // Acquire pairs with the worker's release store.
      while (turn.load(std::memory_order_acquire) != 0) std::this_thread::yield();
      drain();
    }
    turn.store(2, std::memory_order_release);  // pairs with the worker's acquire load
    worker.join();
    h.app_apart = app_apart / n;
    h.prog_apart = prog_apart / n;
  }
  // Both at once: the app thread posts handles; a persistent progress thread
  // consumes them, at most `chunk` behind (as NCCL cannot run far ahead of the
  // GPU either). The app thread also drains the sink (the single consumer),
  // outside its timed calls.
  std::vector<void*> all(static_cast<size_t>(ops));
  // Each on its own cache line, so the handshake itself adds no false sharing.
  alignas(64) std::atomic<uint64_t> posted{0};
  alignas(64) std::atomic<uint64_t> progressed{0};
  alignas(64) double prog_both = 0;  // written once, at the end, by the progress thread
  const double t0 = now_ns();
  std::thread progress([&] {
    double mine = 0;
    for (uint64_t i = 0; i < ops; ++i) {
      // Acquire pairs with the app thread's release store of posted.
      while (posted.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      const double t = now_ns();
      progress_side(ctx, all[i], i);
      mine += now_ns() - t;
      progressed.store(i + 1, std::memory_order_release);  // pairs with the app thread's acquire load
    }
    prog_both = mine;
  });
  alignas(64) double app_both = 0;
  for (uint64_t i = 0; i < ops; ++i) {
    // At most a chunk ahead of the progress thread; once there, the app thread
    // waits until that is down to half a chunk, then runs on in a burst (as a
    // host thread whose queue filled up does). Waiting one op at a time would
    // put a yield (a system call, with its cache and TLB effects) before every
    // timed op. Acquire pairs with the progress thread's release store.
    if (i - progressed.load(std::memory_order_acquire) >= chunk)
      while (i - progressed.load(std::memory_order_acquire) > chunk / 2) std::this_thread::yield();
    const double t = now_ns();
    all[i] = app_side(ctx, i);
    app_both += now_ns() - t;
    posted.store(i + 1, std::memory_order_release);  // pairs with the progress thread's acquire load
    if (i % chunk == chunk - 1) drain();  // as often as in the settings above
  }
  progress.join();
  h.wall_both = (now_ns() - t0) / static_cast<double>(ops);
  drain();
  h.app_both = app_both / static_cast<double>(ops);
  h.prog_both = prog_both / static_cast<double>(ops);
  return h;
}
// The control for `concurrency`: two threads running whole ops (both halves)
// on two comms of their own, so they share no op, slot or ring. Whatever
// running them at the same time costs (two vCPUs sharing a physical core,
// memory bandwidth) is the machine's, not the design's. Returns ns per op
// inside the callbacks, taking turns a chunk at a time ("apart") and at the
// same time ("both"); the main thread drains between chunks in both settings.
struct Independent {
  double apart, both;
};
Independent independent(void* ctx_a, void* ctx_b, uint64_t ops) {
  const uint64_t chunk = 256;
  const uint64_t chunks = (ops + chunk - 1) / chunk;
  // Two persistent workers, each on its own comm; the main thread tells them
  // which chunk to run (go) and waits for it (done), then drains.
  struct Worker {
    alignas(64) std::atomic<uint64_t> go{0};
    alignas(64) std::atomic<uint64_t> done{0};
    double apart = 0, both = 0;  // written by the worker, read after join
  };
  Worker w[2];
  void* ctxs[2] = {ctx_a, ctx_b};
  auto body = [&](int id) {
    Worker& me = w[id];
    for (uint64_t k = 0; k < 2 * chunks; ++k) {  // chunks apart, then chunks both
      // Acquire pairs with the main thread's release store of go.
      while (me.go.load(std::memory_order_acquire) <= k) std::this_thread::yield();
      double t = 0;
      const uint64_t base = (k % chunks) * chunk;
      for (uint64_t i = 0; i < chunk; ++i) {
        const double t0 = now_ns();
        progress_side(ctxs[id], app_side(ctxs[id], base + i), base + i);
        t += now_ns() - t0;
      }
      (k < chunks ? me.apart : me.both) += t;
      me.done.store(k + 1, std::memory_order_release);  // pairs with the main thread's acquire loads
    }
  };
  std::thread ta(body, 0), tb(body, 1);
  auto run = [&](int id, uint64_t k) {
    w[id].go.store(k + 1, std::memory_order_release);  // pairs with the worker's acquire load
  };
  auto wait = [&](int id, uint64_t k) {
    // Acquire pairs with the worker's release store of done.
    while (w[id].done.load(std::memory_order_acquire) <= k) std::this_thread::yield();
  };
  for (uint64_t k = 0; k < chunks; ++k) {  // apart: one after the other
    run(0, k);
    wait(0, k);
    run(1, k);
    wait(1, k);
    drain();
  }
  for (uint64_t k = chunks; k < 2 * chunks; ++k) {  // both at once
    run(0, k);
    run(1, k);
    wait(0, k);
    wait(1, k);
    drain();
  }
  ta.join();
  tb.join();
  const double n = static_cast<double>(chunks * chunk) * 2;
  return Independent{(w[0].apart + w[1].apart) / n, (w[0].both + w[1].both) / n};
}
}  // namespace

int main(int argc, char** argv) {
  uint64_t ops = 20000;
  int runs = 7;
  bool concurrent = false;
  bool independent_mode = false;
  bool v7 = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--null")) {
      g_table = &g_null;
      g_table7 = &g_null7;
    }
    if (!std::strcmp(argv[i], "--v7")) v7 = true;
    if (!std::strcmp(argv[i], "--phases")) g_phases = v7 = true;
    if (!std::strcmp(argv[i], "--concurrent")) concurrent = true;
    if (!std::strcmp(argv[i], "--independent")) independent_mode = true;
    if (i + 1 < argc && !std::strcmp(argv[i], "--ops")) ops = std::strtoull(argv[i + 1], nullptr, 10);
    if (i + 1 < argc && !std::strcmp(argv[i], "--runs")) runs = std::atoi(argv[i + 1]);
  }
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  if (g_phases) setenv("NCCL_INSPECTOR_ENABLE_PHASES", "1", 1);
  int mask = 0;
  void* ctx = nullptr;
  if (v7) {
    // --v7 [--phases]: the plain loop only.
    g_table7->init(&ctx, 0x1234, &mask, "bench", 1, 8, 0, nullptr);
    const uint64_t chunk = 256;
    const int per = g_phases ? 100 : 28;
    std::vector<double> ns_per_op;
    uint64_t seq = 0;
    for (int r = 0; r < runs; ++r) {
      double total_ns = 0;
      for (uint64_t done = 0; done < ops; done += chunk) {
        const double t0 = now_ns();
        (void)run_ops_v7(ctx, chunk, seq);
        total_ns += now_ns() - t0;
        seq += chunk;
        if (g_table7 == &ncclProfiler_v7 && ni::out::MemorySink::current_) ni::out::MemorySink::current_->discard();
      }
      ns_per_op.push_back(total_ns / static_cast<double>(((ops + chunk - 1) / chunk) * chunk));
    }
    std::sort(ns_per_op.begin(), ns_per_op.end());
    ni::CoreStats s = g_table7 == &ncclProfiler_v7 ? ni::stats() : ni::CoreStats{};
    std::printf("{\"ns_per_collective\": %.1f, \"callbacks_per_collective\": %d, \"ns_per_callback\": %.2f, "
                "\"ops\": %llu, \"dropped\": %llu, \"phases_asked\": %s}\n",
                ns_per_op[ns_per_op.size() / 2], per, ns_per_op[ns_per_op.size() / 2] / per,
                static_cast<unsigned long long>(seq),
                static_cast<unsigned long long>(s.dropped_ring_full + s.dropped_pool_exhausted),
                (mask & kKernelPhase) != 0 ? "true" : "false");
    g_table7->finalize(ctx);
    return 0;
  }
  g_table->init(&ctx, 0x1234, &mask, "bench", 1, 8, 0, nullptr);
  if (independent_mode) {
    void* ctx_b = nullptr;
    g_table->init(&ctx_b, 0x5678, &mask, "bench-b", 1, 8, 0, nullptr);
    std::vector<double> apart, both;
    for (int r = 0; r < runs; ++r) {
      const Independent x = independent(ctx, ctx_b, ops);
      apart.push_back(x.apart);
      both.push_back(x.both);
    }
    std::sort(apart.begin(), apart.end());
    std::sort(both.begin(), both.end());
    std::printf("{\"independent_apart_ns\": %.1f, \"independent_both_ns\": %.1f}\n", apart[apart.size() / 2],
                both[both.size() / 2]);
    g_table->finalize(ctx_b);
    g_table->finalize(ctx);
    return 0;
  }
  if (concurrent) {
    std::vector<Halves> res;
    for (int r = 0; r < runs; ++r) res.push_back(concurrency(ctx, ops));
    auto med = [&](double Halves::*f) {
      std::vector<double> v;
      for (auto& x : res) v.push_back(x.*f);
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("{\"app_alone_ns\": %.1f, \"progress_alone_ns\": %.1f, \"app_apart_ns\": %.1f, "
                "\"progress_apart_ns\": %.1f, \"app_both_ns\": %.1f, \"progress_both_ns\": %.1f, "
                "\"concurrent_wall_ns\": %.1f}\n",
                med(&Halves::app_alone), med(&Halves::prog_alone), med(&Halves::app_apart), med(&Halves::prog_apart),
                med(&Halves::app_both), med(&Halves::prog_both), med(&Halves::wall_both));
    g_table->finalize(ctx);
    return 0;
  }
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
      drain();
    }
    ns_per_op.push_back(total_ns / static_cast<double>(((ops + chunk - 1) / chunk) * chunk));
  }
  std::sort(ns_per_op.begin(), ns_per_op.end());
  ni::CoreStats s = g_table == &ncclProfiler_v5 ? ni::stats() : ni::CoreStats{};
  std::printf("{\"ns_per_collective\": %.1f, \"callbacks_per_collective\": 28, \"ns_per_callback\": %.2f, "
              "\"ops\": %llu, \"dropped\": %llu}\n",
              ns_per_op[ns_per_op.size() / 2], ns_per_op[ns_per_op.size() / 2] / 28.0,
              static_cast<unsigned long long>(seq),
              static_cast<unsigned long long>(s.dropped_ring_full + s.dropped_pool_exhausted));
  g_table->finalize(ctx);
  (void)calls;
  return 0;
}
