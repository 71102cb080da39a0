// Loader (dlopen/refcount/dlclose) and Binding (neutral event -> vN call with
// NCCL's adapter behaviour). See binding.h and profiler-abi.md §6.
#include "src/emu/binding.h"

#include <dlfcn.h>

#include <cstring>
#include <filesystem>

namespace ni::emu {

using namespace ni::abi;

// ---------------------------------------------------------------- Loader

namespace {
PluginTables tables_from_dl(void* dl) {
  PluginTables t;
  t.v1 = static_cast<const ProfilerV1*>(dlsym(dl, "ncclProfiler_v1"));
  t.v2 = static_cast<const ProfilerV2*>(dlsym(dl, "ncclProfiler_v2"));
  t.v3 = static_cast<const ProfilerV3*>(dlsym(dl, "ncclProfiler_v3"));
  t.v4 = static_cast<const ProfilerV4*>(dlsym(dl, "ncclProfiler_v4"));
  t.v5 = static_cast<const ProfilerV5*>(dlsym(dl, "ncclProfiler_v5"));
  t.v6 = static_cast<const ProfilerV6*>(dlsym(dl, "ncclProfiler_v6"));
  t.v7 = static_cast<const ProfilerV7*>(dlsym(dl, "ncclProfiler_v7"));
  t.mark = reinterpret_cast<int (*)(const char*)>(dlsym(dl, "ncclInspectorMark"));
  t.name_tag = reinterpret_cast<int (*)(uint64_t, const char*)>(dlsym(dl, "ncclInspectorNameTag"));
  return t;
}
}  // namespace

unsigned avail_mask_of(const PluginTables& t) {
  return (t.v1 ? 1u << 1 : 0) | (t.v2 ? 1u << 2 : 0) | (t.v3 ? 1u << 3 : 0) | (t.v4 ? 1u << 4 : 0) |
         (t.v5 ? 1u << 5 : 0) | (t.v6 ? 1u << 6 : 0) | (t.v7 ? 1u << 7 : 0);
}

bool probe_plugin(const std::string& path, unsigned* avail, std::string* err) {
  std::error_code ec;
  if (path.find('/') != std::string::npos && !std::filesystem::exists(path, ec)) {
    *err = "plugin file not found: " + path;
    return false;
  }
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* e = dlerror();
    *err = "cannot load plugin " + path + ": " + (e ? e : "unknown dlopen error");
    return false;
  }
  *avail = avail_mask_of(tables_from_dl(dl));
  dlclose(dl);
  if (*avail == 0) {
    *err = "plugin " + path + " exports no ncclProfiler_v1..v7 symbol; it is not an NCCL profiler plugin";
    return false;
  }
  return true;
}

Loader::~Loader() {
  std::lock_guard<std::mutex> g(mu_);
  if (dl_ != nullptr && !keep_) dlclose(dl_);
}

void Loader::keep_loaded() {
  std::lock_guard<std::mutex> g(mu_);
  keep_ = true;
}

bool Loader::acquire(PluginTables* out, std::string* err) {
  std::lock_guard<std::mutex> g(mu_);
  if (refs_ == 0) {
    if (path_.empty()) {
      loaded_ = fixed_;
    } else {
      dl_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (dl_ == nullptr) {
        const char* e = dlerror();
        *err = "cannot load plugin " + path_ + ": " + (e ? e : "unknown dlopen error");
        return false;
      }
      loaded_ = tables_from_dl(dl_);
    }
    if (loaded_.empty()) {
      *err = "plugin exports no ncclProfiler_v1..v7 symbol";
      if (dl_ != nullptr) dlclose(dl_);
      dl_ = nullptr;
      return false;
    }
    ++loads_;
  }
  ++refs_;
  *out = loaded_;
  return true;
}

void Loader::release() {
  std::lock_guard<std::mutex> g(mu_);
  if (refs_ == 0) return;
  if (--refs_ == 0) {
    if (dl_ != nullptr && !keep_) dlclose(dl_);
    dl_ = nullptr;
    loaded_ = PluginTables{};
    ++unloads_;
  }
}

int Loader::loads() const {
  std::lock_guard<std::mutex> g(mu_);
  return loads_;
}
int Loader::unloads() const {
  std::lock_guard<std::mutex> g(mu_);
  return unloads_;
}

// ---------------------------------------------------------------- Binding

Binding::Binding(NcclVersion v, const PluginTables& t) : v_(v), t_(t) {
  native_ = v.native_abi();
  bound_ = select_abi(v, avail_mask_of(t));
}

const char* Binding::plugin_name() const {
  const char* n = nullptr;
  switch (bound_) {
    case 1: n = t_.v1->name; break;
    case 2: n = t_.v2->name; break;
    case 3: n = t_.v3->name; break;
    case 4: n = t_.v4->name; break;
    case 5: n = t_.v5->name; break;
    case 6: n = t_.v6->name; break;
    case 7: n = t_.v7->name; break;
    default: break;
  }
  return n != nullptr ? n : "(unnamed)";
}

bool Binding::forwards(uint64_t type) const {
  if (bound_ == 0) return false;
  const uint64_t legacy = kGroup | kColl | kP2p | kProxyOp | kProxyStep | kProxyCtrl;
  if (bound_ <= 2) return (type & legacy) != 0;
  if (bound_ == 3) return (type & (legacy | kKernelCh | kNetPlugin)) != 0;
  if (bound_ == 4) return (type & (legacy | kKernelCh | kNetPlugin)) != 0;
  if (bound_ == 5) return (type & (kCeEventBits | kKernelPhase)) == 0;
  if (bound_ == 6) return type != kKernelPhase;  // 2.31+: the v6 adapter drops KernelPhase
  return true;
}

int Binding::init(void** ctx, int* mask, const CommInit& c) {
  cnt_.init.fetch_add(1, std::memory_order_relaxed);
  Result r = kSuccess;
  switch (bound_) {
    case 1: r = t_.v1->init(ctx, mask); break;
    case 2: r = t_.v2->init(ctx, mask); break;
    case 3: r = t_.v3->init(ctx, mask); break;
    case 4: r = t_.v4->init(ctx, mask, c.comm_name, c.comm_hash, c.nnodes, c.nranks, c.rank, c.logfn); break;
    case 5: r = t_.v5->init(ctx, c.comm_hash, mask, c.comm_name, c.nnodes, c.nranks, c.rank, c.logfn); break;
    case 6: r = t_.v6->init(ctx, c.comm_hash, mask, c.comm_name, c.nnodes, c.nranks, c.rank, c.logfn); break;
    case 7: r = t_.v7->init(ctx, c.comm_hash, mask, c.comm_name, c.nnodes, c.nranks, c.rank, c.logfn); break;
    default: return kInternalError;
  }
  // 2.24-2.25: the v1-as-v2 adapter reports success whatever the plugin returned.
  if (bound_ == 1 && (v_.minor == 24 || v_.minor == 25)) r = kSuccess;
  // 2.29+: the v5 adapter clears the CE bits after a successful init. The
  // mask is NCCL's process-wide int; other threads read it through
  // atomic_ref (relaxed), so write it the same way.
  if (r == kSuccess && bound_ == 5 && native_ >= 6) {
    std::atomic_ref<int> m(*mask);
    m.store(m.load(std::memory_order_relaxed) & ~(kCeEventBits | kKernelPhase), std::memory_order_relaxed);
  }
  // 2.31+: KernelPhase without KernelCh turns KernelCh on (NCCL logs it).
  if (r == kSuccess && bound_ == 7) {
    std::atomic_ref<int> m(*mask);
    const int v = m.load(std::memory_order_relaxed);
    if ((v & kKernelPhase) != 0 && (v & kKernelCh) == 0) m.store(v | kKernelCh, std::memory_order_relaxed);  // as above
  }
  // 2.31+: the v6 adapter clears KernelPhase (bit 15) after a successful init.
  if (r == kSuccess && bound_ == 6 && native_ >= 7) {
    std::atomic_ref<int> m(*mask);
    m.store(m.load(std::memory_order_relaxed) & ~static_cast<int>(kKernelPhase), std::memory_order_relaxed);
  }
  return r;
}

void Binding::finalize(void* ctx) {
  cnt_.finalize.fetch_add(1, std::memory_order_relaxed);
  switch (bound_) {
    case 1: t_.v1->finalize(ctx); break;
    case 2: t_.v2->finalize(ctx); break;
    case 3: t_.v3->finalize(ctx); break;
    case 4: t_.v4->finalize(ctx); break;
    case 5: t_.v5->finalize(ctx); break;
    case 6: t_.v6->finalize(ctx); break;
    case 7: t_.v7->finalize(ctx); break;
    default: break;
  }
}

void Binding::stop(uint64_t type, void* h) {
  if (!forwards(type)) return;
  cnt_.stop[type_index(type)].fetch_add(1, std::memory_order_relaxed);
  switch (bound_) {
    case 1: t_.v1->stopEvent(h); break;
    case 2: t_.v2->stopEvent(h); break;
    case 3: t_.v3->stopEvent(h); break;
    case 4: t_.v4->stopEvent(h); break;
    case 5: t_.v5->stopEvent(h); break;
    case 6: t_.v6->stopEvent(h); break;
    case 7: t_.v7->stopEvent(h); break;
    default: break;
  }
}

void Binding::record(uint64_t type, void* h, int state, const St& s) {
  if (!forwards(type)) return;
  const bool adapted = bound_ < native_;
  if (bound_ <= 3) {
    if (state >= kProxyOpInProgress) return;  // v1-v3 adapters forward 0..18 only
    StateArgsV1 a;
    std::memset(&a, 0, sizeof a);
    StateArgsV1* p = &a;
    if (state <= kProxyOpRecvDone) {
      a.proxyOp.transSize = s.trans_size;
      a.proxyOp.steps = s.steps;
    } else if (state <= kProxyStepRecvGPUWait) {
      if (s.null && !adapted) p = nullptr;  // native 2.23-2.26: NULL; adapters on 2.27+: zeroed
    } else {
      a.proxyCtrl.appendedProxyOps = s.appended;
    }
    cnt_.record[type_index(type)].fetch_add(1, std::memory_order_relaxed);
    const auto st = static_cast<EventState>(state);
    if (bound_ == 1) t_.v1->recordEventState(h, st, p);
    else if (bound_ == 2) t_.v2->recordEventState(h, st, p);
    else t_.v3->recordEventState(h, st, p);
    return;
  }
  // v4..v6 args.
  if (bound_ == 4 && adapted && state >= kGroupStartApiStop) return;
  if (bound_ == 5 && adapted && state >= kCeCollStart) return;
  if (bound_ == 6 && adapted && state >= kKernelPhaseStop) return;
  StateArgsV4 a;
  std::memset(&a, 0, sizeof a);
  StateArgsV4* p = &a;
  const bool garbage = adapted && ((bound_ == 4 && state == kProxyOpInProgress) ||
                                   (bound_ == 5 && (state == kProxyOpInProgress || state == kGroupStartApiStop ||
                                                    state == kGroupEndApiStart)));
  if (garbage) {
    std::memset(&a, kGarbage, sizeof a);
  } else if (s.null) {
    p = nullptr;
  } else if ((state >= kProxyStepSendGPUWait && state <= kProxyStepRecvGPUWait) || state == kProxyStepSendPeerWait) {
    a.proxyStep.transSize = s.trans_size;
  } else if (state >= kProxyCtrlIdle && state <= kProxyCtrlAppendEnd) {
    a.proxyCtrl.appendedProxyOps = s.appended;
  } else if (state == kNetPluginUpdate) {
    a.netPlugin.data = s.net_data;
  } else if (state == kKernelChStop || state == kKernelPhaseStop) {
    a.kernelCh.pTimer = s.ptimer;
  }
  cnt_.record[type_index(type)].fetch_add(1, std::memory_order_relaxed);
  const auto st = static_cast<EventState>(state);
  if (bound_ == 4) t_.v4->recordEventState(h, st, p);
  else if (bound_ == 5) t_.v5->recordEventState(h, st, p);
  else if (bound_ == 6) t_.v6->recordEventState(h, st, p);
  else t_.v7->recordEventState(h, st, p);
}

void* Binding::start(void* ctx, const Ev& e) {
  switch (bound_) {
    case 1: return start_v1(ctx, e);
    case 2: return start_v2(ctx, e);
    case 3: return start_v3(ctx, e);
    case 4: return start_v4(ctx, e);
    case 5: return start_v5(ctx, e);
    case 6: return start_v6(ctx, e);
    case 7: return start_v7(ctx, e);
    default: return nullptr;
  }
}

namespace {

// Coll/P2p parent as the bound version sees it: adapters for v1..v4 on
// 2.28+ hand over the legacy Group handle (coll/p2p.parentGroup).
void* legacy_parent(const Ev& e, int bound, int native) {
  if ((e.type == kColl || e.type == kP2p) && native >= 5 && bound <= 4) return e.parent_group;
  return e.parent;
}

// v1 numeric codes: native on 2.23; adapters convert names back with fallbacks
// (unknown -> Send, Float64, PAT, SIMPLE).
uint8_t v1_func(const Ev& e, bool adapted) {
  if (!adapted) return static_cast<uint8_t>(e.func);
  return static_cast<uint8_t>(e.func >= 0 && e.func <= kFuncRecv ? e.func : kFuncSend);
}
uint8_t v1_dtype(const Ev& e, bool adapted) {
  if (!adapted) return static_cast<uint8_t>(e.dtype);
  const int c = dtype_code_of(dtype_name_of(e.dtype));  // "Unknown" (ncclUint8) -> -1
  return static_cast<uint8_t>(c >= 0 ? c : kFloat64);
}

template <typename D>
void fill_proxy(D& d, const Ev& e) {
  switch (e.type) {
    case kProxyOp:
      d.proxyOp.pid = e.pid;
      d.proxyOp.channelId = e.channel;
      d.proxyOp.peer = e.peer;
      d.proxyOp.nSteps = e.nsteps;
      d.proxyOp.chunkSize = e.chunk;
      d.proxyOp.isSend = e.is_send;
      break;
    case kProxyStep: d.proxyStep.step = e.step; break;
    default: break;
  }
}

// v2/v3 string coll/p2p (the two differ only by trafficBytes).
template <typename D>
void fill_v23_strings(D& d, const Ev& e, int native) {
  if (e.type == kColl) {
    d.coll.name = nullptr;
    d.coll.commHash = native <= 3 ? e.comm_hash : 0;
    d.coll.seqNumber = e.seq;
    d.coll.func = func_name_of(e.func);
    d.coll.sendBuff = e.sendbuff;
    d.coll.recvBuff = e.recvbuff;
    d.coll.count = e.count;
    d.coll.root = e.root;
    d.coll.datatype = dtype_name_of(e.dtype);
    d.coll.nMaxChannels = e.nchannels;
    d.coll.nWarps = e.nwarps;
    d.coll.algo = algo_name_of(e.algo);
    d.coll.proto = proto_name_of(e.proto);
  } else if (e.type == kP2p) {
    d.p2p.name = nullptr;
    d.p2p.commHash = native <= 3 ? e.comm_hash : 0;
    d.p2p.func = func_name_of(e.func);
    d.p2p.buff = e.recvbuff;
    d.p2p.datatype = dtype_name_of(e.dtype);
    d.p2p.count = e.count;
    d.p2p.peer = e.peer;
  } else {
    fill_proxy(d, e);
  }
}

// v4/v5/v6 shared members (coll without parentGroup etc.).
template <typename D>
void fill_v4_common(D& d, const Ev& e, bool copy_p2p_nchannels) {
  switch (e.type) {
    case kColl:
      d.coll.seqNumber = e.seq;
      d.coll.func = func_name_of(e.func);
      d.coll.sendBuff = e.sendbuff;
      d.coll.recvBuff = e.recvbuff;
      d.coll.count = e.count;
      d.coll.root = e.root;
      d.coll.datatype = dtype_name_of(e.dtype);
      d.coll.nChannels = e.nchannels;
      d.coll.nWarps = e.nwarps;
      if (e.kernel_variant != nullptr) {
        // A symmetric kernel: NCCL names the algorithm by the variant after
        // its first '_' and gives no protocol (profiler-abi.md §13.1).
        const char* u = std::strchr(e.kernel_variant, '_');
        d.coll.algo = u != nullptr ? u + 1 : e.kernel_variant;
        d.coll.proto = "";
      } else {
        d.coll.algo = algo_name_of(e.algo);
        d.coll.proto = proto_name_of(e.proto);
      }
      break;
    case kP2p:
      d.p2p.func = func_name_of(e.func);
      d.p2p.buff = e.recvbuff;
      d.p2p.datatype = dtype_name_of(e.dtype);
      d.p2p.count = e.count;
      d.p2p.peer = e.peer;
      if (copy_p2p_nchannels) d.p2p.nChannels = e.nchannels;
      break;
    case kKernelCh:
      d.kernelCh.channelId = e.channel;
      d.kernelCh.pTimer = e.ptimer;
      break;
    case kNetPlugin:
      d.netPlugin.id = e.net_id;
      d.netPlugin.data = e.net_data;
      break;
    default: fill_proxy(d, e); break;
  }
}

template <typename D>
void fill_v5_api(D& d, const Ev& e) {
  switch (e.type) {
    case kGroupApi:
      d.groupApi.graphCaptured = e.graph_captured;
      d.groupApi.groupDepth = e.group_depth;
      break;
    case kCollApi:
      d.collApi.func = func_name_of(e.func);
      d.collApi.count = e.count;
      d.collApi.datatype = dtype_name_of(e.dtype);
      d.collApi.root = e.root;
      d.collApi.stream = e.stream;
      d.collApi.graphCaptured = e.graph_captured;
      break;
    case kP2pApi:
      d.p2pApi.func = func_name_of(e.func);
      d.p2pApi.count = e.count;
      d.p2pApi.datatype = dtype_name_of(e.dtype);
      d.p2pApi.stream = e.stream;
      d.p2pApi.graphCaptured = e.graph_captured;
      break;
    case kKernelLaunch: d.kernelLaunch.stream = e.stream; break;
    case kColl: d.coll.parentGroup = e.parent_group; break;
    case kP2p: d.p2p.parentGroup = e.parent_group; break;
    default: break;
  }
}

}  // namespace

void* Binding::start_v1(void* ctx, const Ev& e) {
  void* h = nullptr;  // the v1 adapter sets *eHandle = NULL first
  if (!forwards(e.type)) return nullptr;
  const bool adapted = native_ > 1;
  EventDescrV1 d;
  std::memset(&d, 0, sizeof d);
  d.type = static_cast<uint8_t>(e.type);
  d.parentObj = legacy_parent(e, 1, native_);
  d.rank = e.rank;
  if (e.type == kColl) {
    d.coll.name = nullptr;
    d.coll.commHash = native_ <= 3 ? e.comm_hash : 0;
    d.coll.seqNumber = e.seq;
    d.coll.func = v1_func(e, adapted);
    d.coll.sendBuff = e.sendbuff;
    d.coll.recvBuff = e.recvbuff;
    d.coll.count = e.count;
    d.coll.root = e.root;
    d.coll.datatype = v1_dtype(e, adapted);
    d.coll.op = adapted ? 0 : e.redop;
    d.coll.trafficBytes = native_ <= 2 ? e.traffic_bytes : 0;
    d.coll.nMaxChannels = e.nchannels;
    d.coll.nWarps = e.nwarps;
    d.coll.algo = static_cast<uint8_t>(e.algo);
    d.coll.proto = static_cast<uint8_t>(e.proto);
    d.coll.isCollnet = !adapted && (e.algo == kAlgoCollnetDirect || e.algo == kAlgoCollnetChain);
    d.coll.isNvls = !adapted && (e.algo == kAlgoNvls || e.algo == kAlgoNvlsTree);
  } else if (e.type == kP2p) {
    d.p2p.name = nullptr;
    d.p2p.commHash = native_ <= 3 ? e.comm_hash : 0;
    d.p2p.func = v1_func(e, adapted);
    d.p2p.buff = e.recvbuff;
    d.p2p.datatype = v1_dtype(e, adapted);
    d.p2p.count = e.count;
    d.p2p.peer = e.peer;
  } else {
    fill_proxy(d, e);
  }
  count_start(e.type);
  t_.v1->startEvent(ctx, &h, &d);
  return h;
}

void* Binding::start_v2(void* ctx, const Ev& e) {
  void* h = nullptr;
  if (!forwards(e.type)) return nullptr;
  EventDescrV2 d;
  std::memset(&d, 0, sizeof d);
  d.type = static_cast<uint8_t>(e.type);
  d.parentObj = legacy_parent(e, 2, native_);
  d.rank = e.rank;
  fill_v23_strings(d, e, native_);
  if (e.type == kColl) d.coll.trafficBytes = native_ <= 2 ? e.traffic_bytes : 0;
  count_start(e.type);
  t_.v2->startEvent(ctx, &h, &d);
  return h;
}

void* Binding::start_v3(void* ctx, const Ev& e) {
  void* h = nullptr;
  if (!forwards(e.type)) return nullptr;
  EventDescrV3 d;
  std::memset(&d, 0, sizeof d);
  d.type = static_cast<uint8_t>(e.type);
  d.parentObj = legacy_parent(e, 3, native_);
  d.rank = e.rank;
  if (e.type == kKernelCh) {
    d.kernelCh.channelId = e.channel;  // the v3 member has no pTimer
  } else if (e.type == kNetPlugin) {
    d.netPlugin.id = e.net_id;
    d.netPlugin.data = e.net_data;
  } else {
    fill_v23_strings(d, e, native_);
  }
  count_start(e.type);
  t_.v3->startEvent(ctx, &h, &d);
  return h;
}

void* Binding::start_v4(void* ctx, const Ev& e) {
  void* h = nullptr;
  // The v4 adapter on 2.28+ returns success for API/CE events without
  // touching *eHandle: NCCL keeps what its slot held (nullptr here).
  if (!forwards(e.type)) return h;
  const bool adapted = native_ > 4;
  EventDescrV4 d;
  std::memset(&d, adapted ? kGarbage : 0, sizeof d);  // the adapter's descriptor is uninitialised
  d.type = static_cast<uint8_t>(e.type);
  d.parentObj = legacy_parent(e, 4, native_);
  d.rank = e.rank;
  fill_v4_common(d, e, /*copy_p2p_nchannels=*/!adapted);
  count_start(e.type);
  t_.v4->startEvent(ctx, &h, &d);
  return h;
}

void* Binding::start_v5(void* ctx, const Ev& e) {
  void* h = nullptr;
  if (!forwards(e.type)) return nullptr;  // v5-on-2.29+: CE -> *eHandle = NULL, not forwarded
  const bool adapted = native_ > 5;
  EventDescrV5 d;
  std::memset(&d, adapted ? kGarbage : 0, sizeof d);
  d.type = e.type;
  d.parentObj = e.parent;
  d.rank = e.rank;
  fill_v4_common(d, e, true);
  fill_v5_api(d, e);
  count_start(e.type);
  t_.v5->startEvent(ctx, &h, &d);
  return h;
}

namespace {
// v6/v7 descriptors: the v6 members (and, for v7, the appended ones).
template <typename D>
void fill_v6(D& d, const Ev& e) {
  d.type = e.type;
  d.parentObj = e.parent;
  d.rank = e.rank;
  switch (e.type) {
    case kCeColl:
      d.ceColl.seqNumber = e.seq;
      d.ceColl.func = func_name_of(e.func);
      d.ceColl.sendBuff = e.sendbuff;
      d.ceColl.recvBuff = e.recvbuff;
      d.ceColl.count = e.count;
      d.ceColl.root = e.root;
      d.ceColl.datatype = dtype_name_of(e.dtype);
      d.ceColl.syncStrategy = e.sync_strategy;
      d.ceColl.intraBatchSync = false;
      d.ceColl.batchSize = 0;
      d.ceColl.numBatches = 0;
      d.ceColl.ceSeqNum = e.ce_seq;
      d.ceColl.stream = e.stream;
      break;
    case kCeSync:
      d.ceCollSync.isComplete = e.ce_complete;
      d.ceCollSync.nRanks = static_cast<uint32_t>(e.ce_nranks);
      break;
    case kCeBatch:
      d.ceCollBatch.numOps = e.ce_numops;
      d.ceCollBatch.totalBytes = e.ce_total_bytes;
      d.ceCollBatch.useIntraSync = false;
      break;
    default:
      fill_v4_common(d, e, true);
      fill_v5_api(d, e);
      break;
  }
}
}  // namespace

void* Binding::start_v6(void* ctx, const Ev& e) {
  void* h = nullptr;
  // 2.31+: the v6 adapter drops KernelPhase (a NULL handle) and copies the v6
  // fields into a zero-initialised v6 descriptor (§13.2): the same bytes.
  if (!forwards(e.type)) return nullptr;
  EventDescrV6 d;
  std::memset(&d, 0, sizeof d);
  fill_v6(d, e);
  count_start(e.type);
  t_.v6->startEvent(ctx, &h, &d);
  return h;
}

// 2.31+: the native descriptor, with the appended v7 fields (§13.1).
void* Binding::start_v7(void* ctx, const Ev& e) {
  void* h = nullptr;
  EventDescrV7 d;
  std::memset(&d, 0, sizeof d);
  if (e.type == kKernelPhase) {
    d.type = e.type;
    d.parentObj = e.parent;
    d.rank = e.rank;
    static constexpr const char* kPhase[] = {"initial_sync", "compute", "final_sync"};
    d.kernelPhase.channelId = e.channel;
    d.kernelPhase.phaseId = e.phase_id;
    d.kernelPhase.phaseName = e.phase_id < 3 ? kPhase[e.phase_id] : "unknown";
    d.kernelPhase.pTimer = e.ptimer;
  } else {
    fill_v6(d, e);
    switch (e.type) {
      case kCollApi: d.collApi.userTag = e.user_tag; break;
      case kP2pApi: d.p2pApi.userTag = e.user_tag; break;
      case kColl:
        d.coll.kernelVariant = e.kernel_variant;
        d.coll.isSymColl = e.kernel_variant != nullptr;
        d.coll.userTag = e.user_tag;
        break;
      case kP2p: d.p2p.userTag = e.user_tag; break;
      case kCeColl: d.ceColl.userTag = e.user_tag; break;
      default: break;
    }
  }
  count_start(e.type);
  t_.v7->startEvent(ctx, &h, &d);
  return h;
}

}  // namespace ni::emu
