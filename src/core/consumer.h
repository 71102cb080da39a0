// The capture core's API for its consumer: what the output's dump thread (or a
// test's in-memory sink) calls to take records out of the core, and what it
// needs to turn them into log lines (communicators, clock estimates, the
// configuration, statistics, logging).
//
// Threads: one consumer at a time (the dump thread, or the final drain once it
// is joined) calls drain_records() and reclaim_stale_ops(); the rest may be
// called from any thread. None of it is on NCCL's event path.
//
// Times in OpRecord: *_ns CPU fields are CLOCK_MONOTONIC nanoseconds (from the
// TSC, calibrated); start_ns/end_ns are GPU pTimer ns when timing == kGpu
// (convert with the comm's ClockEstimate), CPU monotonic ns otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "include/nccl_inspector/nccl.h"
#include "src/core/config.h"
#include "src/core/record.h"

namespace ni {

struct CommInfo {
  uint32_t comm_id = 0;       // process-local, unique per library load (OpRecord::comm_id)
  uint64_t comm_hash = 0;     // 0 until known (ABI v1-v3 learn it from the first op)
  std::string name;           // "" when NCCL gave none
  int rank = -1;
  int nranks = 0;
  int nnodes = 0;
  int abi_version = 0;
  int cuda_device = -1;       // CUDA device ordinal at init; -1 unknown (see cuda_device.h)
  std::string pci_bus_id;     // the device's PCI bus id ("0000:1b:00.0"); "" unknown
};

// GPU pTimer -> CPU monotonic: mono_ns = ptimer + offset_ns. The estimate is
// the tightest bound seen (CPU observation of a KernelCh start is never earlier
// than the GPU start), so it only moves down as samples arrive.
struct ClockEstimate {
  uint32_t comm_id = 0;
  bool valid = false;
  int64_t offset_ns = 0;
  uint64_t uncertainty_ns = 0;  // spread between the best and a typical sample
  uint64_t samples = 0;
};

// The core's counters, summed over the threads' own (defined in runtime.h;
// the per-thread ones are ThreadCounters, ring.h).
struct CoreStats;

// ---- called by the consumer's thread (single consumer at a time;
// completion.cpp)
// Moves every record out of every thread ring, finished (see completion.cpp);
// fn gets contiguous runs. CE records timed with CUDA events wait (parked)
// until their events have run, the driver fails, NCCL_INSPECTOR_OP_TIMEOUT_MS
// passes, or `final` (the last drain): then they go out too. Returns the
// records handed to fn.
size_t drain_records(const std::function<void(const OpRecord*, size_t)>& fn, bool final = false);
// Completes ops stuck longer than the configured timeout (marks them
// reclaimed); their records land in the calling thread's ring. Returns count.
size_t reclaim_stale_ops(uint64_t now_mono_ns);

// ---- progress (hangs; progress.cpp)
// An op in flight for at least the asked age, as its events left it.
struct StuckOp {
  uint64_t seq = 0;         // NCCL seqNumber (coll, ce), own per-peer counter (p2p)
  uint64_t bytes = 0;
  uint64_t enqueue_ns = 0;  // CPU monotonic ns of its start
  uint32_t issue = 0;       // collectives: place in the comm's issue order (OpRecord::issue); UINT32_MAX: none (API-only)
  int32_t peer = -1;        // root / peer, -1 none
  uint8_t kind = 0, func = 0, dtype = 0, n_channels = 0;
  uint64_t ch_started = 0, ch_stopped = 0;  // KernelCh channel masks
  // Network events (NCCL_INSPECTOR_ENABLE_NET): its open ProxyOps per peer
  // and direction, with the steps they posted and completed.
  struct Net {
    int32_t peer = -1;
    bool send = false;
    uint32_t proxy_ops = 0, posted = 0, done = 0;
  };
  std::vector<Net> net;
};
inline constexpr size_t kMaxStuckOps = 16;  // per comm and snapshot, the oldest
inline constexpr size_t kMaxStuckNet = 32;  // peer entries per stuck op

// The collective functions whose seqNumbers progress lines carry: Broadcast ..
// AllReduce (Func values 0-4, NCCL's per-function counters).
inline constexpr int kProgressFuncs = 5;

// Where one comm's issue stands, and its ops in flight that are old enough.
struct CommProgress {
  uint32_t comm_id = 0;
  uint64_t issued = 0;               // collectives started (Context::issued)
  uint64_t func_seq[kProgressFuncs] = {};  // last seqNumber + 1 started, Broadcast .. AllReduce (0 = none)
  uint64_t done_seq[kProgressFuncs] = {};         // set by the dump thread: the highest seq + 1 its records completed
  uint64_t p2p_started = 0;          // P2P ops started
  uint8_t last_func = 0;             // Func of the last collective started (when issued > 0)
  uint64_t api_issued = 0;           // collective calls of the application (CollApi, v5+)
  uint8_t last_api_func = 0;         // the last one's Func
  uint32_t in_flight = 0;            // recorded ops in flight now
  uint64_t quiet_ns = 0;             // set by the dump thread: how long the state has not changed
  std::vector<StuckOp> stuck;        // in flight >= min_age_ns, oldest first, at most kMaxStuckOps
};
// Every live comm's progress (dump thread; reads the pools without claiming).
std::vector<CommProgress> progress_snapshot(uint64_t min_age_ns);

// ---- any thread (runtime.cpp)
CoreStats stats();
std::vector<CommInfo> comms();
ClockEstimate clock_estimate(uint32_t comm_id);
// CPU monotonic now (same clock as OpRecord's CPU fields).
uint64_t mono_now_ns() noexcept;
// Refines the TSC calibration against CLOCK_MONOTONIC (call every so often).
void refine_clock() noexcept;
// The configuration in force (valid between start and stop).
const Config& config();
// Logs through NCCL's logger when one was given (v4+), else to stderr when
// NCCL_DEBUG asks for it. Cold path.
void log(ni::abi::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// ---- marks (ncclInspectorMark): a kind == kMark OpRecord whose label is
// stored NUL-terminated in the bytes of `channels` (up to kMarkLabelMax-1).
inline constexpr OpKind kMarkKind = static_cast<OpKind>(3);
inline constexpr size_t kMarkLabelMax = sizeof(OpRecord::channels);
// ---- tag names (ncclInspectorNameTag): the same, kind == kTagName, with the
// tag in user_tag and its name as the label.
inline constexpr OpKind kTagNameKind = static_cast<OpKind>(4);
// A mark or a tag name: a record of the user's, of no communicator.
inline bool is_note(uint8_t kind) {
  return kind == static_cast<uint8_t>(kMarkKind) || kind == static_cast<uint8_t>(kTagNameKind);
}

}  // namespace ni
