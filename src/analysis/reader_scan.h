// Scanning, part 2: finding the fields of one line.
//
// scan_flat() is the fast path: a strict scanner for the flat objects the plugin
// writes (one object per line, strings without escapes, no whitespace needed).
// Nested arrays/objects are checked token by token and handed over as raw text
// (NestedParser parses them when a field needs them). scan_dom() is the
// fallback: simdjson's DOM parser, which accepts any valid JSON and decides.
// One grammar: scan_flat accepts a line only if simdjson would (numbers by
// RFC 8259 and within int64/uint64, no control bytes in strings; escapes and
// UTF-8 go to simdjson), so `summary` and `validate` (simdjson alone) read the
// same lines (tests/analysis: Reader.OneGrammar...).
//
// Contract: both call h.field(Field, value) once per key in line order, with a
// FastVal (scan_flat) or a dom::element (scan_dom). scan_flat returns false on
// anything unexpected, possibly after some fields were handed over: the caller
// then resets what it collected and runs scan_dom on the same line. The line
// must have kLinePadding readable bytes after it (16/32-byte loads past the end).
#pragma once

#include <simdjson.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "src/analysis/reader_fields.h"
#include "src/analysis/reader_memo.h"
#include "src/analysis/reader_values.h"

namespace ni::analysis::reader_detail {

#if !defined(__SSE2__)
// Character classes for the portable scanner.
constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = 1;
  for (char c : {'-', '+', '.', 'e', 'E'}) t[static_cast<std::uint8_t>(c)] = 1;  // number characters
  return t;
}
inline constexpr std::array<std::uint8_t, 256> kClass = make_classes();
#endif

// p <= e; the byte at p is readable even at e (padding). The writer puts no
// whitespace between tokens: one compare, nearly always taken.
inline const char* skip_ws(const char* p, const char* e) {
  if (static_cast<unsigned char>(*p) > ' ') return p;
  while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
  return p;
}

// Scans a string starting after its opening quote; false on an escape, a
// control byte, a non-ASCII byte or no closing quote (simdjson decides those).
// Reads up to 15 bytes past e.
[[gnu::always_inline]] inline bool scan_string(const char*& p, const char* e, std::string_view& out) {
  const char* q = p;
#if defined(__SSE2__)
  // Stops at a quote, a backslash, or a byte below 0x20 or above 0x7F (signed
  // below 0x20): an escape, a control byte or UTF-8 goes to simdjson, which
  // checks them.
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
  while (q < e) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, bslash)), _mm_cmplt_epi8(chunk, space))));
    if (m) {
      q += __builtin_ctz(m);
      break;
    }
    q += 16;
  }
#else
  while (q < e && *q != '"' && *q != '\\' && static_cast<unsigned char>(*q) >= 0x20 &&
         static_cast<unsigned char>(*q) < 0x80)
    ++q;
#endif
  if (q >= e || *q != '"') return false;
  out = std::string_view(p, static_cast<std::size_t>(q - p));
  p = q + 1;
  return true;
}

#if defined(__SSE2__)
// 16 bytes at p: which are digits, and which are number bytes at all
// ([0-9.eE+-]; scan_number() stops at the first other).
[[gnu::always_inline]] inline void number_masks(const char* p, unsigned& digits, unsigned& number) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i d = _mm_sub_epi8(x, _mm_set1_epi8('0'));
  digits = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d)));
  const __m128i t = _mm_sub_epi8(x, _mm_set1_epi8(0x2B));  // '+' .. '9', less ',' and '/'
  const __m128i in = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(0x39 - 0x2B)), t);
  const __m128i out = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(',')), _mm_cmpeq_epi8(x, _mm_set1_epi8('/')));
  const __m128i e = _mm_cmpeq_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)), _mm_set1_epi8('e'));
  number = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_andnot_si128(out, in), e)));
}
#endif

// End of a number token: the first byte that is not [0-9.eE+-] (at most e). Reads up to
// 15 bytes past e, 16 bytes per step: no mispredicted exit per digit.
inline const char* scan_number(const char* p, const char* e) {
#if defined(__SSE2__)
  while (p < e) {
    unsigned digits, number;
    number_masks(p, digits, number);
    const unsigned stop = ~number & 0xffffu;
    if (stop) return std::min(e, p + __builtin_ctz(stop));
    p += 16;
  }
  return e;
#else
  while (p < e && kClass[static_cast<std::uint8_t>(*p)] == 1) ++p;
  return p;
#endif
}

// Reads `"key":` at p, the field at position pos; p is left at the value's first
// byte. The writer repeats its key order: the text `"key":` seen at this position
// last time is compared as one 16-byte block (quotes, key and colon at once); only
// a miss scans for the closing quote and the colon.
[[gnu::always_inline]] inline bool scan_key(std::size_t pos, const char*& p, const char* e, KeyMemos& memos,
                                            Field& id) {
  if (const std::size_t n = memos.key_pattern(pos, p, e, id)) {
    p = skip_ws(p + n, e);
    return true;
  }
  if (p >= e || *p != '"') return false;
  const char* kq = p++;
  std::string_view key;
  if (!scan_string(p, e, key)) return false;
  id = memos.key_id(pos, key);
  p = skip_ws(p, e);
  if (p >= e || *p != ':') return false;
  if (p == key.data() + key.size() + 1) memos.learn_key_pattern(pos, kq, key.size() + 3, id);
  p = skip_ws(p + 1, e);
  return p < e;
}

// Whether [p, e) is a JSON number that simdjson reads too (RFC 8259's grammar:
// no leading zeros, no bare '.', a digit after '.' and after the exponent;
// an integer within int64/uint64). The fast path hands every line it does not
// accept to simdjson, so both read exactly the same lines (the validate path
// uses simdjson alone): "5." or "00012" is a bad line in both.
inline bool json_number(const char* p, const char* e) {
  auto digit = [](char c) { return static_cast<unsigned char>(c - '0') < 10; };
  const bool neg = *p == '-';
  if (neg && ++p == e) return false;
  const char* ib = p;
  if (*p == '0') {
    ++p;
  } else if (digit(*p)) {
    while (++p < e && digit(*p)) {
    }
  } else {
    return false;
  }
  const std::size_t int_digits = static_cast<std::size_t>(p - ib);
  if (p == e) {
    // An integer: simdjson takes it as int64 (negative) or uint64.
    if (int_digits < 19) return true;
    if (int_digits > 20 || (neg && int_digits > 19)) return false;
    const std::string_view lim = neg ? "9223372036854775808" : int_digits == 19 ? "9999999999999999999"
                                                                                 : "18446744073709551615";
    return std::string_view(ib, int_digits) <= lim;
  }
  if (*p == '.') {
    if (++p == e || !digit(*p)) return false;
    while (++p < e && digit(*p)) {
    }
  }
  if (p < e && (*p | 0x20) == 'e') {
    if (++p < e && (*p == '+' || *p == '-')) ++p;
    if (p == e || !digit(*p)) return false;
    while (++p < e && digit(*p)) {
    }
  }
  return p == e;
}


// The end of the JSON number at p (json_number()'s grammar), or nullptr when
// it is not one. The shapes the plugin writes, an integer or a decimal of up
// to 31 bytes, are checked on bit masks of their digits; anything else (an
// exponent, a sign after the first byte, ...) goes the scalar way.
[[gnu::always_inline]] inline const char* scan_json_number(const char* p, const char* e) {
#if defined(__SSE2__)
  unsigned dig, num;
  number_masks(p, dig, num);
  std::uint32_t digits = dig, stop = ~num & 0xffffu;
  if (stop == 0) {  // a long integer (a wall time): the next 16 bytes too
    number_masks(p + 16, dig, num);
    digits |= static_cast<std::uint32_t>(dig) << 16;
    stop = static_cast<std::uint32_t>(~num & 0xffffu) << 16;
  }
  if (stop != 0) {
    const unsigned n = static_cast<unsigned>(__builtin_ctz(stop));
    if (p + n > e) return nullptr;
    const unsigned lead = *p == '-' ? 1u : 0u;  // the first digit is at bit `lead`
    const std::uint32_t other = ~digits & ((1u << n) - 1) & ~lead;  // non-digits but a leading minus
    if (n > lead && p[lead] != '0') {
      // An integer (any of 19 digits fits uint64; 20 digits, or a negative of
      // 19, is range-checked the scalar way) ...
      if (other == 0) return n - lead < 19 || (n == 19 && lead == 0) || json_number(p, p + n) ? p + n : nullptr;
      // ... or digits '.' digits.
      if ((other & (other - 1)) == 0) {
        const unsigned at = static_cast<unsigned>(__builtin_ctz(other));
        if (p[at] == '.' && at + 1 < n) return p + n;
      }
    } else if (n > lead + 1 && other == (1u << (lead + 1)) && p[lead + 1] == '.' && lead + 2 < n) {
      return p + n;  // 0.digits
    } else if (n == lead + 1 && p[lead] == '0') {
      return p + n;  // 0
    }
  }
#endif
  const char* end = scan_number(p, e);
  return json_number(p, end) ? end : nullptr;
}

// Moves p past the JSON value at p, checked as simdjson would check it
// (numbers by json_number(), strings by scan_string()'s rules, literals,
// separators, nesting up to kNestMax); false otherwise (simdjson decides).
inline constexpr int kNestMax = 32;
inline bool skip_json_value(const char*& p, const char* e, int depth);
inline bool skip_json_container(const char*& p, const char* e, int depth) {
  if (depth > kNestMax) return false;
  const bool object = *p == '{';
  const char close = object ? '}' : ']';
  p = skip_ws(p + 1, e);
  if (p < e && *p == close) {
    ++p;
    return true;
  }
  for (;;) {
    if (object) {
      std::string_view key;
      if (p >= e || *p != '"' || !scan_string(++p, e, key)) return false;
      p = skip_ws(p, e);
      if (p >= e || *p != ':') return false;
      p = skip_ws(p + 1, e);
    }
    if (p >= e || !skip_json_value(p, e, depth)) return false;
    p = skip_ws(p, e);
    if (p >= e) return false;
    if (*p == close) {
      ++p;
      return true;
    }
    if (*p != ',') return false;
    p = skip_ws(p + 1, e);
  }
}
inline bool skip_json_value(const char*& p, const char* e, int depth) {
  const char c = *p;
  if (static_cast<unsigned char>(c - '0') < 10 || c == '-') {
    const char* end = scan_json_number(p, e);
    if (end == nullptr) return false;
    p = end;
    return true;
  }
  if (c == '"') {
    std::string_view s;
    return scan_string(++p, e, s);
  }
  if (c == '[' || c == '{') return skip_json_container(p, e, depth + 1);
  for (std::string_view lit : {std::string_view("true"), std::string_view("false"), std::string_view("null")})
    if (c == lit[0]) {
      if (e - p < static_cast<std::ptrdiff_t>(lit.size()) || std::memcmp(p, lit.data(), lit.size()) != 0) return false;
      p += lit.size();
      return true;
    }
  return false;
}

// The rarer value kinds: nested values (raw text), true, false, null.
inline bool scan_other_value(Field id, const char*& p, const char* e, FastVal& v) {
  const char* vb = p;
  const char c = *p;
  v.kind = c;
  switch (c) {
    case '{':
      if (is_upstream_section(id)) return false;  // whole line through the DOM
      [[fallthrough]];
    case '[':
      if (!skip_json_container(p, e, 1)) return false;
      v.raw = std::string_view(vb, static_cast<std::size_t>(p - vb));
      return true;
    case 't':
      if (e - p < 4 || std::memcmp(p, "true", 4) != 0) return false;
      p += 4;
      return true;
    case 'f':
      if (e - p < 5 || std::memcmp(p, "false", 5) != 0) return false;
      p += 5;
      return true;
    case 'n':
      if (e - p < 4 || std::memcmp(p, "null", 4) != 0) return false;
      p += 4;
      v.kind = 'z';
      return true;
    default:
      return false;
  }
}

// Reads the value at p (p moves past it). Numbers and strings first, as plain
// branches (the key order repeats, so they predict); the rarer kinds after.
[[gnu::always_inline]] inline bool scan_value(Field id, const char*& p, const char* e, FastVal& v) {
  const char* vb = p;
  const char c = *p;
  if (static_cast<unsigned char>(c - '0') < 10 || c == '-') {
    const char* end = scan_json_number(p, e);
    if (end == nullptr) return false;
    p = end;
    v = {'n', std::string_view(vb, static_cast<std::size_t>(p - vb))};
    return true;
  }
  if (c == '"') {
    ++p;
    if (!scan_string(p, e, v.raw)) return false;
    v.kind = 's';
    return true;
  }
  return scan_other_value(id, p, e, v);
}

// The fast path (see the top of this file). h.field(Field, const FastVal&).
template <class Handler>
bool scan_flat(const char* p, std::size_t len, KeyMemos& memos, Handler& h) {
  const char* e = p + len;
  p = skip_ws(p, e);
  if (p >= e || *p != '{') return false;
  p = skip_ws(p + 1, e);
  if (p < e && *p == '}') return skip_ws(p + 1, e) == e;
  for (std::size_t pos = 0;; ++pos) {
    FieldMemo& memo = memos.field(pos);
    FastVal v;
    if (memo.replay(p, e, v)) {  // the same field text as on the previous line
      p += memo.len;
      h.field(memo.id, v);
      if (memo.last) return skip_ws(p, e) == e;
      p = skip_ws(p, e);
      continue;
    }
    const char* fb = p;
    Field id;
    if (!scan_key(pos, p, e, memos, id) || !scan_value(id, p, e, v)) return false;
    h.field(id, v);
    if (p < e && *p == ',') {  // the usual separator, no whitespace around it
      memo.learn(fb, p + 1, id, v, false);
      p = skip_ws(p + 1, e);
      continue;
    }
    p = skip_ws(p, e);
    if (p >= e) return false;
    if (*p == '}') {
      memo.learn(fb, p + 1, id, v, true);
      return skip_ws(p + 1, e) == e;
    }
    if (*p != ',') return false;
    p = skip_ws(p + 1, e);
  }
}

// The fallback: any valid JSON object. h.field(Field, dom::element). An error
// (invalid JSON, not an object) hands over no field.
template <class Handler>
simdjson::error_code scan_dom(dom::parser& parser, const char* p, std::size_t len, Handler& h) {
  dom::element root;
  dom::object obj;
  auto err = parser.parse(p, len, false).get(root);
  if (!err) err = root.get_object().get(obj);
  if (err) return err;
  for (dom::key_value_pair f : obj) h.field(field_id(f.key), f.value);
  return simdjson::SUCCESS;
}

}  // namespace ni::analysis::reader_detail
