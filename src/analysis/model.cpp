#include "src/analysis/model.h"

#include <array>
#include <cstdio>
#include <mutex>
#include <string>

#include "include/nccl_inspector/names.h"

namespace ni::analysis {
namespace {
namespace names = ::ni::names;

// The analyzer's own enum orders (its tables list the common functions first)
// mapped to NCCL's codes, which index the shared name tables
// (include/nccl_inspector/names.h).
constexpr std::uint8_t kFuncCode[] = {4, 2, 3, 0, 1, 8, 11, 9, 10, 5, 6, 7};
static_assert(std::size(kFuncCode) == static_cast<size_t>(Func::kOther));
constexpr std::uint8_t kAlgoCode[] = {1, 0, 2, 3, 4, 5, 6};
static_assert(std::size(kAlgoCode) == static_cast<size_t>(Algo::kUnknown));
static_assert(std::size(names::kAlgo) == static_cast<size_t>(Algo::kUnknown));
static_assert(std::size(names::kProto) == static_cast<size_t>(Proto::kUnknown));
static_assert(std::size(names::kTiming) == static_cast<size_t>(Timing::kKernelGpu));
// Timings of the upstream Inspector's v4.0 logs (after ours in Timing).
constexpr std::string_view kUpstreamTimings[] = {"kernel_gpu", "kernel_cpu", "collective_cpu"};
static_assert(std::size(kUpstreamTimings) == static_cast<size_t>(Timing::kUnknown) - std::size(names::kTiming));
constexpr std::string_view kFuncOther = "Other";

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

std::string_view to_string(Func f) {
  const auto i = static_cast<size_t>(f);
  return i < std::size(kFuncCode) ? names::kFunc[kFuncCode[i]] : kFuncOther;
}
namespace {
struct SymRegistry {
  std::mutex mu;
  int n = 0;                                        // guarded by mu
  std::array<std::string, kMaxSym> variant, label;  // entry i written once, under mu, before its id is handed out
};
SymRegistry& sym_registry() {
  static SymRegistry r;
  return r;
}
}  // namespace

Algo sym_algo(std::string_view v) {
  SymRegistry& r = sym_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (int i = 0; i < r.n; ++i)
    if (r.variant[i] == v) return static_cast<Algo>(kSymBase + i);
  if (r.n >= kMaxSym) return Algo::kUnknown;
  const int i = r.n++;
  r.variant[i] = std::string(v);
  const std::size_t u = v.find('_');
  r.label[i] = v.empty() ? "sym" : "sym:" + std::string(u == std::string_view::npos ? v : v.substr(u + 1));
  return static_cast<Algo>(kSymBase + i);
}

// An id came from sym_algo(), which wrote its entry first (and whoever passed
// the Op on synchronised with that thread): no lock to read it.
std::string_view sym_variant(Algo a) {
  const int i = static_cast<int>(a) - kSymBase;
  return i >= 0 && i < kMaxSym ? std::string_view(sym_registry().variant[i]) : std::string_view();
}

std::string_view to_string(Algo a) {
  if (is_sym(a)) {
    const int i = static_cast<int>(a) - kSymBase;
    return i < kMaxSym ? std::string_view(sym_registry().label[i]) : names::kUnknown;
  }
  const auto i = static_cast<size_t>(a);
  return i < std::size(kAlgoCode) ? names::kAlgo[kAlgoCode[i]] : names::kUnknown;
}
std::string_view to_string(Proto p) { return names::at(names::kProto, static_cast<size_t>(p), names::kUnknown); }
std::string_view to_string(Timing t) {
  const auto i = static_cast<size_t>(t);
  if (i < std::size(names::kTiming)) return names::kTiming[i];
  return names::at(kUpstreamTimings, i - std::size(names::kTiming), names::kUnknown);
}
std::string_view to_string(OpKind k) { return names::at(names::kKind, static_cast<size_t>(k), "?"); }

namespace {
// The enum value whose name is s: exact first, then ignoring case.
template <typename E, std::size_t N>
E parse_enum(std::string_view s, std::size_t n, E none, const std::string_view (&names_of)[N],
             const std::uint8_t* code) {
  for (std::size_t i = 0; i < n; ++i)
    if (names_of[code ? code[i] : i] == s) return static_cast<E>(i);
  for (std::size_t i = 0; i < n; ++i)
    if (iequal(names_of[code ? code[i] : i], s)) return static_cast<E>(i);
  return none;
}
}  // namespace

Func parse_func(std::string_view s) {
  if (iequal(s, "All2All")) return Func::kAllToAll;
  return parse_enum(s, std::size(kFuncCode), Func::kOther, names::kFunc, kFuncCode);
}
Algo parse_algo(std::string_view s) {
  const Algo a = parse_enum(s, std::size(kAlgoCode), Algo::kUnknown, names::kAlgo, kAlgoCode);
  if (a != Algo::kUnknown) return a;
  if (iequal(s, "CollNetDirect")) return Algo::kCollnetDirect;
  if (iequal(s, "CollNetChain")) return Algo::kCollnetChain;
  if (iequal(s, "NVLSTree")) return Algo::kNvlsTree;
  return Algo::kUnknown;
}
Proto parse_proto(std::string_view s) {
  return parse_enum(s, std::size(names::kProto), Proto::kUnknown, names::kProto, nullptr);
}
Timing parse_timing(std::string_view s) {
  for (size_t i = 0; i < static_cast<size_t>(Timing::kUnknown); ++i)
    if (to_string(static_cast<Timing>(i)) == s) return static_cast<Timing>(i);
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

std::string rank_list(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::size_t j = i;  // the end of the run of consecutive ranks from v[i]
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i + 1) {
      s += "-" + std::to_string(v[j]);
      i = j;
    }
  }
  return s;
}

std::string hex_hash(std::uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace ni::analysis
