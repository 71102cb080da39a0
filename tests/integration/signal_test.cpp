// A SIGTERM or SIGABRT the application does not handle (signal_flush.h): the
// plugin writes what is pending (records still in the rings, the in-flight
// state) before the process dies of the signal, as it would have. With the
// flush off, or a handler of the application's own, nothing of the kind.
// The child is forked before any thread exists and only then loads the plugin.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

namespace {

using ni::it::fs::path;

enum class End { kSigterm, kAbort, kOwnHandler };

void own_handler(int) { _exit(3); }

// In the child: 100 completed collectives and one in flight, then the end.
[[noreturn]] void child(const path& logs, End end) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (end == End::kOwnHandler) signal(SIGTERM, own_handler);
  // A long interval: without the flush, nothing would be written before the signal.
  setenv("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "30000000", 1);
  setenv("NCCL_INSPECTOR_HANG_MS", "100", 1);
  ni::it::Plugin p(logs);
  if (p.t == nullptr) _exit(10);
  void* ctx = p.init(0x5151);
  for (uint64_t s = 0; s < 100; ++s) p.op(ctx, s);
  ni::abi::EventDescrV5 d{};
  d.type = ni::abi::kColl;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 1024;
  d.coll.nChannels = 1;
  d.coll.seqNumber = 100;
  void* h = nullptr;
  p.t->startEvent(ctx, &h, &d);
  p.t->stopEvent(h);  // enqueued; its kernel never ends
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (end == End::kAbort) abort();
  raise(SIGTERM);
  _exit(11);  // not reached
}

struct Outcome {
  int status = 0;
  std::size_t colls = 0, progress = 0;
  bool stuck_seq_100 = false;
};

Outcome run(End end, bool flush) {
  const path dir = ni::it::temp_dir("signal");
  if (!flush) setenv("NCCL_INSPECTOR_SIGNAL_FLUSH", "0", 1);
  const pid_t pid = fork();
  if (pid == 0) child(dir / "logs", end);
  unsetenv("NCCL_INSPECTOR_SIGNAL_FLUSH");
  Outcome o;
  waitpid(pid, &o.status, 0);
  if (ni::it::fs::exists(dir / "logs")) {
    ni::it::Read r = ni::it::read_dir(dir / "logs");
    o.colls = r.ops.size();
    for (const auto& f : r.result.files)
      for (const auto& p : f.progress)
        if (p.has_progress) {
          ++o.progress;
          for (const auto& s : p.stuck) o.stuck_seq_100 = o.stuck_seq_100 || s.seq == 100;
        }
  }
  ni::it::fs::remove_all(dir);
  return o;
}

TEST(SignalFlush, SigtermWritesWhatIsPendingThenKillsAsBefore) {
  const Outcome o = run(End::kSigterm, true);
  ASSERT_TRUE(WIFSIGNALED(o.status)) << o.status;
  EXPECT_EQ(WTERMSIG(o.status), SIGTERM);
  EXPECT_EQ(o.colls, 100u);
  EXPECT_EQ(o.progress, 1u);
  EXPECT_TRUE(o.stuck_seq_100);
}

TEST(SignalFlush, AbortWritesWhatIsPendingThenAborts) {
  const Outcome o = run(End::kAbort, true);
  ASSERT_TRUE(WIFSIGNALED(o.status)) << o.status;
  EXPECT_EQ(WTERMSIG(o.status), SIGABRT);
  EXPECT_EQ(o.colls, 100u);
  EXPECT_TRUE(o.stuck_seq_100);
}

// The flush is what wrote them: off, the same run leaves nothing.
TEST(SignalFlush, OffTheSameRunLosesThePendingRecords) {
  const Outcome o = run(End::kSigterm, false);
  ASSERT_TRUE(WIFSIGNALED(o.status));
  EXPECT_EQ(WTERMSIG(o.status), SIGTERM);
  EXPECT_EQ(o.colls, 0u);
}

// The application's own handler is left alone (it runs, not ours).
TEST(SignalFlush, AnApplicationHandlerIsNotReplaced) {
  const Outcome o = run(End::kOwnHandler, true);
  ASSERT_TRUE(WIFEXITED(o.status)) << o.status;
  EXPECT_EQ(WEXITSTATUS(o.status), 3);
  EXPECT_EQ(o.colls, 0u);
}

}  // namespace
