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
// An entry is taken by a compare-exchange of its key (a hash of the stored
// text, never 0) from 0, always the first free entry in scan order, and never
// changes after: so two threads that meet one new name at once agree on its id
// (the first entry with its key), whichever of them writes the text. The
// symmetric-plan matching (tracker.cpp sym_plan_task) compares ids.
struct VariantTable {
  std::atomic<uint64_t> key[kMaxVariants]{};      // 0 free; else the text's hash
  std::atomic<const char*> ptr[kMaxVariants]{};  // the claimant's pointer (the fast path)
  std::atomic<uint8_t> ready[kMaxVariants]{};    // 1 once text and ptr are written
  char text[kMaxVariants][kVariantChars]{};
};
VariantTable g_variants;

// Kept as written when it is a name character, '?' otherwise: the text goes
// into JSON and Prometheus labels unescaped.
char name_char(char c) noexcept {
  const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.';
  return ok ? c : '?';
}
// FNV-1a over the stored form of the text (at most kVariantChars - 1
// characters, mapped by name_char), never 0; its length out.
uint64_t text_key(const char* s, size_t* len) noexcept {
  uint64_t h = 1469598103934665603ull;
  size_t n = 0;
  for (; n < kVariantChars - 1 && s[n] != '\0'; ++n) {
    h ^= static_cast<unsigned char>(name_char(s[n]));
    h *= 1099511628211ull;
  }
  *len = n;
  return h != 0 ? h : 1;
}
}  // namespace

uint8_t variant_id(const char* s) noexcept {
  if (s == nullptr || s[0] == '\0') return 0;
  VariantTable& t = g_variants;
  // The fast path: NCCL's pointer, as the entry's claimant saw it.
  for (int i = 0; i < kMaxVariants; ++i) {
    // Relaxed: a free entry ends the scan (entries are taken in order); the
    // ready flag below orders the pointer.
    if (t.key[i].load(std::memory_order_relaxed) == 0) break;
    // Acquire: pairs with the release store of ready below (ptr and text).
    if (t.ready[i].load(std::memory_order_acquire) != 0 && t.ptr[i].load(std::memory_order_relaxed) == s)
      return static_cast<uint8_t>(i + 1);
  }
  size_t len = 0;
  const uint64_t k = text_key(s, &len);
  for (int i = 0; i < kMaxVariants; ++i) {
    // Relaxed: the key alone decides the id; the text is published by ready.
    uint64_t cur = t.key[i].load(std::memory_order_relaxed);
    if (cur == 0) {
      // Relaxed CAS: pairs with the other claimants' loads and CAS of this
      // key; only the winner writes the entry, published by ready below.
      if (t.key[i].compare_exchange_strong(cur, k, std::memory_order_relaxed)) {
        for (size_t j = 0; j < len; ++j) t.text[i][j] = name_char(s[j]);
        t.text[i][len] = '\0';
        t.ptr[i].store(s, std::memory_order_relaxed);  // published by the release below
        // Release: pairs with the acquire loads of ready above and in variant_name().
        t.ready[i].store(1, std::memory_order_release);
        return static_cast<uint8_t>(i + 1);
      }
      // cur now holds the winner's key.
    }
    // Another pointer to the same text, or a claimant writing it now: the
    // same variant (two names whose 64-bit hashes agree would share an id).
    if (cur == k) return static_cast<uint8_t>(i + 1);
  }
  return 0;  // a full table
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
