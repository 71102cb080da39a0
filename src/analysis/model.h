// The analyzer's record model: one compact struct per op (coll, p2p, ce) and
// per-file information (meta, comms, stats, marks, end). Strings that repeat on
// every op (func, algo, proto, timing) become small enums; host/pid live in
// FileInfo and ops point at their file by index.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ni::analysis {

enum class OpKind : std::uint8_t { kColl, kP2p, kCe };

// Known NCCL function names; anything else is kOther (the raw name is lost on
// purpose: ops are compact; validate reports unknown names).
enum class Func : std::uint8_t {
  kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kAllGatherV,
  kGather, kScatter, kSendRecv, kSend, kRecv, kOther, kCount_
};
enum class Algo : std::uint8_t {
  kRing, kTree, kCollnetDirect, kCollnetChain, kNvls, kNvlsTree, kPat, kUnknown, kCount_
};
enum class Proto : std::uint8_t { kLL, kLL128, kSimple, kUnknown, kCount_ };
enum class Timing : std::uint8_t {
  kGpu, kProxyCpu, kNetCpu, kEnqueueCpu, kNone, kCudaEvent,
  kKernelGpu, kKernelCpu, kCollectiveCpu,  // upstream Inspector v4.0 sources
  kUnknown, kCount_
};

// Timed by the CPU (the proxy thread's view of the kernel, network progress,
// the enqueue; upstream's kernel_cpu and collective_cpu): such a time says when
// the CPU saw the op, not how long its bytes moved. The reader gives these ops
// no bandwidth, whatever their line says (docs/analysis.md).
constexpr bool cpu_timed(Timing t) {
  return t == Timing::kProxyCpu || t == Timing::kNetCpu || t == Timing::kEnqueueCpu || t == Timing::kKernelCpu ||
         t == Timing::kCollectiveCpu;
}

// Timed by the GPU (ours, or upstream's kernel_gpu): kernel start to end,
// waiting for the peers included; or a copy-engine collective's copies
// between two CUDA events on their stream (cuda_event), its syncs included.
constexpr bool gpu_timed(Timing t) {
  return t == Timing::kGpu || t == Timing::kKernelGpu || t == Timing::kCudaEvent;
}

// How an op was timed, in three classes (summary and compare keep them apart).
enum class TimedBy : std::uint8_t { kGpu = 0, kCpu = 1, kUnknown = 2 };
constexpr TimedBy timed_by(Timing t) {
  return cpu_timed(t) ? TimedBy::kCpu : gpu_timed(t) ? TimedBy::kGpu : TimedBy::kUnknown;
}

// The op's duration is only its enqueue on the CPU (no GPU timer: NCCL before
// ABI v4 timing, copy-engine collectives): no measure of the op's run time, so
// duration-based analyses (outliers, change points, bimodality, per-HCA time,
// comm time per iteration) leave such ops out and say how many.
constexpr bool duration_is_enqueue(Timing t) { return t == Timing::kEnqueueCpu; }

std::string_view to_string(Func f);
std::string_view to_string(Algo a);
std::string_view to_string(Proto p);
std::string_view to_string(Timing t);
std::string_view to_string(OpKind k);
// Symmetric-kernel plans (NCCL 2.31+: a record with sym, and its
// kernel_variant): each variant is an Algo value of its own from kSymBase on,
// registered process-wide on first sight (thread-safe), so grouping by algo
// keeps variants apart. to_string gives "sym:" and NCCL's algo for it, the
// variant after its first '_' ("AllReduce_AGxLL_R" -> "sym:AGxLL_R"; "sym"
// when the record named none). kUnknown once kMaxSym variants are registered.
inline constexpr std::uint8_t kSymBase = 32;
inline constexpr int kMaxSym = 255 - kSymBase;
Algo sym_algo(std::string_view variant);
constexpr bool is_sym(Algo a) { return static_cast<std::uint8_t>(a) >= kSymBase; }
// The protocol as shown: a symmetric kernel has none (NCCL gives "" for it),
// shown as "" rather than "unknown".
inline std::string_view proto_label(Algo a, Proto p) { return is_sym(a) && p == Proto::kUnknown ? std::string_view() : to_string(p); }
std::string_view sym_variant(Algo a);  // the variant's full name; "" when not one

Func parse_func(std::string_view s);
Algo parse_algo(std::string_view s);
Proto parse_proto(std::string_view s);
Timing parse_timing(std::string_view s);

// Op flags.
inline constexpr std::uint8_t kFlagReclaimed = 1;
inline constexpr std::uint8_t kFlagPartial = 2;
inline constexpr std::uint8_t kFlagGraph = 4;
inline constexpr std::uint8_t kFlagHasStart = 8;  // start_wall_ns is an op time (not upstream dump time)
inline constexpr std::uint8_t kFlagUpstream = 16;  // read from an upstream Inspector v4.0 .log
inline constexpr std::uint8_t kFlagApiOnly = 32;   // a collective NCCL showed at API level only (log-format.md)
// An AlltoAll/Gather/Scatter the reader assembled from the Send/Recv records of
// one launch group (OpSink::wants_assembled): not a record of the log.
inline constexpr std::uint8_t kFlagAssembled = 64;
// NCCL's KernelCh stamps were another work's (log-format.md kernel_desync): CPU-timed instead.
inline constexpr std::uint8_t kFlagKernelDesync = 128;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Op {
  std::uint64_t comm_hash = 0;
  std::int64_t start_wall_ns = 0;
  std::uint64_t bytes = 0;
  std::uint64_t seq = 0;
  double dur_us = kNaN;
  double busbw_gbs = kNaN;   // NaN when absent (n=1, unknown dtype, ...)
  float ch_balance = -1.0f;  // <0 when absent
  // Kernel phases (NCCL 2.31+, the record's phases): the median channel's
  // initial_sync, the time it waited for its peers (us); NaN when absent.
  float sync_us = std::numeric_limits<float>::quiet_NaN();
  std::int32_t rank = -1;
  std::int32_t nranks = 0;
  std::int32_t peer = -1;
  std::uint32_t file_idx = 0;  // index into the reader's FileInfo list
  std::uint16_t nchannels = 0; // number of channels that ran (channels array) or nchannels
  std::uint16_t nnodes = 0;
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  Algo algo = Algo::kUnknown;
  Proto proto = Proto::kUnknown;
  Timing timing = Timing::kUnknown;
  std::uint8_t flags = 0;
  std::uint8_t transport = 0;  // 0 unknown, 1 intra_node, 2 network
  // NCCL 2.31.2, the head of a symmetric plan of several tasks (sym_plan_tasks,
  // at most 255): its duration is the plan's kernel time; 0 otherwise.
  std::uint8_t sym_plan = 0;

  // The share of a GPU-timed kernel time the median channel waited for its
  // peers (initial_sync / duration, %, at most 100); NaN without phases or GPU time.
  double wait_pct() const {
    if (!std::isfinite(sync_us) || !gpu_timed(timing) || !(dur_us > 0)) return kNaN;
    return std::min(100.0, 100.0 * sync_us / dur_us);
  }
  bool has_start() const { return (flags & kFlagHasStart) != 0; }
  bool has_busbw() const { return !std::isnan(busbw_gbs); }
};

// Transient per-op detail, valid only during the sink callback; filled only when
// the sink asks for it (OpSink::wants_detail), so the fast path skips it.
struct HcaUse {
  std::string dev;
  std::uint64_t bytes = 0;
  double wire_us = kNaN;  // its send work requests' time on the wire (hcas[].wire_us); NaN unknown
};
struct ChTime {
  int channel = 0;
  double start_off_us = 0;
  double dur_us = 0;
};
struct OpDetail {
  std::vector<HcaUse> hcas;
  std::vector<ChTime> ch_times;
  // ch_slow: the longest channel, its time and the median channel time (us).
  int slow_ch = -1;
  double slow_us = 0, median_us = 0;
  double net_wait_us = kNaN;
  std::uint64_t net_send_bytes = 0, net_recv_bytes = 0;  // "net" object (network events), 0 when absent
  std::uint64_t user_tag = 0;  // the application's tag for the call (NCCL 2.31+), 0 when absent
  // Kernel phases (NCCL 2.31+): per phase (initial_sync, compute, final_sync)
  // the shortest, median and longest channel time in us, NaN when absent.
  std::array<std::array<double, 3>, 3> phases{{{kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN}, {kNaN, kNaN, kNaN}}};
  void clear() {
    hcas.clear();
    ch_times.clear();
    slow_ch = -1;
    net_wait_us = kNaN;
    net_send_bytes = net_recv_bytes = 0;
    user_tag = 0;
    for (auto& p : phases) p = {kNaN, kNaN, kNaN};
  }
};

struct StatsInfo {  // last (cumulative) stats record of a file
  std::int64_t wall_ns = 0;
  std::uint64_t records_written = 0;
  std::uint64_t ops_completed = 0;
  std::uint64_t records_pending = 0;  // completed, not yet drained (0 in a final record)
  std::uint64_t reclaimed_ops = 0;
  std::map<std::string, std::uint64_t> dropped;   // reason -> count
  std::map<std::string, std::uint64_t> filtered;  // reason -> count
  std::map<std::string, std::uint64_t> faults;
  bool present = false;
};

struct MarkInfo {
  std::int64_t wall_ns = 0;
  std::string label;
  std::uint64_t user_tag = 0;  // "tag" records: the tag the label names
};

struct ClockInfo {  // a "clock" record: the GPU->wall estimate of a comm moved or became valid
  std::uint64_t comm_hash = 0;
  std::int64_t wall_ns = 0;
  std::int64_t uncertainty_ns = -1;  // -1 when absent
  std::int64_t samples = 0;
};

struct CommInfo {
  std::uint64_t comm_hash = 0;
  std::string name;
  int rank = -1;
  int nranks = 0;
  int nnodes = 0;
  int cuda_dev = -1;       // the comm's CUDA device ordinal (comm record "cuda_dev"); -1 unknown
  std::string pci_bus_id;  // its PCI bus id; "" unknown
};

// ---- what `hangs` reads (hangs.h), per communicator rank of a file: the
// plugin's progress lines (docs/log-format.md, `progress`), comm_end, and a
// little of every collective record. Small and bounded per comm rank.
struct StuckNet {  // a stuck op's open ProxyOps with one peer, one direction
  int peer = -1;
  bool send = false;
  std::uint32_t proxy_ops = 0, posted = 0, done = 0;
};
struct StuckOpInfo {  // an op in flight for HANG_MS or more (or reclaimed by the timeout)
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  std::string func_name;       // as written
  std::uint64_t seq = 0;
  std::int64_t issue = -1;     // collectives: place in the comm's issue order; -1 unknown
  int peer = -1;               // p2p: the peer; rooted collectives: the root
  std::uint64_t bytes = 0;
  std::string dtype;
  std::int64_t enqueue_wall_ns = 0;
  int nchannels = 0;
  std::uint64_t ch_started = 0, ch_done = 0;  // channel masks (ids < 64)
  bool reclaimed = false;      // from a reclaimed op record, not a progress line
  std::vector<StuckNet> net;
};
struct CollSig {  // a completed collective, for desync checks
  std::int64_t issue = -1;
  Func func = Func::kOther;
  std::uint64_t seq = 0, bytes = 0;
  int root = -1;
};
struct CommRankProgress {
  std::uint64_t comm_hash = 0;
  int rank = -1, nranks = 0;
  bool finalized = false;            // comm_end seen
  bool has_progress = false;         // a progress line seen
  std::int64_t progress_wall_ns = 0; // the latest one's
  std::uint64_t issued = 0;
  std::vector<std::pair<std::string, std::uint64_t>> started;  // func -> last seq started
  std::uint64_t p2p_started = 0;
  std::string last_func;               // the function of collective issued - 1
  std::int64_t quiet_ms = -1;          // the state had not changed for this long (-1 unknown)
  std::uint64_t api_issued = 0;        // collective calls (CollApi, ABI v5+; 0 unknown)
  std::string last_api_func;
  std::uint32_t in_flight = 0;
  std::vector<StuckOpInfo> stuck;      // the latest progress line's
  // Every op any progress line listed as stuck, as last seen (the timeout
  // reclaims a hung op after NCCL_INSPECTOR_OP_TIMEOUT_MS and later lines no
  // longer list it; its channels and network steps are kept here). The 32
  // most recently seen.
  std::vector<StuckOpInfo> seen_stuck;
  std::int64_t p2p_done_wall_ns = 0;   // the latest P2P op completed by its events (start or enqueue)
  std::vector<StuckOpInfo> reclaimed;  // reclaimed op records (the last 16)
  std::int64_t done_issue = -1;        // highest issue of a collective completed by its events
  std::int64_t done_wall_ns = 0;       // the latest such completion's start (or enqueue)
  std::uint64_t done_colls = 0;
  std::int64_t first_wall_ns = 0;      // its first op's time (0 none)
  static constexpr std::size_t kRecent = 32;
  std::array<CollSig, kRecent> recent{};  // the last completed collectives, ring by done_colls
};

enum class FileFormat : std::uint8_t { kUnknown, kOurs, kUpstreamV4 };

// The longest line the reader reads, far more than the longest record the
// plugin writes (docs/log-format.md: a few KiB at most). A longer line is
// skipped unread and counted (FileInfo::long_lines, and as a bad line): an
// endless line, which is what a gzip bomb is, then costs no memory.
inline constexpr std::size_t kMaxLineBytes = 1u << 20;
// Mark labels and comm names are kept up to this many bytes (the rest is cut).
inline constexpr std::size_t kMaxLabelBytes = 256;

struct FileInfo {
  std::string path;
  FileFormat format = FileFormat::kUnknown;
  std::int64_t format_version = 0;           // ours: format_version; upstream: 4
  std::string format_string;          // ours: "nccl-inspector-log"; upstream: "v4.0"
  std::string plugin_version;
  std::string host;
  std::string rack;                   // from --host-map or the hostname (locate.h); "" unknown
  std::int64_t pid = -1;
  std::int64_t file_seq = 0;
  std::string instance;  // meta.instance: one plugin output (its rotated files share it); "" in older logs
  int abi_version = 0;
  std::string job_id;
  int global_rank = -1;               // meta job.global_rank (the process's rank in the job), -1 unknown
  bool gzip = false;
  bool truncated = false;             // gzip stream ended early or last line cut
  bool corrupt = false;               // gzip data error (rest of the file unreadable)
  bool failed = false;                // reading stopped early by the reader's own failure (out of
                                      // memory): what was read before stays, error says why
  bool has_end = false;               // clean shutdown "end" record seen
  bool meta_first = false;            // first line was a meta record (ours)
  std::uint64_t dropped_total_end = 0;
  std::uint64_t lines = 0;
  std::uint64_t ops = 0;
  std::uint64_t truncated_lines = 0;  // a cut last line (counted, not a bad line)
  std::uint64_t bad_lines = 0;        // not JSON or not an object or missing required fields
  std::uint64_t long_lines = 0;       // of bad_lines: over the reader's line limit, skipped unread
  std::uint64_t no_duration = 0;      // valid op records without dur_us (timing "none"): counted, not analysed
  std::uint64_t unknown_records = 0;  // valid JSON with an unknown "type"
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
  std::map<std::string, std::uint64_t> unknown_types;
  std::vector<CommInfo> comms;
  std::vector<MarkInfo> marks;
  std::vector<MarkInfo> tag_names;    // "tag" records (ncclInspectorNameTag), in file order (capped at 65536)
  std::vector<ClockInfo> clocks;      // clock records, in file order (capped at 4096 per file)
  std::vector<CommRankProgress> progress;  // per comm rank seen in the file (hangs.h)
  std::int64_t last_wall_ns = 0;      // the latest time any line of the file gave (liveness)
  std::int64_t hang_ms = -1;          // meta config NCCL_INSPECTOR_HANG_MS (-1: older plugin / unknown)
  StatsInfo stats;
  std::string error;                  // why reading stopped early ("" when fine)
  std::vector<std::string> problems;  // schema problems (validate), capped
};

// Power-of-two size bucket: bucket b holds bytes in [2^b, 2^(b+1)); bytes 0 -> -1.
inline int size_bucket(std::uint64_t bytes) {
  if (bytes == 0) return -1;
  return 63 - __builtin_clzll(bytes);
}
std::string size_bucket_label(int bucket);  // "1MiB" (lower bound), "0B" for -1
std::string format_bytes(double bytes);
std::string hex_hash(std::uint64_t h);       // "0x%016x"
// Sorted ranks as text, runs of three or more as a-b: "0,1,4-7".
std::string rank_list(const std::vector<int>& sorted);

}  // namespace ni::analysis
