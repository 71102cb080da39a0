// Scanning, part 1 (see reader_values.h): parse_hash, declared in reader.h for
// the commands that take a comm hash on their command line.
#include <cstring>

#include "src/analysis/reader.h"

namespace ni::analysis {

namespace {
// Eight hex digits (either case) at p, the first the most significant; false if
// one is not a hex digit. SWAR: one 8-byte load (inside the string), no per-digit branch.
bool hex8(const char* p, std::uint64_t& out) {
  std::uint64_t b;
  std::memcpy(&b, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  b = __builtin_bswap64(b);  // first digit in the lowest byte, as on little-endian
#endif
  constexpr std::uint64_t k01 = 0x0101010101010101ULL, k80 = 0x8080808080808080ULL;
  // Per byte (all < 0x80, so the adds below carry into no neighbour): x + (0x80 - lo)
  // has the top bit set iff x >= lo, x + (0x7F - hi) iff x > hi.
  auto in_range = [&](std::uint64_t x, std::uint64_t lo, std::uint64_t hi) {
    return (x + (0x80 - lo) * k01) & ~(x + (0x7F - hi) * k01) & k80;
  };
  const std::uint64_t digit = in_range(b, '0', '9');
  const std::uint64_t letter = in_range(b | 0x20 * k01, 'a', 'f');  // 'A'..'F' or 'a'..'f'
  if ((b & k80) != 0 || (digit | letter) != k80) return false;
  // Nibble values: a digit's low 4 bits; a letter's low 4 bits + 9 (bit 6 marks letters).
  std::uint64_t v = (b & 0x0F0F0F0F0F0F0F0FULL) + ((b >> 6) & k01) * 9;
  v = ((v & 0x000F000F000F000FULL) << 4 | (v >> 8 & 0x000F000F000F000FULL));  // 2-digit lanes
  v = ((v & 0x000000FF000000FFULL) << 8 | (v >> 16 & 0x000000FF000000FFULL));  // 4-digit lanes
  v = ((v & 0x000000000000FFFFULL) << 16 | (v >> 32 & 0x000000000000FFFFULL));  // 8 digits
  out = v;
  return true;
}

// "0x" (or "0X") and up to 16 hex digits.
bool parse_hex(std::string_view s, std::uint64_t& out) {
  std::uint64_t v = 0;
  if (s.size() > 18) return false;
  s.remove_prefix(2);
  // Whole groups of 8 digits at once (the plugin writes 16), the rest one by one.
  for (; s.size() >= 8; s.remove_prefix(8)) {
    std::uint64_t g;
    if (!hex8(s.data(), g)) return false;
    v = (v << 32) | g;
  }
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  out = v;
  return true;
}
}  // namespace

bool parse_hash(std::string_view s, std::uint64_t& out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return parse_hex(s, out);
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

}  // namespace ni::analysis
