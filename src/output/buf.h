// A small growable byte buffer with the exact appenders the JSON-lines encoder
// and the Prometheus writer need. Purpose-built for the dump thread's hot loop:
// no locale, no printf, integers via std::to_chars, "fixed 3 decimals" numbers
// from integers scaled by 1000 (so a duration in ns prints exactly as µs).
//
// Contract: single-threaded (owned by the dump thread). Growth may allocate;
// nothing else does.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace ni::out {

class Buf {
 public:
  Buf() = default;
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { std::free(data_); }

  const char* data() const noexcept { return data_; }
  char* data() noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  void clear() noexcept { size_ = 0; }
  std::string_view view() const noexcept { return {data_ == nullptr ? "" : data_, size_}; }
  void resize(size_t n) {
    reserve(n);
    size_ = n;
  }

  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = cap_ == 0 ? 4096 : cap_;
    while (cap < n) cap *= 2;
    void* p = std::realloc(data_, cap);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
    cap_ = cap;
  }
  // Room for n more bytes; returns where they go (commit with advance()).
  char* room(size_t n) {
    reserve(size_ + n);
    return data_ + size_;
  }
  void advance(size_t n) noexcept { size_ += n; }

  void put(char c) {
    reserve(size_ + 1);
    data_[size_++] = c;
  }
  void put(std::string_view s) {
    reserve(size_ + s.size());
    if (!s.empty()) std::memcpy(data_ + size_, s.data(), s.size());
    size_ += s.size();
  }
  template <typename Int>
  void put_int(Int v) {
    char* p = room(24);
    auto r = std::to_chars(p, p + 24, v);
    size_ += static_cast<size_t>(r.ptr - p);
  }
  // v / 1000 with up to 3 decimals, trailing zeros (and a bare '.') trimmed:
  // 1234567 -> "1234.567", 1500 -> "1.5", 2000 -> "2", -5 -> "-0.005".
  void put_milli(int64_t milli) {
    char* p = room(32);
    char* s = p;
    uint64_t m;
    if (milli < 0) {
      *p++ = '-';
      m = static_cast<uint64_t>(-(milli + 1)) + 1;
    } else {
      m = static_cast<uint64_t>(milli);
    }
    auto r = std::to_chars(p, p + 24, m / 1000);
    p = r.ptr;
    auto frac = static_cast<unsigned>(m % 1000);
    if (frac != 0) {
      *p++ = '.';
      *p++ = static_cast<char>('0' + frac / 100);
      unsigned rest = frac % 100;
      if (rest != 0) {
        *p++ = static_cast<char>('0' + rest / 10);
        if (rest % 10 != 0) *p++ = static_cast<char>('0' + rest % 10);
      }
    }
    size_ += static_cast<size_t>(p - s);
  }
  // A finite double with 3 decimals. Returns false (and writes nothing) for
  // NaN/Inf or a magnitude that does not fit: callers then omit the field.
  bool put_fixed3(double v) {
    if (!std::isfinite(v) || std::fabs(v) > 9.0e15) return false;
    put_milli(std::llround(v * 1000.0));
    return true;
  }
  // A finite non-negative-or-negative double to `sig` significant digits but
  // never finer than 0.001 (bandwidths: 214.696 -> "215", 7.663 -> "7.66",
  // 0.01234 -> "0.012"). Returns false for NaN/Inf/huge (field omitted).
  bool put_sig(double v, int sig) {
    if (!std::isfinite(v) || std::fabs(v) > 9.0e15) return false;
    double a = std::fabs(v);
    int decimals = 3;
    if (a > 0) {
      int mag = static_cast<int>(std::floor(std::log10(a)));  // 10^mag <= a
      decimals = sig - 1 - mag;
      if (decimals < 0) decimals = 0;
      if (decimals > 3) decimals = 3;
    }
    static constexpr double kPow[] = {1, 10, 100, 1000};
    static constexpr int64_t kScale[] = {1000, 100, 10, 1};
    put_milli(std::llround(v * kPow[decimals]) * kScale[decimals]);
    return true;
  }
  // Shortest round-trip representation (Prometheus values). NaN/Inf are not
  // JSON, but Prometheus accepts "+Inf"/"NaN"; callers decide.
  void put_double(double v) {
    char* p = room(32);
    auto r = std::to_chars(p, p + 32, v);
    size_ += static_cast<size_t>(r.ptr - p);
  }
  // "0x" + 16 lowercase hex digits.
  void put_hex64(uint64_t v) {
    static constexpr char kHex[] = "0123456789abcdef";
    char* p = room(18);
    p[0] = '0';
    p[1] = 'x';
    for (int i = 0; i < 16; ++i) p[2 + i] = kHex[(v >> (60 - 4 * i)) & 0xF];
    size_ += 18;
  }
  // A JSON string literal (with the quotes). Escapes '"', '\\' and control
  // characters; bytes that are not valid UTF-8 become '?', so every strict
  // parser (nlohmann, DuckDB) accepts the line.
  void put_json_string(std::string_view s);

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
};

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if invalid.
size_t utf8_seq_len(std::string_view s, size_t i) noexcept;

}  // namespace ni::out
