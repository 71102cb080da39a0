// The recording plugin (see recorder.h). Its own lock guards the log: it is a
// test plugin, not the emulator.
#include "tests/emu/recorder.h"

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace ni::rec {

using namespace ni::abi;

namespace {

std::mutex g_mu;               // guards g_log and g_order
std::vector<Call> g_log;
int g_order = 0;
std::atomic<int> g_mask{0xffff};          // knobs: written by the test before a run
std::atomic<int> g_init_result{0};
std::atomic<uint64_t> g_null_types{0};
std::atomic<uintptr_t> g_next_handle{0x10000};  // unique fake handles
int* g_mask_ptr = nullptr;     // guarded by g_mu
char g_ctx[64];

std::string thread_name() {
  char b[32] = {};
  pthread_getname_np(pthread_self(), b, sizeof b);
  return b;
}

void push(Call c) {
  c.thread = thread_name();
  std::lock_guard<std::mutex> g(g_mu);
  c.order = g_order++;
  g_log.push_back(std::move(c));
}

void* new_handle(uint64_t type) {
  if (g_null_types.load() & type) return nullptr;
  return reinterpret_cast<void*>(g_next_handle.fetch_add(16));
}

const char* s(const char* p) { return p ? p : "(null)"; }

Result init_common(int abi, void** ctx, int* mask, uint64_t id, const char* name, int nn, int nr, int rank,
                   DebugLogger l) {
  Call c;
  c.kind = Kind::kInit;
  c.abi = abi;
  c.comm_id = id;
  c.comm_name = name ? name : "";
  c.nnodes = nn;
  c.nranks = nr;
  c.rank = rank;
  c.has_logger = l != nullptr;
  *ctx = g_ctx + abi;
  c.ctx = *ctx;
  // Concurrent inits all write NCCL's one mask: write it atomically (a plain
  // int store from several threads would be a race in the plugin).
  std::atomic_ref<int>(*mask).store(g_mask.load(), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(g_mu);
    g_mask_ptr = mask;
  }
  push(c);
  return static_cast<Result>(g_init_result.load());
}

Result init1(void** ctx, int* mask) { return init_common(1, ctx, mask, 0, nullptr, 0, 0, 0, nullptr); }
Result init2(void** ctx, int* mask) { return init_common(2, ctx, mask, 0, nullptr, 0, 0, 0, nullptr); }
Result init3(void** ctx, int* mask) { return init_common(3, ctx, mask, 0, nullptr, 0, 0, 0, nullptr); }
Result init4(void** ctx, int* mask, const char* n, uint64_t h, int nn, int nr, int r, DebugLogger l) {
  return init_common(4, ctx, mask, h, n, nn, nr, r, l);
}
Result init5(void** ctx, uint64_t id, int* mask, const char* n, int nn, int nr, int r, DebugLogger l) {
  return init_common(5, ctx, mask, id, n, nn, nr, r, l);
}
Result init6(void** ctx, uint64_t id, int* mask, const char* n, int nn, int nr, int r, DebugLogger l) {
  return init_common(6, ctx, mask, id, n, nn, nr, r, l);
}
Result init7(void** ctx, uint64_t id, int* mask, const char* n, int nn, int nr, int r, DebugLogger l) {
  return init_common(7, ctx, mask, id, n, nn, nr, r, l);
}

template <int Abi>
Result fin(void* ctx) {
  Call c;
  c.kind = Kind::kFinalize;
  c.abi = Abi;
  c.ctx = ctx;
  {
    std::lock_guard<std::mutex> g(g_mu);
    c.mask_seen = g_mask_ptr ? std::atomic_ref<int>(*g_mask_ptr).load(std::memory_order_relaxed) : 0;
  }
  push(c);
  return kSuccess;
}

template <int Abi>
Result stop(void* h) {
  Call c;
  c.kind = Kind::kStop;
  c.abi = Abi;
  c.handle = h;
  push(c);
  return kSuccess;
}

template <typename P>
void proxy_fields(Call& c, const P& d) {
  c.pid = d.proxyOp.pid;
  c.channel = d.proxyOp.channelId;
  c.peer = d.proxyOp.peer;
  c.nsteps = d.proxyOp.nSteps;
  c.chunk = d.proxyOp.chunkSize;
  c.is_send = d.proxyOp.isSend;
}

template <typename D>
Call base(int abi, void* ctx, const D* d) {
  Call c;
  c.kind = Kind::kStart;
  c.abi = abi;
  c.ctx = ctx;
  c.type = d->type;
  c.parent = d->parentObj;
  c.rank = d->rank;
  return c;
}

void net_fields(Call& c, int64_t id, void* data) {
  c.net_id = id;
  if (data == nullptr) return;
  if (id == kNetIbIdV1) std::memcpy(&c.ib, data, sizeof c.ib);
  if (id == kNetSockIdV1) std::memcpy(&c.sock, data, sizeof c.sock);
}

Result start1(void* ctx, void** h, EventDescrV1* d) {
  Call c = base(1, ctx, d);
  if (d->type == kColl) {
    c.name = d->coll.name;
    c.comm_hash = d->coll.commHash;
    c.seq = d->coll.seqNumber;
    c.func_code = d->coll.func;
    c.count = d->coll.count;
    c.root = d->coll.root;
    c.dtype_code = d->coll.datatype;
    c.nchannels = d->coll.nMaxChannels;
    c.algo = std::to_string(d->coll.algo);
    c.proto = std::to_string(d->coll.proto);
  } else if (d->type == kP2p) {
    c.name = d->p2p.name;
    c.comm_hash = d->p2p.commHash;
    c.func_code = d->p2p.func;
    c.dtype_code = d->p2p.datatype;
    c.count = d->p2p.count;
    c.peer = d->p2p.peer;
  } else if (d->type == kProxyOp) {
    proxy_fields(c, *d);
  } else if (d->type == kProxyStep) {
    c.step = d->proxyStep.step;
  }
  *h = new_handle(d->type);
  c.handle = *h;
  push(c);
  return kSuccess;
}

template <int Abi, typename D>
Result start23(void* ctx, void** h, D* d) {
  Call c = base(Abi, ctx, d);
  if (d->type == kColl) {
    c.name = d->coll.name;
    c.comm_hash = d->coll.commHash;
    c.seq = d->coll.seqNumber;
    c.func = s(d->coll.func);
    c.count = d->coll.count;
    c.root = d->coll.root;
    c.dtype = s(d->coll.datatype);
    c.nchannels = d->coll.nMaxChannels;
    c.algo = s(d->coll.algo);
    c.proto = s(d->coll.proto);
  } else if (d->type == kP2p) {
    c.name = d->p2p.name;
    c.comm_hash = d->p2p.commHash;
    c.func = s(d->p2p.func);
    c.dtype = s(d->p2p.datatype);
    c.count = d->p2p.count;
    c.peer = d->p2p.peer;
  } else if (d->type == kProxyOp) {
    proxy_fields(c, *d);
  } else if (d->type == kProxyStep) {
    c.step = d->proxyStep.step;
  }
  if constexpr (Abi == 3) {
    if (d->type == kKernelCh) c.channel = d->kernelCh.channelId;
    if (d->type == kNetPlugin) net_fields(c, d->netPlugin.id, d->netPlugin.data);
  }
  *h = new_handle(d->type);
  c.handle = *h;
  push(c);
  return kSuccess;
}

template <int Abi, typename D>
Result start456(void* ctx, void** h, D* d) {
  Call c = base(Abi, ctx, d);
  switch (d->type) {
    case kColl:
      c.seq = d->coll.seqNumber;
      c.func = s(d->coll.func);
      c.count = d->coll.count;
      c.root = d->coll.root;
      c.dtype = s(d->coll.datatype);
      c.nchannels = d->coll.nChannels;
      c.nwarps = d->coll.nWarps;
      c.algo = s(d->coll.algo);
      c.proto = s(d->coll.proto);
      if constexpr (Abi >= 5) c.parent_group = d->coll.parentGroup;
      break;
    case kP2p:
      c.func = s(d->p2p.func);
      c.dtype = s(d->p2p.datatype);
      c.count = d->p2p.count;
      c.peer = d->p2p.peer;
      c.nchannels = d->p2p.nChannels;
      if constexpr (Abi >= 5) c.parent_group = d->p2p.parentGroup;
      break;
    case kProxyOp: proxy_fields(c, *d); break;
    case kProxyStep: c.step = d->proxyStep.step; break;
    case kKernelCh:
      c.channel = d->kernelCh.channelId;
      c.ptimer = d->kernelCh.pTimer;
      break;
    case kNetPlugin: net_fields(c, d->netPlugin.id, d->netPlugin.data); break;
    default: break;
  }
  if constexpr (Abi >= 5) {
    switch (d->type) {
      case kGroupApi:
        c.group_depth = d->groupApi.groupDepth;
        c.graph = d->groupApi.graphCaptured;
        break;
      case kCollApi:
        c.func = s(d->collApi.func);
        c.count = d->collApi.count;
        c.dtype = s(d->collApi.datatype);
        c.root = d->collApi.root;
        c.graph = d->collApi.graphCaptured;
        break;
      case kP2pApi:
        c.func = s(d->p2pApi.func);
        c.count = d->p2pApi.count;
        c.dtype = s(d->p2pApi.datatype);
        c.graph = d->p2pApi.graphCaptured;
        break;
      default: break;
    }
  }
  if constexpr (Abi >= 6) {
    switch (d->type) {
      case kCeColl:
        c.func = s(d->ceColl.func);
        c.count = d->ceColl.count;
        c.dtype = s(d->ceColl.datatype);
        c.seq = d->ceColl.seqNumber;
        break;
      case kCeSync: c.ce_nranks = static_cast<int>(d->ceCollSync.nRanks); break;
      case kCeBatch: c.ce_total = d->ceCollBatch.totalBytes; break;
      default: break;
    }
  }
  if constexpr (Abi >= 7) {
    switch (d->type) {
      case kCollApi: c.user_tag = d->collApi.userTag; break;
      case kP2pApi: c.user_tag = d->p2pApi.userTag; break;
      case kColl:
        c.user_tag = d->coll.userTag;
        c.sym = d->coll.isSymColl;
        c.kernel_variant = d->coll.kernelVariant != nullptr;
        break;
      case kP2p: c.user_tag = d->p2p.userTag; break;
      case kCeColl: c.user_tag = d->ceColl.userTag; break;
      case kKernelPhase:
        c.channel = d->kernelPhase.channelId;
        c.phase = d->kernelPhase.phaseId;
        c.name = d->kernelPhase.phaseName;
        c.ptimer = d->kernelPhase.pTimer;
        break;
      default: break;
    }
  }
  *h = new_handle(d->type);
  c.handle = *h;
  push(c);
  return kSuccess;
}

template <int Abi>
Result record1(void* h, EventState st, StateArgsV1* a) {
  Call c;
  c.kind = Kind::kRecord;
  c.abi = Abi;
  c.handle = h;
  c.state = st;
  c.args_null = a == nullptr;
  if (a != nullptr) {
    if (st <= kProxyOpRecvDone) {
      c.trans_size = a->proxyOp.transSize;
      c.steps = a->proxyOp.steps;
    } else if (st >= kProxyCtrlIdle) {
      c.appended = a->proxyCtrl.appendedProxyOps;
    } else {
      c.trans_size = a->proxyOp.transSize;
    }
  }
  push(c);
  return kSuccess;
}

template <int Abi>
Result record4(void* h, EventState st, StateArgsV4* a) {
  Call c;
  c.kind = Kind::kRecord;
  c.abi = Abi;
  c.handle = h;
  c.state = st;
  c.args_null = a == nullptr;
  if (a != nullptr) {
    std::memcpy(&c.raw_args, a, sizeof c.raw_args);
    c.trans_size = a->proxyStep.transSize;
    c.appended = a->proxyCtrl.appendedProxyOps;
    c.ptimer = a->kernelCh.pTimer;
  }
  push(c);
  return kSuccess;
}

ProfilerV1 t1 = {"rec", init1, start1, stop<1>, record1<1>, fin<1>};
ProfilerV2 t2 = {"rec", init2, start23<2, EventDescrV2>, stop<2>, record1<2>, fin<2>};
ProfilerV3 t3 = {"rec", init3, start23<3, EventDescrV3>, stop<3>, record1<3>, fin<3>};
ProfilerV4 t4 = {"rec", init4, start456<4, EventDescrV4>, stop<4>, record4<4>, fin<4>};
ProfilerV5 t5 = {"rec", init5, start456<5, EventDescrV5>, stop<5>, record4<5>, fin<5>};
ProfilerV6 t6 = {"rec", init6, start456<6, EventDescrV6>, stop<6>, record4<6>, fin<6>};
ProfilerV7 t7 = {"rec", init7, start456<7, EventDescrV7>, stop<7>, record4<7>, fin<7>};

}  // namespace

void reset() {
  std::lock_guard<std::mutex> g(g_mu);
  g_log.clear();
  g_order = 0;
  g_mask_ptr = nullptr;
  g_mask.store(0xffff);
  g_init_result.store(0);
  g_null_types.store(0);
}
std::vector<Call> calls() {
  std::lock_guard<std::mutex> g(g_mu);
  return g_log;
}
void set_mask(int m) { g_mask.store(m); }
void set_init_result(int r) { g_init_result.store(r); }
void set_null_types(uint64_t t) { g_null_types.store(t); }
ProfilerV1* v1() { return &t1; }
ProfilerV2* v2() { return &t2; }
ProfilerV3* v3() { return &t3; }
ProfilerV4* v4() { return &t4; }
ProfilerV5* v5() { return &t5; }
ProfilerV6* v6() { return &t6; }
ProfilerV7* v7() { return &t7; }

}  // namespace ni::rec

#ifdef REC_EXPORT
#define REC_API __attribute__((visibility("default")))
extern "C" {
#ifndef REC_ONLY_V3
REC_API ni::abi::ProfilerV1 ncclProfiler_v1 = ni::rec::t1;
REC_API ni::abi::ProfilerV2 ncclProfiler_v2 = ni::rec::t2;
REC_API ni::abi::ProfilerV4 ncclProfiler_v4 = ni::rec::t4;
REC_API ni::abi::ProfilerV5 ncclProfiler_v5 = ni::rec::t5;
REC_API ni::abi::ProfilerV6 ncclProfiler_v6 = ni::rec::t6;
REC_API ni::abi::ProfilerV7 ncclProfiler_v7 = ni::rec::t7;
#endif
REC_API ni::abi::ProfilerV3 ncclProfiler_v3 = ni::rec::t3;
}
#endif
