// Copy-engine collectives (ABI v6) timed on the GPU with CUDA events on their
// stream (src/core/gpu_timer.h), through the driver already in the process:
// here a fake libcuda.so.1 whose "GPU" runs when the test says so. Loaded
// before the first comm, as NCCL's driver is.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <cstdlib>
#include <thread>
#include <vector>

#include "plugin/abi/all.h"
#include "src/core/consumer.h"
#include "src/output/encoder.h"
#include "src/output/memory_sink.h"

extern "C" {
extern ni::abi::ProfilerV6 ncclProfiler_v6;
}

namespace {

using namespace ni::abi;
using ni::OpRecord;
using ni::TimingSource;

struct Fake {
  void* lib = nullptr;
  void (*set_current)(int, const char*) = nullptr;
  void (*fail_record)(int) = nullptr;
  int (*run_one)(double) = nullptr;
  long (*live)() = nullptr;
  long (*created)() = nullptr;
  Fake() {
    lib = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_GLOBAL);
    if (lib == nullptr) return;
    set_current = reinterpret_cast<void (*)(int, const char*)>(dlsym(lib, "fake_cuda_set_current"));
    fail_record = reinterpret_cast<void (*)(int)>(dlsym(lib, "fake_cuda_fail_record"));
    run_one = reinterpret_cast<int (*)(double)>(dlsym(lib, "fake_cuda_run_one"));
    live = reinterpret_cast<long (*)()>(dlsym(lib, "fake_cuda_events_live"));
    created = reinterpret_cast<long (*)()>(dlsym(lib, "fake_cuda_events_created"));
  }
};

Fake& fake() {
  static Fake f;
  return f;
}

void* const kStream = reinterpret_cast<void*>(0x5);

// One comm through ABI v6 (NCCL 2.29+).
struct CommV6 {
  int mask = 0;
  void* ctx = nullptr;
  CommV6() { ncclProfiler_v6.init(&ctx, 0xce0ce0, &mask, "tp", 1, 8, 0, nullptr); }
  ~CommV6() { finalize(); }
  void finalize() {
    if (ctx != nullptr) ncclProfiler_v6.finalize(ctx);
    ctx = nullptr;
  }
  void* start(EventDescrV6& d) {
    void* h = nullptr;
    ncclProfiler_v6.startEvent(ctx, &h, &d);
    return h;
  }
  // An AllGather on the copy engine, as NCCL 2.29 issues it (§9): CollApi,
  // CeColl, CeSync, CeBatch, CeSync, then the stops.
  void ce_allgather(uint64_t seq, void* stream = kStream) {
    EventDescrV6 api{};
    api.type = kCollApi;
    api.collApi.func = "AllGather";
    void* a = start(api);
    EventDescrV6 d{};
    d.type = kCeColl;
    d.parentObj = a;
    d.ceColl.seqNumber = seq;
    d.ceColl.func = "AllGather";
    d.ceColl.count = 1 << 20;
    d.ceColl.datatype = "ncclInt8";
    d.ceColl.syncStrategy = "MC";
    d.ceColl.stream = stream;
    void* ce = start(d);
    EventDescrV6 b{};
    b.type = kCeBatch;
    b.parentObj = ce;
    b.ceCollBatch.numOps = 7;
    b.ceCollBatch.totalBytes = 7u << 20;
    void* batch = start(b);
    ncclProfiler_v6.stopEvent(batch);
    ncclProfiler_v6.stopEvent(ce);
    ncclProfiler_v6.stopEvent(a);
  }
};

class CeTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(fake().lib, nullptr) << dlerror();
    fake().set_current(0, "0000:1b:00.0");
    fake().fail_record(0);
    setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  }
  static ni::out::MemorySink* sink() { return ni::out::MemorySink::current_; }
};

TEST_F(CeTiming, RecordWaitsForItsEventsThenCarriesTheirGpuTime) {
  CommV6 c;
  ASSERT_NE(c.mask & kCeColl, 0);
  c.ce_allgather(3);
  EXPECT_TRUE(sink()->take().empty()) << "the copies have not run yet: the record waits";
  EXPECT_EQ(ni::stats().records_pending, 1u) << "a waiting record is pending, not lost";
  EXPECT_TRUE(sink()->take().empty());
  ASSERT_EQ(fake().run_one(0.25), 1);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 1u);
  const OpRecord& r = recs[0];
  EXPECT_EQ(r.seq, 3u);
  EXPECT_EQ(r.timing, static_cast<uint8_t>(TimingSource::kCudaEvent));
  EXPECT_EQ(r.end_ns - r.start_ns, 250000u) << "the events' elapsed time, 0.25 ms";
  EXPECT_EQ(r.gpu_timer, 0u);
  EXPECT_EQ(ni::stats().records_pending, 0u);
  // A GPU time measures the transfer: the record has a bandwidth.
  const ni::out::OpTiming t = ni::out::op_timing(r, 8);
  EXPECT_TRUE(t.has_algbw);
  EXPECT_NEAR(t.algbw_gbs, (1u << 20) * 8 / 250000.0, 1e-9) << "AllGather: count x nranks bytes received";
}

TEST_F(CeTiming, EveryFailureLeavesTheEnqueueTimeAndSaysSo) {
  CommV6 c;
  // The driver refuses to record: CPU (enqueue) timing, at once.
  fake().fail_record(1);
  c.ce_allgather(1);
  fake().fail_record(0);
  // No current context on the launching thread.
  fake().set_current(-1, "");
  c.ce_allgather(2);
  fake().set_current(0, "0000:1b:00.0");
  // No stream in the descriptor.
  c.ce_allgather(3, nullptr);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 3u);
  for (const OpRecord& r : recs) {
    EXPECT_EQ(r.timing, static_cast<uint8_t>(TimingSource::kEnqueueCpu)) << "seq " << r.seq;
    EXPECT_FALSE(ni::out::op_timing(r, 8).has_algbw) << "an enqueue time is no bandwidth";
  }
}

TEST_F(CeTiming, EventsThatNeverRunGoOutAfterTheTimeoutCpuTimed) {
  setenv("NCCL_INSPECTOR_OP_TIMEOUT_MS", "10", 1);
  {
    CommV6 c;
    c.ce_allgather(1);
    EXPECT_TRUE(sink()->take().empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    auto recs = sink()->take();
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].timing, static_cast<uint8_t>(TimingSource::kEnqueueCpu));
  }
  unsetenv("NCCL_INSPECTOR_OP_TIMEOUT_MS");
  fake().run_one(0.1);  // the stale pair's events, for the next tests
}

TEST_F(CeTiming, TheLastDrainLetsWaitingRecordsOutAndTheEventsAreDestroyed) {
  ni::out::MemorySink* s = nullptr;
  {
    CommV6 c;
    s = sink();
    c.ce_allgather(9);
    EXPECT_GT(fake().live(), 0);
  }  // the last finalize: the sink's final drain, then the events
  auto recs = s->take();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].seq, 9u);
  EXPECT_EQ(recs[0].timing, static_cast<uint8_t>(TimingSource::kEnqueueCpu)) << "never ran: not GPU-timed";
  EXPECT_EQ(s->final_stats().records_pending, 0u);
  EXPECT_EQ(fake().live(), 0) << "every event destroyed with the runtime's last finalize";
}

TEST_F(CeTiming, PairsAreReusedAcrossManyOps) {
  CommV6 c;
  const long before = fake().created();
  constexpr int kOps = 600;  // more than the 255 pairs
  for (int i = 0; i < kOps; ++i) {
    c.ce_allgather(static_cast<uint64_t>(i));
    fake().run_one(0.001 * (i % 7 + 1));
    if (i % 50 == 49) (void)sink()->take();  // the dump thread's cycles
  }
  (void)sink()->take();
  EXPECT_LE(fake().created() - before, 2 * 255);
  EXPECT_EQ(ni::stats().records_pending, 0u);
}

TEST_F(CeTiming, ManyInFlightAtOnceTimedInOrder) {
  CommV6 c;
  for (int i = 0; i < 100; ++i) c.ce_allgather(static_cast<uint64_t>(i));
  EXPECT_TRUE(sink()->take().empty());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(fake().run_one(0.001 * (i + 1)), 1);
  auto recs = sink()->take();
  ASSERT_EQ(recs.size(), 100u);
  for (const OpRecord& r : recs) {
    EXPECT_EQ(r.timing, static_cast<uint8_t>(TimingSource::kCudaEvent));
    EXPECT_NEAR(static_cast<double>(r.end_ns - r.start_ns), 1000.0 * static_cast<double>(r.seq + 1), 1.0)
        << "seq " << r.seq;
  }
}

}  // namespace

namespace {

// A comm through ABI v6 with GPU-stamped kernel channels, on the GPU the fake
// driver says is current at its init.
struct KernelComm {
  int mask = 0;
  void* ctx = nullptr;
  KernelComm(uint64_t hash, int rank) { ncclProfiler_v6.init(&ctx, hash, &mask, "dp", 1, 8, rank, nullptr); }
  ~KernelComm() {
    if (ctx != nullptr) ncclProfiler_v6.finalize(ctx);
  }
  // One AllReduce whose first channel the GPU started at `ptimer`.
  void op(uint64_t ptimer) {
    EventDescrV6 api{};
    api.type = kCollApi;
    api.collApi.func = "AllReduce";
    void* a = nullptr;
    ncclProfiler_v6.startEvent(ctx, &a, &api);
    EventDescrV6 d{};
    d.type = kColl;
    d.parentObj = a;
    d.coll.func = "AllReduce";
    d.coll.count = 1024;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 1;
    d.coll.nWarps = 16;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void* c = nullptr;
    ncclProfiler_v6.startEvent(ctx, &c, &d);
    ncclProfiler_v6.stopEvent(c);
    ncclProfiler_v6.stopEvent(a);
    EventDescrV6 k{};
    k.type = kKernelCh;
    k.parentObj = c;
    k.kernelCh.channelId = 0;
    k.kernelCh.pTimer = ptimer;
    void* h = nullptr;
    ncclProfiler_v6.startEvent(ctx, &h, &k);
    StateArgsV6 s{};
    s.kernelCh.pTimer = ptimer + 10;
    ncclProfiler_v6.recordEventState(h, kKernelChStop, &s);
    ncclProfiler_v6.stopEvent(h);
  }
};

// Where the driver names each comm's GPU, a comm borrows a tighter bound
// (within its uncertainty) only from a comm on the same GPU (tracker_test.cpp
// has the bounds and the process without a driver).
TEST_F(CeTiming, ClockBoundsAreSharedOnlyOnTheSameGpu) {
  const uint64_t kOffset = 1000000000ull;  // GPU clock = CPU monotonic - 1 s
  for (bool same : {true, false}) {
    fake().set_current(0, "0000:1b:00.0");
    KernelComm tight(0x1, 0);
    fake().set_current(same ? 0 : 1, same ? "0000:1b:00.0" : "0000:1c:00.0");
    KernelComm loose(0x2, 0);
    for (int i = 0; i < 400; ++i) {
      const uint64_t now = ni::mono_now_ns();
      tight.op(now - kOffset - 2000);                       // seen ~2 us late
      loose.op(now - kOffset - 500000 - (i % 4) * 1000000);  // seen 0.5..3.5 ms late
    }
    std::map<uint64_t, uint32_t> id;
    for (const auto& ci : ni::comms()) id[ci.comm_hash] = ci.comm_id;
    const ni::ClockEstimate t = ni::clock_estimate(id[0x1]);
    const ni::ClockEstimate l = ni::clock_estimate(id[0x2]);
    ASSERT_TRUE(t.valid && l.valid);
    const int64_t truth = static_cast<int64_t>(kOffset);
    EXPECT_LT(t.offset_ns - truth, 200000);
    if (same) {
      EXPECT_EQ(l.offset_ns, t.offset_ns) << "one GPU: the loose comm borrows the tight bound";
    } else {
      EXPECT_GE(l.offset_ns - truth, 400000) << "another GPU: the loose comm keeps its own bound";
    }
    sink()->take();
  }
}

}  // namespace
