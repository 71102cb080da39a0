// Fuzz target: random but type-correct NCCL callback sequences (plus garbage
// handles and contexts, which NCCL never sends but a bug elsewhere might)
// through every exported table, ncclProfiler_v1 .. v7, against the real
// adapters and core, in-process, from the main thread and from short-lived
// other threads. Any crash, sanitizer report or broken invariant (the records
// handed out + the counted drops != the ops completed) is a bug.
//
// Built with clang's libFuzzer (-fsanitize=fuzzer) when available; otherwise
// with replay_main.cpp, which runs every file given on the command line.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "plugin/abi/all.h"
#include "src/output/memory_sink.h"

extern "C" {
extern ni::abi::ProfilerV1 ncclProfiler_v1;
extern ni::abi::ProfilerV2 ncclProfiler_v2;
extern ni::abi::ProfilerV3 ncclProfiler_v3;
extern ni::abi::ProfilerV4 ncclProfiler_v4;
extern ni::abi::ProfilerV5 ncclProfiler_v5;
extern ni::abi::ProfilerV6 ncclProfiler_v6;
extern ni::abi::ProfilerV7 ncclProfiler_v7;
int ncclInspectorMark(const char* label);
}

namespace {

using namespace ni::abi;

struct Input {
  const uint8_t* p;
  size_t n;
  size_t i = 0;
  bool empty() const { return i >= n; }
  uint8_t u8() { return i < n ? p[i++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = v << 8 | u8();
    return v;
  }
};

const char* kFuncs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Send", "Recv", "Bogus", nullptr};
const char* kTypes[] = {"ncclFloat32", "ncclInt8", "ncclBfloat16", "Unknown", "ncclUint64", nullptr};

struct Comm {
  void* ctx = nullptr;
  int mask = 0;
  int abi = 5;
};

// One fuzz input played as NCCL would play it: the comms and the handles NCCL
// would hold, and one function per kind of step. Each step reads the input in
// the same order as it always has, so the corpus keeps its meaning.
struct Player {
  Input& in;
  std::vector<Comm> comms;
  std::vector<void*> handles;  // everything NCCL would hold
  uint8_t netbuf[64] = {};

  void* pick() {
    if (handles.empty()) return nullptr;
    return handles[in.u8() % handles.size()];
  }
  Comm* comm() {
    if (comms.empty()) return nullptr;
    return &comms[in.u8() % comms.size()];
  }

  void init_comm() {
    if (comms.size() >= 4) return;
    Comm n;
    n.abi = 1 + in.u8() % 6;  // 1..6
    switch (n.abi) {
      case 1: ncclProfiler_v1.init(&n.ctx, &n.mask); break;
      case 2: ncclProfiler_v2.init(&n.ctx, &n.mask); break;
      case 3: ncclProfiler_v3.init(&n.ctx, &n.mask); break;
      case 4:
        ncclProfiler_v4.init(&n.ctx, &n.mask, (in.u8() & 1) ? "f" : nullptr, in.u64(), 1, 1 + in.u8() % 16,
                             in.u8() % 16, nullptr);
        break;
      case 5: ncclProfiler_v5.init(&n.ctx, in.u64(), &n.mask, nullptr, 1, 1 + in.u8() % 16, in.u8() % 16, nullptr); break;
      default: {
        // v6, or v7 when the comm id is odd (the same input bytes as before v7 existed).
        const uint64_t id = in.u64();
        const int nranks = 1 + in.u8() % 16, rank = in.u8() % 16;
        if (id & 1) {
          n.abi = 7;
          ncclProfiler_v7.init(&n.ctx, id, &n.mask, "f", 1, nranks, rank, nullptr);
        } else {
          ncclProfiler_v6.init(&n.ctx, id, &n.mask, "f", 1, nranks, rank, nullptr);
        }
        break;
      }
    }
    comms.push_back(n);
  }

  static void finalize_ctx(const Comm& c) {
    switch (c.abi) {
      case 1: ncclProfiler_v1.finalize(c.ctx); break;
      case 2: ncclProfiler_v2.finalize(c.ctx); break;
      case 3: ncclProfiler_v3.finalize(c.ctx); break;
      case 4: ncclProfiler_v4.finalize(c.ctx); break;
      case 5: ncclProfiler_v5.finalize(c.ctx); break;
      case 6: ncclProfiler_v6.finalize(c.ctx); break;
      default: ncclProfiler_v7.finalize(c.ctx); break;
    }
  }

  void finalize_comm(Comm* c) {
    if (!c) return;
    finalize_ctx(*c);
    comms.erase(comms.begin() + (c - comms.data()));
  }

  // v1: function, type, algorithm and protocol as codes (garbage ones too).
  void start_op_v1(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV1 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    if (op == 2) {
      d.coll.commHash = in.u64();
      d.coll.seqNumber = in.u64();
      d.coll.func = in.u8() % 12;
      d.coll.datatype = in.u8() % 14;
      d.coll.count = in.u64() >> (in.u8() % 64);
      d.coll.nMaxChannels = in.u8();
      d.coll.algo = in.u8() % 9;
      d.coll.proto = in.u8() % 4;
    } else {
      d.p2p.commHash = in.u64();
      d.p2p.func = in.u8() % 12;
      d.p2p.datatype = in.u8() % 14;
      d.p2p.count = in.u64() >> (in.u8() % 64);
      d.p2p.peer = static_cast<int>(in.u8()) - 8;
    }
    ncclProfiler_v1.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void start_op_v2(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV2 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    if (op == 2) {
      d.coll.commHash = in.u64();
      d.coll.seqNumber = in.u64();
      d.coll.func = kFuncs[in.u8() % 9];
      d.coll.datatype = kTypes[in.u8() % 6];
      d.coll.count = in.u64() >> (in.u8() % 64);
      d.coll.nMaxChannels = in.u8();
      d.coll.algo = (in.u8() & 1) ? "RING" : nullptr;
      d.coll.proto = (in.u8() & 1) ? "LL128" : "Bogus";
    } else {
      d.p2p.commHash = in.u64();
      d.p2p.func = kFuncs[in.u8() % 9];
      d.p2p.datatype = kTypes[in.u8() % 6];
      d.p2p.count = in.u64() >> (in.u8() % 64);
      d.p2p.peer = static_cast<int>(in.u8()) - 8;
    }
    ncclProfiler_v2.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void start_op_v3(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV3 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    d.coll.func = kFuncs[in.u8() % 9];
    d.coll.datatype = kTypes[in.u8() % 6];
    d.coll.count = in.u64() >> (in.u8() % 64);
    d.coll.nMaxChannels = in.u8();
    d.coll.commHash = in.u64();
    ncclProfiler_v3.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void start_op_v4(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV4 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    if (op == 2) {
      d.coll.seqNumber = in.u64();
      d.coll.func = kFuncs[in.u8() % 9];
      d.coll.datatype = kTypes[in.u8() % 6];
      d.coll.count = in.u64() >> (in.u8() % 64);
      d.coll.nChannels = in.u8() % 70;
    } else {
      d.p2p.func = kFuncs[in.u8() % 9];
      d.p2p.datatype = kTypes[in.u8() % 6];
      d.p2p.count = in.u64() >> (in.u8() % 64);
      d.p2p.nChannels = in.u8() % 70;
      d.p2p.peer = static_cast<int>(in.u8()) - 8;
    }
    ncclProfiler_v4.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void start_op_v5(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV5 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    if (op == 2) {
      d.coll.func = kFuncs[in.u8() % 9];
      d.coll.datatype = kTypes[in.u8() % 6];
      d.coll.count = in.u64() >> (in.u8() % 64);
      d.coll.nChannels = in.u8() % 70;
      d.coll.seqNumber = in.u64();
    } else {
      d.p2p.func = kFuncs[in.u8() % 9];
      d.p2p.datatype = kTypes[in.u8() % 6];
      d.p2p.count = in.u64() >> (in.u8() % 64);
      d.p2p.nChannels = in.u8() % 70;
      d.p2p.peer = static_cast<int>(in.u8()) - 8;
    }
    ncclProfiler_v5.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void start_kernel_ch(Comm* c) {
    if (!c) return;
    void* h = nullptr;
    EventDescrV5 d{};
    d.type = kKernelCh;
    d.parentObj = pick();
    d.kernelCh.channelId = in.u8() % 72;
    d.kernelCh.pTimer = in.u64();
    ncclProfiler_v5.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  // KernelChStop, or any state with any args.
  void record_any() {
    StateArgsV5 a{};
    a.kernelCh.pTimer = in.u64();
    int st = in.u8() % 32;
    ncclProfiler_v5.recordEventState(pick(), static_cast<EventState>(st), (in.u8() & 1) ? &a : nullptr);
  }

  // A ProxyOp, sometimes foreign.
  void start_proxy_op(Comm* c) {
    if (!c) return;
    void* h = nullptr;
    EventDescrV5 d{};
    d.type = kProxyOp;
    d.parentObj = pick();
    d.proxyOp.pid = (in.u8() & 7) ? getpid() : getpid() + 1;
    d.proxyOp.peer = in.u8() % 16;
    d.proxyOp.isSend = in.u8() & 1;
    ncclProfiler_v5.startEvent((in.u8() & 7) ? c->ctx : reinterpret_cast<void*>(in.u64()), &h, &d);
    handles.push_back(h);
  }

  void start_proxy_step(Comm* c) {
    if (!c) return;
    void* h = nullptr;
    EventDescrV5 d{};
    d.type = kProxyStep;
    d.parentObj = pick();
    d.proxyStep.step = in.u8();
    ncclProfiler_v5.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  // Step states with sizes.
  void record_step() {
    StateArgsV5 a{};
    a.proxyStep.transSize = in.u64() >> 40;
    ncclProfiler_v5.recordEventState(pick(), static_cast<EventState>(8 + in.u8() % 13), &a);
  }

  // A NetPlugin event with an IB or socket payload.
  void start_net_plugin(Comm* c) {
    if (!c) return;
    for (auto& b : netbuf) b = in.u8();
    netbuf[0] = 1;
    void* h = nullptr;
    EventDescrV5 d{};
    d.type = kNetPlugin;
    d.parentObj = pick();
    d.netPlugin.id = (in.u8() & 1) ? kNetIbIdV1 : kNetSockIdV1;
    d.netPlugin.data = netbuf;
    ncclProfiler_v5.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  // A garbage handle value (never from NCCL; must still be safe).
  void garbage_handle() {
    void* g = reinterpret_cast<void*>(in.u64());
    ncclProfiler_v5.stopEvent(g);
    handles.push_back(g);
  }

  // v7: Coll/P2p with the appended fields (tag, symmetric-kernel id).
  void start_op_v7(Comm* c, uint8_t op) {
    void* h = nullptr;
    EventDescrV7 d{};
    d.type = op == 2 ? kColl : kP2p;
    d.parentObj = pick();
    if (op == 2) {
      d.coll.func = kFuncs[in.u8() % 9];
      d.coll.datatype = kTypes[in.u8() % 6];
      d.coll.count = in.u64() >> (in.u8() % 64);
      d.coll.nChannels = in.u8() % 70;
      d.coll.seqNumber = in.u64();
      d.coll.isSymColl = in.u8() & 1;
      d.coll.kernelVariant = d.coll.isSymColl ? "AllReduce_RSxLD_AGxST" : nullptr;
      d.coll.algo = d.coll.isSymColl ? "RSxLD_AGxST" : "RING";
      d.coll.proto = d.coll.isSymColl ? "" : "SIMPLE";
      d.coll.userTag = in.u64();
    } else {
      d.p2p.func = kFuncs[in.u8() % 9];
      d.p2p.datatype = kTypes[in.u8() % 6];
      d.p2p.count = in.u64() >> (in.u8() % 64);
      d.p2p.nChannels = in.u8() % 70;
      d.p2p.peer = static_cast<int>(in.u8()) - 8;
      d.p2p.userTag = in.u64();
    }
    ncclProfiler_v7.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  // v7: API markers, CE events and KernelPhase (bit 15, under any parent) with tags.
  void start_v7(Comm* c) {
    void* h = nullptr;
    EventDescrV7 d{};
    d.type = 1ull << (8 + in.u8() % 8);
    d.parentObj = pick();
    if (d.type == kCeColl) {
      d.ceColl.func = kFuncs[in.u8() % 9];
      d.ceColl.datatype = kTypes[in.u8() % 6];
      d.ceColl.count = in.u64() >> 40;
      d.ceColl.userTag = in.u64();
    } else if (d.type == kCollApi) {
      d.collApi.func = kFuncs[in.u8() % 9];
      d.collApi.graphCaptured = in.u8() & 1;
      d.collApi.userTag = in.u64();
    } else if (d.type == kP2pApi) {
      d.p2pApi.func = kFuncs[in.u8() % 9];
      d.p2pApi.userTag = in.u64();
    } else if (d.type == kKernelPhase) {
      d.kernelPhase.channelId = in.u8() % 72;
      d.kernelPhase.phaseId = in.u8() % 4;
      d.kernelPhase.phaseName = "initial_sync";
      d.kernelPhase.pTimer = in.u64();
    }
    ncclProfiler_v7.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
    if (d.type == kKernelPhase) {  // its stop state (31) with the end time, then its stop
      StateArgsV7 a{};
      a.kernelCh.pTimer = in.u64();
      ncclProfiler_v7.recordEventState(h, kKernelPhaseStop, &a);
      ncclProfiler_v7.stopEvent(h);
    }
  }

  // API markers and CE events on v6.
  void start_v6(Comm* c) {
    if (!c) return;
    if (c->abi == 7) return start_v7(c);
    void* h = nullptr;
    EventDescrV6 d{};
    d.type = 1ull << (8 + in.u8() % 8);
    d.parentObj = pick();
    // Only the union member of the chosen type is filled, as NCCL does.
    if (d.type == kCeColl) {
      d.ceColl.func = kFuncs[in.u8() % 9];
      d.ceColl.datatype = kTypes[in.u8() % 6];
      d.ceColl.count = in.u64() >> 40;
    } else if (d.type == kCeBatch) {
      d.ceCollBatch.totalBytes = in.u64() >> 40;
    } else if (d.type == kCollApi) {
      d.collApi.func = kFuncs[in.u8() % 9];
      d.collApi.graphCaptured = in.u8() & 1;
    } else if (d.type == kP2pApi) {
      d.p2pApi.func = kFuncs[in.u8() % 9];
    }
    ncclProfiler_v6.startEvent(c->ctx, &h, &d);
    handles.push_back(h);
  }

  void step(uint8_t op, Comm* c) {
    switch (op) {
      case 0: init_comm(); break;
      case 1: finalize_comm(c); break;
      case 2:
      case 3:  // Coll / P2p start
        if (!c) break;
        switch (c->abi) {
          case 1: start_op_v1(c, op); break;
          case 2: start_op_v2(c, op); break;
          case 3: start_op_v3(c, op); break;
          case 4: start_op_v4(c, op); break;
          case 7: start_op_v7(c, op); break;
          default: start_op_v5(c, op); break;
        }
        break;
      case 4: start_kernel_ch(c); break;
      case 5: record_any(); break;
      case 6:
      case 7:  // stop (possibly twice, possibly NULL)
        ncclProfiler_v5.stopEvent(pick());
        break;
      case 8: start_proxy_op(c); break;
      case 9: start_proxy_step(c); break;
      case 10: record_step(); break;
      case 11: start_net_plugin(c); break;
      case 12: garbage_handle(); break;
      case 13: start_v6(c); break;
      case 14:
        ncclInspectorMark((in.u8() & 1) ? "m" : nullptr);
        break;
      case 15: take(); break;
      case 17: {
        // Any event type value, known or not (descriptor zeroed: NULL names),
        // through a table picked at random.
        if (!c) break;
        void* h = nullptr;
        EventDescrV6 d{};
        d.type = (in.u8() & 1) ? 1ull << (in.u8() % 20) : in.u64();
        d.parentObj = pick();
        switch (in.u8() % 3) {
          case 0: {
            EventDescrV1 d1{};
            d1.type = static_cast<uint8_t>(d.type);
            d1.parentObj = d.parentObj;
            ncclProfiler_v1.startEvent(c->ctx, &h, &d1);
            break;
          }
          case 1: {
            EventDescrV4 d4{};
            d4.type = static_cast<uint8_t>(d.type);
            d4.parentObj = d.parentObj;
            ncclProfiler_v4.startEvent(c->ctx, &h, &d4);
            break;
          }
          default: ncclProfiler_v6.startEvent(c->ctx, &h, &d); break;
        }
        handles.push_back(h);
        break;
      }
      case 16: {
        // The next few steps on another thread (its own ring, registered on
        // its first event), joined before going on: NCCL's proxy and
        // profiler threads, and application threads that come and go.
        const int n = in.u8() % 8;
        std::thread t([this, n] {
          for (int k = 0; k < n && !in.empty(); ++k) {
            const uint8_t o = in.u8() % kSteps;
            if (o != 0 && o != 1 && o != 16) step(o, comm());  // no comm changes, no nesting
          }
        });
        t.join();
        break;
      }
    }
  }

  // The consumer's side: records handed out since the current runtime began.
  void take() {
    if (ni::out::MemorySink::current_ && !comms.empty()) taken += ni::out::MemorySink::current_->take().size();
  }
  static constexpr uint8_t kSteps = 18;
  uint64_t taken = 0;
};

void run(Input& in) {
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  setenv("NCCL_INSPECTOR_ENABLE_NET", (in.u8() & 1) ? "1" : "0", 1);
  setenv("NCCL_INSPECTOR_POOL_OPS", "64", 1);
  setenv("NCCL_INSPECTOR_RING_RECORDS", "64", 1);
  setenv("NCCL_INSPECTOR_BURST_RECORDS", "128", 1);
  Player p{in};
  for (int steps = 0; steps < 4000 && !in.empty(); ++steps) {
    const uint8_t op = in.u8() % Player::kSteps;
    Comm* c = p.comm();
    if (op == 1 && c != nullptr && p.comms.size() == 1) {
      // The last finalize ends the runtime (its final drain goes to a sink
      // we no longer see): check the invariant first, then start counting
      // afresh for the next runtime.
      p.take();
      const ni::CoreStats s = ni::stats();
      if (p.taken + s.dropped_ring_full != s.ops_completed || s.records_pending != 0) __builtin_trap();
      p.taken = 0;
    }
    p.step(op, c);
    if (p.handles.size() > 512) p.handles.erase(p.handles.begin(), p.handles.begin() + 256);
  }
  // Invariant: every op that completed was handed out or counted as dropped.
  if (!p.comms.empty()) {
    p.take();
    const ni::CoreStats s = ni::stats();
    if (p.taken + s.dropped_ring_full != s.ops_completed || s.records_pending != 0) __builtin_trap();
  }
  for (auto& c : p.comms) Player::finalize_ctx(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  run(in);
  return 0;
}
