// Test-side writer of nccl-inspector logs (from include/nccl_inspector/schema.h)
// and upstream Inspector v4.0 logs, and a job generator with planted faults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ni::test {

// Writes lines as gzip, one member per `lines_per_member` lines. cut_bytes > 0
// drops that many bytes from the end (a killed writer).
void write_gz(const std::string& path, const std::vector<std::string>& lines, std::size_t lines_per_member = 1000,
              std::size_t cut_bytes = 0);
// Writes text as gzip members of member_bytes uncompressed bytes each, split
// wherever that falls (lines straddle members).
void write_gz_split(const std::string& path, const std::string& text, std::size_t member_bytes);
void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

enum class Fault { kNone, kStraggler, kSlowHca, kDegradedChannel, kCongestion, kBimodal };

struct JobSpec {
  Fault fault = Fault::kNone;
  int hosts = 2;
  int ranks_per_host = 4;
  int iterations = 400;
  std::uint64_t seed = 1;
  double slowdown = 1.0;      // multiply every duration (compare tests)
  bool marks = false;         // a mark record per iteration
  int straggler_rank = 5;     // kStraggler / kDegradedChannel / kSlowHca (its HCA)
  double straggler_us = 40;   // kStraggler
  int congestion_first = 150, congestion_last = 210;  // kCongestion iterations
  // Every timestamp of one host shifted (its processes' GPU clock estimate is
  // off): its ranks start "late" by the clock, but nobody waits for them.
  double clock_offset_us = 0;
  int clock_offset_host = 1;
  bool drops = true;  // rank 0's stats count 7 records dropped (ring_full)
  // Rank 1's stats count this many more records as written than its file
  // holds (a rotated file not given).
  std::uint64_t unread = 0;
};

struct JobTruth {
  std::uint64_t ops = 0;       // op records written
  std::uint64_t comm_dp = 0;   // hash of the "dp" communicator (all ranks)
  std::uint64_t comm_tp = 0;   // hash of "tp0"/"tp1" are derived: comm_tp + host
  std::vector<std::string> files;
};

// Writes one file per rank (host<h>-pid<p>.jsonl.gz) under dir.
JobTruth write_job(const std::string& dir, const JobSpec& spec);

// Upstream Inspector v4.0 .log (plain JSON lines), n collectives and p2p ops.
void write_upstream_log(const std::string& path, int rank, int nranks, int n);

std::string temp_dir(const std::string& name);  // fresh empty dir under the test tmp dir

}  // namespace ni::test
