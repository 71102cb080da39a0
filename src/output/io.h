// The I/O seam: every system call the output layer makes on files goes through
// an Io, so tests inject EINTR, short writes, ENOSPC, EIO and failing
// close/rename deterministically (tests/output/fault_io.h). Functions follow
// the POSIX conventions: -1 and errno on failure.
//
// Contract: an Io is used by one thread at a time (the dump thread); the
// default posix_io() is stateless and may be shared.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ni::out {

class Io {
 public:
  virtual ~Io() = default;
  virtual int open(const char* path, int flags, mode_t mode) = 0;
  virtual ssize_t write(int fd, const void* buf, size_t n) = 0;
  virtual int fsync(int fd) = 0;
  virtual int ftruncate(int fd, off_t len) = 0;
  virtual int close(int fd) = 0;
  virtual int rename(const char* from, const char* to) = 0;
  virtual int mkdir(const char* path, mode_t mode) = 0;
  virtual int unlink(const char* path) = 0;
  virtual int stat(const char* path, struct stat* st) = 0;
  // Fills buf with n unpredictable bytes (the names of temporary files, so
  // that no one can plant a file where we will create one). 0 or -1/errno.
  // Not pure: every Io gets the kernel's randomness unless a test scripts it.
  virtual int random_bytes(void* buf, size_t n);
};

// The real system calls.
Io& posix_io();

// CLOCK_REALTIME now, in ns (the wall clock of the records and files).
int64_t wall_now_ns();

// Writes all n bytes: retries EINTR, continues after short writes. Returns 0,
// or the errno of the failure (a write that returns 0 counts as EIO);
// *done gets the bytes written before it (may be partial).
int write_all(Io& io, int fd, const void* buf, size_t n, size_t* done);

// mkdir -p with mode 0777 (the umask applies; never chmod'ed wider).
// Returns 0 or errno.
int mkdir_p(Io& io, const std::string& dir);

// "<strerror(err)>" without the thread-safety problems of strerror().
std::string errno_text(int err);

}  // namespace ni::out
