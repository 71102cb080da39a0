// The trace's JSON writer (trace.cpp): buffered text, one event per line.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>

#include "src/analysis/table.h"

namespace ni::analysis {

// Buffered JSON text writer: one event at a time, flushed every ~1 MiB.
class TraceJson {
 public:
  explicit TraceJson(std::ostream& out) : out_(out) { buf_.reserve(kFlush + 65536); }
  ~TraceJson() = default;
  TraceJson(const TraceJson&) = delete;
  TraceJson& operator=(const TraceJson&) = delete;

  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }
  void i64(std::int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    buf_.append(b, static_cast<std::size_t>(r.ptr - b));
  }
  void u64(std::uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    buf_.append(b, static_cast<std::size_t>(r.ptr - b));
  }
  // Nanoseconds as microseconds with 3 decimals (exact).
  void us(std::int64_t ns) {
    if (ns < 0) {
      ch('-');
      ns = -ns;
    }
    u64(static_cast<std::uint64_t>(ns / 1000));
    const int frac = static_cast<int>(ns % 1000);
    char b[5] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                 static_cast<char>('0' + frac % 10), 0};
    buf_.append(b, 4);
  }
  void num(double v) {
    if (!std::isfinite(v)) {
      raw("null");
      return;
    }
    char b[32];
    const int n = std::snprintf(b, sizeof b, "%.4g", v);
    buf_.append(b, static_cast<std::size_t>(n));
  }
  void str(std::string_view s) {
    ch('"');
    bool plain = true;
    for (unsigned char c : s)
      if (c < 0x20 || c == '"' || c == '\\') plain = false;
    if (plain) buf_.append(s);
    else buf_.append(json_escape(std::string(s)));
    ch('"');
  }
  void key(std::string_view k) {
    ch('"');
    buf_.append(k);
    raw("\":");
  }
  // Starts an event: {"ph":"X","name":..,"cat":..,"pid":..,"tid":..,"ts":..
  void begin(char ph, std::string_view name, std::string_view cat, int pid, int tid, std::int64_t ts_ns) {
    raw(events_++ ? ",\n" : "\n");  // one event per line (tests and grep rely on it)
    raw("{\"ph\":\"");
    ch(ph);
    raw("\",\"name\":");
    str(name);
    raw(",\"cat\":");
    str(cat);
    raw(",\"pid\":");
    i64(pid);
    raw(",\"tid\":");
    i64(tid);
    raw(",\"ts\":");
    us(ts_ns);
  }
  void end() {
    ch('}');
    if (buf_.size() >= kFlush) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    bytes_ += buf_.size();
    buf_.clear();
  }
  std::uint64_t events() const { return events_; }
  std::uint64_t bytes() const { return bytes_ + buf_.size(); }
  bool ok() const { return static_cast<bool>(out_); }

 private:
  static constexpr std::size_t kFlush = 1u << 20;
  std::ostream& out_;
  std::string buf_;
  std::uint64_t events_ = 0, bytes_ = 0;
};

}  // namespace ni::analysis
