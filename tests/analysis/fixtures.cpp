#include "tests/analysis/fixtures.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace ni::test {
namespace fs = std::filesystem;

namespace {
// A 512-byte window and the smallest hash (memLevel 1): the tests write tens of
// thousands of members of a few bytes, and zlib's default state (~270 KiB,
// allocated and its hash zeroed per member) made that the slowest part of the
// suite under ThreadSanitizer. The reader is indifferent to the window size.
void append_member(std::string& out, const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, 1, Z_DEFLATED, 9 + 16, 1, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2");
  std::string buf(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(buf.data());
  zs.avail_out = static_cast<uInt>(buf.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.append(buf.data(), buf.size() - zs.avail_out);
  deflateEnd(&zs);
}
}  // namespace

void write_gz(const std::string& path, const std::vector<std::string>& lines, std::size_t per, std::size_t cut) {
  std::string out, chunk;
  std::size_t n = 0;
  for (const auto& l : lines) {
    chunk += l;
    chunk += '\n';
    if (++n % per == 0) {
      append_member(out, chunk);
      chunk.clear();
    }
  }
  if (!chunk.empty()) append_member(out, chunk);
  if (cut) out.resize(out.size() > cut ? out.size() - cut : 0);
  write_text(path, out);
}

void write_gz_split(const std::string& path, const std::string& text, std::size_t member_bytes) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += member_bytes) append_member(out, text.substr(i, member_bytes));
  write_text(path, out);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {
// This process's directory of test dirs; removed when the process exits, unless
// NI_KEEP_TEST_DIRS is set (to look at what a failing test wrote).
fs::path process_dir() {
  const char* base = std::getenv("TMPDIR");
  return fs::path(base ? base : "/tmp") / ("ni_analysis_test_" + std::to_string(::getpid()));
}
void remove_process_dir() {
  std::error_code ec;
  fs::remove_all(process_dir(), ec);
}
}  // namespace

std::string temp_dir(const std::string& name) {
  static const bool cleanup = std::getenv("NI_KEEP_TEST_DIRS") == nullptr && std::atexit(remove_process_dir) == 0;
  (void)cleanup;
  fs::path p = process_dir() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

namespace {
std::string hx(std::uint64_t h) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(h));
  return b;
}
double busbw(const std::string& func, std::uint64_t bytes, double dur_us, int n) {
  const double algbw = static_cast<double>(bytes) / (dur_us * 1e-6) / 1e9;
  double f = 1;
  if (func == "AllReduce") f = 2.0 * (n - 1) / n;
  else if (func == "AllGather" || func == "ReduceScatter") f = static_cast<double>(n - 1) / n;
  return algbw * f;
}
}  // namespace

JobTruth write_job(const std::string& dir, const JobSpec& s) {
  JobTruth t;
  t.comm_dp = 0x8d3a5c7e91b20f44ULL;
  t.comm_tp = 0x1122334455660000ULL;
  const int n = s.hosts * s.ranks_per_host;
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<double> noise(0.0, 0.02);
  std::uniform_real_distribution<double> jitter(0.0, 2.0);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  const std::int64_t t0 = 1767225600000000000LL;  // 2026-01-01
  std::vector<std::vector<std::string>> lines(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int h = r / s.ranks_per_host, local = r % s.ranks_per_host;
    char b[1024];
    std::snprintf(b, sizeof b,
                  "{\"type\":\"meta\",\"wall_ns\":%lld,\"format\":\"nccl-inspector-log\",\"format_version\":1,"
                  "\"plugin_version\":\"0.1.0\",\"host\":\"host%d\",\"pid\":%d,\"file_seq\":0,\"abi_version\":6,"
                  "\"job\":{\"job_id\":\"42\",\"job_id_source\":\"slurm\"},\"mono_ns\":123,\"config\":{\"x\":1},"
                  "\"future_field\":[1,2,{\"a\":null}]}",
                  static_cast<long long>(t0), h, 1000 + r);
    lines[static_cast<std::size_t>(r)].push_back(b);
    std::snprintf(b, sizeof b,
                  "{\"type\":\"comm\",\"wall_ns\":%lld,\"comm_id\":1,\"comm_hash\":\"%s\",\"comm_name\":\"dp\","
                  "\"rank\":%d,\"nranks\":%d,\"nnodes\":%d}",
                  static_cast<long long>(t0), hx(t.comm_dp).c_str(), r, n, s.hosts);
    lines[static_cast<std::size_t>(r)].push_back(b);
    std::snprintf(b, sizeof b,
                  "{\"type\":\"comm\",\"wall_ns\":%lld,\"comm_id\":2,\"comm_hash\":\"%s\",\"comm_name\":\"tp%d\","
                  "\"rank\":%d,\"nranks\":%d,\"nnodes\":1}",
                  static_cast<long long>(t0), hx(t.comm_tp + static_cast<std::uint64_t>(h)).c_str(), h, local,
                  s.ranks_per_host);
    lines[static_cast<std::size_t>(r)].push_back(b);
    lines[static_cast<std::size_t>(r)].push_back("{\"type\":\"clock\",\"wall_ns\":1,\"comm_hash\":\"" + hx(t.comm_dp) +
                                                 "\",\"gpu_offset_ns\":5,\"uncertainty_ns\":800,\"samples\":9}");
  }
  auto emit_coll = [&](int r, std::uint64_t comm, int nr, int nn, int rank_in_comm, const char* func, std::uint64_t seq,
                       std::uint64_t bytes, const char* algo, const char* proto, std::int64_t start, double dur,
                       double chb, int slow_ch, double slow_factor) {
    const int h = r / s.ranks_per_host, local = r % s.ranks_per_host;
    if (h == s.clock_offset_host) start += static_cast<std::int64_t>(s.clock_offset_us * 1000);
    std::string ch_times = "[";
    double mx = 0;
    for (int c = 0; c < 8; ++c) {
      double d = dur * (c == slow_ch ? 1.0 : (chb + (1 - chb) * u01(rng))) / (slow_ch >= 0 ? 1.0 : 1.0);
      if (slow_ch >= 0 && c != slow_ch) d = dur / slow_factor * (0.95 + 0.05 * u01(rng));
      mx = std::max(mx, d);
      char cb[96];
      std::snprintf(cb, sizeof cb, "%s[%d,%.3f,%.3f]", c ? "," : "", c * 2, 0.1 * c, d);
      ch_times += cb;
    }
    ch_times += "]";
    char b[2048];
    std::snprintf(b, sizeof b,
                  "{\"type\":\"coll\",\"wall_ns\":%lld,\"comm_id\":1,\"comm_hash\":\"%s\",\"rank\":%d,\"nranks\":%d,"
                  "\"nnodes\":%d,\"seq\":%llu,\"func\":\"%s\",\"dtype\":\"float32\",\"count\":%llu,\"bytes\":%llu,"
                  "\"algo\":\"%s\",\"proto\":\"%s\",\"nchannels\":8,\"nwarps\":16,\"channels\":[0,2,4,6,8,10,12,14],"
                  "\"start_wall_ns\":%lld,\"enqueue_wall_ns\":%lld,\"dur_us\":%.3f,\"max_ch_us\":%.3f,\"timing\":\"gpu\","
                  "\"algbw_gbs\":1.0,\"busbw_gbs\":%.4f,\"ch_busy_us\":%.3f,\"ch_util\":0.9,\"ch_balance\":%.4f,"
                  "\"transport\":\"%s\",\"graph\":false,\"ch_times\":%s,"
                  "\"net\":{\"send_bytes\":%llu,\"recv_bytes\":%llu,\"steps\":8,\"proxy_ops\":2,\"peers\":2,"
                  "\"gpu_wait_us\":1.5,\"net_wait_us\":2.5,\"flush_us\":0,\"span_us\":%.3f},"
                  "\"hcas\":[{\"dev\":\"mlx5_%d\",\"bytes\":%llu,\"wrs\":16,\"qps\":2}]}",
                  static_cast<long long>(start + static_cast<std::int64_t>(dur * 1000)), hx(comm).c_str(), rank_in_comm,
                  nr, nn, static_cast<unsigned long long>(seq), func, static_cast<unsigned long long>(bytes / 4),
                  static_cast<unsigned long long>(bytes), algo, proto, static_cast<long long>(start),
                  static_cast<long long>(start - 5000), dur, mx, busbw(func, bytes, dur, nr), dur * 7.2, chb,
                  nn > 1 ? "network" : "intra_node", ch_times.c_str(), static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(bytes), dur, local, static_cast<unsigned long long>(bytes));
    lines[static_cast<std::size_t>(r)].push_back(b);
    ++t.ops;
    (void)h;
  };

  std::int64_t clock = t0 + 1000000;
  for (int it = 0; it < s.iterations; ++it) {
    if (s.marks)
      for (int r = 0; r < n; ++r)
        lines[static_cast<std::size_t>(r)].push_back("{\"type\":\"mark\",\"wall_ns\":" + std::to_string(clock - 100) +
                                                     ",\"label\":\"step\"}");
    if (s.fault == Fault::kSlowHca) {
      // Pipeline: each rank sends 1 MiB to rank+1 (seq = per-peer counter); the slow HCA slows
      // every transfer in or out of its rank.
      for (int r = 0; r < n; ++r) {
        const int dst = (r + 1) % n;
        const bool slow = r == s.straggler_rank || dst == s.straggler_rank;
        const double dur = 120.0 * (slow ? 2.0 : 1.0) * (1 + noise(rng)) * s.slowdown;
        const std::int64_t st = clock + static_cast<std::int64_t>(jitter(rng) * 1000);
        for (int side = 0; side < 2; ++side) {
          const int me = side == 0 ? r : dst, peer = side == 0 ? dst : r;
          char b[1024];
          std::snprintf(b, sizeof b,
                        "{\"type\":\"p2p\",\"comm_hash\":\"%s\",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"seq\":%d,"
                        "\"func\":\"%s\",\"peer\":%d,\"bytes\":1048576,\"nchannels\":2,\"start_wall_ns\":%lld,"
                        "\"dur_us\":%.3f,\"timing\":\"gpu\",\"busbw_gbs\":%.4f,"
                        "\"hcas\":[{\"dev\":\"mlx5_%d\",\"bytes\":1048576,\"wrs\":4,\"qps\":1}]}",
                        hx(t.comm_dp).c_str(), me, n, s.hosts, it, side == 0 ? "Send" : "Recv", peer,
                        static_cast<long long>(st), dur, 1048576.0 / (dur * 1e-6) / 1e9, me % s.ranks_per_host);
          lines[static_cast<std::size_t>(me)].push_back(b);
          ++t.ops;
        }
      }
      clock += 1000000;
      continue;
    }
    // dp AllReduce 4 MiB across all ranks.
    const bool congested = s.fault == Fault::kCongestion && it >= s.congestion_first && it <= s.congestion_last;
    bool ll = false;
    std::uint64_t bytes = 4u << 20;
    double base = 400.0 * s.slowdown * (congested ? 2.2 : 1.0);
    if (s.fault == Fault::kBimodal) {
      bytes = 64u << 10;
      ll = u01(rng) < 0.5;
      base = (ll ? 40.0 : 95.0) * s.slowdown;
    }
    std::vector<double> start_off(static_cast<std::size_t>(n));
    double latest = 0;
    for (int r = 0; r < n; ++r) {
      start_off[static_cast<std::size_t>(r)] = jitter(rng) + (s.fault == Fault::kStraggler && r == s.straggler_rank ? s.straggler_us : 0);
      latest = std::max(latest, start_off[static_cast<std::size_t>(r)]);
    }
    const double common = base * (1 + noise(rng));
    for (int r = 0; r < n; ++r) {
      const double wait = latest - start_off[static_cast<std::size_t>(r)];
      const double dur = common * (1 + 0.3 * noise(rng)) + wait;
      const bool degraded = s.fault == Fault::kDegradedChannel && r == s.straggler_rank;
      emit_coll(r, t.comm_dp, n, s.hosts, r, "AllReduce", static_cast<std::uint64_t>(it), bytes, ll ? "TREE" : "RING",
                ll ? "LL" : "SIMPLE", clock + static_cast<std::int64_t>(start_off[static_cast<std::size_t>(r)] * 1000),
                dur, degraded ? 0.45 : 0.9, degraded ? 3 : -1, degraded ? 2.0 : 1.0);
    }
    // tp AllGather 1 MiB within each host.
    for (int h = 0; h < s.hosts; ++h) {
      const double c2 = 150.0 * s.slowdown * (1 + noise(rng)) * (congested ? 1.0 : 1.0);
      for (int l = 0; l < s.ranks_per_host; ++l) {
        const int r = h * s.ranks_per_host + l;
        emit_coll(r, t.comm_tp + static_cast<std::uint64_t>(h), s.ranks_per_host, 1, l, "AllGather",
                  static_cast<std::uint64_t>(it), 1u << 20, "RING", "LL128",
                  clock + 600000 + static_cast<std::int64_t>(jitter(rng) * 1000), c2 * (1 + 0.3 * noise(rng)), 0.9, -1, 1.0);
      }
    }
    clock += 1000000;
  }
  for (int r = 0; r < n; ++r) {
    auto& L = lines[static_cast<std::size_t>(r)];
    // Written: the op and mark records this file holds (rank 1: `unread` more).
    std::uint64_t written = r == 1 ? s.unread : 0;
    for (const auto& l : L)
      for (const char* type : {"\"type\":\"coll\"", "\"type\":\"p2p\"", "\"type\":\"mark\""})
        written += l.find(type) != std::string::npos;
    L.push_back("{\"type\":\"stats\",\"wall_ns\":" + std::to_string(clock) + ",\"records_written\":" +
                std::to_string(written) +
                ",\"ops_completed\":" + std::to_string(written + (r == 0 && s.drops ? 7 : 0)) +
                ",\"dropped\":{\"ring_full\":" + std::to_string(r == 0 && s.drops ? 7 : 0) +
                ",\"pool_exhausted\":0,\"write_error\":0},\"filtered\":{\"min_size\":0,\"sampled_out\":0},"
                "\"faults\":{\"null_handle\":0},\"ring_high_water\":3,\"rings\":2,\"reclaimed_ops\":0}");
    L.push_back("{\"type\":\"end\",\"wall_ns\":" + std::to_string(clock) + ",\"dropped_total\":" + std::to_string(r == 0 && s.drops ? 7 : 0) + "}");
    const int h = r / s.ranks_per_host;
    const std::string path = dir + "/host" + std::to_string(h) + "-pid" + std::to_string(1000 + r) + "-0.jsonl.gz";
    write_gz(path, L, 97);
    t.files.push_back(path);
  }
  return t;
}

void write_upstream_log(const std::string& path, int rank, int nranks, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    char b[1024];
    const double t = 100.0 + i % 7;
    std::snprintf(b, sizeof b,
                  "{\"header\":{\"id\":\"0xabcdef\",\"comm_name\":\"unknown\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":1},"
                  "\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"unknown\","
                  "\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":%lld,\"hostname\":\"uphost\",\"pid\":77},"
                  "\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":%d,\"coll_msg_size_bytes\":1048576,"
                  "\"coll_exec_time_us\":%d,\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":%.6f,"
                  "\"coll_busbw_gbs\":%.6f}}\n",
                  rank, nranks, 1700000000000000LL + i, i, static_cast<int>(t), 1048576 / (t * 1e3),
                  1048576 / (t * 1e3) * 2 * (nranks - 1) / nranks);
    out += b;
    std::snprintf(b, sizeof b,
                  "{\"header\":{\"id\":\"0xabcdef\",\"comm_name\":\"unknown\",\"rank\":%d,\"n_ranks\":%d,\"nnodes\":1},"
                  "\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"unknown\","
                  "\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":%lld,\"hostname\":\"uphost\",\"pid\":77},"
                  "\"p2p_perf\":{\"p2p\":\"Send\",\"p2p_sn\":%d,\"p2p_peer\":%d,\"p2p_msg_size_bytes\":4096,"
                  "\"p2p_exec_time_us\":12,\"p2p_timing_source\":\"kernel_cpu\",\"p2p_algobw_gbs\":\"nan\","
                  "\"p2p_busbw_gbs\":0.341333}}\n",
                  rank, nranks, 1700000000000000LL + i, i, (rank + 1) % nranks);
    out += b;
  }
  write_text(path, out);
}

}  // namespace ni::test
