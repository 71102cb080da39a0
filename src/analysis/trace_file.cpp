// `trace` to a file: plain JSON, or gzip when the name ends in ".gz".
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <ostream>
#include <streambuf>
#include <vector>

#include "src/analysis/trace.h"

namespace ni::analysis {

namespace {

// gzip output streambuf (zlib, level 6).
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(std::FILE* f) : f_(f) {
    std::memset(&z_, 0, sizeof z_);
    ok_ = deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    out_.resize(1 << 18);
  }
  ~GzBuf() override {
    if (ok_) deflateEnd(&z_);
  }
  GzBuf(const GzBuf&) = delete;
  GzBuf& operator=(const GzBuf&) = delete;
  bool finish() {
    if (!ok_) return false;
    return pump(nullptr, 0, Z_FINISH);
  }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (!ok_ || !pump(s, static_cast<std::size_t>(n), Z_NO_FLUSH)) return 0;
    return n;
  }
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    const char ch = static_cast<char>(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }

 private:
  bool pump(const char* s, std::size_t n, int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s));
    z_.avail_in = static_cast<uInt>(n);
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      const int r = deflate(&z_, flush);
      if (r == Z_STREAM_ERROR) return ok_ = false;
      const std::size_t have = out_.size() - z_.avail_out;
      if (have && std::fwrite(out_.data(), 1, have, f_) != have) return ok_ = false;
      if (flush == Z_FINISH ? r == Z_STREAM_END : z_.avail_in == 0 && z_.avail_out != 0) return true;
    }
  }
  std::FILE* f_;
  z_stream z_;
  std::vector<char> out_;
  bool ok_ = false;
};

}  // namespace

bool write_trace_file(const ViewSink& data, const ReadResult& res, const TraceOptions& o, const std::string& path,
                      TraceStats& stats, std::string& error) {
  // "-": plain JSON on stdout (compress it with a pipe if needed).
  const bool to_stdout = path == "-";
  const bool gz = !to_stdout && path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  std::FILE* fp = nullptr;
  if (to_stdout) {
    const int fd = ::dup(STDOUT_FILENO);
    fp = fd >= 0 ? fdopen(fd, "wb") : nullptr;
    if (fp == nullptr && fd >= 0) ::close(fd);
  } else {
    fp = std::fopen(path.c_str(), "wb");
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(fp, &std::fclose);
  if (!f) {
    error = "cannot write " + path;
    return false;
  }
  // Whatever went wrong, no half-written (or empty) trace is left behind.
  auto fail = [&](std::string why) {
    if (error.empty()) error = std::move(why);
    f.reset();
    if (!to_stdout) std::remove(path.c_str());
    return false;
  };
  if (gz) {
    GzBuf buf(f.get());
    std::ostream os(&buf);
    stats = write_trace(data, res, o, os, error);
    if (!error.empty()) return fail({});
    if (!os || !buf.finish()) return fail("write error on " + path);
  } else {
    struct FileBuf : std::streambuf {
      std::FILE* fp;
      explicit FileBuf(std::FILE* p) : fp(p) {}
      std::streamsize xsputn(const char* s, std::streamsize n) override {
        return static_cast<std::streamsize>(std::fwrite(s, 1, static_cast<std::size_t>(n), fp));
      }
      int overflow(int c) override { return c == traits_type::eof() ? 0 : std::fputc(c, fp); }
    } buf(f.get());
    std::ostream os(&buf);
    stats = write_trace(data, res, o, os, error);
    if (!error.empty()) return fail({});
    if (!os || std::fflush(f.get()) != 0) return fail("write error on " + path);
  }
  if (std::fclose(f.release()) != 0) return fail("write error on " + path);
  return true;
}

}  // namespace ni::analysis
