// Streaming reader for nccl-inspector logs (*.jsonl.gz, *.jsonl, gzip multi-member,
// possibly truncated) and upstream NCCL Inspector "v4.0" logs (*.log, *.log.gz).
//
// Contract: read_logs() reads files in parallel, one worker thread per sink;
// every op of a file goes to the sink of the worker that reads that file, so a
// sink is only ever called from one thread and needs no locking. Memory is
// bounded by the sinks: the reader holds one decompressed gzip member (or 1 MiB
// chunk) and one parser per worker. Damage (truncated member, cut last line, bad
// JSON, gzip data errors) is counted in FileInfo, never fatal.
//
// The pieces (namespace reader_detail), in the order a byte meets them:
//   reader_decode    file -> text -> lines (plain, gzip members, zlib salvage, truncation)
//   reader_scan      the fast flat-line scanner and its simdjson fallback
//   reader_values    one field's value as the reader's types (and parse_hash)
//   reader_fields    keys (schema.h) -> field ids, and Line, the fields of one line
//   reader_memo      the scanner's memos (key order, field text, string values)
//   reader_record    Line -> Op / FileInfo, per record type; one file's read
//   reader_upstream  NCCL Inspector's own "v4.0" format
//   reader_discover  which inputs are log files; reader_progress the progress bar
//   reader.cpp       read_logs: the worker threads and the totals
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/analysis/model.h"

namespace ni::analysis {

// Op fields a sink can do without (OpSink::op_fields): the reader's fast path
// then skips converting them and leaves them at their defaults.
enum OpFields : std::uint32_t {
  kOpFieldSeq = 1u << 0,        // Op::seq (converted anyway: the file's hang data needs it)
  kOpFieldChannels = 1u << 1,   // Op::nchannels
  kOpFieldChBalance = 1u << 2,  // Op::ch_balance
  kOpFieldsAll = (1u << 3) - 1,
};

class OpSink {
 public:
  virtual ~OpSink() = default;
  // Ask for OpDetail (hcas, ch_times, net) on every op; costs parse time.
  virtual bool wants_detail() const { return false; }
  // Ask for the op's user tag only: on_op gets an OpDetail whose user_tag alone
  // is set (a flat field: no nested value is parsed for it).
  virtual bool wants_tag() const { return false; }
  // The optional Op fields this sink reads (OpFields bits); validation reads all.
  virtual std::uint32_t op_fields() const { return kOpFieldsAll; }
  // Also give this sink an AlltoAll, Gather or Scatter op (kFlagAssembled) for
  // the Send/Recv records of one launch group (p2p `group`) that make one:
  // AlltoAll on every rank (a Send to and a Recv from every rank of the comm,
  // one size), Gather and Scatter at their root (Recv from every rank and a
  // Send to itself, or the reverse); GPU-timed parts with start times only.
  // Its bytes are the parts' sum in the larger direction, its duration the
  // parts' span, its busbw nccl-tests' ((n-1)/n), its seq the parts' group
  // number (the launch order on their thread). Given after its parts.
  virtual bool wants_assembled() const { return false; }
  // detail is nullptr unless wants_detail() or wants_tag(). file is the op's file (being read).
  virtual void on_op(const Op& op, const OpDetail* detail, const FileInfo& file) = 0;
};

struct ReadOptions {
  int progress = -1;   // -1: when stderr is a TTY; 0 never; 1 always
  bool validate = false;  // collect schema problems per file (slower)
};

struct ReadResult {
  std::vector<FileInfo> files;                       // same order as the input list
  std::map<std::uint64_t, std::string> comm_names;   // comm_hash -> name ("" unknown)
  std::string racks_from;                            // where FileInfo::rack came from ("" not assigned)
  std::uint64_t ops = 0;
  std::uint64_t lines = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t long_lines = 0;    // of bad_lines: over the line limit (reader_decode.h), skipped unread
  std::uint64_t no_duration = 0;   // op records without a duration (timing "none"), not analysed
  std::uint64_t unknown_records = 0;
  std::uint64_t truncated_files = 0;
  std::uint64_t corrupt_files = 0;
  std::uint64_t failed_files = 0;  // reading stopped by a failure of ours (out of memory): FileInfo::failed
  std::uint64_t uncompressed_bytes = 0;
  std::uint64_t compressed_bytes = 0;
  double seconds = 0;
};

struct Discovery {
  std::vector<std::string> files;
  std::string error;  // non-empty: a missing path or no log files found
};

// Expands each input (file or directory, searched recursively) to log files:
// *.jsonl.gz, *.jsonl, *.log, *.log.gz. Sorted for determinism. "-" (stdin)
// and other streams (pipes, FIFOs) are copied once to an unlinked temporary
// file and keep their name; gzip or plain text is told by content.
Discovery discover_files(const std::vector<std::string>& inputs);
// Opens an input for reading (a new descriptor; -1 and errno on failure):
// a stream discover_files() copied, or the file itself.
int open_input(const std::string& path);

// Reads every file; sinks.size() worker threads (>= 1).
ReadResult read_logs(const std::vector<std::string>& files, const ReadOptions& options,
                     const std::vector<OpSink*>& sinks);

// Convenience: one sink per hardware thread made by a factory, merged by the caller.
int default_threads();

// Parses "0x..." (any number of hex digits) or a decimal string; false if neither.
bool parse_hash(std::string_view s, std::uint64_t& out);

}  // namespace ni::analysis

#include <memory>
#include <utility>

namespace ni::analysis {

// Reads with `threads` sinks of type S (constructed from args), then merges them
// into the first with S::merge(S&&). S is only ever touched by one thread at a time.
template <class S, class... A>
std::unique_ptr<S> read_merged(const std::vector<std::string>& files, const ReadOptions& options,
                               int threads, ReadResult& result, const A&... args) {
  std::vector<std::unique_ptr<S>> sinks;
  std::vector<OpSink*> ptrs;
  const int n = threads < 1 ? 1 : threads;
  for (int i = 0; i < n; ++i) {
    sinks.push_back(std::make_unique<S>(args...));
    ptrs.push_back(sinks.back().get());
  }
  result = read_logs(files, options, ptrs);
  for (std::size_t i = 1; i < sinks.size(); ++i) sinks[0]->merge(std::move(*sinks[i]));
  return std::move(sinks[0]);
}

}  // namespace ni::analysis

// CollectSink lives in its own file; callers of the reader find it here too.
#include "src/analysis/collect_sink.h"
