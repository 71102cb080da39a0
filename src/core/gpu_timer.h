// GPU times for copy-engine collectives (ABI v6, NCCL 2.29+). NCCL's CeColl
// start and stop bracket the *enqueuing* of the copies on ceColl.stream, not
// their execution (profiler-abi.md §9). To time the execution, a CUDA event
// is recorded on that stream at CeColl start and another at CeColl stop; the
// consumer (dump thread) later asks the driver whether the second one has
// completed and how far apart the two are.
//
// Only through the CUDA driver already loaded in the process (NCCL's
// libcuda.so.1, found with RTLD_NOLOAD): the plugin never loads or links CUDA.
// No driver, no current context, no stream, or any driver call failing: the
// op keeps its CPU (enqueue) timing, and says so in its `timing` field.
//
// Threads: take()/stop() on the thread that launches the collective (NCCL's
// app thread), poll()/give() on the consumer. A pair belongs to whoever set
// its state to kTaken (CAS from kFree) until it is given back (release store
// of kFree); its fields are handed from the app thread to the consumer with
// the op's record (the ring's release/acquire).
#pragma once

#include <atomic>
#include <cstdint>

namespace ni::core {

class GpuTimers {
 public:
  static constexpr int kPairs = 255;  // a record names its pair in one byte (index + 1)

  GpuTimers() = default;
  GpuTimers(const GpuTimers&) = delete;
  GpuTimers& operator=(const GpuTimers&) = delete;
  ~GpuTimers();

  // Binds the driver's entry points if libcuda.so.1 is loaded; false if not.
  bool bind() noexcept;
  bool available() const noexcept { return ok_.load(std::memory_order_acquire); }  // pairs with bind()/shutdown()

  // App thread, CeColl start: a pair with its start event recorded on
  // `stream` (in the calling thread's current context), or -1.
  int take(void* stream) noexcept;
  // App thread, CeColl stop: records the stop event. False (and the pair
  // given back) when the driver refuses.
  bool stop(int idx, void* stream) noexcept;

  enum class Poll { kPending, kDone, kFailed };
  // Consumer: whether the copies between the two events have run, and then
  // their GPU time in ns.
  Poll poll(int idx, uint64_t* ns) noexcept;
  // Any thread that owns the pair: gives it back for reuse.
  void give(int idx) noexcept;

  // The last finalize: no new pairs; the events of free pairs are destroyed
  // (in their context, pushed and popped around the call).
  void shutdown() noexcept;

  // Statistics (relaxed): ops timed by events, and ops that wanted a pair or
  // a driver call and fell back to CPU timing.
  std::atomic<uint64_t> timed{0}, fallbacks{0};

 private:
  enum : uint32_t { kFree = 0, kTaken = 1, kRetired = 2 };
  struct Pair {
    std::atomic<uint32_t> state{kFree};
    void* start = nullptr;  // CUevent
    void* stop = nullptr;   // CUevent
    void* ctx = nullptr;    // CUcontext the events belong to (nullptr: not created yet)
  };
  // Driver API entry points (CUresult is an int, 0 = CUDA_SUCCESS).
  using EventCreate = int (*)(void**, unsigned);
  using EventRecord = int (*)(void*, void*);
  using EventQuery = int (*)(void*);
  using EventElapsed = int (*)(float*, void*, void*);
  using EventDestroy = int (*)(void*);
  using CtxGet = int (*)(void**);
  using CtxPush = int (*)(void*);
  using CtxPop = int (*)(void**);
  using CtxSet = int (*)(void*);
  EventCreate create_ = nullptr;
  EventRecord record_ = nullptr;
  EventQuery query_ = nullptr;
  EventElapsed elapsed_ = nullptr;
  EventDestroy destroy_ = nullptr;
  CtxGet ctx_get_ = nullptr;
  CtxPush ctx_push_ = nullptr;
  CtxPop ctx_pop_ = nullptr;
  CtxSet ctx_set_ = nullptr;
  void* lib_ = nullptr;
  void* consumer_ctx_ = nullptr;  // the context last made current on the consumer thread
  std::atomic<bool> ok_{false};
  std::atomic<uint32_t> hint_{0};  // where take() looks first (relaxed: a hint)
  Pair pairs_[kPairs];
};

}  // namespace ni::core
