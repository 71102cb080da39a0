// The reading progress bar (see reader_progress.h).
#include "src/analysis/reader_progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ni::analysis::reader_detail {

ReadProgress::ReadProgress(bool on, std::uint64_t total, const std::atomic<std::uint64_t>& done)
    : on_(on), total_(total), done_(done) {
  if (on_) th_ = std::thread([this] { loop(); });
}

ReadProgress::~ReadProgress() {
  if (!on_) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  th_.join();
  std::fprintf(stderr, "\r%60s\r", "");
}

void ReadProgress::loop() {
  std::unique_lock<std::mutex> g(mu_);
  while (!cv_.wait_for(g, std::chrono::milliseconds(200), [this] { return stop_; })) {
    // Relaxed: pairs with the readers' relaxed fetch_add; a display value, any recent one will do.
    const double f = total_ ? static_cast<double>(done_.load(std::memory_order_relaxed)) /
                                  static_cast<double>(total_)
                            : 1.0;
    const int w = 30, filled = static_cast<int>(std::min(1.0, f) * w);
    std::fprintf(stderr, "\rreading [%.*s%*s] %5.1f%%", filled, "##############################", w - filled, "",
                 100.0 * std::min(1.0, f));
    std::fflush(stderr);
  }
}

}  // namespace ni::analysis::reader_detail
