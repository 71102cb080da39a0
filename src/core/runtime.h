// The runtime: everything one library load's capture core owns between the
// first comm_init and the last comm_finalize (runtime.cpp), and the Sink it
// starts and stops.
//
// Lifetime: the first comm_init of a library load creates the runtime, loads
// the Config and starts the Sink; comm_finalize of the last live comm stops
// the Sink (final drain, thread joined) and tears the runtime down, so the
// library can be dlclosed and dlopened again (profiler-abi.md §6, §11.20).
// The consumer's side of the contract with src/output is consumer.h.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "include/nccl_inspector/counters.h"
#include "include/nccl_inspector/nccl.h"
#include "src/core/config.h"
#include "src/core/consumer.h"
#include "src/core/gpu_timer.h"
#include "src/core/record.h"

namespace ni {

struct CoreStats {
  // Every row of include/nccl_inspector/counters.h but the output's own, named
  // as there (ni::stats() totals them).
#define NI_CORE_STAT(id, key, group, origin, ...) NI_COUNTER_IF_CORE(origin, uint64_t id = 0;)
  NI_COUNTERS(NI_CORE_STAT)
#undef NI_CORE_STAT
};

// Implemented by src/output. One instance per runtime (library load).
class Sink {
 public:
  virtual ~Sink() = default;
  // First comm init, before any record exists. May start threads.
  virtual void start(const Config& cfg, ni::abi::DebugLogger logfn) = 0;
  // Cold path, from init/finalize threads.
  virtual void comm_added(const CommInfo& c) = 0;
  virtual void comm_removed(uint32_t comm_id) = 0;
  // A ring passed its high-water mark. Called rarely from event threads:
  // must not block (a notify at most).
  virtual void wake() noexcept = 0;
  // Last finalize or process exit: drain everything now, write the end
  // record, join threads. Must return promptly (never waits out an interval).
  virtual void stop() = 0;
};

// The core defines no Sink and links to no output: whoever links one
// registers its factory, from a static initializer of an object file linked
// in whole (src/output: core_source.cpp in the plugin, memory_sink_factory.cpp
// in the core's tests), so it is in place before the first comm_init. With
// none registered make_sink() returns null: no output, records stay in the rings.
using SinkFactory = std::unique_ptr<Sink> (*)();
void set_sink_factory(SinkFactory make) noexcept;
std::unique_ptr<Sink> make_sink();

}  // namespace ni

namespace ni::core {

struct Context;     // one communicator (tracker.h)
struct ThreadRing;  // one thread's ring and counters (ring.h)

inline constexpr int kCtxBits = 12;  // context ids (the init context argument, not handles)
inline constexpr uint32_t kMaxContexts = 1u << kCtxBits;

// One per library load (or per fork that initialises comms). Created by the
// first comm_init, retired by the last comm_finalize and freed one generation
// later (runtime.cpp), so a straggling callback never touches freed memory.
struct Runtime {
  Config cfg;
  uint64_t generation = 0;
  pid_t pid = 0;
  std::unique_ptr<Sink> sink;
  ni::abi::DebugLogger logfn = nullptr;
  std::atomic<Context*> contexts[kMaxContexts] = {};
  std::atomic<uint32_t> n_contexts{0};  // ids handed out so far
  std::vector<uint32_t> recycled;       // finalized context ids, guarded by g_mu (runtime.cpp)
  std::atomic<int> live{0};             // live comms; written under g_mu, read anywhere
  // Two ranks of one communicator were initialised in this process: it drives
  // several GPUs (NCCL never puts two ranks of a comm on one GPU). Set under
  // g_mu (comm_init), never cleared; read by clock_estimate.
  std::atomic<bool> multi_gpu{false};
  std::mutex ring_mu;                   // guards the ring list
  // Guards Context::info. A leaf lock: never held while taking another, so
  // the dump thread (which reads comm info) never waits on g_mu, which the
  // finalize thread holds while it stops and joins that dump thread.
  std::mutex info_mu;
  ThreadRing* rings = nullptr;          // the ring registry (ring.h)
  std::atomic<uint64_t> n_rings{0};
  std::atomic<uint32_t> n_burst_rings{0};  // burst rings made (ring.cpp), at most cfg.burst_rings
  std::atomic<uint32_t> wake_pending{0};
  uint64_t high_water_mark = 0;         // records; a push past it wakes the sink
  // CUDA events for CE ops (gpu_timer.h); nullptr when off or no driver.
  std::unique_ptr<GpuTimers> gpu_timers;
  // Consumer-only: drained CE records waiting for their CUDA events
  // (completion.cpp); their count is read by stats() (relaxed).
  std::vector<OpRecord> parked;
  std::atomic<uint64_t> n_parked{0};
  // Broadcast on ABI v6+ (NCCL 2.29+) runs as AllGatherV and gets a CollApi
  // event but no Coll (profiler-abi.md §8.8) unless NCCL_ALLGATHERV_ENABLE=0:
  // each such call is then recorded from its CollApi (tracker.cpp,
  // start_coll_api; NCCL copies its config file's settings into the
  // environment before it loads the plugin, so getenv sees them).
  // bcast_coll_seen: a Broadcast Coll arrived on ABI v6+ after all: stop.
  bool bcast_api_only = true;
  std::atomic<bool> bcast_coll_seen{false};
  Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime();  // frees contexts and rings; only once no callback can run
};

// The current runtime, or nullptr outside [first init, last finalize].
extern std::atomic<Runtime*> g_rt;
inline Runtime* runtime() noexcept {
  // Acquire pairs with the release stores in comm_init (creation) and
  // teardown (reset to nullptr).
  return g_rt.load(std::memory_order_acquire);
}

inline Context* context_of(Runtime* rt, uint32_t id) noexcept {
  if (rt == nullptr || id >= kMaxContexts) return nullptr;
  // Pairs with the release store when the context is created.
  return rt->contexts[id].load(std::memory_order_acquire);
}

}  // namespace ni::core
