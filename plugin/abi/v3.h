// NCCL profiler ABI v3 (ncclProfiler_v3, NCCL 2.26). Our own declaration from
// profiler-abi.md §5 "v3": coll.trafficBytes removed; kernelCh and netPlugin added.
#pragma once
#include "plugin/abi/v2.h"

namespace ni::abi {

struct EventDescrV3 {
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
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

using ProfilerV3 = ProfilerTable<InitV1, EventDescrV3, StateArgsV3>;

static_assert(sizeof(EventDescrV3) == 120);
static_assert(offsetof(EventDescrV3, coll) == 24);
static_assert(sizeof(EventDescrV3::coll) == 96);
static_assert(sizeof(EventDescrV3::p2p) == 56);
static_assert(sizeof(EventDescrV3::kernelCh) == 1);
static_assert(sizeof(EventDescrV3::netPlugin) == 16);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, name, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, commHash, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, seqNumber, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, func, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, sendBuff, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, recvBuff, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, count, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, root, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, datatype, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, nMaxChannels, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, nWarps, 97);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, algo, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, coll, proto, 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, p2p, func, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, p2p, peer, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, proxyOp, pid, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, proxyStep, step, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, kernelCh, channelId, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, netPlugin, id, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV3, netPlugin, data, 32);
static_assert(sizeof(ProfilerV3) == 48);

}  // namespace ni::abi
