// Our own declarations of the types shared by every version of the NCCL
// profiler plugin ABI. Written from ../shared/docs/profiler-abi.md §1–§3 and
// §5 (facts: enum values, sizes, offsets); no NCCL header is included or
// copied. Everything lives in namespace ni::abi so it can never clash with an
// application that also includes nccl.h. What the capture core needs as well
// (the logger, event-type bits, state numbers, limits) is in
// include/nccl_inspector/nccl.h, included here; the rest (result codes,
// descriptor codes, NetPlugin payloads, the table and init shapes) is for the
// adapters alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "include/nccl_inspector/nccl.h"

namespace ni::abi {

// ncclResult_t: a plain C enum, 4 bytes.
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
};
static_assert(sizeof(Result) == 4);

// NetPlugin plugin-id encoding: low 16 bits version, next 16 bits type.
inline constexpr int64_t kNetVerMask = 0x0000FFFF;
inline constexpr int64_t kNetTypeMask = 0xFFFF0000;
inline constexpr int64_t kNetTypeIb = 1 << 16;
inline constexpr int64_t kNetTypeSock = 2 << 16;
inline constexpr int64_t kNetIbIdV1 = kNetTypeIb | 1;    // 0x10001
inline constexpr int64_t kNetSockIdV1 = kNetTypeSock | 1;// 0x20001

// IB NetPlugin payload (net_ib v1), sizeof 40.
struct NetIbDescrV1 {
  uint8_t type;  // kNetIbQp
  struct {
    int device;
    uint64_t wr_id;
    int opcode;
    int qpNum;
    size_t length;
  } qp;
};
inline constexpr uint8_t kNetIbQp = 1 << 0;

// Socket NetPlugin payload (net_socket v1), sizeof 24.
struct NetSockDescrV1 {
  uint8_t type;  // kNetSocket
  struct {
    int fd;
    int op;  // 0 send, 1 recv
    size_t length;
  } sock;
};
inline constexpr uint8_t kNetSocket = 1 << 0;
inline constexpr int kSocketSend = 0;
inline constexpr int kSocketRecv = 1;

static_assert(sizeof(NetIbDescrV1) == 40);
static_assert(offsetof(NetIbDescrV1, qp) + offsetof(decltype(NetIbDescrV1::qp), device) == 8);
static_assert(offsetof(NetIbDescrV1, qp) + offsetof(decltype(NetIbDescrV1::qp), wr_id) == 16);
static_assert(offsetof(NetIbDescrV1, qp) + offsetof(decltype(NetIbDescrV1::qp), opcode) == 24);
static_assert(offsetof(NetIbDescrV1, qp) + offsetof(decltype(NetIbDescrV1::qp), qpNum) == 28);
static_assert(offsetof(NetIbDescrV1, qp) + offsetof(decltype(NetIbDescrV1::qp), length) == 32);
static_assert(sizeof(NetSockDescrV1) == 24);
static_assert(offsetof(NetSockDescrV1, sock) + offsetof(decltype(NetSockDescrV1::sock), fd) == 8);
static_assert(offsetof(NetSockDescrV1, sock) + offsetof(decltype(NetSockDescrV1::sock), op) == 12);
static_assert(offsetof(NetSockDescrV1, sock) + offsetof(decltype(NetSockDescrV1::sock), length) == 16);

// Numeric codes used by the v1 descriptor (uint8_t fields), §5 v1 table.
// ncclFunc_t
enum FuncCode : uint8_t {
  kFuncBroadcast = 0,
  kFuncReduce = 1,
  kFuncAllGather = 2,
  kFuncReduceScatter = 3,
  kFuncAllReduce = 4,
  kFuncSend = 6,
  kFuncRecv = 7,
};
// ncclDataType_t
enum DataTypeCode : uint8_t {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
enum AlgoCode : uint8_t {
  kAlgoTree = 0,
  kAlgoRing = 1,
  kAlgoCollnetDirect = 2,
  kAlgoCollnetChain = 3,
  kAlgoNvls = 4,
  kAlgoNvlsTree = 5,
  kAlgoPat = 6,
};
enum ProtoCode : uint8_t { kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2 };

// The function table: identical shape in every version (§4), sizeof 48.
template <typename InitFn, typename Descr, typename StateArgs>
struct ProfilerTable {
  const char* name;
  InitFn init;
  Result (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, EventState eState, StateArgs* eStateArgs);
  Result (*finalize)(void* context);
};

// v1-v3 init.
using InitV1 = Result (*)(void** context, int* eActivationMask);
// v4 init.
using InitV4 = Result (*)(void** context, int* eActivationMask, const char* commName,
                          uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
// v5/v6 init: commId moved ahead of the mask pointer.
using InitV5 = Result (*)(void** context, uint64_t commId, int* eActivationMask,
                          const char* commName, int nNodes, int nranks, int rank,
                          DebugLogger logfn);

}  // namespace ni::abi

// Compile-time check helper for "field F of union member M of descriptor D is at offset O".
#define NCCL_ABI_CHECK_OFFSET(D, M, F, O) \
  static_assert(offsetof(D, M) + offsetof(decltype(D::M), F) == (O), #D "." #M "." #F " offset")
