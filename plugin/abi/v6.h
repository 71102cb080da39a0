// NCCL profiler ABI v6 (ncclProfiler_v6, NCCL 2.29+). Our own declaration from
// profiler-abi.md §5 "v6": all v5 members plus copy-engine (CE) events.
#pragma once
#include "plugin/abi/v5.h"

namespace ni::abi {

struct EventDescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCL_ABI_V5_MEMBERS
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;  // element count
      int root;
      const char* datatype;
      const char* syncStrategy;  // "MC" or "UC"
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
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
  };
};

using StateArgsV6 = StateArgsV5;
using ProfilerV6 = ProfilerTable<InitV5, EventDescrV6, StateArgsV6>;

static_assert(sizeof(EventDescrV6) == 112);
static_assert(offsetof(EventDescrV6, groupApi) == 24);
static_assert(sizeof(EventDescrV6::ceColl) == 88);
static_assert(sizeof(EventDescrV6::ceCollSync) == 8);
static_assert(sizeof(EventDescrV6::ceCollBatch) == 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, coll, seqNumber, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, coll, parentGroup, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, p2p, parentGroup, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, kernelCh, pTimer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, seqNumber, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, func, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, sendBuff, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, recvBuff, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, count, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, root, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, datatype, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, syncStrategy, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, intraBatchSync, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, batchSize, 92);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, numBatches, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, ceSeqNum, 100);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceColl, stream, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceCollSync, isComplete, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceCollSync, nRanks, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceCollBatch, numOps, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceCollBatch, totalBytes, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV6, ceCollBatch, useIntraSync, 40);
static_assert(sizeof(ProfilerV6) == 48);

}  // namespace ni::abi
