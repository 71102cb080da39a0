#include "src/output/buf.h"

namespace ni::out {

size_t utf8_seq_len(std::string_view s, size_t i) noexcept {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  // Overlong forms, surrogates and > U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n;
}

void Buf::put_json_string(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  reserve(size_ + s.size() + 2);
  put('"');
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      put('\\');
      put(static_cast<char>(c));
      ++i;
    } else if (c == '\n') {
      put(std::string_view("\\n"));
      ++i;
    } else if (c == '\t') {
      put(std::string_view("\\t"));
      ++i;
    } else if (c == '\r') {
      put(std::string_view("\\r"));
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      put(std::string_view(e, 6));
      ++i;
    } else if (c < 0x80) {
      put(static_cast<char>(c));
      ++i;
    } else {
      size_t n = utf8_seq_len(s, i);
      if (n == 0) {
        put('?');
        ++i;
      } else {
        put(s.substr(i, n));
        i += n;
      }
    }
  }
  put('"');
}

}  // namespace ni::out
