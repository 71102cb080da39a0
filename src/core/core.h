// The version-neutral entry points of the capture core. The plugin's
// per-version adapters (plugin/plugin.cpp) convert each ABI's descriptor field
// by field into these calls; nothing here knows any ABI layout. The NCCL
// vocabulary the core shares with them (logger, event bits, states, limits) is
// include/nccl_inspector/nccl.h.
//
// Threads: every function may be called concurrently from any thread (app,
// launcher, CUDA callback, progress, socket helper). Every function is
// noexcept, never blocks, never allocates on the event path, and treats NULL
// or foreign contexts and handles as "ignore and count".
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "include/nccl_inspector/nccl.h"
#include "src/core/record.h"

namespace ni::core {

// Event types as the core sees them.
enum class EvType : uint8_t {
  kGroup, kColl, kP2p, kProxyOp, kProxyStep, kProxyCtrl, kKernelCh, kNetPlugin,
  kGroupApi, kCollApi, kP2pApi, kKernelLaunch, kCeColl, kCeSync, kCeBatch, kUnknown
};

struct InitArgs {
  int abi = 0;                  // bound ABI version, 1..6
  uint64_t comm_hash = 0;       // v4+; 0 for v1-v3 (learned from the first op descriptor)
  const char* comm_name = nullptr;  // v4+; may be NULL; copied
  int nnodes = 0;               // v4+; 0 = unknown
  int nranks = 0;               // v4+; 0 = unknown
  int rank = -1;                // v4+; -1 = unknown
  ni::abi::DebugLogger logfn = nullptr;  // v4+; may be NULL
  int* mask = nullptr;          // NCCL's process-wide activation mask
};

// Returns the per-comm context, or nullptr when the plugin is disabled or the
// comm cannot be tracked (never an init failure). Sets *mask.
void* comm_init(const InitArgs& a) noexcept;
void comm_finalize(void* ctx) noexcept;

struct CollStart {
  uint64_t seq = 0;
  uint64_t count = 0;
  uint64_t comm_hash = 0;  // v1-v3 only
  Func func = Func::kUnknown;
  DType dtype = DType::kUnknown;
  Algo algo = Algo::kUnknown;
  Proto proto = Proto::kUnknown;
  int root = 0;
  uint8_t n_channels = 0;   // as NCCL reported
  uint8_t n_warps = 0;
  bool channels_exact = false;  // n_channels is the number of channels that will run
  uint64_t user_tag = 0;        // v7: the call's tag (0 none)
  bool sym = false;             // v7: a symmetric-kernel plan (isSymColl)
  uint8_t kernel_variant = 0;   // v7: its kernel's id string, interned (names.h variant_id)
};

struct P2pStart {
  uint64_t count = 0;
  uint64_t comm_hash = 0;  // v1-v3 only
  const void* group = nullptr;  // its Group's handle (v5+: parentGroup; before: the parent itself)
  Func func = Func::kUnknown;
  DType dtype = DType::kUnknown;
  int peer = -1;
  uint8_t n_channels = 0;
  bool channels_exact = false;
  uint64_t user_tag = 0;  // v7: the call's tag (0 none)
};

struct CeStart {
  uint64_t seq = 0;
  uint64_t count = 0;  // elements
  Func func = Func::kUnknown;
  DType dtype = DType::kUnknown;
  int root = 0;
  void* stream = nullptr;  // ceColl.stream (cudaStream_t): where the copies are enqueued
  uint64_t user_tag = 0;   // v7: the call's tag (0 none)
};

struct ProxyOpStart {
  pid_t pid = 0;
  int peer = -1;
  int n_steps = 0;
  int chunk_size = 0;
  uint8_t channel = 0;
  bool is_send = false;
};

// What a NetPlugin event's payload says about one network transfer, decoded
// by the adapter (the payload's layout depends on the network plugin's id and
// version; the core knows none of them). The payload is NCCL scratch memory
// valid only during the call, so it is read there and never kept.
struct NetTransfer {
  static constexpr uint32_t kNoDevice = UINT32_MAX;  // a payload we cannot attribute
  static constexpr uint32_t kSocket = 0xFFFE;        // the socket transport's one "device"
  bool present = false;             // the event carried a payload at all
  uint32_t device = kNoDevice;      // IB device index (16 bits), kSocket, or kNoDevice
  uint64_t bytes = 0;
  int32_t qp = -1;                  // IB queue pair number; -1 unknown
};

// Neutral state arguments. Each adapter fills only what its ABI defines for
// the state at hand; everything else stays zero/false.
struct StateArgs {
  uint64_t trans_size = 0;  // ProxyStep 9/11/12 (v4+), ProxyOp 0-7 cumulative (v1-v3)
  uint64_t ptimer = 0;      // KernelChStop (22)
  bool has_trans_size = false;
  bool has_ptimer = false;
};

void* start_coll(void* ctx, void* parent, int rank, const CollStart& s) noexcept;
void* start_p2p(void* ctx, void* parent, int rank, const P2pStart& s) noexcept;
void* start_ce_coll(void* ctx, void* parent, int rank, const CeStart& s) noexcept;
// CeSync / CeBatch: folded into their CeColl. bytes = ceCollBatch.totalBytes for batches.
void* start_ce_child(void* ctx, void* parent, EvType type, uint64_t bytes) noexcept;
void* start_kernel_ch(void* ctx, void* parent, uint8_t channel, uint64_t ptimer, bool has_ptimer) noexcept;
// The same with a GPU pTimer (ABI v4+), storing the handle in *h and returning
// 0 (ncclSuccess), so that an adapter can end with a tail call.
int start_kernel_ch_gpu(void** h, void* parent, uint32_t channel, uint64_t ptimer) noexcept;
void* start_proxy_op(void* ctx, void* parent, const ProxyOpStart& s) noexcept;
void* start_proxy_step(void* ctx, void* parent, int step) noexcept;
void* start_net_plugin(void* ctx, void* parent, const NetTransfer& t) noexcept;
// Group, GroupApi, CollApi, P2pApi, KernelLaunch, ProxyCtrl.
void* start_marker(void* ctx, EvType type, bool graph_captured) noexcept;
// Group (one kernel plan): a marker numbered per thread, so that the P2P ops
// launched together carry the same group number (their record's `group`).
void* start_group(void* ctx) noexcept;
// CollApi (v6+): a marker that also counts the application's collective
// calls per comm; a call that never gets a Coll event (Broadcast on 2.29+,
// profiler-abi.md §8.8) is an op of its own, timed by the API call.
struct CollApiStart {
  uint64_t count = 0;  // the user's count (CollApi keeps it, and the datatype)
  Func func = Func::kUnknown;
  DType dtype = DType::kUnknown;
  int root = 0;
  bool graph_captured = false;
  uint64_t user_tag = 0;  // v7: the call's tag (0 none)
};
void* start_coll_api(void* ctx, const CollApiStart& a) noexcept;
// Any other type bit (a newer NCCL): counted, NULL handle.
void* start_unknown(void* ctx) noexcept;

// stop() and record_kernel_ch_stop() always return 0 (ncclSuccess), so an
// adapter can return their result as its own (a tail call on the hot path).
int stop(void* handle) noexcept;
void record_state(void* handle, int state, const StateArgs& a) noexcept;
// record_state(handle, KernelChStop, {pTimer}): the hot case, without the args struct.
int record_kernel_ch_stop(void* handle, uint64_t ptimer) noexcept;
// ABI v7 KernelPhase start (parent: its KernelCh handle; phase 0-2). Its end
// is the state kKernelPhaseStop through record_state() with the ptimer.
void* start_kernel_phase(void* parent, uint32_t phase, uint64_t ptimer) noexcept;
// Its end: state kKernelPhaseStop with the stamp (record_state() on anything
// but a KernelPhase handle). Returns 0.
int end_kernel_phase(void* handle, uint64_t ptimer) noexcept;

}  // namespace ni::core

namespace ni::core {
// ncclInspectorMark: a user mark (label up to kMarkLabelMax-1 bytes, cut
// beyond). Returns 0 when recorded, 1 when dropped (counted), -1 when the
// plugin is not active (no communicator initialised, or disabled).
int mark(const char* label) noexcept;
// ncclInspectorNameTag: names a user tag (ncclCollConfig_t.userProfilerTag)
// in the log, for the analyzer's tag groups. The same returns as mark(), and
// -2 for tag 0 (no tag) or a NULL name.
int name_tag(uint64_t tag, const char* name) noexcept;
// ncclInspectorFlush: asks the dump thread to write everything now.
int flush() noexcept;
}  // namespace ni::core
