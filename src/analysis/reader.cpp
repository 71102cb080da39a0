#include "reader.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <charconv>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <simdjson.h>
#include <thread>
#include <type_traits>

#include "nccl_inspector/schema.h"

namespace nccl_inspector::analysis {

namespace fs = std::filesystem;
namespace dom = simdjson::dom;
namespace sc = nccl_inspector::schema;

namespace {

constexpr std::size_t kPad = simdjson::SIMDJSON_PADDING;
constexpr std::size_t kChunk = 1u << 20;           // zlib / plain text chunk
constexpr std::size_t kMemberCap = 16u << 20;      // libdeflate whole-member output
constexpr std::size_t kMaxProblems = 50;

bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}
bool is_log_name(std::string_view n) {
  return ends_with(n, ".jsonl.gz") || ends_with(n, ".jsonl") || ends_with(n, ".log") ||
         ends_with(n, ".log.gz");
}

// Read-only mapping of a whole file.
struct Mapping {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  std::string error;
  explicit Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = std::string("cannot open: ") + std::strerror(errno);
      return;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      error = std::string("cannot stat: ") + std::strerror(errno);
      ::close(fd);
      return;
    }
    size = static_cast<std::size_t>(st.st_size);
    if (size > 0) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        error = std::string("cannot map: ") + std::strerror(errno);
        size = 0;
      } else {
        data = static_cast<const unsigned char*>(p);
        ::madvise(p, size, MADV_SEQUENTIAL);
      }
    }
    ::close(fd);
  }
  ~Mapping() {
    if (data) ::munmap(const_cast<unsigned char*>(data), size);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
};

// Fields of one line, the union over record types. Reset per line.
struct Line {
  std::string_view type;
  bool has_type = false;
  // common / op
  std::uint64_t comm_hash = 0;
  bool has_hash = false;
  std::string_view comm_name;
  bool has_comm_name = false;
  std::int64_t rank = -1, nranks = 0, nnodes = 0, peer = -1, abi = 0;
  std::int64_t wall_ns = 0;
  bool has_wall = false;
  // Fast path: wall_ns's number token, converted only for the records that use it
  // (ops do not: a 19-digit parse saved per op).
  bool wall_pending = false;
  std::string_view wall_raw;
  std::uint64_t seq = 0;
  bool has_seq = false;
  std::string_view func, algo, proto, timing, transport;
  bool has_func = false;
  std::uint64_t bytes = 0;
  bool has_bytes = false;
  std::int64_t nchannels = 0, channels_len = -1;
  std::int64_t start_wall_ns = 0;
  bool has_start = false;
  double dur_us = kNaN, busbw = kNaN, ch_balance = -1;
  bool reclaimed = false, partial = false, graph = false;
  // meta
  std::string_view format, plugin_version, host, job_id;
  std::int64_t format_version = 0, pid = -1, file_seq = 0, global_rank = -1;
  // comm: its GPU
  std::int64_t cuda_dev = -1;
  std::string_view pci_bus_id;
  // clock
  std::int64_t uncertainty_ns = -1, samples = 0;
  // stats (the counter objects live in FileReader: Line stays trivially copyable)
  std::uint64_t records_written = 0, ops_completed = 0, reclaimed_ops = 0;
  // mark / end
  std::string_view label;
  std::uint64_t dropped_total = 0;
  // upstream v4.0
  bool upstream = false;
  std::string_view up_version;
};
static_assert(std::is_trivially_copyable_v<Line>);

// Character classes for the scanner.
constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = 1;
  for (char c : {'-', '+', '.', 'e', 'E'}) t[static_cast<std::uint8_t>(c)] = 1;  // number characters
  for (char c : {'"', '[', ']', '{', '}'}) t[static_cast<std::uint8_t>(c)] = 2;  // nesting structure
  return t;
}
constexpr std::array<std::uint8_t, 256> kClass = make_classes();

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

// Record kinds by their "type" string (kOp* are the op records).
enum class RecType : std::uint8_t { kOpColl, kOpP2p, kOpCe, kOther };
RecType rec_type(std::string_view t) {
  return t == sc::kTypeColl ? RecType::kOpColl
         : t == sc::kTypeP2p ? RecType::kOpP2p
         : t == sc::kTypeCe  ? RecType::kOpCe
                             : RecType::kOther;
}
std::uint8_t transport_code(std::string_view t) { return t == "network" ? 2 : t == "intra_node" ? 1 : 0; }
Timing timing_of(std::string_view t) { return t.empty() ? Timing::kUnknown : parse_timing(t); }

// A worker's gzip member buffer and decompressor, reused for all its files: a fresh
// 16 MiB buffer per file cost a zero fill and its page faults every time.
struct GzipScratch {
  std::unique_ptr<char[]> out;  // kMemberCap + kPad bytes, allocated on first use
  libdeflate_decompressor* dec = nullptr;
  GzipScratch() = default;
  GzipScratch(const GzipScratch&) = delete;
  GzipScratch& operator=(const GzipScratch&) = delete;
  ~GzipScratch() {
    if (dec) libdeflate_free_decompressor(dec);
  }
};

class FileReader {
 public:
  FileReader(FileInfo& info, std::uint32_t idx, Sink& sink, bool validate,
             std::atomic<std::uint64_t>& progress_bytes, GzipScratch& gz)
      : info_(info), idx_(idx), sink_(sink), validate_(validate), progress_(progress_bytes), gz_(gz) {
    want_detail_ = sink.wants_detail();
    fields_ = validate ? kOpFieldsAll : sink.op_fields();
  }

  void run() {
    Mapping m(info_.path);
    if (!m.error.empty()) {
      info_.error = m.error;
      info_.corrupt = true;
      return;
    }
    info_.compressed_bytes = m.size;
    if (m.size >= 2 && m.data[0] == 0x1f && m.data[1] == 0x8b) {
      info_.gzip = true;
      read_gzip(m.data, m.size);
    } else {
      read_plain(m.data, m.size);
    }
    finish_carry();
    progress_.fetch_add(m.size - reported_, std::memory_order_relaxed);
  }

 private:
  // ---- decompression
  void read_plain(const unsigned char* d, std::size_t n) {
    std::vector<char> buf(kChunk + kPad);
    for (std::size_t off = 0; off < n; off += kChunk) {
      const std::size_t len = std::min(kChunk, n - off);
      std::memcpy(buf.data(), d + off, len);
      feed(buf.data(), len, buf.size());
      report(off + len);
    }
  }

  void read_gzip(const unsigned char* d, std::size_t n) {
    if (!gz_.dec) gz_.dec = libdeflate_alloc_decompressor();
    if (!gz_.out) gz_.out.reset(new char[kMemberCap + kPad]);  // not zero-filled: see below
    libdeflate_decompressor* dec = gz_.dec;
    char* out = gz_.out.get();
    std::size_t pos = 0;
    while (pos < n) {
      if (n - pos < 18 || d[pos] != 0x1f || d[pos + 1] != 0x8b) {
        if (std::all_of(d + pos, d + n, [](unsigned char c) { return c == 0; })) break;
        if (n - pos < 18 && d[pos] == 0x1f) {
          info_.truncated = true;
          info_.error = "truncated gzip member at offset " + std::to_string(pos);
        } else {
          info_.corrupt = true;
          info_.error = "garbage after gzip member at offset " + std::to_string(pos);
        }
        break;
      }
      std::size_t in_used = 0, out_used = 0;
      const libdeflate_result r = libdeflate_gzip_decompress_ex(
          dec, d + pos, n - pos, out, kMemberCap, &in_used, &out_used);
      if (r == LIBDEFLATE_SUCCESS) {
        // The scanners read up to kPad bytes past a line's end: make those bytes
        // defined (stale or never written otherwise); values never depend on them.
        std::memset(out + out_used, 0, kPad);
        feed(out, out_used, kMemberCap + kPad);
        pos += in_used;
        report(pos);
        continue;
      }
      // Too big for one buffer, or damaged (truncated member, bad data): stream
      // the rest with zlib, which salvages everything up to the damage.
      read_zlib(d + pos, n - pos, pos);
      break;
    }
  }

  void read_zlib(const unsigned char* d, std::size_t n, std::size_t base) {
    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
      info_.error = "zlib init failed";
      info_.corrupt = true;
      return;
    }
    std::vector<char> out(kChunk + kPad);
    std::size_t pos = 0;
    bool ended = false;
    while (true) {
      if (zs.avail_in == 0 && pos < n) {
        const std::size_t len = std::min<std::size_t>(n - pos, 1u << 30);
        zs.next_in = const_cast<Bytef*>(d + pos);
        zs.avail_in = static_cast<uInt>(len);
        pos += len;
      }
      zs.next_out = reinterpret_cast<Bytef*>(out.data());
      zs.avail_out = static_cast<uInt>(kChunk);
      const int rc = inflate(&zs, Z_NO_FLUSH);
      const std::size_t produced = kChunk - zs.avail_out;
      if (produced) feed(out.data(), produced, out.size());
      report(base + pos - zs.avail_in);
      if (rc == Z_STREAM_END) {
        // Another member follows?
        const std::size_t consumed = pos - zs.avail_in;
        if (consumed >= n) {
          ended = true;
          break;
        }
        const unsigned char* next = d + consumed;
        if (n - consumed >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
          inflateReset(&zs);
          continue;
        }
        if (!std::all_of(next, d + n, [](unsigned char c) { return c == 0; })) {
          info_.corrupt = true;
          info_.error = "garbage after gzip member at offset " + std::to_string(base + consumed);
        }
        ended = true;
        break;
      }
      if (rc == Z_OK) continue;
      if (rc == Z_BUF_ERROR && zs.avail_in == 0 && pos >= n) break;  // input ended early
      if (rc == Z_BUF_ERROR) continue;
      info_.corrupt = true;
      info_.error = std::string("gzip data error: ") + (zs.msg ? zs.msg : "unknown") +
                    " near offset " + std::to_string(base + pos - zs.avail_in);
      ended = true;
      break;
    }
    if (!ended) {
      info_.truncated = true;
      if (info_.error.empty()) info_.error = "truncated gzip stream (killed writer?)";
    }
    inflateEnd(&zs);
  }

  void report(std::size_t done) {
    if (done > reported_) {
      progress_.fetch_add(done - reported_, std::memory_order_relaxed);
      reported_ = done;
    }
  }

  // ---- line splitting. buf has cap bytes allocated (>= n + kPad).
  void feed(char* buf, std::size_t n, std::size_t cap) {
    info_.uncompressed_bytes += n;
    std::size_t s = 0;
    while (s < n) {
      const char* nl = static_cast<const char*>(std::memchr(buf + s, '\n', n - s));
      if (!nl) break;
      const std::size_t e = static_cast<std::size_t>(nl - buf);
      if (!carry_.empty()) {
        carry_.insert(carry_.end(), buf + s, buf + e);
        parse_carry();
      } else {
        parse_line(buf + s, e - s, cap - s);
      }
      s = e + 1;
    }
    if (s < n) carry_.insert(carry_.end(), buf + s, buf + n);
  }

  void parse_carry() {
    const std::size_t len = carry_.size();
    carry_.resize(len + kPad, '\0');
    parse_line(carry_.data(), len, carry_.size());
    carry_.clear();
  }

  void finish_carry() {
    if (carry_.empty()) return;
    // A last line without '\n': complete JSON (a hand-written .log) is fine; a cut one is truncation.
    const bool all_space = std::all_of(carry_.begin(), carry_.end(), [](char c) {
      return c == ' ' || c == '\r' || c == '\t';
    });
    if (all_space) {
      carry_.clear();
      return;
    }
    const std::uint64_t bad_before = info_.bad_lines;
    last_line_ = true;
    parse_carry();
    last_line_ = false;
    if (info_.bad_lines != bad_before) {
      // Not a bad line: the writer was cut mid-line.
      --info_.bad_lines;
      info_.truncated = true;
      ++info_.truncated_lines;
      if (info_.error.empty()) info_.error = "last line cut (killed writer?)";
    }
  }

  void problem(const std::string& what) {
    if (!validate_ || info_.problems.size() >= kMaxProblems) return;
    info_.problems.push_back("line " + std::to_string(info_.lines) + ": " + what);
  }

  // ---- parsing
  // ---- fast path: a strict scanner for flat objects whose strings have no escapes
  // (what the plugin writes). Nested arrays/objects are skipped by bracket matching
  // and handed to simdjson only when a field needs them. Anything unexpected
  // returns false and the line goes through simdjson's DOM parser, which decides.
  struct FastVal {
    char kind;             // 's' string, 'n' number, 't' true, 'f' false, 'z' null, '[' array, '{' object
    std::string_view raw;  // string contents (no quotes), number token, or the whole nested value
  };
  // Plain decimal integer (no sign for u64); false for anything else.
  // t lies in a line buffer (8 bytes readable from any position). Eight digits at a
  // time (SWAR): a 19-digit wall_ns costs three steps instead of 19 dependent
  // multiply-adds, a short one (rank, nranks) one step. At most 19 digits: no overflow.
  [[gnu::always_inline]] static bool dec_u64(std::string_view t, std::uint64_t& out) {
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
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // The n (1..8) decimal digits at p as a number; a non-digit sets bits in bad.
  // Loads 8 bytes (p lies in a padded buffer).
  [[gnu::always_inline]] static std::uint64_t digits8(const char* p, std::size_t n, std::uint64_t& bad) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    return digits8v(x, n, bad);
  }
  // The same for 8 loaded bytes x, the first digit in the lowest byte. The bytes past
  // the n digits are shifted out and '0's shifted in at the front, which do not change
  // the value.
  [[gnu::always_inline]] static std::uint64_t digits8v(std::uint64_t x, std::size_t n, std::uint64_t& bad) {
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
#endif
  // An integer field written as a double ("1e3", "12.0"): truncated, if it fits
  // (the cast of a value outside the range is undefined; such a field is absent).
  static bool double_to_i64(double d, std::int64_t& out) {
    if (!(d >= -0x1p63 && d < 0x1p63)) return false;
    out = static_cast<std::int64_t>(d);
    return true;
  }
  static bool double_to_u64(double d, std::uint64_t& out) {
    if (!(d >= 0 && d < 0x1p64)) return false;
    out = static_cast<std::uint64_t>(d);
    return true;
  }
  static bool get_i64(const FastVal& v, std::int64_t& out) {
    if (v.kind != 'n') return false;
    std::uint64_t u;
    if ((v.raw[0] == '-' ? dec_u64(v.raw.substr(1), u) : dec_u64(v.raw, u)) &&
        u <= static_cast<std::uint64_t>(INT64_MAX)) {
      out = v.raw[0] == '-' ? -static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u);
      return true;
    }
    const char* b = v.raw.data();
    const char* e = b + v.raw.size();
    std::int64_t i;
    auto r = std::from_chars(b, e, i);
    if (r.ec == std::errc() && r.ptr == e) {
      out = i;
      return true;
    }
    double d;
    auto r2 = std::from_chars(b, e, d);
    return r2.ec == std::errc() && r2.ptr == e && double_to_i64(d, out);
  }
  static bool get_u64(const FastVal& v, std::uint64_t& out) {
    if (v.kind != 'n') return false;
    if (dec_u64(v.raw, out)) return true;
    const char* b = v.raw.data();
    const char* e = b + v.raw.size();
    std::uint64_t u;
    auto r = std::from_chars(b, e, u);
    if (r.ec == std::errc() && r.ptr == e) {
      out = u;
      return true;
    }
    double d;
    auto r2 = std::from_chars(b, e, d);
    return r2.ec == std::errc() && r2.ptr == e && double_to_u64(d, out);
  }
  // Decimal "[-]digits[.digits]" with at most 15 digits: the integer of its digits
  // and 10^(fraction digits) are exact doubles, so one IEEE division gives the
  // correctly rounded value, the same as from_chars. false: use from_chars.
  // t lies in a padded line buffer (16 bytes readable from any position): the '.'
  // is found with one 16-byte compare and the digits convert as at most two SWAR blocks.
  static bool fast_f64(std::string_view t, double& out) {
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
  static bool get_f64(const FastVal& v, double& out) {
    if (v.kind != 'n') return false;
    if (fast_f64(v.raw, out)) return true;
    double d;
    auto r = std::from_chars(v.raw.data(), v.raw.data() + v.raw.size(), d);
    if (r.ec != std::errc() || r.ptr != v.raw.data() + v.raw.size()) return false;
    out = d;
    return true;
  }
  static bool get_str(const FastVal& v, std::string_view& out) {
    if (v.kind != 's') return false;
    out = v.raw;
    return true;
  }
  static bool get_bool(const FastVal& v, bool& out) {
    if (v.kind != 't' && v.kind != 'f') return false;
    out = v.kind == 't';
    return true;
  }
  static bool get_bool(dom::element v, bool& out) { return !v.get_bool().get(out); }
  static void array_count(const FastVal& v, std::int64_t& out) {
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
  static void array_count(dom::element v, std::int64_t& out) {
    dom::array a;
    if (!v.get_array().get(a)) out = static_cast<std::int64_t>(a.size());
  }
  bool nested(dom::element v, dom::element& out) {
    out = v;
    return true;
  }
  bool nested(const FastVal& v, dom::element& out) {
    if (v.kind != '[' && v.kind != '{') return false;
    // The nested text lies inside the line buffer, which has SIMDJSON_PADDING readable bytes past the line.
    return !nested_parser_.parse(v.raw.data(), v.raw.size(), false).get(out);
  }

  // p <= e; the byte at p is readable even at e (padding). The writer puts no
  // whitespace between tokens: one compare, nearly always taken.
  static const char* skip_ws(const char* p, const char* e) {
    if (static_cast<unsigned char>(*p) > ' ') return p;
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
    return p;
  }
  // Scans a string starting after its opening quote; false on an escape or no closing quote.

  // Scans a string starting after its opening quote; false on an escape or no closing
  // quote. Reads up to 15 bytes past e: every line has SIMDJSON_PADDING readable bytes after it.
  static bool scan_string(const char*& p, const char* e, std::string_view& out) {
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
  // 15 bytes past e (padding), 16 bytes per step: no mispredicted exit per digit.
  static const char* scan_number(const char* p, const char* e) {
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
  // close before e. Reads up to 15 bytes past e (padding).
  static bool skip_nested(const char*& p, const char* e) {
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
  bool parse_fast(const char* p, std::size_t len) {
    const char* e = p + len;
    p = skip_ws(p, e);
    if (p >= e || *p != '{') return false;
    p = skip_ws(p + 1, e);
    if (p < e && *p == '}') return skip_ws(p + 1, e) == e;
    for (std::size_t pos = 0;; ++pos) {
      F id;
      FieldMemo& memo = memos_[pos % kKeySlots];
#if defined(__SSE2__)
      // A field whose whole text (key, value and the separator after it) is the one
      // at this position on the previous line: same tokens, no scanning. It costs
      // about as many instructions as it saves but breaks the chain of dependent
      // scans (measured ≈ 2.5% less CPU time on the benchmark dump).
      if (memo.rest == 0) {
        if (memo.len != 0 && static_cast<std::size_t>(e - p) >= memo.len) {
          // p lies inside the line buffer: 32 bytes are readable (padding).
          const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
          const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16));
          const __m128i b0 = _mm_load_si128(reinterpret_cast<const __m128i*>(memo.text));
          const __m128i b1 = _mm_load_si128(reinterpret_cast<const __m128i*>(memo.text + 16));
          const std::uint32_t eq = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0))) |
                                   static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1))) << 16;
          if ((eq & memo.mask) == memo.mask) {
            const FastVal v{memo.kind, std::string_view(p + memo.voff, memo.vlen)};
            p += memo.len;
            handle_field(memo.id, v);
            if (memo.last) return skip_ws(p, e) == e;
            p = skip_ws(p, e);
            continue;
          }
          memo.rest = kMemoPause;  // changed: parse it normally for a while
        }
      } else {
        --memo.rest;
      }
#endif
      const char* fb = p;
      // The writer repeats its key order: the text `"key":` seen at this position
      // last time is compared as one 16-byte block (quotes, key and colon at once);
      // only a miss scans for the closing quote and the colon.
      if (!match_key_pattern(pos, p, e, id)) {
        if (p >= e || *p != '"') return false;
        const char* kq = p++;
        std::string_view key;
        if (!scan_string(p, e, key)) return false;
        id = cached_field_id(pos, key);
        p = skip_ws(p, e);
        if (p >= e || *p != ':') return false;
        if (p == key.data() + key.size() + 1) learn_key_pattern(pos, kq, key.size() + 3, id);
        p = skip_ws(p + 1, e);
        if (p >= e) return false;
      }
      FastVal v;
      const char* vb = p;
      const char c = *p;
      // Numbers and strings first, as plain branches (the key order repeats, so they
      // predict); the rarer kinds through a switch.
      if (static_cast<unsigned char>(c - '0') < 10 || c == '-') {
        p = scan_number(p, e);
        v = {'n', std::string_view(vb, static_cast<std::size_t>(p - vb))};
      } else if (c == '"') {
        ++p;
        if (!scan_string(p, e, v.raw)) return false;
        v.kind = 's';
      } else {
        v.kind = c;
        switch (c) {
          case '{':
            // Upstream v4.0 lines are all nested objects whose strings must outlive
            // several nested parses: simdjson's DOM path parses them in one go.
            if (id == F::kHeader || id == F::kMetadata || id == F::kCollPerf || id == F::kP2pPerf) return false;
            [[fallthrough]];
          case '[':
            if (!skip_nested(p, e)) return false;
            v.raw = std::string_view(vb, static_cast<std::size_t>(p - vb));
            break;
          case 't':
            if (e - p < 4 || std::memcmp(p, "true", 4) != 0) return false;
            p += 4;
            break;
          case 'f':
            if (e - p < 5 || std::memcmp(p, "false", 5) != 0) return false;
            p += 5;
            break;
          case 'n':
            if (e - p < 4 || std::memcmp(p, "null", 4) != 0) return false;
            p += 4;
            v.kind = 'z';
            break;
          default:
            return false;
        }
      }
      handle_field(id, v);
      if (p < e && *p == ',') {  // the usual separator, no whitespace around it
        if (memo.rest == 0) learn_memo(memo, fb, p + 1, id, v, false);
        p = skip_ws(p + 1, e);
        continue;
      }
      p = skip_ws(p, e);
      if (p >= e) return false;
      if (*p == '}') {
        if (memo.rest == 0) learn_memo(memo, fb, p + 1, id, v, true);
        return skip_ws(p + 1, e) == e;
      }
      if (*p != ',') return false;
      p = skip_ws(p + 1, e);
    }
  }

  static bool get_i64(dom::element v, std::int64_t& out) {
    std::int64_t i;
    if (!v.get_int64().get(i)) {
      out = i;
      return true;
    }
    double d;
    return !v.get_double().get(d) && double_to_i64(d, out);
  }
  static bool get_u64(dom::element v, std::uint64_t& out) {
    std::uint64_t u;
    if (!v.get_uint64().get(u)) {
      out = u;
      return true;
    }
    double d;
    return !v.get_double().get(d) && double_to_u64(d, out);
  }
  static bool get_f64(dom::element v, double& out) {
    double d;
    if (!v.get_double().get(d)) {
      out = d;
      return true;
    }
    return false;  // upstream writes NaN as a string: treated as absent
  }
  static bool get_str(dom::element v, std::string_view& out) {
    return !v.get_string().get(out);
  }
  template <class V>
  void get_counts(V vin, std::vector<std::pair<std::string, std::uint64_t>>& out) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::object o;
    if (v.get_object().get(o)) return;
    for (dom::key_value_pair f : o) {
      std::string_view k = f.key;
      std::uint64_t n = 0;
      if (get_u64(f.value, n)) out.emplace_back(std::string(k), n);
    }
  }

  void parse_line(const char* p, std::size_t len, std::size_t cap) {
    (void)cap;  // the caller guarantees cap >= len + SIMDJSON_PADDING readable bytes
    // Skip blank lines (and a trailing '\r').
    while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ')) --len;
    if (len == 0) return;
    ++info_.lines;
    L_ = Line{};
    if (!dropped_.empty() || !filtered_.empty() || !faults_.empty()) {
      dropped_.clear();
      filtered_.clear();
      faults_.clear();
    }
    bool ok = false;
    if (!validate_) {
      if (parse_fast(p, len)) {
        padded_ = true;
        dispatch();
        padded_ = false;
        return;
      }
      L_ = Line{};  // undo the partial fast parse; simdjson decides
      dropped_.clear();
      filtered_.clear();
      faults_.clear();
      detail_.clear();
    }
    dom::element root;
    dom::object obj;
    auto err = parser_.parse(p, len, false).get(root);
    if (!err) err = root.get_object().get(obj);
    if (err) {
      if (!last_line_) problem(std::string("invalid JSON: ") + simdjson::error_message(err));
    } else {
      ok = true;
      for (dom::key_value_pair f : obj) parse_field(f.key, f.value);
    }
    if (!ok) {
      ++info_.bad_lines;
      return;
    }
    dispatch();
  }

  // Field ids: the key -> handler lookup happens once per key position and is
  // then cached (the writer repeats its key order on every line).
  enum class F : std::uint8_t {
    kNone, kAlgo, kAbi, kBytes, kBusbw, kCommHash, kCommName, kChannels, kChBalance, kChTimes, kCollPerf,
    kDurUs, kDropped, kDroppedTotal, kFunc, kFormat, kFormatVersion, kFileSeq, kFiltered, kFaults, kGraph,
    kHost, kHcas, kHeader, kJob, kLabel, kMetadata, kNranks, kNnodes, kNchannels, kNet, kOpsCompleted,
    kProto, kPeer, kPid, kPluginVersion, kPartial, kP2pPerf, kRank, kReclaimed, kRecordsWritten,
    kReclaimedOps, kSeq, kStartWallNs, kType, kTiming, kTransport, kWallNs, kUncertainty, kSamples,
    kCudaDev, kPciBusId
  };
  static F field_id(std::string_view k) {
    static const std::pair<std::string_view, F> kFields[] = {
        {sc::kAlgo, F::kAlgo}, {sc::kAbiVersion, F::kAbi}, {sc::kBytes, F::kBytes}, {sc::kBusbwGbs, F::kBusbw},
        {sc::kCommHash, F::kCommHash}, {sc::kCommName, F::kCommName}, {sc::kChannels, F::kChannels},
        {sc::kChBalance, F::kChBalance}, {sc::kChTimes, F::kChTimes}, {"coll_perf", F::kCollPerf},
        {sc::kDurUs, F::kDurUs}, {sc::kDropped, F::kDropped}, {sc::kDroppedTotal, F::kDroppedTotal},
        {sc::kFunc, F::kFunc}, {sc::kFormat, F::kFormat}, {sc::kFormatVersionField, F::kFormatVersion},
        {sc::kFileSeq, F::kFileSeq}, {sc::kFiltered, F::kFiltered}, {sc::kFaults, F::kFaults},
        {sc::kGraph, F::kGraph}, {sc::kHost, F::kHost}, {sc::kHcas, F::kHcas}, {"header", F::kHeader},
        {sc::kJob, F::kJob}, {sc::kLabel, F::kLabel}, {"metadata", F::kMetadata}, {sc::kNranks, F::kNranks},
        {sc::kNnodes, F::kNnodes}, {sc::kNchannels, F::kNchannels}, {sc::kNet, F::kNet},
        {sc::kOpsCompleted, F::kOpsCompleted}, {sc::kProto, F::kProto}, {sc::kPeer, F::kPeer},
        {sc::kPid, F::kPid}, {sc::kPluginVersion, F::kPluginVersion}, {sc::kPartial, F::kPartial},
        {"p2p_perf", F::kP2pPerf}, {sc::kRank, F::kRank}, {sc::kReclaimed, F::kReclaimed},
        {sc::kRecordsWritten, F::kRecordsWritten}, {sc::kReclaimedOps, F::kReclaimedOps}, {sc::kSeq, F::kSeq},
        {sc::kStartWallNs, F::kStartWallNs}, {sc::kType, F::kType}, {sc::kTiming, F::kTiming},
        {sc::kTransport, F::kTransport}, {sc::kWallNs, F::kWallNs}, {sc::kUncertaintyNs, F::kUncertainty},
        {sc::kCudaDevice, F::kCudaDev}, {sc::kPciBusId, F::kPciBusId},
        {sc::kSamples, F::kSamples}};
    for (const auto& [name, id] : kFields)
      if (name == k) return id;
    return F::kNone;
  }

  // The last text of the field at a position, `"key":value,` (or the line's last
  // field with its '}'), up to 32 bytes, and what it parsed to. Learned text holds a
  // whole field: its value's token ended inside it (at the separator), so equal text
  // at the same place parses to the same key, value and separator. Positions past
  // kKeySlots share memos (pos mod kKeySlots): that costs hits, never correctness.
  struct FieldMemo {
    alignas(16) char text[32];
    std::uint32_t mask = 0;  // the text's bytes as bits of two 16-byte compares
    std::uint8_t len = 0;    // 0: nothing learned
    std::uint8_t voff = 0, vlen = 0;
    std::uint8_t rest = 0;   // lines left before trying (and learning) again after a change
    char kind = 0;
    bool last = false;       // the text ends with the line's '}'
    F id = F::kNone;
  };
  static constexpr std::uint8_t kMemoPause = 8;
  // text..end is the field just parsed (end past its separator), v its value.
  static void learn_memo(FieldMemo& m, const char* text, const char* end, F id, const FastVal& v, bool last) {
    const std::size_t n = static_cast<std::size_t>(end - text);
    const std::size_t voff = v.raw.empty() ? 0 : static_cast<std::size_t>(v.raw.data() - text);
    if (n > 32 || voff > 255 || v.raw.size() > 255) {
      m.len = 0;
      return;
    }
#if defined(__SSE2__)
    // Both 16-byte blocks copied whole (the line buffer is padded); bytes past n are masked off.
    _mm_store_si128(reinterpret_cast<__m128i*>(m.text), _mm_loadu_si128(reinterpret_cast<const __m128i*>(text)));
    _mm_store_si128(reinterpret_cast<__m128i*>(m.text + 16),
                    _mm_loadu_si128(reinterpret_cast<const __m128i*>(text + 16)));
#else
    std::memcpy(m.text, text, n);
#endif
    m.mask = n == 32 ? ~0u : (1u << n) - 1;
    m.len = static_cast<std::uint8_t>(n);
    m.voff = static_cast<std::uint8_t>(voff);
    m.vlen = static_cast<std::uint8_t>(v.raw.size());
    m.kind = v.kind;
    m.last = last;
    m.id = id;
  }

  // Cached key at each field position of the line (keys of up to 16 bytes), and
  // the exact text `"key":` last seen there (up to 16 bytes: keys of up to 13).
  struct KeySlot {
    alignas(16) char key[16];
    alignas(16) char pat[16];
    std::uint8_t len = 255;
    std::uint8_t plen = 0;  // 0: no pattern
    F id = F::kNone;
    F pat_id = F::kNone;
  };
  // True (id set, p at the value's first byte) when the text at p is the pattern
  // cached at this position. The same result as the general path: the pattern was
  // `"`, a key without '"' or '\\', `"` and `:`, so the key's closing quote is the
  // first one and the colon follows it directly.
  bool match_key_pattern(std::size_t pos, const char*& p, const char* e, F& id) const {
    if (pos >= kKeySlots) return false;
    const KeySlot& slot = keys_[pos];
    const std::size_t n = slot.plen;
    if (n == 0 || static_cast<std::size_t>(e - p) <= n) return false;  // a value must follow
#if defined(__SSE2__)
    // p lies inside the line buffer: 16 bytes are readable (padding).
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(slot.pat));
    const unsigned eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
    const unsigned mask = 0xffffu >> (16 - n);
    if ((eq & mask) != mask) return false;
#else
    if (std::memcmp(slot.pat, p, n) != 0) return false;
#endif
    id = slot.pat_id;
    p = skip_ws(p + n, e);
    return true;
  }
  void learn_key_pattern(std::size_t pos, const char* text, std::size_t n, F id) {
    if (pos >= kKeySlots || n > 16) return;
    KeySlot& slot = keys_[pos];
    std::memset(slot.pat, 0, sizeof slot.pat);
    std::memcpy(slot.pat, text, n);
    slot.plen = static_cast<std::uint8_t>(n);
    slot.pat_id = id;
  }
  F cached_field_id(std::size_t pos, std::string_view k) {
    if (pos < kKeySlots && k.size() <= 16) {
      KeySlot& slot = keys_[pos];
      if (slot.len == k.size()) {
#if defined(__SSE2__)
        // The key lies inside the line buffer: 16 bytes are readable (padding).
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k.data()));
        const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(slot.key));
        const unsigned eq = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
        const unsigned mask = k.size() == 16 ? 0xffffu : (1u << k.size()) - 1;
        if ((eq & mask) == mask) return slot.id;
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
    return field_id(k);
  }

  template <class V>
  void parse_field(std::string_view k, const V& v) {
    handle_field(field_id(k), v);
  }

  template <class V>
  [[gnu::always_inline]] void handle_field(F id, const V& v) {  // v by reference: copying FastVal stalled store forwarding
    Line& L = L_;
    bool b = false;
    switch (id) {
      case F::kNone: break;
      case F::kAlgo: get_str(v, L.algo); break;
      case F::kAbi: get_i64(v, L.abi); break;
      case F::kBytes: L.has_bytes = get_u64(v, L.bytes); break;
      case F::kBusbw: get_f64(v, L.busbw); break;
      case F::kCommHash: {
        std::string_view s;
        if (get_str(v, s)) L.has_hash = comm_hash_of(v, s, L.comm_hash);
        else L.has_hash = get_u64(v, L.comm_hash);
        break;
      }
      case F::kCommName: L.has_comm_name = get_str(v, L.comm_name); break;
      case F::kCudaDev: get_i64(v, L.cuda_dev); break;
      case F::kPciBusId: get_str(v, L.pci_bus_id); break;
      case F::kChannels: if (fields_ & kOpFieldChannels) array_count(v, L.channels_len); break;
      case F::kChBalance: if (fields_ & kOpFieldChBalance) get_f64(v, L.ch_balance); break;
      case F::kChTimes: if (want_detail_) parse_ch_times(v); break;
      case F::kCollPerf: parse_upstream_perf(v, false); break;
      case F::kDurUs: get_f64(v, L.dur_us); break;
      case F::kDropped: get_counts(v, dropped_); break;
      case F::kDroppedTotal: get_u64(v, L.dropped_total); break;
      case F::kFunc: L.has_func = get_str(v, L.func); break;
      case F::kFormat: get_str(v, L.format); break;
      case F::kFormatVersion: get_i64(v, L.format_version); break;
      case F::kFileSeq: get_i64(v, L.file_seq); break;
      case F::kFiltered: get_counts(v, filtered_); break;
      case F::kFaults: get_counts(v, faults_); break;
      case F::kGraph: if (get_bool(v, b)) L.graph = b; break;
      case F::kHost: get_str(v, L.host); break;
      case F::kHcas: if (want_detail_) parse_hcas(v); break;
      case F::kHeader: parse_upstream_header(v); break;
      case F::kJob: {
        dom::element je;
        dom::object o;
        if (nested(v, je) && !je.get_object().get(o)) {
          for (dom::key_value_pair f : o) {
            if (f.key == "job_id" && get_str(f.value, L.job_id)) {
              job_id_own_ = std::string(L.job_id);  // outlives the nested parser's buffer
              L.job_id = job_id_own_;
            }
            std::string_view gr;
            if (f.key == "global_rank" && get_str(f.value, gr)) {
              std::int64_t g = 0;
              const auto [p, ec] = std::from_chars(gr.data(), gr.data() + gr.size(), g);
              if (ec == std::errc() && p == gr.data() + gr.size() && g >= 0 && g <= INT32_MAX) L.global_rank = g;
            }
          }
        }
        break;
      }
      case F::kLabel: get_str(v, L.label); break;
      case F::kMetadata: parse_upstream_meta(v); break;
      case F::kNranks: get_i64(v, L.nranks); break;
      case F::kNnodes: get_i64(v, L.nnodes); break;
      case F::kNchannels: if (fields_ & kOpFieldChannels) get_i64(v, L.nchannels); break;
      case F::kNet: if (want_detail_) parse_net(v); break;
      case F::kOpsCompleted: get_u64(v, L.ops_completed); break;
      case F::kProto: get_str(v, L.proto); break;
      case F::kPeer: get_i64(v, L.peer); break;
      case F::kPid: get_i64(v, L.pid); break;
      case F::kPluginVersion: get_str(v, L.plugin_version); break;
      case F::kPartial: if (get_bool(v, b)) L.partial = b; break;
      case F::kP2pPerf: parse_upstream_perf(v, true); break;
      case F::kRank: get_i64(v, L.rank); break;
      case F::kReclaimed: if (get_bool(v, b)) L.reclaimed = b; break;
      case F::kRecordsWritten: get_u64(v, L.records_written); break;
      case F::kReclaimedOps: get_u64(v, L.reclaimed_ops); break;
      case F::kSeq: if (fields_ & kOpFieldSeq) L.has_seq = get_u64(v, L.seq); break;
      case F::kStartWallNs: L.has_start = get_i64(v, L.start_wall_ns); break;
      case F::kType: L.has_type = get_str(v, L.type); break;
      case F::kTiming: get_str(v, L.timing); break;
      case F::kTransport: get_str(v, L.transport); break;
      case F::kWallNs: set_wall(v); break;
      case F::kUncertainty: get_i64(v, L.uncertainty_ns); break;
      case F::kSamples: get_i64(v, L.samples); break;
    }
  }

  // parse_hash, with the plugin's "0x" + 16 hex digits form cached (a job has few
  // communicators): one 16-byte compare instead of a parse. The string lies in a
  // padded line buffer for FastVal; the compare reads only the string's own bytes.
  static bool comm_hash_of(dom::element, std::string_view s, std::uint64_t& out) { return parse_hash(s, out); }
  bool comm_hash_of(const FastVal&, std::string_view s, std::uint64_t& out) {
#if defined(__SSE2__)
    if (s.size() == 18 && s[0] == '0' && s[1] == 'x') {
      HashSlot& h = hash_cache_[(static_cast<unsigned char>(s[17]) ^ static_cast<unsigned char>(s[16])) & 7];
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + 2));
      const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(h.hex));
      if (h.valid && _mm_movemask_epi8(_mm_cmpeq_epi8(a, b)) == 0xffff) {
        out = h.val;
        return true;
      }
      if (!parse_hash(s, out)) return false;
      std::memcpy(h.hex, s.data() + 2, 16);
      h.val = out;
      h.valid = true;
      return true;
    }
#endif
    return parse_hash(s, out);
  }

  void set_wall(dom::element v) { L_.has_wall = get_i64(v, L_.wall_ns); }
  void set_wall(const FastVal& v) {
    if (v.kind != 'n') {  // get_i64 would fail and leave wall_ns as it is
      L_.has_wall = false;
      return;
    }
    if (L_.wall_pending) resolve_wall();  // a repeated key: the earlier value first, as in order
    L_.wall_raw = v.raw;
    L_.wall_pending = true;
  }
  void resolve_wall() {
    L_.wall_pending = false;
    L_.has_wall = get_i64(FastVal{'n', L_.wall_raw}, L_.wall_ns);
  }

  template <class V>
  void parse_hcas(V vin) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::array a;
    if (v.get_array().get(a)) return;
    for (auto e : a) {
      dom::object o;
      if (e.get_object().get(o)) continue;
      HcaUse h;
      for (dom::key_value_pair f : o) {
        std::string_view k = f.key;
        if (k == sc::kHcaDev) {
          std::string_view s;
          std::int64_t i;
          dom::element fv = f.value;
          if (!fv.get_string().get(s)) h.dev = std::string(s);
          else if (get_i64(fv, i)) h.dev = std::to_string(i);
        } else if (k == sc::kBytes) {
          get_u64(f.value, h.bytes);
        }
      }
      detail_.hcas.push_back(std::move(h));
    }
  }
  template <class V>
  void parse_ch_times(V vin) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::array a;
    if (v.get_array().get(a)) return;
    for (auto e : a) {
      dom::array t;
      if (e.get_array().get(t)) continue;
      double vals[3] = {0, 0, 0};
      int i = 0;
      for (auto x : t) {
        double d;
        if (i < 3 && !x.get_double().get(d)) vals[i] = d;
        ++i;
      }
      if (i >= 3) detail_.ch_times.push_back({static_cast<int>(vals[0]), vals[1], vals[2]});
    }
  }
  template <class V>
  void parse_net(V vin) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::object o;
    if (v.get_object().get(o)) return;
    for (dom::key_value_pair f : o) {
      if (f.key == sc::kNetWaitUs) get_f64(f.value, detail_.net_wait_us);
      else if (f.key == sc::kNetSendBytes) get_u64(f.value, detail_.net_send_bytes);
      else if (f.key == sc::kNetRecvBytes) get_u64(f.value, detail_.net_recv_bytes);
    }
  }

  // Upstream Inspector v4.0: {"header":{...},"metadata":{...},"coll_perf"|"p2p_perf":{...}}
  template <class V>
  void parse_upstream_header(V vin) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::object o;
    if (v.get_object().get(o)) return;
    L_.upstream = true;
    for (dom::key_value_pair f : o) {
      std::string_view k = f.key;
      dom::element fv = f.value;
      if (k == "id") {
        std::string_view s;
        if (get_str(fv, s)) L_.has_hash = parse_hash(s, L_.comm_hash);
        else L_.has_hash = get_u64(fv, L_.comm_hash);
      } else if (k == "comm_name") {
        L_.has_comm_name = get_str(fv, L_.comm_name);
        if (L_.comm_name == "unknown") L_.comm_name = {};
      } else if (k == "rank") {
        get_i64(fv, L_.rank);
      } else if (k == "n_ranks") {
        get_i64(fv, L_.nranks);
      } else if (k == "nnodes") {
        get_i64(fv, L_.nnodes);
      }
    }
  }
  template <class V>
  void parse_upstream_meta(V vin) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::object o;
    if (v.get_object().get(o)) return;
    L_.upstream = true;
    for (dom::key_value_pair f : o) {
      std::string_view k = f.key;
      dom::element fv = f.value;
      if (k == "inspector_output_format_version") get_str(fv, L_.up_version);
      else if (k == "hostname") get_str(fv, L_.host);
      else if (k == "pid") get_i64(fv, L_.pid);
      else if (k == "git_rev") get_str(fv, L_.plugin_version);
    }
  }
  template <class V>
  void parse_upstream_perf(V vin, bool p2p) {
    dom::element v;
    if (!nested(vin, v)) return;
    dom::object o;
    if (v.get_object().get(o)) return;
    L_.upstream = true;
    L_.type = p2p ? sc::kTypeP2p : sc::kTypeColl;
    L_.has_type = true;
    for (dom::key_value_pair f : o) {
      std::string_view k = f.key;
      dom::element fv = f.value;
      // Strip the "coll_" / "p2p_" prefix.
      const std::size_t pre = p2p ? 4 : 5;
      if (k.size() <= pre) {
        if (k == "coll" || k == "p2p") L_.has_func = get_str(fv, L_.func);
        continue;
      }
      const std::string_view s = k.substr(pre);
      if (s == "sn") L_.has_seq = get_u64(fv, L_.seq);
      else if (s == "msg_size_bytes") L_.has_bytes = get_u64(fv, L_.bytes);
      else if (s == "exec_time_us") get_f64(fv, L_.dur_us);
      else if (s == "timing_source") get_str(fv, L_.timing);
      else if (s == "busbw_gbs") get_f64(fv, L_.busbw);
      else if (s == "peer") get_i64(fv, L_.peer);
    }
  }

  // The first comm record with hash h. A direct-mapped cache of positions in
  // info_.comms (positions stay valid as comms are appended; a hit is checked).
  const CommInfo* find_comm(std::uint64_t h) {
    auto& slot = comm_cache_[(h ^ (h >> 29)) & (kCommCache - 1)];
    if (slot < info_.comms.size() && info_.comms[slot].comm_hash == h) return &info_.comms[slot];
    for (std::size_t i = 0; i < info_.comms.size(); ++i) {
      if (info_.comms[i].comm_hash == h) {
        slot = static_cast<std::uint32_t>(i);
        return &info_.comms[i];
      }
    }
    return nullptr;
  }

  void dispatch() {
    Line& L = L_;
    if (!L.has_type) {
      ++info_.bad_lines;
      problem("no \"type\" field");
      return;
    }
    const std::string_view t = L.type;
    const RecType rt = padded_ ? type_cache_.get(t, rec_type) : rec_type(t);
    if (rt != RecType::kOther) {
      on_op(rt);
      return;
    }
    if (L.wall_pending) resolve_wall();
    if (t == sc::kTypeMeta) {
      if (info_.lines == 1) info_.meta_first = true;
      else problem("meta record not on the first line");
      info_.format = FileFormat::kOurs;
      info_.format_string = std::string(L.format);
      info_.format_version = static_cast<int>(L.format_version);
      info_.plugin_version = std::string(L.plugin_version);
      info_.host = std::string(L.host);
      info_.pid = L.pid;
      info_.file_seq = L.file_seq;
      info_.abi_version = static_cast<int>(L.abi);
      info_.job_id = std::string(L.job_id);
      info_.global_rank = static_cast<int>(L.global_rank);
      if (validate_) {
        if (L.format != sc::kFormatName) problem("meta.format is not \"" + std::string(sc::kFormatName) + "\"");
        if (L.format_version < 1 || L.format_version > sc::kFormatVersion)
          problem("unsupported format_version " + std::to_string(L.format_version));
        if (L.host.empty()) problem("meta without host");
      }
    } else if (t == sc::kTypeComm) {
      if (!L.has_hash) {
        problem("comm record without comm_hash");
        return;
      }
      CommInfo c{L.comm_hash, std::string(L.comm_name), static_cast<int>(L.rank),
                 static_cast<int>(L.nranks), static_cast<int>(L.nnodes),
                 L.cuda_dev >= 0 && L.cuda_dev < 1 << 20 ? static_cast<int>(L.cuda_dev) : -1,
                 std::string(L.pci_bus_id)};
      info_.comms.push_back(std::move(c));
    } else if (t == sc::kTypeStats) {
      StatsInfo& s = info_.stats;
      if (!s.present || L.wall_ns >= s.wall_ns) {
        s.present = true;
        s.wall_ns = L.wall_ns;
        s.records_written = L.records_written;
        s.ops_completed = L.ops_completed;
        s.reclaimed_ops = L.reclaimed_ops;
        s.dropped.clear();
        s.filtered.clear();
        s.faults.clear();
        for (auto& [k, n] : dropped_) s.dropped[k] = n;
        for (auto& [k, n] : filtered_) s.filtered[k] = n;
        for (auto& [k, n] : faults_) s.faults[k] = n;
      }
    } else if (t == sc::kTypeMark) {
      info_.marks.push_back({L.wall_ns, std::string(L.label)});
    } else if (t == sc::kTypeEnd) {
      info_.has_end = true;
      info_.dropped_total_end = L.dropped_total;
    } else if (t == sc::kTypeClock) {
      if (L.has_hash && info_.clocks.size() < 4096)
        info_.clocks.push_back({L.comm_hash, L.wall_ns, L.uncertainty_ns, L.samples});
    } else if (t == sc::kTypeCommEnd) {
      // known, nothing the analyzer needs yet
    } else {
      ++info_.unknown_records;
      if (info_.unknown_types.size() < 64) ++info_.unknown_types[std::string(t)];
    }
  }

  // A string field's parsed value; cached when the strings lie in the padded line buffer.
  template <class T, class Parse>
  T cached(ValueCache<T>& c, std::string_view s, Parse parse) {
    return padded_ ? c.get(s, parse) : parse(s);
  }

  void on_op(RecType rt) {
    Line& L = L_;
    if (!L.has_hash || !L.has_func) {
      ++info_.bad_lines;
      problem(std::string("op record without ") + (!L.has_hash ? "comm_hash" : "func"));
      return;
    }
    if (std::isnan(L.dur_us)) {
      // Legal (the schema omits dur_us when an op had no usable time, timing
      // "none"): counted and reported, left out of the analyses.
      ++info_.no_duration;
      return;
    }
    if (L.upstream && info_.format == FileFormat::kUnknown) {
      info_.format = FileFormat::kUpstreamV4;
      info_.format_string = std::string(L.up_version);
      info_.format_version = 4;
      info_.plugin_version = std::string(L.plugin_version);
      info_.host = std::string(L.host);
      info_.pid = L.pid;
    }
    OpRecord op;
    op.comm_hash = L.comm_hash;
    op.kind = rt == RecType::kOpColl ? OpKind::kColl : rt == RecType::kOpP2p ? OpKind::kP2p : OpKind::kCe;
    op.func = cached(func_cache_, L.func, parse_func);
    op.algo = cached(algo_cache_, L.algo, parse_algo);
    op.proto = cached(proto_cache_, L.proto, parse_proto);
    op.timing = cached(timing_cache_, L.timing, timing_of);
    op.bytes = L.bytes;
    op.seq = L.seq;
    op.dur_us = L.dur_us;
    op.busbw_gbs = L.busbw;
    op.ch_balance = static_cast<float>(L.ch_balance);
    op.rank = static_cast<std::int32_t>(L.rank);
    op.nranks = static_cast<std::int32_t>(L.nranks);
    op.nnodes = static_cast<std::uint16_t>(std::clamp<std::int64_t>(L.nnodes, 0, 65535));
    op.peer = static_cast<std::int32_t>(L.peer);
    op.file_idx = idx_;
    const std::int64_t nch = L.channels_len >= 0 ? L.channels_len : L.nchannels;
    op.nchannels = static_cast<std::uint16_t>(std::clamp<std::int64_t>(nch, 0, 65535));
    if (op.rank < 0 || op.nranks == 0 || op.nnodes == 0) {
      if (const CommInfo* c = find_comm(op.comm_hash)) {
        if (op.rank < 0) op.rank = c->rank;
        if (op.nranks == 0) op.nranks = c->nranks;
        if (op.nnodes == 0) op.nnodes = static_cast<std::uint16_t>(std::clamp(c->nnodes, 0, 65535));
      }
    }
    if (L.has_comm_name && !L.comm_name.empty() && !find_comm(op.comm_hash)) {
      info_.comms.push_back({op.comm_hash, std::string(L.comm_name), op.rank, op.nranks, op.nnodes, -1, ""});
    }
    op.transport = cached(transport_cache_, L.transport, transport_code);
    if (L.reclaimed) op.flags |= kFlagReclaimed;
    if (L.partial) op.flags |= kFlagPartial;
    if (L.graph) op.flags |= kFlagGraph;
    if (L.upstream) op.flags |= kFlagUpstream;
    if (L.has_start && !L.upstream) {
      op.start_wall_ns = L.start_wall_ns;
      op.flags |= kFlagHasStart;
    }
    if (validate_) {
      if (!L.has_seq) problem("op record without seq");
      if (!L.has_bytes) problem("op record without bytes");
      if (!L.upstream && !L.has_start) problem("op record without start_wall_ns");
      if (op.func == Func::kOther) problem("unknown func \"" + std::string(L.func) + "\"");
      if (L.dur_us < 0) problem("negative dur_us");
      if (op.kind == OpKind::kP2p && op.peer < 0) problem("p2p record without peer");
    }
    ++info_.ops;
    sink_.on_op(op, want_detail_ ? &detail_ : nullptr, info_);
    if (want_detail_) detail_.clear();
  }

  FileInfo& info_;
  std::uint32_t idx_;
  Sink& sink_;
  bool validate_;
  bool want_detail_ = false;
  std::uint32_t fields_ = kOpFieldsAll;
  bool last_line_ = false;
  std::atomic<std::uint64_t>& progress_;
  GzipScratch& gz_;
  std::size_t reported_ = 0;
  std::vector<char> carry_;
  dom::parser parser_;
  dom::parser nested_parser_;
  static constexpr std::size_t kKeySlots = 64;
  std::array<KeySlot, kKeySlots> keys_{};
  std::array<FieldMemo, kKeySlots> memos_{};
  std::string job_id_own_;
  Line L_;
  std::vector<std::pair<std::string, std::uint64_t>> dropped_, filtered_, faults_;
  OpDetail detail_;
  static constexpr std::size_t kCommCache = 16;
  std::array<std::uint32_t, kCommCache> comm_cache_ = [] {
    std::array<std::uint32_t, kCommCache> a{};
    a.fill(~0u);
    return a;
  }();
  // comm_hash strings in the plugin's form ("0x" + 16 hex digits) -> value.
  struct HashSlot {
    alignas(16) char hex[16] = {};
    std::uint64_t val = 0;
    bool valid = false;
  };
  std::array<HashSlot, 8> hash_cache_{};
  bool padded_ = false;  // the current Line's strings lie in a padded line buffer
  ValueCache<RecType> type_cache_;
  ValueCache<Func> func_cache_;
  ValueCache<Algo> algo_cache_;
  ValueCache<Proto> proto_cache_;
  ValueCache<Timing> timing_cache_;
  ValueCache<std::uint8_t> transport_cache_;
};

}  // namespace

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
}  // namespace

bool parse_hash(std::string_view s, std::uint64_t& out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
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
  if (s.empty() || s.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min(n, 64u));
}

Discovery discover_files(const std::vector<std::string>& inputs) {
  Discovery d;
  if (inputs.empty()) {
    d.error = "no input given";
    return d;
  }
  for (const auto& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) {
      d.error = "no such file or directory: " + in;
      return d;
    }
    if (fs::is_directory(st)) {
      const std::size_t before = d.files.size();
      for (auto it = fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && is_log_name(it->path().filename().string()))
          d.files.push_back(it->path().string());
      }
      if (ec) {
        d.error = "cannot list " + in + ": " + ec.message();
        return d;
      }
      std::sort(d.files.begin() + static_cast<std::ptrdiff_t>(before), d.files.end());
    } else {
      d.files.push_back(in);
    }
  }
  if (d.files.empty())
    d.error = "no log files (*.jsonl.gz, *.jsonl, *.log, *.log.gz) found in the input";
  return d;
}

namespace {
class Progress {
 public:
  Progress(bool on, std::uint64_t total, std::atomic<std::uint64_t>& done)
      : on_(on), total_(total), done_(done) {
    if (on_) th_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    if (!on_) return;
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    th_.join();
    std::fprintf(stderr, "\r%60s\r", "");
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> g(mu_);
    while (!cv_.wait_for(g, std::chrono::milliseconds(200), [this] { return stop_; })) {
      const double f = total_ ? static_cast<double>(done_.load(std::memory_order_relaxed)) /
                                    static_cast<double>(total_)
                              : 1.0;
      const int w = 30, filled = static_cast<int>(std::min(1.0, f) * w);
      std::fprintf(stderr, "\rreading [%.*s%*s] %5.1f%%", filled,
                   "##############################", w - filled, "", 100.0 * std::min(1.0, f));
      std::fflush(stderr);
    }
  }
  bool on_;
  std::uint64_t total_;
  std::atomic<std::uint64_t>& done_;
  std::thread th_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};
}  // namespace

ReadResult read_logs(const std::vector<std::string>& files, const ReadOptions& options,
                     const std::vector<Sink*>& sinks) {
  ReadResult res;
  res.files.resize(files.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    res.files[i].path = files[i];
    std::error_code ec;
    const auto sz = fs::file_size(files[i], ec);
    if (!ec) total += sz;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::size_t> next{0};
  {
    const bool show = options.progress == 1 || (options.progress < 0 && ::isatty(2));
    Progress progress(show, total, done);
    auto worker = [&](Sink* sink) {
      GzipScratch gz;
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < files.size();) {
        FileReader r(res.files[i], static_cast<std::uint32_t>(i), *sink, options.validate, done, gz);
        r.run();
      }
    };
    const std::size_t nthreads = std::max<std::size_t>(1, std::min(sinks.size(), files.size()));
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < nthreads; ++t) threads.emplace_back(worker, sinks[t]);
    worker(sinks[0]);
    for (auto& t : threads) t.join();
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& f : res.files) {
    res.ops += f.ops;
    res.lines += f.lines;
    res.bad_lines += f.bad_lines;
    res.no_duration += f.no_duration;
    res.unknown_records += f.unknown_records;
    res.truncated_files += f.truncated ? 1 : 0;
    res.corrupt_files += f.corrupt ? 1 : 0;
    res.uncompressed_bytes += f.uncompressed_bytes;
    res.compressed_bytes += f.compressed_bytes;
    for (const auto& c : f.comms) {
      auto& n = res.comm_names[c.comm_hash];
      if (n.empty()) n = c.name;
    }
  }
  return res;
}

}  // namespace nccl_inspector::analysis

namespace nccl_inspector::analysis {

void CollectSink::on_op(const OpRecord& op, const OpDetail* d, const FileInfo&) {
  ops.push_back(op);
  if (!detail_) return;
  Extra e;
  if (d) {
    e.hcas = d->hcas;
    if (d->ch_times.size() >= 2) {
      std::vector<double> durs;
      double mx = -1;
      for (const auto& c : d->ch_times) {
        durs.push_back(c.dur_us);
        if (c.dur_us > mx) {
          mx = c.dur_us;
          e.slowest_channel = c.channel;
        }
      }
      std::nth_element(durs.begin(), durs.begin() + static_cast<std::ptrdiff_t>(durs.size() / 2), durs.end());
      const double med = durs[durs.size() / 2];
      e.slowest_ratio = med > 0 ? mx / med : 0;
    }
  }
  extra.push_back(std::move(e));
}

void CollectSink::merge(CollectSink&& o) {
  ops.insert(ops.end(), o.ops.begin(), o.ops.end());
  extra.insert(extra.end(), std::make_move_iterator(o.extra.begin()), std::make_move_iterator(o.extra.end()));
  o.ops.clear();
  o.extra.clear();
}

}  // namespace nccl_inspector::analysis
