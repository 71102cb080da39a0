#include "src/core/clock.h"

namespace ni::clk {

Calibration g_cal;

namespace {
// First anchor of the current calibration, for the long-baseline slope.
uint64_t g_base_t = 0;
uint64_t g_base_m = 0;

// A (ticks, mono) pair taken as close together as we can: the read with the
// smallest tick gap around clock_gettime wins.
void sample(uint64_t* t, uint64_t* m) noexcept {
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    uint64_t a = read_ticks();
    uint64_t mm = mono_syscall_ns();
    uint64_t b = read_ticks();
    if (b - a < best_gap) {
      best_gap = b - a;
      *t = a + (b - a) / 2;
      *m = mm;
    }
  }
}

void publish(uint64_t t0, uint64_t m0, uint64_t mult) noexcept {
  // Single writer (first init, then the dump thread). Odd seq marks the
  // update; the release stores of the fields pair with the reader's acquire
  // loads of them, the final release store with its acquire re-read of seq.
  const uint32_t s = g_cal.seq.load(std::memory_order_relaxed);
  g_cal.seq.store(s + 1, std::memory_order_relaxed);
  g_cal.t0.store(t0, std::memory_order_release);
  g_cal.m0.store(m0, std::memory_order_release);
  g_cal.mult.store(mult, std::memory_order_release);
  g_cal.seq.store(s + 2, std::memory_order_release);
}

uint64_t slope(uint64_t dt, uint64_t dm) noexcept {
  if (dt == 0) return 1ull << 32;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(dm) << 32) / dt);
}
}  // namespace

void calibrate() noexcept {
  uint64_t t1 = 0, m1 = 0, t2 = 0, m2 = 0;
  sample(&t1, &m1);
  do {
    sample(&t2, &m2);
  } while (m2 - m1 < 2000000);  // 2 ms baseline
  g_base_t = t1;
  g_base_m = m1;
  publish(t2, m2, slope(t2 - t1, m2 - m1));
}

void refine() noexcept {
  uint64_t t = 0, m = 0;
  sample(&t, &m);
  if (t <= g_base_t || m <= g_base_m) return;
  publish(t, m, slope(t - g_base_t, m - g_base_m));
}

}  // namespace ni::clk
