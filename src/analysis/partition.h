// Bounded memory for the analyses that hold ops: when the input is larger than
// a memory budget, the reader spills every op to temporary files by
// communicator or by process (SpillSink), and the analysis then runs on
// batches of whole communicators (or processes) that fit the budget, folding
// each batch's result into the final one (Analysis::partition in analysis.h).
// A communicator is never split: a (comm, seq) instance needs every rank's op
// at once; nor a process (its GPUs' time in NCCL). One larger than the budget
// is analysed alone, over the budget (said on stderr).
//
// Contract: like every OpSink, one SpillSink is used by one reader thread;
// read_merged() then merges them into the first, which alone reads back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/analysis/reader.h"

namespace ni::analysis {

// What a batch holds whole (Analysis::partition): every op of a communicator
// (analyses that align a collective across its ranks) or of a process, by
// (host, pid), its rotated files together (analyses per process or GPU).
enum class Partition { kNone, kComm, kProcess };
std::string_view partition_unit(Partition p);  // "communicators", "processes"

// The budget: "--memory-limit" values like 512M, 2G, 1500000000 (bytes; K, M,
// G, T are powers of 1024). False on anything else.
bool parse_memory_limit(const std::string& s, std::uint64_t& bytes);
// The default budget: a quarter of the machine's physical memory, or of this
// process's cgroup limit when lower (a container, a SLURM job); at least 256 MiB.
std::uint64_t default_memory_limit();
// The lowest memory limit of this process's control groups: self_cgroup is
// /proc/self/cgroup's text, root the cgroup mount ("/sys/fs/cgroup"). cgroup
// v2 memory.max or v1 memory.limit_in_bytes, of the process's group and its
// parents (a SLURM job's limit sits on the job's group, above its step's); 0
// when none is set.
std::uint64_t cgroup_memory_limit(const std::string& self_cgroup, const std::string& root);
// The ops the files hold, over-estimated from their sizes (gzip about 20 bytes
// per record at the least, plain text about 150): whether to spill at all.
std::uint64_t estimate_ops(const std::vector<std::string>& files);
// Bytes an analysis of the in-memory path holds per op (the op, its index and
// per-instance state), for the estimate against the budget. The budget is for
// the ops and what is derived from them; the program, the read result and the
// readers' spill buffers (kBuckets x kChunkBytes each, ~6 MB) come on top.
inline constexpr std::uint64_t kBytesPerOpInMemory = 200;
// Ops per batch under a budget of `limit` bytes, at least 1.
std::size_t batch_ops(std::uint64_t limit);
// For a run in batches: the large blocks a batch allocates (its ops, the sort
// keys of each analysis) are taken from and given back to the heap, not
// mapped and unmapped each time (the kernel zeroes every fresh page: ~10 % of
// the CPU time of `report` at 40 M records). The process keeps what it freed
// (`report` at --memory-limit 768M: 715 -> 795 MB peak RSS).
void keep_freed_memory();

// Keeps nothing: for the analyses that need only the read result (Analysis::keeps_ops).
class DiscardSink : public OpSink {
 public:
  std::uint32_t op_fields() const override { return kOpFieldSeq; }
  void on_op(const Op&, const OpDetail*, const FileInfo&) override {}
  void merge(DiscardSink&&) {}
};

// Spills every op to an unlinked temporary file, by bucket (a communicator's
// or a process's, Partition), and reads them back in batches of whole buckets.
// With detail (Input::kOpsDetail), each op's CollectSink::Extra (its HCA use,
// its slowest channel) goes with it; with view detail too, what a trace shows
// of it (CollectSink::ViewCols: channel times, network bytes, user tag). An op
// is written against the one before it in its chunk (the fields it repeats
// left out, counters and times as varint deltas, three-decimal numbers as
// integers: ~20 bytes instead of the 88 of an Op), and comes back bit for bit.
class SpillSink : public OpSink {
 public:
  static constexpr int kBuckets = 256;           // a communicator's bucket: its hash, mixed
  static constexpr std::size_t kChunkBytes = 24576;  // bytes buffered per bucket before a write
  SpillSink(std::string dir, Partition by, bool detail = false, bool view = false);
  ~SpillSink() override;
  SpillSink(const SpillSink&) = delete;
  SpillSink& operator=(const SpillSink&) = delete;

  bool wants_detail() const override { return detail_; }
  void on_op(const Op& op, const OpDetail* d, const FileInfo& file) override;
  void merge(SpillSink&& o);

  // After the read (and merge): the ops spilled, and the first failure to
  // write or read the spill ("" none; then some ops are missing and the
  // analysis must not run).
  std::uint64_t ops() const { return ops_; }
  std::uint64_t spilled_bytes() const;
  const std::string& error() const { return error_; }

  // Calls fn with the ops (and with detail, their extra) of whole buckets,
  // batch after batch, each batch at most max_ops ops unless one bucket alone
  // is larger. Returns the number of batches (0 and error() on a read
  // failure). Within a bucket, the ops of one log file keep their order.
  // detail false: a spill with detail gives the ops alone (no extra, no
  // view), for a sweep that reads neither.
  std::size_t for_each_batch(std::size_t max_ops, const std::function<void(CollectSink&)>& fn, bool detail = true);
  // The largest batch for_each_batch made (ops).
  std::size_t largest_batch() const { return largest_; }

  static int bucket_of(std::uint64_t key) { return static_cast<int>((key * 0x9E3779B97F4A7C15ull) >> 56); }
  // A process's key: its host and pid (FileInfo), hashed.
  static std::uint64_t process_key(const FileInfo& f);

 private:
  struct Chunk {
    std::uint64_t offset;
    std::uint32_t bytes, count;
    std::uint16_t bucket;
  };
  struct File {  // one reader thread's spill: an unlinked temporary file
    int fd = -1;
    std::uint64_t size = 0;
    std::vector<Chunk> chunks;
    std::vector<std::string> devs;  // HCA names, by the ids its records use
    ~File();
  };
  // An op is written against the last op its chunk wrote of the same
  // communicator, kept for up to kSlots communicators at once (a process's file
  // interleaves its communicators' ops); one of none takes the victim slot.
  static constexpr unsigned kSlots = 8;
  struct Buf {
    std::string bytes;
    std::uint32_t count = 0;
    Op prev[kSlots];     // the ops written against (a chunk starts from Op{} in each)
    unsigned victim = 0;  // the slot an op of a communicator in none takes
  };
  void flush(int bucket);
  std::uint16_t dev_id(const std::string& dev);
  void encode(Buf& buf, const Op& op, const OpDetail* d);
  bool parse(const File& f, const char* p, const char* end, std::uint32_t count, CollectSink& into, bool detail);

  std::string dir_;
  Partition by_;
  bool detail_;
  bool view_;  // with detail: the trace's view of each op too
  std::uint32_t last_file_ = UINT32_MAX;  // kProcess: the file of the last op, and its bucket
  int last_bucket_ = 0;
  std::shared_ptr<File> own_;
  std::vector<std::shared_ptr<File>> files_;  // own_ first, then the merged sinks'
  std::map<std::string, std::uint16_t> dev_ids_;  // own_->devs, by name
  std::array<Buf, kBuckets> buf_;
  std::array<std::uint64_t, kBuckets> count_{};  // ops per bucket, every file
  std::uint64_t ops_ = 0;
  std::size_t largest_ = 0;
  std::string error_;
};

}  // namespace ni::analysis
