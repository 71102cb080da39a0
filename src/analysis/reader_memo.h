// Record mapping, part 2: the reader's memos. The writer repeats itself (the same
// keys in the same order on every line, the same func/algo/proto strings), so
// what a piece of text parsed to last time is remembered and recognised by one
// 16- or 32-byte compare instead of being scanned and looked up again.
//
// Contract: a memo only ever saves work; a miss (or a collision) falls back to
// the full path and gives the same result. Every compare reads only bytes inside
// a padded line buffer (kLinePadding readable bytes past the line). One set of
// memos per file reader; not shared between threads.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "src/analysis/reader_fields.h"
#include "src/analysis/reader_values.h"

namespace ni::analysis::reader_detail {

// The last text of the field at a position, `"key":value,` (or the line's last
// field with its '}'), up to 32 bytes, and what it parsed to. Learned text holds a
// whole field: its value's token ended inside it (at the separator), so equal text
// at the same place parses to the same key, value and separator.
struct FieldMemo {
  alignas(16) char text[32];
  std::uint32_t mask = 0;  // the text's bytes as bits of two 16-byte compares
  std::uint8_t len = 0;    // 0: nothing learned
  std::uint8_t voff = 0, vlen = 0;
  std::uint8_t rest = 0;   // lines left before trying (and learning) again after a change
  char kind = 0;
  bool last = false;       // the text ends with the line's '}'
  Field id = Field::kNone;

  static constexpr std::uint8_t kPause = 8;

  // True (v set; the field is the len bytes at p) when the text at p is the one
  // learned here: same tokens, no scanning. It costs about as many instructions as
  // it saves but breaks the chain of dependent scans (measured ~2.5% less CPU time
  // on the benchmark dump). A changed field pauses the memo for kPause lines.
  [[gnu::always_inline]] bool replay(const char* p, const char* e, FastVal& v) {
#if defined(__SSE2__)
    if (rest != 0) {
      --rest;
      return false;
    }
    if (len == 0 || static_cast<std::size_t>(e - p) < len) return false;
    // p lies inside the line buffer: 32 bytes are readable (padding).
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
    const __m128i b0 = _mm_load_si128(reinterpret_cast<const __m128i*>(text));
    const __m128i b1 = _mm_load_si128(reinterpret_cast<const __m128i*>(text + 16));
    const std::uint32_t eq = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0))) |
                             static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1))) << 16;
    if ((eq & mask) == mask) {
      v = FastVal{kind, std::string_view(p + voff, vlen)};
      return true;
    }
    rest = kPause;  // changed: parse it normally for a while
#else
    (void)p, (void)e, (void)v;
#endif
    return false;
  }

  // Learns the field text..end just parsed (end past its separator), v its value,
  // unless the memo is paused.
  void learn(const char* t, const char* end, Field fid, const FastVal& v, bool is_last) {
    if (rest != 0) return;
    const std::size_t n = static_cast<std::size_t>(end - t);
    const std::size_t off = v.raw.empty() ? 0 : static_cast<std::size_t>(v.raw.data() - t);
    if (n > 32 || off > 255 || v.raw.size() > 255) {
      len = 0;
      return;
    }
#if defined(__SSE2__)
    // Both 16-byte blocks copied whole (the line buffer is padded); bytes past n are masked off.
    _mm_store_si128(reinterpret_cast<__m128i*>(text), _mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
    _mm_store_si128(reinterpret_cast<__m128i*>(text + 16),
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + 16)));
#else
    std::memcpy(text, t, n);
#endif
    mask = n == 32 ? ~0u : (1u << n) - 1;
    len = static_cast<std::uint8_t>(n);
    voff = static_cast<std::uint8_t>(off);
    vlen = static_cast<std::uint8_t>(v.raw.size());
    kind = v.kind;
    last = is_last;
    id = fid;
  }
};

// Per field position of a line: the field memo, the cached key (keys of up to 16
// bytes) and the exact text `"key":` last seen there (up to 16 bytes: keys of up
// to 13). Positions past kSlots share memos (pos mod kSlots): that costs hits,
// never correctness.
class KeyMemos {
 public:
  static constexpr std::size_t kSlots = 64;

  FieldMemo& field(std::size_t pos) { return memos_[pos % kSlots]; }

  // The length of the pattern cached at pos when the text at p is that pattern
  // (id set), else 0. The same result as the general path: the pattern was `"`, a
  // key without '"' or '\\', `"` and `:`, so the key's closing quote is the first
  // one and the colon follows it directly.
  std::size_t key_pattern(std::size_t pos, const char* p, const char* e, Field& id) const {
    if (pos >= kSlots) return 0;
    const KeySlot& slot = keys_[pos];
    const std::size_t n = slot.plen;
    if (n == 0 || static_cast<std::size_t>(e - p) <= n) return 0;  // a value must follow
#if defined(__SSE2__)
    // p lies inside the line buffer: 16 bytes are readable (padding).
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(slot.pat));
    const unsigned eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
    const unsigned m = 0xffffu >> (16 - n);
    if ((eq & m) != m) return 0;
#else
    if (std::memcmp(slot.pat, p, n) != 0) return 0;
#endif
    id = slot.pat_id;
    return n;
  }

  void learn_key_pattern(std::size_t pos, const char* text, std::size_t n, Field id) {
    if (pos >= kSlots || n > 16) return;
    KeySlot& slot = keys_[pos];
    std::memset(slot.pat, 0, sizeof slot.pat);
    std::memcpy(slot.pat, text, n);
    slot.plen = static_cast<std::uint8_t>(n);
    slot.pat_id = id;
  }

  // field_id(k), remembered per position.
  Field key_id(std::size_t pos, std::string_view k) {
    if (pos >= kSlots || k.size() > 16) return field_id(k);
    KeySlot& slot = keys_[pos];
    if (slot.len == k.size()) {
#if defined(__SSE2__)
      // The key lies inside the line buffer: 16 bytes are readable (padding).
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k.data()));
      const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(slot.key));
      const unsigned eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
      const unsigned m = k.size() == 16 ? 0xffffu : (1u << k.size()) - 1;
      if ((eq & m) == m) return slot.id;
#else
      if (std::memcmp(slot.key, k.data(), k.size()) == 0) return slot.id;
#endif
    }
    std::memset(slot.key, 0, sizeof slot.key);
    std::memcpy(slot.key, k.data(), k.size());
    slot.len = static_cast<std::uint8_t>(k.size());
    slot.id = field_id(k);
    return slot.id;
  }

 private:
  struct KeySlot {
    alignas(16) char key[16];
    alignas(16) char pat[16];
    std::uint8_t len = 255;
    std::uint8_t plen = 0;  // 0: no pattern
    Field id = Field::kNone;
    Field pat_id = Field::kNone;
  };
  std::array<KeySlot, kSlots> keys_{};
  std::array<FieldMemo, kSlots> memos_{};
};

// Tiny direct-mapped cache from a short string value to what a parse function
// returns for it (func, algo, proto, ... repeat on every line): one 16-byte compare
// instead of a chain of string compares. Only for strings inside a padded line
// buffer (16 bytes readable from any position).
template <class T>
class ValueCache {
 public:
  template <class Parse>
  [[gnu::always_inline]] T get(std::string_view s, Parse parse) {
    const std::size_t n = s.size();
    if (n - 1 >= 16) return parse(s);  // empty, or longer than 16
    Entry& x = e_[(n * 7 + static_cast<unsigned char>(s[0]) + static_cast<unsigned char>(s[n - 1]) * 3) % kSize];
    if (x.len == n) {
#if defined(__SSE2__)
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data()));
      const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(x.text));
      const unsigned eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
      const unsigned mask = 0xffffu >> (16 - n);
      if ((eq & mask) == mask) return x.val;
#else
      if (std::memcmp(x.text, s.data(), n) == 0) return x.val;
#endif
    }
    std::memset(x.text, 0, sizeof x.text);
    std::memcpy(x.text, s.data(), n);
    x.len = static_cast<std::uint8_t>(n);
    x.val = parse(s);
    return x.val;
  }

 private:
  static constexpr std::size_t kSize = 16;
  struct Entry {
    alignas(16) char text[16];
    std::uint8_t len = 255;
    T val{};
  };
  std::array<Entry, kSize> e_{};
};

}  // namespace ni::analysis::reader_detail
