// The per-thread rings: a lock-free single-producer / single-consumer ring of
// fixed-size records (SpscRing), and the registry of every thread's ring that
// the consumer walks (ThreadRing, this_thread(), publishing; ring.cpp).
//
// SpscRing contract
// - Producer: exactly one thread (the thread that owns the ring) calls
//   try_push() or try_reserve()/commit(). It never blocks; a full ring
//   returns false/nullptr and the caller counts a drop.
// - Consumer: exactly one thread at a time (the dump thread, or a test, or the
//   final drain once the dump thread is joined) calls drain(). It hands the
//   records out in bulk and then publishes the new tail.
// - Indices are 64-bit and never wrap in practice; slot = index & mask.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "include/nccl_inspector/counters.h"
#include "src/core/record.h"
#include "src/core/runtime.h"

namespace ni {

template <typename T>
class SpscRing {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // capacity is rounded up to a power of two (minimum 2).
  explicit SpscRing(size_t capacity) {
    size_t c = 2;
    while (c < capacity) c <<= 1;
    mask_ = c - 1;
    slots_ = std::unique_ptr<T[]>(new (std::nothrow) T[c]);
    if (!slots_) mask_ = 0;  // allocation failed: a ring that is always full
  }
  SpscRing(const SpscRing&) = delete;
  SpscRing& operator=(const SpscRing&) = delete;

  size_t capacity() const noexcept { return slots_ ? mask_ + 1 : 0; }

  // Producer only. Returns false (and writes nothing) when full.
  bool try_push(const T& v) noexcept {
    // Own index: only this thread writes head_, so relaxed is enough.
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ >= capacity()) {
      // Pairs with the release store of tail_ in drain(): slots up to the
      // loaded tail have been fully read by the consumer and may be reused.
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ >= capacity()) return false;
    }
    slots_[head & mask_] = v;
    // Pairs with the acquire load of head_ in drain()/size(): publishes the
    // slot contents written above.
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Producer only: the slot the next push would fill, to be written in place
  // and published with commit(); nullptr when full. Nothing is visible to the
  // consumer before commit().
  T* try_reserve() noexcept {
    // Own index: only this thread writes head_.
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - cached_tail_ >= capacity()) {
      // Pairs with the release store of tail_ in drain().
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head - cached_tail_ >= capacity()) return nullptr;
    }
    return &slots_[head & mask_];
  }
  // Returns the fill level as the producer last knew the consumer's position:
  // an upper bound (the consumer may have drained more since).
  size_t commit() noexcept {
    // Own index: only this thread writes head_.
    const uint64_t head = head_.load(std::memory_order_relaxed) + 1;
    // Pairs with the acquire load of head_ in drain()/size(): publishes the
    // slot written in place since try_reserve().
    head_.store(head, std::memory_order_release);
    return static_cast<size_t>(head - cached_tail_);
  }
  // Producer only: the fill level after re-reading the consumer's position.
  size_t refresh_fill() noexcept {
    // Pairs with the release store of tail_ in drain().
    cached_tail_ = tail_.load(std::memory_order_acquire);
    // Own index: only this thread writes head_.
    return static_cast<size_t>(head_.load(std::memory_order_relaxed) - cached_tail_);
  }

  // Consumer only. Calls fn(T*, n) for contiguous runs of records, at most
  // max records in total (the consumer may finish them in place before using
  // them), then frees their slots. Returns the count.
  template <typename Fn>
  size_t drain(Fn&& fn, size_t max = SIZE_MAX) noexcept(noexcept(fn(static_cast<T*>(nullptr), size_t{}))) {
    // Own index: only the consumer writes tail_.
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    // Pairs with the release store of head_ in try_push()/commit(): every slot
    // below head is fully written.
    const uint64_t head = head_.load(std::memory_order_acquire);
    uint64_t n = head - tail;
    if (n > max) n = max;
    if (n == 0) return 0;
    const uint64_t first = tail & mask_;
    const uint64_t run1 = (first + n <= capacity()) ? n : capacity() - first;
    fn(&slots_[first], static_cast<size_t>(run1));
    if (run1 < n) fn(&slots_[0], static_cast<size_t>(n - run1));
    // Pairs with the acquire loads of tail_ in try_push()/try_reserve()/
    // refresh_fill(): the slots are read and may be overwritten now.
    tail_.store(tail + n, std::memory_order_release);
    return static_cast<size_t>(n);
  }

  // Records pushed so far (the producer's index); any thread.
  uint64_t pushed() const noexcept {
    return head_.load(std::memory_order_acquire);  // pairs with the release store in commit()
  }

  // Records drained so far (the consumer's index); exact on the consumer's
  // thread. Read before pushed() for a fill level that is never negative.
  uint64_t drained() const noexcept {
    return tail_.load(std::memory_order_acquire);  // pairs with the release store in drain()
  }

  // Approximate fill level; any thread. Both loads acquire so the difference
  // is never negative in a way that matters (head read last).
  size_t size() const noexcept {
    // Pairs with the release store in drain().
    const uint64_t t = tail_.load(std::memory_order_acquire);
    // Pairs with the release store in try_push()/commit().
    const uint64_t h = head_.load(std::memory_order_acquire);
    return h >= t ? static_cast<size_t>(h - t) : 0;
  }

 private:
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer-private
  alignas(kCacheLine) std::atomic<uint64_t> tail_{0};
  alignas(kCacheLine) size_t mask_ = 0;
  std::unique_ptr<T[]> slots_;
};

}  // namespace ni

namespace ni::core {

// ------------------------------------------------------------ thread counters

// Per-thread counters: written only by the owning thread (relaxed), read by
// the dump thread (relaxed) for statistics. Exception: ring_high_water is written
// only by the ring's consumer (drain_records).
struct ThreadCounters {
  // One per thread-kept row of include/nccl_inspector/counters.h, named as there.
#define NI_THREAD_COUNTER(id, key, group, origin, ...) NI_COUNTER_IF_THREAD(origin, std::atomic<uint64_t> id{0};)
  NI_COUNTERS(NI_THREAD_COUNTER)
#undef NI_THREAD_COUNTER
};

__attribute__((always_inline)) inline void bump(std::atomic<uint64_t>& c) noexcept {
  // Single writer (the owning thread); relaxed load+store, no locked op.
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// One thread's rings and counters, registered in its runtime's list
// (Runtime::rings) at the thread's first event; freed with the runtime.
//
// Two rings: the steady one (NCCL_INSPECTOR_RING_RECORDS), which every record
// goes through while the dump thread keeps up, and a burst ring
// (NCCL_INSPECTOR_BURST_RECORDS) made at the thread's first full steady ring.
// When the steady ring is full the producer switches to the burst ring and
// stays there until the consumer has taken every burst record; only then does
// it go back (the steady ring is empty by then: the consumer drains it first).
// So the records of a thread are handed out in the order it wrote them, and a
// thread that never bursts never touches more than the steady ring.
struct alignas(kCacheLine) ThreadRing {  // own cache lines: no false sharing between threads
  ThreadCounters counters;
  // Created at the thread's first record / first full steady ring (ring.cpp);
  // published with release, read with acquire by the consumer (drain_records,
  // stats).
  std::atomic<SpscRing<OpRecord>*> ring{nullptr};
  std::atomic<SpscRing<OpRecord>*> burst{nullptr};
  // Producer-private: the steady ring while records go there, nullptr while
  // bursting or before the first record (the inline path then takes the slow one).
  SpscRing<OpRecord>* fast = nullptr;
  bool bursting = false;       // producer-private
  bool no_burst_ring = false;  // producer-private: none was left for this thread
  ThreadRing* next = nullptr;  // the registry (Runtime::rings), guarded by Runtime::ring_mu
  // Relaxed: rings are freed with their runtime, after the dump thread (the
  // only other reader) was joined and no event thread can reach it.
  ~ThreadRing() {
    delete ring.load(std::memory_order_relaxed);
    delete burst.load(std::memory_order_relaxed);
  }
};

// This thread's ring record (registered on first use).
__attribute__((noinline)) ThreadRing* this_thread() noexcept;

// This thread's ring record in the runtime of generation tls_gen.
extern thread_local constinit ThreadRing* tls_ring;
extern thread_local constinit uint64_t tls_gen;
__attribute__((noinline)) OpRecord* publish_begin_slow(ThreadRing** tr) noexcept;
__attribute__((noinline)) OpRecord* publish_full(ThreadRing* tr) noexcept;
__attribute__((noinline)) void publish_wake(Runtime* rt, SpscRing<OpRecord>* ring) noexcept;

// In-place publishing: a slot of this thread's rings to fill (nullptr when
// both are full, the drop counted), then publish_commit(). Inline: the common
// case is a registered thread whose steady ring has room.
inline OpRecord* publish_begin(ThreadRing** out) noexcept {
  Runtime* rt = runtime();
  ThreadRing* tr = tls_ring;
  if (rt == nullptr || tr == nullptr || tls_gen != rt->generation) [[unlikely]] return publish_begin_slow(out);
  SpscRing<OpRecord>* ring = tr->fast;
  if (ring == nullptr) [[unlikely]] return publish_begin_slow(out);
  *out = tr;
  OpRecord* slot = ring->try_reserve();
  if (slot == nullptr) [[unlikely]] return publish_full(tr);
  return slot;
}

inline void publish_commit(ThreadRing* tr) noexcept {
  Runtime* rt = runtime();
  SpscRing<OpRecord>* ring = tr->fast;
  // Bursting: the slot came from the burst ring (only this thread writes the
  // pointer; relaxed read of our own store).
  if (ring == nullptr) [[unlikely]] ring = tr->burst.load(std::memory_order_relaxed);
  // The fill from the producer's cached view of the consumer is an upper
  // bound; only when it crosses the mark do we read the consumer's index
  // (another core's cache line) to confirm.
  if (ring->commit() >= rt->high_water_mark && rt->sink) [[unlikely]] publish_wake(rt, ring);
}

}  // namespace ni::core
