// What `trace` and `report` share: a sink that keeps every op with the detail
// the views need (HCA use, per-channel times, network bytes), and the mapping
// of ops to GPUs ("a process per rank" in the trace, a row per rank in the report).
//
// GPU identity. The logs carry no device id, so a GPU is identified as follows:
//  * a process whose every communicator has one local rank drives one GPU:
//    the GPU is (host, pid); its rank is meta job.global_rank when the launcher
//    set one (RANK, OMPI_COMM_WORLD_RANK, ...), else its rank in its widest
//    communicator (most ranks; ties: lowest hash);
//  * a process with several local ranks in some communicator drives several
//    GPUs: the (comm, rank) pairs of one communicator name, in the order their
//    comm records appear in the log, are GPU 0, 1, ... (NCCL initialises the
//    communicators of a process device by device: ncclCommInitAll, one thread or
//    loop iteration per GPU); unnamed communicators stand alone (their local
//    ranks in order). Such a GPU's rank is its rank in the process's widest
//    communicator, and the name says so ("tp rank 1 ... GPU 5").
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "src/analysis/reader.h"

namespace ni::analysis {

class ViewSink : public OpSink {
 public:
  // At most this many channel-time entries are kept (12 bytes each); beyond,
  // channel detail is dropped for the whole input (channel_capped).
  static constexpr std::size_t kMaxChannelEntries = 16u << 20;

  ViewSink() : coll(true) {}
  bool wants_detail() const override { return true; }
  void on_op(const Op& op, const OpDetail* d, const FileInfo& file) override;
  void merge(ViewSink&& o);

  using Ch = CollectSink::ChSpan;
  // An op read back from a spill with view detail (SpillSink): what on_op
  // keeps of an op and its detail, given as on_op would have kept it.
  void add(const Op& op, CollectSink::Extra&& e, const Ch* ch, std::size_t nch, std::uint64_t net_bytes,
           std::uint64_t tag);
  CollectSink coll;                  // ops + HCA use + slowest channel (the detectors' input)
  std::vector<Ch> ch;                // channel times of every op, concatenated
  std::vector<std::uint32_t> ch_end; // per op: end index into ch (begin: previous op's end)
  std::vector<std::uint64_t> net_bytes;  // per op: network send + recv bytes (0: none recorded)
  // The tagged ops only (NCCL 2.31+ user tags): (op index, tag), by index.
  std::vector<std::pair<std::uint32_t, std::uint64_t>> tagged;
  bool channel_capped = false;

  std::size_t ch_begin(std::size_t i) const { return i == 0 ? 0 : ch_end[i - 1]; }
  std::uint64_t tag_of(std::size_t i) const;  // 0: untagged

 private:
  // What both ways in keep of an op besides the op itself: its nch channel
  // times, which keep(out) appends to `out` (unless that would pass the cap),
  // its network bytes and its tag.
  template <class Keep>
  void add_detail(std::size_t nch, Keep keep, std::uint64_t net, std::uint64_t tag) {
    if (!channel_capped) {
      if (ch.size() + nch > kMaxChannelEntries) channel_capped = true;
      else keep(ch);
    }
    ch_end.push_back(static_cast<std::uint32_t>(ch.size()));
    net_bytes.push_back(net);
    if (tag != 0) tagged.push_back({static_cast<std::uint32_t>(ch_end.size() - 1), tag});
  }
};

struct Gpu {
  std::string host;
  std::int64_t pid = -1;   // OS process id
  int ordinal = 0;         // GPU index within the process (0 when it drives one GPU)
  int ngpus_in_process = 1;
  int cuda_dev = -1;       // CUDA device ordinal from the comm records ("cuda_dev"); -1 unknown
  std::string pci_bus_id;  // "" unknown
  int rank = -1;           // displayed rank (see the header comment)
  std::string rank_source; // "global_rank" or "rank in <comm>"
  int trace_pid = 0;       // 1-based, in order of (rank, host, pid, ordinal)
  std::string label;       // "host · rank r · pid p" (+ " GPU i" for multi-GPU processes)
};

struct GpuMap {
  std::vector<Gpu> gpus;                   // sorted; gpus[k].trace_pid == k + 1
  std::vector<std::uint32_t> op_gpu;       // per op index: index into gpus
  std::vector<std::uint64_t> comms;        // every comm, ordered by (name, hash)
  std::map<std::uint64_t, int> comm_index; // comm -> index in comms
  // (comm, comm rank) -> gpu index (first seen)
  std::map<std::pair<std::uint64_t, int>, std::uint32_t> by_comm_rank;
};

GpuMap map_gpus(const std::vector<Op>& ops, const ReadResult& res);

// Short display name of a comm: its name, or the first 8 hex digits of its hash.
std::string comm_short(std::uint64_t h, const ReadResult& res);

}  // namespace ni::analysis
