// The capture core's side of the contract with src/output (the dump thread).
//
// Lifetime: the first comm_init of a library load creates the runtime, loads
// the Config and starts the Sink; comm_finalize of the last live comm stops
// the Sink (final drain, thread joined) and tears the runtime down, so the
// library can be dlclosed and dlopened again (profiler-abi.md §6, §11.20).
//
// Times in OpRecord: *_ns CPU fields are CLOCK_MONOTONIC nanoseconds (from the
// TSC, calibrated); start_ns/end_ns are GPU pTimer ns when timing == kGpu
// (convert with the comm's ClockEstimate), CPU monotonic ns otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "include/nccl_inspector/counters.h"
#include "plugin/abi/common.h"
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
  virtual void start(const Config& cfg, nccl_abi::DebugLogger logfn) = 0;
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

// ---- called by the Sink's thread (single consumer at a time)
// Moves every record out of every thread ring; fn gets contiguous runs.
size_t drain_records(const std::function<void(const OpRecord*, size_t)>& fn);
// Completes ops stuck longer than the configured timeout (marks them
// reclaimed); their records land in the calling thread's ring. Returns count.
size_t reclaim_stale_ops(uint64_t now_mono_ns);
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
void log(nccl_abi::LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// ---- marks (ncclInspectorMark): a kind == kMark OpRecord whose label is
// stored NUL-terminated in the bytes of `channels` (up to kMarkLabelMax-1).
inline constexpr OpKind kMarkKind = static_cast<OpKind>(3);
inline constexpr size_t kMarkLabelMax = sizeof(OpRecord::channels);

}  // namespace ni
