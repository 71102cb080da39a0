// The NCCL vocabulary both halves of the plugin speak: the logger NCCL hands
// the plugin (levels, subsystem flags, the function type), the event-type bits
// of the activation mask, the recordEventState state numbers and the limits
// that size per-op arrays. These are facts of the NCCL profiler ABI
// (profiler-abi.md §1-§3) that do not change between its versions, so the
// per-version declarations (plugin/abi/) and the version-neutral capture core
// (src/core) both include this header and neither includes the other: the
// dependency runs from plugin/ down to the core, and from both down to here.
//
// Everything lives in namespace ni::abi, as the per-version declarations do,
// so it can never clash with an application that also includes nccl.h.
#pragma once

#include <cstdint>

namespace ni::abi {

// ncclDebugLogLevel.
enum LogLevel : int {
  kLogNone = 0,
  kLogVersion = 1,
  kLogWarn = 2,
  kLogInfo = 3,
  kLogAbort = 4,
  kLogTrace = 5,
};

// Subsystem flags passed to the logger.
inline constexpr unsigned long kSubsysInit = 0x1;
inline constexpr unsigned long kSubsysColl = 0x2;
inline constexpr unsigned long kSubsysP2p = 0x4;
inline constexpr unsigned long kSubsysNet = 0x10;
inline constexpr unsigned long kSubsysEnv = 0x80;
inline constexpr unsigned long kSubsysProxy = 0x400;
inline constexpr unsigned long kSubsysProfile = 0x4000;
inline constexpr unsigned long kSubsysAll = ~0ul;

// ncclDebugLogger_t (v4+ init argument).
using DebugLogger = void (*)(LogLevel level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// Event-type bits: the descriptor's `type` and the activation mask (§2).
enum EventType : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,     // 2.26+
  kNetPlugin = 1u << 7,    // 2.26+
  kGroupApi = 1u << 8,     // 2.28+
  kCollApi = 1u << 9,      // 2.28+
  kP2pApi = 1u << 10,      // 2.28+
  kKernelLaunch = 1u << 11,// 2.28+
  kCeColl = 1u << 12,      // 2.29+
  kCeSync = 1u << 13,      // 2.29+
  kCeBatch = 1u << 14,     // 2.29+
  kKernelPhase = 1u << 15, // 2.31+ (ABI v7)
};
inline constexpr int kApiEventBits = kGroupApi | kCollApi | kP2pApi | kKernelLaunch;
inline constexpr int kCeEventBits = kCeColl | kCeSync | kCeBatch;

// recordEventState states (§3). A plain 4-byte C enum, passed by value.
enum EventState : int {
  kProxyOpSendPosted = 0,  // 0..7: emitted by 2.23-2.26 only
  kProxyOpSendRemFifoWait = 1,
  kProxyOpSendTransmitted = 2,
  kProxyOpSendDone = 3,
  kProxyOpRecvPosted = 4,
  kProxyOpRecvReceived = 5,
  kProxyOpRecvTransmitted = 6,
  kProxyOpRecvDone = 7,
  kProxyStepSendGPUWait = 8,
  kProxyStepSendWait = 9,
  kProxyStepRecvWait = 10,
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGPUWait = 12,
  kProxyCtrlIdle = 13,
  kProxyCtrlActive = 14,
  kProxyCtrlSleep = 15,
  kProxyCtrlWakeup = 16,
  kProxyCtrlAppend = 17,
  kProxyCtrlAppendEnd = 18,
  kProxyOpInProgress = 19,      // 2.27+
  kProxyStepSendPeerWait = 20,  // 2.27+
  kNetPluginUpdate = 21,        // 2.27+
  kKernelChStop = 22,           // 2.27+
  kGroupStartApiStop = 23,      // 2.28+
  kGroupEndApiStart = 24,       // 2.28+
  kCeCollStart = 25,            // 25..30: defined by 2.29, never emitted
  kCeCollComplete = 26,
  kCeSyncStart = 27,
  kCeSyncComplete = 28,
  kCeBatchStart = 29,
  kCeBatchComplete = 30,
  kKernelPhaseStop = 31,        // 2.31+ (ABI v7): a KernelPhase's end, in kernelCh.pTimer
};
static_assert(sizeof(EventState) == 4);

// MAXCHANNELS is 32 in 2.23-2.24 and 64 from 2.25; size per-channel arrays to 64.
inline constexpr int kMaxChannels = 64;
// NCCL_STEPS: outstanding step handles per sub.
inline constexpr int kNcclSteps = 8;

}  // namespace ni::abi
