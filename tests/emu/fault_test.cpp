// Each fault of profiler-abi.md §12 has an observable effect on the calls.
#include <unistd.h>

#include <set>

#include "tests/emu/helpers.h"

namespace ni::emu_test {
namespace {

Workload net_job(int ops = 3) {
  Workload w = one_comm(2, 2, 2);
  for (int i = 0; i < ops; ++i) w.program.push_back(solo(op("AllReduce", 4 << 20, "ncclFloat32", 2)));
  return w;
}

TEST_F(Emu, FaultRecvStepTwice) {
  go("2.28", net_job(), all_tables(), {Fault::kRecvStepTwice});
  auto cs = ni::rec::calls();
  EXPECT_EQ(static_cast<int>(starts(cs, kProxyStep).size()), stops_of(cs, kProxyStep) + 1);
}

TEST_F(Emu, FaultNetPluginStops) {
  Workload w = net_job(1);
  w.net_profiler = NetProfiler::kSocket;
  go("2.28", w, all_tables(), {Fault::kNetPluginDoubleStop, Fault::kNetPluginStopNull});
  auto cs = ni::rec::calls();
  EXPECT_GT(stops_of(cs, kNetPlugin), static_cast<int>(starts(cs, kNetPlugin).size()));
  int null_stops = 0;
  for (const Call& c : cs) null_stops += c.kind == Kind::kStop && c.handle == nullptr;
  EXPECT_GE(null_stops, 1);
}

TEST_F(Emu, FaultProxyOpNeverStopped) {
  go("2.28", net_job(), all_tables(), {Fault::kProxyOpNeverStopped});
  auto cs = ni::rec::calls();
  EXPECT_EQ(static_cast<int>(starts(cs, kProxyOp).size()), stops_of(cs, kProxyOp) + 4);  // one op's 4 subs
}

TEST_F(Emu, FaultParentStoppedFirst) {
  go("2.28", net_job(1), all_tables(), {Fault::kParentStoppedFirst});
  auto cs = ni::rec::calls();
  const Call coll = starts(cs, kColl).at(0);
  const Call* cstop = stop_call(cs, coll.handle);
  ASSERT_NE(cstop, nullptr);
  for (const Call& c : starts(cs, kKernelCh)) EXPECT_GT(c.order, cstop->order);
  for (const Call& c : starts(cs, kProxyOp)) EXPECT_GT(c.order, cstop->order);
}

TEST_F(Emu, FaultPxnForeignPidAndContext) {
  go("2.28", net_job(1), all_tables(), {Fault::kPxn});
  auto cs = ni::rec::calls();
  std::set<void*> ctxs;
  for (const Call& c : cs)
    if (c.kind == Kind::kInit) ctxs.insert(c.ctx);
  int foreign = 0;
  for (const Call& o : starts(cs, kProxyOp)) {
    if (o.pid == getpid()) continue;
    ++foreign;
    EXPECT_EQ(ctxs.count(o.ctx), 0u);   // a context from another process
    EXPECT_NE(o.parent, starts(cs, kColl).at(0).handle);
  }
  EXPECT_EQ(foreign, 4);
}

TEST_F(Emu, FaultKernelChNeverStoppedAndDoubleStop) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  go("2.28", w, all_tables(), {Fault::kKernelChNeverStopped});
  auto cs = ni::rec::calls();
  EXPECT_EQ(static_cast<int>(starts(cs, kKernelCh).size()), stops_of(cs, kKernelCh) + 1);
  ni::rec::reset();
  go("2.28", w, all_tables(), {Fault::kKernelChDoubleStop});
  cs = ni::rec::calls();
  EXPECT_EQ(static_cast<int>(starts(cs, kKernelCh).size()) + 1, stops_of(cs, kKernelCh));
}

TEST_F(Emu, FaultMaskChange) {
  Workload w = one_comm(2, 1);
  for (int i = 0; i < 4; ++i) w.program.push_back(solo(op("AllReduce", 4096)));
  RunResult r = go("2.28", w, all_tables(), {Fault::kMaskChange});
  ASSERT_EQ(r.truth.size(), 4u);
  EXPECT_FALSE(r.truth[0].visible);  // fault_op 0: the mask went to 0 ...
  EXPECT_EQ(r.truth[0].why, "activation mask is 0");
  EXPECT_FALSE(r.truth[1].visible);
  EXPECT_TRUE(r.truth[2].visible);   // ... and came back two ops later
  EXPECT_EQ(starts(ni::rec::calls(), kColl).size(), 2u);
}

TEST_F(Emu, FaultConcurrentInit) {
  Workload w = one_comm(4, 1);
  w.program.push_back(solo(op("AllReduce", 4096)));
  go("2.28", w, all_tables(), {Fault::kConcurrentInit}, {0, 1, 2, 3});
  std::set<std::string> threads;
  for (const Call& c : ni::rec::calls())
    if (c.kind == Kind::kInit) threads.insert(c.thread);
  EXPECT_EQ(threads.size(), 4u);
}

TEST_F(Emu, FaultGraphReplay) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  RunResult r = go("2.30", w, all_tables(), {Fault::kGraphReplay});
  int replays = 0;
  for (const TruthOp& t : r.truth) replays += t.graph_replay >= 0;
  EXPECT_EQ(replays, 3);
  EXPECT_EQ(starts(ni::rec::calls(), kColl).size(), 3u);
}

TEST(FaultNames, RoundTrip) {
  for (const std::string& n : fault_names()) {
    auto f = fault_from_name(n);
    ASSERT_TRUE(f) << n;
    EXPECT_EQ(fault_name(*f), n);
  }
  EXPECT_FALSE(fault_from_name("nope"));
}

}  // namespace
}  // namespace ni::emu_test
