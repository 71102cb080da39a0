// Scanning, part 2: finding the fields of one line.
//
// scan_flat() is the fast path: a strict scanner for the flat objects the plugin
// writes (one object per line, strings without escapes, no whitespace needed).
// Nested arrays/objects are skipped by bracket matching and handed over as raw
// text (NestedParser parses them when a field needs them). scan_dom() is the
// fallback: simdjson's DOM parser, which accepts any valid JSON and decides.
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
  for (char c : {'"', '[', ']', '{', '}'}) t[static_cast<std::uint8_t>(c)] = 2;  // nesting structure
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

// Scans a string starting after its opening quote; false on an escape or no closing
// quote. Reads up to 15 bytes past e.
inline bool scan_string(const char*& p, const char* e, std::string_view& out) {
  const char* q = p;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  while (q < e) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const unsigned m = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, bslash))));
    if (m) {
      q += __builtin_ctz(m);
      break;
    }
    q += 16;
  }
#else
  while (q < e && *q != '"' && *q != '\\') ++q;
#endif
  if (q >= e || *q != '"') return false;
  out = std::string_view(p, static_cast<std::size_t>(q - p));
  p = q + 1;
  return true;
}

// End of a number token: the first byte that is not [0-9.eE+-] (at most e). Reads up to
// 15 bytes past e, 16 bytes per step: no mispredicted exit per digit.
inline const char* scan_number(const char* p, const char* e) {
#if defined(__SSE2__)
  // Number bytes: '+' ',' '-' '.' '/' '0'..'9' is the range 0x2B..0x39, less ',' and
  // '/'; 'e' and 'E' are the bytes that OR 0x20 makes 'e'.
  const __m128i base = _mm_set1_epi8(0x2B), span = _mm_set1_epi8(0x39 - 0x2B);
  const __m128i comma = _mm_set1_epi8(','), slash = _mm_set1_epi8('/');
  const __m128i lower = _mm_set1_epi8(0x20), lo_e = _mm_set1_epi8('e');
  while (p < e) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i t = _mm_sub_epi8(x, base);  // in range: 0..span, unsigned
    const __m128i in = _mm_cmpeq_epi8(_mm_min_epu8(t, span), t);
    const __m128i out = _mm_or_si128(_mm_cmpeq_epi8(x, comma), _mm_cmpeq_epi8(x, slash));
    const __m128i ok = _mm_or_si128(_mm_andnot_si128(out, in), _mm_cmpeq_epi8(_mm_or_si128(x, lower), lo_e));
    const unsigned stop = ~static_cast<unsigned>(_mm_movemask_epi8(ok)) & 0xffffu;
    if (stop) return std::min(e, p + __builtin_ctz(stop));
    p += 16;
  }
  return e;
#else
  while (p < e && kClass[static_cast<std::uint8_t>(*p)] == 1) ++p;
  return p;
#endif
}

// Moves p past the nested value starting at p ('[' or '{'); false if it does not
// close before e. Reads up to 15 bytes past e.
inline bool skip_nested(const char*& p, const char* e) {
  int depth = 0;
  while (p < e) {
#if defined(__SSE2__)
    // The next string or bracket byte, 16 bytes per step.
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i open = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('[')), _mm_cmpeq_epi8(x, _mm_set1_epi8('{')));
    const __m128i close = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(']')), _mm_cmpeq_epi8(x, _mm_set1_epi8('}')));
    const unsigned m = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(open, close), _mm_cmpeq_epi8(x, _mm_set1_epi8('"')))));
    if (m == 0) {
      p += 16;
      continue;
    }
    p += __builtin_ctz(m);
    if (p >= e) return false;
#else
    if (kClass[static_cast<std::uint8_t>(*p)] != 2) {
      ++p;
      continue;
    }
#endif
    const char c = *p;
    if (c == '"') {
      for (++p; p < e && *p != '"'; ++p)
        if (*p == '\\') ++p;
      if (p >= e) return false;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (--depth == 0) {
      ++p;
      return true;
    }
    ++p;
  }
  return false;
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
      if (!skip_nested(p, e)) return false;
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
    p = scan_number(p, e);
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
