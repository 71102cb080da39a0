// Version rules, name tables and fault names.
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

#include "include/nccl_inspector/names.h"
#include "src/emu/binding.h"
#include "src/emu/emu.h"

namespace ni::emu {

std::optional<NcclVersion> NcclVersion::parse(std::string_view s) {
  if (!s.empty() && (s[0] == 'v' || s[0] == 'V')) s.remove_prefix(1);
  int ma = 0, mi = 0;
  auto r1 = std::from_chars(s.data(), s.data() + s.size(), ma);
  if (r1.ec != std::errc() || r1.ptr == s.data() + s.size() || *r1.ptr != '.') return std::nullopt;
  auto r2 = std::from_chars(r1.ptr + 1, s.data() + s.size(), mi);
  if (r2.ec != std::errc()) return std::nullopt;
  // Anything after the minor must be ".patch" or "-build" (or both).
  const char* rest = r2.ptr;
  const char* end = s.data() + s.size();
  if (rest != end && *rest != '.' && *rest != '-') return std::nullopt;
  if (ma != 2 || mi < 23 || mi > 32) return std::nullopt;
  return NcclVersion{ma, mi};
}

std::string NcclVersion::str() const { return std::to_string(major) + "." + std::to_string(minor); }

int NcclVersion::native_abi() const {
  if (minor <= 23) return 1;
  if (minor <= 25) return 2;
  if (minor == 26) return 3;
  if (minor == 27) return 4;
  if (minor == 28) return 5;
  if (minor <= 30) return 6;
  return 7;
}

int select_abi(const NcclVersion& v, unsigned avail) {
  for (int n = v.native_abi(); n >= 1; --n)
    if (avail & (1u << n)) return n;
  return 0;
}

// ---------------------------------------------------------------- names

// The names NCCL puts in descriptors, from the shared tables (indexed by
// NCCL's codes): include/nccl_inspector/names.h.
namespace {
namespace names = ::ni::names;

template <std::size_t N>
int index_of(const std::string_view (&table)[N], std::size_t n, std::string_view s) {
  for (std::size_t i = 0; i < n && i < N; ++i)
    if (s == table[i]) return static_cast<int>(i);
  return -1;
}
}  // namespace

// NCCL's descriptor strings name Broadcast .. Scatter; other codes are invalid.
const char* func_name_of(int c) {
  return c >= 0 && static_cast<std::size_t>(c) < names::kFuncNcclStrings ? names::kFunc[c].data() : "Invalid";
}
int func_code_of(std::string_view s) { return index_of(names::kFunc, names::kFuncNcclStrings, s); }
// ncclUint8 has no string in NCCL (profiler-abi.md §5): its descriptors say "Unknown".
const char* dtype_name_of(int c) {
  if (c == ni::abi::kUint8 || c < 0 || static_cast<std::size_t>(c) >= std::size(names::kDtype)) return "Unknown";
  return names::kDtype[c].nccl.data();
}
int dtype_code_of(std::string_view s) {
  for (std::size_t i = 0; i < std::size(names::kDtype); ++i)
    if (s == names::kDtype[i].nccl) return static_cast<int>(i);
  return -1;
}
size_t dtype_size(int c) {
  return c >= 0 && static_cast<std::size_t>(c) < std::size(names::kDtype) ? names::kDtype[c].size : 1;
}
const char* algo_name_of(int c) {
  return c >= 0 && static_cast<std::size_t>(c) < std::size(names::kAlgo) ? names::kAlgo[c].data() : "Unknown";
}
int algo_code_of(std::string_view s) { return index_of(names::kAlgo, std::size(names::kAlgo), s); }
const char* proto_name_of(int c) {
  return c >= 0 && static_cast<std::size_t>(c) < std::size(names::kProto) ? names::kProto[c].data() : "Unknown";
}
int proto_code_of(std::string_view s) { return index_of(names::kProto, std::size(names::kProto), s); }

int type_index(uint64_t t) {
  for (int i = 0; i < kNumTypes; ++i)
    if (t == (1ull << i)) return i;
  return 0;
}
const char* type_name(uint64_t t) {
  static constexpr std::array<const char*, kNumTypes> n = {
      "Group",   "Coll",     "P2p",    "ProxyOp", "ProxyStep",    "ProxyCtrl", "KernelCh", "NetPlugin",
      "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch", "KernelPhase"};
  return n[static_cast<size_t>(type_index(t))];
}

// ---------------------------------------------------------------- faults

namespace {
constexpr std::array<const char*, static_cast<size_t>(Fault::kCount)> kFaultNames = {
#define NI_EMU_FAULT_NAME(id, name, what) name,
    NI_EMU_FAULTS(NI_EMU_FAULT_NAME)
#undef NI_EMU_FAULT_NAME
};
}

const char* fault_name(Fault f) { return kFaultNames[static_cast<size_t>(f)]; }
std::optional<Fault> fault_from_name(std::string_view s) {
  for (size_t i = 0; i < kFaultNames.size(); ++i)
    if (s == kFaultNames[i]) return static_cast<Fault>(i);
  return std::nullopt;
}
std::vector<std::string> fault_names() { return {kFaultNames.begin(), kFaultNames.end()}; }

}  // namespace ni::emu
