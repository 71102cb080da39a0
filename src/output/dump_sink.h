// The plugin's Sink: the dump thread and what it writes.
//
// Threads and contract:
//  - start/stop/comm_added/comm_removed: cold paths (init/finalize threads, the
//    process-exit hook); serialized internally, never called concurrently with
//    the destructor.
//  - wake(): any event thread; noexcept, never blocks (an atomic store and a
//    condition-variable notify). A wake that races with the thread going to
//    sleep can be missed; the cost is at most one interval, never a loss.
//  - The dump thread ("ni-dump", all signals blocked) is the only consumer of
//    the RecordSource and the only user of the file writers.
//
// Each cycle (every dump_interval_us, on wake(), at once on comm_removed and
// stop) it tells every configured output (output.h; the gzip log and the
// Prometheus file, enabled by the Config) about new comms; reclaims stale ops
// (every 100 ms); drains every ring in bulk and hands each record, outside any
// lock, to every output; then removed comms, moved clock estimates, and the
// end of the cycle (stats when due, one write per output). stop() runs a final cycle
// at once (stats + `end`), fsyncs, closes and joins: it never waits out an
// interval. Process exit: an atexit hook (registered once per library load)
// stops every running sink, so a process that never finalizes its comms still
// gets its tail written (see ni_output_exit_hook and kMaxSinks in dump_sink.cpp
// for why it is safe after dlclose).
//
// Run-time control: the thread looks (at most once a second) for
// <dump dir>/dump-now (acted on once per touch: every process sharing the
// directory sees it; it is not removed) and <dump dir>/dump-now.<pid> (this
// process only; removed after use). Either one forces a stats record, a flush
// + fsync of the log and a Prometheus write now.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "src/core/config.h"
#include "src/core/runtime.h"
#include "src/output/encoder.h"
#include "src/output/io.h"
#include "src/output/output.h"
#include "src/output/source.h"

namespace ni::out {

struct SinkOptions {
  Io* io = nullptr;                 // nullptr: posix_io()
  GetEnv getenv;                    // empty: std::getenv
  std::string host;                 // empty: host_name()
  int64_t pid = 0;                  // 0: getpid()
  uint64_t retry_ns = 1000000000;   // retry pacing while writes fail
  uint64_t trigger_check_ns = 1000000000;  // dump-now file polling
  bool exit_hook = true;            // register with the process-exit hook
  std::string plugin_version;       // empty: the build's version
};

class DumpSink final : public Sink {
 public:
  explicit DumpSink(std::unique_ptr<RecordSource> src, SinkOptions opts = {});
  ~DumpSink() override;

  void start(const Config& cfg, ni::abi::DebugLogger logfn) override;
  void comm_added(const CommInfo& c) override;
  void comm_removed(uint32_t comm_id) override;
  void wake() noexcept override;
  void stop() override;

  // ---- introspection (tests, benchmarks)
  StatsSnapshot totals() const;          // consistent after stop()
  std::string log_path() const;          // current/last log file ("" if none)
  std::string prom_path() const;
  uint64_t cycles() const { return cycles_.load(std::memory_order_relaxed); }  // statistic: no ordering
  bool running() const;

  // Runs the exit hook's work (stops every registered sink). Exposed for tests.
  static void run_exit_hook();

 private:
  struct CommEntry {
    CommInfo info;
    ClockEstimate clock;      // last clock estimate handed out (valid=false: none)
    ClockEstimate cycle_clock;// estimate used for this cycle's records
    uint64_t clock_cycle = UINT64_MAX;
    // The estimates P2P launch groups were written with: one entry per cycle
    // that wrote a grouped record, with the highest group number seen by its
    // end. A part of group g takes the estimate of the first entry that had
    // seen g, so every part of a group gets the one its first written part
    // got, however many cycles and other groups lie between them (the reader
    // takes an AlltoAll's span from its parts' start_wall_ns, and the estimate
    // moves between cycles). Groups are numbered by their launching thread.
    struct GroupClock {
      uint64_t cycle = 0;
      uint32_t max_group = 0;
      ClockEstimate clock;
    };
    static constexpr size_t kGroupClocks = 32;
    GroupClock group_clock[kGroupClocks];
    size_t group_clock_first = 0, group_clock_n = 0;  // a ring, oldest first
    // Progress lines (report_progress()): the state's fingerprint as last
    // seen and as last written, and when each happened.
    uint64_t progress_seen = 0, progress_written = 0;
    uint64_t progress_seen_ns = 0, progress_written_ns = 0;
    uint64_t done_seq[kProgressFuncs] = {};  // per collective function: the highest seq completed + 1 (0 none)
  };
  struct Configured {
    std::string_view format;          // formats() name
    std::unique_ptr<Output> out;
    uint64_t last_stats_ns = 0;       // when its counters were last due
  };

  bool start_locked(const Config& cfg);
  void make_outputs(const std::string& stamp);
  void run();
  void fail_cycle(const std::exception& e);
  void cycle(bool final, std::vector<CommInfo>& added, std::vector<uint32_t>& removed);
  void add_comms(const std::vector<CommInfo>& added, int64_t wall);
  void announce(const CommInfo& c, int64_t wall);
  void dispatch_record(const OpRecord& r);
  const ClockEstimate* cycle_clock(CommEntry* ce, const OpRecord& r);
  static const ClockEstimate* group_clock(CommEntry* ce, uint32_t group, uint64_t cycle);
  void remove_comms(const std::vector<uint32_t>& removed, int64_t wall);
  void hand_out_clocks(int64_t wall);
  void report_progress(uint64_t now);
  void end_cycle(uint64_t now, int64_t wall, bool final, bool forced);
  CommEntry* find_comm(uint32_t comm_id);
  bool check_trigger(uint64_t now_ns);
  StatsSnapshot snapshot_now(bool include_pending);
  std::string path_of(std::string_view format) const;
  void stop_internal();
  void log(ni::abi::LogLevel level, const std::string& msg);

  std::unique_ptr<RecordSource> src_;
  SinkOptions opts_;
  Io* io_;
  Config cfg_;
  MetaInfo meta_;
  ClockAnchor anchor_;
  // After what they refer to (cfg_, meta_): destroyed first.
  std::vector<Configured> outputs_;
  // What the dump thread took from pending_added_/pending_removed_ this cycle.
  // Members rather than run()'s locals: a forked child, which has no dump
  // thread, still reaches them through the sink it abandoned (fork.h).
  std::vector<CommInfo> taken_added_;
  std::vector<uint32_t> taken_removed_;
  Output* counting_ = nullptr;   // the output that decides records_written (output.h)
  bool wants_clock_ = false;     // some output wants clock estimates

  // ---- shared with other threads, under mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_req_ = false;
  bool urgent_ = false;
  std::vector<CommInfo> pending_added_;
  std::vector<uint32_t> pending_removed_;
  // Set by wake() (any thread, relaxed): the dump thread's wait predicate
  // reads it under mu_; a missed store costs at most one interval.
  std::atomic<bool> wake_{false};
  std::mutex stop_mu_;  // serializes start/stop
  std::thread thread_;
  bool started_ = false;
  int64_t owner_pid_ = 0;  // the process that started the thread (fork guard)

  // ---- dump thread only (read by totals() after join)
  std::unordered_map<uint32_t, CommEntry> comms_;
  uint32_t last_comm_id_ = UINT32_MAX;
  CommEntry* last_comm_ = nullptr;
  bool comms_refreshed_ = false;
  CoreStats last_core_;          // core counters as of the last time some output's were due
  uint64_t records_written_ = 0;
  uint64_t dropped_write_error_ = 0;
  // Records still in the rings after the final drain (threads that went on
  // completing ops while the process exited): lost, and counted as such.
  uint64_t dropped_at_exit_ = 0;
  uint64_t cycle_no_ = 0;
  uint64_t last_reclaim_ns_ = 0;
  uint64_t last_stats_ns_ = 0;   // clock refinement, every stats_interval_ms
  uint64_t last_clock_check_ns_ = 0;
  uint64_t last_progress_ns_ = 0;
  bool signal_flush_ = false;  // this cycle answers a signal's flush request (signal_flush.h)
  uint64_t last_activity_ns_ = 0;  // a record or progress line was last handed out (alive lines)
  uint64_t last_trigger_ns_ = 0;
  struct TriggerSeen {
    bool exists = false;
    int64_t mtime_ns = 0;
    ino_t ino = 0;
  } trigger_seen_;
  bool thread_failed_logged_ = false;
  std::atomic<uint64_t> cycles_{0};
  mutable std::mutex totals_mu_;
  StatsSnapshot totals_;  // published after each cycle
};

}  // namespace ni::out
