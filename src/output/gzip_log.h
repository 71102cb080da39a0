// The log file writer: gzip members (libdeflate) appended to
// <dir>/<base>[.<n>].jsonl.gz through the I/O seam.
//
// Crash safety: every flush writes complete gzip members, so a SIGKILLed
// process leaves a file that gunzips up to its last flush. A failed write is
// rolled back (ftruncate to the last good size) so later members stay
// readable; if that fails too, the file is abandoned and the next one opened.
//
// Files are created O_CREAT|O_EXCL with mode 0666 (the umask applies; never
// chmod'ed): an existing name (a reused pid, a restart in the same second)
// moves on to the next sequence number instead of truncating it. Every file
// starts with the header the owner supplies (meta + live comms). Rotation:
// when a batch would take the file past rotate_bytes, the next file is opened.
//
// Errors (unwritable dir, ENOSPC, EIO): one warning through the logger when
// writing starts failing, one when it works again; while failing, batches are
// discarded (the caller counts their records as dropped) and I/O is retried at
// most every retry_ns.
//
// Contract: single-threaded (the dump thread).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "include/nccl_inspector/nccl.h"
#include "src/output/buf.h"
#include "src/output/io.h"

struct libdeflate_compressor;

namespace ni::out {

using Logger = std::function<void(ni::abi::LogLevel, const std::string&)>;

struct LogFileOptions {
  std::string dir;              // created (mkdir -p) on first use
  std::string base;             // "<host>-pid<pid>-<start>"
  int level = 1;                // libdeflate level 0..12
  uint64_t rotate_bytes = 0;    // 0: never rotate
  uint64_t retry_ns = 1000000000;  // pacing of retries while failing
};

class GzipLog {
 public:
  using HeaderFn = std::function<void(Buf&, uint32_t file_seq)>;
  GzipLog(Io& io, LogFileOptions opts, Logger log, HeaderFn header);
  ~GzipLog();
  GzipLog(const GzipLog&) = delete;
  GzipLog& operator=(const GzipLog&) = delete;

  // Compresses text into one complete gzip member, queued for the next flush.
  void add_member(const char* text, size_t n);
  bool has_pending() const { return !pending_.empty(); }
  // Writes every queued member (one write). True when they reached the file;
  // false when they were discarded (failing, or the write failed).
  // force: try even while failing and before the retry time (a small
  // member that says what was lost may fit where a batch did not).
  bool flush(uint64_t now_ns, bool force = false);
  // fsync the current file (dump-now, stop). Returns 0 or errno.
  int sync();
  // Closes the current file (fsync first when sync). The next flush opens a new one.
  void close(bool sync);

  bool failing() const { return failing_; }
  const std::string& path() const { return path_; }  // current or last file
  uint32_t file_seq() const { return seq_; }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t files_opened() const { return files_opened_; }
  std::string path_for(uint32_t seq) const;

 private:
  bool open_next(uint64_t now_ns);
  void fail(int err, const char* what, const std::string& path, uint64_t now_ns);
  void compress_into(Buf& out, const char* text, size_t n);

  Io& io_;
  LogFileOptions opts_;
  Logger log_;
  HeaderFn header_;
  libdeflate_compressor* compressor_ = nullptr;
  Buf pending_;
  Buf scratch_;
  int fd_ = -1;
  uint32_t seq_ = 0;
  bool bump_seq_ = false;
  std::string path_;
  uint64_t file_bytes_ = 0;
  uint64_t header_bytes_ = 0;
  uint64_t files_opened_ = 0;
  bool failing_ = false;
  uint64_t retry_at_ns_ = 0;
};

}  // namespace ni::out
