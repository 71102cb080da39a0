// NCCL profiler ABI v2 (ncclProfiler_v2, NCCL 2.24-2.25). Our own declaration
// from profiler-abi.md §5 "v2": strings replace the v1 numeric codes.
#pragma once
#include "plugin/abi/v1.h"

namespace ni::abi {

struct EventDescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
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
  };
};

using ProfilerV2 = ProfilerTable<InitV1, EventDescrV2, StateArgsV2>;

static_assert(sizeof(EventDescrV2) == 128);
static_assert(offsetof(EventDescrV2, coll) == 24);
static_assert(sizeof(EventDescrV2::coll) == 104);
static_assert(sizeof(EventDescrV2::p2p) == 56);
static_assert(sizeof(EventDescrV2::proxyOp) == 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, name, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, commHash, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, seqNumber, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, func, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, sendBuff, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, recvBuff, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, count, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, root, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, datatype, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, trafficBytes, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, nMaxChannels, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, nWarps, 105);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, algo, 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, coll, proto, 120);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, name, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, commHash, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, func, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, buff, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, datatype, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, count, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, p2p, peer, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, pid, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, channelId, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, peer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, nSteps, 36);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, chunkSize, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV2, proxyStep, step, 24);
static_assert(sizeof(ProfilerV2) == 48);

}  // namespace ni::abi
