// Drives the real per-version adapters (the same objects as the .so) the way
// NCCL does, and checks the records the core produces.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "plugin/abi/all.h"
#include "src/output/memory_sink.h"
#include "src/core/names.h"
#include "src/core/tracker.h"

extern "C" {
extern ni::abi::ProfilerV1 ncclProfiler_v1;
extern ni::abi::ProfilerV3 ncclProfiler_v3;
extern ni::abi::ProfilerV5 ncclProfiler_v5;
extern ni::abi::ProfilerV6 ncclProfiler_v6;
extern ni::abi::ProfilerV7 ncclProfiler_v7;
int ncclInspectorMark(const char* label);
int ncclInspectorNameTag(uint64_t tag, const char* name);
}

namespace {

using namespace ni::abi;
using ni::OpRecord;

constexpr uint64_t kHash = 0xfeedbeefcafe1234ull;

// One communicator seen through ABI v5 (NCCL 2.28).
struct CommV5 {
  int mask = 0;
  void* ctx = nullptr;
  explicit CommV5(int nranks = 8, int rank = 0, uint64_t hash = kHash) {
    ncclProfiler_v5.init(&ctx, hash, &mask, "dp", 1, nranks, rank, nullptr);
  }
  ~CommV5() { finalize(); }
  void finalize() {
    if (ctx) ncclProfiler_v5.finalize(ctx);
    ctx = nullptr;
  }
  void* start(EventDescrV5& d) {
    void* h = reinterpret_cast<void*>(0xdead);
    ncclProfiler_v5.startEvent(ctx, &h, &d);
    return h;
  }
  void* coll_api(bool graph = false) {
    EventDescrV5 d{};
    d.type = kCollApi;
    d.collApi.func = "AllReduce";
    d.collApi.graphCaptured = graph;
    return start(d);
  }
  void* coll(void* parent, const char* func, size_t count, const char* dtype, uint8_t nch, uint64_t seq,
             const char* algo = "RING", const char* proto = "SIMPLE") {
    EventDescrV5 d{};
    d.type = kColl;
    d.parentObj = parent;
    d.rank = 0;
    d.coll.seqNumber = seq;
    d.coll.func = func;
    d.coll.count = count;
    d.coll.datatype = dtype;
    d.coll.nChannels = nch;
    d.coll.nWarps = 16;
    d.coll.algo = algo;
    d.coll.proto = proto;
    return start(d);
  }
  void* p2p(const char* func, size_t count, int peer, uint8_t nch) {
    EventDescrV5 d{};
    d.type = kP2p;
    d.p2p.func = func;
    d.p2p.count = count;
    d.p2p.datatype = "ncclFloat32";
    d.p2p.peer = peer;
    d.p2p.nChannels = nch;
    return start(d);
  }
  void* kch(void* parent, uint8_t ch, uint64_t t0) {
    EventDescrV5 d{};
    d.type = kKernelCh;
    d.parentObj = parent;
    d.kernelCh.channelId = ch;
    d.kernelCh.pTimer = t0;
    return start(d);
  }
  static void kstop(void* h, uint64_t t1) {
    StateArgsV5 a{};
    a.kernelCh.pTimer = t1;
    ncclProfiler_v5.recordEventState(h, kKernelChStop, &a);
    ncclProfiler_v5.stopEvent(h);
  }
  static void stop(void* h) { ncclProfiler_v5.stopEvent(h); }
};

class Tracker : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
    unsetenv("NCCL_INSPECTOR_ENABLE_NET");
    unsetenv("NCCL_INSPECTOR_SAMPLE_EVERY");
  }
  static ni::out::MemorySink* sink() { return ni::out::MemorySink::current_; }
};

// A full 8-channel AllReduce on channels 4..11 (a later op of a plan).
TEST_F(Tracker, CollectiveOnChannelsAboveZeroIsTimedOnTheGpu) {
  CommV5 c;
  EXPECT_EQ(c.mask & (kColl | kKernelCh | kP2p), kColl | kKernelCh | kP2p);
  ASSERT_NE(c.ctx, nullptr);
  void* api = c.coll_api();
  const uint64_t before = ni::mono_now_ns();
  void* op = c.coll(api, "AllReduce", 1 << 20, "ncclFloat32", 8, 41);
  const uint64_t after = ni::mono_now_ns();
  c.stop(op);  // enqueued, not complete
  for (uint8_t ch = 4; ch < 12; ++ch) {
    void* k = c.kch(op, ch, 1000000 + ch * 10);
    c.kstop(k, 1000000 + 5000 + ch * 100);
  }
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  EXPECT_EQ(r.comm_hash, kHash);
  EXPECT_EQ(r.seq, 41u);
  EXPECT_EQ(r.kind, static_cast<uint8_t>(ni::OpKind::kColl));
  EXPECT_EQ(r.func, static_cast<uint8_t>(ni::Func::kAllReduce));
  EXPECT_EQ(r.bytes, (1u << 20) * 4u);
  EXPECT_EQ(r.channel_mask, 0xFF0ull);
  EXPECT_EQ(r.timing, static_cast<uint8_t>(ni::TimingSource::kGpu));
  EXPECT_EQ(r.start_ns, 1000040u);
  EXPECT_EQ(r.end_ns, 1000000u + 5000 + 1100);
  EXPECT_EQ(r.max_channel_ns, 5000u + 11 * 90);
  EXPECT_EQ(r.channels[0].start_off_ns, 0u);
  EXPECT_EQ(r.channels[0].dur_ns, 5000u + 4 * 90);
  EXPECT_EQ(r.transport, static_cast<uint8_t>(ni::Transport::kIntraNode));
  EXPECT_EQ(r.algo, static_cast<uint8_t>(ni::Algo::kRing));
  EXPECT_EQ(r.n_channels, 8);
  EXPECT_EQ(r.flags & ni::kFlagReclaimed, 0);
  // The enqueue time is CPU monotonic ns, taken inside the Coll start.
  EXPECT_EQ(r.flags & (ni::kFlagEnqueueTicks | ni::kFlagChannelSums), 0);
  EXPECT_GE(r.enqueue_ns + 1000, before);  // the tick-to-ns calibration may be off by a little
  EXPECT_LE(r.enqueue_ns, after + 1000);
}

// Small ops: the proxy sees channel 0 start and stop before channel 1 starts.
TEST_F(Tracker, ChannelsCompletingOneByOneStillMakeOneRecord) {
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllGather", 65536, "ncclInt8", 4, 7);
  for (uint8_t ch = 0; ch < 4; ++ch) c.kstop(c.kch(op, ch, 100 + ch), 200 + ch);
  EXPECT_TRUE(sink()->take().empty()) << "must wait for the Coll stop";
  c.stop(op);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].channel_mask, 0xFull);
  EXPECT_TRUE(recs[0].flags & ni::kFlagCountIsBytes);
  EXPECT_EQ(recs[0].bytes, 65536u);
}

// NCCL announced 2 channels but 3 run: all three are timed, whether the third
// starts before the others stop or after (before the Coll stop).
TEST_F(Tracker, MoreChannelsThanAnnouncedAreAllTimed) {
  CommV5 c;
  void* a = c.coll(c.coll_api(), "AllReduce", 4096, "ncclFloat32", 2, 1);
  c.stop(a);
  void* k0 = c.kch(a, 0, 100);
  void* k1 = c.kch(a, 1, 110);
  void* k2 = c.kch(a, 2, 120);
  c.kstop(k0, 200);
  c.kstop(k1, 210);
  EXPECT_TRUE(sink()->take().empty()) << "channel 2 still runs";
  c.kstop(k2, 400);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].channel_mask, 0x7ull);
  EXPECT_EQ(recs[0].end_ns, 400u);
  EXPECT_EQ(recs[0].max_channel_ns, 280u);
  EXPECT_EQ(recs[0].flags & ni::kFlagPartialChannels, 0);

  void* b = c.coll(c.coll_api(), "AllReduce", 4096, "ncclFloat32", 2, 2);
  c.kstop(c.kch(b, 0, 1000), 1100);
  c.kstop(c.kch(b, 1, 1000), 1100);  // the announced channels are done; the op waits for its stop
  c.kstop(c.kch(b, 5, 1050), 1500);  // a late third channel before the Coll stop
  c.stop(b);
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].channel_mask, 0x23ull);
  EXPECT_EQ(recs[0].end_ns, 1500u);
  EXPECT_EQ(recs[0].channels[2].start_off_ns, 50u);
  EXPECT_EQ(recs[0].channels[2].dur_ns, 450u);
  EXPECT_EQ(ni::stats().fault_late_child, 0u);
}

// Channels whose starts arrive out of GPU-time order: the op starts at the
// earliest, every offset is from it, and a channel with no stop stamp has
// zero length (never a negative or wrapped one).
TEST_F(Tracker, ChannelTimesAreRelativeToTheEarliestStart) {
  CommV5 c;
  void* op = c.coll(c.coll_api(), "ReduceScatter", 1 << 16, "ncclFloat32", 3, 9);
  c.stop(op);
  void* k3 = c.kch(op, 3, 5000);
  void* k1 = c.kch(op, 1, 4000);
  void* k2 = c.kch(op, 2, 4500);
  c.kstop(k3, 5100);
  c.kstop(k1, 4700);
  ncclProfiler_v5.recordEventState(k2, kKernelChStop, nullptr);  // its state without the timer
  c.stop(k2);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  EXPECT_EQ(r.start_ns, 4000u);
  EXPECT_EQ(r.end_ns, 5100u);
  ASSERT_EQ(r.channel_mask, 0xEull);
  EXPECT_EQ(r.channels[0].start_off_ns, 0u);     // channel 1
  EXPECT_EQ(r.channels[0].dur_ns, 700u);
  EXPECT_EQ(r.channels[1].start_off_ns, 500u);   // channel 2
  EXPECT_EQ(r.channels[1].dur_ns, 0u);
  EXPECT_EQ(r.channels[2].start_off_ns, 1000u);  // channel 3
  EXPECT_EQ(r.channels[2].dur_ns, 100u);
  EXPECT_EQ(r.busy_ns, 800u);
  EXPECT_EQ(r.channels_started, 3);
  EXPECT_EQ(r.channels_stopped, 3);
  EXPECT_EQ(r.flags & ni::kFlagPartialChannels, 0);
  EXPECT_EQ(r.max_channel_ns, 700u);
  EXPECT_EQ(r.min_channel_ns, 0u);
  EXPECT_EQ(r.flags & ni::kFlagChannelSums, 0) << "the internal flag never reaches a sink";
  EXPECT_EQ(r.sym_tasks, 0) << "no symmetric plan";
  EXPECT_EQ(r.kernel_variant, 0) << "no symmetric kernel";
}

// ABI v4+: the KernelChStop state ends a channel; the stop that NCCL always
// sends right after it carries nothing more. A channel stopped without its
// state is still running: the op waits (here until finalize reclaims it).
TEST_F(Tracker, OnV4PlusTheKernelChStopStateEndsTheChannel) {
  CommV5 c;
  void* a = c.coll(c.coll_api(), "AllReduce", 4096, "ncclFloat32", 2, 1);
  c.stop(a);
  void* k0 = c.kch(a, 0, 100);
  void* k1 = c.kch(a, 1, 100);
  StateArgsV5 st{};
  st.kernelCh.pTimer = 300;
  ncclProfiler_v5.recordEventState(k0, kKernelChStop, &st);
  ncclProfiler_v5.recordEventState(k1, kKernelChStop, &st);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u) << "complete before the KernelCh stops";
  EXPECT_EQ(recs[0].end_ns, 300u);
  c.stop(k0);
  c.stop(k1);
  EXPECT_EQ(ni::stats().fault_stale_handle, 0u) << "the stops after the last state are not faults";

  void* b = c.coll(c.coll_api(), "AllReduce", 4096, "ncclFloat32", 2, 2);
  c.stop(b);
  c.kstop(c.kch(b, 0, 1000), 1100);
  c.stop(c.kch(b, 1, 1000));  // no KernelChStop state
  EXPECT_TRUE(sink()->take().empty());
  c.finalize();
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_TRUE(recs[0].flags & ni::kFlagReclaimed);
  EXPECT_TRUE(recs[0].flags & ni::kFlagPartialChannels);
  EXPECT_EQ(recs[0].channels_started, 2);
  EXPECT_EQ(recs[0].channels_stopped, 1);
}

TEST_F(Tracker, P2pOnHighChannelsWithOwnPerPeerSequence) {
  CommV5 c(16, 3);
  for (int i = 0; i < 3; ++i) {
    void* s = c.p2p("Send", 1024, 5, 2);
    void* r = c.p2p("Recv", 1024, 5, 2);
    c.stop(s);
    c.stop(r);
    // A send and a recv sharing a work item get identical pTimers.
    for (uint8_t ch : {uint8_t{16}, uint8_t{24}}) {
      c.kstop(c.kch(s, ch, 500), 900);
      c.kstop(c.kch(r, ch, 500), 900);
    }
  }
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 6u);
  std::vector<uint64_t> send_seq, recv_seq;
  for (const auto& r : recs) {
    EXPECT_EQ(r.kind, static_cast<uint8_t>(ni::OpKind::kP2p));
    EXPECT_EQ(r.peer, 5);
    EXPECT_EQ(r.channel_mask, (1ull << 16) | (1ull << 24));
    EXPECT_EQ(r.end_ns - r.start_ns, 400u);
    EXPECT_TRUE(r.flags & ni::kFlagSeqOwn);
    (r.func == static_cast<uint8_t>(ni::Func::kSend) ? send_seq : recv_seq).push_back(r.seq);
  }
  EXPECT_EQ(send_seq, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(recv_seq, (std::vector<uint64_t>{0, 1, 2}));
}

TEST_F(Tracker, UnknownDatatypeGivesZeroBytesNotGarbage) {
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllReduce", 1000, "Unknown", 1, 0);
  c.stop(op);
  c.kstop(c.kch(op, 0, 10), 20);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].bytes, 0u);
  EXPECT_EQ(recs[0].dtype, static_cast<uint8_t>(ni::DType::kUnknown));
  EXPECT_EQ(recs[0].count, 1000u);
}

TEST_F(Tracker, MinSizeFiltersAndCounts) {
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "8192", 1);
  {
    CommV5 c;
    void* small = c.coll(c.coll_api(), "AllReduce", 16, "ncclFloat32", 2, 0);
    c.stop(small);
    c.kstop(c.kch(small, 0, 1), 2);  // children of a filtered op are ignored quietly
    void* big = c.coll(c.coll_api(), "AllReduce", 4096, "ncclFloat32", 1, 1);
    c.stop(big);
    c.kstop(c.kch(big, 0, 1), 2);
    auto recs = sink()->take();
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].seq, 1u);
    EXPECT_EQ(ni::stats().filtered_min_size, 1u);
    EXPECT_EQ(ni::stats().fault_stale_handle, 0u);
  }
}

TEST_F(Tracker, FaultsAreCountedNotFollowed) {
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, 0);
  c.stop(op);
  c.stop(op);  // double stop
  void* k = c.kch(op, 0, 10);
  c.kstop(k, 20);
  c.kstop(k, 30);  // stale: the op completed and its slot was freed
  c.stop(nullptr);
  EXPECT_EQ(ncclProfiler_v5.recordEventState(nullptr, kKernelChStop, nullptr), kSuccess);
  // A PXN ProxyOp from another process: foreign pid and a foreign context.
  EventDescrV5 d{};
  d.type = kProxyOp;
  d.parentObj = reinterpret_cast<void*>(0x7f0000001234);
  d.proxyOp.pid = getpid() + 1;
  void* h = reinterpret_cast<void*>(1);
  ncclProfiler_v5.startEvent(reinterpret_cast<void*>(0x12345678), &h, &d);
  EXPECT_EQ(h, nullptr);
  // A KernelCh with an out-of-range channel and one with a garbage parent.
  EXPECT_EQ(c.kch(op, 200, 1), nullptr);
  EXPECT_EQ(c.kch(reinterpret_cast<void*>(0x1), 0, 1), nullptr);
  // An event type from a future NCCL.
  EventDescrV5 u{};
  u.type = 1u << 15;
  EXPECT_EQ(c.start(u), nullptr);
  auto recs = sink()->take();
  EXPECT_EQ(recs.size(), 1u);
  ni::CoreStats s = ni::stats();
  EXPECT_EQ(s.fault_double_stop, 1u);
  EXPECT_GE(s.fault_stale_handle, 2u);
  EXPECT_EQ(s.fault_null_handle, 2u);
  EXPECT_EQ(s.fault_foreign_pid, 1u);
  EXPECT_EQ(s.fault_bad_channel, 1u);
  EXPECT_EQ(s.fault_unknown_event, 1u);
}

TEST_F(Tracker, InFlightOpsAreWrittenAtFinalizeMarkedReclaimed) {
  ni::out::MemorySink* s = nullptr;
  {
    CommV5 c;
    s = sink();
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 2, 9);
    c.stop(op);
    c.kstop(c.kch(op, 0, 10), 20);
    c.kch(op, 1, 15);  // never stops
  }
  auto recs = s->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_TRUE(recs[0].flags & ni::kFlagReclaimed);
  EXPECT_TRUE(recs[0].flags & ni::kFlagPartialChannels);
  EXPECT_EQ(recs[0].channels_started, 2);
  EXPECT_EQ(recs[0].channels_stopped, 1);
  EXPECT_EQ(s->final_stats().reclaimed, 1u);
}

TEST_F(Tracker, GraphCapturedFlagComesFromTheCollApiParent) {
  CommV5 c;
  void* api = c.coll_api(true);
  c.stop(api);  // stopped long before the replay
  for (int replay = 0; replay < 2; ++replay) {
    void* op = c.coll(api, "AllReduce", 1024, "ncclFloat32", 1, 5);  // same seq on replay
    c.stop(op);
    c.kstop(c.kch(op, 0, 10), 20);
  }
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 2u);
  for (const auto& r : recs) {
    EXPECT_TRUE(r.flags & ni::kFlagGraphCaptured);
    EXPECT_EQ(r.seq, 5u);
  }
}

// ABI v1 (NCCL 2.23): no KernelCh; the comm hash comes from the descriptor;
// the op is complete at its stop and its time is the enqueue time, said so.
TEST_F(Tracker, V1OpsCompleteAtStopWithEnqueueTiming) {
  int mask = 0;
  void* ctx = nullptr;
  ASSERT_EQ(ncclProfiler_v1.init(&ctx, &mask), kSuccess);
  EXPECT_EQ(mask & kKernelCh, 0);
  EventDescrV1 d{};
  d.type = kColl;
  d.rank = 2;
  d.coll.commHash = 0xabc;
  d.coll.seqNumber = 3;
  d.coll.func = kFuncReduceScatter;
  d.coll.count = 4096;
  d.coll.datatype = kBfloat16;
  d.coll.algo = kAlgoRing;
  d.coll.proto = kProtoLL128;
  void* h = nullptr;
  ncclProfiler_v1.startEvent(ctx, &h, &d);
  ncclProfiler_v1.stopEvent(h);
  auto recs = sink()->take();
  ncclProfiler_v1.finalize(ctx);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].comm_hash, 0xabcu);
  EXPECT_EQ(recs[0].rank, 2);
  EXPECT_EQ(recs[0].bytes, 8192u);
  EXPECT_EQ(recs[0].timing, static_cast<uint8_t>(ni::TimingSource::kEnqueueCpu));
  EXPECT_EQ(recs[0].proto, static_cast<uint8_t>(ni::Proto::kLL128));
  EXPECT_EQ(recs[0].abi_version, 1);
}

// ABI v3 (NCCL 2.26): KernelCh without pTimer: CPU times as the proxy saw them.
TEST_F(Tracker, V3KernelChTimesAreProxyCpuTimes) {
  int mask = 0;
  void* ctx = nullptr;
  ncclProfiler_v3.init(&ctx, &mask);
  EXPECT_TRUE(mask & kKernelCh);
  EventDescrV3 d{};
  d.type = kColl;
  d.coll.commHash = 0x33;
  d.coll.func = "AllReduce";
  d.coll.datatype = "ncclFloat32";
  d.coll.count = 1024;
  d.coll.nMaxChannels = 1;
  void* op = nullptr;
  ncclProfiler_v3.startEvent(ctx, &op, &d);
  ncclProfiler_v3.stopEvent(op);
  EventDescrV3 k{};
  k.type = kKernelCh;
  k.parentObj = op;
  k.kernelCh.channelId = 3;
  void* kh = nullptr;
  ncclProfiler_v3.startEvent(ctx, &kh, &k);
  usleep(2000);
  ncclProfiler_v3.stopEvent(kh);
  auto recs = sink()->take();
  ncclProfiler_v3.finalize(ctx);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].timing, static_cast<uint8_t>(ni::TimingSource::kProxyCpu));
  EXPECT_GE(recs[0].end_ns - recs[0].start_ns, 1500000u);
  EXPECT_LT(recs[0].end_ns - recs[0].start_ns, 500000000u);
  EXPECT_EQ(recs[0].channel_mask, 1ull << 3);
}

TEST_F(Tracker, NetworkStepsGiveBytesAndTimeSplit) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  CommV5 c;
  EXPECT_TRUE(c.mask & kProxyOp);
  void* op = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 1, 0);
  c.stop(op);
  void* k = c.kch(op, 0, 100);
  EventDescrV5 po{};
  po.type = kProxyOp;
  po.parentObj = op;
  po.proxyOp.pid = getpid();
  po.proxyOp.peer = 1;
  po.proxyOp.isSend = 1;
  void* p = c.start(po);
  ASSERT_NE(p, nullptr);
  for (int step = 0; step < 3; ++step) {
    EventDescrV5 ps{};
    ps.type = kProxyStep;
    ps.parentObj = p;
    ps.proxyStep.step = step;
    void* sh = c.start(ps);
    StateArgsV5 a{};
    ncclProfiler_v5.recordEventState(sh, kProxyStepSendGPUWait, &a);
    ncclProfiler_v5.recordEventState(sh, kProxyStepSendPeerWait, &a);
    a.proxyStep.transSize = 1000;
    ncclProfiler_v5.recordEventState(sh, kProxyStepSendWait, &a);
    // IB NetPlugin QP event under the step, stopped twice as NCCL does.
    NetIbDescrV1 ib{};
    ib.type = kNetIbQp;
    ib.qp.device = 1;
    ib.qp.qpNum = 77 + step;
    ib.qp.length = 1000;
    EventDescrV5 np{};
    np.type = kNetPlugin;
    np.parentObj = sh;
    np.netPlugin.id = kNetIbIdV1;
    np.netPlugin.data = &ib;
    void* nh = c.start(np);
    c.stop(nh);
    c.stop(nh);
    c.stop(sh);
  }
  c.stop(p);
  c.kstop(k, 900);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  EXPECT_EQ(r.transport, static_cast<uint8_t>(ni::Transport::kNetwork));
  EXPECT_EQ(r.net_send_bytes, 3000u);
  EXPECT_EQ(r.net_steps, 3u);
  EXPECT_EQ(r.net_ops, 1u);
  EXPECT_EQ(r.net_peer_count, 1);
  ASSERT_EQ(r.n_hcas, 1);
  EXPECT_EQ(r.hcas[0].device, 1);
  EXPECT_EQ(r.hcas[0].bytes, 3000u);
  EXPECT_EQ(r.hcas[0].wrs, 3u);
  EXPECT_EQ(r.hcas[0].qps, 3);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
}

// Per-HCA wire time: the union of the send work requests' post -> first stop
// (CQ completion) intervals. IB's repeated stops, the gaps between requests
// and posted receives do not count.
TEST_F(Tracker, HcaWireTimeIsTheUnionOfSendRequests) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  auto pause = [](int us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); };
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 1, 0);
  c.stop(op);
  void* k = c.kch(op, 0, 100);
  auto proxy_op = [&](int is_send) {
    EventDescrV5 po{};
    po.type = kProxyOp;
    po.parentObj = op;
    po.proxyOp.pid = getpid();
    po.proxyOp.peer = 1;
    po.proxyOp.isSend = is_send;
    return c.start(po);
  };
  auto step = [&](void* p, int n) {
    EventDescrV5 ps{};
    ps.type = kProxyStep;
    ps.parentObj = p;
    ps.proxyStep.step = n;
    return c.start(ps);
  };
  std::vector<NetIbDescrV1> ibs(8);
  int used = 0;
  auto qp = [&](void* sh, int dev, int qpn, uint64_t len) {
    NetIbDescrV1& ib = ibs[static_cast<size_t>(used++)];
    ib.type = kNetIbQp;
    ib.qp.device = dev;
    ib.qp.qpNum = qpn;
    ib.qp.length = len;
    EventDescrV5 np{};
    np.type = kNetPlugin;
    np.parentObj = sh;
    np.netPlugin.id = kNetIbIdV1;
    np.netPlugin.data = &ib;
    return c.start(np);
  };
  void* send = proxy_op(1);
  void* recv = proxy_op(0);
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  // Step 0, device 1: two requests on two QPs overlapping: 6 ms together.
  void* s0 = step(send, 0);
  void* a = qp(s0, 1, 10, 1000000);
  pause(2000);
  void* b = qp(s0, 1, 11, 1000000);
  pause(2000);
  c.stop(a);  // CQ completion
  pause(2000);
  c.stop(b);
  const double dev1_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  c.stop(a);  // test() repeats both stops
  c.stop(b);
  c.stop(s0);
  // A posted receive waits 30 ms for its sender: not wire time.
  void* r0 = step(recv, 0);
  void* rq = qp(r0, 1, 12, 0);
  pause(30000);
  c.stop(rq);
  c.stop(r0);
  // Step 1, device 2: one request of 4 ms.
  auto t1 = std::chrono::steady_clock::now();
  void* s1 = step(send, 1);
  void* d = qp(s1, 2, 20, 2000000);
  pause(4000);
  c.stop(d);
  const double dev2_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count();
  c.stop(d);
  c.stop(s1);
  c.stop(send);
  c.stop(recv);
  c.kstop(k, 900);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  ASSERT_EQ(r.n_hcas, 2);
  ASSERT_EQ(r.hcas[0].device, 1);
  EXPECT_EQ(r.hcas[0].bytes, 2000000u);
  EXPECT_EQ(r.hcas[0].wrs, 3u);  // the receive request is counted, not timed
  ASSERT_EQ(r.hcas[1].device, 2);
  const double w1 = r.hca_wire_100ns[0] / 10.0, w2 = r.hca_wire_100ns[1] / 10.0;  // us
  // At least the sleeps, at most the time measured around them (no receive, no gap).
  EXPECT_GE(w1, 6000.0);
  EXPECT_LE(w1, dev1_us + 100.0);
  EXPECT_GE(w2, 4000.0);
  EXPECT_LE(w2, dev2_us + 100.0);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
}

// A send request that never completes leaves its HCA's wire time unknown (0),
// not a number cut short.
TEST_F(Tracker, HcaWireTimeUnknownWhenARequestNeverCompletes) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 1, 0);
  c.stop(op);
  void* k = c.kch(op, 0, 100);
  EventDescrV5 po{};
  po.type = kProxyOp;
  po.parentObj = op;
  po.proxyOp.pid = getpid();
  po.proxyOp.peer = 1;
  po.proxyOp.isSend = 1;
  void* p = c.start(po);
  EventDescrV5 ps{};
  ps.type = kProxyStep;
  ps.parentObj = p;
  void* sh = c.start(ps);
  NetIbDescrV1 ib{};
  ib.type = kNetIbQp;
  ib.qp.device = 3;
  ib.qp.length = 4096;
  EventDescrV5 np{};
  np.type = kNetPlugin;
  np.parentObj = sh;
  np.netPlugin.id = kNetIbIdV1;
  np.netPlugin.data = &ib;
  (void)c.start(np);  // never stopped
  c.stop(sh);
  c.stop(p);
  c.kstop(k, 900);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_EQ(recs[0].n_hcas, 1);
  EXPECT_EQ(recs[0].hcas[0].bytes, 4096u);
  EXPECT_EQ(recs[0].hca_wire_100ns[0], 0u);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
}

// The adapters decode NetPlugin payloads by the network plugin's id: a socket
// payload is attributed to the socket "device", an unknown id to nothing.
TEST_F(Tracker, NetPluginSocketPayloadAndUnknownIds) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  CommV5 c;
  void* op = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 1, 0);
  c.stop(op);
  void* k = c.kch(op, 0, 100);
  EventDescrV5 po{};
  po.type = kProxyOp;
  po.parentObj = op;
  po.proxyOp.pid = getpid();
  po.proxyOp.peer = 1;
  po.proxyOp.isSend = 1;
  void* p = c.start(po);
  ASSERT_NE(p, nullptr);
  EventDescrV5 ps{};
  ps.type = kProxyStep;
  ps.parentObj = p;
  void* sh = c.start(ps);
  NetSockDescrV1 so{};
  so.type = kNetSocket;
  so.sock.op = kSocketSend;
  so.sock.length = 500;
  NetIbDescrV1 ib{};  // a valid IB payload, but under an id we do not know
  ib.type = kNetIbQp;
  ib.qp.device = 2;
  ib.qp.length = 7000;
  const int64_t ids[] = {kNetSockIdV1, kNetTypeIb | 2};
  const void* payloads[] = {&so, &ib};
  for (int i = 0; i < 2; ++i) {
    EventDescrV5 np{};
    np.type = kNetPlugin;
    np.parentObj = sh;
    np.netPlugin.id = ids[i];
    np.netPlugin.data = const_cast<void*>(payloads[i]);
    void* nh = c.start(np);
    EXPECT_NE(nh, nullptr);
    c.stop(nh);
  }
  c.stop(sh);
  c.stop(p);
  c.kstop(k, 900);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  ASSERT_EQ(r.n_hcas, 1);
  EXPECT_EQ(r.hcas[0].device, 0xFFFE);
  EXPECT_EQ(r.hcas[0].bytes, 500u);
  EXPECT_EQ(r.hcas[0].wrs, 1u);
  EXPECT_EQ(r.hcas[0].qps, 0);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
}

TEST_F(Tracker, CeCollectivesOnV6) {
  int mask = 0;
  void* ctx = nullptr;
  ncclProfiler_v6.init(&ctx, kHash, &mask, "tp", 1, 4, 1, nullptr);
  EXPECT_EQ(mask & kCeColl, kCeColl);
  EventDescrV6 d{};
  d.type = kCeColl;
  d.ceColl.func = "AllGather";
  d.ceColl.count = 1 << 16;
  d.ceColl.datatype = "ncclFloat16";
  d.ceColl.seqNumber = 12;
  void* h = nullptr;
  ncclProfiler_v6.startEvent(ctx, &h, &d);
  EventDescrV6 b{};
  b.type = kCeBatch;
  b.parentObj = h;
  b.ceCollBatch.totalBytes = 3 << 17;
  void* bh = nullptr;
  ncclProfiler_v6.startEvent(ctx, &bh, &b);
  ncclProfiler_v6.stopEvent(bh);
  ncclProfiler_v6.stopEvent(h);
  auto recs = sink()->take();
  ncclProfiler_v6.finalize(ctx);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kind, static_cast<uint8_t>(ni::OpKind::kCe));
  EXPECT_EQ(recs[0].bytes, 2u << 16);
  EXPECT_EQ(recs[0].net_send_bytes, 3u << 17);
  EXPECT_EQ(recs[0].timing, static_cast<uint8_t>(ni::TimingSource::kEnqueueCpu));
  EXPECT_EQ(recs[0].rank, 1);
}

TEST_F(Tracker, MarksCarryTheirLabel) {
  EXPECT_EQ(ncclInspectorMark("before any comm"), -1);
  CommV5 c;
  EXPECT_EQ(ncclInspectorMark("iteration 7"), 0);
  std::string long_label(1000, 'x');
  EXPECT_EQ(ncclInspectorMark(long_label.c_str()), 0);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kind, static_cast<uint8_t>(ni::kMarkKind));
  EXPECT_STREQ(reinterpret_cast<const char*>(recs[0].channels), "iteration 7");
  EXPECT_GT(recs[0].enqueue_ns, 0u);
  EXPECT_EQ(std::strlen(reinterpret_cast<const char*>(recs[1].channels)), ni::kMarkLabelMax - 1);
}

// ncclInspectorNameTag: a record of kind kTagName with the tag and its name
// (cut like a mark's label); tag 0 and a NULL name are refused (-2), and
// nothing is recorded before a comm exists (-1).
TEST_F(Tracker, TagNamesCarryTheirTagAndName) {
  EXPECT_EQ(ncclInspectorNameTag(12, "before any comm"), -1);
  CommV5 c;
  EXPECT_EQ(ncclInspectorNameTag(0, "no tag"), -2);
  EXPECT_EQ(ncclInspectorNameTag(12, nullptr), -2);
  EXPECT_EQ(ncclInspectorNameTag(0x7fffffffffffffffull, "layer 12 fwd"), 0);
  const std::string long_name(1000, 'n');
  EXPECT_EQ(ncclInspectorNameTag(3, long_name.c_str()), 0);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0].kind, static_cast<uint8_t>(ni::kTagNameKind));
  EXPECT_TRUE(ni::is_note(recs[0].kind));
  EXPECT_EQ(recs[0].user_tag, 0x7fffffffffffffffull);
  EXPECT_STREQ(reinterpret_cast<const char*>(recs[0].channels), "layer 12 fwd");
  EXPECT_GT(recs[0].enqueue_ns, 0u);
  EXPECT_EQ(recs[1].user_tag, 3u);
  EXPECT_EQ(std::strlen(reinterpret_cast<const char*>(recs[1].channels)), ni::kMarkLabelMax - 1);
  // A mark after a tag name is a mark again, with no tag.
  EXPECT_EQ(ncclInspectorMark("iteration 1"), 0);
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].kind, static_cast<uint8_t>(ni::kMarkKind));
  EXPECT_EQ(recs[0].user_tag, 0u);
}

namespace {

constexpr uint64_t kOffset = 1000000000ull;  // the GPU clock of feed_clock_bounds(): CPU monotonic - 1 s

// Ops whose first channel `tight` sees ~2 us after the GPU started it and
// `loose` 0.5..3.5 ms after, on a GPU clock kOffset behind the CPU's; `other`
// (if any) on a clock of another epoch. About one op in four is sampled (at
// random): enough ops that each comm's bound and spread are seen.
void feed_clock_bounds(CommV5& tight, CommV5& loose, CommV5* other = nullptr) {
  auto op_with_start = [](CommV5& c, uint64_t ptimer) {
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, 0);
    c.stop(op);
    CommV5::kstop(c.kch(op, 0, ptimer), ptimer + 10);
  };
  for (int i = 0; i < 400; ++i) {
    const uint64_t now = ni::mono_now_ns();
    op_with_start(tight, now - kOffset - 2000);
    op_with_start(loose, now - kOffset - 500000 - (i % 4) * 1000000);
    if (other != nullptr) op_with_start(*other, now - 5000000000000ull);
  }
}

}  // namespace

// Comms of one process usually share a GPU clock; a comm whose kernel starts
// are observed late borrows a tighter bound that lies within its uncertainty,
// and a comm on a clock with another epoch never does.
TEST_F(Tracker, ClockBoundsAreSharedOnlyWithinUncertainty) {
  CommV5 tight(8, 0, 0x1), loose(8, 0, 0x2), other(8, 0, 0x3);
  feed_clock_bounds(tight, loose, &other);
  std::map<uint64_t, uint32_t> id;
  for (const auto& ci : ni::comms()) id[ci.comm_hash] = ci.comm_id;
  ni::ClockEstimate t = ni::clock_estimate(id[0x1]);
  ni::ClockEstimate l = ni::clock_estimate(id[0x2]);
  ni::ClockEstimate o = ni::clock_estimate(id[0x3]);
  ASSERT_TRUE(t.valid && l.valid && o.valid);
  const int64_t truth = static_cast<int64_t>(kOffset);  // mono = ptimer + offset
  EXPECT_GE(t.offset_ns, truth);
  EXPECT_LT(t.offset_ns - truth, 200000) << "tight bound";
  EXPECT_EQ(l.offset_ns, t.offset_ns) << "the loose comm borrows the tight bound";
  EXPECT_GT(o.offset_ns - truth, 4000000000000ll) << "another clock is never merged";
  sink()->take();
}

// A process holding two ranks of one comm drives several GPUs (NCCL never
// puts two ranks of a comm on one GPU), whose clocks may be milliseconds
// apart. With no driver to say which comm runs on which GPU, no comm borrows
// another's bound there: it would move the comm's times mid-run and apart
// from its peers' (which reordered collectives across ranks in the emulator).
TEST_F(Tracker, ClockBoundsAreNotSharedInAProcessDrivingSeveralGpus) {
  CommV5 tight(8, 0, 0x1), loose(8, 0, 0x2);
  CommV5 peer0(8, 0, 0x7), peer1(8, 1, 0x7);  // two ranks of one comm: two GPUs
  feed_clock_bounds(tight, loose);
  std::map<uint64_t, uint32_t> id;
  for (const auto& ci : ni::comms())
    if (ci.rank == 0) id[ci.comm_hash] = ci.comm_id;
  ni::ClockEstimate t = ni::clock_estimate(id[0x1]);
  ni::ClockEstimate l = ni::clock_estimate(id[0x2]);
  ASSERT_TRUE(t.valid && l.valid);
  const int64_t truth = static_cast<int64_t>(kOffset);
  EXPECT_LT(t.offset_ns - truth, 200000) << "tight bound";
  EXPECT_GE(l.offset_ns - truth, 400000) << "the loose comm keeps its own bound";
  EXPECT_LT(l.offset_ns - truth, 700000) << "its own bound: the least lateness seen, 0.5 ms";
  sink()->take();
}

TEST_F(Tracker, ContextOfAFinishedRuntimeIsIgnored) {
  void* old = nullptr;
  {
    CommV5 c;
    old = c.ctx;
  }
  CommV5 fresh;
  EventDescrV5 d{};
  d.type = kColl;
  d.coll.func = "AllReduce";
  void* h = reinterpret_cast<void*>(1);
  ncclProfiler_v5.startEvent(old, &h, &d);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(ni::stats().fault_null_context, 1u);
}

// App thread and progress thread at once: every op completes exactly once.
TEST_F(Tracker, AppAndProgressThreadsConcurrently) {
  setenv("NCCL_INSPECTOR_RING_RECORDS", "65536", 1);
  CommV5 c;
  constexpr int kOps = 20000;
  std::vector<void*> q(kOps);
  std::atomic<int> posted{0};
  std::atomic<int> progressed{0};
  std::thread progress([&] {
    for (int i = 0; i < kOps; ++i) {
      while (posted.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      for (uint8_t ch = 0; ch < 8; ++ch) CommV5::kstop(c.kch(q[i], ch, 100), 200 + ch);
      progressed.store(i + 1, std::memory_order_release);
    }
  });
  for (int i = 0; i < kOps; ++i) {
    // NCCL cannot run arbitrarily far ahead of the GPU either.
    while (i - progressed.load(std::memory_order_acquire) > 256) std::this_thread::yield();
    void* op = c.coll(c.coll_api(), "AllReduce", 1 << 16, "ncclFloat32", 8, static_cast<uint64_t>(i));
    q[i] = op;
    posted.store(i + 1, std::memory_order_release);
    c.stop(op);
  }
  progress.join();
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), static_cast<size_t>(kOps));
  std::vector<int> seen(kOps, 0);
  for (const auto& r : recs) {
    ASSERT_LT(r.seq, static_cast<uint64_t>(kOps));
    seen[r.seq]++;
    EXPECT_EQ(r.channel_mask, 0xFFull);
  }
  for (int i = 0; i < kOps; ++i) EXPECT_EQ(seen[i], 1) << i;
  unsetenv("NCCL_INSPECTOR_RING_RECORDS");
}

// Several app threads start ops on one comm at the same time while a progress
// thread completes them, with a small pool that grows while they run: no op is
// lost or recorded twice, and a thread that finds the pool empty while another
// adds a chunk waits for it instead of dropping.
TEST_F(Tracker, SlotsGoRoundBetweenThreadsWithoutLossOrDuplicates) {
  setenv("NCCL_INSPECTOR_RING_RECORDS", "65536", 1);
  setenv("NCCL_INSPECTOR_POOL_OPS", "128", 1);
  CommV5 c;
  constexpr int kApps = 3, kPerApp = 4000, kInFlight = 30;  // 3 x 30 < 128: no drops
  std::vector<std::vector<std::atomic<void*>>> q(kApps);
  for (auto& v : q) v = std::vector<std::atomic<void*>>(kPerApp);
  std::vector<std::atomic<int>> progressed(kApps);
  for (auto& p : progressed) p.store(0);
  std::thread progress([&] {
    std::vector<int> next(kApps, 0);
    for (int left = kApps * kPerApp; left > 0;) {
      bool any = false;
      for (int a = 0; a < kApps; ++a) {
        if (next[a] == kPerApp) continue;
        void* op = q[a][next[a]].load(std::memory_order_acquire);  // pairs with the app thread's release store
        if (op == nullptr) continue;
        for (uint8_t ch = 0; ch < 4; ++ch) CommV5::kstop(c.kch(op, ch, 100), 200 + ch);
        progressed[a].store(++next[a], std::memory_order_release);  // pairs with the app thread's acquire load
        --left;
        any = true;
      }
      if (!any) std::this_thread::yield();
    }
  });
  std::vector<std::thread> apps;
  for (int a = 0; a < kApps; ++a) {
    apps.emplace_back([&, a] {
      for (int i = 0; i < kPerApp; ++i) {
        while (i - progressed[a].load(std::memory_order_acquire) >= kInFlight) std::this_thread::yield();
        void* op = c.coll(c.coll_api(), "AllReduce", 1 << 16, "ncclFloat32", 4,
                          static_cast<uint64_t>(a * kPerApp + i));
        c.stop(op);
        q[a][i].store(op, std::memory_order_release);  // pairs with the progress thread's acquire load
      }
    });
  }
  for (auto& t : apps) t.join();
  progress.join();
  auto recs = sink()->take();
  ni::CoreStats s = ni::stats();
  ASSERT_EQ(recs.size(), static_cast<size_t>(kApps * kPerApp)) << "pool drops " << s.dropped_pool_exhausted;
  EXPECT_EQ(s.dropped_pool_exhausted, 0u);
  EXPECT_EQ(s.fault_stale_handle, 0u);
  std::vector<int> seen(kApps * kPerApp, 0);
  for (const auto& r : recs) {
    ASSERT_LT(r.seq, seen.size());
    seen[r.seq]++;
    EXPECT_EQ(r.channel_mask, 0xFull);
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << i;
  unsetenv("NCCL_INSPECTOR_RING_RECORDS");
  unsetenv("NCCL_INSPECTOR_POOL_OPS");
}

// The benchmarks' consumer: drains and drops (counted), keeps nothing.
TEST_F(Tracker, MemorySinkDiscardDrainsWithoutKeeping) {
  CommV5 c;
  for (int i = 0; i < 3; ++i) {
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, static_cast<uint64_t>(i));
    c.stop(op);
    c.kstop(c.kch(op, 0, 10), 20);
  }
  EXPECT_EQ(sink()->discard(), 3u);
  EXPECT_TRUE(sink()->take().empty());
  EXPECT_EQ(ni::stats().ops_completed, 3u);
}

// A pool at its maximum: the first refusal yields to a possible batch in
// transit (8 times), the refusals after it, with nothing freed, try once and
// return; a free() ends that, and the next exhaustion waits once again.
TEST(Pool, RefusalsAtTheMaximumWaitOnlyOncePerExhaustion) {
  ni::core::Pool<ni::core::OpSlot> p;
  ASSERT_TRUE(p.init(ni::core::kChunk, nullptr));
  std::vector<uint32_t> got;
  for (uint32_t i = 0; i < ni::core::kChunk; ++i) {
    const uint32_t s = p.alloc();
    ASSERT_NE(s, UINT32_MAX) << i;
    got.push_back(s);
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p.alloc(), UINT32_MAX);
  EXPECT_EQ(p.refusal_yields(), 8u) << "only the first of 100 refusals waits";
  p.free(got.back());
  EXPECT_EQ(p.alloc(), got.back()) << "the freed slot";
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p.alloc(), UINT32_MAX);
  EXPECT_EQ(p.refusal_yields(), 16u);
  for (uint32_t s : got) p.free(s);
}

TEST_F(Tracker, ExhaustedPoolDropsAndCounts) {
  setenv("NCCL_INSPECTOR_POOL_OPS", "64", 1);
  CommV5 c;
  std::vector<void*> ops;
  for (int i = 0; i < 100; ++i) {
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, static_cast<uint64_t>(i));
    c.stop(op);
    ops.push_back(op);
  }
  for (void* op : ops) c.kstop(c.kch(op, 0, 1), 2);
  ni::CoreStats s = ni::stats();
  auto recs = sink()->take();
  EXPECT_EQ(recs.size(), 64u);
  EXPECT_EQ(s.dropped_pool_exhausted, 36u);
  unsetenv("NCCL_INSPECTOR_POOL_OPS");
}

TEST_F(Tracker, FullRingDropsAndCounts) {
  setenv("NCCL_INSPECTOR_RING_RECORDS", "16", 1);
  setenv("NCCL_INSPECTOR_BURST_RECORDS", "0", 1);  // the steady ring alone (burst rings: BurstRings below)
  CommV5 c;
  for (int i = 0; i < 100; ++i) {
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, static_cast<uint64_t>(i));
    c.stop(op);
    c.kstop(c.kch(op, 0, 1), 2);
  }
  ni::CoreStats s = ni::stats();
  auto recs = sink()->take();
  EXPECT_EQ(recs.size(), 16u);
  EXPECT_EQ(s.dropped_ring_full, 84u);
  EXPECT_EQ(recs.size() + s.dropped_ring_full, 100u);
  EXPECT_GE(sink()->wakes(), 1u);
  // The consumer saw the ring full just before it drained it.
  EXPECT_EQ(ni::stats().ring_high_water, 16u);
  unsetenv("NCCL_INSPECTOR_RING_RECORDS");
  unsetenv("NCCL_INSPECTOR_BURST_RECORDS");
}

TEST_F(Tracker, PoolStatisticsCountInFlightOps) {
  CommV5 c;
  std::vector<void*> ops;
  for (int i = 0; i < 70; ++i) {
    void* op = c.coll(c.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, static_cast<uint64_t>(i));
    c.stop(op);  // enqueued, not complete: the op stays in flight
    ops.push_back(op);
  }
  ni::CoreStats s = ni::stats();
  EXPECT_EQ(s.pool_in_use, 70u);
  EXPECT_EQ(s.pool_high_water, 128u);  // two chunks of 64
  for (void* op : ops) c.kstop(c.kch(op, 0, 1), 2);
  s = ni::stats();
  EXPECT_EQ(s.pool_in_use, 0u);
  EXPECT_EQ(s.pool_high_water, 128u);
  EXPECT_EQ(sink()->take().size(), 70u);
}

// Slots are shared by every communicator through one table: a handle of a
// finalized communicator must not reach the op that now occupies its slot.
TEST_F(Tracker, HandleOfAFinalizedCommDoesNotReachTheNextOwnerOfItsSlot) {
  CommV5 keeper(8, 0, 0x3333);  // keeps the runtime (and its recycled contexts) alive
  void* old_op = nullptr;
  void* old_k = nullptr;
  {
    CommV5 a(8, 0, 0x1111);
    old_op = a.coll(a.coll_api(), "AllReduce", 1024, "ncclFloat32", 2, 1);
    a.stop(old_op);
    old_k = a.kch(old_op, 0, 10);  // in flight at finalize: written as reclaimed
  }
  ASSERT_EQ(sink()->take().size(), 1u);
  CommV5 b(8, 0, 0x2222);  // reuses a's context and pool
  void* op = b.coll(b.coll_api(), "AllReduce", 1024, "ncclFloat32", 1, 7);
  b.stop(op);
  // The old handles are stale even if the new op took the same slot.
  EXPECT_EQ(b.kch(old_op, 1, 11), nullptr);
  b.kstop(old_k, 99);
  b.kstop(b.kch(op, 0, 100), 150);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].comm_hash, 0x2222u);
  EXPECT_EQ(recs[0].seq, 7u);
  EXPECT_EQ(recs[0].channel_mask, 1u);
  EXPECT_EQ(recs[0].end_ns - recs[0].start_ns, 50u);
  EXPECT_GE(ni::stats().fault_stale_handle, 2u);
}

}  // namespace

namespace {
// A ProxyOp of `op` to or from `peer` with `posted` steps, the first `done` of them stopped.
void* proxy_op(CommV5& c, void* op, int peer, bool send, int posted, int done) {
  EventDescrV5 po{};
  po.type = kProxyOp;
  po.parentObj = op;
  po.proxyOp.pid = getpid();
  po.proxyOp.peer = peer;
  po.proxyOp.isSend = send ? 1 : 0;
  void* p = c.start(po);
  for (int step = 0; step < posted; ++step) {
    EventDescrV5 ps{};
    ps.type = kProxyStep;
    ps.parentObj = p;
    ps.proxyStep.step = step;
    void* sh = c.start(ps);
    if (step < done) c.stop(sh);
  }
  return p;
}
}  // namespace

// The snapshot reads op slots that the issuing thread keeps reusing: every op
// it shows must be one op, never the fields of two (each op's bytes, channel
// count and issue index follow from its seq here). Under ThreadSanitizer this
// is also the race check of show()/shown() and open_op().
TEST_F(Tracker, ProgressSnapshotNeverMixesTwoOpsOfAReusedSlot) {
  // The issuer runs until the snapshot has shown kWanted ops (or kMaxOps were
  // issued): how many a snapshot catches depends on scheduling (a loaded
  // sanitizer run once saw 576 in 20,000 ops), so the count is not timed. On a
  // loaded machine the reader may not run at all while the issuer goes through
  // its ops (a CI run once saw 1,520 in 2,000,000 in 0.4 s), so every 512 ops
  // the issuer waits (up to 100 ms) for the reader to finish one more pass.
  constexpr uint64_t kWanted = 2000, kMaxOps = 2'000'000;
  CommV5 c;
  std::atomic<bool> done{false}, enough{false};
  std::atomic<uint64_t> passes{0};  // the reader's snapshots taken
  uint64_t issued = 0;  // read after join
  std::thread issuer([&] {
    void* prev = nullptr;
    void* prev_k = nullptr;
    uint64_t seen = 0;
    // pairs with the release store of `enough` in the reader loop below
    for (uint64_t seq = 0; seq < kMaxOps && !enough.load(std::memory_order_acquire); ++seq, ++issued) {
      if (seq % 512 == 511) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        // pairs with the reader's release increment of `passes` after each snapshot
        while (passes.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until)
          std::this_thread::yield();
        seen = passes.load(std::memory_order_acquire);  // pairs with the same increment
      }
      // Two in flight at a time: op seq starts before op seq - 1 ends.
      void* h = c.coll(nullptr, "AllReduce", seq + 1, "ncclFloat32", static_cast<uint8_t>(seq % 8 + 1), seq);
      c.stop(h);
      void* k = c.kch(h, 0, 2 * seq);
      if (prev != nullptr) c.kstop(prev_k, 2 * seq + 1);
      prev = h;
      prev_k = k;
    }
    c.kstop(prev_k, 1ull << 62);
    done.store(true, std::memory_order_release);  // pairs with the acquire load in the loop below
  });
  uint64_t shown = 0, mixed = 0;
  while (!done.load(std::memory_order_acquire)) {  // pairs with the release store above
    for (const ni::CommProgress& p : ni::progress_snapshot(0))
      for (const ni::StuckOp& o : p.stuck) {
        ++shown;
        const bool same_op = o.bytes == 4 * (o.seq + 1) && o.n_channels == o.seq % 8 + 1 && o.issue == o.seq &&
                             o.func == static_cast<uint8_t>(ni::Func::kAllReduce) &&
                             o.kind == static_cast<uint8_t>(ni::OpKind::kColl);
        if (!same_op) ++mixed;
      }
    passes.fetch_add(1, std::memory_order_release);  // pairs with the issuer's acquire loads of `passes`
    if (shown >= kWanted) enough.store(true, std::memory_order_release);  // pairs with the issuer's acquire load
  }
  issuer.join();
  EXPECT_EQ(mixed, 0u) << "of " << shown;
  EXPECT_GE(shown, kWanted) << "in " << issued << " ops";  // the snapshot did see ops in flight
  RecordProperty("shown", std::to_string(shown) + " in " + std::to_string(issued) + " ops");
  c.finalize();
  if (sink()) sink()->take();
}

// What a hung comm's progress line is made of: the issue counters count every
// op started (a filtered one too), and an op in flight long enough is shown
// with its channels and its network steps per peer.
TEST_F(Tracker, ProgressSnapshotShowsWhereAHungCommStands) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "4096", 1);
  {
    CommV5 c;
    void* done = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 1, 0);
    c.stop(done);
    c.kstop(c.kch(done, 0, 10), 20);
    void* small = c.coll(c.coll_api(), "AllGather", 16, "ncclFloat32", 1, 0);  // filtered (64 bytes)
    c.stop(small);
    void* hung = c.coll(c.coll_api(), "AllReduce", 1 << 20, "ncclFloat32", 2, 1);
    c.stop(hung);
    void* k0 = c.kch(hung, 0, 30);
    c.kch(hung, 1, 31);  // never ends
    c.kstop(k0, 40);
    proxy_op(c, hung, 3, false, 2, 1);  // receives from 3: one of two steps arrived
    proxy_op(c, hung, 1, true, 1, 1);   // sends to 1: all done
    void* send = c.p2p("Send", 1 << 20, 2, 1);
    c.stop(send);

    std::vector<ni::CommProgress> ps = ni::progress_snapshot(0);
    ASSERT_EQ(ps.size(), 1u);
    const ni::CommProgress& p = ps[0];
    EXPECT_EQ(p.issued, 3u);
    EXPECT_EQ(p.func_seq[static_cast<int>(ni::Func::kAllReduce)], 2u);  // seq 1 started
    EXPECT_EQ(p.func_seq[static_cast<int>(ni::Func::kAllGather)], 1u);  // seq 0, though not recorded
    EXPECT_EQ(p.func_seq[static_cast<int>(ni::Func::kBroadcast)], 0u);
    EXPECT_EQ(p.p2p_started, 1u);
    EXPECT_EQ(p.in_flight, 2u);  // the hung AllReduce and the send
    ASSERT_EQ(p.stuck.size(), 2u);
    const ni::StuckOp& o = p.stuck[0];  // oldest first
    EXPECT_EQ(o.func, static_cast<uint8_t>(ni::Func::kAllReduce));
    EXPECT_EQ(o.kind, static_cast<uint8_t>(ni::OpKind::kColl));
    EXPECT_EQ(o.seq, 1u);
    EXPECT_EQ(o.issue, 2u);
    EXPECT_EQ(o.bytes, 4u << 20);
    EXPECT_EQ(o.n_channels, 2);
    EXPECT_EQ(o.ch_started, 3u);
    EXPECT_EQ(o.ch_stopped, 1u);
    ASSERT_EQ(o.net.size(), 2u);  // by peer
    EXPECT_EQ(o.net[0].peer, 1);
    EXPECT_TRUE(o.net[0].send);
    EXPECT_EQ(o.net[0].posted, 1u);
    EXPECT_EQ(o.net[0].done, 1u);
    EXPECT_EQ(o.net[1].peer, 3);
    EXPECT_FALSE(o.net[1].send);
    EXPECT_EQ(o.net[1].proxy_ops, 1u);
    EXPECT_EQ(o.net[1].posted, 2u);
    EXPECT_EQ(o.net[1].done, 1u);
    EXPECT_EQ(p.stuck[1].kind, static_cast<uint8_t>(ni::OpKind::kP2p));
    EXPECT_EQ(p.stuck[1].peer, 2);
    EXPECT_EQ(p.stuck[1].issue, 0u);
    // Nothing has been in flight for an hour.
    ps = ni::progress_snapshot(3600ull * 1000000000ull);
    ASSERT_EQ(ps.size(), 1u);
    EXPECT_TRUE(ps[0].stuck.empty());
    EXPECT_EQ(ps[0].in_flight, 2u);
    auto recs = sink()->take();
    ASSERT_EQ(recs.size(), 1u);  // the first AllReduce
    EXPECT_EQ(recs[0].issue, 0u);
  }
  auto recs = sink() ? sink()->take() : std::vector<OpRecord>{};
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
}

// The issue order goes into the record of every collective, and P2P ops
// leave it 0.
TEST_F(Tracker, CollectiveRecordsCarryTheirPlaceInTheIssueOrder) {
  CommV5 c;
  for (int i = 0; i < 3; ++i) {
    void* op = c.coll(c.coll_api(), i == 1 ? "AllGather" : "AllReduce", 1024, "ncclFloat32", 1, i == 2 ? 1 : 0);
    c.stop(op);
    c.kstop(c.kch(op, 0, 10 + i), 20 + i);
  }
  void* s = c.p2p("Send", 1024, 1, 1);
  c.stop(s);
  c.kstop(c.kch(s, 0, 50), 60);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 4u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(recs[i].issue, i);
  EXPECT_EQ(recs[2].seq, 1u);
  EXPECT_EQ(recs[3].kind, static_cast<uint8_t>(ni::OpKind::kP2p));
  EXPECT_EQ(recs[3].issue, 0u);
}

// ---------------------------------------------------------------- burst rings
// A thread's records go to its steady ring (NCCL_INSPECTOR_RING_RECORDS) and,
// when that is full, to its burst ring (NCCL_INSPECTOR_BURST_RECORDS) until
// the consumer has taken every burst record (src/core/ring.h, ThreadRing).
// Marks are the records here: each carries its index as its label.
class BurstRings : public Tracker {
 protected:
  void SetUp() override {
    Tracker::SetUp();
    setenv("NCCL_INSPECTOR_RING_RECORDS", "16", 1);
    setenv("NCCL_INSPECTOR_BURST_RECORDS", "64", 1);
    setenv("NCCL_INSPECTOR_BURST_RINGS", "1", 1);
  }
  void TearDown() override {
    for (const char* v : {"NCCL_INSPECTOR_RING_RECORDS", "NCCL_INSPECTOR_BURST_RECORDS", "NCCL_INSPECTOR_BURST_RINGS"})
      unsetenv(v);
  }
  static int mark(uint64_t i) { return ncclInspectorMark(std::to_string(i).c_str()); }
  static uint64_t label(const OpRecord& r) {
    return std::strtoull(reinterpret_cast<const char*>(r.channels), nullptr, 10);
  }
};

TEST_F(BurstRings, AFullSteadyRingOverflowsIntoTheBurstRingInOrderAndBack) {
  CommV5 c;  // the runtime, with the settings above
  uint64_t i = 0;
  for (; i < 16 + 64; ++i) ASSERT_EQ(mark(i), 0) << "steady 16 + burst 64 hold the whole burst, record " << i;
  EXPECT_EQ(mark(i++), 1) << "both full: dropped";
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 80u);
  for (uint64_t k = 0; k < recs.size(); ++k) EXPECT_EQ(label(recs[k]), k) << "in the order written";
  // Everything was taken: back to the steady ring, and again to the burst
  // ring when it fills (the burst ring is reused, not made again).
  for (uint64_t k = 0; k < 40; ++k) ASSERT_EQ(mark(100 + k), 0);  // 16 steady, then 24 burst
  auto part = sink()->take();
  ASSERT_EQ(part.size(), 40u);
  for (uint64_t k = 0; k < 40; ++k) ASSERT_EQ(label(part[k]), 100 + k);
  for (uint64_t k = 0; k < 5; ++k) ASSERT_EQ(mark(200 + k), 0);
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 5u);
  for (uint64_t k = 0; k < 5; ++k) EXPECT_EQ(label(recs[k]), 200 + k);
  const ni::CoreStats st = ni::stats();
  EXPECT_EQ(st.dropped_ring_full, 1u);
  EXPECT_EQ(st.ops_completed, 80u + 1u + 40u + 5u) << "marks count as completed records";
  EXPECT_EQ(st.records_pending, 0u);
  EXPECT_EQ(st.ring_high_water, 80u) << "both rings' fill";
}

TEST_F(BurstRings, OnlyBurstRingsThreadsGetOneTheOthersDropCounted) {
  CommV5 c;
  for (uint64_t i = 0; i < 16 + 64; ++i) ASSERT_EQ(mark(i), 0);
  int accepted = 0, dropped = 0;
  std::thread other([&] {
    for (uint64_t i = 0; i < 40; ++i) (mark(1000 + i) == 0 ? accepted : dropped)++;
  });
  other.join();
  EXPECT_EQ(accepted, 16) << "the second thread has its steady ring only (NCCL_INSPECTOR_BURST_RINGS=1)";
  EXPECT_EQ(dropped, 24);
  EXPECT_EQ(sink()->take().size(), 80u + 16u);
  EXPECT_EQ(ni::stats().dropped_ring_full, 24u);
}

// A producer writing as fast as it can while a consumer drains: every record
// the producer was told was kept is handed out exactly once, in the order
// written, across many switches between the rings.
TEST_F(BurstRings, ConcurrentConsumerSeesEveryKeptRecordOnceInOrder) {
  CommV5 c;
  constexpr uint64_t kMarks = 200000;
  std::vector<uint64_t> kept;
  kept.reserve(kMarks);
  std::atomic<bool> done{false};
  std::vector<uint64_t> seen;
  seen.reserve(kMarks);
  std::thread consumer([&] {
    // Acquire pairs with the producer's release store of done: the last
    // take() after it sees every record.
    for (bool last = false; !last;) {
      last = done.load(std::memory_order_acquire);
      for (const OpRecord& r : sink()->take()) seen.push_back(label(r));
    }
  });
  for (uint64_t i = 0; i < kMarks; ++i)
    if (mark(i) == 0) kept.push_back(i);
  done.store(true, std::memory_order_release);  // pairs with the consumer's acquire load
  consumer.join();
  EXPECT_EQ(seen.size(), kept.size());
  EXPECT_TRUE(seen == kept) << "every kept record once, in order";
  EXPECT_EQ(ni::stats().dropped_ring_full, kMarks - kept.size());
  EXPECT_GT(kept.size(), 0u);
}

namespace {
// A Broadcast (or another collective) call as NCCL 2.29+ shows it: a CollApi
// event, started and stopped around the call; `coll` also gives it its Coll
// (NCCL_ALLGATHERV_ENABLE=0) and returns that Coll's handle.
struct ApiCall {
  static void* call(const ProfilerV6& t, void* ctx, const char* func, size_t count, int root, bool coll = false) {
    EventDescrV6 a{};
    a.type = kCollApi;
    a.collApi.func = func;
    a.collApi.count = count;
    a.collApi.datatype = "ncclFloat16";
    a.collApi.root = root;
    void* api = nullptr;
    t.startEvent(ctx, &api, &a);
    t.stopEvent(api);
    if (!coll) return nullptr;
    EventDescrV6 d{};
    d.type = kColl;
    d.parentObj = api;
    d.coll.func = func;
    d.coll.count = count * 2;
    d.coll.datatype = "ncclInt8";
    d.coll.root = root;
    d.coll.nChannels = 1;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void* h = nullptr;
    t.startEvent(ctx, &h, &d);
    t.stopEvent(h);
    return h;
  }
};
}  // namespace

// ABI v6: a Broadcast's CollApi is the op (no Coll will come); other
// collectives' CollApi events stay markers.
TEST_F(Tracker, BroadcastOnAbiV6IsRecordedFromItsCollApi) {
  int mask = 0;
  void* ctx = nullptr;
  ncclProfiler_v6.init(&ctx, kHash, &mask, "tp", 1, 4, 2, nullptr);
  ApiCall::call(ncclProfiler_v6, ctx, "Broadcast", 1000, 3);
  ApiCall::call(ncclProfiler_v6, ctx, "AllReduce", 1000, 0);
  ApiCall::call(ncclProfiler_v6, ctx, "Broadcast", 500, 1);
  ncclProfiler_v6.finalize(ctx);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 2u) << "one record per Broadcast call; the AllReduce waits for its Coll";
  for (size_t i = 0; i < 2; ++i) {
    const OpRecord& r = recs[i];
    EXPECT_EQ(r.func, static_cast<uint8_t>(ni::Func::kBroadcast));
    EXPECT_NE(r.flags & ni::kFlagApiOnly, 0);
    EXPECT_EQ(r.seq, i);
    EXPECT_EQ(r.rank, 2);
    EXPECT_EQ(r.dtype, static_cast<uint8_t>(ni::DType::kFloat16));
    EXPECT_EQ(r.timing, static_cast<uint8_t>(ni::TimingSource::kEnqueueCpu));
    EXPECT_EQ(r.channel_mask, 0u);
  }
  EXPECT_EQ(recs[0].count, 1000u);
  EXPECT_EQ(recs[0].bytes, 2000u);
  EXPECT_EQ(recs[0].peer, 3);
  EXPECT_EQ(recs[1].bytes, 1000u);
  EXPECT_EQ(recs[1].peer, 1);

  // Under graph capture NCCL makes the CollApi event once, at capture, and nothing on replays: no record.
  ncclProfiler_v6.init(&ctx, kHash, &mask, "tp", 1, 4, 2, nullptr);
  EventDescrV6 a{};
  a.type = kCollApi;
  a.collApi.func = "Broadcast";
  a.collApi.count = 1000;
  a.collApi.datatype = "ncclFloat16";
  a.collApi.graphCaptured = 1;
  void* api = nullptr;
  ncclProfiler_v6.startEvent(ctx, &api, &a);
  ncclProfiler_v6.stopEvent(api);
  ncclProfiler_v6.finalize(ctx);
  EXPECT_TRUE(sink()->take().empty());
}

// When NCCL gives Broadcast its Coll after all (NCCL_ALLGATHERV_ENABLE=0), it
// is recorded once, from the Coll; on ABI v5 (2.28) always so.
TEST_F(Tracker, BroadcastWithItsCollIsRecordedOnceFromIt) {
  int mask = 0;
  void* ctx = nullptr;
  setenv("NCCL_ALLGATHERV_ENABLE", "0", 1);
  ncclProfiler_v6.init(&ctx, kHash, &mask, "tp", 1, 4, 0, nullptr);
  unsetenv("NCCL_ALLGATHERV_ENABLE");
  for (int i = 0; i < 3; ++i) ApiCall::call(ncclProfiler_v6, ctx, "Broadcast", 1000, 0, true);
  ncclProfiler_v6.finalize(ctx);
  auto recs = sink()->take();
  EXPECT_EQ(recs.size(), 3u) << "the environment says: no API-level records";
  for (const auto& r : recs) EXPECT_EQ(r.flags & ni::kFlagApiOnly, 0);

  // The variable was not 0 when the plugin started, yet a Broadcast Coll comes: the first Broadcast has
  // both records, the next ones their Coll only.
  ncclProfiler_v6.init(&ctx, kHash, &mask, "tp", 1, 4, 0, nullptr);
  for (int i = 0; i < 3; ++i) ApiCall::call(ncclProfiler_v6, ctx, "Broadcast", 1000, 0, true);
  ncclProfiler_v6.finalize(ctx);
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(std::count_if(recs.begin(), recs.end(), [](const OpRecord& r) { return r.flags & ni::kFlagApiOnly; }), 1);

  // ABI v5 (2.28): every call has its Coll; CollApi events are markers.
  CommV5 c;
  EventDescrV5 a{};
  a.type = kCollApi;
  a.collApi.func = "Broadcast";
  a.collApi.count = 1000;
  a.collApi.datatype = "ncclFloat16";
  c.stop(c.start(a));
  c.finalize();
  EXPECT_TRUE(sink()->take().empty());
}

// NCCL 2.31.2's symmetric plans of several tasks: the head says the plan's
// channels and alone gets KernelCh, which time the whole plan; the later tasks
// (same kernel and function, started back to back on the launching thread)
// say nChannels 0. The head's record counts them (sym_tasks) and the later
// ones complete at their stop, CPU-timed; another collective ends the plan.
TEST_F(Tracker, SymmetricPlanTasksAreCountedOnTheirHead) {
  void* ctx = nullptr;
  int mask = 0;
  ncclProfiler_v7.init(&ctx, kHash, &mask, "tp", 1, 4, 0, nullptr);
  ASSERT_NE(ctx, nullptr);
  auto coll = [&](uint64_t seq, const char* variant, uint8_t nch) {
    EventDescrV7 c{};
    c.type = kColl;
    c.coll.seqNumber = seq;
    c.coll.func = "AllReduce";
    c.coll.count = 1 << 20;
    c.coll.datatype = "ncclFloat32";
    c.coll.nChannels = nch;
    c.coll.isSymColl = variant != nullptr;
    c.coll.kernelVariant = variant;
    c.coll.algo = variant != nullptr ? std::strchr(variant, '_') + 1 : "RING";
    c.coll.proto = variant != nullptr ? "" : "SIMPLE";
    void* h = reinterpret_cast<void*>(0xdead);
    ncclProfiler_v7.startEvent(ctx, &h, &c);
    return h;
  };
  auto kernel = [&](void* op, uint8_t ch, uint64_t t0, uint64_t t1) {
    EventDescrV7 k{};
    k.type = kKernelCh;
    k.parentObj = op;
    k.kernelCh.channelId = ch;
    k.kernelCh.pTimer = t0;
    void* kh = reinterpret_cast<void*>(0xdead);
    ncclProfiler_v7.startEvent(ctx, &kh, &k);
    StateArgsV7 a{};
    a.kernelCh.pTimer = t1;
    ncclProfiler_v7.recordEventState(kh, kKernelChStop, &a);
    ncclProfiler_v7.stopEvent(kh);
  };
  // Plan 1: a head and two later tasks; then a plain collective; then a lone head.
  void* head = coll(0, "AllReduce_AGxLL_R", 2);
  void* t1 = coll(1, "AllReduce_AGxLL_R", 0);
  void* t2 = coll(2, "AllReduce_AGxLL_R", 0);
  for (void* h : {head, t1, t2}) ncclProfiler_v7.stopEvent(h);
  void* plain = coll(3, nullptr, 2);
  void* stray = coll(4, "AllReduce_AGxLL_R", 0);  // after a plain collective: no head to count on
  ncclProfiler_v7.stopEvent(plain);
  ncclProfiler_v7.stopEvent(stray);
  void* lone = coll(5, "AllReduce_AGxLL_R", 2);
  ncclProfiler_v7.stopEvent(lone);
  for (uint8_t ch = 0; ch < 2; ++ch) {
    kernel(head, ch, 1000, 4000);
    kernel(plain, ch, 5000, 6000);
    kernel(lone, ch, 7000, 8000);
  }
  ncclProfiler_v7.finalize(ctx);
  std::map<uint64_t, OpRecord> by_seq;
  for (const OpRecord& r : sink()->take()) by_seq[r.seq] = r;
  ASSERT_EQ(by_seq.size(), 6u);
  EXPECT_EQ(by_seq[0].sym_tasks, 2) << "the head ran two later tasks";
  EXPECT_EQ(by_seq[0].timing, static_cast<uint8_t>(ni::TimingSource::kGpu));
  for (uint64_t seq : {1, 2, 4}) {
    EXPECT_EQ(by_seq[seq].sym_tasks, 0) << seq;
    EXPECT_NE(by_seq[seq].flags & ni::kFlagSymKernel, 0) << seq;
    EXPECT_NE(by_seq[seq].timing, static_cast<uint8_t>(ni::TimingSource::kGpu)) << seq << ": no kernel time of its own";
  }
  EXPECT_EQ(by_seq[3].sym_tasks, 0);
  EXPECT_EQ(by_seq[5].sym_tasks, 0) << "a head alone";
}

// ABI v7 kernel phases (NCCL_INSPECTOR_ENABLE_PHASES=1): asked for only when
// enabled; per phase the shortest, median (even count: the mean of the middle
// two) and longest channel time; a phase whose end is before its start is left
// out; channels from 32 on are left out and said to be; a phase on no live
// KernelCh is counted as a fault, never followed.
TEST_F(Tracker, KernelPhasesAreSummarisedOverChannels) {
  auto init = [](void** ctx, int* mask) {
    ncclProfiler_v7.init(ctx, kHash, mask, "tp", 1, 4, 0, nullptr);
  };
  {
    void* ctx = nullptr;
    int mask = 0;
    unsetenv("NCCL_INSPECTOR_ENABLE_PHASES");
    init(&ctx, &mask);
    EXPECT_EQ(mask & kKernelPhase, 0) << "not asked for by default";
    ncclProfiler_v7.finalize(ctx);
  }
  setenv("NCCL_INSPECTOR_ENABLE_PHASES", "1", 1);
  void* ctx = nullptr;
  int mask = 0;
  init(&ctx, &mask);
  unsetenv("NCCL_INSPECTOR_ENABLE_PHASES");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(mask & (kKernelPhase | kKernelCh), kKernelPhase | kKernelCh);
  auto start = [&](EventDescrV7& d) {
    void* h = reinterpret_cast<void*>(0xdead);
    ncclProfiler_v7.startEvent(ctx, &h, &d);
    return h;
  };
  EventDescrV7 c{};
  c.type = kColl;
  c.coll.seqNumber = 7;
  c.coll.func = "AllReduce";
  c.coll.count = 1 << 20;
  c.coll.datatype = "ncclFloat32";
  c.coll.nChannels = 5;
  c.coll.algo = "RING";
  c.coll.proto = "SIMPLE";
  void* op = start(c);
  ncclProfiler_v7.stopEvent(op);
  const uint8_t chans[] = {0, 1, 2, 3, 40};
  const uint64_t t0 = 5'000'000'000ull;  // past 2^32: the phase arithmetic keeps the low bits only
  for (int i = 0; i < 5; ++i) {
    EventDescrV7 k{};
    k.type = kKernelCh;
    k.parentObj = op;
    k.kernelCh.channelId = chans[i];
    k.kernelCh.pTimer = t0;
    void* kh = start(k);
    ASSERT_NE(kh, nullptr);
    // initial_sync 100, 200, 300, 400 (and 500 on channel 40); compute 1000; final_sync 50,
    // except channel 0's, whose end comes before its start.
    const uint64_t sync = 100u * (i + 1), edges[4] = {t0, t0 + sync, t0 + sync + 1000, t0 + sync + 1050};
    for (uint8_t p = 0; p < 3; ++p) {
      EventDescrV7 ph{};
      ph.type = kKernelPhase;
      ph.parentObj = kh;
      ph.kernelPhase.channelId = chans[i];
      ph.kernelPhase.phaseId = p;
      ph.kernelPhase.pTimer = edges[p];
      void* h = start(ph);
      ASSERT_NE(h, nullptr);
      StateArgsV7 a{};
      a.kernelCh.pTimer = i == 0 && p == 2 ? edges[p] - 10 : edges[p + 1];
      ncclProfiler_v7.recordEventState(h, kKernelPhaseStop, &a);
      ncclProfiler_v7.stopEvent(h);
    }
    StateArgsV7 a{};
    a.kernelCh.pTimer = t0 + sync + 1050;
    ncclProfiler_v7.recordEventState(kh, kKernelChStop, &a);
    ncclProfiler_v7.stopEvent(kh);
  }
  // A phase whose parent is no KernelCh (NULL, the op itself): no handle.
  EventDescrV7 bad{};
  bad.type = kKernelPhase;
  EXPECT_EQ(start(bad), nullptr);
  bad.parentObj = op;
  EXPECT_EQ(start(bad), nullptr);
  ncclProfiler_v7.finalize(ctx);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  ASSERT_NE(r.flags & ni::kFlagPhases, 0);
  EXPECT_EQ(r.phases.channels[0], 4);
  EXPECT_EQ(r.phases.min_ns[0], 100u);
  EXPECT_EQ(r.phases.med_ns[0], 250u);
  EXPECT_EQ(r.phases.max_ns[0], 400u);
  EXPECT_EQ(r.phases.channels[1], 4);
  EXPECT_EQ(r.phases.min_ns[1], 1000u);
  EXPECT_EQ(r.phases.med_ns[1], 1000u);
  EXPECT_EQ(r.phases.max_ns[1], 1000u);
  EXPECT_EQ(r.phases.channels[2], 3) << "channel 0's backwards final_sync is left out";
  EXPECT_EQ(r.phases.med_ns[2], 50u);
  EXPECT_EQ(r.phases.truncated, 1) << "channel 40's phases are left out, and said to be";
  // The next op in the same slot starts with no phases.
  init(&ctx, &mask);
  void* op2 = start(c);
  ncclProfiler_v7.stopEvent(op2);
  EventDescrV7 k{};
  k.type = kKernelCh;
  k.parentObj = op2;
  k.kernelCh.pTimer = t0;
  for (uint8_t ch = 0; ch < 5; ++ch) {
    k.kernelCh.channelId = ch;
    void* kh = start(k);
    StateArgsV7 a{};
    a.kernelCh.pTimer = t0 + 900;
    ncclProfiler_v7.recordEventState(kh, kKernelChStop, &a);
    ncclProfiler_v7.stopEvent(kh);
  }
  ncclProfiler_v7.finalize(ctx);
  recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].flags & ni::kFlagPhases, 0);
}
