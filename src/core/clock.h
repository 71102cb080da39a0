// CPU time on the hot path: one TSC (x86-64) or virtual-counter (aarch64)
// read, converted to CLOCK_MONOTONIC nanoseconds with a calibration that the
// dump thread keeps refining. No syscall, no clock_gettime on the hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace ni::clk {

inline uint64_t read_ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

inline uint64_t mono_syscall_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Anchor (ticks, mono ns) and slope (ns per tick, 32.32 fixed point),
// published under a sequence lock: readers retry if the writer (the one
// calibrating thread) was mid-update.
struct Calibration {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint64_t> t0{0};
  std::atomic<uint64_t> m0{0};
  std::atomic<uint64_t> mult{1ull << 32};
};
extern Calibration g_cal;

inline uint64_t ticks_to_ns(uint64_t t) noexcept {
  for (;;) {
    // Sequence lock without fences (ThreadSanitizer understands it): the
    // writer stores seq odd, then the fields with release, then seq even with
    // release. A field read here (acquire) that comes from an update makes
    // that update's odd seq store happen-before the re-read below, so a torn
    // read always sees a changed seq and retries.
    const uint32_t s1 = g_cal.seq.load(std::memory_order_acquire);
    const uint64_t t0 = g_cal.t0.load(std::memory_order_acquire);
    const uint64_t m0 = g_cal.m0.load(std::memory_order_acquire);
    const uint64_t mult = g_cal.mult.load(std::memory_order_acquire);
    // Acquire pairs with the final release store of seq in publish().
    if ((s1 & 1u) == 0 && s1 == g_cal.seq.load(std::memory_order_acquire)) {
      __int128 d = static_cast<__int128>(static_cast<int64_t>(t - t0)) * static_cast<__int128>(mult);
      return static_cast<uint64_t>(static_cast<__int128>(m0) + (d >> 32));
    }
  }
}

inline uint64_t now_ns() noexcept { return ticks_to_ns(read_ticks()); }

// Initial calibration (spins about 2 ms). Called once per runtime start.
void calibrate() noexcept;
// Re-anchors at "now" and improves the slope from the long baseline since
// calibrate(). Called by one thread at a time (the dump thread).
void refine() noexcept;

}  // namespace ni::clk
