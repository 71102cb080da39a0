// What the dump thread needs from the capture core, as an interface, so the
// whole output layer is tested against a fake (tests/output/fake_source.h)
// and links into the plugin through CoreSource (core_source.cpp), which
// forwards to the ni:: runtime functions of src/core/runtime.h.
//
// Contract: every method is called from the dump thread only (one consumer),
// except log(), which may be called from any thread on cold paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "include/nccl_inspector/nccl.h"
#include "src/core/record.h"
#include "src/core/runtime.h"

namespace ni::out {

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Moves every record out of every ring; fn gets contiguous runs.
  // `final`: the last drain (records still waiting for the GPU go out too).
  virtual size_t drain(const std::function<void(const OpRecord*, size_t)>& fn, bool final) = 0;
  // Completes ops older than the configured timeout (their records are then drained).
  virtual size_t reclaim(uint64_t now_mono_ns) = 0;
  virtual CoreStats stats() = 0;
  virtual std::vector<CommInfo> comms() = 0;
  virtual ClockEstimate clock(uint32_t comm_id) = 0;
  // CPU monotonic ns, the clock of OpRecord's CPU fields.
  virtual uint64_t now_mono_ns() = 0;
  virtual void refine_clock() = 0;
  // Every live comm's issue state and its ops in flight >= min_age_ns.
  virtual std::vector<CommProgress> progress(uint64_t /*min_age_ns*/) { return {}; }
  virtual void log(ni::abi::LogLevel level, const std::string& msg) = 0;
};

// Forwards to the core (src/core/runtime.h). Defined in core_source.cpp,
// which only the plugin (ni_output_core) links.
std::unique_ptr<RecordSource> make_core_source();

}  // namespace ni::out
