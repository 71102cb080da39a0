// The fixed-size record the plugin's capture core produces for every completed
// operation, and the enums it uses. This is the contract between src/core
// (producer, hot path) and src/output (consumer, dump thread): a plain POD,
// built in place in a slot of the completing thread's SPSC ring (no copy on
// the way in; completion.cpp) and finished in place by the consumer before a
// sink sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ni {

// The cache line the record, the op slots and the rings are laid out in.
inline constexpr size_t kCacheLine = 64;

enum class OpKind : uint8_t { kColl = 0, kP2p = 1, kCe = 2 };

// Collective / P2P functions, covering every name NCCL's descriptors use.
enum class Func : uint8_t {
  kBroadcast = 0,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kSendRecv,
  kSend,
  kRecv,
  kAlltoAll,
  kGather,
  kScatter,
  kAllGatherV,
  kPutSignal,
  kSignal,
  kWaitSignal,
  kUnknown,
  kCount_
};

// ncclDataType_t values plus kUnknown (NCCL's string "Unknown", e.g. ncclUint8).
enum class DType : uint8_t {
  kInt8 = 0,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kFloat32,
  kFloat64,
  kBfloat16,
  kFloat8e4m3,
  kFloat8e5m2,
  kUnknown,
  kCount_
};

enum class Algo : uint8_t { kTree = 0, kRing, kCollnetDirect, kCollnetChain, kNvls, kNvlsTree, kPat, kUnknown, kCount_ };
enum class Proto : uint8_t { kLL = 0, kLL128, kSimple, kUnknown, kCount_ };

// Where an op's duration came from. Always written out: we never pass off a
// CPU-observed time as a GPU time.
enum class TimingSource : uint8_t {
  kGpu = 0,        // KernelCh pTimer start/stop (v4+): GPU globaltimer
  kProxyCpu = 1,   // KernelCh start/stop as observed by the proxy thread (v3 / 2.26): CPU time
  kNetCpu = 2,     // first ProxyOp start to last ProxyOp stop (no KernelCh): CPU time
  kEnqueueCpu = 3, // Coll/P2p start to stop ("enqueued"): CPU time of the enqueue only
  kNone = 4,       // nothing usable
  kCudaEvent = 5,  // CUDA events recorded on the copy engine's stream (CE ops): GPU time of the copies
  kCount_
};

// How the bytes moved, as far as the events tell.
enum class Transport : uint8_t {
  kUnknown = 0,    // no KernelCh and no proxy events: cannot tell
  kIntraNode = 1,  // KernelCh seen, no ProxyOp: NVLink / P2P / SHM
  kNetwork = 2,    // at least one ProxyOp
  kCount_
};

// OpRecord::flags bits.
enum OpFlag : uint16_t {
  kFlagGraphCaptured = 1u << 0,     // issued under CUDA graph capture
  kFlagReclaimed = 1u << 1,         // completed by the timeout reclaimer, not by its events
  kFlagChannelsTruncated = 1u << 2, // more than kRecordChannels channels: per-channel list cut
  kFlagPartialChannels = 1u << 3,   // some started KernelCh never stopped
  kFlagCountIsBytes = 1u << 4,      // NCCL reported count in bytes (AllGather/Broadcast)
  kFlagHcaTruncated = 1u << 5,      // more HCAs than kRecordHcas
  kFlagSeqOwn = 1u << 6,            // seq is our own per-comm counter (P2P), not NCCL's
  kFlagStaleParent = 1u << 7,       // parent API handle was stale (graph replay)
  kFlagApiOnly = 1u << 8,           // a collective NCCL showed at API level only (CollApi, no Coll):
                                    // timed by the API call, seq our own count of such calls
  kFlagKernelDesync = 1u << 9,      // its KernelCh stamps are not its own (NCCL's host and device work
                                    // counters fell out of step on this comm): CPU-timed instead
  kFlagSymKernel = 1u << 10,        // ran a symmetric kernel (ABI v7 isSymColl); kernel_variant names it
  kFlagPhases = 1u << 11,           // `phases` holds its channels' kernel phases (ABI v7 KernelPhase)
  // Internal, never seen by a sink (the capture core's consumer side derives
  // what they stand for and clears them before handing a record on):
  kFlagEnqueueTicks = 1u << 14,  // enqueue_ns holds CPU clock ticks
  kFlagChannelSums = 1u << 15,   // only channel_mask, start_ns (the earliest channel start) and the
                                 // per-channel list are written, and busy_ns holds the stopped channels'
                                 // mask: the channel counts, end_ns, busy_ns and extremes are derived
};

inline constexpr int kRecordChannels = 32;
inline constexpr int kRecordHcas = 4;
// Kernel phases (ABI v7 KernelPhase): 0 initial_sync (waiting for the peers),
// 1 compute, 2 final_sync; tracked on channels 0 .. kPhaseChannels - 1.
inline constexpr int kPhases = 3;
inline constexpr int kPhaseChannels = 32;

// Per phase, over the channels that reported it: the shortest, median and
// longest time (GPU ns, saturated at 2^32 - 1) and how many channels.
struct PhaseTimes {
  uint32_t min_ns[kPhases];
  uint32_t med_ns[kPhases];
  uint32_t max_ns[kPhases];
  uint8_t channels[kPhases];
  uint8_t truncated;        // 1: some channel ids >= kPhaseChannels reported phases, left out
  uint8_t reserved_[24];
};
static_assert(sizeof(PhaseTimes) == 64);

// Per-channel GPU (or CPU, see timing) time of one op, relative to OpRecord::start_ns.
struct ChannelTime {
  uint32_t start_off_ns;
  uint32_t dur_ns;
};

struct HcaTraffic {
  uint16_t device;  // IB device index from the NetPlugin QP payload; socket: 0xFFFF
  uint16_t qps;     // distinct QP numbers seen (saturating)
  uint32_t wrs;     // work requests
  uint64_t bytes;
};

// One completed op. 576 bytes (9 cache lines), trivially copyable. The first
// cache line holds what the op's start knows, laid out exactly as
// core::OpStart (src/core/tracker.h), so completion copies it in one piece.
struct OpRecord {
  // --- first cache line: known at start
  uint64_t comm_hash;     // commHash/commId, identical on every rank of the comm
  uint64_t seq;           // NCCL seqNumber (coll, ce) or our own per-comm counter (p2p)
  uint64_t count;         // as NCCL reported it (bytes when kFlagCountIsBytes)
  uint64_t bytes;         // message size in bytes (type size x count); 0 if unknown
  uint64_t enqueue_ns;    // CPU monotonic ns at Coll/P2p/CeColl start
  uint32_t comm_id;       // process-local id of the communicator (see comm records)
  int32_t rank;
  int32_t peer;           // root for rooted collectives, peer for P2P, -1 otherwise
  uint16_t flags;         // OpFlag
  uint8_t kind;           // OpKind
  uint8_t func;           // Func
  uint8_t dtype;          // DType
  uint8_t algo;           // Algo
  uint8_t proto;          // Proto
  uint8_t n_channels;     // as NCCL reported it (nChannels / nMaxChannels)
  uint8_t n_warps;
  uint8_t abi_version;
  uint8_t kernel_variant; // kFlagSymKernel: the kernel's id string, interned (names.h variant_name); 0 unknown
  uint8_t sym_tasks;      // kFlagSymKernel, a plan's head: later tasks of its plan its kernel time covers (max 255)
  // --- filled at completion
  uint64_t start_ns;      // earliest channel start (GPU pTimer ns for kGpu; CPU monotonic ns otherwise)
  uint64_t end_ns;        // latest channel stop, same clock as start_ns
  uint64_t channel_mask;  // real channel ids used (bit i = channel i)
  uint64_t busy_ns;       // sum over channels of per-channel time
  uint64_t user_tag;      // the application's tag for the call (ABI v7, ncclCollConfig_t.userProfilerTag); 0 none
  // network (ProxyOp / ProxyStep)
  uint64_t net_send_bytes;
  uint64_t net_recv_bytes;
  uint64_t net_first_ns;      // CPU ns of the first ProxyOp start
  uint64_t net_last_ns;       // CPU ns of the last ProxyOp / step stop
  uint32_t net_gpu_wait_100ns;  // SendGPUWait + RecvGPUWait step time, 0.1 us units (saturating)
  uint32_t net_wait_100ns;      // SendWait / SendPeerWait + RecvWait step time, 0.1 us units
  uint32_t net_flush_100ns;     // RecvFlushWait step time, 0.1 us units
  uint32_t max_channel_ns;
  uint32_t min_channel_ns;
  uint32_t net_steps;
  uint32_t net_ops;       // ProxyOps seen
  // Per hcas[] entry: the time its send work requests were on the wire (the
  // union of their post -> completion intervals), 0.1 us units; 0 = unknown.
  uint32_t hca_wire_100ns[kRecordHcas];
  // Collectives: the op's place in its comm's issue order on this rank (0 =
  // the comm's first collective; every collective counted, recorded or not;
  // low 32 bits). Ranks that agree issued the same collective at the same
  // place. P2P: the number of the Group (kernel plan) it was launched in,
  // counted per launching thread (0 = unknown). 0 for CE ops.
  uint32_t issue;
  uint16_t net_peer_count;
  uint8_t timing;         // TimingSource
  uint8_t transport;      // Transport
  uint8_t channels_started;
  uint8_t channels_stopped;
  uint8_t n_hcas;
  uint8_t gpu_timer;      // CE ops with CUDA events: the pair (index + 1) the consumer polls; 0 none
  // Entries past min(popcount(channel_mask), kRecordChannels) / n_hcas are undefined.
  ChannelTime channels[kRecordChannels];  // ordered by channel id; entry i = i-th set bit of channel_mask
  HcaTraffic hcas[kRecordHcas];
  // --- the ninth line: only with kFlagPhases (otherwise undefined, never written)
  PhaseTimes phases;
};

static_assert(std::is_trivially_copyable_v<OpRecord>);
// A ring's new[] then writes nothing: its pages are committed as records
// first fill them, not when the ring is made (docs/architecture.md, "Bursts").
static_assert(std::is_trivially_default_constructible_v<OpRecord>);

static_assert(offsetof(OpRecord, start_ns) == 64, "the start-time fields fill exactly the first cache line");
static_assert(sizeof(OpRecord) == 576, "OpRecord must stay one fixed size (ring slot)");
static_assert(offsetof(OpRecord, phases) == 512, "the phases fill the ninth cache line");
static_assert(offsetof(OpRecord, channels) == 192, "the per-channel list starts the fourth cache line");

}  // namespace ni
