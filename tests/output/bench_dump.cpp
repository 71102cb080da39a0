// Dump-thread throughput: encode + compress (libdeflate, 1 MiB gzip members,
// as DumpSink does) of a realistic mixed record set, one core. Prints records/s
// and compressed bytes/record. Built, not run as a test (scripts/bench runs it).
//
// usage: bench_dump [records=400000] [level=1] [verbose=0] [net=0]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "src/core/names.h"
#include "src/output/encoder.h"
#include "src/output/gzip_log.h"

using namespace ni;
using namespace ni::out;

namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Counts bytes; no file system in the measurement.
class NullIo final : public Io {
 public:
  uint64_t bytes = 0;
  int open(const char*, int, mode_t) override { return 100; }
  ssize_t write(int, const void*, size_t n) override {
    bytes += n;
    return static_cast<ssize_t>(n);
  }
  int fsync(int) override { return 0; }
  int ftruncate(int, off_t) override { return 0; }
  int close(int) override { return 0; }
  int rename(const char*, const char*) override { return 0; }
  int mkdir(const char*, mode_t) override { return 0; }
  int unlink(const char*) override { return 0; }
  int stat(const char*, struct stat*) override { return -1; }
};

// A training-like mix on one rank (rank 3 of 16, 2 nodes): every step issues
// the same list of ops (as frameworks do): 6 AllReduce gradient buckets on the
// data-parallel comm (network, GPU-timed, 8..16 channels), an AllGather +
// ReduceScatter pair per FSDP unit on an intra-node comm, and a pipeline
// Send/Recv pair; durations vary +-5% around ~150 GB/s (intra) / ~40 GB/s
// (network), launch gaps of a few us, compute gaps between steps.
struct Step {
  Func f;
  uint32_t comm;
  uint64_t bytes;
};
bool g_net = false;  // NCCL_INSPECTOR_ENABLE_NET defaults to 0: no network fields
std::vector<OpRecord> make_mix(size_t n) {
  std::mt19937_64 rng(12345);
  std::normal_distribution<double> noise(1.0, 0.05);
  const Step steps[] = {
      {Func::kAllGather, 2, 8u << 20},      {Func::kAllGather, 2, 8u << 20},      {Func::kReduceScatter, 2, 8u << 20},
      {Func::kReduceScatter, 2, 8u << 20},  {Func::kSend, 3, 4u << 20},           {Func::kRecv, 3, 4u << 20},
      {Func::kAllReduce, 1, 25u << 20},     {Func::kAllReduce, 1, 25u << 20},     {Func::kAllReduce, 1, 25u << 20},
      {Func::kAllReduce, 1, 25u << 20},     {Func::kAllReduce, 1, 16u << 20},     {Func::kAllReduce, 1, 1u << 16},
  };
  std::vector<OpRecord> v;
  v.reserve(n);
  uint64_t t = 5000000000ull;  // mono ns
  const uint64_t gpu_off = 118456789000ull;
  uint64_t seq[4][16] = {};
  size_t k = 0;
  while (v.size() < n) {
    const Step& st = steps[k % std::size(steps)];
    if (k % std::size(steps) == 0) t += 30000000 + rng() % 2000000;  // compute between steps
    ++k;
    OpRecord r;
    std::memset(&r, 0, sizeof r);
    bool p2p = st.f == Func::kSend || st.f == Func::kRecv;
    bool net = st.comm == 1;
    r.kind = static_cast<uint8_t>(p2p ? OpKind::kP2p : OpKind::kColl);
    r.func = static_cast<uint8_t>(st.f);
    r.comm_id = st.comm;
    r.comm_hash = 0x9a8b7c6d5e4f3a2bull * st.comm;
    r.seq = seq[st.comm][static_cast<int>(st.f)]++;
    r.rank = 3;
    r.peer = p2p ? 4 : -1;
    r.dtype = static_cast<uint8_t>(DType::kBfloat16);
    r.bytes = st.bytes;
    r.count = r.bytes / 2;
    r.algo = static_cast<uint8_t>(r.bytes > (1u << 20) ? Algo::kRing : Algo::kTree);
    r.proto = static_cast<uint8_t>(r.bytes > (1u << 20) ? Proto::kSimple : Proto::kLL128);
    r.timing = static_cast<uint8_t>(TimingSource::kGpu);
    r.transport = static_cast<uint8_t>(net ? Transport::kNetwork : Transport::kIntraNode);
    int nch = p2p ? 2 : (r.bytes > (4u << 20) ? 16 : 8);
    r.n_channels = static_cast<uint8_t>(nch);
    r.n_warps = 16;
    r.channel_mask = p2p ? (uint64_t{3} << 8) : ((uint64_t{1} << nch) - 1);
    r.channels_started = r.channels_stopped = static_cast<uint8_t>(nch);
    double base_ns = 8000.0 + static_cast<double>(r.bytes) / (net ? 40.0 : 150.0);
    auto span = static_cast<uint64_t>(base_ns * noise(rng));
    t += 3000 + rng() % 4000;  // launch gap
    r.enqueue_ns = t;
    uint64_t start_mono = t + 5000 + rng() % 3000;
    r.start_ns = start_mono - gpu_off;  // pTimer
    r.end_ns = r.start_ns + span;
    if (!p2p) t = start_mono + span;  // the stream serializes collectives
    uint64_t busy = 0;
    uint32_t mx = 0, mn = UINT32_MAX;
    for (int c = 0; c < nch && c < kRecordChannels; ++c) {
      auto off = static_cast<uint32_t>(rng() % 2000);
      auto dur = static_cast<uint32_t>(static_cast<double>(span - 2000) * std::min(1.0, noise(rng) * 0.95));
      if (off + dur > span) dur = static_cast<uint32_t>(span - off);
      r.channels[c] = {off, dur};
      busy += dur;
      mx = std::max(mx, dur);
      mn = std::min(mn, dur);
    }
    r.busy_ns = busy;
    r.max_channel_ns = mx;
    r.min_channel_ns = mn;
    if (net && g_net) {
      r.net_ops = static_cast<uint32_t>(nch);
      r.net_send_bytes = r.net_recv_bytes = r.bytes * 15 / 16;
      r.net_steps = static_cast<uint32_t>(nch * 64);
      r.net_peer_count = 2;
      r.net_gpu_wait_100ns = static_cast<uint32_t>(rng() % 500);
      r.net_wait_100ns = static_cast<uint32_t>(rng() % 2000);
      r.net_first_ns = start_mono + 1000;
      r.net_last_ns = start_mono + span;
    }
    v.push_back(r);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("NI_BENCH_SHOW")) {
    auto rs = make_mix(static_cast<size_t>(std::atoi(std::getenv("NI_BENCH_SHOW"))));
    CommInfo c{1, 1, "dp", 3, 16, 2, 5, -1, ""};
    ClockEstimate k{1, true, 118456789000ll, 700, 1000};
    Encoder e(ClockAnchor{1700000000000000000, 5000000000}, false);
    Buf b;
    for (auto& r : rs) {
      c.comm_id = r.comm_id;
      e.op(b, r, &c, &k);
    }
    std::fwrite(b.data(), 1, b.size(), stdout);
    return 0;
  }
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400000;
  int level = argc > 2 ? std::atoi(argv[2]) : 1;
  bool verbose = argc > 3 && std::atoi(argv[3]) != 0;
  g_net = argc > 4 && std::atoi(argv[4]) != 0;
  std::vector<OpRecord> recs = make_mix(n);
  CommInfo comms[4];
  comms[1] = {1, 0x9a8b7c6d5e4f3a2bull, "dp", 3, 16, 2, 5, -1, ""};
  comms[2] = {2, 0x9a8b7c6d5e4f3a2bull * 2, "fsdp", 3, 8, 1, 5, -1, ""};
  comms[3] = {3, 0x9a8b7c6d5e4f3a2bull * 3, "pp", 0, 2, 2, 5, -1, ""};
  ClockEstimate clk{1, true, 118456789000ll, 700, 1000};

  double best_rps = 0, bytes_per_rec = 0, raw_per_rec = 0;
  for (int rep = 0; rep < 3; ++rep) {
    NullIo io;
    LogFileOptions o;
    o.dir = "/nonexistent";
    o.base = "bench";
    o.level = level;
    GzipLog log(io, o, [](ni::abi::LogLevel, const std::string&) {}, [](Buf&, uint32_t) {});
    Encoder enc(ClockAnchor{1700000000000000000, 5000000000}, verbose);
    Buf text;
    uint64_t raw = 0;
    uint64_t t0 = now_ns();
    for (size_t i = 0; i < recs.size(); ++i) {
      const OpRecord& r = recs[i];
      enc.op(text, r, &comms[r.comm_id], &clk);
      if (text.size() >= (1u << 20)) {
        raw += text.size();
        log.add_member(text.data(), text.size());
        text.clear();
        log.flush(0);
      }
    }
    raw += text.size();
    log.add_member(text.data(), text.size());
    log.flush(0);
    uint64_t t1 = now_ns();
    double rps = static_cast<double>(n) / (static_cast<double>(t1 - t0) * 1e-9);
    if (rps > best_rps) best_rps = rps;
    bytes_per_rec = static_cast<double>(io.bytes) / static_cast<double>(n);
    raw_per_rec = static_cast<double>(raw) / static_cast<double>(n);
  }
  std::printf("{\"bench\":\"dump\",\"records\":%zu,\"level\":%d,\"verbose\":%d,\"net\":%d,\"records_per_s\":%.0f,"
              "\"json_bytes_per_record\":%.1f,\"gzip_bytes_per_record\":%.2f}\n",
              n, level, verbose ? 1 : 0, g_net ? 1 : 0, best_rps, raw_per_rec, bytes_per_rec);
  std::printf("dump thread: %.0f records/s (target >= 500000: %s), %.2f bytes/record on disk (target <= 40: %s), "
              "%.1f bytes/record of JSON\n",
              best_rps, best_rps >= 500000 ? "met" : "NOT met", bytes_per_rec, bytes_per_rec <= 40 ? "met" : "NOT met",
              raw_per_rec);
  return 0;
}
