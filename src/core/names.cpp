#include "names.h"

#include <atomic>
#include <cstring>

namespace ni {
namespace {

constexpr std::string_view kFuncNames[] = {
    "Broadcast", "Reduce",   "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
    "Send",      "Recv",     "AlltoAll",  "Gather",        "Scatter",   "AllGatherV",
    "PutSignal", "Signal",   "WaitSignal", "Unknown"};
static_assert(std::size(kFuncNames) == static_cast<size_t>(Func::kCount_));

constexpr std::string_view kDtypeNames[] = {
    "int8",    "uint8",   "int32",    "uint32",     "int64",      "uint64", "float16",
    "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2", "unknown"};
static_assert(std::size(kDtypeNames) == static_cast<size_t>(DType::kCount_));
constexpr uint32_t kDtypeSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1, 0};
static_assert(std::size(kDtypeSizes) == static_cast<size_t>(DType::kCount_));

constexpr std::string_view kAlgoNames[] = {"TREE", "RING",      "COLLNET_DIRECT", "COLLNET_CHAIN",
                                           "NVLS", "NVLS_TREE", "PAT",            "unknown"};
static_assert(std::size(kAlgoNames) == static_cast<size_t>(Algo::kCount_));
constexpr std::string_view kProtoNames[] = {"LL", "LL128", "SIMPLE", "unknown"};
static_assert(std::size(kProtoNames) == static_cast<size_t>(Proto::kCount_));
constexpr std::string_view kTimingNames[] = {"gpu", "proxy_cpu", "net_cpu", "enqueue_cpu", "none"};
static_assert(std::size(kTimingNames) == static_cast<size_t>(TimingSource::kCount_));
constexpr std::string_view kTransportNames[] = {"unknown", "intra_node", "network"};
static_assert(std::size(kTransportNames) == static_cast<size_t>(Transport::kCount_));

template <typename E, size_t N>
std::string_view lookup(const std::string_view (&table)[N], E e) noexcept {
  auto i = static_cast<size_t>(e);
  return i < N ? table[i] : table[N - 1];
}

bool eq(const char* a, const char* b) noexcept { return std::strcmp(a, b) == 0; }

}  // namespace

std::string_view func_name(Func f) noexcept { return lookup(kFuncNames, f); }
std::string_view dtype_name(DType d) noexcept { return lookup(kDtypeNames, d); }
std::string_view algo_name(Algo a) noexcept { return lookup(kAlgoNames, a); }
std::string_view proto_name(Proto p) noexcept { return lookup(kProtoNames, p); }
std::string_view timing_name(TimingSource t) noexcept { return lookup(kTimingNames, t); }
std::string_view transport_name(Transport t) noexcept { return lookup(kTransportNames, t); }
std::string_view kind_name(OpKind k) noexcept {
  switch (k) {
    case OpKind::kColl: return "coll";
    case OpKind::kP2p: return "p2p";
    case OpKind::kCe: return "ce";
  }
  return "coll";
}

uint32_t dtype_size(DType d) noexcept {
  auto i = static_cast<size_t>(d);
  return i < std::size(kDtypeSizes) ? kDtypeSizes[i] : 0;
}

// NCCL passes static string literals, so the same pointer always means the
// same name: names.h looks the pointer up in a tiny direct-mapped cache
// ((pointer << 8) | code per relaxed 64-bit word); a miss lands here, parses
// the string (a switch on the first character, then one strcmp) and fills the
// entry. A racing update only costs a later miss.
namespace {
Func func_from_nccl_uncached(const char* s) noexcept;
DType dtype_from_nccl_uncached(const char* s) noexcept;
Algo algo_from_nccl_uncached(const char* s) noexcept;
Proto proto_from_nccl_uncached(const char* s) noexcept;

template <typename E, E (*Parse)(const char*) noexcept>
E parse_and_cache(const char* s) noexcept {
  if (s == nullptr) return E::kUnknown;
  const auto p = reinterpret_cast<uintptr_t>(s);
  const E e = Parse(s);
  if ((p >> 55) != 0) return e;  // not a user-space pointer we can pack
  // Relaxed: no data hangs off the entry (pairs with the relaxed load in names.h).
  detail::NameCache<E>::slots[(p >> 3) & 3].store((static_cast<uint64_t>(p) << 8) | static_cast<uint8_t>(e),
                                                 std::memory_order_relaxed);
  return e;
}
}  // namespace

namespace detail {
Func func_from_nccl_miss(const char* s) noexcept { return parse_and_cache<Func, func_from_nccl_uncached>(s); }
DType dtype_from_nccl_miss(const char* s) noexcept { return parse_and_cache<DType, dtype_from_nccl_uncached>(s); }
Algo algo_from_nccl_miss(const char* s) noexcept { return parse_and_cache<Algo, algo_from_nccl_uncached>(s); }
Proto proto_from_nccl_miss(const char* s) noexcept { return parse_and_cache<Proto, proto_from_nccl_uncached>(s); }
}  // namespace detail

namespace {

Func func_from_nccl_uncached(const char* s) noexcept {
  if (s == nullptr) return Func::kUnknown;
  switch (s[0]) {
    case 'A':
      if (eq(s, "AllReduce")) return Func::kAllReduce;
      if (eq(s, "AllGather")) return Func::kAllGather;
      if (eq(s, "AlltoAll")) return Func::kAlltoAll;
      if (eq(s, "AllGatherV")) return Func::kAllGatherV;
      break;
    case 'R':
      if (eq(s, "ReduceScatter")) return Func::kReduceScatter;
      if (eq(s, "Reduce")) return Func::kReduce;
      if (eq(s, "Recv")) return Func::kRecv;
      break;
    case 'B':
      if (eq(s, "Broadcast")) return Func::kBroadcast;
      break;
    case 'S':
      if (eq(s, "Send")) return Func::kSend;
      if (eq(s, "SendRecv")) return Func::kSendRecv;
      if (eq(s, "Scatter")) return Func::kScatter;
      if (eq(s, "Signal")) return Func::kSignal;
      break;
    case 'G':
      if (eq(s, "Gather")) return Func::kGather;
      break;
    case 'P':
      if (eq(s, "PutSignal")) return Func::kPutSignal;
      break;
    case 'W':
      if (eq(s, "WaitSignal")) return Func::kWaitSignal;
      break;
    default: break;
  }
  return Func::kUnknown;
}

DType dtype_from_nccl_uncached(const char* s) noexcept {
  if (s == nullptr || std::strncmp(s, "nccl", 4) != 0) return DType::kUnknown;
  const char* t = s + 4;
  switch (t[0]) {
    case 'I':
      if (eq(t, "Int8")) return DType::kInt8;
      if (eq(t, "Int32")) return DType::kInt32;
      if (eq(t, "Int64")) return DType::kInt64;
      break;
    case 'U':
      if (eq(t, "Uint8")) return DType::kUint8;
      if (eq(t, "Uint32")) return DType::kUint32;
      if (eq(t, "Uint64")) return DType::kUint64;
      break;
    case 'F':
      if (eq(t, "Float32")) return DType::kFloat32;
      if (eq(t, "Float16")) return DType::kFloat16;
      if (eq(t, "Float64")) return DType::kFloat64;
      if (eq(t, "Float8e4m3")) return DType::kFloat8e4m3;
      if (eq(t, "Float8e5m2")) return DType::kFloat8e5m2;
      break;
    case 'B':
      if (eq(t, "Bfloat16")) return DType::kBfloat16;
      break;
    default: break;
  }
  return DType::kUnknown;
}

Algo algo_from_nccl_uncached(const char* s) noexcept {
  if (s == nullptr) return Algo::kUnknown;
  if (eq(s, "RING")) return Algo::kRing;
  if (eq(s, "TREE")) return Algo::kTree;
  if (eq(s, "NVLS")) return Algo::kNvls;
  if (eq(s, "NVLS_TREE")) return Algo::kNvlsTree;
  if (eq(s, "PAT")) return Algo::kPat;
  if (eq(s, "COLLNET_DIRECT")) return Algo::kCollnetDirect;
  if (eq(s, "COLLNET_CHAIN")) return Algo::kCollnetChain;
  return Algo::kUnknown;
}

Proto proto_from_nccl_uncached(const char* s) noexcept {
  if (s == nullptr) return Proto::kUnknown;
  if (eq(s, "SIMPLE")) return Proto::kSimple;
  if (eq(s, "LL128")) return Proto::kLL128;
  if (eq(s, "LL")) return Proto::kLL;
  return Proto::kUnknown;
}

}  // namespace

Func func_from_code(uint8_t c) noexcept {
  switch (c) {
    case 0: return Func::kBroadcast;
    case 1: return Func::kReduce;
    case 2: return Func::kAllGather;
    case 3: return Func::kReduceScatter;
    case 4: return Func::kAllReduce;
    case 5: return Func::kSendRecv;
    case 6: return Func::kSend;
    case 7: return Func::kRecv;
    default: return Func::kUnknown;
  }
}
DType dtype_from_code(uint8_t c) noexcept {
  return c < static_cast<uint8_t>(DType::kUnknown) ? static_cast<DType>(c) : DType::kUnknown;
}
Algo algo_from_code(uint8_t c) noexcept {
  return c < static_cast<uint8_t>(Algo::kUnknown) ? static_cast<Algo>(c) : Algo::kUnknown;
}
Proto proto_from_code(uint8_t c) noexcept {
  return c < static_cast<uint8_t>(Proto::kUnknown) ? static_cast<Proto>(c) : Proto::kUnknown;
}

double busbw_factor(Func f, OpKind k, int nranks) noexcept {
  if (k == OpKind::kP2p) return 1.0;
  double n = nranks > 0 ? nranks : 1;
  switch (f) {
    case Func::kAllReduce: return 2.0 * (n - 1) / n;
    case Func::kAllGather:
    case Func::kAllGatherV:
    case Func::kReduceScatter: return (n - 1) / n;
    case Func::kAlltoAll: return (n - 1) / n;
    case Func::kBroadcast:
    case Func::kReduce:
    case Func::kSend:
    case Func::kRecv:
    case Func::kSendRecv:
    case Func::kGather:
    case Func::kScatter: return 1.0;
    default: return 0.0;
  }
}

double traffic_multiplier(Func f, OpKind k, int nranks) noexcept {
  if (k == OpKind::kP2p) return 1.0;
  switch (f) {
    case Func::kAllGather:
    case Func::kAllGatherV:
    case Func::kReduceScatter: return nranks > 0 ? nranks : 1;
    default: return 1.0;
  }
}

}  // namespace ni
