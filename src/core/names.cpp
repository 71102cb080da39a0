#include "src/core/names.h"

#include <algorithm>
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

namespace {
struct VariantTable {
  std::atomic<const char*> ptr[kMaxVariants]{};  // NCCL's pointer for the entry (the fast path)
  std::atomic<uint8_t> ready[kMaxVariants]{};    // 1 once text is written
  std::atomic<uint32_t> claimed{0};              // entries handed out (may pass kMaxVariants)
  char text[kMaxVariants][kVariantChars]{};
};
VariantTable g_variants;

size_t bounded_len(const char* s) noexcept {
  size_t n = 0;
  while (n < kVariantChars - 1 && s[n] != '\0') ++n;
  return n;
}
// Kept as written when it is a name character, '?' otherwise: the text goes
// into JSON and Prometheus labels unescaped.
char name_char(char c) noexcept {
  const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.';
  return ok ? c : '?';
}
bool same_text(const char* stored, const char* s, size_t len) noexcept {
  for (size_t k = 0; k < len; ++k)
    if (stored[k] != name_char(s[k])) return false;
  return stored[len] == '\0';
}
}  // namespace

uint8_t variant_id(const char* s) noexcept {
  if (s == nullptr || s[0] == '\0') return 0;
  VariantTable& t = g_variants;
  // Relaxed: pairs with the relaxed fetch_add below; it only bounds the scan,
  // each entry's ready flag orders its text.
  const uint32_t n = std::min<uint32_t>(t.claimed.load(std::memory_order_relaxed), kMaxVariants);
  for (uint32_t i = 0; i < n; ++i)
    // Acquire: pairs with the release store of ready below (the entry's ptr and text).
    if (t.ready[i].load(std::memory_order_acquire) != 0 && t.ptr[i].load(std::memory_order_relaxed) == s)
      return static_cast<uint8_t>(i + 1);
  const size_t len = bounded_len(s);
  for (uint32_t i = 0; i < n; ++i)
    // Acquire: as above. Another pointer to the same text is the same variant.
    if (t.ready[i].load(std::memory_order_acquire) != 0 && same_text(t.text[i], s, len))
      return static_cast<uint8_t>(i + 1);
  if (n >= kMaxVariants) return 0;
  // Relaxed: the claim only hands out an index; the entry is published by
  // its ready flag. Two threads meeting one new name may both claim: two ids
  // with the same text, which a reader of the log cannot tell apart.
  const uint32_t i = t.claimed.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxVariants) return 0;
  for (size_t k = 0; k < len; ++k) t.text[i][k] = name_char(s[k]);
  t.text[i][len] = '\0';
  t.ptr[i].store(s, std::memory_order_relaxed);  // published by the release below
  // Release: pairs with the acquire loads of ready in variant_id() and variant_name().
  t.ready[i].store(1, std::memory_order_release);
  return static_cast<uint8_t>(i + 1);
}

std::string_view variant_name(uint8_t id) noexcept {
  if (id == 0 || id > kMaxVariants) return {};
  // Acquire: pairs with the release store in variant_id() (the text).
  if (g_variants.ready[id - 1].load(std::memory_order_acquire) == 0) return {};
  return std::string_view(g_variants.text[id - 1]);
}

std::string_view variant_algo(std::string_view v) noexcept {
  const size_t u = v.find('_');
  return u == std::string_view::npos ? v : v.substr(u + 1);
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
