// nccl-emu: a GPU-free NCCL host that loads any NCCL profiler plugin and calls
// it exactly as a chosen NCCL release (2.23 .. 2.32) would: symbol binding and
// adapter quirks (profiler-abi.md §0, §6), thread roles (§7), call sequences
// (§8), and the fault cases of §12. It depends on plugin/abi headers only.
//
// Typical use from a test that links a plugin statically:
//
//   ni::emu::Options o;
//   o.nccl = *ni::emu::NcclVersion::parse("2.28");
//   o.tables.v5 = &my_profiler_v5;            // or o.plugin_path = "lib....so"
//   o.workload = ni::emu::default_workload();  // or parse_workload_json(...)
//   o.pace = ni::emu::Pace::kNone;
//   ni::emu::RunResult r = ni::emu::run(o);
//   // r.bound_abi == 5, r.truth holds one TruthOp per issued op per rank.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/abi/all.h"

namespace ni::emu {

// An NCCL release, major.minor (patch levels are not distinguished; 2.26 means
// 2.26.6+, i.e. after the v2-adapter fix; 2.27 means 2.27.5+).
struct NcclVersion {
  int major = 2;
  int minor = 30;
  // Accepts "2.23" .. "2.32" (also "2.28.9", "v2.28.9-1"). Returns nullopt otherwise.
  static std::optional<NcclVersion> parse(std::string_view s);
  std::string str() const;
  // The profiler ABI the release calls natively (§0): 2.23->1, 2.24/25->2,
  // 2.26->3, 2.27->4, 2.28->5, 2.29/2.30->6, 2.31/2.32->7.
  int native_abi() const;
  bool at_least(int minor_) const { return minor >= minor_; }
};

// Plugin tables to drive in-process, without dlopen. Any may be NULL; binding
// picks the newest the emulated release would try (§0).
struct PluginTables {
  const ni::abi::ProfilerV1* v1 = nullptr;
  const ni::abi::ProfilerV2* v2 = nullptr;
  const ni::abi::ProfilerV3* v3 = nullptr;
  const ni::abi::ProfilerV4* v4 = nullptr;
  const ni::abi::ProfilerV5* v5 = nullptr;
  const ni::abi::ProfilerV6* v6 = nullptr;
  const ni::abi::ProfilerV7* v7 = nullptr;
  // The plugin's ncclInspectorMark, if it has one (user code calls it, not NCCL).
  int (*mark)(const char*) = nullptr;
  int (*name_tag)(uint64_t, const char*) = nullptr;
  bool empty() const { return !v1 && !v2 && !v3 && !v4 && !v5 && !v6 && !v7; }
};

// Which ABI a release binds for a plugin exporting `avail` (bit N set = vN
// exported). 0 if none fits.
int select_abi(const NcclVersion& v, unsigned avail_mask);

// Fault cases (profiler-abi.md §12), each behind a flag: X(id, name on the
// command line, what NCCL then does). A new fault is one line here; its
// behaviour goes where the sequence it changes is issued (ops.cpp at issue
// time, progress.cpp on the progress thread, engine.cpp on the app thread,
// run.cpp around init and finalize), behind P.fault(Fault::kId) or has(task, ...).
#define NI_EMU_FAULTS(X)                                                                                       \
  X(kRecvStepTwice, "recv-step-twice", "a recv ProxyStep started twice for the same step; first handle never stopped") \
  X(kNetPluginDoubleStop, "netplugin-double-stop", "NetPlugin stop called twice (socket too; IB always does it)")     \
  X(kNetPluginStopNull, "netplugin-stop-null", "stopEvent(NULL) for a NetPlugin event")                                \
  X(kProxyOpNeverStopped, "proxyop-never-stopped", "the ProxyOps of one network op are never stopped")                 \
  X(kParentStoppedFirst, "parent-stopped-first", "Coll/P2p/Group stopped before any child (ProxyOp/KernelCh) starts")  \
  X(kPxn, "pxn", "ProxyOp/Step with a foreign pid, foreign context and foreign parent")                                 \
  X(kMaskChange, "mask-change", "the process-wide mask is rewritten mid-run (by another comm)")                         \
  X(kConcurrentInit, "concurrent-init", "all comm inits released at the same instant on several threads")             \
  X(kReload, "reload", "after the last finalize: dlclose, re-dlopen, re-init, run again")                             \
  X(kGraphReplay, "graph-replay", "some ops are CUDA-graph captured and replayed")                                    \
  X(kKernelChNeverStopped, "kernelch-never-stopped", "one KernelCh of an op is never stopped")                          \
  X(kKernelChDoubleStop, "kernelch-double-stop",                                                                        \
    "one KernelCh's end (2.27+: its KernelChStop state and stop) delivered twice")                                      \
  X(kKernelStampsBackwards, "kernel-stamps-backwards",                                                                  \
    "2.27+: one op's KernelCh stop stamps are 2 s before its starts (NCCL 2.29+'s Broadcast-on-AllGatherV bug, #2369)")

enum class Fault : int {
#define NI_EMU_FAULT_ID(id, name, what) id,
  NI_EMU_FAULTS(NI_EMU_FAULT_ID)
#undef NI_EMU_FAULT_ID
  kCount
};
const char* fault_name(Fault f);
std::optional<Fault> fault_from_name(std::string_view s);
std::vector<std::string> fault_names();

enum class Pace { kNone, kRealtime };
enum class NetProfiler { kNone, kIb, kSocket };

// truth.hang kinds (docs/emulator.md, "Hangs").
enum class HangKind { kNone, kStopIssuing, kKernelStuck, kRecvStuck, kDesync, kKilled };
// How a hung process ends after hold_ms: SIGKILL (as a watchdog would) or _exit(0).
enum class HangEnd { kKill, kExit };
// Where run() goes once the ranks of a planted hang are blocked: end the
// process as truth.hang.end says (the CLI), or return (in-process tests; the
// hung comms are never finalized, their in-flight events stay open).
enum class HangExit { kAsWorkload, kReturn };
const char* hang_kind_name(HangKind k);            // "stop_issuing", ...
std::optional<HangKind> hang_kind_from_name(std::string_view s);

// ------------------------------------------------------------------ workload

// One communicator of the job. World ranks are split into groups of `nranks`:
// contiguous (TP-like: 0..n-1, n..2n-1) or strided (DP-like: r, r+W/n, ...).
struct CommSpec {
  std::string name = "comm";
  int nranks = 2;
  bool strided = false;
  int nchannels = 8;               // channels a large collective uses
  int p2p_channels = 32;           // nP2pChannels (power of 2)
  int p2p_channels_per_peer = 2;   // channels per peer for large p2p
  bool blocking = true;            // false: launch on a separate launcher thread
  bool host_callback = false;      // plans with proxy ops run Group/Coll on the CUDA-callback thread
  std::string share_progress_with; // name of an earlier comm whose progress thread this one shares
  bool set_comm_name = true;       // pass the name to v4+ init (as ncclConfig_t.commName)
};

// One operation as the application issues it. Collectives are issued by every
// rank of the comm (or `ranks`); Send/Recv by the ranks listed in `ranks`;
// "SendRecv" with `shift` is a ring exchange (send to r+shift, recv from r-shift).
struct OpSpec {
  std::string comm;
  std::string func = "AllReduce";  // AllReduce AllGather ReduceScatter Broadcast Reduce Send Recv SendRecv AlltoAll Gather Scatter
  std::string dtype = "ncclFloat32";
  uint64_t count = 0;   // elements (per rank send count for AllGather; recv count for ReduceScatter)
  int root = 0;
  int peer = -1;        // Send/Recv
  int shift = 1;        // SendRecv
  std::vector<int> ranks;  // comm ranks that issue it; empty = all
  std::string algo;     // "" = model's choice
  std::string proto;    // "" = model's choice
  int nchannels = 0;    // 0 = model's choice
  bool ce = false;      // CE collective (2.29+, intra-node AllGather/AlltoAll/Gather/Scatter)
  int graph_replays = 0;// >0: captured in a CUDA graph and replayed this many times
  uint64_t tag = 0;     // 2.31+: ncclCollConfig_t.userProfilerTag (0 = none; top bit reserved by NCCL)
  // 2.31+ kernel collectives: run as a symmetric-kernel plan with this variant
  // ("AllReduce_AGxLL_R"); empty = the tuner's algo/proto
  std::string kernel_variant;
};

// A step of the program: one op (standalone) or a ncclGroupStart/End block.
struct StepSpec {
  std::vector<OpSpec> ops;
  bool group = false;   // wrap in ncclGroupStart/End
  int depth = 1;        // nested group depth (2 = two ncclGroupStart calls)
  std::string mark;     // before the step: the process's first rank calls ncclInspectorMark(mark)
};

struct MixEntry {
  std::string comm;
  std::string func;
  std::string dtype = "ncclBfloat16";
  std::vector<uint64_t> bytes;  // message sizes in bytes (count = bytes / dtype size)
  double weight = 1;
  uint64_t tag = 0;  // 2.31+: every op of the entry carries this user tag (0: none)
};

// Injected truth: the ground the analyzer should find.
struct TruthKnobs {
  std::map<int, double> rank_skew_us;        // world rank -> arrival delay (a straggler)
  // One rank late at one collective (a hiccup: a GC pause, a page fault storm):
  // world rank `world_rank` arrives `us` late at per-comm op index `op` of each
  // of its communicators; its peers wait for it there and nowhere else.
  struct LateOnce {
    int world_rank = 0;
    int op = 0;
    double us = 0;
  };
  std::vector<LateOnce> late_once;
  std::map<int, double> channel_slowdown;    // channel id -> duration factor
  std::map<int, double> hca_slowdown;        // HCA index -> duration factor (network ops on its channels)
  // One channel of some comms slower (an asymmetric NVLink / one degraded
  // link in the channel's ring): every rank of the matching comm groups.
  struct SlowChannel {
    std::string comm;  // comm name ("" = every comm)
    int group = -1;    // which group of that comm (-1 = every group)
    int channel = 0;
    double factor = 1;
  };
  std::vector<SlowChannel> slow_channels;
  // One rank's NIC slower (a link that came up at a lower speed): its send
  // work requests through HCA `hca` take `factor` x longer on the wire (with
  // model.hca_gbps set), and the channels through that HCA index of the comms
  // whose network ring it is in run `factor` x slower on every rank of them.
  struct SlowHca {
    int world_rank = 0;
    int hca = 0;
    double factor = 1;
    int from_op = 0;  // per-comm op index from which it is slow (a link degrading mid-run)
  };
  std::vector<SlowHca> slow_hcas;
  // Emulated host index -> mean extra arrival delay (us, exponentially
  // distributed per op) of its ranks: a host or rack with latency variance.
  std::map<int, double> host_jitter_us;
  int congestion_from = -1, congestion_to = -1;  // per-comm op index window ...
  double congestion_factor = 1;                  // ... whose duration is multiplied
  double bimodal_p = 0;                      // probability an op runs slow ...
  double bimodal_factor = 1;                 // ... by this factor
  std::string bimodal_proto = "LL128";       // only ops on this protocol
  // A hang or desync in one group of one comm (docs/emulator.md, "Hangs"):
  // from per-comm op `at_op` of the group of `comm` that holds `world_rank`,
  // that group's ranks block and their processes end without finalizing.
  struct Hang {
    HangKind kind = HangKind::kNone;  // kNone: no hang planted
    int world_rank = 0;               // the culprit R
    std::string comm;                 // comm spec name
    int at_op = 0;                    // per-comm op index on R's group (0-based)
    int peer = -1;                    // recv_stuck: comm rank R never receives from (-1: its ring predecessor)
    std::string func;                 // desync: what R issues instead ("": AllGather, AllReduce for an AllGather)
    int hold_ms = 2000;               // hung processes stay alive this long (real time) before they end
    HangEnd end = HangEnd::kKill;
  };
  Hang hang;
};

struct ModelKnobs {
  double nvlink_busbw_gbps = 300;
  double net_busbw_gbps = 40;
  double latency_us = 8;
  double net_latency_us = 20;
  double gap_us = 300;         // GPU idle between consecutive ops of a comm
  double jitter = 0.03;        // relative random jitter of durations
  int hcas_per_node = 4;
  // Per-HCA link bandwidth (GB/s) of IB send work requests: with net_profiler
  // "ib" and this > 0, each QP event lasts its bytes / hca_gbps on the wire
  // (real time, the emulator waits), so the plugin measures wire time. 0: the
  // events take no time.
  double hca_gbps = 0;
};

struct Workload {
  int world = 0;      // world size; 0 = max nranks
  int nodes = 1;      // world ranks are split evenly over nodes (contiguous)
  std::vector<CommSpec> comms;
  std::vector<StepSpec> program;  // explicit steps, run first
  std::vector<MixEntry> mix;      // random mix, `iterations` ops per rank after the program
  int iterations = 0;
  int group_size = 1;             // ops of the mix per ncclGroupStart/End (1 = standalone)
  // Mix steps per training iteration: each iteration starts with a mark
  // "iteration N" (ncclInspectorMark, as user code calls it); 0 = no marks.
  int mark_every = 0;
  // With marks: the time each iteration spends outside NCCL (compute): its
  // ops start that much later in the job's time.
  int iteration_gap_us = 0;
  NetProfiler net_profiler = NetProfiler::kNone;
  // Names of user tags: each process's first rank calls the plugin's
  // ncclInspectorNameTag(tag, name) for each before its first step (when the
  // plugin exports it), as an application names its tags after comm init.
  std::map<uint64_t, std::string> tag_names;
  TruthKnobs truth;
  ModelKnobs model;
};

// Parse a workload from JSON text (see docs/emulator.md). Throws std::runtime_error with a message.
Workload parse_workload_json(const std::string& text);
// Parse one truth.hang object (JSON text), as in a workload. Throws std::runtime_error.
TruthKnobs::Hang parse_hang_json(const std::string& text);
// The default demo: 2 nodes x 4 GPUs; TP comms of 4 (NVLink) and DP comms of 2 (network),
// AllReduce/AllGather/ReduceScatter/Broadcast/SendRecv of realistic sizes.
Workload default_workload(int iterations = 40);

// ------------------------------------------------------------------ truth

struct TruthOp {
  std::string comm;
  uint64_t comm_hash = 0;
  int comm_index = 0;   // which group of the comm
  int rank = 0, nranks = 0, nnodes = 0, world_rank = 0;
  std::string kind;     // coll | p2p | ce
  std::string func;     // as the descriptor says (Send/Recv for AlltoAll parts)
  std::string api_func; // as the application called it
  uint64_t user_tag = 0;// 2.31+: the tag its descriptors carry (0 = none)
  std::string kernel_variant;  // 2.31+: the symmetric kernel's variant (algo its suffix, proto ""), empty none
  // 2.31+: a symmetric plan's head: the tasks its kernel ran (itself included;
  // 0 when alone); its duration covers them all, so it has no busbw.
  int sym_plan_tasks = 0;
  uint64_t seq = 0;     // NCCL seqNumber (coll), own per-(peer,direction) order (p2p)
  uint64_t count = 0;   // as the Coll/P2p descriptor carries it
  std::string dtype;    // as the descriptor carries it
  uint64_t bytes = 0;   // message bytes (descriptor count x type size)
  std::string algo, proto;
  int root = 0, peer = -1;
  bool net = false;     // traffic over the network (proxy events possible)
  std::vector<int> channels;
  std::vector<uint64_t> ch_start_ptimer, ch_stop_ptimer;  // GPU clock, ns
  int64_t ptimer_to_realtime_ns = 0;   // wall (CLOCK_REALTIME) ns = pTimer + this
  int64_t ptimer_to_monotonic_ns = 0;  // CLOCK_MONOTONIC ns = pTimer + this
  double duration_us = 0;              // max per-channel GPU time
  double busbw_gbps = 0;               // from the model's duration, nccl-tests factors
  bool visible = false;                // Coll/P2p/CeColl start delivered to the plugin
  std::string why;                     // reason when not visible
  bool kernel_events = false;          // KernelCh events delivered
  bool phase_events = false;           // KernelPhase events delivered (2.31+, the plugin asked for them)
  // Per channel (as `channels`): the model's initial_sync, compute and
  // final_sync time in ns (written with phase_events).
  std::vector<std::array<uint64_t, 3>> ch_phase_ns;
  // NCCL handed this op's KernelCh another work's GPU stamps: its host work
  // counter had fallen behind the device's (a Send/Recv to itself before it
  // on one of its channels, profiler-abi §8.6); ch_*_ptimer are its own.
  bool kernel_stamps_shifted = false;
  int graph_replay = -1;               // replay index, -1 = not a graph replay
  std::vector<std::string> faults;
  // The planted culprits that shaped this op's times (TruthKnobs): "straggler"
  // (this rank arrived late), "waited" (it waited for a late rank),
  // "congestion", "bimodal", "slow_channel", "slow_hca", "jitter" (this
  // rank's host added random arrival delay), "late_once" (this rank arrived
  // late to this op alone), "waited_once" (it waited for such a rank).
  std::vector<std::string> planted;
};

// The "hang" truth line: what a planted hang did (written by every process
// that holds a rank of the hung group).
struct HangTruth {
  std::string kind;               // stop_issuing | kernel_stuck | recv_stuck | desync | killed
  std::string comm;
  uint64_t comm_hash = 0;
  int group = 0;                  // which group of the comm
  int at_op = 0;                  // per-comm op index
  std::string func;               // the group's function at that op, as the Coll descriptor names it
  uint64_t seq = 0;               // its seqNumber on the ranks that issued it as planned
  std::vector<int> culprit_world_ranks, culprit_comm_ranks;
  int peer_comm_rank = -1;        // recv_stuck
  std::string desync_func;        // desync
  std::vector<int> group_world_ranks;
  std::string end;                // kill | exit
};

struct Summary {
  int bound_abi = 0;
  std::string plugin_name;
  std::map<std::string, uint64_t> ops_by_comm_kind;       // "tp/coll" -> n
  std::map<std::string, uint64_t> callbacks;              // "Coll.start" -> n, "init" -> n
  uint64_t total_callbacks = 0;
  double wall_s = 0;
};

// ------------------------------------------------------------------ running

struct Options {
  NcclVersion nccl;
  std::string plugin_path;           // dlopen this ...
  PluginTables tables;               // ... or drive these (used when plugin_path is empty)
  Workload workload;
  std::vector<int> world_ranks;      // world ranks emulated by this process; empty = all
  std::vector<Fault> faults;
  Pace pace = Pace::kNone;
  uint64_t seed = 1;
  int graph_replays = 3;             // replays per captured op for Fault::kGraphReplay
  ni::abi::DebugLogger logger = nullptr;  // passed to v4+ init; nullptr = nccl_logger()
  int fault_op = 3;                  // per-comm op index where one-shot faults fire
  // 2.31+: a job-wide event mask sent through NCCL's RAS subsystem, written
  // over the plugin's mask after every comm's init (profiler-abi §13.2);
  // -1 = none. Older releases have no such command and ignore it.
  int ras_mask = -1;
  // The job's time origin (CLOCK_REALTIME ns); 0 = now. Processes that
  // together form one job pass the same value so their timelines line up
  // (run() waits until then).
  uint64_t start_at_real_ns = 0;
  // With model.hca_gbps: a file every process of the job flocks around each
  // emulated send request ("" = only this process's requests are serialised).
  std::string wire_lock;
  // truth.hang: where a process that ends by the hang (killed, or hung past
  // hold_ms) writes its truth first ("" = nowhere; the CLI passes --truth).
  std::string truth_path;
  HangExit hang_exit = HangExit::kAsWorkload;
  int hang_hold_ms = -1;             // -1: truth.hang.hold_ms
};

struct RunResult {
  bool ok = false;
  std::string error;      // set when !ok (bad plugin, no symbol, ...)
  int bound_abi = 0;      // 1..6
  std::string bound_symbol;  // "ncclProfiler_v5"
  std::vector<TruthOp> truth;
  Summary summary;
  // The planted culprits (the workload's truth knobs) and the job's shape,
  // written as "planted" lines after the ops.
  TruthKnobs planted;
  int world = 0, nodes = 1;
  // Set when this process holds a rank of a group that truth.hang blocked
  // (only seen by callers with HangExit::kReturn; otherwise the process ended).
  std::optional<HangTruth> hang;
};

RunResult run(const Options& o);

// Truth as JSON lines: one "op" line per TruthOp, the "hang" line (if any),
// the "planted" lines, then one "summary" line.
void write_truth_jsonl(std::ostream& os, const RunResult& r);
std::string truth_op_json(const TruthOp& t);

// NCCL's logger stand-in: prints like NCCL with NCCL_DEBUG=INFO, honouring
// NCCL_DEBUG (VERSION/WARN/INFO/TRACE, default INFO) and NCCL_DEBUG_SUBSYS.
ni::abi::DebugLogger nccl_logger();

// ------------------------------------------------------------------ bench

struct BenchOptions {
  NcclVersion nccl = NcclVersion{2, 28};
  std::string plugin_path;
  PluginTables tables;
  int channels = 8;
  int iters = 100000;
  int runs = 5;
};
struct BenchResult {
  bool ok = false;
  std::string error;
  int bound_abi = 0;
  int callbacks_per_coll = 0;
  double ns_per_coll = 0;      // median over runs
  double ns_per_callback = 0;
};
BenchResult bench(const BenchOptions& o);

}  // namespace ni::emu
