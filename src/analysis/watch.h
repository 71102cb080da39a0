// `watch`: a running job's logs, followed as they grow and summarised every
// few seconds in a terminal.
//
// Contract: Watch::poll() finds log files that appeared under the inputs and
// reads what every followed file gained since the last poll (Follower,
// reader_record.h: never from the start again); Watch::render() draws the
// current state as text. Memory is bounded: a window of the latest ops (by
// arrival, at most max_window_ops) feeds the per-window views; totals are
// counters. What the window cannot support (too few instances for a late
// rank, no GPU times) is said, never guessed.
#pragma once

#include <csignal>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/analysis/locate.h"
#include "src/analysis/model.h"
#include "src/analysis/reader.h"

namespace ni::analysis {
namespace reader_detail {
class Follower;
}

struct WatchOptions {
  std::vector<std::string> inputs;
  double window_s = 60;                   // the views cover ops that arrived this recently
  std::size_t max_window_ops = 1u << 18;  // and at most this many (the oldest leave first; ~25 MB)
  std::size_t top = 8;                    // rows of the op-group table
  bool color = false;                     // bold headings and a red LATE (a terminal without NO_COLOR)
  const HostMap* host_map = nullptr;
  // Polled between reads: a poll catching up on a large backlog ends early
  // when it turns true (Ctrl-C).
  const volatile std::sig_atomic_t* stop = nullptr;
  std::size_t max_poll_bytes = std::size_t{256} << 20;  // read per poll over all files (the rest next time)
  // A poll stops reading after this long (the rest next time, said on the
  // screen), so that a reader slower than the job still redraws every
  // interval and ends at once on Ctrl-C. The files are read in turn, 256 KiB
  // at a time.
  double poll_budget_s = 1.0;
};

class Watch {
 public:
  explicit Watch(WatchOptions o);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Looks for new files (every call), reads what the followed ones gained.
  // now_ns: a monotonic clock, for rates and the window. Returns ops read.
  std::uint64_t poll(std::int64_t now_ns);
  // The screen: health line, op groups of the window by GPU time, late ranks,
  // findings. now_wall_ns: for "last record N s ago".
  std::string render(std::int64_t now_wall_ns) const;

  // For tests: totals so far.
  std::uint64_t ops_total() const { return ops_total_; }
  std::size_t files() const { return infos_.size(); }
  std::string error() const { return error_; }  // the inputs could not be searched ("" fine)

 private:
  struct Sink;
  struct Window {
    std::int64_t arrived_ns = 0;
    Op op;
  };
  void discover();
  ReadResult result_for_analysis() const;

  WatchOptions o_;
  std::deque<FileInfo> infos_;  // stable addresses: followers write into them
  std::map<std::string, std::size_t> known_;  // path -> index in infos_
  std::unique_ptr<Sink> sink_;
  std::vector<std::unique_ptr<reader_detail::Follower>> followers_;
  std::deque<Window> window_;
  std::int64_t newest_start_ns_ = 0;  // the latest op start read: ops older than the window skip it
  std::uint64_t ops_total_ = 0, window_dropped_ = 0;
  std::uint64_t behind_bytes_ = 0;  // bytes the followed files had at the last poll and it did not read
  std::size_t next_follower_ = 0;   // where the next poll starts its first round
  std::int64_t now_ns_ = 0, first_poll_ns_ = 0;
  std::deque<std::pair<std::int64_t, std::uint64_t>> rate_;  // (poll time, ops_total) of the last ~10 s
  std::string error_;
};

}  // namespace ni::analysis
