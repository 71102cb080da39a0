// NCCL profiler ABI v1 (ncclProfiler_v1, NCCL 2.23). Our own declaration from
// profiler-abi.md §5 "v1"; sizes and offsets are static_asserted below.
#pragma once
#include "plugin/abi/common.h"

namespace ni::abi {

struct EventDescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;  // always NULL in 2.23-2.26
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;      // FuncCode
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;  // DataTypeCode
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;      // AlgoCode
      uint8_t proto;     // ProtoCode
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
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

// State args v1 = v2 = v3, sizeof 16.
union StateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};
using StateArgsV2 = StateArgsV1;
using StateArgsV3 = StateArgsV1;

using ProfilerV1 = ProfilerTable<InitV1, EventDescrV1, StateArgsV1>;

static_assert(sizeof(EventDescrV1) == 120);
static_assert(alignof(EventDescrV1) == 8);
static_assert(offsetof(EventDescrV1, type) == 0);
static_assert(offsetof(EventDescrV1, parentObj) == 8);
static_assert(offsetof(EventDescrV1, rank) == 16);
static_assert(offsetof(EventDescrV1, coll) == 24);
static_assert(sizeof(EventDescrV1::coll) == 96);
static_assert(sizeof(EventDescrV1::p2p) == 56);
static_assert(sizeof(EventDescrV1::proxyOp) == 24);
static_assert(sizeof(EventDescrV1::proxyStep) == 4);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, name, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, commHash, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, seqNumber, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, func, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, sendBuff, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, recvBuff, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, count, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, root, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, datatype, 84);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, op, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, trafficBytes, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, nMaxChannels, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, nWarps, 105);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, algo, 106);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, proto, 107);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, isCollnet, 108);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, coll, isNvls, 112);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, name, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, commHash, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, func, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, buff, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, datatype, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, count, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, p2p, peer, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, pid, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, channelId, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, peer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, nSteps, 36);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, chunkSize, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV1, proxyStep, step, 24);

static_assert(sizeof(StateArgsV1) == 16);
static_assert(offsetof(StateArgsV1, proxyOp) + offsetof(decltype(StateArgsV1::proxyOp), transSize) == 0);
static_assert(offsetof(StateArgsV1, proxyOp) + offsetof(decltype(StateArgsV1::proxyOp), steps) == 8);
static_assert(offsetof(StateArgsV1, proxyCtrl) + offsetof(decltype(StateArgsV1::proxyCtrl), appendedProxyOps) == 0);
static_assert(sizeof(ProfilerV1) == 48);

}  // namespace ni::abi
