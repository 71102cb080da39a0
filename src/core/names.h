// Names of the record enums (as written in logs) and the conversions from the
// strings and codes NCCL puts in descriptors. Pure functions, no allocation:
// safe on the hot path.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "src/core/record.h"

namespace ni {

// Log names. Func names are NCCL's ("AllReduce", ...); datatypes without the
// "nccl" prefix ("float32", ..., "unknown").
std::string_view func_name(Func f) noexcept;
std::string_view dtype_name(DType d) noexcept;
std::string_view algo_name(Algo a) noexcept;
std::string_view proto_name(Proto p) noexcept;
std::string_view timing_name(TimingSource t) noexcept;
std::string_view transport_name(Transport t) noexcept;
std::string_view kind_name(OpKind k) noexcept;

// Size in bytes of one element; 0 for kUnknown (so bytes stay 0, never garbage).
uint32_t dtype_size(DType d) noexcept;

// From NCCL's descriptor strings (v2+). NULL or unrecognised -> kUnknown.
// Inline: a hit in the per-enum pointer cache is a load and a compare (see names.cpp).
namespace detail {
template <typename E>
struct NameCache {
  // (pointer << 8) | code. Empty: pointer 2^56 - 1 (never a user-space
  // address, so never a hit for a real name) and code 0 (a valid enum value,
  // whatever garbage pointer might match it).
  static constexpr uint64_t kEmpty = UINT64_MAX << 8;
  static inline std::atomic<uint64_t> slots[4] = {kEmpty, kEmpty, kEmpty, kEmpty};
};
// Misses parse the string: out of line (never inlined into a hot path).
__attribute__((noinline)) Func func_from_nccl_miss(const char* s) noexcept;
__attribute__((noinline)) DType dtype_from_nccl_miss(const char* s) noexcept;
__attribute__((noinline)) Algo algo_from_nccl_miss(const char* s) noexcept;
__attribute__((noinline)) Proto proto_from_nccl_miss(const char* s) noexcept;
template <typename E>
inline bool name_cache_hit(const char* s, E* out) noexcept {
  const auto p = reinterpret_cast<uintptr_t>(s);
  // Relaxed: pairs with the relaxed store in names.cpp; no data hangs off it.
  const uint64_t v = NameCache<E>::slots[(p >> 3) & 3].load(std::memory_order_relaxed);
  // An empty entry matches no pointer, and NULL (never stored) matches none.
  if ((v >> 8) != p) return false;
  *out = static_cast<E>(v & 0xff);
  return true;
}
template <typename E, E (*Miss)(const char*) noexcept>
inline E from_nccl(const char* s) noexcept {
  E e;
  return name_cache_hit(s, &e) ? e : Miss(s);
}
}  // namespace detail
inline Func func_from_nccl(const char* s) noexcept { return detail::from_nccl<Func, detail::func_from_nccl_miss>(s); }
inline DType dtype_from_nccl(const char* s) noexcept { return detail::from_nccl<DType, detail::dtype_from_nccl_miss>(s); }
inline Algo algo_from_nccl(const char* s) noexcept { return detail::from_nccl<Algo, detail::algo_from_nccl_miss>(s); }
inline Proto proto_from_nccl(const char* s) noexcept { return detail::from_nccl<Proto, detail::proto_from_nccl_miss>(s); }

// From the v1 descriptor's numeric codes.
Func func_from_code(uint8_t c) noexcept;
DType dtype_from_code(uint8_t c) noexcept;
Algo algo_from_code(uint8_t c) noexcept;
Proto proto_from_code(uint8_t c) noexcept;

// Symmetric-kernel variant names (ABI v7 coll.kernelVariant, "AllReduce_AGxLL_R"
// and the like), interned process-wide so that a record carries a one-byte id.
// variant_id: 1..kMaxVariants, or 0 for NULL, an empty name or a full table
// (the op then still says it ran a symmetric kernel, not which). A hit on
// NCCL's pointer is a short scan of loads; a new name is hashed and takes the
// first free entry by compare-exchange, so one text has one id however many
// threads meet it at once; the text is copied (at most kVariantChars - 1
// characters, any but [A-Za-z0-9_.-] as '?') and published with a release
// store. Lock-free, no allocation.
inline constexpr int kMaxVariants = 63;
inline constexpr size_t kVariantChars = 48;
uint8_t variant_id(const char* s) noexcept;
// The name of an id variant_id returned; "" for 0, an id never returned, or
// (for the moment it takes) an entry whose claimant is still writing it.
std::string_view variant_name(uint8_t id) noexcept;
// For symmetric kernels NCCL sets the algorithm to the variant after its first
// '_' (all of it without one) and the protocol to "" (profiler-abi.md §13.1).
std::string_view variant_algo(std::string_view variant) noexcept;

// nccl-tests bus-bandwidth factor for an op on n ranks; traffic multiplier
// (AllGather/ReduceScatter move size x n). See profiler-abi.md §10.
double busbw_factor(Func f, OpKind k, int nranks) noexcept;
double traffic_multiplier(Func f, OpKind k, int nranks) noexcept;

}  // namespace ni
