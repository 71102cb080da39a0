// The registry of per-thread rings: a thread's ring record is created and
// linked into its runtime's list at the thread's first event, its steady ring
// at its first record and its burst ring when the steady one is first full;
// all live until the runtime is freed (Runtime::~Runtime). The inline fast
// path of publishing is in ring.h; this is its slow half.
#include "src/core/ring.h"

#include <mutex>
#include <new>

namespace ni::core {

// This thread's ring record, valid while tls_gen is the current runtime's
// generation (a thread that outlives a runtime registers again in the next).
thread_local constinit ThreadRing* tls_ring = nullptr;
thread_local constinit uint64_t tls_gen = 0;

namespace {
// Used when no runtime exists (counts nothing that is ever read).
ThreadRing g_dummy_ring;
}  // namespace

ThreadRing* this_thread() noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return &g_dummy_ring;
  if (tls_ring != nullptr && tls_gen == rt->generation) return tls_ring;
  // First event of this thread in this runtime: register (once per thread).
  auto* tr = new (std::nothrow) ThreadRing;
  if (tr == nullptr) return &g_dummy_ring;
  {
    std::lock_guard<std::mutex> lk(rt->ring_mu);
    tr->next = rt->rings;
    rt->rings = tr;
  }
  rt->n_rings.fetch_add(1, std::memory_order_relaxed);  // statistic
  tls_ring = tr;
  tls_gen = rt->generation;
  return tr;
}

namespace {
// A ring of `records` for the consumer to find through `where` (release pairs
// with the consumer's acquire loads in drain_records() and stats()).
SpscRing<OpRecord>* make_ring(std::atomic<SpscRing<OpRecord>*>& where, int64_t records) noexcept {
  auto* ring = new (std::nothrow) SpscRing<OpRecord>(static_cast<size_t>(records));
  if (ring != nullptr && ring->capacity() == 0) {
    delete ring;
    ring = nullptr;
  }
  if (ring != nullptr) where.store(ring, std::memory_order_release);
  return ring;
}
}  // namespace

OpRecord* publish_begin_slow(ThreadRing** out) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  ThreadRing* tr = tls_ring != nullptr && tls_gen == rt->generation ? tls_ring : this_thread();
  *out = tr;
  if (tr == &g_dummy_ring) return nullptr;
  if (tr->bursting) {
    // Relaxed: our own stores.
    SpscRing<OpRecord>* burst = tr->burst.load(std::memory_order_relaxed);
    SpscRing<OpRecord>* steady = tr->ring.load(std::memory_order_relaxed);
    if (burst->refresh_fill() == 0) {
      // The consumer took every burst record, and the steady ones before
      // them: back to the steady ring.
      tr->bursting = false;
      tr->fast = steady;
      OpRecord* slot = steady->try_reserve();
      return slot != nullptr ? slot : publish_full(tr);
    }
    OpRecord* slot = burst->try_reserve();
    if (slot == nullptr) bump(tr->counters.dropped_ring_full);
    return slot;
  }
  // Only this thread writes the pointer; relaxed read of our own store.
  SpscRing<OpRecord>* ring = tr->ring.load(std::memory_order_relaxed);
  if (ring == nullptr) ring = make_ring(tr->ring, rt->cfg.ring_records);
  if (ring == nullptr) {
    bump(tr->counters.dropped_ring_full);
    return nullptr;
  }
  tr->fast = ring;
  OpRecord* slot = ring->try_reserve();
  return slot != nullptr ? slot : publish_full(tr);
}

OpRecord* publish_full(ThreadRing* tr) noexcept {
  // The steady ring is full (and not bursting: its records are all older than
  // anything in the burst ring, which is empty). Move to the burst ring, made
  // at the first time this happens.
  Runtime* rt = runtime();
  // Only this thread writes the pointer; relaxed read of our own store.
  SpscRing<OpRecord>* burst = tr->burst.load(std::memory_order_relaxed);
  if (burst == nullptr && rt != nullptr && rt->cfg.burst_records > 0 && !tr->no_burst_ring) {
    // A place among the process's burst rings (relaxed: a count, nothing is
    // published through it; the ring itself is by make_ring's release).
    uint32_t n = rt->n_burst_rings.load(std::memory_order_relaxed);
    while (n < rt->cfg.burst_rings &&
           !rt->n_burst_rings.compare_exchange_weak(n, n + 1, std::memory_order_relaxed, std::memory_order_relaxed)) {
    }
    if (n < rt->cfg.burst_rings) burst = make_ring(tr->burst, rt->cfg.burst_records);
    tr->no_burst_ring = burst == nullptr;  // asked once: later full rings drop at once
  }
  OpRecord* slot = burst != nullptr ? burst->try_reserve() : nullptr;
  if (slot == nullptr) {
    bump(tr->counters.dropped_ring_full);
    return nullptr;
  }
  tr->bursting = true;
  tr->fast = nullptr;
  return slot;
}

void publish_wake(Runtime* rt, SpscRing<OpRecord>* ring) noexcept {
  // One wake per drain cycle: the dump thread clears the flag (release) just
  // before it drains (drain_records, completion.cpp); acq_rel here pairs with
  // that store.
  if (ring->refresh_fill() >= rt->high_water_mark && rt->wake_pending.exchange(1, std::memory_order_acq_rel) == 0)
    rt->sink->wake();
}

}  // namespace ni::core
