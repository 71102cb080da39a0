#include "src/core/names.h"

#include <atomic>
#include <cstring>

#include "include/nccl_inspector/names.h"

namespace ni {
namespace {

// The names themselves live in include/nccl_inspector/names.h, indexed by
// NCCL's codes, which are also this core's enum values.
static_assert(std::size(names::kFunc) == static_cast<size_t>(Func::kUnknown));
static_assert(std::size(names::kDtype) == static_cast<size_t>(DType::kUnknown));
static_assert(std::size(names::kAlgo) == static_cast<size_t>(Algo::kUnknown));
static_assert(std::size(names::kProto) == static_cast<size_t>(Proto::kUnknown));
static_assert(std::size(names::kTiming) == static_cast<size_t>(TimingSource::kCount_));
static_assert(std::size(names::kTransport) == static_cast<size_t>(Transport::kCount_));

template <typename E>
constexpr size_t idx(E e) noexcept {
  return static_cast<size_t>(e);
}

bool eq(const char* a, const char* b) noexcept { return std::strcmp(a, b) == 0; }

}  // namespace

std::string_view func_name(Func f) noexcept { return names::at(names::kFunc, idx(f), names::kFuncUnknown); }
std::string_view dtype_name(DType d) noexcept {
  return idx(d) < std::size(names::kDtype) ? names::kDtype[idx(d)].log : names::kUnknown;
}
std::string_view algo_name(Algo a) noexcept { return names::at(names::kAlgo, idx(a), names::kUnknown); }
std::string_view proto_name(Proto p) noexcept { return names::at(names::kProto, idx(p), names::kUnknown); }
std::string_view timing_name(TimingSource t) noexcept {
  return names::at(names::kTiming, idx(t), names::kTiming[idx(TimingSource::kNone)]);
}
std::string_view transport_name(Transport t) noexcept {
  return names::at(names::kTransport, idx(t), names::kTransport[0]);
}
std::string_view kind_name(OpKind k) noexcept { return names::at(names::kKind, idx(k), names::kKind[0]); }

uint32_t dtype_size(DType d) noexcept { return idx(d) < std::size(names::kDtype) ? names::kDtype[idx(d)].size : 0; }

// NCCL passes static string literals, so the same pointer always means the
// same name: names.h looks the pointer up in a tiny direct-mapped cache
// ((pointer << 8) | code per relaxed 64-bit word); a miss lands here, parses
// the string against the shared table and fills the
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

// A miss compares against the shared table (a handful of strcmp, once per
// distinct string pointer). Names outside it are kUnknown.
template <typename E, size_t N>
E parse_name(const std::string_view (&table)[N], const char* s) noexcept {
  for (size_t i = 0; i < N; ++i)
    if (eq(s, table[i].data())) return static_cast<E>(i);
  return E::kUnknown;
}

Func func_from_nccl_uncached(const char* s) noexcept {
  return s == nullptr ? Func::kUnknown : parse_name<Func>(names::kFunc, s);
}

DType dtype_from_nccl_uncached(const char* s) noexcept {
  if (s == nullptr) return DType::kUnknown;
  for (size_t i = 0; i < std::size(names::kDtype); ++i)
    if (eq(s, names::kDtype[i].nccl.data())) return static_cast<DType>(i);
  return DType::kUnknown;
}

Algo algo_from_nccl_uncached(const char* s) noexcept {
  return s == nullptr ? Algo::kUnknown : parse_name<Algo>(names::kAlgo, s);
}

Proto proto_from_nccl_uncached(const char* s) noexcept {
  return s == nullptr ? Proto::kUnknown : parse_name<Proto>(names::kProto, s);
}

}  // namespace

Func func_from_code(uint8_t c) noexcept {
  return c < names::kFuncV1Codes ? static_cast<Func>(c) : Func::kUnknown;
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
