// The capture core's in-flight state: handles, pooled op and network slots,
// per-comm contexts, and the declarations the event path (tracker.cpp) and the
// completion of an op (completion.cpp) share. Only the core's own files
// include it.
//
// Handles are not pointers: a handle is a 64-bit value encoding
// (tag, global slot index, generation, channel or event type). Decoding it never
// dereferences foreign memory, a recycled slot is detected by its generation,
// and a handle from another process (PXN) can at worst name a slot of ours
// whose generation will not match.
#pragma once

#include <sys/mman.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "include/nccl_inspector/nccl.h"
#include "src/core/config.h"
#include "src/core/core.h"
#include "src/core/record.h"
#include "src/core/runtime.h"

namespace ni::core {

// ----------------------------------------------------------------- handles

enum class Tag : uint8_t {
  kNone = 0,
  kOp = 1,        // Coll / P2p / CeColl: slot in the context's op pool
  kKernelCh = 2,  // slot of the parent op + channel id
  kProxyOp = 3,   // slot in the context's net pool
  kProxyStep = 4, // slot in the context's net pool
  kCeChild = 5,   // CeSync / CeBatch: slot of the parent op
  kMarker = 6,    // API / Group / KernelLaunch / ProxyCtrl: no state
  kFiltered = 7,  // an op we chose not to record; its children are ignored too
  kNetPlugin = 8, // no state (so stopping it twice is harmless)
  kKernelChCpu = 9,  // as kKernelCh, for ABI v3 (no GPU timer): its stop ends the channel
  kPhase = 10,       // KernelPhase (v7): slot of the op + channel id; the phase in bits kPhaseShift..+1
};

inline constexpr int kSlotBits = 20;     // global slot index (all contexts share one table per slot type)
inline constexpr int kGenBits = 32;
inline constexpr uint32_t kMaxSlots = 1u << kSlotBits;
inline constexpr uint32_t kGenMask = 0xFFFFFFFFu;

// Layout: tag [0,4) | extra [4,10) | generation [10,42) | slot [44,64). The
// slot index is on top so that taking it out is one shift; an op's KernelCh
// handle is the op's handle with another tag and the channel in `extra`.
struct Handle {
  Tag tag = Tag::kNone;
  uint32_t slot = 0;
  uint32_t gen = 0;
  uint32_t extra = 0;  // channel id (kKernelCh), EvType + graph bit (kMarker)
};

inline constexpr int kExtraShift = 4, kGenShift = 10, kSlotShift = 44;
// Bits 42-43 lie between the generation (32 bits from kGenShift) and the slot:
// a KernelPhase handle keeps its phase id there.
inline constexpr int kPhaseShift = 42;
// A NetPlugin handle's extra field: step % 8 (bits 0-2), the op's HCA entry
// (bits 3-4), and this bit when it is a send whose wire time is tracked.
inline constexpr uint32_t kNetWireTracked = 32;

inline void* encode(const Handle& h) noexcept {
  uint64_t v = static_cast<uint64_t>(h.tag) | (static_cast<uint64_t>(h.extra & 63u) << kExtraShift) |
               (static_cast<uint64_t>(h.gen) << kGenShift) |
               (static_cast<uint64_t>(h.slot & (kMaxSlots - 1)) << kSlotShift);
  return reinterpret_cast<void*>(v);
}

inline Handle decode(const void* p) noexcept {
  auto v = reinterpret_cast<uint64_t>(p);
  Handle h;
  h.tag = static_cast<Tag>(v & 15u);
  h.slot = static_cast<uint32_t>(v >> kSlotShift);
  h.gen = static_cast<uint32_t>(v >> kGenShift);
  h.extra = static_cast<uint32_t>((v >> kExtraShift) & 63u);
  return h;
}

// Field access straight on the encoded value (the hot paths avoid building a
// Handle).
inline uint64_t hv(const void* p) noexcept { return reinterpret_cast<uint64_t>(p); }
inline Tag tag_of(uint64_t v) noexcept { return static_cast<Tag>(v & 15u); }
inline uint32_t slot_of(uint64_t v) noexcept { return static_cast<uint32_t>(v >> kSlotShift); }
inline uint32_t gen_of(uint64_t v) noexcept { return static_cast<uint32_t>(v >> kGenShift); }
inline uint32_t extra_of(uint64_t v) noexcept { return static_cast<uint32_t>((v >> kExtraShift) & 63u); }
// The same handle with another tag and extra field.
inline uint64_t retag(uint64_t v, Tag t, uint32_t extra) noexcept {
  return (v & ~((1ull << kGenShift) - 1)) | static_cast<uint64_t>(t) | (static_cast<uint64_t>(extra & 63u) << kExtraShift);
}

struct Context;

// ----------------------------------------------------------------- op pool

struct HcaSlot {
  std::atomic<uint32_t> dev{UINT32_MAX};  // claimed by CAS from UINT32_MAX
  std::atomic<uint32_t> wrs{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> qp_bits{0};  // bit (qpNum % 64): approximate distinct QPs
  // Send work requests on the wire through it: how many are open, and the
  // sum over its busy periods of (end - start) in CPU ticks, kept as
  // -start at each 0 -> 1 and +end at each 1 -> 0 (one atomic, commutative adds).
  std::atomic<uint32_t> wire_open{0};
  std::atomic<int64_t> wire_ticks{0};
};

// What an op's start knows, written by the starting (app) thread before the
// handle is handed to NCCL and read-only afterwards. One cache line: the only
// app-written data the completing (progress) thread has to fetch from the other
// core; completion builds the record's header from it.
struct alignas(kCacheLine) OpStart {
  uint64_t comm_hash;
  uint64_t seq;
  uint64_t count;
  uint64_t bytes;
  uint64_t enqueue_ns;
  uint32_t comm_id;
  int32_t rank;
  int32_t peer;
  uint16_t flags;  // OpFlag
  uint8_t kind, func, dtype, algo, proto, n_channels, n_warps, abi_version;
  uint8_t kernel_variant;  // symmetric-kernel plans (names.h variant_id); 0 otherwise
  // A symmetric plan's head: how many later tasks its kernel ran too
  // (saturating at 255), counted by their starts (start_coll: the one field
  // written after the handle went to NCCL, by the same launching thread,
  // before the head's own stop publishes it to the completer).
  uint8_t sym_tasks;
};
static_assert(sizeof(OpStart) == kCacheLine);


// Writes a field of OpStart that the progress snapshot (progress.cpp) reads
// while the slot may change hands: seq, bytes, peer, kind, func, dtype,
// n_channels. Every other access to `start` is ordered by the op's handle and
// claim, so plain. On x86 the same plain store. Release pairs with
// shown()'s acquire load: a snapshot that reads a value of the slot's next op
// also sees the old op's claim change, and leaves the op out.
template <class T>
inline void show(T& field, T v) noexcept {
  std::atomic_ref<T>(field).store(v, std::memory_order_release);
}
// The snapshot's read of a field written by show(). Acquire pairs with it (see
// there); it also keeps the claim's re-read after the field reads.
template <class T>
inline T shown(T& field) noexcept {
  return std::atomic_ref<T>(field).load(std::memory_order_acquire);
}
// OpRecord's first cache line has the same layout (record.h): completion copies it whole.
#define NI_SAME_OFFSET(f) static_assert(offsetof(OpStart, f) == offsetof(OpRecord, f) && sizeof(OpStart::f) == sizeof(OpRecord::f))
NI_SAME_OFFSET(comm_hash);
NI_SAME_OFFSET(seq);
NI_SAME_OFFSET(count);
NI_SAME_OFFSET(bytes);
NI_SAME_OFFSET(enqueue_ns);
NI_SAME_OFFSET(comm_id);
NI_SAME_OFFSET(rank);
NI_SAME_OFFSET(peer);
NI_SAME_OFFSET(flags);
NI_SAME_OFFSET(kind);
NI_SAME_OFFSET(func);
NI_SAME_OFFSET(dtype);
NI_SAME_OFFSET(algo);
NI_SAME_OFFSET(proto);
NI_SAME_OFFSET(n_channels);
NI_SAME_OFFSET(n_warps);
NI_SAME_OFFSET(abi_version);
NI_SAME_OFFSET(kernel_variant);
NI_SAME_OFFSET(sym_tasks);
#undef NI_SAME_OFFSET

// Where an op's kernel side stands (OpSlotFields::ch_mode). With a known
// channel count the kernel side holds one reference, released when every
// started channel stopped and at least n_channels did. Otherwise (gate mode)
// each channel holds a reference while it runs.
enum ChMode : uint8_t {
  kChOpen = 0,  // count known, the kernel side is held (the value a free slot has)
  kChDone = 1,  // count known, the kernel side was released
  kChGate = 2,  // count unknown (set by the op's start: the only time the app side writes that line)
};

// One in-flight Coll / P2p / CeColl. `start` is written by the starting thread
// before the handle is handed to NCCL and is read-only afterwards; everything
// that changes later is atomic. NCCL runs an op's start/stop on the app (or
// launch) thread and all of its KernelCh callbacks on the comm's one progress
// thread; the fields are grouped in cache lines by who writes them, so that an
// op's lines cross between the two cores as few times as possible.
struct OpSlotFields {
  // The op's life: written at its start and stop (app side), read by every
  // callback (handle validation), read-modify-written by whoever ends a part
  // of it and by its completer. One line, so that it is the only line the
  // next op's start finds dirty in the completing thread's cache.
  alignas(kCacheLine) std::atomic<uint32_t> gen{0};  // bumped on free; a handle must match it
  std::atomic<uint32_t> in_use{0};                   // 1 while allocated (reclaimer scans this)
  std::atomic<Context*> ctx{nullptr};                // owning context while its pool holds the chunk
  std::atomic<int32_t> remaining{0};   // completion count-down (release() in tracker.cpp; completion.cpp claims at zero)
  std::atomic<uint32_t> free_next{0};  // free-list link (slot index + 1)
  std::atomic<uint64_t> claim{1};      // (gen << 1) | claimed: exactly-once completion per generation
  std::atomic<uint32_t> coll_stopped{0};
  // A collective's place in its comm's issue order (Context::issued, low 32
  // bits), written at start; the completer puts it in the record.
  std::atomic<uint32_t> issue{0};
  std::atomic<uint64_t> start_ticks{0};
  std::atomic<uint64_t> stop_ticks{0};  // Coll/P2p/CeColl stop (enqueue end)
  // CE ops timed with CUDA events (gpu_timer.h): the pair, -1 none. Written
  // by the launching thread at start and at stop (set back to -1 when the
  // stop event could not be recorded), read by the completer.
  std::atomic<int32_t> gpu_pair{-1};
  // KernelCh bookkeeping: written by the comm's progress thread only (plain
  // relaxed load/store, no locked instruction; a caller that broke that rule
  // could lose a bit, never memory safety: the op would be reclaimed). Zero
  // while the slot is free (the completer clears it), so the app thread never
  // writes this line.
  alignas(kCacheLine) std::atomic<uint64_t> started_mask{0};
  std::atomic<uint64_t> stopped_mask{0};
  std::atomic<uint64_t> ch_lo{UINT64_MAX};  // earliest start stamp of the started channels
  std::atomic<uint8_t> ch_mode{kChOpen};    // ChMode
  // ABI v7: the call's user tag. Written at start only when nonzero (rare, as
  // ch_mode above: untagged ops leave this line to the progress thread); the
  // completer moves it into the record and free_op() zeroes it.
  std::atomic<uint64_t> user_tag{0};
  // ABI v7 KernelPhase, written by the progress (profiler) thread as the
  // masks above: bit ch of ph_done[p] once phase p of channel ch ended, its
  // time then in ph_ns[p][ch] (which holds the start stamp's low 32 bits
  // until then). Zero while the slot is free, as the line.
  std::atomic<uint32_t> ph_done[ni::kPhases]{};
  std::atomic<uint8_t> ph_truncated{0};  // a phase of a channel >= kPhaseChannels came (left out)
  std::atomic<uint8_t> ph_any{0};        // some KernelPhase came: the completer reads the rest
  alignas(kCacheLine) std::atomic<uint64_t> ch_start[ni::abi::kMaxChannels];
  std::atomic<uint64_t> ch_stop[ni::abi::kMaxChannels];
  // network
  std::atomic<uint64_t> net_send_bytes{0}, net_recv_bytes{0};
  std::atomic<uint64_t> net_gpu_wait{0}, net_wait{0}, net_flush{0};  // ticks
  std::atomic<uint64_t> net_first{UINT64_MAX}, net_last{0};          // ticks
  std::atomic<uint32_t> net_steps{0}, net_ops{0};
  std::atomic<uint32_t> net_peers_hash{0};
  std::atomic<int32_t> net_first_peer{-1};
  std::atomic<uint64_t> ce_bytes{0};
  std::atomic<void*> gpu_stream{nullptr};  // the CE op's stream (with gpu_pair), for its stop event
  HcaSlot hca[kRecordHcas];
  OpStart start;
  std::atomic<uint32_t> ph_ns[ni::kPhases][ni::kPhaseChannels];  // see ph_done
};
// Padded to a power of two: finding a slot from a handle is then a shift, not
// a multiply (25 lookups per 8-channel op).
inline constexpr size_t kOpSlotSize = 2048;
static_assert(sizeof(OpSlotFields) <= kOpSlotSize);
static_assert(offsetof(OpSlotFields, stop_ticks) < kCacheLine, "the op's life is one cache line");
static_assert(offsetof(OpSlotFields, issue) < kCacheLine, "the op's life is one cache line");
static_assert(offsetof(OpSlotFields, gpu_pair) < kCacheLine, "the op's life is one cache line");
static_assert(offsetof(OpSlotFields, ph_any) - offsetof(OpSlotFields, started_mask) < kCacheLine,
              "the KernelCh bookkeeping is one cache line");
struct OpSlot : OpSlotFields {
  char pad_[kOpSlotSize - sizeof(OpSlotFields)];
};
static_assert(sizeof(OpSlot) == kOpSlotSize);

// One ProxyOp (network events, opt-in) and the states of its outstanding
// ProxySteps. NCCL keeps at most NCCL_STEPS (8) step handles per sub, indexed
// by step % 8, and overwrites a slot when it restarts a step: we mirror that,
// so a step that is started twice and never stopped leaks nothing.
struct alignas(kCacheLine) NetSlot {
  std::atomic<uint32_t> gen{0};
  std::atomic<Context*> ctx{nullptr};  // owning context while its pool holds the chunk
  std::atomic<uint32_t> free_next{0};
  std::atomic<uint64_t> op_handle{0};     // encoded parent op handle
  std::atomic<uint64_t> trans{0};         // v1-v3: cumulative transSize of the ProxyOp states
  std::atomic<uint32_t> stopped{0};
  std::atomic<uint64_t> start_ticks{0};
  // Set at the ProxyOp's start by its progress thread (relaxed: published
  // with the handle); atomics because the progress snapshot may read a slot
  // that is being reused (it validates the generation).
  std::atomic<bool> is_send{false};
  std::atomic<int32_t> peer{-1};
  struct Step {
    std::atomic<int32_t> state{-1};
    std::atomic<uint64_t> ticks{0};
    std::atomic<uint32_t> stopped{1};
    // Send-side NetPlugin (QP) events of this step: started, and stopped for
    // the first time. IB stops each one twice (CQ completion, then test()):
    // stops beyond the starts are those repeats.
    std::atomic<uint32_t> qp_started{0}, qp_stopped{0};
  } steps[ni::abi::kNcclSteps];
  // Its ProxySteps started and stopped (a hung op's progress per peer).
  // Written by the one progress thread that owns the ProxyOp; read (relaxed)
  // by the progress snapshot.
  std::atomic<uint32_t> steps_posted{0}, steps_done{0};
};

inline constexpr uint32_t kChunk = 64;  // slots per chunk

// One process-wide array of slots per slot type, indexed by the global slot
// index a handle carries. Its address space is reserved once (PROT_NONE, so
// it costs neither memory nor commit charge) and made usable a chunk of
// kChunk slots at a time. Finding a slot is a bounds check against the slots
// made usable so far and an add: a garbage index is rejected, never followed.
// Chunks are never unmapped while the library is loaded (only at unload, when
// no runtime is left): a chunk whose context goes away returns to a free list,
// with its slots' generations bumped and their owner cleared, so any handle
// into it stops validating.
template <typename Slot>
class SlotTable {
 public:
  static constexpr uint32_t kChunks = kMaxSlots / kChunk;
  static_assert(sizeof(Slot) % kCacheLine == 0 && (kChunk * sizeof(Slot)) % 4096 == 0, "chunks are whole pages");

  // Whether idx names a usable slot; then at(idx) may be used.
  static bool contains(uint32_t idx) noexcept {
    // Acquire pairs with the release store of limit_ in take_chunk(): the
    // slots below it are mapped and constructed, and base_ is set.
    return idx < limit_.load(std::memory_order_acquire);
  }
  static Slot* find(uint32_t idx) noexcept { return contains(idx) ? base_ + idx : nullptr; }
  // For an index from our own pools (its chunk exists).
  static Slot& at(uint32_t idx) noexcept { return base_[idx]; }

  // A chunk for `owner` (fresh or recycled); UINT32_MAX when none is left.
  static uint32_t take_chunk(Context* owner) noexcept {
    std::lock_guard<std::mutex> lk(mu());
    uint32_t id = UINT32_MAX;
    auto& fl = free_chunks();
    if (fl.n != 0) {
      id = fl.ids[--fl.n];
    } else {
      if (base_ == nullptr && !reserve()) return UINT32_MAX;
      if (next_ >= reserved_chunks_) return UINT32_MAX;
      Slot* c = base_ + static_cast<size_t>(next_) * kChunk;
      if (mprotect(c, kChunk * sizeof(Slot), PROT_READ | PROT_WRITE) != 0) return UINT32_MAX;
      for (uint32_t k = 0; k < kChunk; ++k) {
        new (c + k) Slot();
        // Relaxed: published by the release store of limit_ below.
        c[k].gen.store(first_gen_, std::memory_order_relaxed);
      }
      id = next_++;
      // Release pairs with find()'s acquire: the constructed slots are visible.
      limit_.store(next_ * kChunk, std::memory_order_release);
    }
    Slot* c = base_ + static_cast<size_t>(id) * kChunk;
    // Relaxed: published with the slots by the pool's release CAS when they
    // enter its free list.
    for (uint32_t k = 0; k < kChunk; ++k) c[k].ctx.store(owner, std::memory_order_relaxed);
    return id;
  }

  // Gives a chunk back: no handle into it validates afterwards.
  static void give_chunk(uint32_t id) noexcept {
    Slot* c = base_ + static_cast<size_t>(id) * kChunk;
    for (uint32_t k = 0; k < kChunk; ++k) {
      // Release pairs with the acquire gen loads when handles are validated.
      c[k].gen.fetch_add(1, std::memory_order_release);
      c[k].ctx.store(nullptr, std::memory_order_relaxed);  // relaxed: ordered by the gen bump above
      // An op slot leaves no in-use mark behind for the next owner's reclaimer
      // (finalize completes every op first; this keeps it true regardless).
      if constexpr (requires { c[k].in_use; }) c[k].in_use.store(0, std::memory_order_relaxed);  // as ctx above
    }
    std::lock_guard<std::mutex> lk(mu());
    auto& fl = free_chunks();
    fl.ids[fl.n++] = id;
  }

  // fork() (fork.h): the table's lock is held across the fork; in the child
  // the table starts afresh without touching the parent's slots (their
  // mapping stays, unreachable), and its new slots start at other generations
  // so that a handle the parent handed out never names one of them.
  static void lock_for_fork() noexcept { mu().lock(); }
  static void unlock_after_fork() noexcept { mu().unlock(); }
  static void forget_in_child() noexcept {
    limit_.store(0, std::memory_order_release);  // pairs with find()'s acquire
    base_ = nullptr;
    reserved_chunks_ = 0;
    next_ = 0;
    free_chunks().n = 0;
    first_gen_ += 0x9E3779B9u;  // any odd step: each generation of children starts elsewhere
  }

  // Library unload with no runtime left: unmaps everything.
  static void free_all() noexcept {
    std::lock_guard<std::mutex> lk(mu());
    limit_.store(0, std::memory_order_release);  // pairs with find()'s acquire
    if (base_ != nullptr) munmap(base_, static_cast<size_t>(reserved_chunks_) * kChunk * sizeof(Slot));
    base_ = nullptr;
    reserved_chunks_ = 0;
    next_ = 0;
    free_chunks().n = 0;
  }

 private:
  // Reserves address space for all kChunks chunks, or for as many as the
  // system allows (halving down to 64 chunks).
  static bool reserve() noexcept {
    for (uint32_t n = kChunks; n >= 64; n /= 2) {
      void* p = mmap(nullptr, static_cast<size_t>(n) * kChunk * sizeof(Slot), PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p != MAP_FAILED) {
        base_ = static_cast<Slot*>(p);
        reserved_chunks_ = n;
        return true;
      }
    }
    return false;
  }
  struct FreeList {
    uint32_t ids[kChunks];
    uint32_t n = 0;
  };
  static std::mutex& mu() noexcept {
    static std::mutex m;
    return m;
  }
  static FreeList& free_chunks() noexcept {
    static FreeList fl;
    return fl;
  }
  static inline std::atomic<uint32_t> limit_{0};  // slots usable (mapped and constructed)
  static inline Slot* base_ = nullptr;            // set under mu() before limit_ first grows
  static inline uint32_t reserved_chunks_ = 0;    // guarded by mu()
  static inline uint32_t next_ = 0;               // guarded by mu()
  static inline uint32_t first_gen_ = 0;          // a new slot's generation; guarded by mu()
};

// One context's slots: chunks of kChunk slots taken from the SlotTable up to a
// maximum, with two lock-free free stacks. free() pushes onto `returned_`;
// alloc() pops from `head_` (its head carries a 32-bit tag against ABA) and,
// when that is empty, takes all of `returned_` at once (one exchange) as the
// new `head_`. The threads that start ops and the thread that completes them
// (NCCL's app and progress threads) then share a free-list line once per
// batch instead of twice per op: in the concurrency benchmark this took the
// slowdown of running both at once from 1.02-1.16x (medians of ten runs) to
// 1.00-1.01x. alloc/free may run on any thread; indices are global
// (SlotTable). The chunks go back to the table when the context is destroyed
// at runtime teardown.
template <typename Slot>
class Pool {
 public:
  bool init(uint32_t max_slots, Context* owner) {
    owner_ = owner;
    max_chunks_ = (max_slots + kChunk - 1) / kChunk;
    if (max_chunks_ == 0) max_chunks_ = 1;
    if (max_chunks_ > SlotTable<Slot>::kChunks) max_chunks_ = SlotTable<Slot>::kChunks;
    chunk_ids_.reset(new (std::nothrow) std::atomic<uint32_t>[max_chunks_]);
    if (!chunk_ids_) return false;
    return grow();
  }
  ~Pool() {
    // Relaxed: after the last use (runtime teardown).
    const uint32_t n = n_chunks_.load(std::memory_order_relaxed);
    for (uint32_t k = 0; k < n; ++k) SlotTable<Slot>::give_chunk(chunk_ids_[k].load(std::memory_order_relaxed));
  }

  static Slot& at(uint32_t i) noexcept { return SlotTable<Slot>::at(i); }

  // Calls f(global index, slot) for every slot this pool holds now.
  template <typename F>
  void for_each(F&& f) {
    // Acquire pairs with the release store of n_chunks_ in grow().
    const uint32_t n = n_chunks_.load(std::memory_order_acquire);
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t base = chunk_ids_[k].load(std::memory_order_relaxed) * kChunk;  // published by n_chunks_
      for (uint32_t j = 0; j < kChunk; ++j) f(base + j, at(base + j));
    }
  }
  // Slots held (a multiple of kChunk).
  uint32_t capacity() const noexcept {
    // Pairs with the release store in grow().
    return n_chunks_.load(std::memory_order_acquire) * kChunk;
  }

  // Returns a global slot index, or UINT32_MAX when the pool is at its maximum.
  // A thread that finds the list empty while another one adds a chunk waits
  // for that chunk (once per chunk in the pool's life; bounded) rather than
  // reporting the pool exhausted.
  uint32_t alloc() noexcept {
    for (int attempt = 0; attempt < 1000; ++attempt) {
      uint32_t i = pop();
      if (i != UINT32_MAX) [[likely]] return i;
      // Acquire pairs with the release store that ends grow().
      if (growing_.load(std::memory_order_acquire) != 0) {
        std::this_thread::yield();
        continue;
      }
      if (!grow()) break;
    }
    return pop_at_maximum();
  }

  void free(uint32_t i) noexcept {
    // Relaxed, a hint (pop_at_maximum()): something was freed since the last refusal.
    if (refused_.load(std::memory_order_relaxed) != 0) [[unlikely]] refused_.store(0, std::memory_order_relaxed);
    // A push-only stack emptied only by exchange has no ABA problem: no tag.
    uint32_t h = returned_.load(std::memory_order_relaxed);  // relaxed: the CAS below re-checks it
    for (;;) {
      // Relaxed: published by the release CAS below.
      at(i).free_next.store(h, std::memory_order_relaxed);
      // Release: the slot's final writes (gen bump, free_next) happen-before
      // the exchange in pop() that takes it (acq_rel).
      if (returned_.compare_exchange_weak(h, i + 1, std::memory_order_release, std::memory_order_relaxed)) return;
    }
  }

 private:
  uint32_t pop_ready() noexcept {
    // Pairs with the release CASes that install a chain in head_.
    uint64_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      const uint32_t idx1 = static_cast<uint32_t>(h);
      if (idx1 == 0) return UINT32_MAX;
      // relaxed: a stale value is caught by the ABA tag in the CAS
      const uint32_t next = at(idx1 - 1).free_next.load(std::memory_order_relaxed);
      const uint64_t nh = ((h >> 32) + 1) << 32 | next;
      // Acquire on success and failure pairs with the release CASes that
      // install chains; a stale `next` read is caught by the ABA tag in h.
      if (head_.compare_exchange_weak(h, nh, std::memory_order_acquire, std::memory_order_acquire)) return idx1 - 1;
    }
  }

  uint32_t pop() noexcept {
    uint32_t i = pop_ready();
    if (i != UINT32_MAX) [[likely]] return i;
    // head_ is empty: take everything freed since the last time (one
    // exchange; acq_rel: acquire pairs with free()'s release CAS, so the
    // chain's links and the slots' final writes are visible).
    const uint32_t chain = returned_.exchange(0, std::memory_order_acq_rel);
    if (chain != 0) {
      // Keep the first; the rest (if any) goes to head_. Relaxed: the chain is
      // ours alone now. While it is on its way its slots are in neither stack:
      // transit_ says so (install_batch()).
      const uint32_t rest = at(chain - 1).free_next.load(std::memory_order_relaxed);
      if (rest != 0) install_batch(rest);
      return chain - 1;
    }
    return wait_for_batch();
  }

  __attribute__((noinline)) void install_batch(uint32_t rest) noexcept {
    // acq_rel: pairs with the acquire loads in wait_for_batch().
    transit_.fetch_add(1, std::memory_order_acq_rel);
    install(rest);
    transit_.fetch_sub(1, std::memory_order_release);  // pairs with the acquire load in wait_for_batch()
  }

  // The pool is at its maximum and both stacks looked empty. Another
  // allocating thread may hold every free slot between its exchange in pop()
  // and its transit_ increment in install_batch() (two instructions; but a
  // thread can be preempted there): yield to it a bounded number of times
  // before reporting the pool exhausted. Only once per exhaustion: after a
  // refusal, and until something is freed (refused_), no chain can have
  // formed, and a burst of starts that all find the pool full must not each
  // pay eight system calls on NCCL's threads; such refusals try once.
  __attribute__((noinline)) uint32_t pop_at_maximum() noexcept {
    // Relaxed: a hint (a stale value costs one refusal its yields, or one
    // spurious yield spell); the free lists' own atomics order the slots.
    if (refused_.load(std::memory_order_relaxed) == 0) {
      for (int tries = 0; tries < 8; ++tries) {
        const uint32_t i = pop();
        if (i != UINT32_MAX) return i;
        refusal_yields_.fetch_add(1, std::memory_order_relaxed);  // a statistic for tests; pairs with nothing
        std::this_thread::yield();
      }
    }
    const uint32_t i = pop();
    if (i == UINT32_MAX) refused_.store(1, std::memory_order_relaxed);  // the hint above
    return i;
  }

  // Both stacks looked empty: another thread may be moving a batch (or be a
  // couple of instructions from saying so). Waits for it, bounded, rather
  // than report the pool exhausted; when nothing is in transit (a pool that
  // is really full), returns after two CPU pauses, with no system call.
  __attribute__((noinline)) uint32_t wait_for_batch() noexcept {
    uint32_t i;
    for (int spin = 0; spin < 1000; ++spin) {
      if ((i = pop_ready()) != UINT32_MAX) return i;
      // Acquire pairs with the release decrement in install_batch() (another thread's).
      if (transit_.load(std::memory_order_acquire) != 0) {
        std::this_thread::yield();  // a batch is on its way: let its mover run
      } else if (spin >= 2) {
        return pop_ready();
      } else {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
      }
    }
    return UINT32_MAX;
  }

  // Puts a private chain (linked by free_next) on top of head_.
  void install(uint32_t chain) noexcept {
    uint32_t tail = 0;  // the chain's last slot + 1, found only if head_ is not empty
    uint64_t h = head_.load(std::memory_order_relaxed);  // relaxed: the CAS below re-checks it
    for (;;) {
      const uint32_t top = static_cast<uint32_t>(h);
      if (top != 0 && tail == 0) {
        tail = chain;
        // Relaxed: our own links.
        for (uint32_t n; (n = at(tail - 1).free_next.load(std::memory_order_relaxed)) != 0;) tail = n;
      }
      // Relaxed: published by the CAS below (relinked on every retry).
      if (tail != 0) at(tail - 1).free_next.store(top, std::memory_order_relaxed);
      // Release pairs with pop_ready()'s acquire loads: the links are visible.
      if (head_.compare_exchange_weak(h, ((h >> 32) + 1) << 32 | chain, std::memory_order_release,
                                      std::memory_order_relaxed))
        return;
    }
  }

  // Adds one chunk. Only one thread grows at a time (growing_ flag); a thread
  // that loses the race returns true so its caller retries the free list.
  __attribute__((noinline)) bool grow() noexcept {
    // Relaxed: only the grower writes it, and it only grows: a pool at its
    // maximum says so without the CAS below (a shared line's write per refusal).
    if (n_chunks_.load(std::memory_order_relaxed) >= max_chunks_) return false;
    uint32_t expected = 0;
    // Acquire pairs with the release store that clears the flag below.
    if (!growing_.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed))
      return true;
    const uint32_t n = n_chunks_.load(std::memory_order_relaxed);  // relaxed: only the grower writes it
    bool ok = false;
    if (n < max_chunks_) {
      const uint32_t id = SlotTable<Slot>::take_chunk(owner_);
      if (id != UINT32_MAX) {
        chunk_ids_[n].store(id, std::memory_order_relaxed);  // relaxed: published by the release store below
        // Release pairs with capacity()/for_each()'s acquire.
        n_chunks_.store(n + 1, std::memory_order_release);
        for (uint32_t k = kChunk; k-- > 0;) free(id * kChunk + k);
        ok = true;
      }
    }
    // Pairs with the acquire CAS above.
    growing_.store(0, std::memory_order_release);
    return ok;
  }

  Context* owner_ = nullptr;
  std::unique_ptr<std::atomic<uint32_t>[]> chunk_ids_;
  uint32_t max_chunks_ = 0;
  std::atomic<uint32_t> n_chunks_{0};
  std::atomic<uint32_t> growing_{0};
  alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // (aba tag << 32) | (global index + 1)
  std::atomic<uint32_t> transit_{0};                   // chains taken from returned_, not yet in head_
  alignas(kCacheLine) std::atomic<uint32_t> returned_{0};  // global index + 1
  std::atomic<uint32_t> refused_{0};  // 1: a refusal at the maximum, nothing freed since (pop_at_maximum())
  std::atomic<uint64_t> refusal_yields_{0};

 public:
  // Yields spent in refusals at the maximum (tests).
  uint64_t refusal_yields() const noexcept { return refusal_yields_.load(std::memory_order_relaxed); }
};

// ------------------------------------------------------------------ context

struct Context {
  uint32_t id = 0;
  std::atomic<uint32_t> live{0};   // 1 between init and finalize
  CommInfo info;                   // cold fields (name etc.), guarded by Runtime::info_mu
  std::atomic<uint64_t> comm_hash{0};  // v1-v3 learn it from op descriptors
  std::atomic<int32_t> rank{-1};
  int nranks = 0;
  int nnodes = 0;           // 0 = unknown (ABI v1-v3)
  int abi = 0;
  bool kernel_ch = false;   // KernelCh events will come (ABI >= 3 and in our mask)
  bool net = false;         // ProxyOp/ProxyStep/NetPlugin requested
  // Transport of an op with KernelCh and no proxy traffic: intra-node when we
  // asked for network events or the comm is on one node, else unknown.
  uint8_t quiet_transport = static_cast<uint8_t>(Transport::kUnknown);
  Pool<OpSlot> ops;
  Pool<NetSlot> net_slots;
  std::atomic<uint64_t> sample_counter{0};
  std::unique_ptr<std::atomic<uint32_t>[]> p2p_seq;  // [2 * p2p_seq_n]: send, recv per peer
  uint32_t p2p_seq_n = 0;
  // Where the comm's issue stands, counted at every Coll / P2p start whether
  // the op is recorded or not (filtered, sampled out, pool exhausted): the
  // collectives started (the next one's index), the last seqNumber + 1 started
  // per collective function (Broadcast .. AllReduce, NCCL's per-function
  // counters), the P2P ops started. Written by the thread that issues the
  // comm's ops (NCCL allows one at a time per comm): relaxed load/store, no
  // locked instruction; read (relaxed) by the dump thread's progress
  // snapshot, which a moment's tear only delays by a cycle. Own line: the
  // progress thread writes the clock fields below.
  // func_seq has a slot for every Func value, so that the start indexes it
  // without a range check; the snapshot reads the first kSeqFuncs.
  static constexpr int kSeqFuncs = kProgressFuncs;
  static constexpr int kFuncSlots = 16;
  alignas(kCacheLine) std::atomic<uint64_t> issued{0};
  std::atomic<uint64_t> func_seq[kFuncSlots] = {};
  std::atomic<uint64_t> p2p_started{0};
  std::atomic<uint8_t> last_func{0};  // Func of the last collective started
  // The application's collective calls (CollApi, v5+) and the last one's Func.
  std::atomic<uint64_t> api_issued{0};
  std::atomic<uint8_t> last_api_func{0};
  // Collectives recorded from their CollApi alone (Broadcast on 2.29+): their
  // seq, our own count per comm (one function so far).
  std::atomic<uint64_t> api_only_seq{0};
  // Where NCCL's KernelCh stamps stopped being trustworthy on this comm: a
  // kernel work item with no profiler proxy op (a Send/Recv to itself; a
  // 2.29+ Broadcast, which lost its activation mask) advances the device's
  // per-channel work counter but not the host's, so every later KernelCh
  // reads an earlier work's stamps (seen on real NCCL 2.28.9; NVIDIA/nccl PR
  // #2369 for Broadcast). The CPU ticks of the first such call (UINT64_MAX:
  // none yet) and, for a Send/Recv to itself, its launch group (whose other
  // parts NCCL schedules after it, round 0 first; 0: none). Ops started from
  // then on, and that group's parts, are CPU-timed. Set once by the thread
  // that issues the comm's ops (relaxed load/store); the completer reads them
  // relaxed after NCCL's own hand-over of later ops to its progress thread,
  // which orders them. Never cleared while the comm lives: the counters never
  // come back in step.
  std::atomic<uint64_t> desync_ticks{UINT64_MAX};
  std::atomic<uint32_t> desync_group{0};
  // clock estimate (mono - ptimer), refined by KernelCh start observations
  alignas(kCacheLine) std::atomic<int64_t> clk_min{INT64_MAX};
  std::atomic<int64_t> clk_typical{0};
  std::atomic<uint64_t> clk_samples{0};
  // Which GPU the comm runs on (comm_init, from the CUDA driver): a hash of its
  // PCI bus id, else its ordinal + 1; 0 unknown. Whose clock bounds it may
  // share (clock_estimate). Relaxed: published by the release store of live.
  std::atomic<uint64_t> gpu_key{0};
};

// ------------------------------------------------------- context arguments

// Counts a callback whose context is not a live comm of this runtime
// (tracker.cpp); returns nullptr for the caller to return.
__attribute__((noinline, cold)) Context* null_context() noexcept;

// The context an init handed NCCL (id + runtime generation, never a pointer),
// or nullptr (counted) when it is not a live comm of this runtime.
inline Context* context_from_arg(Runtime* rt, void* ctx) noexcept {
  auto v = reinterpret_cast<uintptr_t>(ctx);
  if (v == 0) return nullptr;  // disabled comm: silently nothing
  uint32_t id1 = static_cast<uint32_t>(v & 0xFFFFu);
  if (((v >> 16) & 0xFFFFu) != (rt->generation & 0xFFFFu) || id1 == 0 || id1 > kMaxContexts)
    return null_context();
  Context* c = context_of(rt, id1 - 1);
  // Relaxed: a finalized comm's late callbacks are only counted.
  if (c == nullptr || c->live.load(std::memory_order_relaxed) == 0) return null_context();
  return c;
}

// -------------------------------------------------------------- completion

// Defined in completion.cpp, which holds an op's whole way from its claim to a
// record a sink can use.
// The op of handle op_v reached zero: claim it, write its record into this
// thread's ring and free its slot. Returns 0 (an event can end with it).
int complete_from_handle(uint64_t op_v, OpSlot& s) noexcept;
// Completes (as reclaimed) every in-flight op of `c` started before
// `older_than_ticks` (UINT64_MAX: all of them). Returns the count.
size_t reclaim_ops(Context& c, uint64_t older_than_ticks) noexcept;

}  // namespace ni::core
