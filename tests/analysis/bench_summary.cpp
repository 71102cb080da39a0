// Benchmark (not a test): `summary` records/s on a generated multi-million-record dump.
// Usage: bench_summary [records=4000000] [files=8] [dir=/tmp/ni_bench] [runs=1]   (records 0: reuse dir)
// Each configuration (all cores, then one thread) runs `runs` times; every run prints
// its wall-clock rate and its rate per CPU-second (user + system time of the process,
// getrusage), which on a shared machine is the robust per-core figure: it does not
// count the time a thread waited for a core.
#include <libdeflate.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/summary.h"

namespace ana = ni::analysis;

int main(int argc, char** argv) {
  const long records = argc > 1 ? std::atol(argv[1]) : 4000000;
  const int files = argc > 2 ? std::atoi(argv[2]) : 8;
  const std::string dir = argc > 3 ? argv[3] : "/tmp/ni_bench";
  const int repeat = argc > 4 ? std::max(1, std::atoi(argv[4])) : 1;
  std::filesystem::create_directories(dir);
  libdeflate_compressor* c = libdeflate_alloc_compressor(1);
  std::size_t on_disk = 0, raw = 0;
  for (int f = 0; f < files && records > 0; ++f) {  // records 0: reuse the dump in dir
    const std::string path = dir + "/host" + std::to_string(f / 4) + "-pid" + std::to_string(f) + ".jsonl.gz";
    std::ofstream out(path, std::ios::binary);
    std::string chunk;
    auto flush = [&] {
      std::string buf(libdeflate_gzip_compress_bound(c, chunk.size()), '\0');
      const std::size_t n = libdeflate_gzip_compress(c, chunk.data(), chunk.size(), buf.data(), buf.size());
      out.write(buf.data(), static_cast<std::streamsize>(n));
      on_disk += n;
      raw += chunk.size();
      chunk.clear();
    };
    char line[1024];
    std::snprintf(line, sizeof line,
                  "{\"type\":\"meta\",\"wall_ns\":1,\"format\":\"nccl-inspector-log\",\"format_version\":1,\"host\":\"host%d\",\"pid\":%d}\n",
                  f / 4, f);
    chunk += line;
    const long per = records / files;
    for (long i = 0; i < per; ++i) {
      const char* funcs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
      const unsigned long long bytes = 1ULL << (10 + (i % 17));
      const double dur = 10.0 + static_cast<double>(bytes) / 2e4 * (1.0 + static_cast<double>(i % 13) / 50.0);
      std::snprintf(line, sizeof line,
                    "{\"type\":\"coll\",\"wall_ns\":%ld,\"comm_id\":1,\"comm_hash\":\"0x%016llx\",\"comm_name\":\"dp\","
                    "\"rank\":%d,\"nranks\":16,\"nnodes\":2,\"seq\":%ld,\"func\":\"%s\",\"dtype\":\"float32\","
                    "\"count\":%llu,\"bytes\":%llu,\"algo\":\"RING\",\"proto\":\"%s\",\"nchannels\":8,"
                    "\"channels\":[0,1,2,3,4,5,6,7],\"start_wall_ns\":%ld,\"dur_us\":%.3f,\"max_ch_us\":%.3f,"
                    "\"timing\":\"gpu\",\"algbw_gbs\":%.3f,\"busbw_gbs\":%.3f,\"ch_util\":0.91,\"ch_balance\":0.95,"
                    "\"transport\":\"network\"}\n",
                    1767225600000000000L + i * 1000, 0x8d3a5c7e91b20f44ULL + static_cast<unsigned long long>(i % 3), f, i,
                    funcs[i % 4], bytes / 4, bytes, (i % 2) ? "SIMPLE" : "LL128", 1767225600000000000L + i * 1000, dur,
                    dur * 0.98, static_cast<double>(bytes) / dur / 1e3, static_cast<double>(bytes) / dur / 1e3 * 1.875);
      chunk += line;
      if (chunk.size() > (1u << 20)) flush();
    }
    flush();
  }
  libdeflate_free_compressor(c);
  std::printf("generated %ld records in %d files: %.1f MB JSON, %.1f MB gzip (%.0f B/record JSON)\n", records, files,
              static_cast<double>(raw) / 1e6, static_cast<double>(on_disk) / 1e6,
              static_cast<double>(raw) / static_cast<double>(records));
  const auto d = ana::discover_files({dir});
  // All cores first (scripts/bench reads the first "M records/s"), then one thread (per-core figure).
  std::vector<int> runs = {ana::default_threads()};
  if (runs[0] != 1) runs.push_back(1);
  auto cpu_seconds = [] {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return sec(u.ru_utime) + sec(u.ru_stime);
  };
  for (int threads : runs) {
    for (int rep = 0; rep < repeat; ++rep) {
      ana::ReadOptions ro;
      ro.progress = 0;
      ana::SummaryOptions so;
      ana::ReadResult res;
      const double c0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      auto s = ana::read_merged<ana::SummarySink>(d.files, ro, threads, res, so);
      ana::Report r;
      ana::add_summary_sections(r, *s, res, so);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpu_seconds() - c0;
      const double ops = static_cast<double>(res.ops);
      std::printf("summary, %d thread(s): %llu ops in %.3f s = %.2f M records/s (%.2f M/s per thread), %zu groups; "
                  "%.3f CPU-s = %.2f M records per CPU-second\n",
                  threads, static_cast<unsigned long long>(res.ops), sec, ops / sec / 1e6, ops / sec / 1e6 / threads,
                  s->groups.size(), cpu, ops / cpu / 1e6);
    }
  }
  return 0;
}
