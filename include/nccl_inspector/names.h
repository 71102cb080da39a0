// The NCCL vocabulary as it appears in logs: function, datatype, algorithm,
// protocol, timing, transport and op-kind names, each written once. The plugin
// writes these names, the analyzer reads them and the emulator puts the NCCL
// spellings into the descriptors it hands a plugin.
//
// The function, datatype, algorithm and protocol tables are indexed by NCCL's
// own codes (ncclFunc_t, ncclDataType_t, the NCCL_ALGO_* and NCCL_PROTO_*
// numbers; profiler-abi.md §5), so a code from a v1 descriptor is an index.
// Header-only and constexpr: no allocation, safe on the plugin's hot path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ni::names {

// ncclFunc_t order; the last four are newer than the v1 descriptor's codes.
inline constexpr std::string_view kFunc[] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",  "SendRecv", "Send",      "Recv",
    "AlltoAll",  "Gather", "Scatter",   "AllGatherV",    "PutSignal",  "Signal",   "WaitSignal"};
// The functions a v1 descriptor can carry as a code, and the ones NCCL's
// descriptor strings name (Broadcast .. Scatter).
inline constexpr std::size_t kFuncV1Codes = 8;
inline constexpr std::size_t kFuncNcclStrings = 11;
inline constexpr std::string_view kFuncUnknown = "Unknown";

struct Dtype {
  std::string_view log;   // as written in our logs ("float32")
  std::string_view nccl;  // as NCCL names it in descriptors ("ncclFloat32")
  std::uint32_t size;     // bytes per element
};
// ncclDataType_t order.
inline constexpr Dtype kDtype[] = {
    {"int8", "ncclInt8", 1},         {"uint8", "ncclUint8", 1},           {"int32", "ncclInt32", 4},
    {"uint32", "ncclUint32", 4},     {"int64", "ncclInt64", 8},           {"uint64", "ncclUint64", 8},
    {"float16", "ncclFloat16", 2},   {"float32", "ncclFloat32", 4},       {"float64", "ncclFloat64", 8},
    {"bfloat16", "ncclBfloat16", 2}, {"float8e4m3", "ncclFloat8e4m3", 1}, {"float8e5m2", "ncclFloat8e5m2", 1}};

// NCCL_ALGO_* order.
inline constexpr std::string_view kAlgo[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                             "NVLS", "NVLS_TREE", "PAT"};
// NCCL_PROTO_* order.
inline constexpr std::string_view kProto[] = {"LL", "LL128", "SIMPLE"};
// What the log says for a datatype, algorithm or protocol it does not know.
inline constexpr std::string_view kUnknown = "unknown";

// The record's "timing" values (log-format.md): where its duration came from.
inline constexpr std::string_view kTiming[] = {"gpu", "proxy_cpu", "net_cpu", "enqueue_cpu", "none", "cuda_event"};
// The record's "transport" values.
inline constexpr std::string_view kTransport[] = {"unknown", "intra_node", "network"};
// The record's "kind" values.
inline constexpr std::string_view kKind[] = {"coll", "p2p", "ce"};

// Index of s in a table, or -1.
template <std::size_t N>
constexpr int index_of(const std::string_view (&table)[N], std::string_view s) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (table[i] == s) return static_cast<int>(i);
  return -1;
}
// table[i], or fallback past its end.
template <std::size_t N>
constexpr std::string_view at(const std::string_view (&table)[N], std::size_t i, std::string_view fallback) noexcept {
  return i < N ? table[i] : fallback;
}

}  // namespace ni::names
