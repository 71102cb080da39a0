// A best-effort final flush when the process is killed by a SIGTERM or
// SIGABRT that the application does not handle (NCCL_INSPECTOR_SIGNAL_FLUSH).
//
// The handler is installed only where the signal's disposition is SIG_DFL
// when the dump thread starts, and removed when it stops (if it is still
// ours). In the handler, only async-signal-safe operations: lock-free atomic
// loads and stores, syscall(SYS_gettid), nanosleep, sigaction and raise. It
// asks the dump thread for a flush, waits for it at most kWaitMs, restores the
// default disposition and raises the signal again, so the process dies as it
// would have (a core dump for SIGABRT). The flush itself runs on the dump
// thread, which is an ordinary thread and may take locks and allocate; if the
// interrupted thread holds a lock the dump thread needs (malloc's, a ring's),
// the wait times out and nothing more is written. Never waits on the dump
// thread itself (abort() called there); a fork()ed child gets the default
// actions back (it has no dump thread, and may unload the plugin).
#pragma once

#include <sys/types.h>

namespace ni::out::signal_flush {

inline constexpr int kWaitMs = 3000;

// The dump thread `tid` starts: install the handler where nothing else is.
// False (nothing done) when another dump thread of the process is armed.
bool arm(pid_t tid) noexcept;
// The dump thread that armed stops: restore SIG_DFL where the handler is
// still ours, and release a handler waiting for a flush.
void disarm() noexcept;
// The signal number whose flush is asked for; 0 none.
int pending() noexcept;
// The flush asked for is written (or given up).
void done() noexcept;

}  // namespace ni::out::signal_flush
