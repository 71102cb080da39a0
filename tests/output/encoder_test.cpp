// The JSON-lines encoder: every record type parsed back with nlohmann::json.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "include/nccl_inspector/schema.h"
#include "src/core/names.h"
#include "src/output/encoder.h"
#include "tests/output/fake_source.h"
#include "tests/output/test_util.h"

namespace ni::out {
namespace {

using nlohmann::json;
using testing::make_comm;

constexpr ClockAnchor kAnchor{1700000000000000000, 5000000000};

OpRecord base_coll() {
  OpRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = static_cast<uint8_t>(OpKind::kColl);
  r.comm_id = 3;
  r.comm_hash = 0xfedcba9876543210ull;
  r.seq = 42;
  r.func = static_cast<uint8_t>(Func::kAllReduce);
  r.dtype = static_cast<uint8_t>(DType::kFloat32);
  r.count = 262144;
  r.bytes = 1048576;
  r.algo = static_cast<uint8_t>(Algo::kRing);
  r.proto = static_cast<uint8_t>(Proto::kSimple);
  r.timing = static_cast<uint8_t>(TimingSource::kProxyCpu);
  r.transport = static_cast<uint8_t>(Transport::kIntraNode);
  r.rank = 2;
  r.peer = -1;
  r.n_channels = 4;
  r.n_warps = 16;
  r.channel_mask = 0b1011'0000;  // real channel ids 4, 5, 7
  r.enqueue_ns = 6000000000;
  r.start_ns = 6000010000;
  r.end_ns = 6000010000 + 123456;  // 123.456 us
  r.max_channel_ns = 120000;
  r.min_channel_ns = 60000;
  r.busy_ns = 300000;
  r.channels[0] = {0, 120000};
  r.channels[1] = {1500, 60000};
  r.channels[2] = {2500, 120000};
  return r;
}

// The same op timed by the GPU timer: the only timing that gets a bandwidth.
OpRecord gpu_coll() {
  OpRecord r = base_coll();
  r.timing = static_cast<uint8_t>(TimingSource::kGpu);
  return r;
}

json encode(const OpRecord& r, const CommInfo* c, const ClockEstimate* clk = nullptr, bool verbose = true) {
  Encoder e(kAnchor, verbose);
  Buf b;
  e.op(b, r, c, clk);
  std::string s(b.view());
  EXPECT_EQ(s.back(), '\n');
  EXPECT_EQ(s.find('\n'), s.size() - 1) << "one line per record";
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.find("inf"), std::string::npos);
  return json::parse(s);
}

TEST(BufTest, MilliFormatting) {
  auto fmt = [](int64_t m) {
    Buf b;
    b.put_milli(m);
    return std::string(b.view());
  };
  EXPECT_EQ(fmt(1234567), "1234.567");
  EXPECT_EQ(fmt(1500), "1.5");
  EXPECT_EQ(fmt(2000), "2");
  EXPECT_EQ(fmt(1050), "1.05");
  EXPECT_EQ(fmt(1), "0.001");
  EXPECT_EQ(fmt(0), "0");
  EXPECT_EQ(fmt(-5), "-0.005");
  EXPECT_EQ(fmt(INT64_MIN), "-9223372036854775.808");
  Buf b;
  EXPECT_FALSE(b.put_fixed3(std::nan("")));
  EXPECT_FALSE(b.put_fixed3(INFINITY));
  EXPECT_TRUE(b.put_fixed3(0.1234));
  EXPECT_EQ(b.view(), "0.123");
}

TEST(BufTest, JsonStringEscapesAndUtf8) {
  Buf b;
  std::string raw = std::string("a\"b\\c\nd\x01") + "\xff" + "\xc3\xa9" + "\xe2\x82";
  b.put_json_string(raw);
  json j = json::parse(std::string(b.view()));
  EXPECT_EQ(j.get<std::string>(), std::string("a\"b\\c\nd\x01") + "?" + "\xc3\xa9" + "??");
}

TEST(EncoderTest, CollFieldsAndUnits) {
  OpRecord r = base_coll();
  CommInfo c = make_comm(3, 8, 2);
  json j = encode(r, &c);
  namespace sc = ni::schema;
  EXPECT_EQ(j[sc::kType], "coll");
  EXPECT_EQ(j[sc::kCommId], 3);
  EXPECT_EQ(j[sc::kCommHash], "0xfedcba9876543210");
  EXPECT_EQ(j[sc::kRank], 2);
  EXPECT_EQ(j[sc::kNranks], 8);
  EXPECT_EQ(j[sc::kSeq], 42);
  EXPECT_EQ(j[sc::kFunc], "AllReduce");
  EXPECT_EQ(j[sc::kDtype], "float32");
  EXPECT_EQ(j[sc::kCount], 262144);
  EXPECT_EQ(j[sc::kBytes], 1048576);
  EXPECT_EQ(j[sc::kAlgo], "RING");
  EXPECT_EQ(j[sc::kProto], "SIMPLE");
  EXPECT_EQ(j[sc::kNchannels], 4);
  EXPECT_EQ(j[sc::kNwarps], 16);
  EXPECT_EQ(j[sc::kChannels], json::array({4, 5, 7}));
  EXPECT_EQ(j[sc::kTiming], "proxy_cpu");
  EXPECT_EQ(j[sc::kTransport], "intra_node");
  EXPECT_FALSE(j.contains(sc::kRoot));
  EXPECT_FALSE(j.contains(sc::kGraph));
  EXPECT_FALSE(j.contains(sc::kReclaimed));
  EXPECT_TRUE(j.contains(sc::kChTimes));  // verbose
  // CPU-timed: the start converts through the anchor.
  EXPECT_EQ(j[sc::kStartWallNs].get<int64_t>(), kAnchor.wall_ns + (6000010000 - 5000000000));
  EXPECT_EQ(j[sc::kEnqueueWallNs].get<int64_t>(), kAnchor.wall_ns + (6000000000 - 5000000000));
  EXPECT_DOUBLE_EQ(j[sc::kDurUs].get<double>(), 123.456);
  EXPECT_DOUBLE_EQ(j[sc::kMaxChUs].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(j[sc::kChBusyUs].get<double>(), 300.0);
  // CPU-timed: no bandwidth (the GPU-timed twin below has it).
  EXPECT_FALSE(j.contains(sc::kAlgbwGbs));
  EXPECT_FALSE(j.contains(sc::kBusbwGbs));
  j = encode(gpu_coll(), &c);
  // algbw = bytes / ns = GB/s; busbw = algbw * 2(n-1)/n; 3 significant digits.
  double algbw = 1048576.0 / 123456.0;
  EXPECT_NEAR(j[sc::kAlgbwGbs].get<double>(), algbw, algbw * 0.005);
  EXPECT_DOUBLE_EQ(j[sc::kAlgbwGbs].get<double>(), 8.49);
  double busbw = algbw * busbw_factor(Func::kAllReduce, OpKind::kColl, 8);
  EXPECT_NEAR(j[sc::kBusbwGbs].get<double>(), busbw, busbw * 0.005);
  EXPECT_NEAR(j[sc::kChUtil].get<double>(), 300000.0 / (123456.0 * 3), 0.006);
  EXPECT_NEAR(j[sc::kChBalance].get<double>(), 0.5, 0.006);
}

TEST(EncoderTest, DefaultLineHasBothBandwidthsAndLeavesPerChannelDetailToVerbose) {
  OpRecord r = gpu_coll();
  CommInfo c = make_comm(3, 8, 2);
  ClockEstimate est{3, true, 0, 800, 16};
  json j = encode(r, &c, &est, false);
  EXPECT_TRUE(j.contains("dur_us"));
  EXPECT_TRUE(j.contains("busbw_gbs"));
  EXPECT_TRUE(j.contains("ch_util"));
  EXPECT_TRUE(j.contains("ch_balance"));
  EXPECT_TRUE(j.contains("start_wall_ns"));
  EXPECT_TRUE(j.contains("enqueue_wall_ns"));
  EXPECT_TRUE(j.contains("algbw_gbs"));
  EXPECT_FALSE(j.contains("ch_busy_us"));
  EXPECT_FALSE(j.contains("max_ch_us"));
  EXPECT_FALSE(j.contains("ch_times"));
}

// ch_slow names the longest channel by its real id, with its time and the
// median channel time, in the default line.
TEST(EncoderTest, ChSlowNamesTheLongestChannel) {
  OpRecord r = gpu_coll();  // channels 4, 5, 7: 120, 60, 120 us
  r.channels[2] = {2500, 150000};
  CommInfo c = make_comm(3, 8, 2);
  json j = encode(r, &c, nullptr, false);
  ASSERT_TRUE(j.contains("ch_slow")) << j.dump();
  EXPECT_EQ(j["ch_slow"][0], 7);
  EXPECT_DOUBLE_EQ(j["ch_slow"][1].get<double>(), 150.0);
  EXPECT_DOUBLE_EQ(j["ch_slow"][2].get<double>(), 120.0);  // median of 60, 120, 150
  // Four channels: the median is the mean of the two middle ones.
  r.channel_mask = 0b1111;
  r.channels[3] = {0, 90000};  // 120, 60, 150, 90 -> (90 + 120) / 2
  j = encode(r, &c, nullptr, false);
  EXPECT_EQ(j["ch_slow"][0], 2);
  EXPECT_DOUBLE_EQ(j["ch_slow"][2].get<double>(), 105.0);
  // Not when a channel never stopped, the list was cut, or there is one channel.
  r.flags = kFlagPartialChannels;
  EXPECT_FALSE(encode(r, &c, nullptr, false).contains("ch_slow"));
  r.flags = kFlagChannelsTruncated;
  EXPECT_FALSE(encode(r, &c, nullptr, false).contains("ch_slow"));
  r.flags = 0;
  r.channel_mask = 0b1000;
  EXPECT_FALSE(encode(r, &c, nullptr, false).contains("ch_slow"));
}

TEST(BufTest, SignificantDigits) {
  auto fmt = [](double v) {
    Buf b;
    EXPECT_TRUE(b.put_sig(v, 3));
    return std::string(b.view());
  };
  EXPECT_EQ(fmt(214.696), "215");
  EXPECT_EQ(fmt(41.04), "41");
  EXPECT_EQ(fmt(7.663), "7.66");
  EXPECT_EQ(fmt(0.01234), "0.012");
  EXPECT_EQ(fmt(0.0001), "0");
  EXPECT_EQ(fmt(2154.896), "2155");
  EXPECT_EQ(fmt(0), "0");
}

TEST(EncoderTest, BusbwFormulaPerOpType) {
  struct Case {
    Func f;
    int n;
  };
  for (Case cs : {Case{Func::kAllReduce, 8}, Case{Func::kAllGather, 4}, Case{Func::kReduceScatter, 16},
                  Case{Func::kBroadcast, 8}, Case{Func::kReduce, 2}, Case{Func::kAlltoAll, 8},
                  Case{Func::kAllGatherV, 3}}) {
    OpRecord r = gpu_coll();
    r.func = static_cast<uint8_t>(cs.f);
    if (cs.f == Func::kBroadcast || cs.f == Func::kReduce) r.peer = 1;
    CommInfo c = make_comm(3, cs.n);
    json j = encode(r, &c);
    double algbw = 1048576.0 * traffic_multiplier(cs.f, OpKind::kColl, cs.n) / 123456.0;
    double busbw = algbw * busbw_factor(cs.f, OpKind::kColl, cs.n);
    EXPECT_NEAR(j["algbw_gbs"].get<double>(), algbw, algbw * 0.005) << func_name(cs.f);
    EXPECT_NEAR(j["busbw_gbs"].get<double>(), busbw, busbw * 0.005) << func_name(cs.f);
    if (cs.f == Func::kBroadcast || cs.f == Func::kReduce) {
      EXPECT_EQ(j["root"], 1);
    }
  }
}

TEST(EncoderTest, UnknownNranksOmitsOnlyNDependentBandwidth) {
  OpRecord r = gpu_coll();
  CommInfo c = make_comm(3, 0);  // v1-v3: nranks unknown
  json j = encode(r, &c);
  EXPECT_TRUE(j.contains("algbw_gbs"));  // AllReduce traffic = size
  EXPECT_FALSE(j.contains("busbw_gbs"));  // factor needs n
  EXPECT_EQ(j["nranks"], 0);
  r.func = static_cast<uint8_t>(Func::kAllGather);
  j = encode(r, &c);
  EXPECT_FALSE(j.contains("algbw_gbs"));
  EXPECT_FALSE(j.contains("busbw_gbs"));
  r.func = static_cast<uint8_t>(Func::kBroadcast);
  j = encode(r, &c);
  EXPECT_TRUE(j.contains("busbw_gbs"));
  EXPECT_EQ(j["busbw_gbs"], j["algbw_gbs"]);
  // No comm info at all behaves like nranks 0.
  r.func = static_cast<uint8_t>(Func::kAllReduce);
  j = encode(r, nullptr);
  EXPECT_FALSE(j.contains("busbw_gbs"));
  EXPECT_EQ(j["comm_hash"], "0xfedcba9876543210");
}

TEST(EncoderTest, ZeroDurationAndNoTimingHaveNoBandwidth) {
  OpRecord r = gpu_coll();
  CommInfo c = make_comm(3, 8);
  r.end_ns = r.start_ns;
  json j = encode(r, &c);
  EXPECT_EQ(j["dur_us"], 0);
  EXPECT_FALSE(j.contains("algbw_gbs"));
  EXPECT_FALSE(j.contains("busbw_gbs"));
  EXPECT_FALSE(j.contains("ch_util"));
  r = gpu_coll();
  r.timing = static_cast<uint8_t>(TimingSource::kNone);
  j = encode(r, &c);
  EXPECT_EQ(j["timing"], "none");
  EXPECT_FALSE(j.contains("dur_us"));
  EXPECT_FALSE(j.contains("start_wall_ns"));
  EXPECT_TRUE(j.contains("enqueue_wall_ns"));
  r = gpu_coll();
  r.end_ns = r.start_ns - 1;  // stop before start: undefined, omitted
  j = encode(r, &c);
  EXPECT_FALSE(j.contains("dur_us"));
}

TEST(EncoderTest, GpuTimingUsesClockEstimateOrOmitsStart) {
  OpRecord r = base_coll();
  r.timing = static_cast<uint8_t>(TimingSource::kGpu);
  r.start_ns = 1000000000;  // pTimer
  r.end_ns = 1000000000 + 50000;
  CommInfo c = make_comm(3, 8);
  json j = encode(r, &c, nullptr);
  EXPECT_EQ(j["timing"], "gpu");
  EXPECT_FALSE(j.contains("start_wall_ns"));
  EXPECT_DOUBLE_EQ(j["dur_us"].get<double>(), 50.0);
  ClockEstimate est;
  est.comm_id = 3;
  j = encode(r, &c, &est);  // invalid estimate
  EXPECT_FALSE(j.contains("start_wall_ns"));
  est.valid = true;
  est.offset_ns = 5500000000;  // mono = ptimer + offset
  j = encode(r, &c, &est);
  EXPECT_EQ(j["start_wall_ns"].get<int64_t>(), kAnchor.wall_ns + (1000000000 + 5500000000 - 5000000000));
  est.offset_ns = -500000000;  // negative offsets work too
  r.start_ns = 6000000000;
  r.end_ns = r.start_ns + 10;
  j = encode(r, &c, &est);
  EXPECT_EQ(j["start_wall_ns"].get<int64_t>(), kAnchor.wall_ns + 500000000);
}

TEST(EncoderTest, FlagsNetHcasAndVerboseChannelTimes) {
  OpRecord r = base_coll();
  r.flags = kFlagGraphCaptured | kFlagReclaimed | kFlagPartialChannels;
  r.net_ops = 4;
  r.net_send_bytes = 1000;
  r.net_recv_bytes = 2000;
  r.net_steps = 16;
  r.net_peer_count = 2;
  r.net_gpu_wait_100ns = 15;
  r.net_wait_100ns = 25;
  r.net_flush_100ns = 1;  // 0.1 us resolution
  r.net_first_ns = 100;
  r.net_last_ns = 100100;
  r.n_hcas = 2;
  r.hcas[0] = {0, 2, 10, 4096};
  r.hcas[1] = {0xFFFF, 1, 5, 512};
  r.hca_wire_100ns[0] = 20;  // 2 us: 4096 B / 2000 ns = 2.05 GB/s
  CommInfo c = make_comm(3, 8);
  json j = encode(r, &c, nullptr, true);
  EXPECT_DOUBLE_EQ(j["hcas"][0]["wire_us"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["hcas"][0]["gbs"].get<double>(), 2.05);
  EXPECT_FALSE(j["hcas"][1].contains("wire_us")) << "no wire time known: no bandwidth";
  EXPECT_FALSE(j["hcas"][1].contains("gbs"));
  EXPECT_EQ(j["graph"], true);
  EXPECT_EQ(j["reclaimed"], true);
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["net"]["send_bytes"], 1000);
  EXPECT_EQ(j["net"]["recv_bytes"], 2000);
  EXPECT_EQ(j["net"]["steps"], 16);
  EXPECT_EQ(j["net"]["proxy_ops"], 4);
  EXPECT_EQ(j["net"]["peers"], 2);
  EXPECT_DOUBLE_EQ(j["net"]["gpu_wait_us"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["net"]["net_wait_us"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j["net"]["flush_us"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j["net"]["span_us"].get<double>(), 100.0);
  ASSERT_EQ(j["hcas"].size(), 2u);
  EXPECT_EQ(j["hcas"][0]["dev"], 0);
  EXPECT_EQ(j["hcas"][0]["bytes"], 4096);
  EXPECT_EQ(j["hcas"][0]["wrs"], 10);
  EXPECT_EQ(j["hcas"][0]["qps"], 2);
  EXPECT_EQ(j["hcas"][1]["dev"], -1);  // socket transport
  ASSERT_EQ(j["ch_times"].size(), 3u);
  EXPECT_EQ(j["ch_times"][0], json::array({4, 0, 120}));
  EXPECT_EQ(j["ch_times"][1], json::array({5, 1.5, 60}));
  EXPECT_EQ(j["ch_times"][2], json::array({7, 2.5, 120}));
}

// Only the GPU timer's span measures a transfer. Proxy-observed kernel times
// (2.23-2.26), network progress and the enqueue (copy-engine collectives on
// 2.29+: ~0.6 us, which read 22,000 GB/s) keep their duration and timing but
// carry no bandwidth, on collectives, P2P and CE ops alike.
TEST(EncoderTest, CpuTimedOpsCarryNoBandwidth) {
  CommInfo c = make_comm(3, 8);
  for (TimingSource ts : {TimingSource::kProxyCpu, TimingSource::kNetCpu, TimingSource::kEnqueueCpu}) {
    for (OpKind kind : {OpKind::kColl, OpKind::kP2p, OpKind::kCe}) {
      OpRecord r = base_coll();
      r.timing = static_cast<uint8_t>(ts);
      r.kind = static_cast<uint8_t>(kind);
      if (kind == OpKind::kP2p) {
        r.func = static_cast<uint8_t>(Func::kSend);
        r.peer = 5;
      }
      if (kind == OpKind::kCe) r.end_ns = r.start_ns + 600;  // an enqueue: 0.6 us
      const json j = encode(r, &c);
      const std::string where = std::to_string(static_cast<int>(ts)) + "/" + std::to_string(static_cast<int>(kind));
      EXPECT_TRUE(j.contains("dur_us")) << where;
      EXPECT_NE(j["timing"], "gpu") << where;
      EXPECT_FALSE(j.contains("algbw_gbs")) << where;
      EXPECT_FALSE(j.contains("busbw_gbs")) << where;
      r.timing = static_cast<uint8_t>(TimingSource::kGpu);  // the control: the same op GPU-timed has both
      const json g = encode(r, &c);
      EXPECT_TRUE(g.contains("algbw_gbs")) << where;
      EXPECT_TRUE(g.contains("busbw_gbs")) << where;
    }
  }
}

TEST(EncoderTest, P2pAndCe) {
  OpRecord r = gpu_coll();
  r.kind = static_cast<uint8_t>(OpKind::kP2p);
  r.func = static_cast<uint8_t>(Func::kSend);
  r.peer = 5;
  r.flags = kFlagSeqOwn;
  CommInfo c = make_comm(3, 8);
  json j = encode(r, &c);
  EXPECT_EQ(j["type"], "p2p");
  EXPECT_EQ(j["func"], "Send");
  EXPECT_EQ(j["peer"], 5);
  EXPECT_FALSE(j.contains("algo"));
  EXPECT_FALSE(j.contains("root"));
  EXPECT_EQ(j["busbw_gbs"], j["algbw_gbs"]);  // p2p factor 1

  r = gpu_coll();
  r.kind = static_cast<uint8_t>(OpKind::kCe);
  r.func = static_cast<uint8_t>(Func::kAllGather);
  r.channel_mask = 0;
  r.n_channels = 0;
  r.busy_ns = r.max_channel_ns = r.min_channel_ns = 0;
  j = encode(r, &c);
  EXPECT_EQ(j["type"], "ce");
  EXPECT_FALSE(j.contains("algo"));
  EXPECT_FALSE(j.contains("channels"));
  double algbw = 1048576.0 * 8 / 123456.0;
  EXPECT_NEAR(j["algbw_gbs"].get<double>(), algbw, algbw * 0.005);
  EXPECT_NEAR(j["busbw_gbs"].get<double>(), algbw * 7 / 8, algbw * 0.005);
}

TEST(EncoderTest, MarkRecord) {
  OpRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = static_cast<uint8_t>(kMarkKind);
  r.enqueue_ns = 5000001000;
  r.rank = -1;
  const char label[] = "iter 7 \"fwd\"";
  std::memcpy(r.channels, label, sizeof label);
  json j = encode(r, nullptr);
  EXPECT_EQ(j["type"], "mark");
  EXPECT_EQ(j["label"], "iter 7 \"fwd\"");
  EXPECT_EQ(j["wall_ns"].get<int64_t>(), kAnchor.wall_ns + 1000);
  // A label filling the whole field without a NUL stays bounded.
  std::memset(r.channels, 'x', sizeof r.channels);
  j = encode(r, nullptr);
  EXPECT_EQ(j["label"].get<std::string>().size(), kMarkLabelMax);
}

TEST(EncoderTest, CommRecordNamesItsGpuWhenKnown) {
  Encoder e(kAnchor, false);
  Buf b;
  CommInfo c = make_comm(2, 8, 1);
  c.cuda_device = 5;
  c.pci_bus_id = "0000:9a:00.0";
  e.comm(b, c, 1);
  auto lines = testing::parse_lines(std::string(b.view()));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["cuda_dev"], 5);
  EXPECT_EQ(lines[0]["pci_bus_id"], "0000:9a:00.0");
}

TEST(EncoderTest, OtherRecordTypes) {
  Encoder e(kAnchor, false);
  Buf b;
  CommInfo c = make_comm(9, 16, 3);
  c.name = "tp\"group\"\n";
  e.comm(b, c, 1);
  e.comm_end(b, c, 2);
  ClockEstimate est{9, true, -123456789, 800, 42};
  e.clock(b, est, c.comm_hash, 3);
  StatsSnapshot s;
  s.core.ops_completed = 100;
  s.core.dropped_ring_full = 3;
  s.core.dropped_pool_exhausted = 2;
  s.core.fault_stale_handle = 7;
  s.core.ring_high_water = 900;
  s.core.rings = 4;
  s.records_written = 90;
  s.dropped_write_error = 5;
  e.stats(b, s, 4);
  e.end(b, s, 5);
  auto lines = testing::parse_lines(std::string(b.view()));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0]["type"], "comm");
  EXPECT_EQ(lines[0]["comm_name"], "tp\"group\"\n");
  EXPECT_EQ(lines[0]["comm_hash"], "0x1234567890abcdf8");
  EXPECT_EQ(lines[0]["nranks"], 16);
  EXPECT_EQ(lines[0]["nnodes"], 1);
  EXPECT_EQ(lines[0]["abi_version"], 5);
  EXPECT_FALSE(lines[0].contains("cuda_dev"));  // unknown: absent, not -1
  EXPECT_FALSE(lines[0].contains("pci_bus_id"));
  EXPECT_EQ(lines[1]["type"], "comm_end");
  EXPECT_EQ(lines[1]["comm_id"], 9);
  EXPECT_EQ(lines[2]["type"], "clock");
  EXPECT_EQ(lines[2]["gpu_offset_ns"], -123456789);
  EXPECT_EQ(lines[2]["uncertainty_ns"], 800);
  EXPECT_EQ(lines[2]["samples"], 42);
  EXPECT_EQ(lines[3]["type"], "stats");
  EXPECT_EQ(lines[3]["records_written"], 90);
  EXPECT_EQ(lines[3]["ops_completed"], 100);
  EXPECT_EQ(lines[3]["dropped"]["ring_full"], 3);
  EXPECT_EQ(lines[3]["dropped"]["pool_exhausted"], 2);
  EXPECT_EQ(lines[3]["dropped"]["write_error"], 5);
  EXPECT_EQ(lines[3]["faults"]["stale_handle"], 7);
  EXPECT_EQ(lines[3]["faults"].size(), 8u);
  EXPECT_EQ(lines[3]["filtered"].size(), 2u);
  EXPECT_EQ(lines[3]["ring_high_water"], 900);
  EXPECT_EQ(lines[4]["type"], "end");
  EXPECT_EQ(lines[4]["dropped_total"], 10);
  EXPECT_EQ(lines[4]["records_written"], 90);
}

TEST(EncoderTest, MetaRecord) {
  Encoder e(kAnchor, false);
  MetaInfo m;
  m.plugin_version = "0.1.0";
  m.host = "node-a01";
  m.pid = 4242;
  m.abi_version = 6;
  std::unordered_map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "777"}, {"SLURM_PROCID", "0"}, {"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "16"}};
  m.job = detect_job([&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  }, "gen");
  Config cfg;
  cfg.dump_dir = "/tmp/dir with space";
  m.config = config_json_fields(cfg);
  Buf b;
  e.meta(b, m, 2);
  json j = json::parse(std::string(b.view()));
  EXPECT_EQ(j["type"], "meta");
  EXPECT_EQ(j["format"], "nccl-inspector-log");
  EXPECT_EQ(j["format_version"], ni::schema::kFormatVersion);
  EXPECT_EQ(j["plugin_version"], "0.1.0");
  EXPECT_EQ(j["host"], "node-a01");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["file_seq"], 2);
  EXPECT_EQ(j["abi_version"], 6);
  EXPECT_EQ(j["wall_ns"].get<int64_t>(), kAnchor.wall_ns);
  EXPECT_EQ(j["mono_ns"].get<uint64_t>(), kAnchor.mono_ns);
  EXPECT_EQ(j["job"]["slurm_job_id"], "777");
  EXPECT_EQ(j["job"]["job_id"], "777");
  EXPECT_EQ(j["job"]["job_id_source"], "SLURM_JOB_ID");
  EXPECT_EQ(j["job"]["rank"], "5");
  EXPECT_EQ(j["job"]["global_rank"], "5");  // RANK beats SLURM_PROCID (torchrun under srun)
  EXPECT_EQ(j["job"]["global_rank_source"], "RANK");
  EXPECT_FALSE(j["job"].contains("ompi_rank"));
  // Every setting of the table, typed.
  EXPECT_EQ(j["config"].size(), settings().size());
  for (const auto& s : settings()) EXPECT_TRUE(j["config"].contains(std::string(s.env))) << s.env;
  EXPECT_EQ(j["config"]["NCCL_INSPECTOR_DUMP_DIR"], "/tmp/dir with space");
  EXPECT_EQ(j["config"]["NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"], cfg.dump_interval_us);
  EXPECT_EQ(j["config"]["NCCL_INSPECTOR_ENABLE"], 1);
}

TEST(JobTest, Precedence) {
  auto run = [](std::unordered_map<std::string, std::string> env) {
    return detect_job([&](const char* n) -> const char* {
      auto it = env.find(n);
      return it == env.end() ? nullptr : it->second.c_str();
    }, "host-1-x");
  };
  JobInfo j = run({});
  EXPECT_EQ(j.job_id, "host-1-x");
  EXPECT_EQ(j.job_id_source, "generated");
  EXPECT_TRUE(j.global_rank.empty());
  j = run({{"SLURM_JOBID", "12"}, {"SLURM_ARRAY_TASK_ID", "3"}, {"TORCHELASTIC_RUN_ID", "t"}});
  EXPECT_EQ(j.job_id, "12_3");
  EXPECT_EQ(j.job_id_source, "SLURM_JOBID+SLURM_ARRAY_TASK_ID");
  j = run({{"TORCHELASTIC_RUN_ID", "t"}, {"PMIX_NAMESPACE", "p"}, {"OMPI_COMM_WORLD_RANK", "4"}, {"SLURM_PROCID", "9"}});
  EXPECT_EQ(j.job_id, "t");
  EXPECT_EQ(j.global_rank, "4");
  EXPECT_EQ(j.global_rank_source, "OMPI_COMM_WORLD_RANK");
  j = run({{"PMIX_NAMESPACE", "p"}, {"PMI_RANK", "2"}});
  EXPECT_EQ(j.job_id_source, "PMIX_NAMESPACE");
  EXPECT_EQ(j.global_rank, "2");
  EXPECT_EQ(sanitize_for_filename("a/b c"), "a_b_c");
}

// Random (type-correct and garbage) records: every line parses, no NaN/Inf.
TEST(EncoderTest, RandomRecordsAlwaysValidJson) {
  std::mt19937_64 rng(7);
  Encoder e(kAnchor, true);
  CommInfo c = make_comm(1, 4);
  for (int i = 0; i < 5000; ++i) {
    OpRecord r;
    auto* p = reinterpret_cast<uint64_t*>(&r);
    for (size_t k = 0; k < sizeof r / 8; ++k) p[k] = rng();
    r.kind = static_cast<uint8_t>(rng() % 4);
    if (i % 2) {
      r.func = static_cast<uint8_t>(rng() % 17);
      r.n_hcas = static_cast<uint8_t>(rng() % 6);
    }
    ClockEstimate est{1, (i % 3) == 0, static_cast<int64_t>(rng()), rng(), rng()};
    Buf b;
    e.op(b, r, (i % 5) ? &c : nullptr, &est);
    std::string s(b.view());
    ASSERT_EQ(s.find('\n'), s.size() - 1);
    json j;
    ASSERT_NO_THROW(j = json::parse(s)) << s;
    for (auto& [k, v] : j.items())
      if (v.is_number_float()) {
        EXPECT_TRUE(std::isfinite(v.get<double>())) << k;
      }
  }
}

}  // namespace
}  // namespace ni::out
