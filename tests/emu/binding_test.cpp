// Version parsing, symbol selection (§0), loading errors, adapter quirks (§6).
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "src/emu/worker.h"
#include "tests/emu/helpers.h"

namespace ni::emu_test {
namespace {

TEST(Version, ParsesSupportedReleasesOnly) {
  EXPECT_EQ(NcclVersion::parse("2.23")->minor, 23);
  EXPECT_EQ(NcclVersion::parse("v2.28.9-1")->minor, 28);
  EXPECT_EQ(NcclVersion::parse("2.30.7")->minor, 30);
  EXPECT_FALSE(NcclVersion::parse("2.22"));
  EXPECT_EQ(NcclVersion::parse("2.31.2")->minor, 31);
  EXPECT_EQ(NcclVersion::parse("2.32")->minor, 32);
  EXPECT_FALSE(NcclVersion::parse("2.33"));
  EXPECT_FALSE(NcclVersion::parse("3.0"));
  EXPECT_FALSE(NcclVersion::parse("abc"));
  EXPECT_FALSE(NcclVersion::parse("2.28x"));
}

TEST(Version, SelectsNewestSymbolTheReleaseTries) {
  const unsigned all = 0xfe;  // v1..v7
  const std::map<int, int> want = {{23, 1}, {24, 2}, {25, 2}, {26, 3}, {27, 4}, {28, 5},
                                   {29, 6}, {30, 6}, {31, 7}, {32, 7}};
  for (auto [minor, abi] : want) EXPECT_EQ(select_abi(NcclVersion{2, minor}, all), abi) << minor;
  EXPECT_EQ(select_abi(NcclVersion{2, 28}, 1u << 3), 3);  // an old v3-only plugin through the adapter
  EXPECT_EQ(select_abi(NcclVersion{2, 27}, 1u << 6), 0);  // v6 only: 2.27 cannot bind it
  EXPECT_EQ(select_abi(NcclVersion{2, 30}, (1u << 1) | (1u << 5)), 5);
  EXPECT_EQ(select_abi(NcclVersion{2, 30}, 1u << 7), 0);  // v7 only: 2.30 cannot bind it
  EXPECT_EQ(select_abi(NcclVersion{2, 31}, 0x7e), 6);     // a v1..v6 plugin on 2.31: v6 through the adapter
}

TEST_F(Emu, BoundVersionAndInitSignaturePerRelease) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  const std::map<std::string, int> want = {{"2.23", 1}, {"2.24", 2}, {"2.26", 3}, {"2.27", 4},
                                           {"2.28", 5}, {"2.29", 6}, {"2.30", 6}, {"2.31", 7},
                                           {"2.32", 7}};
  for (const auto& [ver, abi] : want) {
    ni::rec::reset();
    RunResult r = go(ver, w);
    EXPECT_EQ(r.bound_abi, abi) << ver;
    EXPECT_EQ(r.bound_symbol, "ncclProfiler_v" + std::to_string(abi));
    auto cs = ni::rec::calls();
    ASSERT_GE(cs.size(), 1u);
    EXPECT_EQ(cs.front().kind, Kind::kInit);
    EXPECT_EQ(cs.front().abi, abi);
    for (const Call& c : cs) EXPECT_EQ(c.abi, abi) << ver;
    if (abi >= 4) {
      EXPECT_EQ(cs.front().comm_name, "c");
      EXPECT_EQ(cs.front().nranks, 2);
      EXPECT_NE(cs.front().comm_id, 0u);
      EXPECT_TRUE(cs.front().has_logger);
    }
    EXPECT_EQ(cs.back().kind, Kind::kFinalize) << ver;
  }
}

TEST_F(Emu, V3OnlyPluginOn228GoesThroughTheAdapter) {
  PluginTables t;
  t.v3 = ni::rec::v3();
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  RunResult r = go("2.28", w, t);
  EXPECT_EQ(r.bound_abi, 3);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kGroupApi).empty());
  EXPECT_TRUE(starts(cs, kCollApi).empty());
  ASSERT_EQ(starts(cs, kColl).size(), 1u);
  const Call coll = starts(cs, kColl)[0];
  EXPECT_EQ(coll.func, "AllReduce");
  EXPECT_EQ(coll.comm_hash, 0u);  // the 2.27+ adapter sends 0
  // Coll parent is the legacy Group handle.
  ASSERT_EQ(starts(cs, kGroup).size(), 1u);
  EXPECT_EQ(coll.parent, starts(cs, kGroup)[0].handle);
  // KernelCh forwarded (channelId only), but record 22 is dropped.
  auto kc = starts(cs, kKernelCh);
  ASSERT_FALSE(kc.empty());
  for (const Call& k : kc) EXPECT_TRUE(states_of(cs, k.handle).empty());
  EXPECT_EQ(stops_of(cs, kKernelCh), static_cast<int>(kc.size()));
}

TEST_F(Emu, V4On228LeavesGarbageAndDropsApiEvents) {
  PluginTables t;
  t.v4 = ni::rec::v4();
  Workload w = one_comm(2, 1);
  w.program.push_back(group({op("Send", 1 << 20), op("Recv", 1 << 20)}));
  w.program[0].ops[0].peer = 1;
  w.program[0].ops[1].peer = 1;
  RunResult r = go("2.28", w, t);
  EXPECT_EQ(r.bound_abi, 4);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kGroupApi).empty());
  EXPECT_TRUE(starts(cs, kP2pApi).empty());
  EXPECT_TRUE(starts(cs, kKernelLaunch).empty());
  auto p2p = starts(cs, kP2p);
  ASSERT_EQ(p2p.size(), 2u);
  for (const Call& p : p2p) {
    EXPECT_EQ(p.nchannels, 0xA5);  // p2p.nChannels is not copied by the adapter
    EXPECT_EQ(p.parent, starts(cs, kGroup)[0].handle);
  }
}

TEST_F(Emu, V5On230DropsCeAndClearsCeMaskBits) {
  PluginTables t;
  t.v5 = ni::rec::v5();
  Workload w = one_comm(4, 1);
  OpSpec o = op("AllGather", 1 << 20);
  o.ce = true;
  w.program.push_back(solo(o));
  RunResult r = go("2.30", w, t);
  EXPECT_EQ(r.bound_abi, 5);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kCeColl).empty());
  EXPECT_EQ(starts(cs, kCollApi).size(), 1u);
  ASSERT_EQ(cs.back().kind, Kind::kFinalize);
  EXPECT_EQ(cs.back().mask_seen & kCeEventBits, 0);
  EXPECT_NE(cs.back().mask_seen & kColl, 0);
  // Args of 23/24 point at an uninitialised local for the v5 adapter on 2.29+.
  auto ga = starts(cs, kGroupApi);
  ASSERT_EQ(ga.size(), 1u);
  for (const Call& c : on(cs, ga[0].handle))
    if (c.kind == Kind::kRecord) {
      EXPECT_FALSE(c.args_null);
      EXPECT_EQ(c.raw_args, 0xA5A5A5A5A5A5A5A5ull);
    }
}

// 2.31+ (v7): the application's tag (ncclCollConfig_t.userProfilerTag) rides
// on CollApi, Coll, P2pApi and P2p; untagged calls carry 0; ops without a
// kernel_variant are no symmetric kernel (kernelVariant NULL, isSymColl false).
TEST_F(Emu, V7On231CarriesTheUserTag) {
  Workload w = one_comm(2, 1);
  OpSpec ar = op("AllReduce", 1 << 20);
  ar.tag = 0x1200000007ull;
  w.program.push_back(solo(ar));
  w.program.push_back(solo(op("AllGather", 1 << 16)));  // untagged
  OpSpec a2a = op("AlltoAll", 1 << 20);  // its Send/Recv parts carry the call's tag (no ncclSendConfig exists)
  a2a.tag = 42;
  w.program.push_back(solo(a2a));
  RunResult r = go("2.31", w);
  EXPECT_EQ(r.bound_abi, 7);
  auto cs = ni::rec::calls();
  std::map<std::string, uint64_t> coll_tag, api_tag;
  for (const Call& c : starts(cs, kColl)) {
    coll_tag[c.func] = c.user_tag;
    EXPECT_FALSE(c.sym);
    EXPECT_FALSE(c.kernel_variant);
  }
  for (const Call& c : starts(cs, kCollApi)) api_tag[c.func] = c.user_tag;
  EXPECT_EQ(coll_tag["AllReduce"], 0x1200000007ull);
  EXPECT_EQ(coll_tag["AllGather"], 0u);
  EXPECT_EQ(api_tag["AllReduce"], 0x1200000007ull);
  EXPECT_EQ(api_tag["AllGather"], 0u);
  auto p2p = starts(cs, kP2p), p2p_api = starts(cs, kP2pApi);
  ASSERT_GE(p2p.size(), 2u);
  ASSERT_GE(p2p_api.size(), 1u);
  for (const Call& c : p2p) EXPECT_EQ(c.user_tag, 42u) << c.func;
  for (const Call& c : p2p_api) EXPECT_EQ(c.user_tag, 42u) << c.func;
}

// Tags ride on nccl*Config() calls, which NCCL 2.31.2 has for the collectives
// and AlltoAll/Gather/Scatter but not for ncclSend/ncclRecv: a workload that
// tags a Send, Recv or SendRecv (op or mix entry) is refused, saying why.
TEST(Workload, SendAndRecvTakeNoTag) {
  auto err = [](const std::string& ops) {
    try {
      parse_workload_json(R"({"comms": [{"name": "c", "nranks": 2}], )" + ops + "}");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const char* f : {"Send", "Recv", "SendRecv"}) {
    EXPECT_NE(err(std::string(R"("program": [{"comm": "c", "func": ")") + f + R"(", "count": 8, "peer": 1, "tag": 3}])")
                  .find("takes no tag"),
              std::string::npos)
        << f;
    EXPECT_NE(err(std::string(R"("mix": [{"comm": "c", "func": ")") + f + R"(", "tag": 3}])").find("takes no tag"),
              std::string::npos)
        << f;
  }
  EXPECT_EQ(err(R"("program": [{"comm": "c", "func": "AlltoAll", "count": 8, "tag": 3}])"), "no error");
  EXPECT_EQ(err(R"("program": [{"comm": "c", "func": "Send", "count": 8, "peer": 1}])"), "no error");
}

// NCCL 2.31.2 batches a group's symmetric tasks of one kernel into one plan
// (profiler-abi.md §13; scheduler/symmetric_sched.cc, plugin/profiler.cc):
// every task gets its Coll (isSymColl, the same variant), the head says the
// plan's channels and alone gets KernelCh, which span the whole plan; the
// later tasks say nChannels 0. The truth: the head's sym_plan_tasks and
// duration cover the plan; the later tasks have no kernel events.
TEST_F(Emu, V7On231SymmetricPlanOfSeveralTasksHasKernelChOnItsHeadOnly) {
  Workload w = one_comm(2, 1);
  OpSpec a = op("AllReduce", 1 << 20);
  a.kernel_variant = "AllReduce_AGxLL_R";
  w.program.push_back(group({a, a, a}));
  w.program.push_back(solo(a));  // alone: a plan of one
  RunResult r = go("2.31", w);
  ASSERT_EQ(r.bound_abi, 7);
  auto cs = ni::rec::calls();
  const auto colls = starts(cs, kColl);
  ASSERT_EQ(colls.size(), 4u);
  const int nch = colls[0].nchannels;
  EXPECT_GT(nch, 0) << "the head says the plan's channels";
  for (size_t i = 0; i < colls.size(); ++i) {
    EXPECT_TRUE(colls[i].sym) << i;
    EXPECT_TRUE(colls[i].kernel_variant) << i;
    EXPECT_EQ(colls[i].nchannels, i == 1 || i == 2 ? 0 : nch) << i;
  }
  std::map<void*, int> kch_of;
  for (const Call& k : starts(cs, kKernelCh)) ++kch_of[k.parent];
  EXPECT_EQ(kch_of.size(), 2u) << "KernelCh for the two heads only";
  EXPECT_EQ(kch_of[colls[0].handle], nch);
  EXPECT_EQ(kch_of[colls[3].handle], nch);
  std::vector<TruthOp> t = r.truth;
  std::sort(t.begin(), t.end(), [](const TruthOp& x, const TruthOp& y) { return x.seq < y.seq; });
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].sym_plan_tasks, 3);
  EXPECT_EQ(t[0].busbw_gbps, 0) << "the head's time is the plan's: no bandwidth";
  EXPECT_EQ(t[3].sym_plan_tasks, 0);
  EXPECT_GT(t[3].busbw_gbps, 0);
  for (int i : {1, 2}) {
    EXPECT_FALSE(t[i].kernel_events) << i;
    EXPECT_TRUE(t[i].channels.empty()) << i;
    EXPECT_TRUE(t[i].visible) << i;
  }
  // The plan of three moves data about three times as long as the lone one (the compute phase of each
  // channel; the wait for the peers before it is each op's own).
  ASSERT_FALSE(t[0].ch_phase_ns.empty());
  ASSERT_FALSE(t[3].ch_phase_ns.empty());
  EXPECT_NEAR(static_cast<double>(t[0].ch_phase_ns[0][1]) / static_cast<double>(t[3].ch_phase_ns[0][1]), 3.0, 0.6);
  // 2.30 has no symmetric kernels in its profiler events: four plain collectives.
  ni::rec::reset();
  go("2.30", w);
  for (const Call& c : starts(ni::rec::calls(), kColl)) {
    EXPECT_FALSE(c.sym);
    EXPECT_GT(c.nchannels, 0);
  }
}

// 2.31+ KernelPhase (the recorder asks for every event): per channel, each
// phase's start (parent: that channel's KernelCh, pTimer its start), state 31
// (pTimer its end) and stop, phases in order and back to back, from the
// channel's start to its end, all before the channel's KernelChStop and on
// the thread that sends KernelCh (profiler-abi.md §13.3).
TEST_F(Emu, V7On231SendsEachChannelsPhasesBeforeItsKernelChStop) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  RunResult r = go("2.31", w);
  ASSERT_EQ(r.bound_abi, 7);
  auto cs = ni::rec::calls();
  const auto kch = starts(cs, kKernelCh);
  ASSERT_FALSE(kch.empty());
  size_t phases = 0;
  for (const Call& k : kch) {
    std::vector<const Call*> seq;  // the calls on this channel's handle and on its phases, in order
    std::set<void*> mine{k.handle};
    for (const Call& c : cs) {
      if (c.kind == Kind::kStart && c.type == kKernelPhase && c.parent == k.handle) mine.insert(c.handle);
      if (mine.count(c.handle) != 0 && c.handle != nullptr) seq.push_back(&c);
    }
    // start KernelCh, then 3 x (phase start, state 31, stop), then state KernelChStop, then stop.
    ASSERT_EQ(seq.size(), 2u + 3 * 3 + 1) << "channel " << k.channel;
    uint64_t edge = k.ptimer;
    for (int p = 0; p < 3; ++p) {
      const Call& st = *seq[1 + 3 * p];
      const Call& rec = *seq[2 + 3 * p];
      const Call& sp = *seq[3 + 3 * p];
      EXPECT_EQ(st.type, kKernelPhase);
      EXPECT_EQ(st.phase, p);
      EXPECT_EQ(st.channel, k.channel);
      EXPECT_STREQ(st.name, p == 0 ? "initial_sync" : p == 1 ? "compute" : "final_sync");
      EXPECT_EQ(st.ptimer, edge) << "phases are back to back from the channel's start";
      EXPECT_EQ(st.thread, k.thread);
      EXPECT_EQ(rec.kind, Kind::kRecord);
      EXPECT_EQ(rec.state, kKernelPhaseStop);
      EXPECT_GT(rec.ptimer, st.ptimer);
      EXPECT_EQ(sp.kind, Kind::kStop);
      edge = rec.ptimer;
      ++phases;
    }
    EXPECT_EQ(seq[10]->kind, Kind::kRecord);
    EXPECT_EQ(seq[10]->state, kKernelChStop);
    EXPECT_EQ(seq[10]->ptimer, edge) << "the last phase ends with the channel";
    EXPECT_EQ(seq[11]->kind, Kind::kStop);
  }
  EXPECT_EQ(phases, 3 * kch.size());
}

// 2.31+: NCCL's RAS override is written over the plugin's mask after each
// comm's init: the events that arrive are the override's. Before 2.31 there is
// no such command and the plugin's own mask stays.
TEST_F(Emu, RasMaskOverridesThePluginsMaskFrom231) {
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  for (const char* ver : {"2.30", "2.31", "2.32"}) {
    ni::rec::reset();
    ni::rec::set_mask(static_cast<int>(kColl));  // the plugin asks for Coll only
    Options o;
    o.nccl = *NcclVersion::parse(ver);
    o.tables = all_tables();
    o.workload = w;
    o.world_ranks = {0};
    o.pace = Pace::kNone;
    o.ras_mask = static_cast<int>(kColl | kKernelCh | kKernelPhase);
    RunResult r = run(o);
    ASSERT_TRUE(r.ok) << r.error;
    const bool ras = std::string(ver) >= "2.31";
    auto cs = ni::rec::calls();
    ASSERT_EQ(cs.back().kind, Kind::kFinalize);
    EXPECT_EQ(cs.back().mask_seen, ras ? o.ras_mask : static_cast<int>(kColl)) << ver;
    EXPECT_EQ(starts(cs, kKernelCh).empty(), !ras) << ver;
    EXPECT_EQ(starts(cs, kKernelPhase).empty(), !ras) << ver;
    EXPECT_EQ(starts(cs, kColl).size(), 1u) << ver;
  }
  ni::rec::set_mask(0xffff);
}

// 2.31+'s profiler thread polls: after work it looks again after 1, 2, 4, 8,
// 16 us and then every 10 us, and sleeps on its condition variable only after
// that many empty looks; a job starts the back-off again at 1 us.
TEST(Worker, PollingWorkerBacksOffThenSleeps) {
  std::mutex mu;
  std::vector<uint32_t> pauses;
  Worker::Polling p;
  p.idle_polls = 8;
  p.sleep = [&](uint32_t us) {
    std::lock_guard<std::mutex> g(mu);
    pauses.push_back(us);
  };
  Worker wk("t-poll", {}, p);
  auto wait_sleeps = [&](uint64_t n) {
    for (int i = 0; i < 20000 && wk.sleeps() < n; ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    return wk.sleeps();
  };
  ASSERT_EQ(wait_sleeps(1), 1u);
  const std::vector<uint32_t> spell = {1, 2, 4, 8, 16, 10, 10, 10};
  {
    std::lock_guard<std::mutex> g(mu);
    EXPECT_EQ(pauses, spell);
  }
  std::atomic<int> ran{0};
  wk.post([&] { ran.fetch_add(1); });  // pairs with the load below (seq_cst)
  wk.drain();
  EXPECT_EQ(ran.load(), 1);
  ASSERT_EQ(wait_sleeps(2), 2u);
  std::vector<uint32_t> both = spell;
  both.insert(both.end(), spell.begin(), spell.end());
  std::lock_guard<std::mutex> g(mu);
  EXPECT_EQ(pauses, both);
  EXPECT_EQ(wk.empty_polls(), 16u);
}

// A v1..v6 plugin on 2.31 binds v6 through NCCL's adapter: the same v6
// fields (a zero-filled descriptor, so no garbage), no tag anywhere, and bit
// 15 (KernelPhase) cleared from the mask after init.
TEST_F(Emu, V6On231GoesThroughTheAdapter) {
  PluginTables t = all_tables();
  t.v7 = nullptr;
  Workload w = one_comm(2, 1);
  OpSpec ar = op("AllReduce", 1 << 20);
  ar.tag = 99;
  w.program.push_back(solo(ar));
  RunResult r = go("2.31", w, t);
  EXPECT_EQ(r.bound_abi, 6);
  auto cs = ni::rec::calls();
  for (const Call& c : cs) EXPECT_EQ(c.abi, 6);
  ASSERT_EQ(starts(cs, kColl).size(), 1u);
  EXPECT_EQ(starts(cs, kColl)[0].func, "AllReduce");
  EXPECT_EQ(starts(cs, kColl)[0].user_tag, 0u);  // the v6 recorder never reads one
  EXPECT_FALSE(starts(cs, kKernelCh).empty());
  ASSERT_EQ(cs.back().kind, Kind::kFinalize);
  EXPECT_EQ(cs.back().mask_seen & static_cast<int>(kKernelPhase), 0);
  EXPECT_NE(cs.back().mask_seen & kKernelCh, 0);
  // The same plugin bound natively (v7) keeps bit 15: NCCL clears it only for the adapter.
  ni::rec::reset();
  RunResult r7 = go("2.31", w);
  EXPECT_EQ(r7.bound_abi, 7);
  cs = ni::rec::calls();
  ASSERT_EQ(cs.back().kind, Kind::kFinalize);
  EXPECT_NE(cs.back().mask_seen & static_cast<int>(kKernelPhase), 0);
}

// 2.31+: KernelCh (start, state 22, stop) comes from the comm's dedicated
// profiler thread, the proxy events still from its progress thread; before
// 2.31 both from the progress thread (profiler-abi §13.3). Every KernelCh of
// an op still comes from one thread (the plugin's channel bookkeeping relies
// on it), and every op gets exactly its channels' KernelCh.
TEST_F(Emu, KernelChFromTheProfilerThreadFrom231) {
  Workload w = one_comm(2, 2, 4);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  w.program.push_back(solo(op("AllGather", 1 << 22)));
  for (const char* ver : {"2.30", "2.31", "2.32"}) {
    ni::rec::reset();
    RunResult r = go(ver, w);
    const auto cs = ni::rec::calls();
    const std::string want = std::string(ver) >= "2.31" ? "emu-prof-" : "emu-prog-";
    const auto kc = starts(cs, kKernelCh);
    ASSERT_FALSE(kc.empty()) << ver;
    std::map<void*, std::set<std::string>> threads_of_op;
    for (const Call& k : kc) {
      EXPECT_EQ(k.thread.rfind(want, 0), 0u) << ver << ": " << k.thread;
      threads_of_op[k.parent].insert(k.thread);
      for (const Call& c : on(cs, k.handle)) EXPECT_EQ(c.thread, k.thread) << ver;
    }
    for (const auto& [op, th] : threads_of_op) EXPECT_EQ(th.size(), 1u) << ver;
    size_t channels = 0;
    for (const Call& c : starts(cs, kColl)) channels += static_cast<size_t>(c.nchannels);
    EXPECT_EQ(kc.size(), channels) << ver;
    const auto po = starts(cs, kProxyOp);
    ASSERT_FALSE(po.empty()) << ver;
    for (const Call& p : po) EXPECT_EQ(p.thread.rfind("emu-prog-", 0), 0u) << ver << ": " << p.thread;
  }
}

// Tags exist from 2.31: an older release never passes one, whatever the workload says.
TEST_F(Emu, NoTagBefore231) {
  Workload w = one_comm(2, 1);
  OpSpec ar = op("AllReduce", 1 << 20);
  ar.tag = 7;
  w.program.push_back(solo(ar));
  for (const char* ver : {"2.30", "2.31"}) {
    ni::rec::reset();
    RunResult r = go(ver, w);
    ASSERT_FALSE(r.truth.empty());
    for (const TruthOp& t : r.truth) EXPECT_EQ(t.user_tag, std::string(ver) == "2.31" ? 7u : 0u) << ver;
    for (const Call& c : starts(ni::rec::calls(), kColl)) EXPECT_EQ(c.user_tag, std::string(ver) == "2.31" ? 7u : 0u);
  }
}

TEST_F(Emu, V1InitFailureIgnoredOn224ButDisablesOn223) {
  PluginTables t;
  t.v1 = ni::rec::v1();
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 1 << 20)));
  ni::rec::set_init_result(kInternalError);
  go("2.24", w, t);
  EXPECT_EQ(starts(ni::rec::calls(), kColl).size(), 1u);
  ni::rec::reset();
  ni::rec::set_init_result(kInternalError);
  RunResult r = go("2.23", w, t);
  auto cs = ni::rec::calls();
  EXPECT_TRUE(starts(cs, kColl).empty());
  EXPECT_EQ(count_kind(cs, Kind::kFinalize), 0);  // never finalized after the failure
  ASSERT_EQ(r.truth.size(), 1u);
  EXPECT_FALSE(r.truth[0].visible);
  EXPECT_EQ(r.truth[0].why, "plugin disabled (init failed)");
}

TEST_F(Emu, V1CodesNativeOn223AndFallbacksThroughTheAdapter) {
  PluginTables t;
  t.v1 = ni::rec::v1();
  Workload w = one_comm(2, 1);
  w.program.push_back(solo(op("AllReduce", 4096, "ncclUint8")));
  RunResult r = go("2.23", w, t);
  auto c = starts(ni::rec::calls(), kColl);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].func_code, kFuncAllReduce);
  EXPECT_EQ(c[0].dtype_code, kUint8);  // 2.23 passes the code itself
  EXPECT_EQ(c[0].comm_hash, r.truth[0].comm_hash);
  EXPECT_EQ(c[0].name, nullptr);
  ni::rec::reset();
  go("2.24", w, t);
  c = starts(ni::rec::calls(), kColl);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].dtype_code, kFloat64);  // "Unknown" -> Float64 in the adapter
  ni::rec::reset();
  go("2.28", w);
  c = starts(ni::rec::calls(), kColl);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].dtype, "Unknown");  // ncclUint8 has no name
}

TEST(Loading, ClearErrors) {
  Options o;
  o.nccl = NcclVersion{2, 28};
  o.workload = default_workload(1);
  o.plugin_path = "/nonexistent/libnccl-profiler-x.so";
  RunResult r = run(o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not found"), std::string::npos) << r.error;
  o.plugin_path.clear();
  r = run(o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("no plugin"), std::string::npos) << r.error;
  o.plugin_path = REC_V3_SO;
  o.nccl = NcclVersion{2, 25};
  r = run(o);
  EXPECT_FALSE(r.ok);  // 2.25 tries v2, v1 only
  EXPECT_NE(r.error.find("v2 down to v1"), std::string::npos) << r.error;
}

TEST(Loading, SoPluginsBindAndReload) {
  Options o;
  o.nccl = NcclVersion{2, 28};
  o.workload = one_comm(2, 1);
  o.workload.program.push_back(solo(op("AllReduce", 1 << 20)));
  o.pace = Pace::kNone;
  o.plugin_path = REC_V3_SO;
  RunResult r = run(o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.bound_abi, 3);
  o.plugin_path = REC_ALL_SO;
  o.faults = {Fault::kReload};
  r = run(o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.bound_abi, 5);
  EXPECT_EQ(r.summary.callbacks["dlopen"], 2u);   // re-dlopened at the next init
  EXPECT_EQ(r.summary.callbacks["dlclose"], 2u);  // after each last finalize
  EXPECT_EQ(r.summary.callbacks["init"], 4u);
  EXPECT_EQ(r.summary.callbacks["finalize"], 4u);
}

}  // namespace
}  // namespace ni::emu_test
