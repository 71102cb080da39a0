#include "src/output/dump_sink.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>

#ifndef NI_PLUGIN_VERSION
#define NI_PLUGIN_VERSION "unknown"
#endif

namespace ni::out {
namespace {

constexpr size_t kMemberText = 1u << 20;               // ~1 MiB of JSON per gzip member
constexpr uint64_t kReclaimEveryNs = 100000000;        // 100 ms
constexpr uint64_t kClockCheckEveryNs = 100000000;     // 100 ms

int64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// ---- process-exit hook

extern "C" {
extern void* __dso_handle;
int __cxa_atexit(void (*fn)(void*), void* arg, void* dso);
}
//
// Why an atexit-style hook and why it is safe after dlclose: in a shared object, atexit()
// binds the handler to that object's __dso_handle (glibc's libc_nonshared
// atexit calls __cxa_atexit(fn, 0, __dso_handle)), so dlclose() runs it (via
// __cxa_finalize) and then forgets it: the handler can never be called once
// the code is unmapped. At dlclose time every sink has already been stopped by
// the last comm finalize and unregistered, so the call finds nothing to do.
// At normal process exit it runs before this library's static destructors
// (registered earlier, run later), while the dump thread is still alive, and
// stops (drains) every running sink. Registered once per library load. It is
// never a static destructor that joins: atexit handlers run before them.
// _exit/quick_exit/SIGKILL skip it: the file then holds everything up to the
// last flush (every flush ends a gzip member).
constexpr int kMaxSinks = 16;
std::mutex g_exit_mu;                    // constant-initialized
DumpSink* g_sinks[kMaxSinks] = {};       // under g_exit_mu
bool g_hook_registered = false;          // under g_exit_mu

extern "C" void ni_output_exit_hook(void*) { DumpSink::run_exit_hook(); }

void register_sink(DumpSink* s) {
  std::lock_guard<std::mutex> lk(g_exit_mu);
  if (!g_hook_registered) {
    g_hook_registered = true;
    // __cxa_atexit with our own __dso_handle, spelled out: a plain atexit()
    // may resolve to an interposed one (sanitizer runtimes do this) that is
    // not tied to this object and would run after dlclose unmapped us.
    __cxa_atexit(ni_output_exit_hook, nullptr, &__dso_handle);
  }
  for (auto& slot : g_sinks)
    if (slot == nullptr) {
      slot = s;
      return;
    }
}

void unregister_sink(DumpSink* s) {
  std::lock_guard<std::mutex> lk(g_exit_mu);
  for (auto& slot : g_sinks)
    if (slot == s) slot = nullptr;
}

std::string start_stamp(int64_t wall_ns) {
  time_t secs = static_cast<time_t>(wall_ns / 1000000000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &t);
  return buf;
}

}  // namespace

void DumpSink::run_exit_hook() {
  std::lock_guard<std::mutex> lk(g_exit_mu);
  for (auto& slot : g_sinks) {
    if (slot != nullptr) {
      // Holding g_exit_mu keeps the sink alive: ~DumpSink unregisters first.
      slot->stop_internal();
      slot = nullptr;
    }
  }
}

DumpSink::DumpSink(std::unique_ptr<RecordSource> src, SinkOptions opts)
    : src_(std::move(src)), opts_(std::move(opts)), io_(opts_.io != nullptr ? opts_.io : &posix_io()) {}

DumpSink::~DumpSink() {
  unregister_sink(this);  // first: an exit hook running now finishes with us before this returns
  stop_internal();
}

void DumpSink::log(nccl_abi::LogLevel level, const std::string& msg) { src_->log(level, msg); }

bool DumpSink::running() const {
  std::lock_guard<std::mutex> lk(mu_);
  return started_ && !stop_req_;
}

void DumpSink::start(const Config& cfg, nccl_abi::DebugLogger /*logfn: the source logs*/) {
  // Registered with the exit hook after stop_mu_ is released: the hook holds
  // g_exit_mu while it takes stop_mu_ (one lock order: g_exit_mu -> stop_mu_).
  if (start_locked(cfg) && opts_.exit_hook) register_sink(this);
}

bool DumpSink::start_locked(const Config& cfg) {
  std::lock_guard<std::mutex> sl(stop_mu_);
  if (started_) return false;
  started_ = true;
  cfg_ = cfg;
  owner_pid_ = opts_.pid != 0 ? opts_.pid : static_cast<int64_t>(getpid());

  // Clock anchor: CLOCK_REALTIME bracketed by two reads of the core's clock.
  uint64_t m1 = src_->now_mono_ns();
  int64_t wall = wall_now_ns();
  uint64_t m2 = src_->now_mono_ns();
  enc_ = Encoder(ClockAnchor{wall, m1 + (m2 - m1) / 2}, cfg_.dump_verbose);

  const GetEnv getenv_fn = opts_.getenv ? opts_.getenv : GetEnv([](const char* n) { return std::getenv(n); });
  meta_.plugin_version = opts_.plugin_version.empty() ? NI_PLUGIN_VERSION : opts_.plugin_version;
  meta_.host = opts_.host.empty() ? host_name() : sanitize_for_filename(opts_.host);
  meta_.pid = owner_pid_;
  const std::string stamp = start_stamp(wall);
  meta_.job = detect_job(getenv_fn, meta_.host + "-" + std::to_string(meta_.pid) + "-" + stamp);
  meta_.config = config_json_fields(cfg_);

  Logger logger = [this](nccl_abi::LogLevel l, const std::string& m) { log(l, m); };
  if (cfg_.json_dump) {
    LogFileOptions lo;
    lo.dir = cfg_.dump_dir;
    lo.base = meta_.host + "-pid" + std::to_string(meta_.pid) + "-" + stamp;
    lo.level = static_cast<int>(cfg_.compression_level);
    lo.rotate_bytes = cfg_.rotate_mb > 0 ? static_cast<uint64_t>(cfg_.rotate_mb) << 20 : 0;
    lo.retry_ns = opts_.retry_ns;
    gz_ = std::make_unique<GzipLog>(*io_, lo, logger, [this](Buf& b, uint32_t seq) {
      enc_.meta(b, meta_, seq);
      int64_t w = enc_.mono_to_wall(src_->now_mono_ns());
      for (const auto& [id, e] : comms_)
        if (e.announced) enc_.comm(b, e.info, w);
    });
  }
  if (cfg_.prom_dump) {
    PromIdentity pid{meta_.job.job_id, meta_.host, meta_.pid, meta_.plugin_version};
    prom_ = std::make_unique<PromWriter>(*io_, cfg_.prom_dir.empty() ? cfg_.dump_dir : cfg_.prom_dir, pid, logger);
  }
  // A dump-now file that already exists is not a request made to this process.
  uint64_t now = src_->now_mono_ns();
  last_stats_ns_ = last_prom_ns_ = last_reclaim_ns_ = now;
  check_trigger(now);

  // The thread is born with every signal blocked: the application's handlers
  // must never run on it (and it never steals a signal meant for them).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    log(nccl_abi::kLogWarn, std::string("NCCL Inspector: cannot start the dump thread (") + e.what() +
                                "); nothing will be written.");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return thread_.joinable();
}

void DumpSink::comm_added(const CommInfo& c) {
  std::lock_guard<std::mutex> lk(mu_);
  pending_added_.push_back(c);
}

void DumpSink::comm_removed(uint32_t comm_id) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    pending_removed_.push_back(comm_id);
    urgent_ = true;  // drain now: the comm's last records and comm_end go out at once
  }
  cv_.notify_one();
}

void DumpSink::wake() noexcept {
  // relaxed: pairs with nothing; the waiter re-reads it under mu_ (see header).
  wake_.store(true, std::memory_order_relaxed);
  cv_.notify_one();
}

void DumpSink::stop() {
  stop_internal();
  unregister_sink(this);
}

void DumpSink::stop_internal() {
  std::lock_guard<std::mutex> sl(stop_mu_);
  if (!thread_.joinable()) return;
  if (static_cast<int64_t>(getpid()) != owner_pid_ && opts_.pid == 0) {
    // A fork()ed child: the thread does not exist here and the file is the
    // parent's. Forget the handle without touching it (joining would hang).
    new std::thread(std::move(thread_));  // leaked on purpose
    return;
  }
  if (std::this_thread::get_id() == thread_.get_id()) {  // exit() called on the dump thread itself
    thread_.detach();
    return;
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_req_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DumpSink::run() {
  pthread_setname_np(pthread_self(), "ni-dump");
  const auto interval = std::chrono::microseconds(cfg_.dump_interval_us > 0 ? cfg_.dump_interval_us : 100000);
  std::vector<CommInfo> added;
  std::vector<uint32_t> removed;
  for (;;) {
    bool final;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait_for(lk, interval, [&] { return stop_req_ || urgent_ || wake_.load(std::memory_order_relaxed); });
      final = stop_req_;
      urgent_ = false;
      wake_.store(false, std::memory_order_relaxed);
      added.swap(pending_added_);
      removed.swap(pending_removed_);
    }
    try {
      cycle(final, added, removed);
    } catch (const std::exception& e) {
      // bad_alloc while encoding: skip this cycle's output, keep the job alive.
      text_.clear();
      dropped_write_error_ += text_records_ + sealed_records_;
      text_records_ = sealed_records_ = 0;
      if (!thread_failed_logged_) {
        thread_failed_logged_ = true;
        log(nccl_abi::kLogWarn, std::string("NCCL Inspector: dump cycle failed: ") + e.what());
      }
    }
    added.clear();
    removed.clear();
    cycles_.fetch_add(1, std::memory_order_relaxed);
    if (final) break;
  }
}

DumpSink::CommEntry* DumpSink::find_comm(uint32_t comm_id) {
  if (comm_id == last_comm_id_) return last_comm_;
  auto it = comms_.find(comm_id);
  if (it == comms_.end() && !comms_refreshed_) {
    // Records can overtake their comm_added (or the core may not call it):
    // ask the core once per cycle.
    comms_refreshed_ = true;
    for (const CommInfo& c : src_->comms()) {
      if (comms_.count(c.comm_id) != 0) continue;
      CommEntry e;
      e.info = c;
      comms_.emplace(c.comm_id, e);
      if (gz_) enc_.comm(text_, c, enc_.mono_to_wall(src_->now_mono_ns()));
      if (prom_) prom_->set_comm(c);
    }
    it = comms_.find(comm_id);
  }
  last_comm_id_ = comm_id;
  last_comm_ = it == comms_.end() ? nullptr : &it->second;
  return last_comm_;
}

void DumpSink::encode_record(const OpRecord& r) {
  CommEntry* ce = static_cast<OpKind>(r.kind) == kMarkKind ? nullptr : find_comm(r.comm_id);
  if (ce != nullptr && ce->info.comm_hash == 0 && r.comm_hash != 0) [[unlikely]] {
    // ABI v1-v3: the comm's hash (and rank) arrive with its first ops, after
    // the comm record went out with hash 0: announce the comm again.
    ce->info.comm_hash = r.comm_hash;
    if (ce->info.rank < 0) ce->info.rank = r.rank;
    if (gz_) enc_.comm(text_, ce->info, enc_.mono_to_wall(src_->now_mono_ns()));
    if (prom_) prom_->set_comm(ce->info);
  }
  const CommInfo* ci = ce != nullptr ? &ce->info : nullptr;
  if (prom_) prom_->add(r, ci);
  if (!gz_) {
    ++records_written_;  // consumed by the enabled sinks (Prometheus only)
    return;
  }
  const ClockEstimate* clk = nullptr;
  if (ce != nullptr && static_cast<TimingSource>(r.timing) == TimingSource::kGpu) {
    if (ce->clock_cycle != cycle_no_) {  // one estimate per comm per cycle
      ce->cycle_clock = src_->clock(r.comm_id);
      ce->clock_cycle = cycle_no_;
    }
    clk = &ce->cycle_clock;
  }
  enc_.op(text_, r, ci, clk);
  ++text_records_;
  if (text_.size() >= kMemberText) seal_member();
}

void DumpSink::seal_member() {
  if (!gz_ || text_.empty()) return;
  gz_->add_member(text_.data(), text_.size());
  sealed_records_ += text_records_;
  text_records_ = 0;
  text_.clear();
}

void DumpSink::flush_log(uint64_t now_ns) {
  seal_member();
  if (!gz_ || !gz_->has_pending()) return;
  bool ok = gz_->flush(now_ns);
  if (ok)
    records_written_ += sealed_records_;
  else
    dropped_write_error_ += sealed_records_;
  sealed_records_ = 0;
}

StatsSnapshot DumpSink::snapshot_now(bool include_pending) {
  StatsSnapshot s;
  s.core = last_core_;
  s.records_written = records_written_ + (include_pending ? text_records_ + sealed_records_ : 0);
  s.dropped_write_error = dropped_write_error_;
  return s;
}

bool DumpSink::check_trigger(uint64_t now_ns) {
  last_trigger_ns_ = now_ns;
  if (cfg_.dump_dir.empty()) return false;
  std::string dir = cfg_.dump_dir;
  if (dir.back() != '/') dir.push_back('/');
  bool fire = false;
  struct stat st {};
  const std::string shared = dir + "dump-now";
  if (io_->stat(shared.c_str(), &st) == 0) {
    int64_t mt = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (!trigger_seen_.exists || trigger_seen_.mtime_ns != mt || trigger_seen_.ino != st.st_ino) fire = true;
    trigger_seen_ = {true, mt, st.st_ino};
  } else {
    trigger_seen_ = {};
  }
  const std::string mine = dir + "dump-now." + std::to_string(owner_pid_);
  if (io_->stat(mine.c_str(), &st) == 0) {
    io_->unlink(mine.c_str());
    fire = true;
  }
  return fire;
}

void DumpSink::cycle(bool final, std::vector<CommInfo>& added, std::vector<uint32_t>& removed) {
  ++cycle_no_;
  comms_refreshed_ = false;
  last_comm_id_ = UINT32_MAX;  // the map may rehash below
  last_comm_ = nullptr;
  const uint64_t now = src_->now_mono_ns();
  const int64_t wall = enc_.mono_to_wall(now);

  bool forced = false;
  if (now - last_trigger_ns_ >= opts_.trigger_check_ns) {
    forced = check_trigger(now);
    if (forced) log(nccl_abi::kLogInfo, "NCCL Inspector: dump-now requested");
  }

  std::vector<uint32_t> new_comms;
  for (const CommInfo& c : added) {
    auto [it, inserted] = comms_.try_emplace(c.comm_id);
    it->second.info = c;
    if (meta_.abi_version == 0) meta_.abi_version = c.abi_version;
    if (gz_) enc_.comm(text_, c, wall);
    if (prom_) prom_->set_comm(c);
    new_comms.push_back(c.comm_id);
  }

  if (final || now - last_reclaim_ns_ >= kReclaimEveryNs) {
    last_reclaim_ns_ = now;
    src_->reclaim(now);
  }

  src_->drain([this](const OpRecord* recs, size_t n) {
    for (size_t i = 0; i < n; ++i) encode_record(recs[i]);
  });

  for (uint32_t id : removed) {
    auto it = comms_.find(id);
    if (it == comms_.end()) continue;
    if (gz_) enc_.comm_end(text_, it->second.info, wall);
    if (prom_) prom_->comm_ended(id);
    comms_.erase(it);
  }
  last_comm_id_ = UINT32_MAX;
  last_comm_ = nullptr;

  if (gz_ && (final || forced || now - last_clock_check_ns_ >= kClockCheckEveryNs)) {
    last_clock_check_ns_ = now;
    for (auto& [id, e] : comms_) {
      ClockEstimate est = src_->clock(id);
      if (!est.valid) continue;
      const ClockEstimate& prev = e.clock;
      auto diff = [](int64_t a, int64_t b) { return a > b ? a - b : b - a; };
      if (!prev.valid || diff(prev.offset_ns, est.offset_ns) >= 1000 ||
          diff(static_cast<int64_t>(prev.uncertainty_ns), static_cast<int64_t>(est.uncertainty_ns)) >= 1000) {
        est.comm_id = id;
        enc_.clock(text_, est, e.info.comm_hash, wall);
        e.clock = est;
      }
    }
  }

  const bool stats_due = final || forced || now - last_stats_ns_ >= static_cast<uint64_t>(cfg_.stats_interval_ms) * 1000000;
  const bool prom_due =
      prom_ && (final || forced || now - last_prom_ns_ >= static_cast<uint64_t>(cfg_.prom_interval_us) * 1000);
  if (stats_due || prom_due) last_core_ = src_->stats();  // the core's counters: only when they are written
  if (stats_due) {
    last_stats_ns_ = now;
    src_->refine_clock();
    if (gz_) {
      StatsSnapshot s = snapshot_now(true);
      enc_.stats(text_, s, wall);
      if (final) enc_.end(text_, s, wall);
    }
  }

  flush_log(now);
  for (uint32_t id : new_comms) {
    auto it = comms_.find(id);
    if (it != comms_.end()) it->second.announced = true;
  }
  for (auto& [id, e] : comms_) e.announced = true;  // comms found through refresh too

  if (gz_ && (final || forced)) {
    if (final)
      gz_->close(true);
    else
      gz_->sync();
  }

  StatsSnapshot snap = snapshot_now(false);
  if (prom_due) {
    last_prom_ns_ = now;
    prom_->write(snap, wall_now_ns(), now);
  }
  std::lock_guard<std::mutex> lk(totals_mu_);
  totals_ = snap;
}

StatsSnapshot DumpSink::totals() const {
  std::lock_guard<std::mutex> lk(totals_mu_);
  return totals_;
}

std::string DumpSink::log_path() const { return gz_ ? gz_->path() : std::string(); }
std::string DumpSink::prom_path() const { return prom_ ? prom_->path() : std::string(); }

}  // namespace ni::out
