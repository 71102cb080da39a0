#include "src/output/dump_sink.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

#include "include/nccl_inspector/version.h"
#include "src/core/fork.h"
#include "src/output/signal_flush.h"

namespace ni::out {
namespace {

constexpr uint64_t kReclaimEveryNs = 100000000;        // 100 ms
constexpr uint64_t kClockCheckEveryNs = 100000000;     // 100 ms
// Progress lines: the pools are looked at every HANG_MS / 4 (at most every
// 250 ms), and a comm whose state changed is written at least this often.
constexpr uint64_t kProgressLookMaxNs = 250000000;       // 250 ms
constexpr uint64_t kProgressCheckpointNs = 60000000000;  // 60 s

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

// fork (src/core/fork.h): held across the fork; a child forgets the parent's
// sinks, so that its exit never drains (joins) a dump thread it does not have.
const bool g_sinks_in_fork = core::join_fork({core::kForkOrderExitHooks, []() noexcept { g_exit_mu.lock(); },
                                              []() noexcept { g_exit_mu.unlock(); },
                                              []() noexcept {
                                                for (auto& slot : g_sinks) slot = nullptr;
                                                g_exit_mu.unlock();
                                              }});

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

// 16 hex digits that tell this output's files from any other's: a plugin
// started again in the same process, or two containers whose processes share
// a pid. From the kernel's random pool when it answers at once; else mixed
// from the clocks, the pid and an address (unique enough for the purpose).
std::string new_instance_id(int64_t wall_ns, uint64_t mono_ns) {
  uint64_t v = 0;
  if (syscall(SYS_getrandom, &v, sizeof v, 1 /* GRND_NONBLOCK */) != static_cast<long>(sizeof v)) {
    static int where;
    v = static_cast<uint64_t>(wall_ns) ^ (mono_ns << 21) ^ (static_cast<uint64_t>(getpid()) << 40) ^
        reinterpret_cast<uintptr_t>(&where);
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdull;
    v ^= v >> 33;
  }
  static const char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 15];
  return s;
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

void DumpSink::log(ni::abi::LogLevel level, const std::string& msg) { src_->log(level, msg); }

bool DumpSink::running() const {
  std::lock_guard<std::mutex> lk(mu_);
  return started_ && !stop_req_;
}

void DumpSink::start(const Config& cfg, ni::abi::DebugLogger /*logfn: the source logs*/) {
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
  anchor_ = ClockAnchor{wall, m1 + (m2 - m1) / 2};

  const GetEnv getenv_fn = opts_.getenv ? opts_.getenv : GetEnv([](const char* n) { return std::getenv(n); });
  meta_.plugin_version = opts_.plugin_version.empty() ? std::string(kVersion) : opts_.plugin_version;
  meta_.host = !opts_.host.empty()     ? sanitize_for_filename(opts_.host)
               : !cfg_.host_name.empty() ? sanitize_for_filename(cfg_.host_name)
                                         : host_name();
  meta_.pid = owner_pid_;
  meta_.instance = new_instance_id(wall, m1);
  const std::string stamp = start_stamp(wall);
  meta_.job = detect_job(getenv_fn, meta_.host + "-" + std::to_string(meta_.pid) + "-" + stamp);
  meta_.config = config_json_fields(cfg_);
  make_outputs(stamp);

  // A dump-now file that already exists is not a request made to this process.
  uint64_t now = src_->now_mono_ns();
  last_stats_ns_ = last_reclaim_ns_ = now;
  for (Configured& o : outputs_) o.last_stats_ns = now;
  check_trigger(now);

  // The thread is born with every signal blocked: the application's handlers
  // must never run on it (and it never steals a signal meant for them).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::exception& e) {
    log(ni::abi::kLogWarn, std::string("NCCL Inspector: cannot start the dump thread (") + e.what() +
                                "); nothing will be written.");
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return thread_.joinable();
}

// Every format whose Config flag is set, in formats() order.
void DumpSink::make_outputs(const std::string& stamp) {
  const OutputEnv env{cfg_,
                      meta_,
                      anchor_,
                      stamp,
                      *io_,
                      [this](ni::abi::LogLevel l, const std::string& m) { log(l, m); },
                      opts_.retry_ns,
                      [this] { return src_->now_mono_ns(); }};
  for (const Format& f : formats()) {
    if (!(cfg_.*f.enabled)) continue;
    outputs_.push_back(Configured{f.name, f.make(env), 0});
    Output* o = outputs_.back().out.get();
    if (counting_ == nullptr && o->keeps_records()) counting_ = o;
    wants_clock_ = wants_clock_ || o->wants_clock();
  }
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
  // A signal's flush request (signal_flush.h) cannot notify the condition
  // variable: with it armed, the wait is cut into slices of at most 50 ms.
  const bool armed = cfg_.signal_flush && opts_.pid == 0 && signal_flush::arm(static_cast<pid_t>(syscall(SYS_gettid)));
  const auto slice = armed ? std::min<std::chrono::microseconds>(interval, std::chrono::milliseconds(50)) : interval;
  std::vector<CommInfo>& added = taken_added_;
  std::vector<uint32_t>& removed = taken_removed_;
  for (;;) {
    bool final;
    {
      std::unique_lock<std::mutex> lk(mu_);
      const auto due = std::chrono::steady_clock::now() + interval;
      auto woken = [&] {
        return stop_req_ || urgent_ || wake_.load(std::memory_order_relaxed) || (armed && signal_flush::pending() != 0);
      };
      while (!cv_.wait_for(lk, slice, woken) && std::chrono::steady_clock::now() < due) {
      }
      final = stop_req_;
      urgent_ = false;
      wake_.store(false, std::memory_order_relaxed);
      added.swap(pending_added_);
      removed.swap(pending_removed_);
    }
    const int sig = armed ? signal_flush::pending() : 0;
    signal_flush_ = sig != 0;
    try {
      cycle(final, added, removed);
    } catch (const std::exception& e) {
      fail_cycle(e);
    }
    if (sig != 0) {
      log(ni::abi::kLogInfo, "NCCL Inspector: signal " + std::to_string(sig) + ": pending records written");
      signal_flush::done();
      signal_flush_ = false;
    }
    added.clear();
    removed.clear();
    cycles_.fetch_add(1, std::memory_order_relaxed);  // a statistic for tests: pairs with nothing
    if (final) break;
  }
  if (armed) signal_flush::disarm();
}

void DumpSink::fail_cycle(const std::exception& e) {
  // bad_alloc while encoding: skip this cycle's output, keep the job alive.
  for (Configured& o : outputs_) {
    const uint64_t n = o.out->discard();
    if (o.out.get() == counting_) dropped_write_error_ += n;
  }
  if (!thread_failed_logged_) {
    thread_failed_logged_ = true;
    log(ni::abi::kLogWarn, std::string("NCCL Inspector: dump cycle failed: ") + e.what());
  }
}

void DumpSink::announce(const CommInfo& c, int64_t wall) {
  for (Configured& o : outputs_) o.out->comm(c, wall);
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
      announce(c, anchor_.to_wall(src_->now_mono_ns()));
    }
    it = comms_.find(comm_id);
  }
  last_comm_id_ = comm_id;
  last_comm_ = it == comms_.end() ? nullptr : &it->second;
  return last_comm_;
}

// The comm's clock estimate for a GPU-timed record: asked of the core once
// per comm per cycle, and only when some output wants it.
const ClockEstimate* DumpSink::cycle_clock(CommEntry* ce, const OpRecord& r) {
  if (!wants_clock_ || ce == nullptr || static_cast<TimingSource>(r.timing) != TimingSource::kGpu) return nullptr;
  if (ce->clock_cycle != cycle_no_) {
    ce->cycle_clock = src_->clock(r.comm_id);
    ce->clock_cycle = cycle_no_;
  }
  if (static_cast<OpKind>(r.kind) == OpKind::kP2p && r.issue != 0) return group_clock(ce, r.issue, cycle_no_);
  return &ce->cycle_clock;
}

// The estimate for a part of launch group `group` (CommEntry::GroupClock).
const ClockEstimate* DumpSink::group_clock(CommEntry* ce, uint32_t group, uint64_t cycle) {
  auto at = [ce](size_t i) -> CommEntry::GroupClock& {
    return ce->group_clock[(ce->group_clock_first + i) % CommEntry::kGroupClocks];
  };
  // Wrap-safe "a has seen b": group numbers are 32-bit counters.
  auto seen = [](uint32_t max_group, uint32_t g) { return static_cast<int32_t>(max_group - g) >= 0; };
  // Entries older than kStaleCycles leave: a group's parts are written within
  // a few cycles of each other, and an old entry's max_group would, once the
  // 32-bit group counter moved 2^31 past it, "have seen" every new group.
  constexpr uint64_t kStaleCycles = 1000;
  while (ce->group_clock_n > 0 && cycle - at(0).cycle > kStaleCycles) {
    ce->group_clock_first = (ce->group_clock_first + 1) % CommEntry::kGroupClocks;
    --ce->group_clock_n;
  }
  for (size_t i = 0; i < ce->group_clock_n; ++i) {
    CommEntry::GroupClock& e = at(i);
    if (e.cycle != cycle && seen(e.max_group, group)) return &e.clock;
  }
  if (ce->group_clock_n == 0 || at(ce->group_clock_n - 1).cycle != cycle) {
    if (ce->group_clock_n == CommEntry::kGroupClocks) {
      ce->group_clock_first = (ce->group_clock_first + 1) % CommEntry::kGroupClocks;
      --ce->group_clock_n;
    }
    CommEntry::GroupClock& e = at(ce->group_clock_n++);
    e.cycle = cycle;
    e.max_group = group;
    e.clock = ce->cycle_clock;
  }
  CommEntry::GroupClock& cur = at(ce->group_clock_n - 1);
  if (seen(group, cur.max_group)) cur.max_group = group;
  return &cur.clock;
}

void DumpSink::dispatch_record(const OpRecord& r) {
  CommEntry* ce = is_note(r.kind) ? nullptr : find_comm(r.comm_id);
  if (ce != nullptr && ce->info.comm_hash == 0 && r.comm_hash != 0) [[unlikely]] {
    // ABI v1-v3: the comm's hash (and rank) arrive with its first ops, after
    // the comm went out with hash 0: announce the comm again.
    ce->info.comm_hash = r.comm_hash;
    if (ce->info.rank < 0) ce->info.rank = r.rank;
    announce(ce->info, anchor_.to_wall(src_->now_mono_ns()));
  }
  // What the comm completed, for its progress lines: the highest seq per
  // collective function among the records drained (not those reclaimed, nor API-only ones: their seq is ours).
  if (ce != nullptr && static_cast<OpKind>(r.kind) == OpKind::kColl && r.func < kProgressFuncs && (r.flags & (kFlagReclaimed | kFlagApiOnly)) == 0)
    ce->done_seq[r.func] = std::max(ce->done_seq[r.func], r.seq + 1);
  const CommInfo* ci = ce != nullptr ? &ce->info : nullptr;
  const ClockEstimate* clk = cycle_clock(ce, r);
  for (Configured& o : outputs_) o.out->record(r, ci, clk);
  if (counting_ == nullptr) ++records_written_;  // consumed by every output that is on
}

StatsSnapshot DumpSink::snapshot_now(bool include_pending) {
  StatsSnapshot s;
  s.core = last_core_;
  s.records_written = records_written_ + (include_pending && counting_ != nullptr ? counting_->pending() : 0);
  s.dropped_write_error = dropped_write_error_;
  s.dropped_at_exit = dropped_at_exit_;
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
  const int64_t wall = anchor_.to_wall(now);

  bool forced = signal_flush_;  // a signal's flush: everything durable now
  if (now - last_trigger_ns_ >= opts_.trigger_check_ns) {
    forced = check_trigger(now) || forced;
    if (forced && !signal_flush_) log(ni::abi::kLogInfo, "NCCL Inspector: dump-now requested");
  }
  add_comms(added, wall);
  if (final || now - last_reclaim_ns_ >= kReclaimEveryNs) {
    last_reclaim_ns_ = now;
    src_->reclaim(now);
  }
  const size_t drained = src_->drain(
      [this](const OpRecord* recs, size_t n) {
        for (size_t i = 0; i < n; ++i) dispatch_record(recs[i]);
      },
      final);
  if (drained != 0 || last_activity_ns_ == 0) last_activity_ns_ = now;
  if (!final && cfg_.hang_ms > 0) {
    if (signal_flush_) last_progress_ns_ = 0;  // look now, whenever the last look was
    report_progress(now);
  }
  remove_comms(removed, wall);
  if (wants_clock_ && (final || forced || now - last_clock_check_ns_ >= kClockCheckEveryNs)) {
    last_clock_check_ns_ = now;
    hand_out_clocks(wall);
  }
  end_cycle(now, wall, final, forced);
}

void DumpSink::add_comms(const std::vector<CommInfo>& added, int64_t wall) {
  for (const CommInfo& c : added) {
    auto [it, inserted] = comms_.try_emplace(c.comm_id);
    it->second.info = c;
    if (meta_.abi_version == 0) meta_.abi_version = c.abi_version;
    announce(c, wall);
  }
}

void DumpSink::remove_comms(const std::vector<uint32_t>& removed, int64_t wall) {
  for (uint32_t id : removed) {
    auto it = comms_.find(id);
    if (it == comms_.end()) continue;
    for (Configured& o : outputs_) o.out->comm_end(it->second.info, wall);
    comms_.erase(it);
  }
  last_comm_id_ = UINT32_MAX;
  last_comm_ = nullptr;
}

// Progress lines, for hangs (docs/log-format.md, `progress`). A comm's line
// is written when its state (what it started, its ops in flight and how far
// the long-running ones got) differs from the one last written and either
// some op has been in flight for HANG_MS (it may be hung: say so now, while
// the process can), or the state has not moved for HANG_MS (the comm went
// quiet: its last state is then on disk before any kill), or a minute passed
// (a checkpoint). A job that runs steadily therefore writes one line per comm
// a minute; a hung one writes its state within HANG_MS + a cycle.
void DumpSink::report_progress(uint64_t now) {
  const uint64_t hang_ns = static_cast<uint64_t>(cfg_.hang_ms) * 1000000;
  const uint64_t look_every = std::min(hang_ns / 4, kProgressLookMaxNs);
  if (now - last_progress_ns_ < look_every) return;
  last_progress_ns_ = now;
  for (CommProgress& p : src_->progress(hang_ns)) {
    CommEntry* ce = find_comm(p.comm_id);
    if (ce == nullptr) continue;
    // (p.done_seq is filled in below, from the records this sink drained.)
    // FNV-1a over what the line says, ages left out.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) {
      for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xFF)) * 1099511628211ull;
    };
    mix(p.issued);
    for (uint64_t v : p.func_seq) mix(v);
    mix(p.p2p_started);
    mix(p.api_issued);
    std::copy(std::begin(ce->done_seq), std::end(ce->done_seq), std::begin(p.done_seq));
    for (uint64_t v : p.done_seq) mix(v);
    mix(p.in_flight);
    for (const StuckOp& o : p.stuck) {
      mix(o.seq);
      mix(o.issue);
      mix(o.func | static_cast<uint64_t>(o.kind) << 8 | static_cast<uint64_t>(static_cast<uint32_t>(o.peer)) << 16);
      mix(o.ch_started);
      mix(o.ch_stopped);
      for (const StuckOp::Net& n : o.net) mix(static_cast<uint64_t>(n.posted) << 32 | n.done);
    }
    if (ce->progress_seen_ns == 0) ce->progress_written_ns = now;  // first look: the checkpoint clock starts
    if (h != ce->progress_seen || ce->progress_seen_ns == 0) {
      ce->progress_seen = h;
      ce->progress_seen_ns = now;
    }
    if (h == ce->progress_written) continue;
    const bool quiet = now - ce->progress_seen_ns >= hang_ns;
    if (p.stuck.empty() && !quiet && now - ce->progress_written_ns < kProgressCheckpointNs) continue;
    // A comm that never started anything has nothing to say.
    if (p.issued == 0 && p.p2p_started == 0 && p.in_flight == 0 && ce->progress_written == 0) continue;
    ce->progress_written = h;
    ce->progress_written_ns = now;
    p.quiet_ns = now - ce->progress_seen_ns;
    for (Configured& o : outputs_) o.out->progress(p, ce->info, now);
    last_activity_ns_ = now;
  }
  // A process that has written nothing for HANG_MS says it is alive: after a
  // hang, the analyzer tells a rank that was waiting from one that had died
  // by whether its log goes on.
  if (now - last_activity_ns_ >= hang_ns) {
    last_activity_ns_ = now;
    const int64_t wall = anchor_.to_wall(now);
    for (Configured& o : outputs_) o.out->alive(wall);
  }
}

// Each comm's estimate, handed out when it moved by 1 us or more.
void DumpSink::hand_out_clocks(int64_t wall) {
  for (auto& [id, e] : comms_) {
    ClockEstimate est = src_->clock(id);
    if (!est.valid) continue;
    const ClockEstimate& prev = e.clock;
    auto diff = [](int64_t a, int64_t b) { return a > b ? a - b : b - a; };
    if (!prev.valid || diff(prev.offset_ns, est.offset_ns) >= 1000 ||
        diff(static_cast<int64_t>(prev.uncertainty_ns), static_cast<int64_t>(est.uncertainty_ns)) >= 1000) {
      est.comm_id = id;
      for (Configured& o : outputs_)
        if (o.out->wants_clock()) o.out->clock(est, e.info, wall);
      e.clock = est;
    }
  }
}

// The core's counters are asked for only when something will show them;
// each output then ends its cycle, in formats() order.
void DumpSink::end_cycle(uint64_t now, int64_t wall, bool final, bool forced) {
  auto due = [&](uint64_t last, uint64_t period) { return final || forced || now - last >= period; };
  const bool refine_due = due(last_stats_ns_, static_cast<uint64_t>(cfg_.stats_interval_ms) * 1000000);
  bool any_due = refine_due;
  for (const Configured& o : outputs_) any_due = any_due || due(o.last_stats_ns, o.out->stats_period_ns());
  if (any_due) last_core_ = src_->stats();
  if (final) {
    // Nothing drains the rings after this cycle: what threads completed
    // since its drain (they may run on while the process exits) is lost.
    // Counted, so that ops_completed = records_written + dropped holds in
    // the final stats record too (docs/log-format.md).
    dropped_at_exit_ += last_core_.records_pending;
    last_core_.records_pending = 0;
  }
  if (refine_due) {
    last_stats_ns_ = now;
    src_->refine_clock();
  }
  for (Configured& o : outputs_) {
    CycleEnd c;
    c.now_ns = now;
    c.wall_ns = wall;
    c.final = final;
    c.forced = forced;
    c.stats_due = due(o.last_stats_ns, o.out->stats_period_ns());
    if (c.stats_due) {
      o.last_stats_ns = now;
      // The output that holds records counts what it is about to write as
      // written (its stats record goes out in that same write); every other
      // output sees only what earlier outputs have actually written.
      c.stats = snapshot_now(o.out->keeps_records());
    }
    const Flushed f = o.out->end_cycle(c);
    if (o.out.get() == counting_) {
      records_written_ += f.written;
      dropped_write_error_ += f.lost;
    }
  }
  StatsSnapshot snap = snapshot_now(false);
  std::lock_guard<std::mutex> lk(totals_mu_);
  totals_ = snap;
}

StatsSnapshot DumpSink::totals() const {
  std::lock_guard<std::mutex> lk(totals_mu_);
  return totals_;
}

std::string DumpSink::path_of(std::string_view format) const {
  for (const Configured& o : outputs_)
    if (o.format == format) return o.out->path();
  return std::string();
}
std::string DumpSink::log_path() const { return path_of(kLogFormat); }
std::string DumpSink::prom_path() const { return path_of(kPromFormat); }

}  // namespace ni::out
