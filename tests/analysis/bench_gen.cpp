// Benchmark input (not a test): a synthetic job's logs for the analyzer's
// scale bench (scripts/bench, "analyzer at scale"): `files` ranks, one log
// each, on hosts of 8; every rank in a TP communicator of 8 contiguous ranks
// and a DP communicator of the ranks with its local index (strided), issuing
// the same program, so that every collective instance aligns across its
// communicator's ranks. GPU-timed, with one late rank (world rank 5, +40 us),
// and an iteration mark every 400 records.
// Usage: bench_gen RECORDS FILES DIR
#include <libdeflate.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bench_gen RECORDS FILES DIR\n");
    return 2;
  }
  const long records = std::atol(argv[1]);
  const int files = std::max(8, std::atoi(argv[2]) / 8 * 8);
  const std::string dir = argv[3];
  std::filesystem::create_directories(dir);
  const long per = records / files;
  auto write_rank = [&](int r) {
    libdeflate_compressor* c = libdeflate_alloc_compressor(1);
    const int host = r / 8, local = r % 8;
    const unsigned long long tp = 0x7a11000000000000ULL + static_cast<unsigned long long>(host) * 0x9e3779b97f4a7c15ULL;
    const unsigned long long dp = 0xd0a2000000000000ULL + static_cast<unsigned long long>(local) * 0xc2b2ae3d27d4eb4fULL;
    const int ntp = 8, ndp = files / 8;
    std::ofstream out(dir + "/host" + std::to_string(host) + "-pid" + std::to_string(1000 + r) + ".jsonl.gz",
                      std::ios::binary);
    std::string chunk, buf;
    auto flush = [&] {
      buf.resize(libdeflate_gzip_compress_bound(c, chunk.size()));
      const std::size_t n = libdeflate_gzip_compress(c, chunk.data(), chunk.size(), buf.data(), buf.size());
      out.write(buf.data(), static_cast<std::streamsize>(n));
      chunk.clear();
    };
    char line[1024];
    std::snprintf(line, sizeof line,
                  "{\"type\":\"meta\",\"wall_ns\":1,\"format\":\"nccl-inspector-log\",\"format_version\":1,"
                  "\"host\":\"host%d\",\"pid\":%d,\"abi_version\":5}\n",
                  host, 1000 + r);
    chunk += line;
    const char* funcs[] = {"AllReduce", "AllGather", "ReduceScatter"};
    long tp_seq[3] = {0, 0, 0}, dp_seq = 0;
    const long long t0 = 1767225600000000000LL;
    for (long i = 0; i < per; ++i) {
      if (i % 400 == 0) {  // an iteration mark (ncclInspectorMark) every 100 steps of four collectives
        std::snprintf(line, sizeof line, "{\"type\":\"mark\",\"wall_ns\":%lld,\"label\":\"iteration %ld\"}\n",
                      t0 + i * 200000LL - 1000, i / 400);
        chunk += line;
      }
      // Three TP collectives then one DP AllReduce, over and over.
      const bool is_dp = i % 4 == 3;
      const int fi = is_dp ? 0 : static_cast<int>(i % 4) % 3;
      const long seq = is_dp ? dp_seq++ : tp_seq[fi]++;
      const unsigned long long bytes = is_dp ? (4ULL << 20) : (1ULL << (16 + (i % 7)));
      const int n = is_dp ? ndp : ntp;
      const int rank = is_dp ? host : local;
      const long long start = t0 + i * 200000LL + (r == 5 ? 40000 : 0) + (r * 37 % 11) * 100;
      const double late = r == 5 ? 0.0 : 40.0;  // the others wait for rank 5
      const double dur = 20.0 + static_cast<double>(bytes) / 4e4 + late + static_cast<double>((i * 7 + r) % 13) * 0.1;
      const double algbw = static_cast<double>(bytes) / dur / 1e3;
      std::snprintf(line, sizeof line,
                    "{\"type\":\"coll\",\"wall_ns\":%lld,\"comm_hash\":\"0x%016llx\",\"comm_name\":\"%s\","
                    "\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"seq\":%ld,\"func\":\"%s\",\"dtype\":\"bfloat16\","
                    "\"count\":%llu,\"bytes\":%llu,\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"nchannels\":4,"
                    "\"channels\":[0,1,2,3],\"start_wall_ns\":%lld,\"dur_us\":%.3f,\"max_ch_us\":%.3f,"
                    "\"timing\":\"gpu\",\"algbw_gbs\":%.3f,\"busbw_gbs\":%.3f,\"ch_balance\":0.95,"
                    "\"transport\":\"%s\"}\n",
                    start + static_cast<long long>(dur * 1000), is_dp ? dp : tp, is_dp ? "dp" : "tp", rank, n,
                    is_dp ? ndp : 1, seq, funcs[fi], bytes / 2, bytes, start, dur, dur * 0.98, algbw,
                    algbw * 2.0 * (n - 1) / n, is_dp ? "network" : "intra_node");
      chunk += line;
      if (chunk.size() > (4u << 20)) flush();
    }
    std::snprintf(line, sizeof line, "{\"type\":\"end\",\"wall_ns\":%lld,\"dropped_total\":0}\n", t0 + per * 200000LL);
    chunk += line;
    flush();
    libdeflate_free_compressor(c);
  };
  const int workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int r = w; r < files; r += workers) write_rank(r);
    });
  for (auto& t : pool) t.join();
  std::printf("{\"records\": %ld, \"files\": %d, \"comms\": %d}\n", per * files, files, 8 + files / 8);
  return 0;
}
