// NCCL profiler ABI v4 (ncclProfiler_v4, NCCL 2.27). Our own declaration from
// profiler-abi.md §5 "v4": comm name/hash move into init, kernelCh gains pTimer.
#pragma once
#include "plugin/abi/v3.h"

namespace ni::abi {

struct EventDescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
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
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
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
      uint64_t pTimer;  // GPU globaltimer, ns
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

// State args v4 = v5 = v6, sizeof 8.
union StateArgsV4 {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

using ProfilerV4 = ProfilerTable<InitV4, EventDescrV4, StateArgsV4>;

static_assert(sizeof(EventDescrV4) == 104);
static_assert(offsetof(EventDescrV4, coll) == 24);
static_assert(sizeof(EventDescrV4::coll) == 80);
static_assert(sizeof(EventDescrV4::p2p) == 40);
static_assert(sizeof(EventDescrV4::proxyOp) == 24);
static_assert(sizeof(EventDescrV4::kernelCh) == 16);
static_assert(sizeof(EventDescrV4::netPlugin) == 16);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, seqNumber, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, func, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, sendBuff, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, recvBuff, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, count, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, root, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, datatype, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, nChannels, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, nWarps, 81);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, algo, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, coll, proto, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, func, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, buff, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, datatype, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, count, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, peer, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, p2p, nChannels, 60);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, pid, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, channelId, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, peer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, nSteps, 36);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, chunkSize, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, proxyStep, step, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, kernelCh, channelId, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, kernelCh, pTimer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, netPlugin, id, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV4, netPlugin, data, 32);

static_assert(sizeof(StateArgsV4) == 8);
static_assert(offsetof(StateArgsV4, proxyStep) == 0 && offsetof(StateArgsV4, proxyCtrl) == 0);
static_assert(offsetof(StateArgsV4, netPlugin) == 0 && offsetof(StateArgsV4, kernelCh) == 0);
static_assert(sizeof(ProfilerV4) == 48);

}  // namespace ni::abi
