// NCCL profiler ABI v7 (ncclProfiler_v7, NCCL 2.31+). Our own declaration from
// profiler-abi.md §13.1: every v6 member keeps its offset; v7 appends the
// user tag to the API, Coll, P2p and CeColl members, the symmetric-kernel id to
// Coll, and adds the KernelPhase member. The descriptor grows to 136 bytes
// because Coll grows to 112.
//
// RCCL's port of v7 has no userTag fields (its descriptors are shorter): an
// adapter reads a userTag only when the NCCL that bound it has one.
#pragma once
#include "plugin/abi/v6.h"

namespace ni::abi {

struct EventDescrV7 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
      const char* kernelVariant;  // symmetric kernels: the kernel's id; NULL otherwise
      bool isSymColl;
      uint64_t userTag;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
      uint64_t userTag;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
      uint64_t userTag;
    } ceColl;
    struct {
      bool isComplete;
      uint32_t nRanks;
    } ceCollSync;
    struct {
      uint32_t numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
    struct {
      uint8_t channelId;
      uint8_t phaseId;  // 0 initial_sync, 1 compute, 2 final_sync
      const char* phaseName;
      uint64_t pTimer;  // the phase's start; its stop (state 31) carries the end
    } kernelPhase;
  };
};

using StateArgsV7 = StateArgsV6;
using ProfilerV7 = ProfilerTable<InitV5, EventDescrV7, StateArgsV7>;

// The measured layout (x86-64): v6's offsets unchanged, the appended fields where §13.1 says.
static_assert(sizeof(EventDescrV7) == 136);
static_assert(offsetof(EventDescrV7, groupApi) == 24);
static_assert(sizeof(EventDescrV7::coll) == 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, groupApi, graphCaptured, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, groupApi, groupDepth, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, collApi, func, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, collApi, root, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, collApi, graphCaptured, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, collApi, userTag, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2pApi, graphCaptured, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2pApi, userTag, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelLaunch, stream, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, seqNumber, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, datatype, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, nChannels, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, nWarps, 81);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, algo, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, proto, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, parentGroup, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, kernelVariant, 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, isSymColl, 120);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, coll, userTag, 128);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2p, peer, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2p, nChannels, 60);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2p, parentGroup, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, p2p, userTag, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, proxyOp, channelId, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, proxyStep, step, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelCh, channelId, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelCh, pTimer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, netPlugin, id, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, netPlugin, data, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, ceColl, stream, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, ceColl, userTag, 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, ceCollSync, nRanks, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, ceCollBatch, totalBytes, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelPhase, channelId, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelPhase, phaseId, 25);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelPhase, phaseName, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV7, kernelPhase, pTimer, 40);
static_assert(sizeof(ProfilerV7) == 48);

}  // namespace ni::abi
