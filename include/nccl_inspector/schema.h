// The nccl-inspector log schema: the single contract between the plugin's
// writer (src/output) and every reader (src/analysis, users' jq/pandas/DuckDB).
//
// A log file is gzip (possibly many concatenated gzip members) of JSON lines.
// Every line is one self-contained JSON object with a "type" field. The first
// line of every file is a "meta" record. Numbers are always finite JSON
// numbers; 64-bit identifiers that may exceed 2^53 (comm hashes) are written as
// "0x"-prefixed 16-digit hex strings so pandas/jq never round them.
// docs/log-format.md documents every field with an example of each record.
#pragma once

#include <string_view>

#include "include/nccl_inspector/counters.h"

namespace ni::schema {

inline constexpr std::string_view kFormatName = "nccl-inspector-log";
// Bump on any incompatible change; readers accept every version <= their own.
inline constexpr int kFormatVersion = 1;
// File names: <host>-pid<pid>-<start>[.<n>].jsonl.gz
inline constexpr std::string_view kFileSuffix = ".jsonl.gz";

// ---- record types (the "type" field)
inline constexpr std::string_view kTypeMeta = "meta";    // first line of every file
inline constexpr std::string_view kTypeComm = "comm";    // a communicator appeared (init)
inline constexpr std::string_view kTypeCommEnd = "comm_end";  // a communicator was finalized
inline constexpr std::string_view kTypeColl = "coll";    // one collective on one rank
inline constexpr std::string_view kTypeP2p = "p2p";      // one send or recv on one rank
inline constexpr std::string_view kTypeCe = "ce";        // one copy-engine collective (ABI v6)
inline constexpr std::string_view kTypeClock = "clock";  // GPU->wall clock estimate of a comm's GPU
inline constexpr std::string_view kTypeStats = "stats";  // periodic counters (written, dropped, ...)
inline constexpr std::string_view kTypeMark = "mark";    // user mark (ncclInspectorMark)
inline constexpr std::string_view kTypeTag = "tag";      // a user tag's name (ncclInspectorNameTag)
inline constexpr std::string_view kTypeEnd = "end";      // clean shutdown, last line
inline constexpr std::string_view kTypeProgress = "progress";  // a comm's issue state and its long in-flight ops
inline constexpr std::string_view kTypeAlive = "alive";        // nothing else written for HANG_MS: still alive

// ---- fields common to many records
inline constexpr std::string_view kType = "type";
inline constexpr std::string_view kWallNs = "wall_ns";        // integer, Unix epoch ns (CLOCK_REALTIME)
inline constexpr std::string_view kCommId = "comm_id";        // integer, process-local comm id
inline constexpr std::string_view kCommHash = "comm_hash";    // "0x%016x" string, same on every rank
inline constexpr std::string_view kCommName = "comm_name";    // string ("" when NCCL gave none)
inline constexpr std::string_view kRank = "rank";             // integer, rank in the comm (-1 unknown)
inline constexpr std::string_view kNranks = "nranks";         // integer (0 unknown: ABI v1-v3)
inline constexpr std::string_view kNnodes = "nnodes";         // integer (0 unknown)
inline constexpr std::string_view kAbiVersion = "abi_version";// integer 1..6, bound profiler ABI
inline constexpr std::string_view kCudaDevice = "cuda_dev";   // comm: integer CUDA device ordinal (absent: unknown)
inline constexpr std::string_view kPciBusId = "pci_bus_id";   // comm: the GPU's PCI bus id "0000:1b:00.0" (absent: unknown)

// ---- meta
inline constexpr std::string_view kFormat = "format";                   // kFormatName
inline constexpr std::string_view kFormatVersionField = "format_version";// integer
inline constexpr std::string_view kPluginVersion = "plugin_version";    // string
inline constexpr std::string_view kHost = "host";                       // string
inline constexpr std::string_view kPid = "pid";                         // integer
inline constexpr std::string_view kInstance = "instance";               // string, 16 hex digits: one output's files
inline constexpr std::string_view kFileSeq = "file_seq";                // integer, rotation index (0 first)
inline constexpr std::string_view kJob = "job";  // object: slurm_job_id, slurm_procid, slurm_localid,
                                                 // rank, local_rank, world_size, ompi_rank, pmi_rank,
                                                 // job_id (the one used), job_id_source; strings, absent if unset
// The meta.job fields the analyzer reads (strings, as the launcher gave them)
inline constexpr std::string_view kJobId = "job_id";            // the job id used
inline constexpr std::string_view kJobGlobalRank = "global_rank";// the process's rank in the job
inline constexpr std::string_view kClockMonoNs = "mono_ns";  // anchor: CLOCK_MONOTONIC ns at wall_ns
inline constexpr std::string_view kConfig = "config";        // object: effective configuration

// ---- op records (coll, p2p, ce)
inline constexpr std::string_view kSeq = "seq";            // integer: NCCL seqNumber (coll/ce); own per-peer counter (p2p)
inline constexpr std::string_view kIssue = "issue";        // progress.stuck[] (coll): place in the comm's issue order on this rank
inline constexpr std::string_view kIssueOff = "issue_off"; // coll records: issue - seq (compresses better than issue itself)
inline constexpr std::string_view kFunc = "func";          // "AllReduce", "Send", ... (NCCL names)
inline constexpr std::string_view kDtype = "dtype";        // "float32", ..., "unknown"
inline constexpr std::string_view kCount = "count";        // integer as NCCL reported it
inline constexpr std::string_view kBytes = "bytes";        // integer message size (0 when dtype unknown)
inline constexpr std::string_view kRoot = "root";          // integer (rooted collectives only)
inline constexpr std::string_view kPeer = "peer";          // integer (p2p only)
inline constexpr std::string_view kGroupNo = "group";      // integer (p2p): the launch group it ran in (ops of one ncclGroup share it)
inline constexpr std::string_view kUserTag = "user_tag";   // integer (coll/p2p/ce, NCCL 2.31+): the application's tag for the call
inline constexpr std::string_view kAlgo = "algo";          // "RING", "TREE", ..., "unknown"
inline constexpr std::string_view kProto = "proto";        // "LL", "LL128", "SIMPLE", "unknown"; "" for symmetric kernels
inline constexpr std::string_view kSym = "sym";            // bool (coll, NCCL 2.31+), present only when true: a symmetric kernel ran it
inline constexpr std::string_view kKernelVariant = "kernel_variant";  // string (with sym): NCCL's id of that kernel
inline constexpr std::string_view kSymPlanTasks = "sym_plan_tasks";  // a symmetric plan's head: the tasks its kernel time covers (>= 2); no bandwidth
inline constexpr std::string_view kPhases = "phases";      // object (NCCL 2.31+, NCCL_INSPECTOR_ENABLE_PHASES): per phase [min us, median us, max us, channels]
inline constexpr std::string_view kPhaseInitialSync = "initial_sync";  // phases members, NCCL's phase names
inline constexpr std::string_view kPhaseCompute = "compute";
inline constexpr std::string_view kPhaseFinalSync = "final_sync";
inline constexpr std::string_view kPhasesTruncated = "truncated";     // phases: true when channels >= 32 were left out
inline constexpr std::string_view kNchannels = "nchannels";// integer, as NCCL reported
inline constexpr std::string_view kNwarps = "nwarps";      // integer
inline constexpr std::string_view kChannels = "channels";  // array of integers: real channel ids that ran
inline constexpr std::string_view kStartWallNs = "start_wall_ns";    // integer: op start on the wall clock
inline constexpr std::string_view kEnqueueWallNs = "enqueue_wall_ns";// integer: CPU enqueue time
inline constexpr std::string_view kDurUs = "dur_us";       // float: span, earliest channel start -> latest stop
inline constexpr std::string_view kMaxChUs = "max_ch_us";  // float: longest single channel
inline constexpr std::string_view kTiming = "timing";      // "gpu" | "cuda_event" | "proxy_cpu" | "net_cpu" | "enqueue_cpu" | "none"
inline constexpr std::string_view kAlgbwGbs = "algbw_gbs"; // float GB/s (1e9 B/s); absent when unknown
inline constexpr std::string_view kBusbwGbs = "busbw_gbs"; // float GB/s, nccl-tests factors; absent when unknown
inline constexpr std::string_view kChBusyUs = "ch_busy_us";// float: sum of per-channel times
inline constexpr std::string_view kChUtil = "ch_util";     // float 0..1: busy / (span x channels)
inline constexpr std::string_view kChBalance = "ch_balance";// float 0..1: min channel time / max channel time
inline constexpr std::string_view kChSlow = "ch_slow";     // [channel id, its us, median channel us]: the longest channel
inline constexpr std::string_view kTransport = "transport";// "intra_node" | "network" | "unknown"
inline constexpr std::string_view kTransportIntraNode = "intra_node";  // kTransport values
inline constexpr std::string_view kTransportNetwork = "network";
inline constexpr std::string_view kGraph = "graph";        // bool: graph captured
inline constexpr std::string_view kReclaimed = "reclaimed";// bool, present only when true
inline constexpr std::string_view kKernelDesync = "kernel_desync";  // bool, coll/p2p: NCCL's KernelCh stamps were another work's
inline constexpr std::string_view kApiOnly = "api_only";  // bool, coll: NCCL showed the op at API level only
inline constexpr std::string_view kPartial = "partial";    // bool, present only when some channel never stopped
inline constexpr std::string_view kChTimes = "ch_times";   // verbose: [[channel, start_offset_us, dur_us], ...]
inline constexpr std::string_view kNet = "net";            // object, present when network events were seen:
inline constexpr std::string_view kNetSendBytes = "send_bytes";
inline constexpr std::string_view kNetRecvBytes = "recv_bytes";
inline constexpr std::string_view kNetSteps = "steps";
inline constexpr std::string_view kNetOps = "proxy_ops";
inline constexpr std::string_view kNetPeers = "peers";
inline constexpr std::string_view kNetGpuWaitUs = "gpu_wait_us";
inline constexpr std::string_view kNetWaitUs = "net_wait_us";
inline constexpr std::string_view kNetFlushUs = "flush_us";
inline constexpr std::string_view kNetSpanUs = "span_us";
inline constexpr std::string_view kHcas = "hcas";          // array of {dev, bytes, wrs, qps}, present with NetPlugin events
inline constexpr std::string_view kHcaDev = "dev";
inline constexpr std::string_view kHcaWrs = "wrs";
inline constexpr std::string_view kHcaQps = "qps";
inline constexpr std::string_view kHcaWireUs = "wire_us";   // float, 0.1 us: its send work requests' time on the wire
inline constexpr std::string_view kHcaGbs = "gbs";          // float GB/s, 3 significant digits: bytes / wire_us

// ---- clock
inline constexpr std::string_view kGpuOffsetNs = "gpu_offset_ns";     // integer: mono_ns = ptimer + offset
inline constexpr std::string_view kUncertaintyNs = "uncertainty_ns";  // integer
inline constexpr std::string_view kSamples = "samples";               // integer

// ---- stats (all integers, cumulative since the process started): one key per
// row of include/nccl_inspector/counters.h, top-level or inside its group's
// object ("dropped": records lost, by reason; "filtered": not losses, by
// configuration; "faults": callbacks NCCL got wrong, by kind). The reader names these.
inline constexpr std::string_view kRecordsWritten = counters::key(counters::Id::records_written);
inline constexpr std::string_view kOpsCompleted = counters::key(counters::Id::ops_completed);
inline constexpr std::string_view kRecordsPending = counters::key(counters::Id::records_pending);
inline constexpr std::string_view kDropped = counters::group_key(counters::Group::kDropped);
inline constexpr std::string_view kFiltered = counters::group_key(counters::Group::kFiltered);
inline constexpr std::string_view kFaults = counters::group_key(counters::Group::kFaults);
inline constexpr std::string_view kReclaimedOps = counters::key(counters::Id::reclaimed);

// ---- mark
inline constexpr std::string_view kLabel = "label";

// ---- progress (NCCL_INSPECTOR_HANG_MS): comm_id, comm_hash, rank, nranks, wall_ns and
inline constexpr std::string_view kIssued = "issued";          // integer: collectives started on the comm
inline constexpr std::string_view kStarted = "started";        // object: {func: last seq started} (collectives)
inline constexpr std::string_view kDoneSeq = "completed";      // object: {func: highest seq completed} (recorded collectives)
inline constexpr std::string_view kLastFunc = "last_func";     // string: the function of collective issued - 1
inline constexpr std::string_view kApiIssued = "api_issued";   // integer: collective calls (CollApi, ABI v6+)
inline constexpr std::string_view kLastApiFunc = "last_api_func"; // string: the function of the last one
inline constexpr std::string_view kP2pStarted = "p2p_started"; // integer: P2P ops started
inline constexpr std::string_view kQuietMs = "quiet_ms";       // integer: the state had not changed for this long
inline constexpr std::string_view kInFlight = "in_flight";     // integer: recorded ops in flight
inline constexpr std::string_view kStuck = "stuck";            // array: ops in flight >= HANG_MS, oldest first:
inline constexpr std::string_view kKind = "kind";              //   "coll" | "p2p" | "ce" (with seq, issue, func, peer/root, bytes, dtype, nchannels)
inline constexpr std::string_view kAgeMs = "age_ms";           //   integer: in flight for this long at wall_ns
inline constexpr std::string_view kChStarted = "ch_started";   //   array of channel ids whose KernelCh started
inline constexpr std::string_view kChDone = "ch_done";         //   array of channel ids whose KernelCh ended
inline constexpr std::string_view kDir = "dir";                //   net[]: "send" | "recv"
inline constexpr std::string_view kPosted = "posted";          //   net[]: ProxySteps started
inline constexpr std::string_view kDone = "done";              //   net[]: ProxySteps stopped

// ---- end
inline constexpr std::string_view kDroppedTotal = "dropped_total";

// ---- NCCL Inspector (upstream) "v4.0" logs: not written by the plugin, read by the analyzer.
// One JSON object per line: {"header":{...},"metadata":{...},"coll_perf"|"p2p_perf":{...}}.
namespace upstream {
inline constexpr std::string_view kHeader = "header";
inline constexpr std::string_view kMetadata = "metadata";
inline constexpr std::string_view kCollPerf = "coll_perf";
inline constexpr std::string_view kP2pPerf = "p2p_perf";
// header
inline constexpr std::string_view kId = "id";                  // the comm hash (hex string or integer)
inline constexpr std::string_view kCommName = "comm_name";     // kCommNameUnknown when NCCL gave none
inline constexpr std::string_view kCommNameUnknown = "unknown";
inline constexpr std::string_view kRank = "rank";
inline constexpr std::string_view kNranks = "n_ranks";
inline constexpr std::string_view kNnodes = "nnodes";
// metadata
inline constexpr std::string_view kFormatVersion = "inspector_output_format_version";  // "v4.0"
inline constexpr std::string_view kHostname = "hostname";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kGitRev = "git_rev";
// coll_perf / p2p_perf: the op's name under kCollFunc / kP2pFunc; every other key is
// kCollPrefix / kP2pPrefix followed by one of the names below
inline constexpr std::string_view kCollFunc = "coll";
inline constexpr std::string_view kP2pFunc = "p2p";
inline constexpr std::string_view kCollPrefix = "coll_";
inline constexpr std::string_view kP2pPrefix = "p2p_";
inline constexpr std::string_view kSn = "sn";
inline constexpr std::string_view kMsgSizeBytes = "msg_size_bytes";
inline constexpr std::string_view kExecTimeUs = "exec_time_us";
inline constexpr std::string_view kTimingSource = "timing_source";
inline constexpr std::string_view kBusbwGbs = "busbw_gbs";
inline constexpr std::string_view kPeer = "peer";
}  // namespace upstream

}  // namespace ni::schema
