// The exported NCCL profiler tables, ncclProfiler_v1 .. ncclProfiler_v7.
//
// Each table is built from static adapters named after the ABI version that
// introduced their signature; later tables reuse an adapter when the signature
// and descriptor are unchanged. An adapter converts its version's descriptor
// field by field into the neutral calls of src/core/core.h and never casts one
// version's descriptor to another's. Every entry point is noexcept and returns
// ncclSuccess (profiler-abi.md §4: NCCL ignores the codes, and failing init is
// unreliable across versions, §6).
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "plugin/abi/all.h"
#include "src/core/core.h"
#include "src/core/names.h"

namespace {

using namespace ni::abi;
using ni::core::EvType;
namespace core = ni::core;

// ---------------------------------------------------------------- init/finalize

Result init_v1(void** context, int* mask, int abi) noexcept {
  if (context == nullptr) return kSuccess;
  core::InitArgs a;
  a.abi = abi;
  a.mask = mask;
  *context = core::comm_init(a);
  return kSuccess;
}
Result init_v1_abi1(void** c, int* m) noexcept { return init_v1(c, m, 1); }
Result init_v1_abi2(void** c, int* m) noexcept { return init_v1(c, m, 2); }
Result init_v1_abi3(void** c, int* m) noexcept { return init_v1(c, m, 3); }

Result init_v4(void** context, int* mask, const char* name, uint64_t hash, int nnodes, int nranks, int rank,
               DebugLogger logfn) noexcept {
  if (context == nullptr) return kSuccess;
  core::InitArgs a;
  a.abi = 4;
  a.comm_hash = hash;
  a.comm_name = name;
  a.nnodes = nnodes;
  a.nranks = nranks;
  a.rank = rank;
  a.logfn = logfn;
  a.mask = mask;
  *context = core::comm_init(a);
  return kSuccess;
}

Result init_v5(void** context, uint64_t comm_id, int* mask, const char* name, int nnodes, int nranks, int rank,
               DebugLogger logfn, int abi) noexcept {
  if (context == nullptr) return kSuccess;
  core::InitArgs a;
  a.abi = abi;
  a.comm_hash = comm_id;
  a.comm_name = name;
  a.nnodes = nnodes;
  a.nranks = nranks;
  a.rank = rank;
  a.logfn = logfn;
  a.mask = mask;
  *context = core::comm_init(a);
  return kSuccess;
}
Result init_v5_abi5(void** c, uint64_t id, int* m, const char* n, int nn, int nr, int r, DebugLogger l) noexcept {
  return init_v5(c, id, m, n, nn, nr, r, l, 5);
}
Result init_v5_abi6(void** c, uint64_t id, int* m, const char* n, int nn, int nr, int r, DebugLogger l) noexcept {
  return init_v5(c, id, m, n, nn, nr, r, l, 6);
}

// Whether the v7 descriptors of this process carry user tags. NVIDIA's v7
// appends userTag to the API, Coll, P2p and CeColl members; RCCL's port of v7
// has no tag fields, so its descriptors are shorter and reading a tag would
// run past them (profiler-abi.md §13.4). Decided at each v7 init from who
// called it: a library named like RCCL, or a process with AMD's HIP runtime
// loaded, means no tags. Relaxed store and loads (start_v7_rest and the
// others): NCCL's own synchronisation orders a comm's init before its events.
std::atomic<bool> g_v7_tags{false};

bool v7_has_tags(const void* caller) noexcept {
  Dl_info info{};
  if (caller != nullptr && dladdr(caller, &info) != 0 && info.dli_fname != nullptr) {
    const char* slash = std::strrchr(info.dli_fname, '/');
    if (std::strstr(slash != nullptr ? slash + 1 : info.dli_fname, "rccl") != nullptr) return false;
  }
  for (const char* hip : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.7"}) {
    if (void* h = dlopen(hip, RTLD_LAZY | RTLD_NOLOAD)) {
      dlclose(h);
      return false;
    }
  }
  return true;
}

// Not inlined: the return address is the caller's (NCCL's library).
__attribute__((noinline)) Result init_v5_abi7(void** c, uint64_t id, int* m, const char* n, int nn, int nr, int r,
                                              DebugLogger l) noexcept {
  g_v7_tags.store(v7_has_tags(__builtin_return_address(0)), std::memory_order_relaxed);  // see g_v7_tags
  return init_v5(c, id, m, n, nn, nr, r, l, 7);
}
// The tag field, read only when the descriptor has one (a pointer, not a
// reference: nothing lets the compiler load it before the check).
inline uint64_t v7_tag(const uint64_t* field) noexcept {
  return g_v7_tags.load(std::memory_order_relaxed) ? *field : 0;  // see g_v7_tags
}

Result finalize_v1(void* context) noexcept {
  core::comm_finalize(context);
  return kSuccess;
}

Result stop_v1(void* handle) noexcept { return static_cast<Result>(core::stop(handle)); }

// ------------------------------------------------------------- shared helpers

// Descriptor members common to v1..v7 with the same shape.
template <typename ProxyOpT>
core::ProxyOpStart proxy_op_of(const ProxyOpT& p) noexcept {
  core::ProxyOpStart s;
  s.pid = p.pid;
  s.peer = p.peer;
  s.n_steps = p.nSteps;
  s.chunk_size = p.chunkSize;
  s.channel = p.channelId;
  s.is_send = p.isSend != 0;
  return s;
}

// A NetPlugin event's payload (v3+), decoded by the network plugin's id: each
// id names one payload layout (plugin/abi/common.h), read only through its own
// declaration. The payload is NCCL scratch memory valid only during the call.
core::NetTransfer net_transfer_of(int64_t plugin_id, const void* data) noexcept {
  core::NetTransfer t;
  t.present = data != nullptr;
  if (data == nullptr) return t;
  if (plugin_id == kNetIbIdV1) {
    const auto* ib = static_cast<const NetIbDescrV1*>(data);
    if (ib->type == kNetIbQp && ib->qp.device >= 0) {
      t.device = static_cast<uint32_t>(ib->qp.device) & 0xFFFFu;
      t.bytes = ib->qp.length;
      t.qp = ib->qp.qpNum;
    }
  } else if (plugin_id == kNetSockIdV1) {
    const auto* so = static_cast<const NetSockDescrV1*>(data);
    if (so->type == kNetSocket) {
      t.device = core::NetTransfer::kSocket;
      t.bytes = so->sock.length;
    }
  }
  return t;
}

// Events every version shares: ProxyOp, ProxyStep, ProxyCtrl.
template <typename D>
void* start_proxy_common(void* ctx, const D* d, uint64_t type) noexcept {
  switch (type) {
    case kProxyOp: return core::start_proxy_op(ctx, d->parentObj, proxy_op_of(d->proxyOp));
    case kProxyStep: return core::start_proxy_step(ctx, d->parentObj, d->proxyStep.step);
    case kProxyCtrl: return core::start_marker(ctx, EvType::kProxyCtrl, false);
    default: return core::start_unknown(ctx);
  }
}

// -------------------------------------------------------------------- v1 (2.23)

Result start_v1(void* ctx, void** h, EventDescrV1* d) noexcept {
  if (h == nullptr) return kSuccess;
  *h = nullptr;
  if (d == nullptr) return kSuccess;
  switch (d->type) {
    case kGroup: *h = core::start_group(ctx); break;
    case kColl: {
      core::CollStart s;
      s.seq = d->coll.seqNumber;
      s.count = d->coll.count;
      s.comm_hash = d->coll.commHash;
      s.func = ni::func_from_code(d->coll.func);
      s.dtype = ni::dtype_from_code(d->coll.datatype);
      s.algo = ni::algo_from_code(d->coll.algo);
      s.proto = ni::proto_from_code(d->coll.proto);
      s.root = d->coll.root;
      s.n_channels = d->coll.nMaxChannels;
      s.n_warps = d->coll.nWarps;
      *h = core::start_coll(ctx, d->parentObj, d->rank, s);
      break;
    }
    case kP2p: {
      core::P2pStart s;
      s.count = d->p2p.count;
      s.comm_hash = d->p2p.commHash;
      s.func = ni::func_from_code(d->p2p.func);
      s.dtype = ni::dtype_from_code(d->p2p.datatype);
      s.peer = d->p2p.peer;
      *h = core::start_p2p(ctx, d->parentObj, d->rank, s);
      break;
    }
    default: *h = start_proxy_common(ctx, d, d->type); break;
  }
  return kSuccess;
}

// v1-v3 state args: ProxyOp states 0-7 carry a cumulative transSize; ProxyStep
// states come with NULL or zeroed args; ProxyCtrl carries appendedProxyOps.
Result record_v1(void* h, EventState state, StateArgsV1* args) noexcept {
  core::StateArgs a;
  if (args != nullptr && state >= kProxyOpSendPosted && state <= kProxyOpRecvDone) {
    a.trans_size = args->proxyOp.transSize;
    a.has_trans_size = true;
  }
  core::record_state(h, state, a);
  return kSuccess;
}

// ------------------------------------------------------------ v2 (2.24-2.25)

Result start_v2(void* ctx, void** h, EventDescrV2* d) noexcept {
  if (h == nullptr) return kSuccess;
  *h = nullptr;
  if (d == nullptr) return kSuccess;
  switch (d->type) {
    case kGroup: *h = core::start_group(ctx); break;
    case kColl: {
      core::CollStart s;
      s.seq = d->coll.seqNumber;
      s.count = d->coll.count;
      s.comm_hash = d->coll.commHash;
      s.func = ni::func_from_nccl(d->coll.func);
      s.dtype = ni::dtype_from_nccl(d->coll.datatype);
      s.algo = ni::algo_from_nccl(d->coll.algo);
      s.proto = ni::proto_from_nccl(d->coll.proto);
      s.root = d->coll.root;
      s.n_channels = d->coll.nMaxChannels;
      s.n_warps = d->coll.nWarps;
      *h = core::start_coll(ctx, d->parentObj, d->rank, s);
      break;
    }
    case kP2p: {
      core::P2pStart s;
      s.count = d->p2p.count;
      s.comm_hash = d->p2p.commHash;
      s.func = ni::func_from_nccl(d->p2p.func);
      s.dtype = ni::dtype_from_nccl(d->p2p.datatype);
      s.peer = d->p2p.peer;
      *h = core::start_p2p(ctx, d->parentObj, d->rank, s);
      break;
    }
    default: *h = start_proxy_common(ctx, d, d->type); break;
  }
  return kSuccess;
}

// ------------------------------------------------------------------ v3 (2.26)

Result start_v3(void* ctx, void** h, EventDescrV3* d) noexcept {
  if (h == nullptr) return kSuccess;
  *h = nullptr;
  if (d == nullptr) return kSuccess;
  switch (d->type) {
    case kGroup: *h = core::start_group(ctx); break;
    case kColl: {
      core::CollStart s;
      s.seq = d->coll.seqNumber;
      s.count = d->coll.count;
      s.comm_hash = d->coll.commHash;
      s.func = ni::func_from_nccl(d->coll.func);
      s.dtype = ni::dtype_from_nccl(d->coll.datatype);
      s.algo = ni::algo_from_nccl(d->coll.algo);
      s.proto = ni::proto_from_nccl(d->coll.proto);
      s.root = d->coll.root;
      s.n_channels = d->coll.nMaxChannels;
      s.n_warps = d->coll.nWarps;
      s.channels_exact = true;
      *h = core::start_coll(ctx, d->parentObj, d->rank, s);
      break;
    }
    case kP2p: {
      core::P2pStart s;
      s.count = d->p2p.count;
      s.comm_hash = d->p2p.commHash;
      s.func = ni::func_from_nccl(d->p2p.func);
      s.dtype = ni::dtype_from_nccl(d->p2p.datatype);
      s.peer = d->p2p.peer;
      *h = core::start_p2p(ctx, d->parentObj, d->rank, s);
      break;
    }
    case kKernelCh: *h = core::start_kernel_ch(ctx, d->parentObj, d->kernelCh.channelId, 0, false); break;
    case kNetPlugin:
      *h = core::start_net_plugin(ctx, d->parentObj, net_transfer_of(d->netPlugin.id, d->netPlugin.data));
      break;
    default: *h = start_proxy_common(ctx, d, d->type); break;
  }
  return kSuccess;
}

// ------------------------------------------------------------------ v4 (2.27)

// v4 state args (= v5 = v6). States 19, 23, 24 may carry garbage or NULL
// args (adapters pass uninitialised locals), so only the states that define
// an argument read it.
Result record_v4_rest(void* h, EventState state, StateArgsV4* args) noexcept;
Result record_v4(void* h, EventState state, StateArgsV4* args) noexcept {
  if (state == kKernelChStop && args != nullptr) [[likely]]  // the most frequent state
    return static_cast<Result>(core::record_kernel_ch_stop(h, args->kernelCh.pTimer));
  return record_v4_rest(h, state, args);
}

__attribute__((noinline)) Result record_v4_rest(void* h, EventState state, StateArgsV4* args) noexcept {
  if (state == kKernelPhaseStop && args != nullptr)  // v7 with phases: three per channel
    return static_cast<Result>(core::end_kernel_phase(h, args->kernelCh.pTimer));
  core::StateArgs a;
  if (args != nullptr) {
    switch (state) {
      case kProxyStepSendWait:
      case kProxyStepRecvFlushWait:
      case kProxyStepRecvGPUWait:
        a.trans_size = args->proxyStep.transSize;
        a.has_trans_size = true;
        break;
      case kKernelChStop:
      case kKernelPhaseStop:  // v7: the phase's end, in the same member
        a.ptimer = args->kernelCh.pTimer;
        a.has_ptimer = true;
        break;
      default: break;  // NetPluginUpdate (21) among them: the core keeps nothing from its payload
    }
  }
  core::record_state(h, state, a);
  return kSuccess;
}

template <typename D>
__attribute__((always_inline)) inline core::CollStart coll_v4(const D* d) noexcept {
  core::CollStart s;
  s.seq = d->coll.seqNumber;
  s.count = d->coll.count;
  s.func = ni::func_from_nccl(d->coll.func);
  s.dtype = ni::dtype_from_nccl(d->coll.datatype);
  s.algo = ni::algo_from_nccl(d->coll.algo);
  s.proto = ni::proto_from_nccl(d->coll.proto);
  s.root = d->coll.root;
  s.n_channels = d->coll.nChannels;
  s.n_warps = d->coll.nWarps;
  s.channels_exact = true;
  return s;
}

template <typename D>
core::P2pStart p2p_v4(const D* d) noexcept {
  core::P2pStart s;
  s.count = d->p2p.count;
  s.func = ni::func_from_nccl(d->p2p.func);
  s.dtype = ni::dtype_from_nccl(d->p2p.datatype);
  s.peer = d->p2p.peer;
  s.n_channels = d->p2p.nChannels;
  if constexpr (requires { d->p2p.parentGroup; }) s.group = d->p2p.parentGroup;
  s.channels_exact = true;
  return s;
}

// Events whose shape is the same from v4 on: Coll, P2p, KernelCh (with pTimer), NetPlugin.
template <typename D>
void* start_v4_common(void* ctx, const D* d, uint64_t type) noexcept {
  switch (type) {
    case kGroup: return core::start_group(ctx);
    case kColl: return core::start_coll(ctx, d->parentObj, d->rank, coll_v4(d));
    case kP2p: return core::start_p2p(ctx, d->parentObj, d->rank, p2p_v4(d));
    case kKernelCh: return core::start_kernel_ch(ctx, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer, true);
    case kNetPlugin:
      return core::start_net_plugin(ctx, d->parentObj, net_transfer_of(d->netPlugin.id, d->netPlugin.data));
    default: return start_proxy_common(ctx, d, type);
  }
}

// KernelCh is the most frequent event by far (one per channel of every op):
// the exported start functions handle it with nothing else in the frame and
// pass every other event to a separate (not inlined) function.
// A Coll start with the core's start path compiled into it (flatten: with
// link-time optimisation, across translation units), so that the descriptor's
// fields go straight into the op slot.
template <typename D>
__attribute__((noinline, flatten)) void* start_coll_flat(void* ctx, const D* d) noexcept {
  return core::start_coll(ctx, d->parentObj, d->rank, coll_v4(d));
}

// The next most frequent (one each per op), ahead of the version's switch.
template <typename D>
inline bool start_frequent(void* ctx, const D* d, void** out) noexcept {
  if (d->type == kColl) {
    *out = start_coll_flat(ctx, d);
    return true;
  }
  if (d->type == kGroup) {
    *out = core::start_group(ctx);
    return true;
  }
  return false;
}

template <typename D, void* (*Rest)(void*, const D*) noexcept>
inline Result start_fast(void* ctx, void** h, D* d) noexcept {
  if (h == nullptr) [[unlikely]] return kSuccess;
  if (d != nullptr && d->type == kKernelCh) [[likely]]
    return static_cast<Result>(core::start_kernel_ch_gpu(h, d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer));
  *h = nullptr;
  if (d != nullptr) *h = Rest(ctx, d);
  return kSuccess;
}

__attribute__((noinline)) void* start_v4_rest(void* ctx, const EventDescrV4* d) noexcept {
  if (void* h; start_frequent(ctx, d, &h)) return h;
  return start_v4_common(ctx, d, d->type);
}
Result start_v4(void* ctx, void** h, EventDescrV4* d) noexcept { return start_fast<EventDescrV4, start_v4_rest>(ctx, h, d); }

// ------------------------------------------------------------------ v5 (2.28)

// API events (v5+). CollApi/P2pApi carry graphCaptured, which the core keeps
// inside the handle value itself (no object, so a stale API parent after a
// graph replay can never be followed).
template <typename D>
void* start_v5_common(void* ctx, const D* d, uint64_t type) noexcept {
  switch (type) {
    case kGroupApi: return core::start_marker(ctx, EvType::kGroupApi, d->groupApi.graphCaptured);
    case kCollApi:
      // Counted from ABI v6 (NCCL 2.29+), where a call may get no Coll event
      // (Broadcast as AllGatherV: then the call is recorded from its CollApi,
      // tracker.cpp start_coll_api); before, every call has its Coll.
      if constexpr (std::is_same_v<D, EventDescrV5>)
        return core::start_marker(ctx, EvType::kCollApi, d->collApi.graphCaptured);
      else {
        core::CollApiStart a;
        a.func = d->collApi.func != nullptr ? ni::func_from_nccl(d->collApi.func) : ni::Func::kUnknown;
        a.graph_captured = d->collApi.graphCaptured != 0;
        if (a.func == ni::Func::kBroadcast) [[unlikely]] {  // the one call that may be an op of its own
          a.count = d->collApi.count;
          a.dtype = ni::dtype_from_nccl(d->collApi.datatype);
          a.root = d->collApi.root;
        }
        return core::start_coll_api(ctx, a);
      }
    case kP2pApi: return core::start_marker(ctx, EvType::kP2pApi, d->p2pApi.graphCaptured);
    case kKernelLaunch: return core::start_marker(ctx, EvType::kKernelLaunch, false);
    default: return start_v4_common(ctx, d, type);
  }
}

__attribute__((noinline)) void* start_v5_rest(void* ctx, const EventDescrV5* d) noexcept {
  if (void* h; start_frequent(ctx, d, &h)) return h;
  return start_v5_common(ctx, d, d->type);
}
Result start_v5(void* ctx, void** h, EventDescrV5* d) noexcept { return start_fast<EventDescrV5, start_v5_rest>(ctx, h, d); }

// --------------------------------------------------------------- v6 (2.29+)

// CE events: the same members from v6 on.
template <typename D>
void* start_v6_common(void* ctx, const D* d) noexcept {
  switch (d->type) {
    case kCeColl: {
      core::CeStart s;
      s.seq = d->ceColl.seqNumber;
      s.count = d->ceColl.count;
      s.func = ni::func_from_nccl(d->ceColl.func);
      s.dtype = ni::dtype_from_nccl(d->ceColl.datatype);
      s.root = d->ceColl.root;
      s.stream = d->ceColl.stream;
      return core::start_ce_coll(ctx, d->parentObj, d->rank, s);
    }
    case kCeSync: return core::start_ce_child(ctx, d->parentObj, EvType::kCeSync, 0);
    case kCeBatch: return core::start_ce_child(ctx, d->parentObj, EvType::kCeBatch, d->ceCollBatch.totalBytes);
    default: return start_v5_common(ctx, d, d->type);
  }
}

__attribute__((noinline)) void* start_v6_rest(void* ctx, const EventDescrV6* d) noexcept {
  if (void* h; start_frequent(ctx, d, &h)) return h;
  return start_v6_common(ctx, d);
}
Result start_v6(void* ctx, void** h, EventDescrV6* d) noexcept { return start_fast<EventDescrV6, start_v6_rest>(ctx, h, d); }

// --------------------------------------------------------------- v7 (2.31+)

// v7 keeps every v6 field where it was and appends (profiler-abi.md §13.1), so
// the v6 members are read through the same code, and the user tag (when this
// NCCL's descriptors have one, g_v7_tags) is added to the op, and so is a
// symmetric-kernel plan's variant (kernelVariant and isSymColl come before the
// tag: RCCL's shorter v7 has them at the same offsets). KernelPhase events (bit
// 15) are asked for only with NCCL_INSPECTOR_ENABLE_PHASES; those that come
// (asked for, or forced by a mask NCCL overrode) are kept per op
// (core::start_kernel_phase, and their state 31 through record_state()).
__attribute__((noinline, flatten)) void* start_coll_v7(void* ctx, const EventDescrV7* d) noexcept {
  core::CollStart s = coll_v4(d);
  s.user_tag = v7_tag(&d->coll.userTag);
  if (d->coll.isSymColl) [[unlikely]] {
    s.sym = true;
    s.kernel_variant = ni::variant_id(d->coll.kernelVariant);
  }
  return core::start_coll(ctx, d->parentObj, d->rank, s);
}
__attribute__((noinline)) void* start_v7_rest(void* ctx, const EventDescrV7* d) noexcept {
  switch (d->type) {
    case kColl: return start_coll_v7(ctx, d);
    case kGroup: return core::start_group(ctx);
    case kKernelPhase: return core::start_kernel_phase(d->parentObj, d->kernelPhase.phaseId, d->kernelPhase.pTimer);
    case kP2p: {
      core::P2pStart s = p2p_v4(d);
      s.user_tag = v7_tag(&d->p2p.userTag);
      return core::start_p2p(ctx, d->parentObj, d->rank, s);
    }
    case kCollApi: {
      core::CollApiStart a;
      a.func = d->collApi.func != nullptr ? ni::func_from_nccl(d->collApi.func) : ni::Func::kUnknown;
      a.graph_captured = d->collApi.graphCaptured != 0;
      if (a.func == ni::Func::kBroadcast) [[unlikely]] {  // the one call that may be an op of its own
        a.count = d->collApi.count;
        a.dtype = ni::dtype_from_nccl(d->collApi.datatype);
        a.root = d->collApi.root;
        a.user_tag = v7_tag(&d->collApi.userTag);
      }
      return core::start_coll_api(ctx, a);
    }
    case kCeColl: {
      core::CeStart s;
      s.seq = d->ceColl.seqNumber;
      s.count = d->ceColl.count;
      s.func = ni::func_from_nccl(d->ceColl.func);
      s.dtype = ni::dtype_from_nccl(d->ceColl.datatype);
      s.root = d->ceColl.root;
      s.stream = d->ceColl.stream;
      s.user_tag = v7_tag(&d->ceColl.userTag);
      return core::start_ce_coll(ctx, d->parentObj, d->rank, s);
    }
    default: return start_v6_common(ctx, d);
  }
}
Result start_v7(void* ctx, void** h, EventDescrV7* d) noexcept { return start_fast<EventDescrV7, start_v7_rest>(ctx, h, d); }

}  // namespace

// The exported tables. Data objects with default visibility; the version
// script keeps everything else local.
#define NI_EXPORT __attribute__((visibility("default")))
extern "C" {

NI_EXPORT ProfilerV1 ncclProfiler_v1 = {
    .name = "Inspector",
    .init = init_v1_abi1,
    .startEvent = start_v1,
    .stopEvent = stop_v1,
    .recordEventState = record_v1,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV2 ncclProfiler_v2 = {
    .name = "Inspector",
    .init = init_v1_abi2,
    .startEvent = start_v2,
    .stopEvent = stop_v1,
    .recordEventState = record_v1,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV3 ncclProfiler_v3 = {
    .name = "Inspector",
    .init = init_v1_abi3,
    .startEvent = start_v3,
    .stopEvent = stop_v1,
    .recordEventState = record_v1,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV4 ncclProfiler_v4 = {
    .name = "Inspector",
    .init = init_v4,
    .startEvent = start_v4,
    .stopEvent = stop_v1,
    .recordEventState = record_v4,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV5 ncclProfiler_v5 = {
    .name = "Inspector",
    .init = init_v5_abi5,
    .startEvent = start_v5,
    .stopEvent = stop_v1,
    .recordEventState = record_v4,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV6 ncclProfiler_v6 = {
    .name = "Inspector",
    .init = init_v5_abi6,
    .startEvent = start_v6,
    .stopEvent = stop_v1,
    .recordEventState = record_v4,
    .finalize = finalize_v1,
};
NI_EXPORT ProfilerV7 ncclProfiler_v7 = {
    .name = "Inspector",
    .init = init_v5_abi7,
    .startEvent = start_v7,
    .stopEvent = stop_v1,
    .recordEventState = record_v4,
    .finalize = finalize_v1,
};
}  // extern "C"

// The small marker API, for user code that dlopens this same library (see
// docs/configuration.md): iteration boundaries, phases, names of user tags,
// and "write now".
extern "C" {
NI_EXPORT int ncclInspectorMark(const char* label) { return ni::core::mark(label); }
NI_EXPORT int ncclInspectorFlush(void) { return ni::core::flush(); }
NI_EXPORT int ncclInspectorNameTag(uint64_t tag, const char* name) { return ni::core::name_tag(tag, name); }
}
