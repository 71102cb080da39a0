// The capture core's event path: what every NCCL callback does.
//
// Completion (profiler-abi.md §8.1, §11.9-12): a Coll/P2p stop only means
// "enqueued". An op is complete when its count-down `remaining` reaches zero:
//  - exact mode (NCCL told us how many channels will run, v3+ colls, v4+ p2p):
//    remaining = 1 (the op's own stop) + 1 (the kernel side). All of an op's
//    KernelCh callbacks come from the comm's one progress thread (§7), so the
//    channel masks are that thread's alone: plain loads and stores. The
//    kernel side is released (one atomic decrement per op) by the channel
//    end after which every started channel has ended and at least nChannels
//    did; a channel that starts after that re-takes a reference. A channel
//    ends at its KernelChStop state (v4+; the stop that follows is a no-op)
//    or at its stop (v3);
//  - gate mode (channel count unknown, or network events without KernelCh):
//    remaining = 1 (stop) + 1 (gate); each child's first start adds one and
//    its end subtracts one; the very first child start removes the gate;
//  - ProxyOps add one at start and subtract one at stop in both modes, so an
//    op is not written before its network steps are accounted;
//  - without KernelCh and network events the op completes at its stop, with
//    the enqueue time (said so: timing "enqueue_cpu").
// Whoever moves `remaining` to zero completes the op (complete_from_handle):
// the claim, the record and what happens to it until a sink gets it are in
// completion.cpp, as is the reclaimer, which completes ops that never get
// there.
#include <unistd.h>

#include <bit>
#include <cstring>

#include "src/core/clock.h"
#include "src/core/names.h"
#include "src/core/ring.h"
#include "src/core/tracker.h"

namespace ni::core {

Context* null_context() noexcept {
  bump(this_thread()->counters.fault_null_context);
  return nullptr;
}

namespace {

inline ThreadCounters& counters() noexcept { return this_thread()->counters; }

inline void* filtered_handle() noexcept {
  Handle h;
  h.tag = Tag::kFiltered;
  return encode(h);
}

// Validates an op handle without counting; returns the slot or nullptr. The
// slot index is bounds-checked against the slots in use, so a garbage value
// can at worst name a slot of ours, whose generation and owner it will not
// match. (The hot paths count with a tail call to stale_handle(), so that
// their common path needs no stack frame.)
inline OpSlot* live_op(uint64_t v) noexcept {
  const uint32_t idx = slot_of(v);
  if (!SlotTable<OpSlot>::contains(idx)) [[unlikely]] return nullptr;
  OpSlot* s = &SlotTable<OpSlot>::at(idx);
  if (s == nullptr) __builtin_unreachable();  // an element of the mapped array
  // Acquire pairs with the release bump of gen in free_op()/give_chunk(): if
  // the generation still matches, the slot has not been recycled.
  return s->gen.load(std::memory_order_acquire) == gen_of(v) ? s : nullptr;
}

// The same, counting why it fails, and the owning context when asked for.
inline OpSlot* op_of(Runtime* rt, uint64_t v, Context** out_ctx = nullptr) noexcept {
  (void)rt;
  OpSlot* s = live_op(v);
  // Relaxed: set when the chunk joined the pool, before any handle into it existed.
  Context* c = s != nullptr && out_ctx != nullptr ? s->ctx.load(std::memory_order_relaxed) : nullptr;
  if (s == nullptr || (out_ctx != nullptr && c == nullptr)) [[unlikely]] {
    bump(counters().fault_stale_handle);
    return nullptr;
  }
  if (out_ctx != nullptr) *out_ctx = c;
  return s;
}
__attribute__((noinline, cold)) int stale_handle() noexcept {
  bump(counters().fault_stale_handle);
  return 0;
}
inline OpSlot* op_of(Runtime* rt, const Handle& h, Context** out_ctx = nullptr) noexcept {
  return op_of(rt, hv(encode(h)), out_ctx);
}

// Adds one to remaining unless the op already reached zero (completed).
bool hold(OpSlot& s) noexcept {
  int32_t r = s.remaining.load(std::memory_order_relaxed);
  while (r > 0) {
    // acq_rel: orders this child's earlier writes with the completer's read.
    if (s.remaining.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
      return true;
  }
  return false;
}

// Subtracts one; the caller that reaches zero completes the op. Returns 0, so
// that callers can end with it (a tail call when it completes).
inline int release(uint64_t op_v, OpSlot& s) noexcept {
  // acq_rel: release publishes this thread's writes to the op; acquire (for
  // the thread reaching zero) makes every other child's writes visible.
  int32_t prev = s.remaining.fetch_sub(1, std::memory_order_acq_rel);
  if (prev == 1) return complete_from_handle(op_v, s);
  return 0;
}
inline int release(const Handle& oh, OpSlot& s) noexcept { return release(hv(encode(oh)), s); }

// Initialises a freshly allocated slot and writes the op's header. The
// handle is returned to NCCL only after open_op(), so the header is published
// by NCCL's own synchronisation (and, for the reclaimer and the progress
// snapshot, by open_op()'s release stores). The fields the progress snapshot
// reads while the slot may change hands are written through show().
__attribute__((always_inline)) inline void reset_slot(Context& c, OpSlot& s, OpKind kind, int rank,
                                                      int32_t remaining, Func func, DType dtype, uint64_t count,
                                                      uint64_t bytes) noexcept {
  OpStart& r = s.start;
  // Relaxed: learned once from descriptors (learn_identity); no data hangs off it.
  r.comm_hash = c.comm_hash.load(std::memory_order_relaxed);
  show(r.seq, uint64_t{0});
  r.count = count;
  show(r.bytes, bytes);
  r.comm_id = c.id;
  // Relaxed: a hint learned from descriptors; no data depends on it.
  int32_t crank = c.rank.load(std::memory_order_relaxed);
  r.rank = crank >= 0 ? crank : rank;
  show(r.peer, int32_t{-1});
  show(r.kind, static_cast<uint8_t>(kind));
  show(r.func, static_cast<uint8_t>(func));
  show(r.dtype, static_cast<uint8_t>(dtype));
  r.algo = static_cast<uint8_t>(Algo::kUnknown);
  r.proto = static_cast<uint8_t>(Proto::kUnknown);
  show(r.n_channels, uint8_t{0});
  r.n_warps = 0;
  r.abi_version = static_cast<uint8_t>(c.abi);
  r.kernel_variant = 0;
  r.sym_tasks = 0;
  const uint64_t t = clk::read_ticks();
  // Relaxed: everything below is published by open_op()'s release store of `claim`.
  s.start_ticks.store(t, std::memory_order_relaxed);
  r.enqueue_ns = t;  // converted by the consumer (finish_record())
  r.flags = kFlagEnqueueTicks;
  s.coll_stopped.store(0, std::memory_order_relaxed);
  s.stop_ticks.store(0, std::memory_order_relaxed);
  // The KernelCh line (masks, mode) was cleared by the previous completer.
  if (c.net) {
    s.net_send_bytes.store(0, std::memory_order_relaxed);
    s.net_recv_bytes.store(0, std::memory_order_relaxed);
    s.net_gpu_wait.store(0, std::memory_order_relaxed);
    s.net_wait.store(0, std::memory_order_relaxed);
    s.net_flush.store(0, std::memory_order_relaxed);
    s.net_first.store(UINT64_MAX, std::memory_order_relaxed);
    s.net_last.store(0, std::memory_order_relaxed);
    s.net_steps.store(0, std::memory_order_relaxed);
    s.net_peers_hash.store(0, std::memory_order_relaxed);
    s.net_first_peer.store(-1, std::memory_order_relaxed);
    for (auto& h : s.hca) {
      h.dev.store(UINT32_MAX, std::memory_order_relaxed);
      h.wrs.store(0, std::memory_order_relaxed);
      h.bytes.store(0, std::memory_order_relaxed);
      h.qp_bits.store(0, std::memory_order_relaxed);
      h.wire_open.store(0, std::memory_order_relaxed);
      h.wire_ticks.store(0, std::memory_order_relaxed);
    }
  }
  s.net_ops.store(0, std::memory_order_relaxed);
  s.ce_bytes.store(0, std::memory_order_relaxed);
  s.remaining.store(remaining, std::memory_order_relaxed);
}

// Common front half of Coll/P2p/Ce starts: filter, sample, allocate.
// Returns the slot index or UINT32_MAX (and sets *h to what NCCL gets).
__attribute__((always_inline)) inline uint32_t admit(Runtime* rt, Context* c, uint64_t bytes, bool size_known,
                                                     void** h) noexcept {
  const Config& cfg = rt->cfg;
  if (size_known && static_cast<int64_t>(bytes) < cfg.min_size_bytes) {
    bump(counters().filtered_min_size);
    *h = filtered_handle();
    return UINT32_MAX;
  }
  if (cfg.sample_every > 1) {
    // Relaxed: only the count matters; several app threads may start ops.
    uint64_t n = c->sample_counter.fetch_add(1, std::memory_order_relaxed);
    if (n % static_cast<uint64_t>(cfg.sample_every) != 0) {
      bump(counters().sampled_out);
      *h = filtered_handle();
      return UINT32_MAX;
    }
  }
  uint32_t slot = c->ops.alloc();
  if (slot == UINT32_MAX) {
    bump(counters().dropped_pool_exhausted);
    *h = filtered_handle();
    return UINT32_MAX;
  }
  return slot;
}

// Ends an op's start: the slot is in flight from here, and NCCL gets its
// handle. Everything the start wrote (header, counters) comes before.
inline void* open_op(OpSlot& s, uint32_t slot) noexcept {
  Handle h;
  h.tag = Tag::kOp;
  h.slot = slot;
  // Relaxed: this thread owns the slot now (popped with acquire).
  h.gen = s.gen.load(std::memory_order_relaxed);
  // Release pairs with the acquire of a successful claim in complete_body()
  // and with the progress snapshot's acquire load: the header written before
  // is visible to whoever completes this generation or shows it in flight.
  s.claim.store(static_cast<uint64_t>(h.gen & kGenMask) << 1, std::memory_order_release);
  // Release pairs with the acquire loads of in_use by the reclaimer, the
  // progress snapshot and the stats.
  s.in_use.store(1, std::memory_order_release);
  return encode(h);
}

int32_t initial_remaining(const Context& c) noexcept {
  if (c.kernel_ch) return 2;  // the stop + the kernel side (exact mode) or the gate
  if (c.net) return 2;
  return 1;
}

bool parent_graph_captured(const void* parent) noexcept {
  Handle p = decode(parent);
  return p.tag == Tag::kMarker && (p.extra & 32u) != 0;
}

// The first call that puts NCCL's KernelCh counters out of step on the comm
// (Context::desync_ticks): its time and launch group. Relaxed load/store: the
// issuing thread's own fields, see there.
__attribute__((noinline, cold)) void note_desync(Context& c, const void* group) noexcept {
  if (c.desync_ticks.load(std::memory_order_relaxed) != UINT64_MAX) return;
  const Handle g = decode(group);
  if (g.tag == Tag::kMarker && g.extra == static_cast<uint32_t>(EvType::kGroup))
    c.desync_group.store(g.gen, std::memory_order_relaxed);  // as above
  c.desync_ticks.store(clk::read_ticks(), std::memory_order_relaxed);  // as above
}
}  // namespace
void learn_identity(Context& c, uint64_t hash, int rank) noexcept;
namespace {

// Finds the op a network child belongs to, through the ProxyOp slot.
OpSlot* op_of_net(Runtime* rt, NetSlot& n, Context** oc, Handle* oh) noexcept {
  *oh = decode(reinterpret_cast<void*>(n.op_handle.load(std::memory_order_relaxed)));
  if (oh->tag != Tag::kOp) return nullptr;
  return op_of(rt, *oh, oc);
}

NetSlot* net_of(Runtime* rt, const Handle& h, Context** out) noexcept {
  (void)rt;
  NetSlot* n = SlotTable<NetSlot>::find(h.slot);
  // Acquire pairs with the release gen bump when the ProxyOp slot is freed
  // (or its chunk given back).
  Context* c = nullptr;
  if (n == nullptr || n->gen.load(std::memory_order_acquire) != h.gen ||
      // Relaxed: set when the chunk joined the pool, before any handle into it existed.
      (c = n->ctx.load(std::memory_order_relaxed)) == nullptr) {
    bump(counters().fault_stale_handle);
    return nullptr;
  }
  *out = c;
  return n;
}

void atomic_min(std::atomic<uint64_t>& a, uint64_t v) noexcept {
  // Relaxed: a statistic; no other data depends on it.
  uint64_t cur = a.load(std::memory_order_relaxed);
  // Relaxed: a statistic; no other data depends on it.
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void atomic_max(std::atomic<uint64_t>& a, uint64_t v) noexcept {
  // Relaxed: a statistic; no other data depends on it.
  uint64_t cur = a.load(std::memory_order_relaxed);
  // Relaxed: a statistic; no other data depends on it.
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// Time in a ProxyStep state goes to one of three buckets.
void account_step_state(OpSlot& s, int state, uint64_t dt) noexcept {
  switch (state) {
    case ni::abi::kProxyStepSendGPUWait:
    case ni::abi::kProxyStepRecvGPUWait:
      s.net_gpu_wait.fetch_add(dt, std::memory_order_relaxed);  // statistic, read after completion's acquire
      break;
    case ni::abi::kProxyStepSendWait:
    case ni::abi::kProxyStepSendPeerWait:
    case ni::abi::kProxyStepRecvWait:
      s.net_wait.fetch_add(dt, std::memory_order_relaxed);  // statistic, as above
      break;
    case ni::abi::kProxyStepRecvFlushWait:
      s.net_flush.fetch_add(dt, std::memory_order_relaxed);  // statistic, as above
      break;
    default: break;
  }
}

}  // namespace

// The in-flight state (Context::issued and the rest, OpSlotFields::issue) is
// always kept by the plugin. Only scripts/bench builds the capture core a
// second time without it (tests/bench/CMakeLists.txt), to show its hot-path cost.
#ifndef NI_INFLIGHT_STATE
#define NI_INFLIGHT_STATE 1
#endif
namespace {
constexpr bool kInflightState = NI_INFLIGHT_STATE != 0;
}  // namespace

// ======================================================= op starts (app side)

namespace {
// The part every op start shares: admission (size filter, sampling, pool),
// slot reset and the common header fields. Returns nullptr when the op is not
// recorded, with *h set to what NCCL gets back.
__attribute__((always_inline)) inline OpSlot* begin_op(Runtime* rt, Context* c, OpKind kind, int rank, void* parent,
                                                       Func func, DType dtype,
                 uint64_t count, int32_t remaining, uint32_t* slot_out, void** h) noexcept {
  const uint32_t esize = dtype_size(dtype);
  const uint64_t bytes = static_cast<uint64_t>(esize) * count;
  const uint32_t slot = admit(rt, c, bytes, esize != 0, h);
  if (slot == UINT32_MAX) return nullptr;
  OpSlot& s = c->ops.at(slot);
  reset_slot(*c, s, kind, rank, remaining, func, dtype, count, bytes);
  if (parent_graph_captured(parent)) s.start.flags |= kFlagGraphCaptured;
  *slot_out = slot;
  return &s;
}
}  // namespace

// NCCL 2.31.2 runs a group's symmetric tasks of one kernel as one plan: its
// Colls start back to back on the launching thread; the head says the plan's
// channel count and alone gets KernelCh, which time the whole plan; the others
// say nChannels 0 (profiler-abi.md §13; docs/log-format.md `sym_plan_tasks`).
// The launching thread remembers its last head, and each later task of the
// same kernel and function, with the next seq, counts itself in the head's
// sym_tasks, so that the head's record says its kernel time is not its own
// alone. Only symmetric starts touch this state: none on the common path.
struct SymHead {
  uint64_t pv = 0;  // the head's handle value; 0 none
  uint8_t variant = 0, func = 0;
};
thread_local SymHead t_sym_head;

__attribute__((noinline)) void sym_plan_task(void* handle, const CollStart& d) noexcept {
  if (d.n_channels != 0) {
    t_sym_head = {hv(handle), d.kernel_variant, static_cast<uint8_t>(d.func)};
    return;
  }
  if (t_sym_head.pv == 0 || t_sym_head.variant != d.kernel_variant || t_sym_head.func != static_cast<uint8_t>(d.func))
    return;
  OpSlot* head = live_op(t_sym_head.pv);
  // A later task of the head's plan has the next seq of its function (seq
  // counts every call of it): a gap means the plan ended (another call of
  // the function came between). Plain reads: the head's start line, this
  // thread's writes.
  if (head == nullptr || d.seq != head->start.seq + head->start.sym_tasks + 1u) {
    t_sym_head.pv = 0;
    return;
  }
  // Plain: the head's start line, written by this same thread; its Coll stop
  // (release, later on this thread) publishes it to the completer.
  if (head->start.sym_tasks != 255) ++head->start.sym_tasks;
}

void* start_coll(void* ctx, void* parent, int rank, const CollStart& d) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Context* c = context_from_arg(rt, ctx);
  if (c == nullptr) return nullptr;
  if (d.comm_hash != 0) learn_identity(*c, d.comm_hash, rank);
  // The comm's issue order (see Context::issued), every collective counted.
  // Relaxed load/store: one issuing thread per comm; the progress snapshot
  // reads them relaxed.
  uint64_t issue = 0;
  if constexpr (kInflightState) {
    static_assert(static_cast<int>(Func::kUnknown) < Context::kFuncSlots);
    issue = c->issued.load(std::memory_order_relaxed);
    c->issued.store(issue + 1, std::memory_order_relaxed);
    c->func_seq[static_cast<uint8_t>(d.func) & (Context::kFuncSlots - 1)].store(d.seq + 1,
                                                                                std::memory_order_relaxed);  // as above
    c->last_func.store(static_cast<uint8_t>(d.func), std::memory_order_relaxed);                            // as above
  }
  void* h = nullptr;
  uint32_t slot = 0;
  OpSlot* s = begin_op(rt, c, OpKind::kColl, rank, parent, d.func, d.dtype, d.count,
                       initial_remaining(*c), &slot, &h);
  if (s == nullptr) return h;
  // Release (on x86 a plain store), as show(): pairs with the progress
  // snapshot's acquire load; the completer reads it after the claim.
  if constexpr (kInflightState) s->issue.store(static_cast<uint32_t>(issue), std::memory_order_release);
  // Relaxed: published with the handle. Rare (v3 P2P, or no channel count):
  // the KernelCh line is otherwise left to the progress thread.
  if (!d.channels_exact || d.n_channels == 0) s->ch_mode.store(kChGate, std::memory_order_relaxed);
  // Relaxed: published with the handle (OpSlotFields::user_tag).
  if (d.user_tag != 0) [[unlikely]] s->user_tag.store(d.user_tag, std::memory_order_relaxed);
  OpStart& r = s->start;
  show(r.seq, d.seq);
  r.algo = static_cast<uint8_t>(d.algo);
  r.proto = static_cast<uint8_t>(d.proto);
  show(r.n_channels, d.n_channels);
  r.n_warps = d.n_warps;
  if (d.func == Func::kBroadcast || d.func == Func::kReduce) show(r.peer, d.root);
  if (d.func == Func::kAllGather || d.func == Func::kBroadcast) r.flags |= kFlagCountIsBytes;
  if (d.sym) [[unlikely]] {
    r.flags |= kFlagSymKernel;
    r.kernel_variant = d.kernel_variant;
  }
  // A Broadcast with its Coll on ABI v6+ although NCCL_ALLGATHERV_ENABLE was not 0 when the plugin
  // started (set later, or a release that behaves otherwise): its CollApi calls are markers from now
  // on (start_coll_api). Relaxed: a one-way flag.
  if (d.func == Func::kBroadcast && c->abi >= 6 && !rt->bcast_coll_seen.load(std::memory_order_relaxed)) [[unlikely]]
    rt->bcast_coll_seen.store(true, std::memory_order_relaxed);
  void* handle = open_op(*s, slot);
  if (d.sym) [[unlikely]] sym_plan_task(handle, d);
  return handle;
}

void* start_p2p(void* ctx, void* parent, int rank, const P2pStart& d) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Context* c = context_from_arg(rt, ctx);
  if (c == nullptr) return nullptr;
  // Relaxed load/store: as Context::issued in start_coll().
  if constexpr (kInflightState)
    c->p2p_started.store(c->p2p_started.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // A Send or Recv to itself is a copy inside the kernel: NCCL builds no
  // proxy op for it (enqueue.cc: nProxyOps = selfSend ? 0 : 2, 2.23 to
  // 2.30), so neither KernelCh nor ProxyOp will come and it completes at its
  // stop, enqueue-timed. Seen on real NCCL 2.28.9: waiting for the kernel side
  // left every such op in flight until the reclaimer or finalize.
  const bool self = d.peer >= 0 && d.peer == rank;
  // Its work item advances the device's KernelCh counter and not NCCL's host
  // one (Context::desync_ticks), whether or not it is recorded (the mask asks
  // for P2p whenever it asks for KernelCh, compute_mask()).
  if (self && c->kernel_ch) [[unlikely]] note_desync(*c, d.group != nullptr ? d.group : parent);
  if (!rt->cfg.enable_p2p) return filtered_handle();
  if (d.comm_hash != 0) learn_identity(*c, d.comm_hash, rank);
  void* h = nullptr;
  uint32_t slot = 0;
  const int32_t remaining = self ? 1 : initial_remaining(*c);
  OpSlot* s = begin_op(rt, c, OpKind::kP2p, rank, parent, d.func, d.dtype, d.count, remaining, &slot, &h);
  if (s == nullptr) return h;
  // Relaxed: published with the handle. Rare (v3 P2P, or no channel count):
  // the KernelCh line is otherwise left to the progress thread.
  if (!d.channels_exact || d.n_channels == 0) s->ch_mode.store(kChGate, std::memory_order_relaxed);
  // Relaxed: published with the handle (OpSlotFields::user_tag).
  if (d.user_tag != 0) [[unlikely]] s->user_tag.store(d.user_tag, std::memory_order_relaxed);
  OpStart& r = s->start;
  // Own sequence: the k-th send to a peer matches the peer's k-th recv from us.
  if (c->p2p_seq_n != 0 && d.peer >= 0) {
    uint32_t idx = static_cast<uint32_t>(d.peer) % c->p2p_seq_n + (d.func == Func::kRecv ? c->p2p_seq_n : 0);
    // Relaxed: a counter; ops to one peer are issued in program order by NCCL.
    show(r.seq, uint64_t{c->p2p_seq[idx].fetch_add(1, std::memory_order_relaxed)});
  }
  show(r.n_channels, d.n_channels);
  show(r.peer, d.peer);
  r.flags |= kFlagSeqOwn;
  // The Group it was launched in (start_group): P2P ops of one ncclGroup (an
  // AlltoAll's Send/Recv parts) share it. Relaxed: published with the handle.
  const Handle g = decode(d.group != nullptr ? d.group : parent);
  if (g.tag == Tag::kMarker && g.extra == static_cast<uint32_t>(EvType::kGroup))
    s->issue.store(g.gen, std::memory_order_relaxed);
  else
    s->issue.store(0, std::memory_order_relaxed);
  return open_op(*s, slot);
}

void* start_ce_coll(void* ctx, void* parent, int rank, const CeStart& d) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Context* c = context_from_arg(rt, ctx);
  if (c == nullptr) return nullptr;
  if (!rt->cfg.enable_ce) return filtered_handle();
  void* h = nullptr;
  uint32_t slot = 0;
  OpSlot* s = begin_op(rt, c, OpKind::kCe, rank, parent, d.func, d.dtype, d.count, 1, &slot, &h);
  if (s == nullptr) return h;
  s->ch_mode.store(kChGate, std::memory_order_relaxed);  // no channel count (relaxed: published with the handle)
  if (d.user_tag != 0) s->user_tag.store(d.user_tag, std::memory_order_relaxed);  // as above

  OpStart& r = s->start;
  show(r.seq, d.seq);
  if (d.func == Func::kBroadcast || d.func == Func::kReduce || d.func == Func::kGather ||
      d.func == Func::kScatter)
    show(r.peer, d.root);
  // CUDA events around the copies (gpu_timer.h); relaxed: published with the
  // handle (open_op) and read by this thread at stop and by the completer.
  if (rt->gpu_timers != nullptr && d.stream != nullptr) {
    const int pair = rt->gpu_timers->take(d.stream);
    if (pair >= 0) {
      s->gpu_stream.store(d.stream, std::memory_order_relaxed);
      s->gpu_pair.store(pair, std::memory_order_relaxed);
    }
  }
  return open_op(*s, slot);
}

void* start_ce_child(void* ctx, void* parent, EvType type, uint64_t bytes) noexcept {
  (void)ctx;
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Handle p = decode(parent);
  if (p.tag == Tag::kFiltered) return filtered_handle();
  if (p.tag != Tag::kOp) {
    bump(counters().fault_null_handle);
    return nullptr;
  }
  OpSlot* s = op_of(rt, p);
  if (s == nullptr) return nullptr;
  if (type == EvType::kCeBatch && bytes != 0) s->ce_bytes.fetch_add(bytes, std::memory_order_relaxed);  // read after completion's acquire
  Handle h = p;
  h.tag = Tag::kCeChild;
  return encode(h);
}

// ================================================= KernelCh (progress thread)

namespace {
// Clock alignment, sampled on each op's first channel start: the CPU saw the
// start no earlier than the GPU made it, so (observed - ptimer) bounds the
// offset from above; keep the least. Modular arithmetic: a nonsense pTimer
// gives a nonsense sample, never UB.
__attribute__((noinline)) void sample_clock(Context& c, uint64_t ptimer) noexcept {
  // Once NCCL's stamps are out of step they may be an earlier work's: no
  // samples from them (relaxed: Context::desync_ticks says what orders it).
  if (c.desync_ticks.load(std::memory_order_relaxed) != UINT64_MAX) [[unlikely]] return;
  const int64_t d = static_cast<int64_t>(clk::now_ns() - ptimer);
  // Relaxed: the estimate is a statistic read by the dump thread; the CAS
  // pairs with other progress threads' CAS on the same minimum.
  int64_t cur = c.clk_min.load(std::memory_order_relaxed);
  while (d < cur && !c.clk_min.compare_exchange_weak(cur, d, std::memory_order_relaxed)) {
  }
  // Relaxed load/store pairs of statistics: racing updaters may lose a sample; harmless.
  const int64_t typ = c.clk_typical.load(std::memory_order_relaxed);
  const uint64_t n = c.clk_samples.load(std::memory_order_relaxed);
  const int64_t step = static_cast<int64_t>(static_cast<uint64_t>(d) - static_cast<uint64_t>(typ)) / 16;
  c.clk_typical.store(n == 0 ? d : static_cast<int64_t>(static_cast<uint64_t>(typ) + static_cast<uint64_t>(step)),
                      std::memory_order_relaxed);
  c.clk_samples.store(n + 1, std::memory_order_relaxed);
}

// A KernelCh start whose parent is not a live op handle, or whose channel id
// is out of range: counted, never followed.
__attribute__((noinline, cold)) void* reject_kernel_ch(uint64_t pv) noexcept {
  if (tag_of(pv) == Tag::kFiltered) return filtered_handle();
  if (tag_of(pv) == Tag::kOp) {
    bump(counters().fault_bad_channel);
  } else {
    bump(counters().fault_null_handle);
  }
  return nullptr;
}

// Clock samples are taken at an op's first channel: always until the comm has
// 16 samples, then for about one op in four, chosen by two bits of the GPU
// timer (about a microsecond apart: effectively random) mixed with the slot's
// use count. Never by position in a periodic pattern: a job's ops repeat with
// a period, and sampling always the same op of a period (say the one whose
// start the proxy always sees late) would bias the bound.
inline bool clock_sample_due(const OpSlot& s, uint64_t op_v, uint64_t ptimer) noexcept {
  if ((((ptimer >> 10) ^ gen_of(op_v)) & 3u) == 0) return true;
  // Relaxed: set when the chunk joined the pool; the count is a statistic
  // kept by this same progress thread (sample_clock()).
  const Context* c = s.ctx.load(std::memory_order_relaxed);
  return c != nullptr && c->clk_samples.load(std::memory_order_relaxed) < 16;
}

// A channel's start, once admitted: its stamps, the earliest start, its bit.
// Relaxed: the progress thread's own fields (see OpSlotFields), published to
// the completer by its release of the kernel side (or, in gate mode, of this
// channel).
inline void record_channel_start(OpSlot& s, uint32_t channel, uint64_t stamp, uint64_t old) noexcept {
  s.ch_stop[channel].store(0, std::memory_order_relaxed);
  s.ch_start[channel].store(stamp, std::memory_order_relaxed);
  if (stamp < s.ch_lo.load(std::memory_order_relaxed)) s.ch_lo.store(stamp, std::memory_order_relaxed);
  s.started_mask.store(old | (1ull << channel), std::memory_order_relaxed);
}

// The less common cases of a KernelCh start: a channel started twice, gate
// mode, a channel that starts after the kernel side was released. Stores the
// stamps and the bit.
__attribute__((noinline)) void* kernel_ch_started(OpSlot& s, uint64_t pv, uint32_t channel, uint64_t old,
                                                   uint64_t stamp, bool has_ptimer) noexcept {
  // Relaxed: set when the chunk joined the pool, before any handle into it existed.
  Context* cp = s.ctx.load(std::memory_order_relaxed);
  if (cp == nullptr) [[unlikely]] {  // a slot of a chunk given back: no live op
    bump(counters().fault_stale_handle);
    return nullptr;
  }
  Context& c = *cp;
  const uint64_t bit = 1ull << channel;
  if (has_ptimer && old == 0 && clock_sample_due(s, pv, stamp)) sample_clock(c, stamp);
  if (old & bit) [[unlikely]] {
    bump(counters().fault_double_stop);  // same channel started twice: the later start wins
  } else if (const uint8_t mode = s.ch_mode.load(std::memory_order_relaxed); mode == kChGate) {  // see OpSlotFields
    if (!hold(s)) {
      bump(counters().fault_late_child);
      return nullptr;
    }
    if (old == 0) release(pv, s);  // first child removes the gate
  } else if (mode == kChDone) {
    // The kernel side was released (nChannels channels came and stopped):
    // take it again, unless the op completed meanwhile.
    if (!hold(s)) {
      bump(counters().fault_late_child);
      return nullptr;
    }
    s.ch_mode.store(kChOpen, std::memory_order_relaxed);  // as above
  }
  record_channel_start(s, channel, stamp, old);
  return reinterpret_cast<void*>(retag(pv, has_ptimer ? Tag::kKernelCh : Tag::kKernelChCpu, channel));
}

inline void* kernel_ch_start(uint64_t pv, uint8_t channel, uint64_t stamp, bool has_ptimer) noexcept {
  if (tag_of(pv) != Tag::kOp || channel >= ni::abi::kMaxChannels) [[unlikely]] return reject_kernel_ch(pv);
  // No runtime check (as in stop()): the generation check is enough.
  OpSlot* s = op_of(nullptr, pv);  // its context is only needed off the fast path
  if (s == nullptr) [[unlikely]] return nullptr;
  const uint64_t bit = 1ull << channel;
  // Relaxed: the progress thread's own fields (see OpSlotFields); published
  // to the completer by its release of the kernel side in stop().
  const uint64_t old = s->started_mask.load(std::memory_order_relaxed);
  // The common case: a channel of an op whose channel count NCCL told us.
  if ((old & bit) != 0 || s->ch_mode.load(std::memory_order_relaxed) != kChOpen ||
      (old == 0 && has_ptimer && clock_sample_due(*s, pv, stamp))) [[unlikely]]
    return kernel_ch_started(*s, pv, channel, old, stamp, has_ptimer);
  record_channel_start(*s, channel, stamp, old);
  return reinterpret_cast<void*>(retag(pv, has_ptimer ? Tag::kKernelCh : Tag::kKernelChCpu, channel));
}
}  // namespace

void* start_kernel_ch(void* ctx, void* parent, uint8_t channel, uint64_t ptimer, bool has_ptimer) noexcept {
  (void)ctx;
  return kernel_ch_start(hv(parent), channel, has_ptimer ? ptimer : clk::read_ticks(), has_ptimer);
}

namespace {
__attribute__((noinline)) int kernel_ch_started_into(void** h, uint64_t pv, uint32_t channel,
                                                     uint64_t ptimer) noexcept {
  OpSlot& s = SlotTable<OpSlot>::at(slot_of(pv));  // validated by the caller
  // Relaxed: the progress thread's own field (see OpSlotFields).
  *h = kernel_ch_started(s, pv, channel, s.started_mask.load(std::memory_order_relaxed), ptimer, true);
  return 0;
}
__attribute__((noinline, cold)) int kernel_ch_rejected_into(void** h, uint64_t pv, bool stale) noexcept {
  if (stale) {
    bump(counters().fault_stale_handle);
    *h = nullptr;
  } else {
    *h = reject_kernel_ch(pv);
  }
  return 0;
}
}  // namespace

// kernel_ch_start() for ABI v4+, shaped so that its common path needs no
// stack frame (every other case is a tail call).
int start_kernel_ch_gpu(void** h, void* parent, uint32_t channel, uint64_t ptimer) noexcept {
  const uint64_t pv = hv(parent);
  if (tag_of(pv) != Tag::kOp || channel >= ni::abi::kMaxChannels) [[unlikely]]
    return kernel_ch_rejected_into(h, pv, false);
  OpSlot* s = live_op(pv);
  if (s == nullptr) [[unlikely]] return kernel_ch_rejected_into(h, pv, true);
  const uint64_t bit = 1ull << channel;
  // Relaxed: as in kernel_ch_start().
  const uint64_t old = s->started_mask.load(std::memory_order_relaxed);
  if ((old & bit) != 0 || s->ch_mode.load(std::memory_order_relaxed) != kChOpen ||
      (old == 0 && clock_sample_due(*s, pv, ptimer))) [[unlikely]]
    return kernel_ch_started_into(h, pv, channel, ptimer);
  record_channel_start(*s, channel, ptimer, old);
  // The op's handle (tag kOp, extra 0) with tag kKernelCh and the channel.
  static_assert(static_cast<int>(Tag::kKernelCh) == static_cast<int>(Tag::kOp) + 1);
  *h = reinterpret_cast<void*>((pv | (static_cast<uint64_t>(channel) << kExtraShift)) + 1);
  return 0;
}

// ====================================================== kernel phases (v7)

// A KernelPhase start (NCCL 2.31+, asked for only with
// NCCL_INSPECTOR_ENABLE_PHASES): its parent is a KernelCh handle; the phase's
// start stamp is kept (low 32 bits) until its end (state 31) arrives.
// Progress-thread fields, as the KernelCh masks: relaxed loads and stores.
void* start_kernel_phase(void* parent, uint32_t phase, uint64_t ptimer) noexcept {
  const uint64_t pv = hv(parent);
  if (tag_of(pv) != Tag::kKernelCh || phase >= static_cast<uint32_t>(kPhases)) [[unlikely]] {
    if (tag_of(pv) == Tag::kFiltered) return filtered_handle();
    bump(parent == nullptr ? counters().fault_null_handle : counters().fault_unknown_event);
    return nullptr;
  }
  OpSlot* s = live_op(pv);
  if (s == nullptr) {
    stale_handle();
    return nullptr;
  }
  const uint32_t ch = extra_of(pv);
  // Relaxed: the progress thread's own fields; published to the completer by
  // the release of the channel at its KernelChStop, which follows its phases.
  s->ph_any.store(1, std::memory_order_relaxed);
  if (ch >= static_cast<uint32_t>(kPhaseChannels))
    s->ph_truncated.store(1, std::memory_order_relaxed);  // as above
  else
    s->ph_ns[phase][ch].store(static_cast<uint32_t>(ptimer), std::memory_order_relaxed);  // as above
  return reinterpret_cast<void*>(retag(pv, Tag::kPhase, ch) | (static_cast<uint64_t>(phase) << kPhaseShift));
}

// Its end (state 31, the stamp in kernelCh.pTimer): the phase's time. An end
// before its start (NCCL's stamps out of step) or 2 s or more after it leaves
// the phase out.
int end_kernel_phase(void* handle, uint64_t ptimer) noexcept {
  const uint64_t v = hv(handle);
  if (tag_of(v) != Tag::kPhase) [[unlikely]] {
    StateArgs a;
    a.ptimer = ptimer;
    a.has_ptimer = true;
    record_state(handle, ni::abi::kKernelPhaseStop, a);  // a NULL, filtered or foreign handle
    return 0;
  }
  OpSlot* s = live_op(v);
  if (s == nullptr) return stale_handle();
  const uint32_t ch = extra_of(v), p = static_cast<uint32_t>(v >> kPhaseShift) & 3u;
  if (ch >= static_cast<uint32_t>(kPhaseChannels) || p >= static_cast<uint32_t>(kPhases)) return 0;
  // Relaxed: the progress thread's own fields (start_kernel_phase()).
  const uint32_t d = static_cast<uint32_t>(ptimer) - s->ph_ns[p][ch].load(std::memory_order_relaxed);
  if (static_cast<int32_t>(d) < 0) return 0;
  s->ph_ns[p][ch].store(d, std::memory_order_relaxed);  // as above
  s->ph_done[p].store(s->ph_done[p].load(std::memory_order_relaxed) | (1u << ch), std::memory_order_relaxed);  // as above
  return 0;
}

// ============================================================ network events

void* start_proxy_op(void* ctx, void* parent, const ProxyOpStart& d) noexcept {
  (void)ctx;  // may be another process's pointer under PXN: never used
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  if (d.pid != rt->pid) {
    bump(counters().fault_foreign_pid);
    return nullptr;
  }
  Handle p = decode(parent);
  if (p.tag == Tag::kFiltered) return filtered_handle();
  if (p.tag != Tag::kOp) {
    bump(counters().fault_null_handle);
    return nullptr;
  }
  Context* c = nullptr;
  OpSlot* s = op_of(rt, p, &c);
  if (s == nullptr) return nullptr;
  if (!c->net) return filtered_handle();
  if (!hold(*s)) {
    bump(counters().fault_late_child);
    return nullptr;
  }
  uint32_t ns = c->net_slots.alloc();
  if (ns == UINT32_MAX) {
    bump(counters().dropped_pool_exhausted);
    release(p, *s);
    return filtered_handle();
  }
  NetSlot& n = c->net_slots.at(ns);
  const uint64_t t = clk::read_ticks();
  // Relaxed: the slot is ours until its handle is returned; NCCL hands it to this same progress thread.
  n.op_handle.store(reinterpret_cast<uint64_t>(parent), std::memory_order_relaxed);
  n.is_send.store(d.is_send, std::memory_order_relaxed);  // relaxed: as op_handle above
  n.peer.store(d.peer, std::memory_order_relaxed);        // relaxed: as op_handle above
  n.trans.store(0, std::memory_order_relaxed);
  n.stopped.store(0, std::memory_order_relaxed);
  n.start_ticks.store(t, std::memory_order_relaxed);
  n.steps_posted.store(0, std::memory_order_relaxed);
  n.steps_done.store(0, std::memory_order_relaxed);
  for (auto& st : n.steps) {
    st.state.store(-1, std::memory_order_relaxed);
    st.ticks.store(0, std::memory_order_relaxed);
    st.stopped.store(1, std::memory_order_relaxed);
  }
  // Statistics of the op, all read after the completer's acquire on remaining.
  if (s->net_ops.fetch_add(1, std::memory_order_relaxed) == 0 && !c->kernel_ch) {
    release(p, *s);  // network-only gate mode: the first ProxyOp removes the gate
  }
  atomic_min(s->net_first, t);
  if (d.peer >= 0) {
    s->net_peers_hash.fetch_or(1u << (static_cast<uint32_t>(d.peer) % 32), std::memory_order_relaxed);  // statistic
    int32_t none = -1;
    s->net_first_peer.compare_exchange_strong(none, d.peer, std::memory_order_relaxed);  // statistic
  }
  Handle h;
  h.tag = Tag::kProxyOp;
  h.slot = ns;
  h.gen = n.gen.load(std::memory_order_relaxed);  // relaxed: we own the slot
  return encode(h);
}

void* start_proxy_step(void* ctx, void* parent, int step) noexcept {
  (void)ctx;  // reach the context through the parent, never through the argument (PXN)
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Handle p = decode(parent);
  if (p.tag == Tag::kFiltered) return filtered_handle();
  if (p.tag != Tag::kProxyOp) {
    bump(counters().fault_null_handle);
    return nullptr;
  }
  Context* c = nullptr;
  NetSlot* n = net_of(rt, p, &c);
  if (n == nullptr) return nullptr;
  const uint32_t k = static_cast<uint32_t>(step) % ni::abi::kNcclSteps;
  auto& st = n->steps[k];
  // Relaxed: one progress thread owns a ProxyOp's step states.
  st.state.store(-1, std::memory_order_relaxed);
  st.ticks.store(clk::read_ticks(), std::memory_order_relaxed);
  st.stopped.store(0, std::memory_order_relaxed);
  // Relaxed: a step is restarted only after its earlier QP events completed
  // (NCCL's test() waits for them, the socket helper's included).
  st.qp_started.store(0, std::memory_order_relaxed);
  st.qp_stopped.store(0, std::memory_order_relaxed);
  // Relaxed load/store: this progress thread is the only writer; the
  // progress snapshot reads it relaxed.
  n->steps_posted.store(n->steps_posted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  Context* oc = nullptr;
  Handle oh;
  if (OpSlot* s = op_of_net(rt, *n, &oc, &oh)) s->net_steps.fetch_add(1, std::memory_order_relaxed);  // statistic
  Handle h = p;
  h.tag = Tag::kProxyStep;
  h.extra = k;
  return encode(h);
}

void* start_net_plugin(void* ctx, void* parent, const NetTransfer& t) noexcept {
  (void)ctx;
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  Handle p = decode(parent);
  Handle out;
  out.tag = Tag::kNetPlugin;
  if (p.tag == Tag::kFiltered) return filtered_handle();
  if (p.tag != Tag::kProxyStep || !t.present) return encode(out);
  Context* c = nullptr;
  NetSlot* n = net_of(rt, p, &c);
  if (n == nullptr) return encode(out);
  Context* oc = nullptr;
  Handle oh;
  OpSlot* s = op_of_net(rt, *n, &oc, &oh);
  if (s == nullptr) return encode(out);
  const uint32_t dev = t.device;
  if (dev == NetTransfer::kNoDevice) return encode(out);
  for (uint32_t i = 0; i < kRecordHcas; ++i) {
    HcaSlot& hs = s->hca[i];
    // Relaxed: the entry is claimed by the CAS below; its counters are read after completion's acquire.
    uint32_t cur = hs.dev.load(std::memory_order_relaxed);
    if (cur == UINT32_MAX) {
      // Claim a free entry; relaxed: contents are read after completion's acquire.
      if (!hs.dev.compare_exchange_strong(cur, dev, std::memory_order_relaxed) && cur != dev) continue;
    } else if (cur != dev) {
      continue;
    }
    hs.bytes.fetch_add(t.bytes, std::memory_order_relaxed);  // statistic, as above
    hs.wrs.fetch_add(1, std::memory_order_relaxed);          // statistic, as above
    // Relaxed: as above.
    if (t.qp >= 0) hs.qp_bits.fetch_or(1ull << (static_cast<uint32_t>(t.qp) % 64), std::memory_order_relaxed);
    // A posted receive waits for its sender: not wire time. Sockets: a
    // socket task's time is the helper thread's, not the wire's.
    // Relaxed: set at the ProxyOp's start on this same progress thread.
    if (dev == NetTransfer::kSocket || !n->is_send.load(std::memory_order_relaxed)) return encode(out);
    // Send work request on the wire from now until its first stop (the CQ
    // completion). The handle carries the step and the entry for that stop.
    const uint32_t k = p.extra % ni::abi::kNcclSteps;
    // Relaxed: counted against the stops below (same step, same event
    // stream); a statistic, read after completion's acquire.
    n->steps[k].qp_started.fetch_add(1, std::memory_order_relaxed);
    const int64_t now = static_cast<int64_t>(clk::read_ticks());
    // Relaxed RMWs, paired with the decrement in the NetPlugin stop: the open
    // count decides which call opens a busy period; wire_ticks only takes
    // commutative adds (-start here, +end there), read after completion's acquire.
    if (hs.wire_open.fetch_add(1, std::memory_order_relaxed) == 0) hs.wire_ticks.fetch_sub(now, std::memory_order_relaxed);
    out.slot = p.slot;
    out.gen = p.gen;
    out.extra = k | (i << 3) | kNetWireTracked;
    return encode(out);
  }
  return encode(out);  // more HCAs than entries: not attributed
}

void* start_marker(void* ctx, EvType type, bool graph_captured) noexcept {
  (void)ctx;
  Handle h;
  h.tag = Tag::kMarker;
  h.extra = (static_cast<uint32_t>(type) & 31u) | (graph_captured ? 32u : 0u);
  return encode(h);
}

namespace {
// A collective NCCL shows at API level only: an op of its own, started here
// and completed by the CollApi stop, so timed by the API call on the CPU
// (enqueue_cpu), with the user's count and datatype, and our own seq.
__attribute__((noinline, cold)) void* start_api_only(Runtime* rt, Context* c, const CollApiStart& a) noexcept {
  // Counted before the op can be filtered or dropped, so that every rank gives
  // the same call the same seq. Relaxed load/store: as Context::issued in start_coll().
  const uint64_t seq = c->api_only_seq.load(std::memory_order_relaxed);
  c->api_only_seq.store(seq + 1, std::memory_order_relaxed);  // as above
  // Its kernel work has no KernelCh profiler op (Context::desync_ticks).
  if (c->kernel_ch) note_desync(*c, nullptr);
  void* h = nullptr;
  uint32_t slot = 0;
  OpSlot* s = begin_op(rt, c, OpKind::kColl, -1, nullptr, a.func, a.dtype, a.count, 1, &slot, &h);
  if (s == nullptr) return h;
  s->ch_mode.store(kChGate, std::memory_order_relaxed);  // no channels (relaxed: published with the handle)
  if (a.user_tag != 0) s->user_tag.store(a.user_tag, std::memory_order_relaxed);  // as above
  // No place in the issue order; the progress snapshot shows the field (release: as show()).
  if constexpr (kInflightState) s->issue.store(UINT32_MAX, std::memory_order_release);
  OpStart& r = s->start;
  show(r.seq, seq);
  show(r.peer, int32_t{a.root});
  r.flags |= kFlagApiOnly | kFlagSeqOwn;
  return open_op(*s, slot);
}
}  // namespace

void* start_group(void* ctx) noexcept {
  (void)ctx;
  static thread_local uint32_t n_groups = 0;  // this thread's Group events (the launching thread's)
  Handle h;
  h.tag = Tag::kMarker;
  h.extra = static_cast<uint32_t>(EvType::kGroup);
  h.gen = ++n_groups;
  return encode(h);
}

void* start_coll_api(void* ctx, const CollApiStart& a) noexcept {
  if (Runtime* rt = runtime()) {
    if (Context* c = context_from_arg(rt, ctx)) {
      if constexpr (kInflightState) {
        // Relaxed load/store: as Context::issued in start_coll().
        c->api_issued.store(c->api_issued.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        c->last_api_func.store(static_cast<uint8_t>(a.func), std::memory_order_relaxed);  // as above
      }
      // Not under graph capture: NCCL makes the CollApi event once, at capture, and
      // nothing on replays, so the call's time is the capture's, not a broadcast's.
      // Relaxed: a one-way flag (start_coll); a call racing with it is at worst recorded twice.
      if (a.func == Func::kBroadcast && c->abi >= 6 && rt->bcast_api_only &&
          !rt->bcast_coll_seen.load(std::memory_order_relaxed)) [[unlikely]] {
        if (!a.graph_captured) return start_api_only(rt, c, a);
        // Captured: not recorded, but its kernel work still runs on every
        // replay without a KernelCh profiler op (Context::desync_ticks).
        if (c->kernel_ch) note_desync(*c, nullptr);
      }
    }
  }
  return start_marker(ctx, EvType::kCollApi, a.graph_captured);
}

void* start_unknown(void* ctx) noexcept {
  (void)ctx;
  if (runtime() != nullptr) bump(counters().fault_unknown_event);
  return nullptr;
}

// ============================================================== stop/record

namespace {
// Ends one channel of an op (ABI v4+: its KernelChStop state; v3: its stop):
// the stop stamp, the stopped bit, and the op's kernel side when it was the
// last. Only the op's progress thread calls this (see OpSlotFields).
__attribute__((noinline, cold)) int double_stop() noexcept {
  bump(counters().fault_double_stop);
  return 0;
}
inline int end_channel(OpSlot& s, uint64_t v, uint64_t stamp) noexcept {
  const uint32_t ch = extra_of(v);
  const uint64_t bit = 1ull << ch;
  // Relaxed: the progress thread's own fields, published by its release of
  // the kernel side below.
  const uint64_t stopped = s.stopped_mask.load(std::memory_order_relaxed);
  if (stopped & bit) [[unlikely]] return double_stop();
  s.ch_stop[ch].store(stamp, std::memory_order_relaxed);            // as above
  s.stopped_mask.store(stopped | bit, std::memory_order_relaxed);  // as above
  const uint8_t mode = s.ch_mode.load(std::memory_order_relaxed);  // as above
  if (mode == kChOpen) [[likely]] {
    // The kernel side ends when every started channel stopped and at least
    // as many as NCCL announced did.
    if ((stopped | bit) == s.started_mask.load(std::memory_order_relaxed) &&  // as above
        std::popcount(stopped | bit) >= s.start.n_channels) {
      s.ch_mode.store(kChDone, std::memory_order_relaxed);  // as above
      return release(v, s);
    }
    return 0;
  }
  if (mode == kChGate) return release(v, s);  // each channel held its own reference
  return 0;
}
}  // namespace

namespace {
__attribute__((noinline, cold)) void stop_slow(Runtime* rt, void* handle) noexcept;

// A CE op with CUDA events: its stop event, on the stream its copies went to,
// before the op can complete (a refused record leaves it CPU-timed); then the
// stop's release. A tail call from stop_op(), so that the common stop keeps
// no frame.
__attribute__((noinline, cold)) int stop_gpu_timer(uint64_t v, OpSlot& s, int pair) noexcept {
  Runtime* rt = runtime();
  // Relaxed: this thread's own stores at start.
  if (rt == nullptr || rt->gpu_timers == nullptr ||
      !rt->gpu_timers->stop(pair, s.gpu_stream.load(std::memory_order_relaxed)))
    s.gpu_pair.store(-1, std::memory_order_relaxed);  // published by release()'s acq_rel
  return release(v, s);
}

// A Coll / P2p / CeColl stop ("enqueued"). Returns 0.
inline int stop_op(uint64_t v) noexcept {
  OpSlot* s = live_op(v);
  if (s == nullptr) [[unlikely]] return stale_handle();
  // Relaxed load and store: an op is stopped by the one thread that launched
  // it (or its CUDA callback); published by release()'s acq_rel decrement.
  if (s->coll_stopped.load(std::memory_order_relaxed) != 0) [[unlikely]] return double_stop();
  s->coll_stopped.store(1, std::memory_order_relaxed);               // as above
  s->stop_ticks.store(clk::read_ticks(), std::memory_order_relaxed);  // as above
  if (const int pair = s->gpu_pair.load(std::memory_order_relaxed); pair >= 0) [[unlikely]]  // as above
    return stop_gpu_timer(v, *s, pair);
  return release(v, *s);
}
__attribute__((noinline)) void record_slow(Runtime* rt, void* handle, int state, const StateArgs& a) noexcept;
}  // namespace

int stop(void* handle) noexcept {
  const uint64_t v = hv(handle);
  // ABI v4+ KernelCh: NCCL always stops a channel right after its KernelChStop
  // state (profiler-abi.md §8.6), which already ended it; the stop carries
  // nothing more (and after the op's last channel its handle is already stale).
  if (tag_of(v) == Tag::kKernelCh) [[likely]] return 0;
  if (tag_of(v) == Tag::kKernelChCpu) {  // v3: no state 22; the stop ends the channel
    OpSlot* s = op_of(nullptr, v);
    if (s != nullptr) end_channel(*s, v, clk::read_ticks());
    return 0;
  }
  if (tag_of(v) == Tag::kMarker) return 0;  // API / Group events: nothing to do
  if (tag_of(v) == Tag::kOp) return stop_op(v);  // no runtime check either (generation check)
  if (tag_of(v) == Tag::kPhase) return 0;        // a KernelPhase: its end (state 31) came first
  Runtime* rt = runtime();
  if (rt == nullptr) [[unlikely]] return 0;
  stop_slow(rt, handle);
  return 0;
}

namespace {
void stop_slow(Runtime* rt, void* handle) noexcept {
  if (handle == nullptr) {
    bump(counters().fault_null_handle);
    return;
  }
  Handle h = decode(handle);
  switch (h.tag) {
    case Tag::kOp: (void)stop_op(hv(handle)); return;
    case Tag::kProxyOp: {
      Context* c = nullptr;
      NetSlot* n = net_of(rt, h, &c);
      if (n == nullptr) return;
      if (n->stopped.exchange(1, std::memory_order_acq_rel) != 0) {  // first stop wins
        bump(counters().fault_double_stop);
        return;
      }
      Context* oc = nullptr;
      Handle oh;
      OpSlot* s = op_of_net(rt, *n, &oc, &oh);
      const uint64_t t = clk::read_ticks();
      if (s != nullptr) {
        // v1-v3 report bytes only through the cumulative ProxyOp states.
        uint64_t tr = n->trans.load(std::memory_order_relaxed);
        if (tr != 0) (n->is_send.load(std::memory_order_relaxed) ? s->net_send_bytes : s->net_recv_bytes).fetch_add(tr, std::memory_order_relaxed);
        atomic_max(s->net_last, t);
      }
      // Release pairs with net_of()'s acquire: old handles stop validating.
      n->gen.fetch_add(1, std::memory_order_release);
      c->net_slots.free(h.slot);
      if (s != nullptr) release(oh, *s);
      return;
    }
    case Tag::kProxyStep: {
      Context* c = nullptr;
      NetSlot* n = net_of(rt, h, &c);
      if (n == nullptr) return;
      auto& st = n->steps[h.extra % ni::abi::kNcclSteps];
      if (st.stopped.exchange(1, std::memory_order_acq_rel) != 0) {  // first stop wins
        bump(counters().fault_double_stop);
        return;
      }
      const uint64_t t = clk::read_ticks();
      // Relaxed load/store: as steps_posted in start_proxy_step().
      n->steps_done.store(n->steps_done.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      // Relaxed: one progress thread owns a ProxyOp's step states.
      const int prev = st.state.load(std::memory_order_relaxed);
      const uint64_t pt = st.ticks.load(std::memory_order_relaxed);
      Context* oc = nullptr;
      Handle oh;
      if (OpSlot* s = op_of_net(rt, *n, &oc, &oh)) {
        if (prev >= 0 && t > pt) account_step_state(*s, prev, t - pt);
        atomic_max(s->net_last, t);
      }
      return;
    }
    case Tag::kNetPlugin: {
      if (!(h.extra & kNetWireTracked)) return;  // a receive, a socket event we could not attribute, ...
      Context* c = nullptr;
      NetSlot* n = net_of(rt, h, &c);
      if (n == nullptr) return;
      auto& st = n->steps[h.extra % ni::abi::kNcclSteps];
      // Relaxed: paired with the increment in start_net_plugin (see there).
      // Stops beyond the step's started events are IB's repeated stops.
      if (st.qp_stopped.fetch_add(1, std::memory_order_relaxed) >= st.qp_started.load(std::memory_order_relaxed)) return;
      Context* oc = nullptr;
      Handle oh;
      OpSlot* s = op_of_net(rt, *n, &oc, &oh);
      if (s == nullptr) return;
      HcaSlot& hs = s->hca[(h.extra >> 3) & 3u];
      const int64_t now = static_cast<int64_t>(clk::read_ticks());
      // Relaxed: paired with the increment in start_net_plugin (see there).
      uint32_t open = hs.wire_open.load(std::memory_order_relaxed);
      do {
        if (open == 0) return;  // more stops than starts on this entry: nothing to close
        // Relaxed: as above.
      } while (!hs.wire_open.compare_exchange_weak(open, open - 1, std::memory_order_relaxed));
      if (open == 1) hs.wire_ticks.fetch_add(now, std::memory_order_relaxed);  // as above
      return;
    }
    case Tag::kMarker:
    case Tag::kFiltered:
    case Tag::kPhase:  // its end (state 31) came first
    case Tag::kCeChild: return;
    default: bump(counters().fault_stale_handle); return;
  }
}
}  // namespace

namespace {
// A KernelChStop state on something that is not a KernelCh handle.
__attribute__((noinline)) int kernel_ch_stop_other(void* handle, uint64_t ptimer) noexcept {
  StateArgs a;
  a.ptimer = ptimer;
  a.has_ptimer = true;
  record_state(handle, ni::abi::kKernelChStop, a);
  return 0;
}
}  // namespace

int record_kernel_ch_stop(void* handle, uint64_t ptimer) noexcept {
  const uint64_t v = hv(handle);
  if (tag_of(v) != Tag::kKernelCh) [[unlikely]] return kernel_ch_stop_other(handle, ptimer);
  OpSlot* s = live_op(v);  // no runtime check (as in stop())
  if (s == nullptr) [[unlikely]] return stale_handle();
  return end_channel(*s, v, ptimer);
}

void record_state(void* handle, int state, const StateArgs& a) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) [[unlikely]] return;
  const uint64_t v = hv(handle);
  if (tag_of(v) == Tag::kKernelCh) [[likely]] {
    if (state != ni::abi::kKernelChStop) return;
    OpSlot* s = op_of(rt, v);
    // Without its timer (NULL state args) the channel still ends, with no length.
    if (s != nullptr) end_channel(*s, v, a.has_ptimer ? a.ptimer : 0);
    return;
  }
  record_slow(rt, handle, state, a);
}

namespace {
void record_slow(Runtime* rt, void* handle, int state, const StateArgs& a) noexcept {
  if (handle == nullptr) {
    bump(counters().fault_null_handle);
    return;
  }
  Handle h = decode(handle);
  switch (h.tag) {
    case Tag::kProxyOp: {
      if (state > ni::abi::kProxyOpRecvDone || !a.has_trans_size) return;
      Context* c = nullptr;
      NetSlot* n = net_of(rt, h, &c);
      if (n == nullptr) return;
      // Cumulative in 2.23-2.26: keep the largest.
      uint64_t cur = n->trans.load(std::memory_order_relaxed);
      if (a.trans_size > cur) n->trans.store(a.trans_size, std::memory_order_relaxed);  // progress thread only
      return;
    }
    case Tag::kProxyStep: {
      if (state < ni::abi::kProxyStepSendGPUWait ||
          (state > ni::abi::kProxyStepRecvGPUWait && state != ni::abi::kProxyStepSendPeerWait))
        return;
      Context* c = nullptr;
      NetSlot* n = net_of(rt, h, &c);
      if (n == nullptr) return;
      auto& st = n->steps[h.extra % ni::abi::kNcclSteps];
      const uint64_t t = clk::read_ticks();
      // Single progress thread per step; relaxed exchanges keep it race-free.
      const int prev = st.state.exchange(state, std::memory_order_relaxed);
      const uint64_t pt = st.ticks.exchange(t, std::memory_order_relaxed);
      Context* oc = nullptr;
      Handle oh;
      OpSlot* s = op_of_net(rt, *n, &oc, &oh);
      if (s == nullptr) return;
      if (prev >= 0 && t > pt) account_step_state(*s, prev, t - pt);
      if (a.has_trans_size && prev != state) {
        // Relaxed: statistics, read after completion's acquire on `remaining`.
        if (state == ni::abi::kProxyStepSendWait) s->net_send_bytes.fetch_add(a.trans_size, std::memory_order_relaxed);
        if (state == ni::abi::kProxyStepRecvFlushWait) s->net_recv_bytes.fetch_add(a.trans_size, std::memory_order_relaxed);
      }
      return;
    }
    case Tag::kPhase:  // its end normally comes through end_kernel_phase() (the plugin's state-31 path)
      if (state == ni::abi::kKernelPhaseStop && a.has_ptimer) (void)end_kernel_phase(handle, a.ptimer);
      return;
    default: return;  // markers (23, 24, ProxyCtrl states), NetPlugin (21), CE children
  }
}
}  // namespace

// ====================================================== comm identity (v1-v3)

void learn_identity(Context& c, uint64_t hash, int rank) noexcept {
  uint64_t zero = 0;
  // Relaxed: the hash is copied into records; the first writer wins.
  if (c.comm_hash.load(std::memory_order_relaxed) == 0 &&
      c.comm_hash.compare_exchange_strong(zero, hash, std::memory_order_relaxed)) {
    if (c.rank.load(std::memory_order_relaxed) < 0) c.rank.store(rank, std::memory_order_relaxed);
  }
}

}  // namespace ni::core
