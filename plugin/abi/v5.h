// NCCL profiler ABI v5 (ncclProfiler_v5, NCCL 2.28). Our own declaration from
// profiler-abi.md §5 "v5": 64-bit type, API events, parentGroup on coll/p2p.
#pragma once
#include "plugin/abi/v4.h"

namespace ni::abi {

#define NCCL_ABI_V5_MEMBERS                 \
  struct {                                  \
    bool graphCaptured;                     \
    int groupDepth;                         \
  } groupApi;                               \
  struct {                                  \
    const char* func;                       \
    size_t count;                           \
    const char* datatype;                   \
    int root;                               \
    void* stream;                           \
    bool graphCaptured;                     \
  } collApi;                                \
  struct {                                  \
    const char* func;                       \
    size_t count;                           \
    const char* datatype;                   \
    void* stream;                           \
    bool graphCaptured;                     \
  } p2pApi;                                 \
  struct {                                  \
    void* stream;                           \
  } kernelLaunch;                           \
  struct {                                  \
    uint64_t seqNumber;                     \
    const char* func;                       \
    const void* sendBuff;                   \
    void* recvBuff;                         \
    size_t count;                           \
    int root;                               \
    const char* datatype;                   \
    uint8_t nChannels;                      \
    uint8_t nWarps;                         \
    const char* algo;                       \
    const char* proto;                      \
    void* parentGroup;                      \
  } coll;                                   \
  struct {                                  \
    const char* func;                       \
    void* buff;                             \
    const char* datatype;                   \
    size_t count;                           \
    int peer;                               \
    uint8_t nChannels;                      \
    void* parentGroup;                      \
  } p2p;                                    \
  struct {                                  \
    pid_t pid;                              \
    uint8_t channelId;                      \
    int peer;                               \
    int nSteps;                             \
    int chunkSize;                          \
    int isSend;                             \
  } proxyOp;                                \
  struct {                                  \
    int step;                               \
  } proxyStep;                              \
  struct {                                  \
    uint8_t channelId;                      \
    uint64_t pTimer;                        \
  } kernelCh;                               \
  struct {                                  \
    int64_t id;                             \
    void* data;                             \
  } netPlugin;

struct EventDescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCL_ABI_V5_MEMBERS
  };
};

using StateArgsV5 = StateArgsV4;
using ProfilerV5 = ProfilerTable<InitV5, EventDescrV5, StateArgsV5>;

static_assert(sizeof(EventDescrV5) == 112);
static_assert(offsetof(EventDescrV5, type) == 0);
static_assert(offsetof(EventDescrV5, parentObj) == 8);
static_assert(offsetof(EventDescrV5, rank) == 16);
static_assert(offsetof(EventDescrV5, groupApi) == 24);
static_assert(sizeof(EventDescrV5::groupApi) == 8);
static_assert(sizeof(EventDescrV5::collApi) == 48);
static_assert(sizeof(EventDescrV5::p2pApi) == 40);
static_assert(sizeof(EventDescrV5::kernelLaunch) == 8);
static_assert(sizeof(EventDescrV5::coll) == 88);
static_assert(sizeof(EventDescrV5::p2p) == 48);
static_assert(sizeof(EventDescrV5::proxyOp) == 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, groupApi, graphCaptured, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, groupApi, groupDepth, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, func, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, count, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, datatype, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, root, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, stream, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, collApi, graphCaptured, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2pApi, func, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2pApi, count, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2pApi, datatype, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2pApi, stream, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2pApi, graphCaptured, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, kernelLaunch, stream, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, seqNumber, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, func, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, sendBuff, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, recvBuff, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, count, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, root, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, datatype, 72);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, nChannels, 80);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, nWarps, 81);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, algo, 88);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, proto, 96);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, coll, parentGroup, 104);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, func, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, buff, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, datatype, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, count, 48);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, peer, 56);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, nChannels, 60);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, p2p, parentGroup, 64);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, pid, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, channelId, 28);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, peer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, nSteps, 36);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, chunkSize, 40);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyOp, isSend, 44);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, proxyStep, step, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, kernelCh, channelId, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, kernelCh, pTimer, 32);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, netPlugin, id, 24);
NCCL_ABI_CHECK_OFFSET(EventDescrV5, netPlugin, data, 32);
static_assert(sizeof(ProfilerV5) == 48);

}  // namespace ni::abi
