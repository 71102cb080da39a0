// Decoding (see reader_decode.h): the file mapping, gzip members through
// libdeflate, the zlib fallback for big or damaged members, and plain text.
#include "src/analysis/reader_decode.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>

#include "src/analysis/reader.h"

namespace ni::analysis::reader_detail {

namespace {

constexpr std::size_t kChunk = 1u << 20;       // zlib / plain text chunk
constexpr std::size_t kMemberCap = 16u << 20;  // libdeflate whole-member output

bool all_zero(const unsigned char* b, const unsigned char* e) {
  return std::all_of(b, e, [](unsigned char c) { return c == 0; });
}

// Read-only mapping of a whole file.
struct Mapping {
  const unsigned char* data = nullptr;
  std::size_t size = 0;
  std::string error;
  explicit Mapping(const std::string& path) {
    int fd = open_input(path);
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

// One file's decoding: where it stands (progress reported so far) and where its text goes.
class FileDecode {
 public:
  FileDecode(FileInfo& info, ChunkSink& out, std::atomic<std::uint64_t>& progress)
      : info_(info), out_(out), progress_(progress) {}

  void plain(const unsigned char* d, std::size_t n) {
    std::vector<char> buf(kChunk + kLinePadding);
    for (std::size_t off = 0; off < n; off += kChunk) {
      const std::size_t len = std::min(kChunk, n - off);
      std::memcpy(buf.data(), d + off, len);
      emit(buf.data(), len);
      report(off + len);
    }
  }

  void gzip(const unsigned char* d, std::size_t n, libdeflate_decompressor* dec, char* out) {
    std::size_t pos = 0;
    while (pos < n) {
      if (!member_follows(d, n, pos)) break;
      std::size_t in_used = 0, out_used = 0;
      const libdeflate_result r =
          libdeflate_gzip_decompress_ex(dec, d + pos, n - pos, out, kMemberCap, &in_used, &out_used);
      if (r == LIBDEFLATE_SUCCESS) {
        // The scanners read up to kLinePadding bytes past a line's end: make those
        // bytes defined (stale or never written otherwise); values never depend on them.
        std::memset(out + out_used, 0, kLinePadding);
        emit(out, out_used);
        pos += in_used;
        report(pos);
        continue;
      }
      // Too big for one buffer, or damaged (truncated member, bad data): stream
      // the rest with zlib, which salvages everything up to the damage.
      zlib(d + pos, n - pos, pos);
      break;
    }
  }

  // Adds what is left of the file's size to the progress counter.
  void report_rest(std::size_t size) { progress_.fetch_add(size - reported_, std::memory_order_relaxed); }

 private:
  // True when a gzip member starts at pos; otherwise records why not (trailing
  // zeros after the last member are fine: preallocated or synced files).
  bool member_follows(const unsigned char* d, std::size_t n, std::size_t pos) {
    if (n - pos >= 18 && d[pos] == 0x1f && d[pos + 1] == 0x8b) return true;
    if (all_zero(d + pos, d + n)) return false;
    if (n - pos < 18 && d[pos] == 0x1f) {
      info_.truncated = true;
      info_.error = "truncated gzip member at offset " + std::to_string(pos);
    } else {
      info_.corrupt = true;
      info_.error = "garbage after gzip member at offset " + std::to_string(pos);
    }
    return false;
  }

  // Streams d[0, n) (at file offset base) through zlib, member after member.
  void zlib(const unsigned char* d, std::size_t n, std::size_t base) {
    z_stream zs{};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
      info_.error = "zlib init failed";
      info_.corrupt = true;
      return;
    }
    std::vector<char> out(kChunk + kLinePadding);
    std::size_t pos = 0;  // input handed to zlib so far
    bool ended = false;
    while (!ended) {
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
      if (produced) emit(out.data(), produced);
      report(base + pos - zs.avail_in);
      if (rc == Z_STREAM_END) {
        const std::size_t consumed = pos - zs.avail_in;
        ended = !next_member(zs, d, n, consumed, base);
        continue;
      }
      if (rc == Z_OK) continue;
      if (rc == Z_BUF_ERROR && zs.avail_in == 0 && pos >= n) break;  // input ended early
      if (rc == Z_BUF_ERROR) continue;
      info_.corrupt = true;
      info_.error = std::string("gzip data error: ") + (zs.msg ? zs.msg : "unknown") + " near offset " +
                    std::to_string(base + pos - zs.avail_in);
      ended = true;
    }
    if (!ended) {
      info_.truncated = true;
      if (info_.error.empty()) info_.error = "truncated gzip stream (killed writer?)";
    }
    inflateEnd(&zs);
  }

  // After a member's end at d + consumed: true (zs reset) when another member
  // follows; false at the end of the input or before trailing bytes (garbage
  // unless all zero).
  bool next_member(z_stream& zs, const unsigned char* d, std::size_t n, std::size_t consumed,
                   std::size_t base) {
    if (consumed >= n) return false;
    const unsigned char* next = d + consumed;
    if (n - consumed >= 2 && next[0] == 0x1f && next[1] == 0x8b) {
      inflateReset(&zs);
      return true;
    }
    if (!all_zero(next, d + n)) {
      info_.corrupt = true;
      info_.error = "garbage after gzip member at offset " + std::to_string(base + consumed);
    }
    return false;
  }

  void emit(char* buf, std::size_t n) {
    info_.uncompressed_bytes += n;
    out_.chunk(buf, n);
  }

  void report(std::size_t done) {
    if (done > reported_) {
      // Relaxed: a statistic for the progress bar, which reads it with a relaxed load.
      progress_.fetch_add(done - reported_, std::memory_order_relaxed);
      reported_ = done;
    }
  }

  FileInfo& info_;
  ChunkSink& out_;
  std::atomic<std::uint64_t>& progress_;
  std::size_t reported_ = 0;  // compressed bytes already added to progress_
};

}  // namespace

Decoder::~Decoder() {
  if (dec_) libdeflate_free_decompressor(dec_);
}

void Decoder::read(FileInfo& info, ChunkSink& out, std::atomic<std::uint64_t>& progress) {
  Mapping m(info.path);
  if (!m.error.empty()) {
    info.error = m.error;
    info.corrupt = true;
    return;
  }
  info.compressed_bytes = m.size;
  FileDecode f(info, out, progress);
  if (m.size >= 2 && m.data[0] == 0x1f && m.data[1] == 0x8b) {
    info.gzip = true;
    if (!dec_) dec_ = libdeflate_alloc_decompressor();
    if (!member_) member_.reset(new char[kMemberCap + kLinePadding]);  // not zero-filled: see gzip()
    f.gzip(m.data, m.size, dec_, member_.get());
  } else {
    f.plain(m.data, m.size);
  }
  f.report_rest(m.size);
}

}  // namespace ni::analysis::reader_detail
