#include "model.h"

#include <cstdio>

namespace nccl_inspector::analysis {
namespace {
constexpr std::array<std::string_view, static_cast<size_t>(Func::kCount_)> kFuncNames = {
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AllToAll", "AllGatherV",
    "Gather", "Scatter", "SendRecv", "Send", "Recv", "Other"};
constexpr std::array<std::string_view, static_cast<size_t>(Algo::kCount_)> kAlgoNames = {
    "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", "unknown"};
constexpr std::array<std::string_view, static_cast<size_t>(Proto::kCount_)> kProtoNames = {
    "LL", "LL128", "SIMPLE", "unknown"};
constexpr std::array<std::string_view, static_cast<size_t>(Timing::kCount_)> kTimingNames = {
    "gpu", "proxy_cpu", "net_cpu", "enqueue_cpu", "none",
    "kernel_gpu", "kernel_cpu", "collective_cpu", "unknown"};

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'a' && x <= 'z') x = static_cast<char>(x - 32);
    if (y >= 'a' && y <= 'z') y = static_cast<char>(y - 32);
    if (x != y) return false;
  }
  return true;
}
}  // namespace

std::string_view to_string(Func f) { return kFuncNames[static_cast<size_t>(f)]; }
std::string_view to_string(Algo a) { return kAlgoNames[static_cast<size_t>(a)]; }
std::string_view to_string(Proto p) { return kProtoNames[static_cast<size_t>(p)]; }
std::string_view to_string(Timing t) { return kTimingNames[static_cast<size_t>(t)]; }
std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::kColl: return "coll";
    case OpKind::kP2p: return "p2p";
    case OpKind::kCe: return "ce";
  }
  return "?";
}

Func parse_func(std::string_view s) {
  for (size_t i = 0; i + 1 < kFuncNames.size(); ++i)
    if (kFuncNames[i] == s) return static_cast<Func>(i);
  if (iequal(s, "AlltoAll") || iequal(s, "All2All")) return Func::kAllToAll;
  for (size_t i = 0; i + 1 < kFuncNames.size(); ++i)
    if (iequal(kFuncNames[i], s)) return static_cast<Func>(i);
  return Func::kOther;
}
Algo parse_algo(std::string_view s) {
  for (size_t i = 0; i < kAlgoNames.size(); ++i)
    if (kAlgoNames[i] == s) return static_cast<Algo>(i);
  for (size_t i = 0; i < kAlgoNames.size(); ++i)
    if (iequal(kAlgoNames[i], s)) return static_cast<Algo>(i);
  if (iequal(s, "CollNetDirect")) return Algo::kCollnetDirect;
  if (iequal(s, "CollNetChain")) return Algo::kCollnetChain;
  if (iequal(s, "NVLSTree")) return Algo::kNvlsTree;
  return Algo::kUnknown;
}
Proto parse_proto(std::string_view s) {
  for (size_t i = 0; i < kProtoNames.size(); ++i)
    if (kProtoNames[i] == s) return static_cast<Proto>(i);
  for (size_t i = 0; i < kProtoNames.size(); ++i)
    if (iequal(kProtoNames[i], s)) return static_cast<Proto>(i);
  return Proto::kUnknown;
}
Timing parse_timing(std::string_view s) {
  for (size_t i = 0; i < kTimingNames.size(); ++i)
    if (kTimingNames[i] == s) return static_cast<Timing>(i);
  return Timing::kUnknown;
}

std::string size_bucket_label(int bucket) {
  if (bucket < 0) return "0B";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const int unit = bucket / 10;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu%s", 1ULL << (bucket - unit * 10), kUnits[unit]);
  return buf;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.2f%s", bytes, kUnits[u]);
  return buf;
}

std::string hex_hash(std::uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace nccl_inspector::analysis
