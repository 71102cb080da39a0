#include <new>
#include "src/output/io.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace ni::out {
namespace {

class PosixIo final : public Io {
 public:
  int open(const char* path, int flags, mode_t mode) override {
    int fd;
    do {
      fd = ::open(path, flags, mode);
    } while (fd < 0 && errno == EINTR);
    return fd;
  }
  ssize_t write(int fd, const void* buf, size_t n) override { return ::write(fd, buf, n); }
  int fsync(int fd) override { return ::fsync(fd); }
  int ftruncate(int fd, off_t len) override { return ::ftruncate(fd, len); }
  // Linux closes the descriptor even when close() reports EINTR: never retry.
  int close(int fd) override { return ::close(fd); }
  int rename(const char* from, const char* to) override { return ::rename(from, to); }
  int mkdir(const char* path, mode_t mode) override { return ::mkdir(path, mode); }
  int unlink(const char* path) override { return ::unlink(path); }
  int stat(const char* path, struct stat* st) override { return ::stat(path, st); }
};

}  // namespace

int Io::random_bytes(void* buf, size_t n) {
  auto* p = static_cast<unsigned char*>(buf);
  size_t off = 0;
  while (off < n) {
    // getrandom() never blocks once the pool is initialized (early boot aside),
    // and needs no file descriptor (so it works under a descriptor limit).
    ssize_t got = ::getrandom(p + off, n - off, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    off += static_cast<size_t>(got);
  }
  return 0;
}

Io& posix_io() {
  // Never destroyed, so it stays usable from exit hooks after static
  // destructors ran; built in static storage (not the heap) so that nothing
  // is left behind when the library is dlclosed.
  alignas(PosixIo) static unsigned char storage[sizeof(PosixIo)];
  static PosixIo* io = new (storage) PosixIo();
  return *io;
}

int write_all(Io& io, int fd, const void* buf, size_t n, size_t* done) {
  const char* p = static_cast<const char*>(buf);
  size_t off = 0;
  int err = 0;
  while (off < n) {
    ssize_t w = io.write(fd, p + off, n - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      err = errno != 0 ? errno : EIO;
      break;
    }
    if (w == 0) {  // no progress and no error: treat as an I/O error rather than spin
      err = EIO;
      break;
    }
    off += static_cast<size_t>(w);
  }
  if (done != nullptr) *done = off;
  return err;
}

int mkdir_p(Io& io, const std::string& dir) {
  if (dir.empty()) return 0;
  std::string path;
  path.reserve(dir.size());
  size_t i = 0;
  while (i <= dir.size()) {
    size_t slash = dir.find('/', i);
    if (slash == std::string::npos) slash = dir.size();
    path.assign(dir, 0, slash);
    i = slash + 1;
    if (path.empty() || path == "." || path == "..") continue;
    if (slash < dir.size() && dir[slash - 1] == '/') continue;  // "a//b"
    if (io.mkdir(path.c_str(), 0777) != 0) {
      int e = errno;
      if (e == EEXIST) {
        struct stat st {};
        if (io.stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
        return ENOTDIR;
      }
      // A parent we may not create but that exists (e.g. EACCES on "/"):
      // keep going; the final component decides.
      struct stat st {};
      if (io.stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      return e;
    }
  }
  return 0;
}

std::string errno_text(int err) {
  char buf[256];
  buf[0] = '\0';
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* s = strerror_r(err, buf, sizeof buf);
  return s != nullptr ? std::string(s) : std::string("errno ") + std::to_string(err);
}

int64_t wall_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace ni::out
