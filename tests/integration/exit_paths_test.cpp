// Every way a process ends, the final stats record accounts for every record
// the core produced (docs/log-format.md, "stats, end"):
//   ops_completed == records_written + dropped.{ring_full, write_error, at_exit} + records_pending
// with records_pending 0 in it, and records_written is what the file holds.
// The hard cases are exits while another thread still completes ops: what it
// completes after the final drain is lost, and must be counted (at_exit).
// Each case runs in a forked child (before any thread exists) that then loads
// the plugin. SIGTERM/SIGABRT with the default action are signal_test.cpp's
// (a best-effort flush, not this guarantee).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

namespace {

using ni::it::fs::path;

enum class End { kFinalize, kExitMain, kExitOtherThread, kDlclose };

// Ops the producer has completed so far.
std::atomic<std::uint64_t> g_produced{0};

// Completes max_ops ops as fast as it can (UINT64_MAX: until the process ends).
void produce(ni::it::Plugin& p, void* ctx, std::uint64_t max_ops) {
  for (std::uint64_t s = 0; s < max_ops; ++s) {
    p.op(ctx, s);
    g_produced.store(s + 1, std::memory_order_release);  // pairs with the acquire in exit_mid_run()
  }
}

// exit() once the producer is well into its run: 30 ms and at least 500 ops
// completed (a loaded machine under a sanitizer may complete only a few dozen
// in 30 ms), so the final record has something to account for.
[[noreturn]] void exit_mid_run() {
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  // Acquire pairs with the release store in produce().
  while (g_produced.load(std::memory_order_acquire) < 500 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  exit(0);
}

// A producer that never stops, on a plain pthread: std::thread keeps its
// state on the heap, which LeakSanitizer reports at an exit() that the thread
// never returns from.
void start_forever_producer(ni::it::Plugin& p, void* ctx) {
  struct Args {
    ni::it::Plugin* p;
    void* ctx;
  };
  static Args args;  // outlives the exit
  args.p = &p;
  args.ctx = ctx;
  pthread_t t;
  pthread_create(
      &t, nullptr,
      [](void* a) -> void* {
        auto* x = static_cast<Args*>(a);
        produce(*x->p, x->ctx, UINT64_MAX);
        return nullptr;
      },
      &args);
}

[[noreturn]] void child(const path& logs, End end) {
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "2000", 1);
  setenv("NCCL_INSPECTOR_RING_RECORDS", "4096", 1);
  ni::it::Plugin p(logs);
  if (p.t == nullptr) _exit(10);
  void* ctx = p.init(0xE1E1);
  switch (end) {
    case End::kFinalize:
    case End::kDlclose: {
      std::thread t([&] { produce(p, ctx, 20000); });
      t.join();
      p.t->finalize(ctx);
      if (end == End::kFinalize) exit(0);
      dlclose(p.lib);
      p.lib = nullptr;
      _exit(0);  // the library is gone: no exit handler of ours may run, and none is left to
    }
    case End::kExitMain: {
      // exit() while the producer is still completing ops; comms never finalized.
      start_forever_producer(p, ctx);
      exit_mid_run();
    }
    case End::kExitOtherThread: {
      start_forever_producer(p, ctx);
      // A plain pthread (std::thread's state on the heap would be a leak to
      // LeakSanitizer: its thread never returns).
      pthread_t exiter;
      pthread_create(
          &exiter, nullptr,
          [](void*) -> void* { exit_mid_run(); },
          nullptr);
      pthread_join(exiter, nullptr);  // never returns: the process ends in exit() on the other thread
      _exit(12);
    }
  }
  _exit(11);
}

struct Outcome {
  int status = -1;
  bool end = false, stats = false;
  std::uint64_t completed = 0, written = 0, pending = 0, in_file = 0;
  std::map<std::string, std::uint64_t> dropped;
};

Outcome run(End end) {
  const path dir = ni::it::temp_dir("exit");
  const pid_t pid = fork();
  if (pid == 0) child(dir / "logs", end);
  Outcome o;
  waitpid(pid, &o.status, 0);
  const ni::it::Read r = ni::it::read_dir(dir / "logs");
  EXPECT_EQ(r.result.files.size(), 1u);
  if (!r.result.files.empty()) {
    const auto& f = r.result.files[0];
    o.end = f.has_end;
    o.stats = f.stats.present;
    o.completed = f.stats.ops_completed;
    o.written = f.stats.records_written;
    o.pending = f.stats.records_pending;
    o.dropped = f.stats.dropped;
    o.in_file = f.ops + f.marks.size();
  }
  ni::it::fs::remove_all(dir);
  return o;
}

void expect_every_record_accounted(End end, const char* what) {
  // Several runs: the race an exit loses (records completed after the final
  // drain) needs the producer to be mid-op at the right moment.
  std::uint64_t at_exit = 0;
  for (int i = 0; i < 5; ++i) {
    const Outcome o = run(end);
    ASSERT_TRUE(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0) << what << ": status " << o.status;
    ASSERT_TRUE(o.stats) << what;
    EXPECT_TRUE(o.end) << what;
    EXPECT_GT(o.completed, 100u) << what;
    EXPECT_EQ(o.pending, 0u) << what << ": the final stats record leaves nothing pending";
    std::uint64_t dropped = 0;
    for (const auto& [k, n] : o.dropped)
      if (k != "pool_exhausted") dropped += n;
    EXPECT_EQ(o.completed, o.written + dropped)
        << what << ": completed " << o.completed << ", written " << o.written << ", dropped " << dropped;
    EXPECT_EQ(o.written, o.in_file) << what << ": records_written is what the file holds";
    at_exit += o.dropped.count("at_exit") ? o.dropped.at("at_exit") : 0;
  }
  if (end == End::kFinalize || end == End::kDlclose) {
    EXPECT_EQ(at_exit, 0u) << what << ": nothing runs after the last finalize";
  }
  ::testing::Test::RecordProperty("at_exit_total", std::to_string(at_exit));
  std::printf("%s: %llu records counted at_exit over 5 runs\n", what, static_cast<unsigned long long>(at_exit));
}

TEST(ExitPaths, FinalizeThenExit) { expect_every_record_accounted(End::kFinalize, "finalize, exit"); }
TEST(ExitPaths, DlcloseAfterFinalize) { expect_every_record_accounted(End::kDlclose, "finalize, dlclose"); }
TEST(ExitPaths, ExitWhileAnotherThreadCompletesOps) {
  expect_every_record_accounted(End::kExitMain, "exit() on the main thread, producer running");
}
TEST(ExitPaths, ExitFromAnotherThread) {
  expect_every_record_accounted(End::kExitOtherThread, "exit() on another thread, producer running");
}

}  // namespace
