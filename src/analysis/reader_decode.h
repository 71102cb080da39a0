// Decoding: one log file's bytes -> decompressed text -> lines.
//
// Contract: Decoder::read() maps the file and hands its text to a ChunkSink in
// chunks: plain text in 1 MiB chunks; gzip (any number of concatenated members)
// a whole member at a time through libdeflate, or, for a member too big for the
// 16 MiB buffer and for damaged data, streamed through zlib, which salvages the
// text up to the damage. Damage (truncated stream, garbage after a member, data
// errors) is recorded in FileInfo, never thrown. Every chunk has kLinePadding
// readable bytes after its end. LineSplitter cuts chunks into lines (a line may
// span chunks: it is then copied into a padded carry buffer) and decides whether
// a last line without '\n' is a complete line or a cut one (truncation).
// One Decoder per worker thread; it is reused for that worker's files.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "src/analysis/model.h"

struct libdeflate_decompressor;

namespace ni::analysis::reader_detail {

// Readable bytes past the end of every chunk and line handed out (the scanner's
// 16/32-byte loads; simdjson's SIMDJSON_PADDING, checked where simdjson is used).
inline constexpr std::size_t kLinePadding = 64;

// Receives a file's decompressed text: buf[0, n) is text, buf[n, n + kLinePadding)
// is readable. Called from the thread that called Decoder::read().
class ChunkSink {
 public:
  virtual void chunk(char* buf, std::size_t n) = 0;

 protected:
  ~ChunkSink() = default;
};

class Decoder {
 public:
  Decoder() = default;
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;
  ~Decoder();

  // Reads the file info.path into out. Sets info's gzip, compressed_bytes,
  // uncompressed_bytes and damage fields (error, truncated, corrupt); adds the
  // compressed bytes consumed to progress as it goes (a relaxed counter: the
  // progress bar only displays it).
  void read(FileInfo& info, ChunkSink& out, std::atomic<std::uint64_t>& progress);

 private:
  // The whole-member output buffer (allocated on first use, not zero-filled) and
  // the decompressor: a fresh 16 MiB buffer per file cost a zero fill and its page
  // faults every time.
  std::unique_ptr<char[]> member_;
  libdeflate_decompressor* dec_ = nullptr;
};

// Splits decompressed chunks into lines. on_line(p, len, last) gets a line
// without its '\n' and with kLinePadding readable bytes after it; last is true
// only for a final line that had no '\n'. on_long() is called, in line order,
// for each line over kMaxLineBytes, which on_line never sees.
class LineSplitter {
 public:
  template <class OnLine, class OnLong>
  void feed(char* buf, std::size_t n, OnLine&& on_line, OnLong&& on_long) {
    std::size_t s = 0;
    while (s < n) {
      const char* nl = static_cast<const char*>(std::memchr(buf + s, '\n', n - s));
      if (!nl) break;
      const std::size_t e = static_cast<std::size_t>(nl - buf);
      if (skipping_) {
        skipping_ = false;  // the long line ends here
        on_long();
      } else if (e - s > kMaxLineBytes || carry_.size() + (e - s) > kMaxLineBytes) {
        carry_.clear();
        on_long();
      } else if (!carry_.empty()) {
        carry_.insert(carry_.end(), buf + s, buf + e);
        flush_carry(on_line, false);
      } else {
        on_line(buf + s, e - s, false);
      }
      s = e + 1;
    }
    if (s >= n || skipping_) return;
    if (carry_.size() + (n - s) > kMaxLineBytes) {
      // Too long already: forget it and skip to its end.
      carry_.clear();
      carry_.shrink_to_fit();
      skipping_ = true;
    } else {
      carry_.insert(carry_.end(), buf + s, buf + n);
    }
  }

  // At the end of the file: a last line without '\n' is fine when it parses (a
  // hand-written .log); when it does not (on_line counted a bad line), the writer
  // was cut mid-line: counted as truncation instead of a bad line.
  template <class OnLine, class OnLong>
  void finish(FileInfo& info, OnLine&& on_line, OnLong&& on_long) {
    if (skipping_) {
      skipping_ = false;
      on_long();
      return;
    }
    if (carry_.empty()) return;
    const bool all_space =
        std::all_of(carry_.begin(), carry_.end(), [](char c) { return c == ' ' || c == '\r' || c == '\t'; });
    if (all_space) {
      carry_.clear();
      return;
    }
    const std::uint64_t bad_before = info.bad_lines;
    flush_carry(on_line, true);
    if (info.bad_lines != bad_before) {
      --info.bad_lines;
      info.truncated = true;
      ++info.truncated_lines;
      if (info.error.empty()) info.error = "last line cut (killed writer?)";
    }
  }

 private:
  template <class OnLine>
  void flush_carry(OnLine& on_line, bool last) {
    const std::size_t len = carry_.size();
    carry_.resize(len + kLinePadding, '\0');
    on_line(carry_.data(), len, last);
    carry_.clear();
  }

  std::vector<char> carry_;  // the start of a line that continues in the next chunk
  bool skipping_ = false;    // inside a line over kMaxLineBytes, until its '\n'
};

}  // namespace ni::analysis::reader_detail
