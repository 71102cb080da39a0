// The gzip JSON-lines log as an Output: records are encoded outside any lock
// into ~1 MiB of text, each sealed into one gzip member (GzipLog); a cycle's
// members go out in one write at end_cycle(), after the cycle's stats (and,
// at the end, `end`) record; when that write fails, the stats (and end) are
// written again alone, with the loss counted (restate_loss()). Every file
// starts with meta + the comms already announced (GzipLog's header).
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <unordered_map>

#include "src/output/output.h"

namespace ni::out {
namespace {

constexpr size_t kMemberText = 1u << 20;  // ~1 MiB of JSON per gzip member

class LogOutput final : public Output {
 public:
  explicit LogOutput(const OutputEnv& env)
      : env_(env), enc_(env.anchor, env.cfg.dump_verbose), gz_(env.io, file_options(env), env.log, header_fn()) {}

  uint64_t stats_period_ns() const override { return static_cast<uint64_t>(env_.cfg.stats_interval_ms) * 1000000; }
  bool keeps_records() const override { return true; }
  bool wants_clock() const override { return true; }

  void comm(const CommInfo& c, int64_t wall_ns) override {
    comms_[c.comm_id].info = c;  // a new comm is announced once a batch holding its line went out
    enc_.comm(text_, c, wall_ns);
  }
  void record(const OpRecord& r, const CommInfo* comm, const ClockEstimate* clk) override {
    enc_.op(text_, r, comm, clk);
    ++text_records_;
    if (text_.size() >= kMemberText) seal_member();
  }
  void comm_end(const CommInfo& c, int64_t wall_ns) override {
    enc_.comm_end(text_, c, wall_ns);
    comms_.erase(c.comm_id);
  }
  void clock(const ClockEstimate& e, const CommInfo& c, int64_t wall_ns) override {
    enc_.clock(text_, e, c.comm_hash, wall_ns);
  }
  void progress(const CommProgress& p, const CommInfo& c, uint64_t now_mono_ns) override {
    enc_.progress(text_, p, c, now_mono_ns);
  }
  void alive(int64_t wall_ns) override { enc_.alive(text_, wall_ns); }

  Flushed end_cycle(const CycleEnd& c) override {
    if (c.stats_due) {
      enc_.stats(text_, c.stats, c.wall_ns);
      if (c.final) enc_.end(text_, c.stats, c.wall_ns);
    }
    bool ok = true;
    const Flushed f = flush(c.now_ns, &ok);
    if (c.stats_due && !ok) restate_loss(c, f);
    // Whether or not that write worked, later files repeat these comms in their header.
    for (auto& [id, e] : comms_) e.announced = true;
    if (c.final)
      gz_.close(true);
    else if (c.forced)
      gz_.sync();
    return f;
  }

  uint64_t pending() const override { return text_records_ + sealed_records_; }
  uint64_t discard() override {
    // Sealed members stay queued in gz_ (they are written if the next flush
    // works); counted as lost all the same, as they always were.
    const uint64_t n = text_records_ + sealed_records_;
    text_.clear();
    text_records_ = sealed_records_ = 0;
    return n;
  }
  std::string path() const override { return gz_.path(); }

 private:
  struct Entry {
    CommInfo info;
    bool announced = false;  // its comm line was in a flushed batch
  };

  static LogFileOptions file_options(const OutputEnv& env) {
    LogFileOptions lo;
    lo.dir = env.cfg.dump_dir;
    lo.base = env.meta.host + "-pid" + std::to_string(env.meta.pid) + "-" + env.stamp;
    lo.level = static_cast<int>(env.cfg.compression_level);
    lo.rotate_bytes = env.cfg.rotate_mb > 0 ? static_cast<uint64_t>(env.cfg.rotate_mb) << 20 : 0;
    lo.retry_ns = env.retry_ns;
    return lo;
  }
  GzipLog::HeaderFn header_fn() {
    return [this](Buf& b, uint32_t seq) {
      enc_.meta(b, env_.meta, seq);
      const int64_t w = enc_.mono_to_wall(env_.now_mono_ns());
      for (const auto& [id, e] : comms_)
        if (e.announced) enc_.comm(b, e.info, w);
    };
  }
  void seal_member() {
    if (text_.empty()) return;
    gz_.add_member(text_.data(), text_.size());
    sealed_records_ += text_records_;
    text_records_ = 0;
    text_.clear();
  }
  Flushed flush(uint64_t now_ns, bool* ok = nullptr) {
    seal_member();
    Flushed f;
    if (!gz_.has_pending()) return f;
    const bool done = gz_.flush(now_ns);
    (done ? f.written : f.lost) = sealed_records_;
    sealed_records_ = 0;
    if (ok != nullptr) *ok = done;
    return f;
  }
  // The batch that carried the stats record (and, at the end, `end`) was
  // lost with its records: the loss would go unseen. Say it again in a member
  // of its own, with this batch's records counted as lost, which may fit
  // where the batch did not (a nearly full disk or quota). Tried at once,
  // past the retry pacing; at the end up to three times, 10 ms apart (the
  // process is exiting: bounded, never a stall).
  void restate_loss(const CycleEnd& c, const Flushed& f) {
    StatsSnapshot s = c.stats;
    s.records_written -= std::min(s.records_written, f.lost);
    s.dropped_write_error += f.lost;
    for (int attempt = 0; attempt < (c.final ? 3 : 1); ++attempt) {
      if (attempt != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      enc_.stats(text_, s, c.wall_ns);
      if (c.final) enc_.end(text_, s, c.wall_ns);
      gz_.add_member(text_.data(), text_.size());
      text_.clear();
      if (gz_.flush(c.now_ns, /*force=*/true)) return;
    }
  }

  const OutputEnv env_;  // a copy: what it refers to belongs to the sink, which outlives this
  Encoder enc_;
  std::unordered_map<uint32_t, Entry> comms_;
  Buf text_;
  uint64_t text_records_ = 0;    // records encoded in text_
  uint64_t sealed_records_ = 0;  // records in compressed members not yet written
  GzipLog gz_;                   // last: its header reads the members above
};

}  // namespace

std::unique_ptr<Output> make_log_output(const OutputEnv& env) { return std::make_unique<LogOutput>(env); }

}  // namespace ni::out
