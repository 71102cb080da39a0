// The reading progress bar on stderr ("reading [####      ]  42.0%").
//
// Contract: while a ReadProgress that is on lives, a thread redraws the bar every
// 200 ms from `done` (compressed bytes read so far, added to by the readers with
// relaxed atomics) out of `total`; the destructor stops and joins that thread and
// clears the line. Off, it does nothing and starts no thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ni::analysis::reader_detail {

class ReadProgress {
 public:
  ReadProgress(bool on, std::uint64_t total, const std::atomic<std::uint64_t>& done);
  ~ReadProgress();
  ReadProgress(const ReadProgress&) = delete;
  ReadProgress& operator=(const ReadProgress&) = delete;

 private:
  void loop();

  bool on_;
  std::uint64_t total_;
  const std::atomic<std::uint64_t>& done_;
  std::thread th_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
};

}  // namespace ni::analysis::reader_detail
