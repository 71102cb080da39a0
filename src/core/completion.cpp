// One op's completion, in one place: from the moment its count-down reaches
// zero (or the reclaimer gives up on it) to a record a sink can use.
//
//  1. claim: whoever takes `remaining` to zero (complete_from_handle(), called
//     from tracker.cpp's release()) or the reclaimer (reclaim_ops(), at the
//     op timeout or the comm's finalize) claims the op with a CAS on `claim`
//     ((generation << 1) | claimed): exactly once per generation; a claim
//     with a stale view of a recycled slot fails;
//  2. record: the claimer builds the record in place in its own thread's ring
//     slot (ring.h) from the op slot, frees the slot and publishes the record.
//     To keep this short on the event path, it writes each channel's offset
//     and length and leaves the sums, extremes and counts (kFlagChannelSums)
//     and the enqueue time's conversion (kFlagEnqueueTicks) to step 3;
//  3. finish: the consumer (the dump thread) drains the rings and finishes
//     each record in place (finish_record()) before any sink sees it.
//
// Hot path (docs/architecture.md): no locks, no allocation; complete_body()
// and its writers are compiled into complete_from_handle(), whose common path
// makes no call (the ring's publishing is inline, ring.h).
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "src/core/clock.h"
#include "src/core/consumer.h"
#include "src/core/ring.h"
#include "src/core/tracker.h"

namespace ni::core {

// ====================================================== step 2: the record

namespace {

// A CE op's CUDA event pair leaves the slot: into the record (index + 1),
// for the consumer to poll, when both events were recorded; else back to the
// pool (an op reclaimed or finalized before its stop, or a dropped record).
__attribute__((noinline)) uint8_t take_gpu_pair(OpSlot& s, bool keep) noexcept {
  // Relaxed: read after the claim's acquire; the slot is ours until free_op().
  const int pair = s.gpu_pair.load(std::memory_order_relaxed);
  s.gpu_pair.store(-1, std::memory_order_relaxed);  // a free slot has none (its next owner starts from that)
  const bool stopped = s.coll_stopped.load(std::memory_order_relaxed) != 0;  // as above
  Runtime* rt = runtime();
  if (keep && stopped && pair >= 0 && pair < GpuTimers::kPairs) return static_cast<uint8_t>(pair + 1);
  if (rt != nullptr && rt->gpu_timers != nullptr) rt->gpu_timers->give(pair);
  return 0;
}

__attribute__((always_inline)) inline void free_op(Context& c, uint32_t slot, OpSlot& s) noexcept {
  // Release pairs with the acquire gen loads in op_of(): after this, old
  // handles no longer validate.
  // The claim (complete_body()) makes this thread the only writer of gen: a plain
  // load and store, no locked instruction.
  s.gen.store(s.gen.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  s.in_use.store(0, std::memory_order_relaxed);  // reclaimer hint only; gen is the truth
  // The KernelCh line is zero while the slot is free, so that the next op's
  // start does not write it (it stays in the progress thread's cache).
  // Relaxed: published to the next owner by the pool's release push below.
  s.started_mask.store(0, std::memory_order_relaxed);
  s.stopped_mask.store(0, std::memory_order_relaxed);
  s.ch_lo.store(UINT64_MAX, std::memory_order_relaxed);
  s.ch_mode.store(kChOpen, std::memory_order_relaxed);
  s.user_tag.store(0, std::memory_order_relaxed);  // as above
  c.ops.free(slot);
}

inline uint32_t sat32(uint64_t v) noexcept { return v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

// Per-channel times for v3 (proxy-observed ticks) and for ops with more
// channels than a record lists.
__attribute__((noinline)) bool channel_times_slow(OpRecord& r, OpSlot& s, uint64_t mask, uint64_t stopped,
                                                  bool gpu) noexcept {
  uint64_t lo = UINT64_MAX, hi = 0, busy = 0;
  uint32_t maxd = 0, mind = UINT32_MAX;
  bool backwards = false;
  int i = 0;
  for (uint64_t m = mask; m != 0; m &= m - 1) {
    const int ch = std::countr_zero(m);
    // Relaxed: as the masks in complete_body().
    uint64_t a = s.ch_start[ch].load(std::memory_order_relaxed);
    uint64_t b = s.ch_stop[ch].load(std::memory_order_relaxed);
    if (!gpu) {
      a = clk::ticks_to_ns(a);
      b = b ? clk::ticks_to_ns(b) : 0;
    }
    backwards |= gpu && ((stopped >> ch) & 1) != 0 && b != 0 && b < a;  // see write_channel_times()
    if (b < a) b = a;  // never stopped (or no stop stamp): zero length
    lo = a < lo ? a : lo;
    hi = b > hi ? b : hi;
    const uint32_t d = sat32(b - a);
    busy += d;
    maxd = d > maxd ? d : maxd;
    mind = d < mind ? d : mind;
    if (i < kRecordChannels) {
      // Absolute start for now; made relative to `lo` below.
      r.channels[i].start_off_ns = static_cast<uint32_t>(a);
      r.channels[i].dur_ns = d;
      ++i;
    }
  }
  for (int k = 0; k < i; ++k) r.channels[k].start_off_ns -= static_cast<uint32_t>(lo);  // modulo 2^32: exact
  r.start_ns = lo;
  r.end_ns = hi;
  r.busy_ns = busy;
  r.max_channel_ns = maxd;
  r.min_channel_ns = mind == UINT32_MAX ? 0 : mind;
  r.timing = static_cast<uint8_t>(gpu ? TimingSource::kGpu : TimingSource::kProxyCpu);
  if (std::popcount(mask) > kRecordChannels) r.flags |= kFlagChannelsTruncated;
  return !backwards;
}

// Zeroes the record from the end of its first line to its channel list (the
// ring slot holds an older record), with plain 16-byte stores: a string
// instruction would cost one instruction per 8 bytes.
inline void zero_after_start(OpRecord& r) noexcept {
  char* p = reinterpret_cast<char*>(&r) + sizeof(OpStart);
  constexpr size_t n = offsetof(OpRecord, channels) - sizeof(OpStart);
  static_assert(n == 128);
#if defined(__SSE2__)
  const __m128i z = _mm_setzero_si128();
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 0), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 32), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 48), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 64), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 80), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 96), z);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 112), z);
#else
  std::memset(p, 0, n);
#endif
}

// The record's first line is the start's cache line as it is (same layout);
// the rest up to the channel list is zeroed (the ring slot holds an older
// record) and filled by the writers below.
__attribute__((always_inline)) inline void write_header(OpRecord& r, const OpSlot& s,
                                                        bool reclaimed) noexcept {
  std::memcpy(static_cast<void*>(&r), &s.start, sizeof(OpStart));
  zero_after_start(r);
  // Relaxed: written before the handle was published (see start_coll()).
  // Collectives: the issue index; P2P: the group number (start_p2p).
  if (r.kind != static_cast<uint8_t>(OpKind::kCe)) r.issue = s.issue.load(std::memory_order_relaxed);
  if (reclaimed) r.flags |= kFlagReclaimed;
  // Relaxed: written before the handle was published (start_coll() and the
  // others); a line the completer reads anyway (the channel masks).
  r.user_tag = s.user_tag.load(std::memory_order_relaxed);
}

// Whether a stopped channel's stop stamp is before its start (one that ended
// without a stamp, 0, is not: it has no length). Off the common path: only
// ops with a channel never stopped or stopped without a stamp get here.
__attribute__((noinline, cold)) bool stamps_backwards(const OpSlot& s, uint64_t stopped) noexcept {
  for (uint64_t m = stopped; m != 0; m &= m - 1) {
    const int ch = std::countr_zero(m);
    // Relaxed: as the masks in complete_body().
    const uint64_t b = s.ch_stop[ch].load(std::memory_order_relaxed);
    if (b != 0 && b < s.ch_start[ch].load(std::memory_order_relaxed)) return true;  // as above
  }
  return false;
}

// The channels' times. v4+: GPU pTimer ns; v3: ticks observed by the proxy.
// False when a channel's GPU stop stamp is before its start: NCCL handed the
// op stamps that are not its own (NCCL 2.29+'s Broadcast-on-AllGatherV bug
// does it, seconds apart, NVIDIA/nccl PR #2369); the caller times it by the
// CPU instead.
__attribute__((always_inline)) inline bool write_channel_times(OpRecord& r, const Context& c, OpSlot& s,
                                                               uint64_t mask, uint64_t stopped,
                                                               bool reclaimed) noexcept {
  const bool gpu = c.abi >= 4;
  const int n = std::popcount(mask);
  if (!(gpu && n <= kRecordChannels && !reclaimed)) [[unlikely]]
    return channel_times_slow(r, s, mask, stopped, gpu);
  // Each channel's offset from the earliest start (kept by the KernelCh
  // starts) and its length; the counts, sums and extremes are left to the
  // consumer (finish_record(), kFlagChannelSums), with the stopped channels
  // in busy_ns meanwhile (a channel stops only once started: channel_mask is
  // the started ones).
  r.busy_ns = stopped;
  // Relaxed loads: as the masks in complete_body().
  const uint64_t lo = s.ch_lo.load(std::memory_order_relaxed);
  ChannelTime* out_ch = r.channels;
  const std::atomic<uint64_t>* starts = s.ch_start;
  const std::atomic<uint64_t>* stops = s.ch_stop;
  uint64_t diffs = 0;  // OR of (stop - start): the top bit says a stop stamp is before its start, or none
  for (uint64_t m = mask; m != 0; m &= m - 1, ++out_ch) {
    const size_t ch = static_cast<size_t>(__builtin_ctzll(m));
    const uint64_t a = starts[ch].load(std::memory_order_relaxed);  // as above
    const uint64_t b = stops[ch].load(std::memory_order_relaxed);   // as above
    const uint64_t d = b - a;  // wraps when the stop is before the start (never stopped: 0)
    diffs |= d;
    const uint64_t len = static_cast<int64_t>(d) < 0 ? 0 : d;  // such a channel has no length
    out_ch->start_off_ns = static_cast<uint32_t>(a - lo);
    out_ch->dur_ns = static_cast<uint32_t>(len > UINT32_MAX ? UINT32_MAX : len);
  }
  if (static_cast<int64_t>(diffs) < 0 && stamps_backwards(s, mask & stopped)) [[unlikely]] return false;
  r.start_ns = lo;
  r.flags |= kFlagChannelSums;
  r.timing = static_cast<uint8_t>(TimingSource::kGpu);
  return true;
}

// An op whose GPU stamps ran backwards: from now on the comm's KernelCh stamps
// are not trusted (Context::desync_ticks), as after a Send/Recv to itself. A
// CAS (relaxed: desync_ticks orders nothing else): the completing thread is not
// the comm's issuing thread, which sets it with a plain store at such a call.
__attribute__((noinline, cold)) void note_backwards_stamps(Context& c) noexcept {
  uint64_t none = UINT64_MAX;
  c.desync_ticks.compare_exchange_strong(none, clk::read_ticks(), std::memory_order_relaxed);
}

// An op without channels: its network time (first ProxyOp start to last
// stop) or else its enqueue (start to stop), in CPU time.
__attribute__((always_inline)) inline void write_cpu_times(OpRecord& r, const Context& c,
                                                           const OpSlot& s) noexcept {
  // Relaxed: written before this op's last acq_rel decrement of `remaining`, which the claim follows.
  const uint64_t net_first = c.net ? s.net_first.load(std::memory_order_relaxed) : UINT64_MAX;
  const uint64_t net_last = c.net ? s.net_last.load(std::memory_order_relaxed) : 0;  // as above
  if (net_first != UINT64_MAX && net_last >= net_first) {
    r.start_ns = clk::ticks_to_ns(net_first);
    r.end_ns = clk::ticks_to_ns(net_last);
    r.timing = static_cast<uint8_t>(TimingSource::kNetCpu);
  } else {
    const uint64_t stop_t = s.stop_ticks.load(std::memory_order_relaxed);                   // as above
    r.start_ns = clk::ticks_to_ns(s.start_ticks.load(std::memory_order_relaxed));          // as above
    r.end_ns = stop_t ? clk::ticks_to_ns(stop_t) : r.start_ns;
    r.timing = static_cast<uint8_t>(stop_t ? TimingSource::kEnqueueCpu : TimingSource::kNone);
  }
}

// Whether the op's KernelCh stamps may be another work's (Context::desync_ticks):
// it started after the call that put NCCL's counters out of step, or it is a
// part of that call's launch group. Relaxed: see there.
__attribute__((always_inline)) inline bool desynced(const Context& c, const OpSlot& s, const OpRecord& r) noexcept {
  const uint64_t t = c.desync_ticks.load(std::memory_order_relaxed);
  if (t == UINT64_MAX) [[likely]] return false;
  const uint64_t start = s.start_ticks.load(std::memory_order_relaxed);  // relaxed: written at its start
  if (start >= t) return true;
  // The group's other parts started just before it, in the same launch.
  // Group numbers count per launching thread (a non-blocking comm's groups
  // launch on threads of their own), so an older group of another thread can
  // have the same number: only parts started within 10 ms of the call count.
  const uint32_t g = c.desync_group.load(std::memory_order_relaxed);
  return g != 0 && r.kind == static_cast<uint8_t>(OpKind::kP2p) && r.issue == g &&
         clk::ticks_to_ns(t) - clk::ticks_to_ns(start) < 10'000'000;
}

// A CPU tick count as 0.1 us units, saturating.
inline uint32_t tenths_of_us(uint64_t ticks) noexcept {
  const uint64_t t = (clk::ticks_to_ns(ticks) - clk::ticks_to_ns(0)) / 100;
  return t > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(t);
}

// The HCAs the op's NetPlugin events named (only when network events were asked for).
__attribute__((always_inline)) inline void write_hcas(OpRecord& r, const Context& c,
                                                      const OpSlot& s) noexcept {
  int nh = 0;
  if (c.net) [[unlikely]] {
    for (auto& h : s.hca) {
      // Relaxed: written before the children's acq_rel decrements of
      // `remaining`, which the claim follows.
      const uint32_t dev = h.dev.load(std::memory_order_relaxed);
      if (dev == UINT32_MAX) continue;
      r.hcas[nh].device = static_cast<uint16_t>(dev);
      r.hcas[nh].bytes = h.bytes.load(std::memory_order_relaxed);  // as above
      r.hcas[nh].wrs = h.wrs.load(std::memory_order_relaxed);      // as above
      const uint64_t qps = h.qp_bits.load(std::memory_order_relaxed);  // as above
      r.hcas[nh].qps = static_cast<uint16_t>(std::popcount(qps));
      // Wire time: known when every send work request it saw completed.
      const int64_t busy = h.wire_ticks.load(std::memory_order_relaxed);  // as above
      const bool closed = h.wire_open.load(std::memory_order_relaxed) == 0;  // as above
      r.hca_wire_100ns[nh] = closed && busy > 0 ? tenths_of_us(static_cast<uint64_t>(busy)) : 0;
      ++nh;
    }
  }
  r.n_hcas = static_cast<uint8_t>(nh);
}

// Network statistics and the transport (only when asked for: no ProxyOp is
// tracked otherwise).
__attribute__((always_inline)) inline void write_network(OpRecord& r, const Context& c, const OpSlot& s,
                                                         uint64_t mask) noexcept {
  // Relaxed: statistics written before the children's acq_rel decrements of
  // `remaining`, which the claim follows.
  const uint32_t nops = c.net ? s.net_ops.load(std::memory_order_relaxed) : 0;
  r.net_ops = nops;
  if (nops != 0) [[unlikely]] {
    r.net_send_bytes = s.net_send_bytes.load(std::memory_order_relaxed);  // as above
    r.net_recv_bytes = s.net_recv_bytes.load(std::memory_order_relaxed);  // as above
    r.net_steps = s.net_steps.load(std::memory_order_relaxed);            // as above
    r.net_gpu_wait_100ns = tenths_of_us(s.net_gpu_wait.load(std::memory_order_relaxed));  // as above
    r.net_wait_100ns = tenths_of_us(s.net_wait.load(std::memory_order_relaxed));          // as above
    r.net_flush_100ns = tenths_of_us(s.net_flush.load(std::memory_order_relaxed));        // as above
    const uint64_t f = s.net_first.load(std::memory_order_relaxed);  // as above
    const uint64_t l = s.net_last.load(std::memory_order_relaxed);   // as above
    r.net_first_ns = f == UINT64_MAX ? 0 : clk::ticks_to_ns(f);
    r.net_last_ns = l ? clk::ticks_to_ns(l) : 0;
    const uint32_t peers = s.net_peers_hash.load(std::memory_order_relaxed);  // as above
    r.net_peer_count = static_cast<uint16_t>(std::popcount(peers));
    r.transport = static_cast<uint8_t>(Transport::kNetwork);
  } else {
    // No proxy traffic means intra-node (NVLink/P2P/SHM) only when we asked
    // for network events, or when the whole comm is on one node.
    r.transport = mask != 0 ? c.quiet_transport : static_cast<uint8_t>(Transport::kUnknown);
  }
  write_hcas(r, c, s);
}

// ABI v7 kernel phases (opt-in, so off the common path): per phase, the
// shortest, median and longest channel time; and the phase bookkeeping back
// to zero, as the KernelCh line must be for the slot's next op. Only GPU-timed
// ops keep them: an op whose stamps are not its own has phases that are not either.
__attribute__((noinline, cold)) void clear_phases(OpSlot& s) noexcept {
  // Relaxed: published to the slot's next owner as free_op()'s stores.
  for (auto& d : s.ph_done) d.store(0, std::memory_order_relaxed);
  s.ph_truncated.store(0, std::memory_order_relaxed);  // as above
  s.ph_any.store(0, std::memory_order_relaxed);        // as above
}
__attribute__((noinline, cold)) void write_phases(OpRecord& r, OpSlot& s, bool keep) noexcept {
  PhaseTimes& out = r.phases;
  bool any = false;
  for (int p = 0; p < kPhases; ++p) {
    // Relaxed: as the masks in complete_body().
    const uint32_t done = s.ph_done[p].load(std::memory_order_relaxed);
    uint32_t v[kPhaseChannels];
    int n = 0;
    for (uint32_t m = done; m != 0; m &= m - 1)
      v[n++] = s.ph_ns[p][std::countr_zero(m)].load(std::memory_order_relaxed);  // as above
    std::sort(v, v + n);
    out.channels[p] = static_cast<uint8_t>(n);
    out.min_ns[p] = n > 0 ? v[0] : 0;
    out.max_ns[p] = n > 0 ? v[n - 1] : 0;
    out.med_ns[p] = n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : static_cast<uint32_t>((uint64_t{v[n / 2 - 1]} + v[n / 2]) / 2);
    any = any || n > 0;
  }
  out.truncated = s.ph_truncated.load(std::memory_order_relaxed);  // as the masks
  std::memset(out.reserved_, 0, sizeof out.reserved_);
  clear_phases(s);
  if (keep && any) r.flags |= kFlagPhases;
}

// Claims the op, builds its record in place in this thread's ring slot,
// frees the op slot and publishes the record. (Compiled into both callers.)
__attribute__((always_inline)) inline bool complete_body(Context& c, uint32_t slot, uint32_t gen, OpSlot& s,
                                                         bool reclaimed) noexcept {
  // Exactly once per generation: the reclaimer and the last child may race
  // here, and the reclaimer may hold an older generation. acq_rel: acquire
  // pairs with open_op()'s release store (the header is visible).
  uint64_t expected = static_cast<uint64_t>(gen) << 1;
  if (!s.claim.compare_exchange_strong(expected, expected | 1, std::memory_order_acq_rel, std::memory_order_relaxed))
    return false;
  ThreadRing* tr = nullptr;
  OpRecord* out = publish_begin(&tr);
  if (reclaimed && tr != nullptr) bump(tr->counters.reclaimed);
  if (out == nullptr) {  // ring full: the drop is counted; the op is released
    if (s.gpu_pair.load(std::memory_order_relaxed) >= 0) [[unlikely]] (void)take_gpu_pair(s, false);  // as below
    if (s.ph_any.load(std::memory_order_relaxed) != 0) [[unlikely]] clear_phases(s);  // as below
    free_op(c, slot, s);
    return true;
  }
  OpRecord& r = *out;
  write_header(r, s, reclaimed);
  // Relaxed: the progress thread wrote the masks and stamps before its
  // acq_rel release of the kernel side (or of each channel in gate mode),
  // which the claim above follows. A reclaimed op may see them mid-update.
  const uint64_t started = s.started_mask.load(std::memory_order_relaxed);
  const uint64_t stopped = s.stopped_mask.load(std::memory_order_relaxed);
  const uint64_t mask = started | stopped;
  r.channel_mask = mask;
  bool gpu_timed = false;
  if (mask != 0 && !desynced(c, s, r)) [[likely]] {
    gpu_timed = write_channel_times(r, c, s, mask, stopped, reclaimed);
    if (!gpu_timed) [[unlikely]] {
      note_backwards_stamps(c);
      r.busy_ns = 0;  // no channel sums or extremes from stamps that are not its own
      r.max_channel_ns = r.min_channel_ns = 0;
      r.flags = static_cast<uint16_t>(r.flags & ~kFlagChannelsTruncated);
    }
  }
  if (!gpu_timed) [[unlikely]] {
    if (mask != 0) r.flags |= kFlagKernelDesync;  // the stamps are another work's: CPU times instead
    write_cpu_times(r, c, s);
  }
  if ((r.flags & kFlagChannelSums) == 0) {
    r.channels_started = static_cast<uint8_t>(std::popcount(started));
    r.channels_stopped = static_cast<uint8_t>(std::popcount(stopped));
    if (started & ~stopped) r.flags |= kFlagPartialChannels;
  }
  write_network(r, c, s, mask);
  r.gpu_timer = 0;
  if (r.kind == static_cast<uint8_t>(OpKind::kCe)) {
    // Relaxed: as the network statistics.
    const uint64_t ce = s.ce_bytes.load(std::memory_order_relaxed);
    if (ce != 0) r.net_send_bytes = ce;  // CE batches' total bytes moved
    // Relaxed: written by the launching thread before its stop's acq_rel release.
    if (s.gpu_pair.load(std::memory_order_relaxed) >= 0) r.gpu_timer = take_gpu_pair(s, !reclaimed);
  }
  // Relaxed: as the masks above.
  if (s.ph_any.load(std::memory_order_relaxed) != 0) [[unlikely]] write_phases(r, s, gpu_timed);
  free_op(c, slot, s);
  publish_commit(tr);
  return true;
}

}  // namespace

// ============================================ step 1: who claims (and step 2)

__attribute__((noinline)) int complete_from_handle(uint64_t op_v, OpSlot& s) noexcept {
  // Relaxed: set when the chunk joined the pool, before any handle into it existed.
  Context* c = s.ctx.load(std::memory_order_relaxed);
  if (c == nullptr) [[unlikely]] {  // a slot of a chunk given back: no live op
    bump(this_thread()->counters.fault_stale_handle);
    return 0;
  }
  complete_body(*c, slot_of(op_v), gen_of(op_v), s, false);
  return 0;
}

// The reclaimer (see tracker.h).
size_t reclaim_ops(Context& c, uint64_t older_than_ticks) noexcept {
  size_t n = 0;
  c.ops.for_each([&](uint32_t i, OpSlot& s) {
    // Acquire pairs with open_op()'s release store.
    if (s.in_use.load(std::memory_order_acquire) == 0) return;
    const uint64_t claim = s.claim.load(std::memory_order_acquire);  // pairs with open_op()'s release store
    if (claim & 1) return;  // already being completed
    // Relaxed: written before open_op()'s release store of in_use (acquired above).
    if (older_than_ticks != UINT64_MAX && s.start_ticks.load(std::memory_order_relaxed) >= older_than_ticks) return;
    // The claim uses this generation: if the slot moved on to a
    // newer op meanwhile, the claim fails and nothing happens.
    if (complete_body(c, i, static_cast<uint32_t>(claim >> 1), s, true)) ++n;
  });
  return n;
}

}  // namespace ni::core

// ====================================================== step 3: the finish

namespace ni {

using core::context_of;
using core::Context;
using core::Runtime;
using core::runtime;
using core::ThreadRing;

namespace {
// The consumer's half of completion (the dump thread, before any sink sees
// the record): what the producer left out to keep the hot path short.
void finish_record(OpRecord& r) noexcept {
  if (r.flags & kFlagEnqueueTicks) {
    r.flags = static_cast<uint16_t>(r.flags & ~kFlagEnqueueTicks);
    r.enqueue_ns = clk::ticks_to_ns(r.enqueue_ns);
  }
  if ((r.flags & kFlagChannelSums) == 0) return;
  r.flags = static_cast<uint16_t>(r.flags & ~kFlagChannelSums);
  const uint64_t stopped = r.busy_ns;  // see write_channel_times()
  r.channels_started = static_cast<uint8_t>(__builtin_popcountll(r.channel_mask));
  r.channels_stopped = static_cast<uint8_t>(__builtin_popcountll(stopped));
  if (r.channel_mask & ~stopped) r.flags |= kFlagPartialChannels;
  int n = __builtin_popcountll(r.channel_mask);
  if (n > kRecordChannels) n = kRecordChannels;  // the producer never sets the flag then
  uint64_t hi = 0, busy = 0;
  uint32_t maxd = 0, mind = n > 0 ? UINT32_MAX : 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t end = static_cast<uint64_t>(r.channels[i].start_off_ns) + r.channels[i].dur_ns;
    const uint32_t d = r.channels[i].dur_ns;
    hi = end > hi ? end : hi;
    busy += d;
    maxd = d > maxd ? d : maxd;
    mind = d < mind ? d : mind;
  }
  r.end_ns = r.start_ns + hi;
  r.busy_ns = busy;
  r.max_channel_ns = maxd;
  r.min_channel_ns = mind;
}
}  // namespace

namespace {
// Parked CE records whose CUDA events have run (or never will): their GPU
// time in, their pair back, out to fn.
size_t release_parked(Runtime* rt, const std::function<void(const OpRecord*, size_t)>& fn, bool final) {
  if (rt->parked.empty()) return 0;
  const uint64_t now = clk::now_ns();
  const uint64_t timeout_ns = static_cast<uint64_t>(rt->cfg.op_timeout_ms) * 1000000ull;
  size_t out = 0, kept = 0;
  for (OpRecord& r : rt->parked) {
    const int pair = r.gpu_timer - 1;
    uint64_t ns = 0;
    const core::GpuTimers::Poll p = rt->gpu_timers->poll(pair, &ns);
    if (p == core::GpuTimers::Poll::kPending && !final && now - r.end_ns < timeout_ns) {
      rt->parked[kept++] = r;
      continue;
    }
    if (p == core::GpuTimers::Poll::kDone) {
      // The copies' GPU time; placed at the enqueue's start on the CPU clock
      // (the GPU ran them at or after it: docs/log-format.md, "timing").
      r.end_ns = r.start_ns + ns;
      r.timing = static_cast<uint8_t>(TimingSource::kCudaEvent);
    }
    rt->gpu_timers->give(pair);
    r.gpu_timer = 0;
    fn(&r, 1);
    ++out;
  }
  rt->parked.resize(kept);
  // Relaxed: a count for stats(), exact on this (the consumer's) thread.
  rt->n_parked.store(kept, std::memory_order_relaxed);
  return out;
}
}  // namespace

size_t drain_records(const std::function<void(const OpRecord*, size_t)>& fn, bool final) {
  Runtime* rt = runtime();
  if (rt == nullptr) return 0;
  // Clear first (release pairs with publish_wake()'s acq_rel exchange): a push
  // that lands after this line may wake us again.
  rt->wake_pending.store(0, std::memory_order_release);
  std::vector<ThreadRing*> rings;
  {
    std::lock_guard<std::mutex> lk(rt->ring_mu);
    for (ThreadRing* t = rt->rings; t; t = t->next) rings.push_back(t);
  }
  size_t total = 0;
  for (ThreadRing* t : rings) {
    // Acquire pairs with the release stores of the ring pointers in make_ring() (ring.cpp).
    SpscRing<OpRecord>* r = t->ring.load(std::memory_order_acquire);
    if (r == nullptr) continue;
    SpscRing<OpRecord>* b = t->burst.load(std::memory_order_acquire);
    // Burst records are newer than every steady record the thread wrote
    // before them (ring.h, ThreadRing). The burst ring's head is read first:
    // its acquire load makes every steady record written before those burst
    // records visible to the steady ring's drain below, so the steady ones go
    // out first and the order is kept.
    const uint64_t burst_upto = b != nullptr ? b->pushed() : 0;
    // The rings' peak fill as the consumer sees it (just before a drain).
    // Relaxed load/store: the consumer (one at a time) is this field's only writer.
    const uint64_t fill = r->size() + (b != nullptr ? burst_upto - b->drained() : 0);
    if (fill > t->counters.ring_high_water.load(std::memory_order_relaxed))
      t->counters.ring_high_water.store(fill, std::memory_order_relaxed);
    auto take = [&](OpRecord* p, size_t n) {
      size_t run = 0;  // the start of the run not handed out yet
      for (size_t i = 0; i < n; ++i) {
        finish_record(p[i]);  // the consumer's half of completion
        if (p[i].gpu_timer != 0 && p[i].kind == static_cast<uint8_t>(OpKind::kCe)) [[unlikely]] {
          if (i > run) fn(p + run, i - run);
          total += i - run;
          bool parked = false;
          if (rt->gpu_timers != nullptr) {
            try {
              rt->parked.push_back(p[i]);  // waits for its events
              parked = true;
            } catch (const std::bad_alloc&) {
              rt->gpu_timers->give(p[i].gpu_timer - 1);  // out of memory: CPU-timed, now
            }
          }
          if (!parked) {
            p[i].gpu_timer = 0;
            fn(p + i, 1);
            ++total;
          }
          run = i + 1;
        }
      }
      if (n > run) fn(p + run, n - run);
      total += n - run;
    };
    r->drain(take);
    if (b != nullptr) b->drain(take, static_cast<size_t>(burst_upto - b->drained()));
  }
  // Relaxed: as in release_parked().
  rt->n_parked.store(rt->parked.size(), std::memory_order_relaxed);
  total += release_parked(rt, fn, final);
  return total;
}

// The reclaimer as the consumer runs it (step 1 for ops whose count-down
// never reaches zero): the configured timeout, converted to a tick cut-off.
size_t reclaim_stale_ops(uint64_t now_mono_ns) {
  Runtime* rt = runtime();
  if (rt == nullptr) return 0;
  const uint64_t timeout_ns = static_cast<uint64_t>(rt->cfg.op_timeout_ms) * 1000000ull;
  if (now_mono_ns < timeout_ns) return 0;
  // Convert the cut-off to ticks through the current calibration.
  const uint64_t now_t = clk::read_ticks();
  const uint64_t now_ns = clk::ticks_to_ns(now_t);
  const uint64_t age_ns = now_ns > now_mono_ns - timeout_ns ? now_ns - (now_mono_ns - timeout_ns) : 0;
  // relaxed: any recent slope will do for a cut-off
  const uint64_t mult = clk::g_cal.mult.load(std::memory_order_relaxed);
  const uint64_t age_ticks = mult ? static_cast<uint64_t>((static_cast<unsigned __int128>(age_ns) << 32) / mult) : 0;
  const uint64_t cutoff = now_t > age_ticks ? now_t - age_ticks : 0;
  size_t n = 0;
  // relaxed: ids only grow; each context is published by its own release store
  const uint32_t nc = rt->n_contexts.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < nc; ++i) {
    Context* c = context_of(rt, i);
    // acquire: pairs with the release store in comm_init
    if (c != nullptr && c->live.load(std::memory_order_acquire)) n += core::reclaim_ops(*c, cutoff);
  }
  return n;
}

}  // namespace ni
