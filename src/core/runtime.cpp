// The runtime (runtime.h): its lifetime (first init .. last finalize),
// communicator contexts, and the consumer's cold queries (consumer.h):
// statistics, communicators, clock estimates, configuration and logging.
// Draining records and the reclaimer are in completion.cpp, the ring registry
// in ring.cpp.
#include "src/core/runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

#include "src/core/clock.h"
#include "src/core/cuda_device.h"
#include "src/core/fork.h"
#include "src/core/names.h"
#include "src/core/ring.h"
#include "src/core/tracker.h"

namespace ni::core {

// The live runtime (see runtime() in runtime.h).
std::atomic<Runtime*> g_rt{nullptr};

namespace {

// Guards runtime creation/teardown and context allocation (cold paths).
std::mutex g_mu;
// A torn-down runtime is kept one generation (or until the library is
// unloaded) so that a straggling callback can never touch freed memory.
std::unique_ptr<Runtime> g_graveyard;

// At library unload (dlclose, or process exit), a runtime without live comms
// (e.g. NCCL_INSPECTOR_ENABLE=0, which never tears down) is freed too. One
// with live comms is left alone: other threads may still be in callbacks.
struct UnloadGuard {
  ~UnloadGuard() {
    Runtime* rt = g_rt.load(std::memory_order_acquire);  // pairs with the release stores in comm_init/teardown
    if (rt != nullptr && rt->live.load(std::memory_order_relaxed) == 0 && !rt->sink) {
      g_rt.store(nullptr, std::memory_order_release);  // pairs with runtime()'s acquire
      delete rt;
      rt = nullptr;
    }
    if (rt == nullptr) {
      // No runtime is left (none with live comms): nothing can hold a slot.
      g_graveyard.reset();
      SlotTable<OpSlot>::free_all();
      SlotTable<NetSlot>::free_all();
    }
  }
} g_unload_guard;
uint64_t g_generation = 0;  // guarded by g_mu

// ===================================================================== fork (fork.h)

// Written during static initialisation only (join_fork), read by the handlers.
constinit ForkParticipant g_fork_parts[kMaxForkParticipants] = {};
constinit int g_fork_n = 0;

// The runtimes a forked child inherited and abandoned (a few generations of
// forks; past that they are simply unreachable).
constexpr int kAbandoned = 16;
// volatile: written only so that leak checkers see the pointers; the stores
// must not be optimised away as dead.
constinit Runtime* volatile g_abandoned[kAbandoned] = {};
constinit int g_abandoned_n = 0;

void fork_prepare() noexcept {
  // g_mu first: a thread holding it may be joining a dump thread, which may
  // need any lock below; none of those is held while g_mu is taken.
  g_mu.lock();
  for (int i = 0; i < g_fork_n; ++i)
    if (g_fork_parts[i].prepare) g_fork_parts[i].prepare();
  SlotTable<OpSlot>::lock_for_fork();  // leaves
  SlotTable<NetSlot>::lock_for_fork();
}

void fork_parent() noexcept {
  SlotTable<NetSlot>::unlock_after_fork();
  SlotTable<OpSlot>::unlock_after_fork();
  for (int i = g_fork_n - 1; i >= 0; --i)
    if (g_fork_parts[i].parent) g_fork_parts[i].parent();
  g_mu.unlock();
}

void fork_child() noexcept {
  // Only this thread exists now. The parent's runtime, its graveyard and
  // every slot stay as they are, unreachable: freeing them would run
  // destructors that wait on the parent's threads (a condition variable its
  // dump thread waits on), and the parent's files are not ours to write.
  // Relaxed: no other thread exists to pair with.
  Runtime* rt = g_rt.load(std::memory_order_relaxed);
  if (rt != nullptr) {
    // Late callbacks of the parent's comms find no live context (counted).
    for (auto& slot : rt->contexts) {
      Context* c = slot.load(std::memory_order_relaxed);  // relaxed: single-threaded here
      if (c != nullptr) c->live.store(0, std::memory_order_relaxed);
    }
  }
  // Kept reachable (leak checkers scan static storage) rather than freed.
  if (rt != nullptr && g_abandoned_n < kAbandoned) g_abandoned[g_abandoned_n++] = rt;
  Runtime* grave = g_graveyard.release();
  if (grave != nullptr && g_abandoned_n < kAbandoned) g_abandoned[g_abandoned_n++] = grave;
  g_rt.store(nullptr, std::memory_order_release);  // pairs with runtime()'s acquire (the child's later threads)
  SlotTable<OpSlot>::forget_in_child();
  SlotTable<NetSlot>::forget_in_child();
  SlotTable<NetSlot>::unlock_after_fork();
  SlotTable<OpSlot>::unlock_after_fork();
  for (int i = g_fork_n - 1; i >= 0; --i)
    if (g_fork_parts[i].child) g_fork_parts[i].child();
  g_mu.unlock();
}

// One registration per library load: glibc ties handlers registered from a
// shared object to it and drops them at dlclose.
struct ForkHandlers {
  ForkHandlers() noexcept { pthread_atfork(fork_prepare, fork_parent, fork_child); }
} g_fork_handlers;



void* encode_ctx(const Runtime& rt, uint32_t id) noexcept {
  uintptr_t v = ((static_cast<uintptr_t>(rt.generation) & 0xFFFFu) << 16) | (id + 1);
  return reinterpret_cast<void*>(v);
}

void default_log(ni::abi::LogLevel level, const char* msg) {
  // Without NCCL's logger (ABI v1-v3) we print only what NCCL_DEBUG asks for.
  const char* dbg = std::getenv("NCCL_DEBUG");
  if (dbg == nullptr) return;
  bool info = strcasecmp(dbg, "INFO") == 0 || strcasecmp(dbg, "TRACE") == 0;
  bool warn = info || strcasecmp(dbg, "WARN") == 0;
  if ((level == ni::abi::kLogWarn && warn) || (level == ni::abi::kLogInfo && info)) {
    char host[64] = "?";
    gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "%s:%d:0 NCCL %s %s\n", host, static_cast<int>(getpid()),
                 level == ni::abi::kLogWarn ? "WARN" : "INFO", msg);
  }
}

void vlog(Runtime* rt, ni::abi::LogLevel level, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  ni::abi::DebugLogger fn = rt ? rt->logfn : nullptr;
  if (fn != nullptr) {
    fn(level, ni::abi::kSubsysInit | ni::abi::kSubsysProfile, __FILE__, __LINE__, "%s", buf);
  } else {
    default_log(level, buf);
  }
}

void logf(Runtime* rt, ni::abi::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void logf(Runtime* rt, ni::abi::LogLevel level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(rt, level, fmt, ap);
  va_end(ap);
}

int compute_mask(const Runtime& rt, int abi) {
  int m = ni::abi::kColl;
  if (rt.cfg.enable_p2p) m |= ni::abi::kP2p;
  // With KernelCh, P2p even when P2P ops are not recorded: a Send/Recv to
  // itself puts NCCL's kernel stamps out of step (Context::desync_ticks) and
  // only its P2p event shows it; start_p2p() filters the rest at once.
  if (abi >= 3 && rt.cfg.kernel_timing) m |= static_cast<int>(ni::abi::kKernelCh) | ni::abi::kP2p;
  if (abi >= 7 && rt.cfg.kernel_timing && rt.cfg.enable_phases) m |= static_cast<int>(ni::abi::kKernelPhase);
  if (rt.cfg.enable_net) m |= ni::abi::kProxyOp | ni::abi::kProxyStep | (abi >= 3 ? static_cast<int>(ni::abi::kNetPlugin) : 0);
  if (abi >= 6 && rt.cfg.enable_ce) m |= ni::abi::kCeColl | ni::abi::kCeSync | ni::abi::kCeBatch;
  return m;
}

void teardown_locked(Runtime* rt) {
  // Stop the sink first: it drains every ring one last time and joins.
  if (rt->sink) rt->sink->stop();
  if (rt->gpu_timers) rt->gpu_timers->shutdown();  // the events, while their contexts live
  // Release pairs with runtime()'s acquire: new callbacks see no runtime.
  g_rt.store(nullptr, std::memory_order_release);  // pairs with runtime()'s acquire
  // Free the previous graveyard; keep this one until the next teardown.
  g_graveyard.reset(rt);
}

}  // namespace

Runtime::~Runtime() {
  // Relaxed: the runtime is freed one generation after it was retired, when no
  // callback and no dump thread can reach its contexts any more.
  for (auto& c : contexts) delete c.load(std::memory_order_relaxed);
  for (ThreadRing* t = rings; t != nullptr;) {
    ThreadRing* n = t->next;
    delete t;
    t = n;
  }
}

// ===================================================================== init

namespace {

// A context for a new comm: a finalized one reused (its pools and generations
// continue, so stale handles into it stay detectable) or a new one; nullptr
// (logged) when none can be had. Under g_mu.
Context* acquire_context_locked(Runtime* rt) {
  if (!rt->recycled.empty()) {
    const uint32_t id = rt->recycled.back();
    rt->recycled.pop_back();
    return context_of(rt, id);
  }
  // relaxed: ids only grow; each context is published by its own release store
  const uint32_t id = rt->n_contexts.load(std::memory_order_relaxed);
  if (id >= kMaxContexts) {
    logf(rt, ni::abi::kLogWarn, "NCCL Inspector: more than %u communicators; this one is not recorded",
         kMaxContexts);
    return nullptr;
  }
  auto fresh = std::make_unique<Context>();
  fresh->id = id;
  if (!fresh->ops.init(static_cast<uint32_t>(rt->cfg.pool_ops), fresh.get()) ||
      !fresh->net_slots.init(static_cast<uint32_t>(rt->cfg.enable_net ? rt->cfg.pool_ops * 4 : 64), fresh.get())) {
    logf(rt, ni::abi::kLogWarn, "NCCL Inspector: out of memory; communicator not recorded");
    return nullptr;
  }
  Context* c = fresh.release();
  // Release pairs with context_of()'s acquire.
  rt->contexts[id].store(c, std::memory_order_release);
  rt->n_contexts.store(id + 1, std::memory_order_release);  // pairs with the acquire load in comms()
  return c;
}

// Sets a (new or recycled) context up for the comm of `a`. Its fields are
// published to callbacks by the release store of `live` in comm_init.
void reset_context(Context& c, const Runtime& rt, const InitArgs& a) {
  c.abi = a.abi;
  c.nranks = a.nranks;
  c.nnodes = a.nnodes;
  // relaxed: published by the release store of live (comm_init)
  c.comm_hash.store(a.comm_hash, std::memory_order_relaxed);
  c.rank.store(a.rank, std::memory_order_relaxed);  // as above
  c.kernel_ch = a.abi >= 3 && rt.cfg.kernel_timing;
  c.net = rt.cfg.enable_net;
  c.quiet_transport = static_cast<uint8_t>(c.net || c.nnodes == 1 ? Transport::kIntraNode : Transport::kUnknown);
  c.sample_counter.store(0, std::memory_order_relaxed);  // as above
  c.clk_min.store(INT64_MAX, std::memory_order_relaxed);  // as above
  c.clk_typical.store(0, std::memory_order_relaxed);      // as above
  c.clk_samples.store(0, std::memory_order_relaxed);      // as above
  // The issue state starts afresh for the new comm (a recycled context kept the last one's).
  c.issued.store(0, std::memory_order_relaxed);  // as above
  for (auto& f : c.func_seq) f.store(0, std::memory_order_relaxed);  // as above
  c.p2p_started.store(0, std::memory_order_relaxed);   // as above
  c.last_func.store(0, std::memory_order_relaxed);     // as above
  c.api_issued.store(0, std::memory_order_relaxed);    // as above
  c.last_api_func.store(0, std::memory_order_relaxed); // as above
  c.api_only_seq.store(0, std::memory_order_relaxed);  // as above
  c.desync_ticks.store(UINT64_MAX, std::memory_order_relaxed);  // as above
  c.desync_group.store(0, std::memory_order_relaxed);           // as above
  const uint32_t pn = a.nranks > 0 ? static_cast<uint32_t>(a.nranks < 4096 ? a.nranks : 4096) : 1;
  if (c.p2p_seq_n != pn) {
    c.p2p_seq.reset(new (std::nothrow) std::atomic<uint32_t>[2 * pn]);
    c.p2p_seq_n = c.p2p_seq ? pn : 0;
  }
  // Relaxed: as above.
  for (uint32_t i = 0; i < 2 * c.p2p_seq_n; ++i) c.p2p_seq[i].store(0, std::memory_order_relaxed);
}

// A GPU's identity for clock sharing: a hash of its PCI bus id (unique in
// the machine), else its ordinal + 1 (unique in the process); 0 unknown.
uint64_t gpu_key_of(const CudaDevice& dev) {
  if (!dev.pci_bus_id.empty()) return std::hash<std::string>{}(dev.pci_bus_id) | (1ull << 63);
  return dev.ordinal >= 0 ? static_cast<uint64_t>(dev.ordinal) + 1 : 0;
}

// Under g_mu: whether another live context is another rank of the same comm
// (then this process drives several GPUs).
void note_multi_gpu(Runtime& rt, const Context& c, const InitArgs& a) {
  if (rt.multi_gpu.load(std::memory_order_relaxed)) return;  // relaxed: under g_mu, the only writer
  // relaxed: under g_mu, as acquire_context_locked reads it
  const uint32_t nc = rt.n_contexts.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < nc; ++i) {
    const Context* o = context_of(&rt, i);
    // relaxed: contexts go live and are finalized under g_mu, which we hold
    if (o == nullptr || o == &c || !o->live.load(std::memory_order_relaxed)) continue;
    // relaxed: v4+ set these at init (under g_mu); v1-v3 learn the hash later and give no GPU clock to share
    if (a.comm_hash != 0 && o->comm_hash.load(std::memory_order_relaxed) == a.comm_hash &&
        o->rank.load(std::memory_order_relaxed) != a.rank) {
      rt.multi_gpu.store(true, std::memory_order_relaxed);  // read relaxed by clock_estimate: a hint, see there
      return;
    }
  }
}

CommInfo comm_info_of(uint32_t id, const InitArgs& a, const CudaDevice& dev) {
  CommInfo info;
  info.comm_id = id;
  info.comm_hash = a.comm_hash;
  info.name = a.comm_name ? a.comm_name : "";  // NCCL does not copy the user's name: we do
  info.rank = a.rank;
  info.nranks = a.nranks;
  info.nnodes = a.nnodes;
  info.abi_version = a.abi;
  info.cuda_device = dev.ordinal;
  info.pci_bus_id = dev.pci_bus_id;
  return info;
}

}  // namespace

void* comm_init(const InitArgs& a) noexcept {
  try {
    // The comm's GPU, asked before taking g_mu: it goes through the dynamic
    // loader's lock, which must never be waited for while holding ours.
    const CudaDevice dev = current_cuda_device();
    std::lock_guard<std::mutex> lk(g_mu);
    Runtime* rt = g_rt.load(std::memory_order_relaxed);  // relaxed: under g_mu, the only writer
    if (rt != nullptr && rt->pid != getpid()) {
      // A forked child: the parent's threads do not exist here. Abandon the
      // inherited runtime (never touch its locks or threads) and start afresh.
      (void)g_graveyard.release();
      g_rt.store(nullptr, std::memory_order_release);  // pairs with runtime()'s acquire
      rt = nullptr;
    }
    if (rt == nullptr) {
      auto fresh = std::make_unique<Runtime>();
      fresh->generation = ++g_generation;
      fresh->pid = getpid();
      fresh->logfn = a.logfn;
      std::vector<std::string> warnings;
      fresh->cfg = load_config_from_env([&](const std::string& w) { warnings.push_back(w); });
      for (const auto& w : warnings) logf(fresh.get(), ni::abi::kLogWarn, "NCCL Inspector: %s", w.c_str());
      fresh->high_water_mark = static_cast<uint64_t>(fresh->cfg.ring_records) / 2;
      // NCCL's default is 1; "0" keeps Broadcast a kernel collective with its Coll event.
      if (const char* agv = std::getenv("NCCL_ALLGATHERV_ENABLE"); agv != nullptr && *agv != '\0' && std::strtol(agv, nullptr, 0) == 0)
        fresh->bcast_api_only = false;
      if (fresh->cfg.enable && fresh->cfg.enable_ce && fresh->cfg.ce_gpu_timing) {
        auto timers = std::make_unique<GpuTimers>();
        if (timers->bind()) fresh->gpu_timers = std::move(timers);
      }
      clk::calibrate();
      logf(fresh.get(), ni::abi::kLogInfo, "NCCL Inspector: configuration %s", describe(fresh->cfg).c_str());
      if (fresh->cfg.enable) {
        fresh->sink = make_sink();
        if (fresh->sink) fresh->sink->start(fresh->cfg, a.logfn);
      }
      rt = fresh.release();
      // Release pairs with runtime()'s acquire on every event path.
      g_rt.store(rt, std::memory_order_release);
    }
    if (a.logfn != nullptr) rt->logfn = a.logfn;
    if (!rt->cfg.enable) {
      logf(rt, ni::abi::kLogInfo, "NCCL Inspector: disabled by NCCL_INSPECTOR_ENABLE=0 (bound ABI v%d)", a.abi);
      return nullptr;
    }

    Context* c = acquire_context_locked(rt);
    if (c == nullptr) return nullptr;
    reset_context(*c, *rt, a);
    c->gpu_key.store(gpu_key_of(dev), std::memory_order_relaxed);  // published by the release store of live below
    note_multi_gpu(*rt, *c, a);
    const CommInfo info = comm_info_of(c->id, a, dev);
    {
      std::lock_guard<std::mutex> ilk(rt->info_mu);
      c->info = info;
    }
    // Release: the fields above are visible to callbacks that see live == 1.
    c->live.store(1, std::memory_order_release);
    rt->live.fetch_add(1, std::memory_order_relaxed);  // under g_mu; readers only test for zero

    const int mask = compute_mask(*rt, a.abi);
    // NCCL's one process-wide mask may be read by other threads (other comms'
    // launches) while we write it; relaxed: a plain int flag, no data hangs off it.
    if (a.mask != nullptr) std::atomic_ref<int>(*a.mask).store(mask, std::memory_order_relaxed);
    if (rt->sink) rt->sink->comm_added(info);
    logf(rt, ni::abi::kLogInfo,
         "NCCL Inspector: bound profiler ABI v%d; comm %s hash 0x%016llx rank %d/%d nodes %d, event mask 0x%x",
         a.abi, info.name.empty() ? "(unnamed)" : info.name.c_str(),
         static_cast<unsigned long long>(a.comm_hash), a.rank, a.nranks, a.nnodes, mask);
    return encode_ctx(*rt, c->id);
  } catch (...) {
    return nullptr;  // never let an exception reach NCCL
  }
}

bool join_fork(const ForkParticipant& p) noexcept {
  if (g_fork_n >= kMaxForkParticipants) return false;
  int i = g_fork_n++;
  while (i > 0 && g_fork_parts[i - 1].order > p.order) {  // kept sorted by order
    g_fork_parts[i] = g_fork_parts[i - 1];
    --i;
  }
  g_fork_parts[i] = p;
  return true;
}

void comm_finalize(void* ctx) noexcept {
  try {
    std::lock_guard<std::mutex> lk(g_mu);
    Runtime* rt = g_rt.load(std::memory_order_relaxed);  // relaxed: under g_mu, the only writer
    if (rt == nullptr || ctx == nullptr) return;
    Context* c = context_from_arg(rt, ctx);
    if (c == nullptr) return;
    // Everything still in flight will never be stopped (profiler-abi.md
    // §11.11): write what we have, marked reclaimed, rather than lose it.
    size_t n = reclaim_ops(*c, UINT64_MAX);
    if (n) logf(rt, ni::abi::kLogInfo, "NCCL Inspector: %zu in-flight ops of comm %u written at finalize", n, c->id);
    // Relaxed: set once (Context::desync_ticks); this thread finalizes the comm.
    if (c->desync_ticks.load(std::memory_order_relaxed) != UINT64_MAX)
      logf(rt, ni::abi::kLogInfo,
           "NCCL Inspector: comm %u: NCCL's KernelCh timestamps fell out of step with its work (a Send/Recv to "
           "itself, a Broadcast, or stamps that ended before they started); its ops after that are CPU-timed "
           "(kernel_desync)", c->id);
    c->live.store(0, std::memory_order_release);  // late callbacks are counted, not followed
    rt->recycled.push_back(c->id);
    if (rt->sink) rt->sink->comm_removed(c->id);
    if (rt->live.fetch_sub(1, std::memory_order_relaxed) == 1) teardown_locked(rt);  // under g_mu
  } catch (...) {
  }
}

}  // namespace ni::core

// ====================================================== consumer queries (consumer.h)

namespace ni {

using core::context_of;
using core::Context;
using core::Runtime;
using core::runtime;
using core::ThreadRing;

namespace {
// Set during static initialization (runtime.h), which dlopen or program start
// completes before any comm_init: a plain pointer, read under g_mu.
constinit SinkFactory g_sink_factory = nullptr;
}  // namespace

void set_sink_factory(SinkFactory make) noexcept { g_sink_factory = make; }
std::unique_ptr<Sink> make_sink() { return g_sink_factory != nullptr ? g_sink_factory() : nullptr; }

CoreStats stats() {
  CoreStats s;
  Runtime* rt = runtime();
  if (rt == nullptr) return s;
  std::lock_guard<std::mutex> lk(rt->ring_mu);
  for (ThreadRing* t = rt->rings; t; t = t->next) {
    const core::ThreadCounters& c = t->counters;
    auto rd = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };  // statistics only
    auto hi = [](uint64_t a, uint64_t b) { return a > b ? a : b; };
    // Records produced: pushed into the ring, or dropped there; and those
    // pushed but not drained yet (tail first: the difference is never
    // negative; on the dump thread, the consumer, it is exact).
    uint64_t drained = 0, pushed = 0;
    for (const auto* where : {&t->ring, &t->burst}) {
      const SpscRing<OpRecord>* ring = where->load(std::memory_order_acquire);  // pairs with the release store in make_ring()
      drained += ring != nullptr ? ring->drained() : 0;
      pushed += ring != nullptr ? ring->pushed() : 0;
    }
    s.ops_completed += pushed + rd(c.dropped_ring_full);
    s.records_pending += pushed - drained;
    // The thread-kept rows of counters.h: summed, or the max for high-water marks.
#define NI_TOTAL(id, key, group, origin, ...)              \
  NI_COUNTER_IF_THREAD_SUM(origin, s.id += rd(c.id);)      \
  NI_COUNTER_IF_THREAD_MAX(origin, s.id = hi(s.id, rd(c.id));)
    NI_COUNTERS(NI_TOTAL)
#undef NI_TOTAL
    s.rings++;
  }
  // CE records drained but waiting for their CUDA events: pending too (relaxed:
  // the consumer's own count, exact on its thread).
  s.records_pending += rt->n_parked.load(std::memory_order_relaxed);
  // relaxed: ids only grow; each context is published by its own release store
  const uint32_t nc = rt->n_contexts.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < nc; ++i) {
    Context* c = context_of(rt, i);
    if (c == nullptr) continue;
    // The hot path keeps no in-use counter (two locked operations per op):
    // count the allocated slots here instead. Acquire pairs with open_op()'s
    // release store; a slot in transition may be counted either way.
    c->ops.for_each([&](uint32_t, core::OpSlot& slot) { s.pool_in_use += slot.in_use.load(std::memory_order_acquire); });
    // The pool grows only when its free list is empty, so its size is the
    // peak in-flight count rounded up to a chunk (64).
    s.pool_high_water += c->ops.capacity();
  }
  return s;
}

// Called by the dump thread, possibly while the finalize thread holds g_mu and
// waits to join it: takes only the leaf lock info_mu, never g_mu.
std::vector<CommInfo> comms() {
  std::vector<CommInfo> out;
  Runtime* rt = runtime();
  if (rt == nullptr) return out;
  std::lock_guard<std::mutex> lk(rt->info_mu);
  // Acquire pairs with the release store in acquire_context_locked().
  const uint32_t nc = rt->n_contexts.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < nc; ++i) {
    Context* c = context_of(rt, i);
    if (c == nullptr || !c->live.load(std::memory_order_relaxed)) continue;  // relaxed: a hint, as in clock_estimate
    CommInfo ci = c->info;
    ci.comm_hash = c->comm_hash.load(std::memory_order_relaxed);  // relaxed: learned from descriptors (v1-v3)
    const int32_t r = c->rank.load(std::memory_order_relaxed);    // relaxed: as above
    if (ci.rank < 0) ci.rank = r;
    out.push_back(std::move(ci));
  }
  return out;
}

namespace {
// One context's own estimate (relaxed: statistics kept by the progress threads).
bool own_estimate(Context* c, int64_t* off, uint64_t* unc, uint64_t* samples) {
  const int64_t mn = c->clk_min.load(std::memory_order_relaxed);
  const int64_t typ = c->clk_typical.load(std::memory_order_relaxed);
  *samples = c->clk_samples.load(std::memory_order_relaxed);  // relaxed: statistic / hint
  if (mn == INT64_MAX || *samples == 0) return false;
  *off = mn;
  *unc = typ > mn ? static_cast<uint64_t>(typ) - static_cast<uint64_t>(mn) : 0;
  return true;
}
}  // namespace

// Communicators of one process usually share a GPU, hence a GPU clock, but a
// comm whose progress thread is busy with network work observes its kernel
// starts late and gets a loose bound. When another live comm's bound is
// tighter and lies within this comm's own uncertainty, and the two are on one
// GPU, its bound is used: the error this can add is at most the uncertainty
// the comm already had. On one GPU: the driver named the same GPU for both;
// or, where it named none (no driver loaded), the process is not known to
// drive several GPUs. Each GPU has a clock of its own, and two GPUs' clocks
// may differ by less than a loose comm's uncertainty (the emulator's do by
// milliseconds): a bound borrowed from another GPU would move the comm's
// times by up to that uncertainty, mid-run, and apart from its peers'.
ClockEstimate clock_estimate(uint32_t comm_id) {
  ClockEstimate e;
  e.comm_id = comm_id;
  Runtime* rt = runtime();
  Context* c = context_of(rt, comm_id);
  if (c == nullptr) return e;
  int64_t off = 0;
  uint64_t unc = 0, samples = 0;
  if (!own_estimate(c, &off, &unc, &samples)) return e;
  e.valid = true;
  e.offset_ns = off;
  e.uncertainty_ns = unc;
  e.samples = samples;
  // relaxed: ids only grow; each context is published by its own release store
  const uint32_t nc = rt->n_contexts.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < nc; ++i) {
    Context* o = context_of(rt, i);
    // relaxed: a hint; a comm racing with its finalize is only skipped
    if (o == nullptr || o == c || !o->live.load(std::memory_order_relaxed)) continue;
    // relaxed: set before the context went live (comm_init), a hint like live
    const uint64_t gk = c->gpu_key.load(std::memory_order_relaxed), ogk = o->gpu_key.load(std::memory_order_relaxed);
    if (gk != 0 && ogk != 0 ? gk != ogk : rt->multi_gpu.load(std::memory_order_relaxed)) continue;  // relaxed: as above
    int64_t ooff = 0;
    uint64_t ounc = 0, osamples = 0;
    if (!own_estimate(o, &ooff, &ounc, &osamples)) continue;
    if (ooff >= e.offset_ns) continue;
    const uint64_t gap = static_cast<uint64_t>(off) - static_cast<uint64_t>(ooff);
    if (gap > unc) continue;
    e.offset_ns = ooff;
    e.uncertainty_ns = ounc;
    e.samples = samples + osamples;
  }
  return e;
}

uint64_t mono_now_ns() noexcept { return clk::now_ns(); }
void refine_clock() noexcept { clk::refine(); }

const Config& config() {
  static const Config kDefault;
  Runtime* rt = runtime();
  return rt ? rt->cfg : kDefault;
}

void log(ni::abi::LogLevel level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  core::vlog(runtime(), level, fmt, ap);
  va_end(ap);
}

}  // namespace ni

namespace ni::core {

namespace {
// A user's record (mark or tag name): no comm, the label in the bytes of channels.
int note(OpKind kind, uint64_t tag, const char* label) noexcept {
  Runtime* rt = runtime();
  // Relaxed: a hint; a mark racing with the last finalize is simply dropped.
  if (rt == nullptr || !rt->cfg.enable || rt->live.load(std::memory_order_relaxed) == 0) return -1;
  ThreadRing* tr = nullptr;
  OpRecord* r = publish_begin(&tr);
  if (r == nullptr) return 1;
  std::memset(static_cast<void*>(r), 0, offsetof(OpRecord, channels));
  r->kind = static_cast<uint8_t>(kind);
  r->user_tag = tag;
  r->rank = -1;
  r->peer = -1;
  r->enqueue_ns = clk::now_ns();
  r->start_ns = r->enqueue_ns;
  r->end_ns = r->enqueue_ns;
  r->timing = static_cast<uint8_t>(TimingSource::kNone);
  char* dst = reinterpret_cast<char*>(r->channels);
  size_t n = 0;
  if (label != nullptr) {
    while (n + 1 < kMarkLabelMax && label[n] != '\0') {
      dst[n] = label[n];
      ++n;
    }
  }
  dst[n] = '\0';
  publish_commit(tr);
  return 0;
}
}  // namespace

int mark(const char* label) noexcept { return note(kMarkKind, 0, label); }

int name_tag(uint64_t tag, const char* name) noexcept {
  if (tag == 0 || name == nullptr) return -2;
  return note(kTagNameKind, tag, name);
}

int flush() noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr || !rt->sink) return -1;
  rt->sink->wake();
  return 0;
}

}  // namespace ni::core
