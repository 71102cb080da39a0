// The emulator's call sequences against profiler-abi.md §8, as seen by the
// recording plugin: order, threads, parents, states, channels, seqNumber, gating.
#include <unistd.h>

#include "tests/emu/helpers.h"

namespace ni::emu_test {
namespace {

bool is_app(const Call& c) { return c.thread.rfind("emu-app-r", 0) == 0; }
bool is_prog(const Call& c) { return c.thread.rfind("emu-prog-", 0) == 0; }

TEST_F(Emu, StandaloneAllReduce228) {
  Workload w = one_comm(2, 1, 8);
  w.program.push_back(solo(op("AllReduce", 4 << 20)));
  RunResult r = go("2.28", w, all_tables(), {}, {1});  // emulate rank 1
  auto cs = without_ctrl(ni::rec::calls());
  // App-thread sequence of §8.1.
  std::vector<std::string> seq;
  for (const Call& c : cs) {
    if (!is_app(c) || c.kind == Kind::kInit || c.kind == Kind::kFinalize) continue;
    if (c.kind == Kind::kStart) seq.push_back(std::string("start ") + std::to_string(c.type));
    if (c.kind == Kind::kStop) seq.push_back("stop");
    if (c.kind == Kind::kRecord) seq.push_back("record " + std::to_string(c.state));
  }
  const std::vector<std::string> want = {"start 256", "record 23", "start 512",  "stop", "record 24", "start 2048",
                                         "stop",      "start 1",   "start 2",    "stop", "stop",      "stop"};
  EXPECT_EQ(seq, want);
  const Call ga = starts(cs, kGroupApi).at(0), ca = starts(cs, kCollApi).at(0), grp = starts(cs, kGroup).at(0),
             coll = starts(cs, kColl).at(0), kl = starts(cs, kKernelLaunch).at(0);
  EXPECT_EQ(ga.group_depth, 1);
  EXPECT_EQ(ga.parent, nullptr);
  EXPECT_EQ(ca.parent, ga.handle);
  EXPECT_EQ(kl.parent, ga.handle);
  EXPECT_EQ(coll.parent, ca.handle);
  EXPECT_EQ(coll.parent_group, grp.handle);
  EXPECT_EQ(grp.parent, nullptr);
  // Rank fields (§8.11): set on Coll, 0 on API/Group/KernelCh.
  EXPECT_EQ(coll.rank, 1);
  EXPECT_EQ(ga.rank, 0);
  EXPECT_EQ(ca.rank, 0);
  EXPECT_EQ(grp.rank, 0);
  EXPECT_EQ(coll.func, "AllReduce");
  EXPECT_EQ(coll.count, (4u << 20) / 4);
  EXPECT_EQ(coll.dtype, "ncclFloat32");
  EXPECT_EQ(coll.nchannels, 8);
  // GroupApi stop is the last app-thread call.
  const Call* gstop = stop_call(cs, ga.handle);
  ASSERT_NE(gstop, nullptr);
  // KernelCh on the progress thread: start(pTimer) -> 22(pTimer) -> stop, per channel.
  auto kc = starts(cs, kKernelCh);
  ASSERT_EQ(kc.size(), 8u);
  for (size_t i = 0; i < kc.size(); ++i) {
    EXPECT_TRUE(is_prog(kc[i])) << kc[i].thread;
    EXPECT_EQ(kc[i].channel, static_cast<int>(i));
    EXPECT_EQ(kc[i].parent, coll.handle);
    EXPECT_EQ(kc[i].rank, 0);
    auto after = on(cs, kc[i].handle);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].state, kKernelChStop);
    EXPECT_GT(after[0].ptimer, kc[i].ptimer);
    EXPECT_EQ(after[1].kind, Kind::kStop);
    EXPECT_EQ(r.truth[0].ch_start_ptimer[i], kc[i].ptimer);
    EXPECT_EQ(r.truth[0].ch_stop_ptimer[i], after[0].ptimer);
  }
  EXPECT_TRUE(starts(cs, kProxyOp).empty());  // intra-node: no proxy events
  EXPECT_TRUE(r.truth[0].visible);
  EXPECT_TRUE(r.truth[0].kernel_events);
}

TEST_F(Emu, GroupWithSeveralPlansAndChannelRanges) {
  Workload w = one_comm(2, 1, 16);
  w.program.push_back(group({op("AllReduce", 1 << 20, "ncclFloat32", 4), op("AllGather", 1 << 20, "ncclFloat32", 4),
                             op("ReduceScatter", 1 << 20, "ncclFloat32", 12)}));
  go("2.28", w);
  auto cs = without_ctrl(ni::rec::calls());
  ASSERT_EQ(starts(cs, kGroupApi).size(), 1u);
  const Call ga = starts(cs, kGroupApi)[0];
  EXPECT_EQ(ga.group_depth, 2);
  EXPECT_EQ(states_of(cs, ga.handle), (std::vector<int>{kGroupStartApiStop, kGroupEndApiStart}));
  EXPECT_EQ(starts(cs, kCollApi).size(), 3u);
  EXPECT_EQ(starts(cs, kGroup).size(), 2u);  // 4 + 4 + 12 channels > 16: two plans
  EXPECT_EQ(starts(cs, kKernelLaunch).size(), 2u);
  auto colls = starts(cs, kColl);
  ASSERT_EQ(colls.size(), 3u);
  std::map<void*, std::vector<int>> chans;
  for (const Call& k : starts(cs, kKernelCh)) chans[k.parent].push_back(k.channel);
  EXPECT_EQ(chans[colls[0].handle], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(chans[colls[1].handle], (std::vector<int>{4, 5, 6, 7}));  // later op of the plan: above 0
  EXPECT_EQ(chans[colls[2].handle].front(), 0);                        // new plan starts again at 0
  // AllGather: count in bytes, datatype ncclInt8; CollApi keeps the user's.
  EXPECT_EQ(colls[1].count, 1u << 20);
  EXPECT_EQ(colls[1].dtype, "ncclInt8");
  EXPECT_EQ(starts(cs, kCollApi)[1].count, (1u << 20) / 4);
  EXPECT_EQ(starts(cs, kCollApi)[1].dtype, "ncclFloat32");
  // GroupApi stops after everything the app thread launched.
  const Call* gstop = stop_call(cs, ga.handle);
  for (const Call& c : cs)
    if (is_app(c) && c.kind != Kind::kFinalize && c.kind != Kind::kInit) { EXPECT_LE(c.order, gstop->order); }
}

TEST_F(Emu, NestedGroupDepth) {
  Workload w = one_comm(2, 1);
  w.program.push_back(group({op("AllReduce", 4096)}, 2));
  go("2.30", w);
  ASSERT_EQ(starts(ni::rec::calls(), kGroupApi).size(), 1u);
  EXPECT_EQ(starts(ni::rec::calls(), kGroupApi)[0].group_depth, 3);
}

TEST_F(Emu, P2pChannelsFollowNcclRule) {
  Workload w = one_comm(8, 1);
  w.comms[0].p2p_channels = 32;
  w.comms[0].p2p_channels_per_peer = 2;
  OpSpec a = op("SendRecv", 1 << 20);
  a.shift = 1;
  OpSpec b = op("SendRecv", 1 << 20);
  b.shift = 3;
  w.program = {solo(a), solo(b)};
  go("2.28", w);
  auto cs = ni::rec::calls();
  auto p2p = starts(cs, kP2p);
  ASSERT_EQ(p2p.size(), 4u);
  std::map<void*, std::vector<int>> chans;
  for (const Call& k : starts(cs, kKernelCh)) chans[k.parent].push_back(k.channel);
  // round 1 -> bitreverse(1) over 5 bits = 16; round 3 -> 24. Two parts each.
  EXPECT_EQ(chans[p2p[0].handle], (std::vector<int>{16, 17}));
  EXPECT_EQ(chans[p2p[1].handle], (std::vector<int>{16, 17}));
  EXPECT_EQ(chans[p2p[2].handle], (std::vector<int>{24, 25}));
  EXPECT_EQ(p2p[0].func, "Send");
  EXPECT_EQ(p2p[0].peer, 1);
  EXPECT_EQ(p2p[1].func, "Recv");
  EXPECT_EQ(p2p[1].peer, 7);
  EXPECT_EQ(p2p[0].parent, starts(cs, kP2pApi)[0].handle);
}

TEST_F(Emu, AlltoAllBecomesSendRecvOn228) {
  Workload w = one_comm(4, 1);
  w.program.push_back(solo(op("AlltoAll", 65536)));
  go("2.28", w);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kCollApi).empty());
  EXPECT_TRUE(starts(cs, kColl).empty());
  auto api = starts(cs, kP2pApi);
  ASSERT_EQ(api.size(), 8u);
  for (const Call& a : api) EXPECT_TRUE(a.func == "Send" || a.func == "Recv") << a.func;
  EXPECT_EQ(starts(cs, kP2p).size(), 8u);
  EXPECT_EQ(starts(cs, kGroupApi).size(), 1u);
}

// A 2-node comm: network proxy events (§8.4).
Workload net2() {
  Workload w = one_comm(2, 2, 2);
  w.program.push_back(solo(op("AllReduce", 4 << 20, "ncclFloat32", 2)));
  return w;
}

TEST_F(Emu, NetworkCollective228) {
  go("2.28", net2());
  auto cs = ni::rec::calls();
  auto ops = starts(cs, kProxyOp);
  ASSERT_EQ(ops.size(), 4u);  // 2 channels x send/recv
  const Call coll = starts(cs, kColl).at(0);
  // The ProxyOp starts are nested in a ProxyCtrl append (17 ... 18 with n).
  const auto ctrls = starts(cs, kProxyCtrl);
  const Call* append = nullptr;
  for (const Call& c : ctrls) {
    auto st = states_of(cs, c.handle);
    if (!st.empty() && st[0] == kProxyCtrlAppend) append = &c;
  }
  ASSERT_NE(append, nullptr);
  auto ctrl = on(cs, append->handle);
  ASSERT_EQ(ctrl.size(), 3u);
  EXPECT_EQ(ctrl[1].state, kProxyCtrlAppendEnd);
  EXPECT_EQ(ctrl[1].appended, 4);
  for (const Call& o : ops) {
    EXPECT_GT(o.order, ctrl[0].order);
    EXPECT_LT(o.order, ctrl[1].order);
    EXPECT_EQ(o.parent, coll.handle);
    EXPECT_EQ(o.pid, getpid());
    EXPECT_TRUE(is_prog(o));
    EXPECT_EQ(states_of(cs, o.handle), std::vector<int>{kProxyOpInProgress});
  }
  int last_step_stop = 0, first_op_stop = 1 << 30;
  for (const Call& s : starts(cs, kProxyStep)) {
    const Call* op_of = nullptr;
    for (const Call& o : ops)
      if (o.handle == s.parent) op_of = &o;
    ASSERT_NE(op_of, nullptr);
    auto st = states_of(cs, s.handle);
    if (op_of->is_send) {
      ASSERT_GE(st.size(), 3u);
      EXPECT_EQ(st.front(), kProxyStepSendGPUWait);
      EXPECT_EQ(st[1], kProxyStepSendPeerWait);
      EXPECT_EQ(st.back(), kProxyStepSendWait);
    } else {
      EXPECT_EQ(st, (std::vector<int>{kProxyStepRecvWait, kProxyStepRecvFlushWait, kProxyStepRecvGPUWait}));
    }
    for (const Call& c : on(cs, s.handle)) {
      if (c.kind == Kind::kRecord && (c.state == kProxyStepSendWait || c.state == kProxyStepRecvFlushWait)) {
        EXPECT_GT(c.trans_size, 0u);
      }
      if (c.kind == Kind::kStop) last_step_stop = std::max(last_step_stop, c.order);
    }
  }
  for (const Call& o : ops) first_op_stop = std::min(first_op_stop, stop_call(cs, o.handle)->order);
  EXPECT_LT(last_step_stop, first_op_stop);  // ProxyOps stop together, after every step
}

TEST_F(Emu, NetworkCollective227OnlySubZero) {
  go("2.27", net2());
  auto ops = starts(ni::rec::calls(), kProxyOp);
  ASSERT_EQ(ops.size(), 2u);  // one send + one recv: sub 0 of each args
  for (const Call& o : ops) EXPECT_EQ(o.channel, 0);
}

TEST_F(Emu, NetworkCollective223OldStates) {
  go("2.23", net2());
  auto cs = ni::rec::calls();
  auto ops = starts(cs, kProxyOp);
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_TRUE(starts(cs, kKernelCh).empty());
  for (const Call& o : ops) {
    auto st = states_of(cs, o.handle);
    ASSERT_FALSE(st.empty());
    for (int s : st) EXPECT_LE(s, kProxyOpRecvDone);  // no 19 on 2.23
    EXPECT_EQ(st.back(), o.is_send ? kProxyOpSendDone : kProxyOpRecvDone);
    uint64_t prev = 0;
    for (const Call& c : on(cs, o.handle))
      if (c.kind == Kind::kRecord) {
        EXPECT_GE(c.trans_size, prev);  // cumulative
        prev = c.trans_size;
      }
  }
  for (const Call& s : starts(cs, kProxyStep))
    for (const Call& c : on(cs, s.handle))
      if (c.kind == Kind::kRecord) {
        EXPECT_TRUE(c.args_null);
        EXPECT_NE(c.state, kProxyStepSendPeerWait);
      }
}

TEST_F(Emu, SeqNumberPerCommPerFunction) {
  Workload w = one_comm(2, 1);
  w.program = {solo(op("AllReduce", 4096)), solo(op("AllGather", 4096)), solo(op("AllReduce", 4096)),
               solo(op("AllGather", 4096))};
  go("2.28", w);
  auto c = starts(ni::rec::calls(), kColl);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].seq, 0u);
  EXPECT_EQ(c[1].seq, 0u);
  EXPECT_EQ(c[2].seq, 1u);
  EXPECT_EQ(c[3].seq, 1u);
}

TEST_F(Emu, SeqOnlyAdvancesWithStartedCollOn225) {
  Workload w = one_comm(2, 1);
  w.program = {solo(op("AllReduce", 4096)), solo(op("AllReduce", 4096)), solo(op("AllReduce", 4096))};
  ni::rec::set_null_types(kGroup);  // no Group handle -> no Coll on 2.23-2.27
  RunResult r = go("2.25", w);
  ASSERT_EQ(r.truth.size(), 3u);
  for (const TruthOp& t : r.truth) {
    EXPECT_EQ(t.seq, 0u);
    EXPECT_FALSE(t.visible);
  }
  ni::rec::reset();
  ni::rec::set_null_types(kGroup);
  r = go("2.28", w);  // 2.28: Coll does not need a Group handle, seq advances at append
  ASSERT_EQ(r.truth.size(), 3u);
  EXPECT_EQ(r.truth[2].seq, 2u);
  EXPECT_TRUE(r.truth[2].visible);
}

TEST_F(Emu, MaskGating) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  ni::rec::set_mask(kColl);  // 2.28: Coll alone still brings GroupApi, CollApi, Group
  go("2.28", w);
  auto cs = ni::rec::calls();
  EXPECT_EQ(starts(cs, kGroupApi).size(), 1u);
  EXPECT_EQ(starts(cs, kCollApi).size(), 1u);
  EXPECT_EQ(starts(cs, kGroup).size(), 1u);
  EXPECT_EQ(starts(cs, kColl).size(), 1u);
  EXPECT_TRUE(starts(cs, kKernelLaunch).empty());
  EXPECT_TRUE(starts(cs, kKernelCh).empty());
  // 2.23: P2p alone yields Group events but no P2p.
  ni::rec::reset();
  ni::rec::set_mask(kP2p);
  Workload p = one_comm(2, 1);
  OpSpec s = op("Send", 4096);
  s.peer = 1;
  p.program.push_back(solo(s));
  go("2.23", p);
  cs = ni::rec::calls();
  EXPECT_EQ(starts(cs, kGroup).size(), 1u);
  EXPECT_TRUE(starts(cs, kP2p).empty());
  // 2.26: KernelCh alone gives Group, Coll and KernelCh without pTimer or record 22.
  ni::rec::reset();
  ni::rec::set_mask(kKernelCh);
  go("2.26", w);
  cs = ni::rec::calls();
  EXPECT_EQ(starts(cs, kColl).size(), 1u);
  auto kc = starts(cs, kKernelCh);
  ASSERT_FALSE(kc.empty());
  for (const Call& k : kc) EXPECT_TRUE(states_of(cs, k.handle).empty());
}

TEST_F(Emu, InvisibleOps) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("Broadcast", 4096)));
  RunResult r = go("2.29", w);
  auto cs = ni::rec::calls();
  EXPECT_EQ(starts(cs, kCollApi).size(), 1u);
  EXPECT_TRUE(starts(cs, kGroup).empty());
  EXPECT_TRUE(starts(cs, kColl).empty());
  EXPECT_TRUE(starts(cs, kKernelCh).empty());
  ASSERT_EQ(r.truth.size(), 1u);
  EXPECT_FALSE(r.truth[0].visible);
  ni::rec::reset();
  go("2.28", w);
  EXPECT_EQ(starts(ni::rec::calls(), kColl).size(), 1u);  // visible before 2.29
  ni::rec::reset();
  Workload one = one_comm(1, 1);
  one.program.push_back(solo(op("AllReduce", 4096)));
  OpSpec self = op("Send", 4096);
  self.peer = 0;
  one.program.push_back(solo(self));
  r = go("2.30", one);
  cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kCollApi).empty());  // nranks==1 collective: nothing at all
  EXPECT_EQ(starts(cs, kGroupApi).size(), 1u);  // ... but the self Send does produce events
  EXPECT_EQ(starts(cs, kP2p).size(), 1u);
  EXPECT_TRUE(starts(cs, kProxyOp).empty());
}

TEST_F(Emu, CeCollectiveOn230) {
  Workload w = one_comm(4, 1);
  OpSpec o = op("AllGather", 1 << 20);
  o.ce = true;
  w.program.push_back(solo(o));
  RunResult r = go("2.30", w);
  auto cs = without_ctrl(ni::rec::calls());
  EXPECT_TRUE(starts(cs, kKernelLaunch).empty());
  EXPECT_TRUE(starts(cs, kGroup).empty());
  EXPECT_TRUE(starts(cs, kColl).empty());
  ASSERT_EQ(starts(cs, kCeColl).size(), 1u);
  const Call ce = starts(cs, kCeColl)[0];
  EXPECT_EQ(ce.parent, starts(cs, kCollApi)[0].handle);
  EXPECT_TRUE(is_app(ce));
  EXPECT_EQ(ce.count, (1u << 20) / 4);  // element count
  auto syncs = starts(cs, kCeSync);
  ASSERT_EQ(syncs.size(), 2u);
  ASSERT_EQ(starts(cs, kCeBatch).size(), 1u);
  EXPECT_EQ(starts(cs, kCeBatch)[0].parent, ce.handle);
  EXPECT_LT(stop_call(cs, syncs[1].handle)->order, stop_call(cs, ce.handle)->order);
  EXPECT_EQ(r.truth.at(0).kind, "ce");
  EXPECT_TRUE(r.truth.at(0).visible);
}

TEST_F(Emu, GraphReplayOnCudaCallbackThread) {
  Workload w = one_comm(2, 1);
  OpSpec o = op("AllReduce", 1 << 20);
  o.graph_replays = 3;
  w.program.push_back(solo(o));
  RunResult r = go("2.28", w);
  auto cs = ni::rec::calls();
  ASSERT_EQ(starts(cs, kCollApi).size(), 1u);
  const Call api = starts(cs, kCollApi)[0];
  EXPECT_TRUE(api.graph);
  EXPECT_TRUE(starts(cs, kGroupApi)[0].graph);
  EXPECT_EQ(starts(cs, kKernelLaunch).size(), 1u);  // once, at capture
  auto colls = starts(cs, kColl);
  ASSERT_EQ(colls.size(), 3u);
  for (const Call& c : colls) {
    EXPECT_EQ(c.thread, "emu-cudacb");
    EXPECT_EQ(c.parent, api.handle);  // the stale, long-stopped CollApi
    EXPECT_EQ(c.seq, colls[0].seq);   // repeated seqNumber
    EXPECT_GT(c.order, stop_call(cs, api.handle)->order);
  }
  int replays = 0;
  for (const TruthOp& t : r.truth) replays += t.graph_replay >= 0;
  EXPECT_EQ(replays, 3);
}

// A captured intra-node plan with Coll events but no proxy ops (no network,
// no KernelCh asked for): before 2.31 its events come once, at capture, and
// replays emit nothing; from 2.31 its host task has profiler ops, so every
// replay runs it on the CUDA callback thread (profiler-abi §13.3).
TEST_F(Emu, GraphReplayOfAPlanWithoutProxyOps) {
  Workload w = one_comm(2, 1);
  OpSpec o = op("AllReduce", 1 << 20);
  o.graph_replays = 3;
  w.program.push_back(solo(o));
  for (const char* ver : {"2.30", "2.31"}) {
    ni::rec::reset();
    ni::rec::set_mask(kColl);
    RunResult r = go(ver, w);
    auto cs = ni::rec::calls();
    auto colls = starts(cs, kColl);
    const bool v231 = std::string(ver) == "2.31";
    ASSERT_EQ(colls.size(), v231 ? 3u : 1u) << ver;
    EXPECT_TRUE(starts(cs, kKernelCh).empty()) << ver;
    for (const Call& c : colls) {
      if (v231) EXPECT_EQ(c.thread, "emu-cudacb");
      else EXPECT_TRUE(is_app(c)) << c.thread;
    }
    int replays = 0, visible = 0;
    for (const TruthOp& t : r.truth) {
      replays += t.graph_replay >= 0;
      visible += t.visible;
    }
    EXPECT_EQ(replays, v231 ? 3 : 0) << ver;
    EXPECT_EQ(visible, v231 ? 3 : 1) << ver;
  }
}

TEST_F(Emu, NonBlockingCommLaunchesOnItsOwnThread) {
  Workload w = one_comm(2, 1);
  w.comms[0].blocking = false;
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  go("2.28", w);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(is_app(starts(cs, kGroupApi)[0]));
  EXPECT_EQ(starts(cs, kKernelLaunch)[0].thread.rfind("emu-launch", 0), 0u);
  EXPECT_EQ(starts(cs, kColl)[0].thread.rfind("emu-launch", 0), 0u);
}

TEST_F(Emu, NetPluginIbAndSocket) {
  Workload w = net2();
  w.net_profiler = NetProfiler::kIb;
  go("2.28", w);
  auto cs = ni::rec::calls();
  auto np = starts(cs, kNetPlugin);
  ASSERT_FALSE(np.empty());
  std::vector<void*> steps;
  for (const Call& s : starts(cs, kProxyStep)) steps.push_back(s.handle);
  for (const Call& n : np) {
    EXPECT_EQ(n.net_id, 0x10001);
    EXPECT_EQ(n.ib.type, kNetIbQp);
    EXPECT_NE(std::find(steps.begin(), steps.end(), n.parent), steps.end());
    EXPECT_EQ(on(cs, n.handle).size(), 2u);  // IB: stopped at CQ completion and again in test()
  }
  ni::rec::reset();
  w.net_profiler = NetProfiler::kSocket;
  go("2.28", w);
  cs = ni::rec::calls();
  np = starts(cs, kNetPlugin);
  ASSERT_FALSE(np.empty());
  bool helper = false;
  for (const Call& n : np) {
    EXPECT_EQ(n.net_id, 0x20001);
    EXPECT_EQ(on(cs, n.handle).size(), 1u);
    helper = helper || n.thread.rfind("emu-sock", 0) == 0;
  }
  EXPECT_TRUE(helper);  // large transfers: on the socket helper thread
}

TEST_F(Emu, DefaultJobTruthIsConsistent) {
  Options o;
  o.nccl = NcclVersion{2, 30};
  o.tables = all_tables();
  o.workload = default_workload(10);
  o.pace = Pace::kNone;
  RunResult r = run(o);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_GT(r.truth.size(), 80u);
  auto cs = ni::rec::calls();
  size_t visible = 0;
  for (const TruthOp& t : r.truth) {
    visible += t.visible;
    if (t.kind == "coll" && t.visible) {
      ASSERT_FALSE(t.channels.empty());
      for (size_t i = 0; i < t.channels.size(); ++i) EXPECT_GT(t.ch_stop_ptimer[i], t.ch_start_ptimer[i]);
      EXPECT_GT(t.busbw_gbps, 0);
      EXPECT_LT(t.busbw_gbps, t.net ? 45 : 330);
    }
  }
  EXPECT_EQ(visible, starts(cs, kColl).size() + starts(cs, kP2p).size());
  EXPECT_EQ(count_kind(cs, Kind::kInit), 16);  // 8 ranks x (tp + dp)
  // Progress-thread callbacks ran on threads other than the app threads.
  bool prog = false;
  for (const Call& c : cs) prog = prog || is_prog(c);
  EXPECT_TRUE(prog);
}

// Workload w as NCCL `v` runs it, as fast as the host goes.
RunResult run_unpaced(const Workload& w, NcclVersion v) {
  Options o;
  o.nccl = v;
  o.tables = all_tables();
  o.workload = w;
  o.pace = Pace::kNone;
  return run(o);
}

TEST_F(Emu, StragglerHasTheShortestKernel) {
  Workload w = one_comm(4, 1);
  w.truth.rank_skew_us[2] = 500;
  w.program.push_back(solo(op("AllReduce", 8 << 20)));
  RunResult r = run_unpaced(w, NcclVersion{2, 28});
  ASSERT_EQ(r.truth.size(), 4u);
  for (const TruthOp& t : r.truth)
    if (t.world_rank != 2) { EXPECT_GT(t.duration_us, r.truth[2].duration_us + 400); }
}

// A rank late once delays that one instance: its peers' kernels span the wait
// there and nowhere else, and the truth labels both sides.
TEST_F(Emu, LateOnceDelaysOneInstanceOnly) {
  Workload w = parse_workload_json(
      R"({"comms": [{"name": "c", "nranks": 4}], "program": [{"comm": "c", "func": "AllReduce", "bytes": 8388608},
          {"comm": "c", "func": "AllReduce", "bytes": 8388608}, {"comm": "c", "func": "AllReduce", "bytes": 8388608}],
          "truth": {"late_once": [{"world_rank": 2, "op": 1, "us": 500}]}})");
  ASSERT_EQ(w.truth.late_once.size(), 1u);
  RunResult r = run_unpaced(w, NcclVersion{2, 28});
  std::map<std::pair<uint64_t, int>, const TruthOp*> at;  // (seq, world rank)
  for (const TruthOp& t : r.truth) at[{t.seq, t.world_rank}] = &t;
  ASSERT_EQ(at.size(), 12u);
  for (uint64_t seq = 0; seq < 3; ++seq)
    for (int g = 0; g < 4; ++g) {
      const TruthOp& t = *at[{seq, g}];
      const double late = at[{seq, 2}]->duration_us;
      if (seq != 1) {
        EXPECT_TRUE(t.planted.empty()) << seq << " " << g;
        EXPECT_LT(t.duration_us, late + 100) << seq << " " << g;
      } else if (g == 2) {
        EXPECT_EQ(t.planted, std::vector<std::string>{"late_once"});
      } else {
        EXPECT_EQ(t.planted, std::vector<std::string>{"waited_once"});
        EXPECT_GT(t.duration_us, late + 400) << g;
      }
    }
  auto err = [](const std::string& entry) {
    try {
      parse_workload_json(R"({"comms": [{"name": "c", "nranks": 2}], "truth": {"late_once": [)" + entry + "]}}");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(err(R"({"world_rank": 1, "op": 0, "us": 0})").find("us must be"), std::string::npos);
  EXPECT_NE(err(R"({"world_rank": -1, "op": 0, "us": 5})").find("must be >= 0"), std::string::npos);
  EXPECT_NE(err(R"({"world_rank": 1, "op": 0, "us": 5, "x": 1})").find("unknown key 'x'"), std::string::npos);
  EXPECT_NE(err(R"({"op": 0, "us": 5})").find("are required"), std::string::npos);
  // A rank beyond the world (4 ranks here) is the run's error, not a silent no-op.
  w.truth.late_once[0].world_rank = 4;
  r = run_unpaced(w, NcclVersion{2, 28});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("truth.late_once: world_rank 4 is outside the world (4 ranks)"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace ni::emu_test
