// Scanning, part 1: the values of one JSON field, as the fast scanner found them
// (FastVal: a kind and the raw token inside the line buffer) or as simdjson's DOM
// holds them (dom::element), converted to the reader's types.
//
// Contract: each get_* returns false (out untouched) when the value has another
// kind or does not fit, so an unexpected value reads as an absent field. Both
// overload sets give the same result for the same JSON text. A FastVal's token
// lies in a padded line buffer (kLinePadding readable bytes past the line): the
// SWAR/SSE conversions load up to 16 bytes from any position in it.
#pragma once

#include <simdjson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "src/analysis/reader_decode.h"

namespace ni::analysis::reader_detail {

namespace dom = simdjson::dom;
static_assert(kLinePadding >= simdjson::SIMDJSON_PADDING, "simdjson parses lines in place");

// One value found by the fast scanner.
struct FastVal {
  char kind;             // 's' string, 'n' number, 't' true, 'f' false, 'z' null, '[' array, '{' object
  std::string_view raw;  // string contents (no quotes), number token, or the whole nested value
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
// The n (1..8) decimal digits in the 8 loaded bytes x (the first digit in the
// lowest byte) as a number; a non-digit sets bits in bad. The bytes past the n
// digits are shifted out and '0's shifted in at the front, which do not change
// the value.
[[gnu::always_inline]] inline std::uint64_t digits8v(std::uint64_t x, std::size_t n, std::uint64_t& bad) {
  const unsigned drop = static_cast<unsigned>(8 - n) * 8;  // 0..56
  x = (x << drop) | (0x3030303030303030ULL >> 1 >> (63 - drop));
  // Every byte in '0'..'9': high nibble 3, and still 3 after adding 6.
  bad |= ((x & 0xF0F0F0F0F0F0F0F0ULL) | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ^
         0x3333333333333333ULL;
  x -= 0x3030303030303030ULL;  // first digit in the lowest byte (little-endian)
  x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;     // 2-digit lanes
  x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;   // 4-digit lanes
  x = (x * 10000 + (x >> 32)) & 0x00000000FFFFFFFFULL;  // 8 digits
  return x;
}
// The same for the n digits at p (8 bytes are loaded: p lies in a padded buffer).
[[gnu::always_inline]] inline std::uint64_t digits8(const char* p, std::size_t n, std::uint64_t& bad) {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  return digits8v(x, n, bad);
}
#endif

// Plain decimal integer (no sign); false for anything else. Eight digits at a time
// (SWAR): a 19-digit wall_ns costs three steps instead of 19 dependent
// multiply-adds, a short one (rank, nranks) one step. At most 19 digits: no overflow.
[[gnu::always_inline]] inline bool dec_u64(std::string_view t, std::uint64_t& out) {
  const char* p = t.data();
  const std::size_t n = t.size();
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // Up to three independent blocks: the last 8 digits, the 8 before them, and the
  // rest; a bad digit anywhere shows in `bad`. out is only written on success.
  std::uint64_t bad = 0, v;
  if (n - 1 < 8) {  // 1..8 digits
    v = digits8(p, n, bad);
  } else if (n - 1 < 16) {  // 9..16
    const std::uint64_t hi = digits8(p, n - 8, bad), lo = digits8(p + n - 8, 8, bad);
    v = hi * 100000000 + lo;
  } else {
    if (n == 0 || n > 19) return false;  // n - 1 wrapped for an empty token ("-" alone)
    const std::uint64_t top = digits8(p, n - 16, bad), mid = digits8(p + n - 16, 8, bad),
                        lo = digits8(p + n - 8, 8, bad);
    v = (top * 100000000 + mid) * 100000000 + lo;
  }
  if (bad != 0) return false;
  out = v;
  return true;
#else
  if (n == 0 || n > 19) return false;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] < '0' || p[i] > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(p[i] - '0');
  }
  out = v;
  return true;
#endif
}

// Decimal "[-]digits[.digits]" with at most 15 digits: the integer of its digits
// and 10^(fraction digits) are exact doubles, so one IEEE division gives the
// correctly rounded value, the same as from_chars. false: use from_chars.
// The '.' is found with one 16-byte compare and the digits convert as at most
// two SWAR blocks (16 bytes readable from any position of t).
inline bool fast_f64(std::string_view t, double& out) {
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const char* p = t.data();
  std::size_t n = t.size();
  const bool neg = n > 0 && *p == '-';
  p += neg;
  n -= neg;
  if (n == 0 || n > 16) return false;  // 15 digits and a '.'
#if defined(__SSE2__) && defined(__SIZEOF_INT128__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // All 16 bytes as one integer: drop the '.' byte by shifting the bytes above it
  // down by one, leaving the m digits in bytes 0..m-1, then two SWAR blocks.
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const unsigned dots =
      static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('.')))) & (0xffffu >> (16 - n));
  const std::size_t ip = dots ? static_cast<std::size_t>(__builtin_ctz(dots)) : n;  // integer digits
  if (ip == 0 || ip + 1 == n) return false;  // no integer digit, or nothing after the '.'
  const std::size_t m = dots ? n - 1 : n;    // digits
  if (m > 15) return false;
  unsigned __int128 b;
  std::memcpy(&b, p, 16);
  if (dots) {
    const unsigned __int128 low = (static_cast<unsigned __int128>(1) << (8 * ip)) - 1;  // ip <= 14
    b = (b & low) | ((b >> 8) & ~low);  // a second '.' stays, and fails the digit check
  }
  std::uint64_t bad = 0, w;
  if (m <= 8) {
    w = digits8v(static_cast<std::uint64_t>(b), m, bad);
  } else {
    const std::uint64_t hi = digits8v(static_cast<std::uint64_t>(b), m - 8, bad);
    const std::uint64_t lo = digits8v(static_cast<std::uint64_t>(b >> (8 * (m - 8))), 8, bad);
    w = hi * 100000000 + lo;
  }
  if (bad != 0) return false;
  const std::size_t frac = dots ? n - ip - 1 : 0;
#else
  const char* dot = static_cast<const char*>(std::memchr(p, '.', n));
  const std::size_t ip = dot ? static_cast<std::size_t>(dot - p) : n;
  if (ip == 0 || ip + 1 == n) return false;
  const std::size_t frac = dot ? n - ip - 1 : 0;
  if (ip + frac > 15) return false;
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == ip) continue;
    if (p[i] < '0' || p[i] > '9') return false;
    w = w * 10 + static_cast<std::uint64_t>(p[i] - '0');
  }
#endif
  double d = static_cast<double>(w);
  if (frac > 0) d /= kPow10[frac];
  out = neg ? -d : d;
  return true;
}

// An integer field written as a double ("1e3", "12.0"): truncated, if it fits
// (the cast of a value outside the range is undefined; such a field is absent).
inline bool double_to_i64(double d, std::int64_t& out) {
  if (!(d >= -0x1p63 && d < 0x1p63)) return false;
  out = static_cast<std::int64_t>(d);
  return true;
}
inline bool double_to_u64(double d, std::uint64_t& out) {
  if (!(d >= 0 && d < 0x1p64)) return false;
  out = static_cast<std::uint64_t>(d);
  return true;
}

// A token from_chars reads whole as T, or as a double that fits T.
template <class T>
bool from_chars_exact(std::string_view raw, T& out) {
  const char* b = raw.data();
  const char* e = b + raw.size();
  T i;
  auto r = std::from_chars(b, e, i);
  if (r.ec == std::errc() && r.ptr == e) {
    out = i;
    return true;
  }
  double d;
  auto r2 = std::from_chars(b, e, d);
  if (r2.ec != std::errc() || r2.ptr != e) return false;
  if constexpr (std::is_signed_v<T>) return double_to_i64(d, out);
  else return double_to_u64(d, out);
}

// ---- FastVal
inline bool get_i64(const FastVal& v, std::int64_t& out) {
  if (v.kind != 'n') return false;
  std::uint64_t u;
  if ((v.raw[0] == '-' ? dec_u64(v.raw.substr(1), u) : dec_u64(v.raw, u)) &&
      u <= static_cast<std::uint64_t>(INT64_MAX)) {
    out = v.raw[0] == '-' ? -static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u);
    return true;
  }
  return from_chars_exact(v.raw, out);
}
inline bool get_u64(const FastVal& v, std::uint64_t& out) {
  if (v.kind != 'n') return false;
  if (dec_u64(v.raw, out)) return true;
  return from_chars_exact(v.raw, out);
}
inline bool get_f64(const FastVal& v, double& out) {
  if (v.kind != 'n') return false;
  if (fast_f64(v.raw, out)) return true;
  double d;
  auto r = std::from_chars(v.raw.data(), v.raw.data() + v.raw.size(), d);
  if (r.ec != std::errc() || r.ptr != v.raw.data() + v.raw.size()) return false;
  out = d;
  return true;
}
inline bool get_str(const FastVal& v, std::string_view& out) {
  if (v.kind != 's') return false;
  out = v.raw;
  return true;
}
inline bool get_bool(const FastVal& v, bool& out) {
  if (v.kind != 't' && v.kind != 'f') return false;
  out = v.kind == 't';
  return true;
}
// The number of elements of an array value; out untouched for another kind.
inline void array_count(const FastVal& v, std::int64_t& out) {
  if (v.kind != '[') return;
#if defined(__SSE2__)
  {
    // A flat array (no strings, no nested values; "channels":[0,1,...]): count its
    // commas 16 bytes at a time. raw is "[" ... closing bracket, inside a padded line
    // buffer; bytes past the closing bracket are masked off.
    const char* p = v.raw.data() + 1;
    const std::size_t n = v.raw.size() - 2;
    std::int64_t commas = 0;
    unsigned nonspace = 0;
    bool flat = true;
    for (std::size_t i = 0; i < n; i += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const unsigned valid = n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1;
      const __m128i open = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('[')), _mm_cmpeq_epi8(x, _mm_set1_epi8('{')));
      const __m128i close = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(']')), _mm_cmpeq_epi8(x, _mm_set1_epi8('}')));
      const __m128i special = _mm_or_si128(_mm_or_si128(open, close), _mm_cmpeq_epi8(x, _mm_set1_epi8('"')));
      if (static_cast<unsigned>(_mm_movemask_epi8(special)) & valid) {
        flat = false;
        break;
      }
      commas += __builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(',')))) & valid);
      nonspace |= ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')))) & valid;
    }
    if (flat) {
      out = nonspace ? commas + 1 : 0;
      return;
    }
  }
#endif
  // Elements at depth 1 = commas at depth 1 + 1, unless empty.
  std::int64_t n = 0, depth = 0;
  bool any = false, in_str = false;
  for (std::size_t i = 0; i < v.raw.size(); ++i) {
    const char c = v.raw[i];
    if (in_str) {
      if (c == '\\') ++i;
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    if (c == '[' || c == '{') ++depth;
    else if (c == ']' || c == '}') --depth;
    else if (c == ',' && depth == 1) ++n;
    if (depth >= 1 && c != ' ' && !(depth == 1 && (c == '[' || c == ']'))) any = true;
  }
  out = any ? n + 1 : 0;
}

// ---- dom::element
inline bool get_i64(dom::element v, std::int64_t& out) {
  std::int64_t i;
  if (!v.get_int64().get(i)) {
    out = i;
    return true;
  }
  double d;
  return !v.get_double().get(d) && double_to_i64(d, out);
}
inline bool get_u64(dom::element v, std::uint64_t& out) {
  std::uint64_t u;
  if (!v.get_uint64().get(u)) {
    out = u;
    return true;
  }
  double d;
  return !v.get_double().get(d) && double_to_u64(d, out);
}
inline bool get_f64(dom::element v, double& out) {
  double d;
  if (!v.get_double().get(d)) {
    out = d;
    return true;
  }
  return false;  // upstream writes NaN as a string: treated as absent
}
inline bool get_str(dom::element v, std::string_view& out) { return !v.get_string().get(out); }
inline bool get_bool(dom::element v, bool& out) { return !v.get_bool().get(out); }
inline void array_count(dom::element v, std::int64_t& out) {
  dom::array a;
  if (!v.get_array().get(a)) out = static_cast<std::int64_t>(a.size());
}

// Nested values (objects, arrays) as DOM elements: a FastVal's text is parsed on
// demand (only the fields a reader needs), a DOM element is already one. The
// element stays valid until the next parse.
class NestedParser {
 public:
  bool parse(dom::element v, dom::element& out) {
    out = v;
    return true;
  }
  bool parse(const FastVal& v, dom::element& out) {
    if (v.kind != '[' && v.kind != '{') return false;
    // The nested text lies inside the line buffer, which has SIMDJSON_PADDING readable bytes past the line.
    return !parser_.parse(v.raw.data(), v.raw.size(), false).get(out);
  }

 private:
  dom::parser parser_;
};

}  // namespace ni::analysis::reader_detail
