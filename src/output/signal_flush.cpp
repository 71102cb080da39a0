// signal_flush.h
#include "src/output/signal_flush.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "src/core/fork.h"

namespace ni::out::signal_flush {

namespace {

constexpr int kSignals[] = {SIGTERM, SIGABRT};

// Lock-free (checked below): the only kind of atomic a handler may touch.
std::atomic<pid_t> g_dump_tid{0};  // the dump thread to ask; 0 none
std::atomic<int> g_request{0};     // signal number asking for a flush
std::atomic<int> g_done{0};        // the flush was written
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

void on_signal(int sig) {
  const int saved_errno = errno;
  // Acquire pairs with arm()'s release store.
  const pid_t dump = g_dump_tid.load(std::memory_order_acquire);
  if (dump != 0 && static_cast<pid_t>(syscall(SYS_gettid)) != dump) {
    // Release: pairs with pending()'s acquire; done is cleared first.
    g_done.store(0, std::memory_order_relaxed);
    g_request.store(sig, std::memory_order_release);
    const timespec ms{0, 1000000};
    // Acquire pairs with done()'s release store.
    for (int i = 0; i < kWaitMs && g_done.load(std::memory_order_acquire) == 0; ++i) nanosleep(&ms, nullptr);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  errno = saved_errno;
  // Blocked while this handler runs: delivered, with the default action, when it returns.
  raise(sig);
}

void restore_default() noexcept {
  for (int sig : kSignals) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) != 0 || cur.sa_handler != on_signal) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
  }
}

// A fork()ed child has no dump thread, and may dlclose the plugin: its
// signals get their default action back.
const bool g_in_fork = core::join_fork({core::kForkOrderLeaf, []() noexcept {}, []() noexcept {},
                                        []() noexcept {
                                          g_dump_tid.store(0, std::memory_order_release);  // pairs with on_signal()
                                          restore_default();
                                        }});

}  // namespace

bool arm(pid_t tid) noexcept {
  // One dump thread at a time answers (a second sink in the process does not arm).
  pid_t none = 0;
  // Acquire/release: pairs with disarm()'s release store and on_signal()'s acquire load.
  if (!g_dump_tid.compare_exchange_strong(none, tid, std::memory_order_acq_rel, std::memory_order_acquire))
    return false;
  for (int sig : kSignals) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    if ((cur.sa_flags & SA_SIGINFO) != 0 || cur.sa_handler != SIG_DFL) continue;  // the application's: leave it
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
  return true;
}

void disarm() noexcept {
  g_dump_tid.store(0, std::memory_order_release);  // pairs with on_signal()'s acquire load
  // A handler waiting for a flush that will not come now: let it go on.
  g_done.store(1, std::memory_order_release);  // pairs with on_signal()'s acquire load
  restore_default();
}

int pending() noexcept {
  // Acquire pairs with on_signal()'s release store.
  return g_request.load(std::memory_order_acquire);
}

void done() noexcept {
  g_request.store(0, std::memory_order_relaxed);  // relaxed: ordered before the release store below
  g_done.store(1, std::memory_order_release);     // pairs with on_signal()'s acquire load
}

}  // namespace ni::out::signal_flush
