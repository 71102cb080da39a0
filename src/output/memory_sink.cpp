// A Sink that keeps nothing running: records stay in the rings until a test
// (or the final stop) drains them. Used by the core's tests and by builds of
// the plugin without the file output.
#include "src/output/memory_sink.h"

namespace ni::out {

MemorySink* MemorySink::current_ = nullptr;

void MemorySink::start(const Config&, ni::abi::DebugLogger) { current_ = this; }
void MemorySink::comm_added(const CommInfo& c) {
  std::lock_guard<std::mutex> lk(mu_);
  comms_.push_back(c);
}
void MemorySink::comm_removed(uint32_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  removed_.push_back(id);
  collect_locked();
}
void MemorySink::wake() noexcept { wakes_.fetch_add(1, std::memory_order_relaxed); }  // statistic
void MemorySink::stop() {
  std::lock_guard<std::mutex> lk(mu_);
  collect_locked(true);
  final_stats_ = ni::stats();
  stopped_ = true;
}
void MemorySink::collect_locked(bool final) {
  ni::drain_records([this](const OpRecord* r, size_t n) { records_.insert(records_.end(), r, r + n); }, final);
}
size_t MemorySink::discard() {
  std::lock_guard<std::mutex> lk(mu_);
  records_.clear();
  return stopped_ ? 0 : ni::drain_records([](const OpRecord*, size_t) {});
}
std::vector<OpRecord> MemorySink::take() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!stopped_) collect_locked();
  std::vector<OpRecord> out;
  out.swap(records_);
  return out;
}

}  // namespace ni::out
