// Prometheus textfile writer (node_exporter's textfile collector).
//
// Aggregates every op the dump thread drains into per comm / op / algo-proto /
// power-of-two size bucket histograms of latency (seconds) and bus bandwidth
// (bytes per second), plus counters of ops, records written and drops, and
// rewrites <dir>/nccl_inspector_<host>_<pid>.prom atomically (a fresh
// temporary ".nccl_inspector_<host>_<pid>.prom.<random>.tmp" in the same
// directory, created with O_EXCL|O_NOFOLLOW, then rename; safe_file.h). Series of a finalized communicator disappear at the next write; at
// stop the last file is left in place with its final values (the collector's
// node_textfile_mtime_seconds shows it is stale; job epilogs may delete it).
//
// Every family has # HELP and # TYPE, base units, _total on counters, no
// client timestamps: `promtool check metrics` passes (tests/output/prom_test).
//
// Contract: single-threaded (the dump thread).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/core/record.h"
#include "src/core/runtime.h"
#include "src/output/encoder.h"
#include "src/output/gzip_log.h"
#include "src/output/io.h"

namespace ni::out {

struct PromIdentity {
  std::string job;   // job id (JobInfo::job_id)
  std::string host;
  int64_t pid = 0;
  std::string version;
  std::string global_rank;    // the launcher's rank of the process ("" unknown: the pid labels it)
  bool extra_labels = false;  // NCCL_INSPECTOR_PROM_EXTRA_LABELS: pid and comm_hash too
};

class PromWriter {
 public:
  static constexpr int kDurBuckets = 19;
  static constexpr int kBwBuckets = 14;

  PromWriter(Io& io, std::string dir, PromIdentity id, Logger log);

  void set_comm(const CommInfo& c);
  // One drained record (marks are ignored). comm may be null.
  void add(const OpRecord& r, const CommInfo* comm);
  // Renders and replaces the file atomically. Returns true on success.
  bool write(const StatsSnapshot& s, int64_t wall_ns, uint64_t now_ns);
  std::string render(const StatsSnapshot& s, int64_t wall_ns) const;

  const std::string& path() const { return path_; }
  size_t series() const { return series_.size(); }

 private:
  struct Series {
    uint64_t ops = 0;
    uint64_t dur_count = 0;
    double dur_sum = 0;
    uint64_t dur_bucket[kDurBuckets] = {};
    uint64_t bw_count = 0;
    double bw_sum = 0;
    uint64_t bw_bucket[kBwBuckets] = {};
  };
  // One histogram of a Series, as rendered.
  struct HistView {
    uint64_t count;
    double sum;
    const uint64_t* buckets;  // per bucket (not cumulative)
    int n;
    const char* const* le_text;
  };
  // The op series are keyed by their labels (label_id()), not by communicator
  // instance: a communicator created again under the same name and rank goes
  // on counting in the same series, and the series of an ended one stay, so
  // the last file of a job still holds every total. At most kMaxCommLabels
  // (name, rank) pairs; the rest share comm_name="other".
  static constexpr size_t kMaxCommLabels = 64;
  uint32_t label_id(const CommInfo& c);

  void put_identity(Buf& b, int64_t wall_ns) const;
  void put_counters(Buf& b, const StatsSnapshot& st) const;
  void put_ops(Buf& b) const;
  template <typename Pick>
  void put_histogram(Buf& b, std::string_view name, std::string_view help, Pick pick) const;
  std::string op_labels(uint64_t key) const;

  Io& io_;
  std::string dir_;
  std::string path_;
  std::string tmp_stem_;  // temporary files: <stem>.<random>.tmp
  PromIdentity id_;
  std::string base_labels_;  // host="..",nccl_job="..",global_rank=".." (or pid="..")
  Logger log_;
  std::unordered_map<uint32_t, uint32_t> comm_label_;      // comm_id -> label id
  std::map<std::string, uint32_t> label_ids_;              // labels text -> label id
  std::vector<std::string> label_text_;                    // label id -> rank="..",comm_name=".."[,comm_hash=".."]
  std::map<uint64_t, Series> series_;  // ordered: stable output
  bool failing_ = false;
  bool dir_checked_ = false;  // warn_if_unsafe_dir() ran after the first write
  uint64_t retry_at_ns_ = 0;
};

// Escapes a Prometheus label value: \ -> \\, " -> \", newline -> \n; invalid
// UTF-8 bytes become '?'.
std::string prom_escape(std::string_view v);

}  // namespace ni::out
