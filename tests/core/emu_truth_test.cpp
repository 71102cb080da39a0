// The capture core against nccl-emu's ground truth, for every NCCL release
// the emulator supports: the emulator drives the real adapters (linked
// in-process), the in-memory sink collects the records, and each record is
// matched to the op the emulator issued.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "src/output/memory_sink.h"
#include "src/core/names.h"
#include "src/emu/emu.h"

extern "C" {
extern ni::abi::ProfilerV1 ncclProfiler_v1;
extern ni::abi::ProfilerV2 ncclProfiler_v2;
extern ni::abi::ProfilerV3 ncclProfiler_v3;
extern ni::abi::ProfilerV4 ncclProfiler_v4;
extern ni::abi::ProfilerV5 ncclProfiler_v5;
extern ni::abi::ProfilerV6 ncclProfiler_v6;
extern ni::abi::ProfilerV7 ncclProfiler_v7;
}

namespace {

using Key = std::tuple<uint64_t, int, std::string, int, uint64_t>;  // hash, rank, func, peer, seq

ni::emu::PluginTables our_tables() {
  ni::emu::PluginTables t;
  t.v1 = &ncclProfiler_v1;
  t.v2 = &ncclProfiler_v2;
  t.v3 = &ncclProfiler_v3;
  t.v4 = &ncclProfiler_v4;
  t.v5 = &ncclProfiler_v5;
  t.v6 = &ncclProfiler_v6;
  t.v7 = &ncclProfiler_v7;
  return t;
}

void quiet_logger(ni::abi::LogLevel, unsigned long, const char*, int, const char*, ...) {}

struct EmuRun {
  ni::emu::RunResult result;
  std::vector<ni::OpRecord> records;
  ni::CoreStats stats;
};

EmuRun run_emu(const std::string& version, std::vector<ni::emu::Fault> faults = {},
            ni::emu::Workload w = ni::emu::default_workload(12)) {
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "0", 1);
  setenv("NCCL_INSPECTOR_RING_RECORDS", "8192", 1);
  ni::emu::Options o;
  o.nccl = *ni::emu::NcclVersion::parse(version);
  o.tables = our_tables();
  o.workload = std::move(w);
  o.pace = ni::emu::Pace::kNone;
  o.faults = std::move(faults);
  o.logger = quiet_logger;
  EmuRun r;
  r.result = ni::emu::run(o);
  // The last finalize stopped the sink, which collected every record.
  if (ni::out::MemorySink::current_) {
    r.records = ni::out::MemorySink::current_->take();
    r.stats = ni::out::MemorySink::current_->final_stats();
  }
  unsetenv("NCCL_INSPECTOR_RING_RECORDS");
  return r;
}

// Adds an op with an unknown datatype (ncclUint8, which NCCL names "Unknown").
ni::emu::Workload workload_with_uint8() {
  ni::emu::Workload w = ni::emu::default_workload(12);
  ni::emu::StepSpec st;
  ni::emu::OpSpec op;
  op.comm = w.comms[0].name;
  op.func = "AllReduce";
  op.dtype = "ncclUint8";
  op.count = 1 << 20;
  st.ops.push_back(op);
  w.program.push_back(st);
  return w;
}

class EmuTruth : public ::testing::TestWithParam<const char*> {};

TEST_P(EmuTruth, EveryVisibleOpIsCapturedOnceWithTheEmulatedTimes) {
  const std::string version = GetParam();
  EmuRun r = run_emu(version, {}, workload_with_uint8());
  ASSERT_TRUE(r.result.ok) << r.result.error;
  const int abi = r.result.bound_abi;
  const auto v = *ni::emu::NcclVersion::parse(version);
  EXPECT_EQ(abi, v.native_abi());

  std::map<Key, const ni::emu::TruthOp*> truth;
  size_t visible = 0;
  for (const auto& t : r.result.truth) {
    if (!t.visible) continue;
    ++visible;
    int peer = t.kind == "p2p" ? t.peer : -1;
    Key k{t.comm_hash, t.rank, t.func, peer, static_cast<uint64_t>(t.seq)};
    ASSERT_EQ(truth.count(k), 0u) << "ambiguous truth key for " << t.func << " seq " << t.seq;
    truth[k] = &t;
  }
  ASSERT_GT(visible, 50u);
  const uint64_t dropped = r.stats.dropped_ring_full + r.stats.dropped_pool_exhausted;
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(r.records.size() + dropped, visible) << version;
  EXPECT_EQ(r.stats.reclaimed, 0u);

  size_t matched = 0, unknown_dtype = 0;
  for (const auto& rec : r.records) {
    const std::string func(ni::func_name(static_cast<ni::Func>(rec.func)));
    const bool p2p = rec.kind == static_cast<uint8_t>(ni::OpKind::kP2p);
    Key k{rec.comm_hash, static_cast<int>(rec.rank), func, p2p ? static_cast<int>(rec.peer) : -1, rec.seq};
    auto it = truth.find(k);
    ASSERT_NE(it, truth.end()) << version << ": record without truth: " << func << " rank " << rec.rank << " seq "
                               << rec.seq << " hash " << std::hex << rec.comm_hash;
    const ni::emu::TruthOp& t = *it->second;
    ++matched;
    EXPECT_EQ(rec.abi_version, abi);
    if (t.dtype == "Unknown" && abi == 1) {
      // ABI v1 carries numeric codes, so ncclUint8 is known there.
      ++unknown_dtype;
      EXPECT_EQ(rec.dtype, static_cast<uint8_t>(ni::DType::kUint8));
      EXPECT_EQ(rec.bytes, rec.count);
    } else if (t.dtype == "Unknown") {
      ++unknown_dtype;
      EXPECT_EQ(rec.bytes, 0u) << "unknown datatype must not produce a size";
      EXPECT_EQ(rec.dtype, static_cast<uint8_t>(ni::DType::kUnknown));
    } else {
      EXPECT_EQ(rec.bytes, t.bytes) << func;
    }
    EXPECT_EQ(rec.count, t.count);
    if (!p2p) {
      EXPECT_EQ(std::string(ni::algo_name(static_cast<ni::Algo>(rec.algo))), t.algo);
    }
    uint64_t mask = 0;
    for (int ch : t.channels) mask |= 1ull << ch;
    if (abi >= 3) {
      EXPECT_EQ(rec.channel_mask, mask) << func << " seq " << rec.seq;
      EXPECT_EQ(rec.flags & ni::kFlagPartialChannels, 0);
    } else {
      EXPECT_EQ(rec.channel_mask, 0u);
      EXPECT_EQ(rec.timing, static_cast<uint8_t>(ni::TimingSource::kEnqueueCpu));
    }
    if (abi >= 4) {
      ASSERT_EQ(rec.timing, static_cast<uint8_t>(ni::TimingSource::kGpu));
      const uint64_t t0 = *std::min_element(t.ch_start_ptimer.begin(), t.ch_start_ptimer.end());
      const uint64_t t1 = *std::max_element(t.ch_stop_ptimer.begin(), t.ch_stop_ptimer.end());
      EXPECT_EQ(rec.start_ns, t0);
      EXPECT_EQ(rec.end_ns, t1);
      uint64_t maxd = 0;
      for (size_t i = 0; i < t.ch_start_ptimer.size(); ++i)
        maxd = std::max(maxd, t.ch_stop_ptimer[i] - t.ch_start_ptimer[i]);
      EXPECT_EQ(rec.max_channel_ns, maxd);
      // Network events are off here: only a single-node comm is known to be intra-node.
      EXPECT_EQ(rec.transport, static_cast<uint8_t>(t.nnodes == 1 ? ni::Transport::kIntraNode
                                                                   : ni::Transport::kUnknown))
          << t.comm << " nnodes " << t.nnodes;
    } else if (abi == 3) {
      EXPECT_EQ(rec.timing, static_cast<uint8_t>(ni::TimingSource::kProxyCpu));
    }
  }
  EXPECT_EQ(matched, visible);
  EXPECT_EQ(unknown_dtype, static_cast<size_t>(std::count_if(r.result.truth.begin(), r.result.truth.end(),
                                                           [](const ni::emu::TruthOp& t) {
                                                             return t.visible && t.dtype == "Unknown";
                                                           })));
  EXPECT_GT(unknown_dtype, 0u);
}

INSTANTIATE_TEST_SUITE_P(Releases, EmuTruth,
                         ::testing::Values("2.23", "2.24", "2.25", "2.26", "2.27", "2.28", "2.29", "2.30", "2.31", "2.32"),
                         [](const auto& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '.', '_');
                           return "nccl_" + s;
                         });

// Every fault of the ABI notes §12 runs to completion on each recent release,
// and the ones the plugin can see are counted.
class EmuFaults : public ::testing::TestWithParam<std::tuple<const char*, ni::emu::Fault>> {};

TEST_P(EmuFaults, RunsWithoutCrashAndCounts) {
  const auto [version, fault] = GetParam();
  // Network events on (and a NET_PROFILER build's IB events) so that the
  // network faults reach the plugin.
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  ni::emu::Workload w = ni::emu::default_workload(12);
  w.net_profiler = ni::emu::NetProfiler::kIb;
  EmuRun r = run_emu(version, {fault}, w);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
  ASSERT_TRUE(r.result.ok) << r.result.error;
  const ni::CoreStats& s = r.stats;
  const bool v4plus = r.result.bound_abi >= 4;
  size_t graph = 0, desync = 0;
  for (const auto& rec : r.records) {
    graph += (rec.flags & ni::kFlagGraphCaptured) != 0;
    desync += (rec.flags & ni::kFlagKernelDesync) != 0;
  }
  switch (fault) {
    case ni::emu::Fault::kKernelChDoubleStop: EXPECT_GE(s.fault_double_stop, 1u); break;
    case ni::emu::Fault::kKernelChNeverStopped: EXPECT_GE(s.reclaimed, 1u); break;
    case ni::emu::Fault::kNetPluginStopNull: EXPECT_GE(s.fault_null_handle, 1u); break;
    case ni::emu::Fault::kPxn: EXPECT_GE(s.fault_foreign_pid, 1u); break;
    case ni::emu::Fault::kProxyOpNeverStopped: EXPECT_GE(s.reclaimed, 1u); break;
    case ni::emu::Fault::kGraphReplay:
      if (v4plus) {
        EXPECT_GE(graph, 1u);
      }
      break;
    case ni::emu::Fault::kKernelStampsBackwards: {
      // The op whose stamps end before they start, and every later op of its
      // comm, are CPU-timed and flagged: no GPU time from them.
      size_t shifted = 0;
      for (const auto& t : r.result.truth) shifted += t.kernel_stamps_shifted;
      EXPECT_EQ(shifted > 0, v4plus);
      EXPECT_GE(desync, shifted);
      size_t gpu_flagged = 0;
      for (const auto& rec : r.records)
        gpu_flagged += (rec.flags & ni::kFlagKernelDesync) && rec.timing == static_cast<uint8_t>(ni::TimingSource::kGpu);
      EXPECT_EQ(gpu_flagged, 0u);
      break;
    }
    default: break;
  }
  if (fault != ni::emu::Fault::kReload) {
    size_t visible = static_cast<size_t>(std::count_if(r.result.truth.begin(), r.result.truth.end(),
                                                       [](const ni::emu::TruthOp& t) { return t.visible; }));
    // Nothing lost silently: every visible op is a record or a counted drop.
    EXPECT_EQ(r.records.size() + s.dropped_ring_full + s.dropped_pool_exhausted, visible)
        << ni::emu::fault_name(fault);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, EmuFaults,
    ::testing::Combine(::testing::Values("2.26", "2.28", "2.30"),
                       ::testing::Values(ni::emu::Fault::kRecvStepTwice, ni::emu::Fault::kNetPluginDoubleStop,
                                         ni::emu::Fault::kNetPluginStopNull, ni::emu::Fault::kProxyOpNeverStopped,
                                         ni::emu::Fault::kParentStoppedFirst, ni::emu::Fault::kPxn,
                                         ni::emu::Fault::kMaskChange, ni::emu::Fault::kConcurrentInit,
                                         ni::emu::Fault::kReload, ni::emu::Fault::kGraphReplay,
                                         ni::emu::Fault::kKernelChNeverStopped,
                                         ni::emu::Fault::kKernelChDoubleStop,
                                         ni::emu::Fault::kKernelStampsBackwards)),
    [](const auto& p) {
      std::string s = std::get<0>(p.param);
      std::replace(s.begin(), s.end(), '.', '_');
      std::string f = ni::emu::fault_name(std::get<1>(p.param));
      std::replace(f.begin(), f.end(), '-', '_');
      return "nccl_" + s + "_" + f;
    });

// Network events on: bytes and steps per op against the emulated traffic.
TEST(EmuNet, NetworkOpsCarryBytesStepsAndHcas) {
  setenv("NCCL_INSPECTOR_ENABLE_NET", "1", 1);
  ni::emu::Workload w = ni::emu::default_workload(12);
  w.net_profiler = ni::emu::NetProfiler::kIb;
  EmuRun r = run_emu("2.30", {}, w);
  unsetenv("NCCL_INSPECTOR_ENABLE_NET");
  ASSERT_TRUE(r.result.ok);
  size_t net = 0, intra = 0, with_hca = 0;
  for (const auto& rec : r.records) {
    if (rec.transport == static_cast<uint8_t>(ni::Transport::kNetwork)) {
      ++net;
      EXPECT_GT(rec.net_steps, 0u);
      EXPECT_GT(rec.net_send_bytes + rec.net_recv_bytes, 0u);
      if (rec.n_hcas > 0) ++with_hca;
    } else if (rec.transport == static_cast<uint8_t>(ni::Transport::kIntraNode)) {
      ++intra;
      EXPECT_EQ(rec.net_ops, 0u);
    }
  }
  EXPECT_GT(net, 0u);
  EXPECT_GT(intra, 0u);
  EXPECT_EQ(with_hca, net);
  EXPECT_EQ(r.stats.reclaimed, 0u);
}

// Broadcast on NCCL 2.29+ (ABI v6) runs as AllGatherV: a CollApi event and no
// Coll (profiler-abi §8.8). Each such call is one api_only record, made from
// its CollApi (the user's count and datatype, the root, the API call's CPU
// time, the plugin's own seq); with NCCL_ALLGATHERV_ENABLE=0 NCCL keeps
// Broadcast a kernel collective, recorded from its Coll as before; on 2.28 it
// always has its Coll.
class EmuBroadcast : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(EmuBroadcast, EachCallIsRecordedOnceFromWhatNcclShows) {
  const auto [version, allgatherv] = GetParam();
  struct Env {  // NCCL_ALLGATHERV_ENABLE=0 for this test only, whatever happens
    explicit Env(bool on) {
      if (on) setenv("NCCL_ALLGATHERV_ENABLE", "0", 1);
    }
    ~Env() { unsetenv("NCCL_ALLGATHERV_ENABLE"); }
  } env(!allgatherv);
  ni::emu::Workload w = ni::emu::default_workload(4);
  for (int root : {1, 2, 3}) {
    ni::emu::StepSpec st;
    ni::emu::OpSpec op;
    op.comm = w.comms[0].name;
    op.func = "Broadcast";
    op.dtype = "ncclBfloat16";
    op.count = 3000 + root;
    op.root = root;
    st.ops.push_back(op);
    w.program.push_back(st);
  }
  EmuRun r = run_emu(version, {}, w);
  ASSERT_TRUE(r.result.ok) << r.result.error;
  const bool api_level = std::string(version) >= "2.29" && allgatherv;

  // The Broadcasts of each (comm, rank) in issue order, and the records of them.
  std::map<std::pair<uint64_t, int>, std::vector<const ni::emu::TruthOp*>> issued;
  for (const auto& t : r.result.truth)
    if (t.api_func == "Broadcast") issued[{t.comm_hash, t.rank}].push_back(&t);
  std::map<std::pair<uint64_t, int>, std::vector<const ni::OpRecord*>> api_recs, coll_recs;
  for (const auto& rec : r.records) {
    if (rec.func != static_cast<uint8_t>(ni::Func::kBroadcast)) continue;
    (rec.flags & ni::kFlagApiOnly ? api_recs : coll_recs)[{rec.comm_hash, rec.rank}].push_back(&rec);
  }
  ASSERT_FALSE(issued.empty());
  size_t n = 0;
  for (auto& [key, ts] : issued) {
    for (const auto* t : ts) EXPECT_EQ(t->visible, !api_level) << t->why;
    if (!api_level) {
      EXPECT_TRUE(api_recs[key].empty());
      EXPECT_EQ(coll_recs[key].size(), ts.size());
      continue;
    }
    EXPECT_TRUE(coll_recs[key].empty());
    auto& recs = api_recs[key];
    std::sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->seq < b->seq; });
    ASSERT_EQ(recs.size(), ts.size());
    for (size_t i = 0; i < ts.size(); ++i, ++n) {
      const ni::OpRecord& rec = *recs[i];
      EXPECT_EQ(rec.seq, i) << "the plugin's own count of API-only Broadcasts on the comm";
      EXPECT_EQ(rec.kind, static_cast<uint8_t>(ni::OpKind::kColl));
      EXPECT_EQ(rec.bytes, ts[i]->bytes);
      EXPECT_EQ(rec.dtype, static_cast<uint8_t>(ni::DType::kBfloat16)) << "the user's datatype, not ncclInt8";
      EXPECT_EQ(rec.count * 2, ts[i]->bytes) << "the user's count";
      EXPECT_EQ(rec.peer, ts[i]->root);
      EXPECT_EQ(rec.timing, static_cast<uint8_t>(ni::TimingSource::kEnqueueCpu));
      EXPECT_EQ(rec.channel_mask, 0u);
      EXPECT_GE(rec.end_ns, rec.start_ns);
    }
  }
  if (api_level) {
    EXPECT_GE(n, 3u * 4u);  // the three program Broadcasts on each of the 4 ranks of a TP comm, at least
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, EmuBroadcast,
                         ::testing::Combine(::testing::Values("2.28", "2.29", "2.30"), ::testing::Bool()),
                         [](const auto& p) {
                           std::string v = std::get<0>(p.param);
                           std::replace(v.begin(), v.end(), '.', '_');
                           return "nccl_" + v + (std::get<1>(p.param) ? "" : "_allgatherv_off");
                         });

}  // namespace
