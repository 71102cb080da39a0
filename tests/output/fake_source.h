// A RecordSource for tests: records pushed by any thread, comms, clock
// estimates and stats set by the test, logs captured.
#pragma once

#include <time.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/output/source.h"

namespace ni::out::testing {

inline uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class FakeSource final : public RecordSource {
 public:
  void push(const OpRecord& r) {
    std::lock_guard<std::mutex> lk(mu_);
    q_.push_back(r);
    ++core_.ops_completed;
  }
  void set_comm(const CommInfo& c) {
    std::lock_guard<std::mutex> lk(mu_);
    comms_[c.comm_id] = c;
  }
  void set_clock(const ClockEstimate& e) {
    std::lock_guard<std::mutex> lk(mu_);
    clocks_[e.comm_id] = e;
  }
  void add_ring_drops(uint64_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    core_.dropped_ring_full += n;
    core_.ops_completed += n;
  }
  void set_progress(std::vector<CommProgress> p) {
    std::lock_guard<std::mutex> lk(mu_);
    progress_ = std::move(p);
  }
  std::vector<CommProgress> progress(uint64_t) override {
    std::lock_guard<std::mutex> lk(mu_);
    return progress_;
  }
  std::vector<std::string> logs() {
    std::lock_guard<std::mutex> lk(mu_);
    return logs_;
  }
  size_t warnings() {
    std::lock_guard<std::mutex> lk(mu_);
    return warns_;
  }
  size_t drains() {
    std::lock_guard<std::mutex> lk(mu_);
    return drains_;
  }

  size_t drain(const std::function<void(const OpRecord*, size_t)>& fn, bool /*final*/) override {
    std::vector<OpRecord> batch;
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++drains_;
      batch.assign(q_.begin(), q_.end());
      q_.clear();
    }
    // Contiguous runs of at most 256, like ring segments.
    for (size_t i = 0; i < batch.size(); i += 256) fn(batch.data() + i, std::min<size_t>(256, batch.size() - i));
    return batch.size();
  }
  size_t reclaim(uint64_t) override { return 0; }
  CoreStats stats() override {
    std::lock_guard<std::mutex> lk(mu_);
    return core_;
  }
  std::vector<CommInfo> comms() override {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<CommInfo> v;
    for (auto& [id, c] : comms_) v.push_back(c);
    return v;
  }
  ClockEstimate clock(uint32_t comm_id) override {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = clocks_.find(comm_id);
    if (it == clocks_.end()) {
      ClockEstimate e;
      e.comm_id = comm_id;
      return e;
    }
    return it->second;
  }
  uint64_t now_mono_ns() override { return mono_ns(); }
  void refine_clock() override {}
  void log(ni::abi::LogLevel level, const std::string& msg) override {
    std::lock_guard<std::mutex> lk(mu_);
    logs_.push_back(msg);
    if (level == ni::abi::kLogWarn) ++warns_;
  }

 private:
  std::mutex mu_;
  std::deque<OpRecord> q_;
  std::unordered_map<uint32_t, CommInfo> comms_;
  std::unordered_map<uint32_t, ClockEstimate> clocks_;
  std::vector<CommProgress> progress_;
  CoreStats core_;
  std::vector<std::string> logs_;
  size_t warns_ = 0;
  size_t drains_ = 0;
};

// A plausible collective record.
inline OpRecord make_coll(uint32_t comm_id, uint64_t seq, Func f = Func::kAllReduce, uint64_t bytes = 1 << 20) {
  OpRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = static_cast<uint8_t>(OpKind::kColl);
  r.comm_id = comm_id;
  r.comm_hash = 0x1234567890abcdefull + comm_id;
  r.seq = seq;
  r.func = static_cast<uint8_t>(f);
  r.dtype = static_cast<uint8_t>(DType::kFloat32);
  r.count = bytes / 4;
  r.bytes = bytes;
  r.algo = static_cast<uint8_t>(Algo::kRing);
  r.proto = static_cast<uint8_t>(Proto::kSimple);
  r.timing = static_cast<uint8_t>(TimingSource::kProxyCpu);
  r.transport = static_cast<uint8_t>(Transport::kIntraNode);
  r.rank = 0;
  r.peer = -1;
  r.n_channels = 2;
  r.n_warps = 16;
  r.channel_mask = 0x3;
  r.channels_started = r.channels_stopped = 2;
  uint64_t t0 = mono_ns() - 1000000;
  r.enqueue_ns = t0 - 5000;
  r.start_ns = t0;
  r.end_ns = t0 + 100000;
  r.channels[0] = {0, 100000};
  r.channels[1] = {1000, 90000};
  r.max_channel_ns = 100000;
  r.min_channel_ns = 90000;
  r.busy_ns = 190000;
  return r;
}

inline CommInfo make_comm(uint32_t id, int nranks = 8, int rank = 0) {
  CommInfo c;
  c.comm_id = id;
  c.comm_hash = 0x1234567890abcdefull + id;
  c.name = "comm" + std::to_string(id);
  c.rank = rank;
  c.nranks = nranks;
  c.nnodes = 1;
  c.abi_version = 5;
  return c;
}

}  // namespace ni::out::testing
