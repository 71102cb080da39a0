#include "src/output/gzip_log.h"

#include <fcntl.h>
#include <libdeflate.h>

#include <cerrno>

#include "src/output/safe_file.h"

namespace ni::out {

GzipLog::GzipLog(Io& io, LogFileOptions opts, Logger log, HeaderFn header)
    : io_(io), opts_(std::move(opts)), log_(std::move(log)), header_(std::move(header)) {
  int level = opts_.level < 0 ? 0 : opts_.level > 12 ? 12 : opts_.level;
  compressor_ = libdeflate_alloc_compressor(level);
  if (compressor_ == nullptr) throw std::bad_alloc();
}

GzipLog::~GzipLog() {
  close(false);
  libdeflate_free_compressor(compressor_);
}

std::string GzipLog::path_for(uint32_t seq) const {
  std::string p = opts_.dir;
  if (!p.empty() && p.back() != '/') p.push_back('/');
  p += opts_.base;
  if (seq != 0) {
    p.push_back('.');
    p += std::to_string(seq);
  }
  p += ".jsonl.gz";
  return p;
}

void GzipLog::compress_into(Buf& out, const char* text, size_t n) {
  size_t bound = libdeflate_gzip_compress_bound(compressor_, n);
  char* dst = out.room(bound);
  size_t got = libdeflate_gzip_compress(compressor_, text, n, dst, bound);
  // got == 0 cannot happen with a bound-sized buffer; guard anyway.
  out.advance(got);
}

void GzipLog::add_member(const char* text, size_t n) {
  if (n == 0) return;
  compress_into(pending_, text, n);
}

void GzipLog::fail(int err, const char* what, const std::string& path, uint64_t now_ns) {
  retry_at_ns_ = now_ns + opts_.retry_ns;
  if (failing_) return;  // one warning per failure episode, never one per record
  failing_ = true;
  log_(ni::abi::kLogWarn, "NCCL Inspector: cannot " + std::string(what) + " " + path + ": " + errno_text(err) +
                               ". Log records are counted as dropped (write_error) until writing works again; "
                               "retrying at most every " +
                               std::to_string(opts_.retry_ns / 1000000) + " ms.");
}

bool GzipLog::open_next(uint64_t now_ns) {
  if (bump_seq_) {  // the previous file was used: the next one gets the next number
    ++seq_;
    bump_seq_ = false;
  }
  bool made_dir = false;
  for (int attempt = 0; attempt < 10000; ++attempt) {
    std::string p = path_for(seq_);
    // O_EXCL: a file or symlink already at the name is never opened, followed
    // or truncated (safe_file.h); O_APPEND: see flush()'s rollback.
    int fd = io_.open(p.c_str(), kCreateFlags | O_APPEND, 0666);
    if (fd < 0) {
      int e = errno;
      if (e == EEXIST || e == ELOOP) {  // never truncate someone's (or our earlier) file
        ++seq_;
        continue;
      }
      if (e == ENOENT && !made_dir) {
        made_dir = true;
        int me = mkdir_p(io_, opts_.dir);
        if (me == 0) continue;
        fail(me, "create directory", opts_.dir, now_ns);
        return false;
      }
      fail(e, "create", p, now_ns);
      return false;
    }
    bump_seq_ = true;
    // The header (meta + live comms) goes first, as its own member.
    scratch_.clear();
    Buf text;
    header_(text, seq_);
    compress_into(scratch_, text.data(), text.size());
    size_t done = 0;
    int we = write_all(io_, fd, scratch_.data(), scratch_.size(), &done);
    if (we != 0) {
      io_.close(fd);
      io_.unlink(p.c_str());  // ours, just created: leave no torn header behind
      fail(we, "write", p, now_ns);
      return false;
    }
    fd_ = fd;
    path_ = p;
    if (files_opened_ == 0)
      warn_if_unsafe_dir(io_, opts_.dir, [this](const std::string& w) { log_(ni::abi::kLogWarn, w); });
    file_bytes_ = header_bytes_ = scratch_.size();
    ++files_opened_;
    return true;
  }
  fail(EEXIST, "create", path_for(seq_), now_ns);
  return false;
}

bool GzipLog::flush(uint64_t now_ns, bool force) {
  if (pending_.empty()) return true;
  if (failing_ && now_ns < retry_at_ns_ && !force) {
    pending_.clear();
    return false;
  }
  if (fd_ >= 0 && opts_.rotate_bytes != 0 && file_bytes_ > header_bytes_ &&
      file_bytes_ + pending_.size() > opts_.rotate_bytes) {
    close(false);
  }
  if (fd_ < 0 && !open_next(now_ns)) {
    pending_.clear();
    return false;
  }
  size_t done = 0;
  int err = write_all(io_, fd_, pending_.data(), pending_.size(), &done);
  pending_.clear();
  if (err != 0) {
    // Roll back a partial member so the members after it stay readable
    // (O_APPEND: the next write lands at the new end, leaving no hole).
    if (done != 0 && io_.ftruncate(fd_, static_cast<off_t>(file_bytes_)) != 0) {
      io_.close(fd_);  // cannot repair: abandon this file, the next flush opens the next one
      fd_ = -1;
    }
    fail(err, "write", path_, now_ns);
    return false;
  }
  file_bytes_ += done;
  if (failing_) {
    failing_ = false;
    log_(ni::abi::kLogWarn, "NCCL Inspector: writing " + path_ + " works again.");
  }
  return true;
}

int GzipLog::sync() {
  if (fd_ < 0) return 0;
  return io_.fsync(fd_) == 0 ? 0 : errno;
}

void GzipLog::close(bool do_sync) {
  if (fd_ < 0) return;
  if (do_sync && io_.fsync(fd_) != 0) {
    int e = errno;
    if (e != EINVAL && e != EROFS)  // fsync unsupported is not a loss
      log_(ni::abi::kLogWarn, "NCCL Inspector: fsync " + path_ + ": " + errno_text(e));
  }
  if (io_.close(fd_) != 0) {
    int e = errno;
    if (e != EINTR)  // Linux: the descriptor is closed and the data are in the page cache
      log_(ni::abi::kLogWarn, "NCCL Inspector: close " + path_ + ": " + errno_text(e) +
                                   " (the end of this file may be missing)");
  }
  fd_ = -1;
}

}  // namespace ni::out
