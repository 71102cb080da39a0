// In-memory Sink for tests: collects every record drained from the rings.
#pragma once

#include <atomic>
#include <mutex>
#include <vector>

#include "src/core/runtime.h"

namespace ni::out {

class MemorySink final : public Sink {
 public:
  void start(const Config& cfg, ni::abi::DebugLogger logfn) override;
  void comm_added(const CommInfo& c) override;
  void comm_removed(uint32_t comm_id) override;
  void wake() noexcept override;
  void stop() override;

  // Drains the rings now (unless stopped) and returns everything collected.
  std::vector<OpRecord> take();
  // Drains the rings now and drops what it drained (benchmarks: no allocation,
  // as a real consumer that writes records out). Returns the count.
  size_t discard();
  std::vector<CommInfo> comms_seen() {
    std::lock_guard<std::mutex> lk(mu_);
    return comms_;
  }
  CoreStats final_stats() {
    std::lock_guard<std::mutex> lk(mu_);
    return final_stats_;
  }
  uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }  // statistic

  // The sink of the current runtime (tests reach it through this).
  static MemorySink* current_;

 private:
  void collect_locked(bool final = false);
  std::mutex mu_;
  std::vector<OpRecord> records_;
  std::vector<CommInfo> comms_;
  std::vector<uint32_t> removed_;
  CoreStats final_stats_;
  bool stopped_ = false;
  std::atomic<uint64_t> wakes_{0};
};

}  // namespace ni::out
