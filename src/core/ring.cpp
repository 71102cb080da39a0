// The registry of per-thread rings: a thread's ring record is created and
// linked into its runtime's list at the thread's first event, and its ring at
// its first record; both live until the runtime is freed (Runtime::~Runtime).
// The inline fast path of publishing is in ring.h; this is its slow half.
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
SpscRing<OpRecord>* ring_of(Runtime* rt, ThreadRing* tr) noexcept {
  // Only this thread writes the pointer; relaxed read of our own store.
  SpscRing<OpRecord>* ring = tr->ring.load(std::memory_order_relaxed);
  if (ring != nullptr) [[likely]] return ring;
  ring = new (std::nothrow) SpscRing<OpRecord>(static_cast<size_t>(rt->cfg.ring_records));
  if (ring != nullptr && ring->capacity() == 0) {
    delete ring;
    ring = nullptr;
  }
  // Release pairs with the dump thread's acquire load in drain_records().
  if (ring != nullptr) tr->ring.store(ring, std::memory_order_release);
  return ring;
}
}  // namespace

OpRecord* publish_begin_slow(ThreadRing** out) noexcept {
  Runtime* rt = runtime();
  if (rt == nullptr) return nullptr;
  ThreadRing* tr = tls_ring != nullptr && tls_gen == rt->generation ? tls_ring : this_thread();
  *out = tr;
  if (tr == &g_dummy_ring) return nullptr;
  SpscRing<OpRecord>* ring = ring_of(rt, tr);
  OpRecord* slot = ring ? ring->try_reserve() : nullptr;
  if (slot == nullptr) bump(tr->counters.dropped_ring_full);
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
