// An Io that injects failures in front of the real system calls (tests of the
// I/O seam: EINTR, short writes, ENOSPC, EIO, failing open/close/rename/ftruncate).
// Thread-safe: the test thread changes the script while the dump thread writes.
#pragma once

#include <cerrno>
#include <cstring>
#include <mutex>

#include "src/output/io.h"

namespace ni::out::testing {

class FaultIo final : public Io {
 public:
  struct Script {
    int eintr_writes = 0;          // the next N writes return EINTR
    size_t short_write_max = 0;    // cap on bytes per write (0: none)
    int write_errno = 0;           // every write fails with this (after fail_after_bytes)
    size_t fail_after_bytes = 0;   // with write_errno: bytes accepted first (a partial write)
    size_t fail_writes_over = 0;   // with write_errno: only writes of more bytes fail (a nearly full disk)
    int open_errno = 0;            // every open fails with this
    int close_errno = 0;           // close closes, then reports this
    int rename_errno = 0;
    int ftruncate_errno = 0;
    int mkdir_errno = 0;
    int zero_random = 0;           // the next N random_bytes() calls yield zeros (an attacker's lucky guess)
  };
  void set(const Script& s) {
    std::lock_guard<std::mutex> lk(mu_);
    s_ = s;
    accepted_ = 0;
  }
  size_t writes() {
    std::lock_guard<std::mutex> lk(mu_);
    return writes_;
  }
  size_t eintrs() {
    std::lock_guard<std::mutex> lk(mu_);
    return eintrs_seen_;
  }

  int open(const char* path, int flags, mode_t mode) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (s_.open_errno) {
        errno = s_.open_errno;
        return -1;
      }
    }
    return posix_io().open(path, flags, mode);
  }
  ssize_t write(int fd, const void* buf, size_t n) override {
    std::unique_lock<std::mutex> lk(mu_);
    ++writes_;
    if (s_.eintr_writes > 0) {
      --s_.eintr_writes;
      ++eintrs_seen_;
      errno = EINTR;
      return -1;
    }
    if (s_.write_errno && s_.fail_writes_over != 0) {
      if (n > s_.fail_writes_over) {
        errno = s_.write_errno;
        return -1;
      }
    } else if (s_.write_errno) {
      if (accepted_ >= s_.fail_after_bytes) {
        errno = s_.write_errno;
        return -1;
      }
      n = std::min(n, s_.fail_after_bytes - accepted_);
    }
    if (s_.short_write_max && n > s_.short_write_max) n = s_.short_write_max;
    lk.unlock();
    ssize_t w = posix_io().write(fd, buf, n);
    lk.lock();
    if (w > 0) accepted_ += static_cast<size_t>(w);
    return w;
  }
  int fsync(int fd) override { return posix_io().fsync(fd); }
  int ftruncate(int fd, off_t len) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (s_.ftruncate_errno) {
        errno = s_.ftruncate_errno;
        return -1;
      }
    }
    return posix_io().ftruncate(fd, len);
  }
  int close(int fd) override {
    int r = posix_io().close(fd);
    std::lock_guard<std::mutex> lk(mu_);
    if (s_.close_errno) {
      errno = s_.close_errno;
      return -1;
    }
    return r;
  }
  int rename(const char* a, const char* b) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (s_.rename_errno) {
        errno = s_.rename_errno;
        return -1;
      }
    }
    return posix_io().rename(a, b);
  }
  int mkdir(const char* p, mode_t m) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (s_.mkdir_errno) {
        errno = s_.mkdir_errno;
        return -1;
      }
    }
    return posix_io().mkdir(p, m);
  }
  int random_bytes(void* buf, size_t n) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (s_.zero_random > 0) {
        --s_.zero_random;
        std::memset(buf, 0, n);
        return 0;
      }
    }
    return posix_io().random_bytes(buf, n);
  }
  int unlink(const char* p) override { return posix_io().unlink(p); }
  int stat(const char* p, struct stat* st) override { return posix_io().stat(p, st); }

 private:
  std::mutex mu_;
  Script s_;
  size_t accepted_ = 0;
  size_t writes_ = 0;
  size_t eintrs_seen_ = 0;
};

}  // namespace ni::out::testing
