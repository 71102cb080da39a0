// Record mapping, part 1: the keys the reader knows (include/nccl_inspector/schema.h,
// ours and upstream v4.0's) as small field ids, and Line, the fields of one line.
//
// Contract: field_id() maps a key to its Field (kNone: a key the analyzer does
// not read). Line is the union of every record type's fields, reset per line;
// its string_views point into the line buffer (or a DOM parser), so a Line is
// only valid while its line is being mapped.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "src/analysis/model.h"

namespace ni::analysis::reader_detail {

// The key -> handler lookup happens once per key position and is then cached
// (reader_memo.h): the writer repeats its key order on every line.
enum class Field : std::uint8_t {
  kNone, kAlgo, kAbi, kBytes, kBusbw, kCommHash, kCommName, kChannels, kChBalance, kChSlow, kChTimes, kCollPerf,
  kDurUs, kDropped, kDroppedTotal, kFunc, kFormat, kFormatVersion, kFileSeq, kFiltered, kFaults, kGraph,
  kHost, kHcas, kHeader, kJob, kLabel, kMetadata, kNranks, kNnodes, kNchannels, kNet, kOpsCompleted,
  kProto, kPeer, kPid, kPluginVersion, kPartial, kP2pPerf, kRank, kReclaimed, kRecordsWritten,
  kReclaimedOps, kSeq, kStartWallNs, kType, kTiming, kTransport, kWallNs, kUncertainty, kSamples,
  kCudaDev, kPciBusId, kIssue, kIssued, kStarted, kP2pStarted, kInFlight, kStuck, kRoot, kEnqueueWallNs, kConfig,
  kLastFunc, kQuietMs, kApiIssued, kLastApiFunc, kIssueOff, kInstance, kRecordsPending, kApiOnly, kGroupNo,
  kKernelDesync, kUserTag, kSym, kKernelVariant, kPhases, kSymPlanTasks
};

Field field_id(std::string_view key);

// The top-level objects of an upstream v4.0 line. Their strings must outlive
// several nested parses, so such a line goes whole through simdjson's DOM.
inline bool is_upstream_section(Field id) {
  return id == Field::kHeader || id == Field::kMetadata || id == Field::kCollPerf || id == Field::kP2pPerf;
}

// Fields of one line, the union over record types. Reset per line.
struct Line {
  std::string_view type;
  bool has_type = false;
  // common / op
  std::uint64_t comm_hash = 0;
  bool has_hash = false;
  std::string_view comm_name;
  bool has_comm_name = false;
  std::int64_t rank = -1, nranks = 0, nnodes = 0, peer = -1, abi = 0;
  std::int64_t group = 0;  // p2p: the launch group (0: none written)
  std::uint64_t user_tag = 0;  // op: the application's tag (NCCL 2.31+; 0: none written)
  bool sym = false;                 // coll: a symmetric kernel ran it (NCCL 2.31+)
  std::string_view kernel_variant;  // coll with sym: NCCL's id of that kernel
  std::uint64_t sym_plan_tasks = 0;  // coll: a symmetric plan's head, the tasks its kernel time covers
  float sync_us = std::numeric_limits<float>::quiet_NaN();  // op: initial_sync's median channel (phases)
  std::int64_t wall_ns = 0;
  bool has_wall = false;
  // Fast path: wall_ns's number token, converted only for the records that use it
  // (ops do not: a 19-digit parse saved per op).
  bool wall_pending = false;
  std::string_view wall_raw;
  std::uint64_t seq = 0;
  bool has_seq = false;
  std::string_view func, algo, proto, timing, transport;
  bool has_func = false;
  std::uint64_t bytes = 0;
  bool has_bytes = false;
  std::int64_t nchannels = 0, channels_len = -1;
  std::int64_t start_wall_ns = 0;
  bool has_start = false;
  double dur_us = kNaN, busbw = kNaN, ch_balance = -1;
  bool reclaimed = false, partial = false, graph = false, api_only = false, kernel_desync = false;
  // meta
  std::string_view format, plugin_version, host, job_id, instance;
  std::int64_t format_version = 0, pid = -1, file_seq = 0, global_rank = -1;
  // comm: its GPU
  std::int64_t cuda_dev = -1;
  std::string_view pci_bus_id;
  // clock
  std::int64_t uncertainty_ns = -1, samples = 0;
  // stats (the counter objects live in the record reader: Line stays trivially copyable)
  std::uint64_t records_written = 0, ops_completed = 0, reclaimed_ops = 0, records_pending = 0;
  // mark / end
  std::string_view label;
  std::uint64_t dropped_total = 0;
  // hangs: op records' issue, root, enqueue time; progress lines' counters
  // (their `started` and `stuck` go to the record reader's own vectors);
  // meta's NCCL_INSPECTOR_HANG_MS
  std::int64_t issue = -1, root = -1, enqueue_wall_ns = 0;
  std::int64_t issue_off = 0;
  bool has_issue_off = false;
  std::uint64_t issued = 0, p2p_started = 0, in_flight = 0, api_issued = 0;
  std::string_view last_api_func;
  std::int64_t hang_ms = -1, quiet_ms = -1;
  std::string_view last_func;
  // upstream v4.0
  bool upstream = false;
  std::string_view up_version;
};
static_assert(std::is_trivially_copyable_v<Line>);

}  // namespace ni::analysis::reader_detail
