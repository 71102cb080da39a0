#include "src/output/safe_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <mutex>
#include <new>

#include "src/core/fork.h"

namespace ni::out {
namespace {

// How many names create_temp() tries before giving up: each collision needs
// someone to have planted a file at a 64-bit random name, so more than one
// means scripted randomness (tests) or an attack; either way, stop soon.
constexpr int kTempAttempts = 16;

// 64 bits for a temporary name. Without kernel randomness (getrandom missing
// or failing), a mix of clock, pid and a counter: guessable, but O_EXCL still
// refuses any planted file, so a guess costs one retry, never a clobber.
uint64_t name_bits(Io& io) {
  uint64_t v = 0;
  if (io.random_bytes(&v, sizeof v) == 0) return v;
  static uint64_t counter = 0;  // dump thread only (Io contract): no atomic needed
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  v = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 30) ^
      (static_cast<uint64_t>(getpid()) << 40) ^ (++counter * 0x9E3779B97F4A7C15ull);
  return v;
}

std::string hex16(uint64_t v) {
  static const char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<size_t>(i)] = kHex[v & 0xF];
  return s;
}

}  // namespace

int create_temp(Io& io, const std::string& stem, mode_t mode, std::string* path) {
  int err = EEXIST;
  for (int attempt = 0; attempt < kTempAttempts; ++attempt) {
    std::string p = stem + "." + hex16(name_bits(io)) + ".tmp";
    int fd = io.open(p.c_str(), kCreateFlags, mode);
    if (fd >= 0) {
      *path = std::move(p);
      return fd;
    }
    err = errno;
    // EEXIST: a file (or symlink) is there already; ELOOP: O_NOFOLLOW met a
    // symlink. Neither is ours: leave it alone and draw another name.
    if (err != EEXIST && err != ELOOP) break;
  }
  errno = err;
  return -1;
}

std::string unsafe_dir_reason(Io& io, const std::string& dir) {
  struct stat st {};
  if (io.stat(dir.empty() ? "." : dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "";
  const uid_t me = geteuid();
  // Root may replace anything anyway; another ordinary user may not.
  if (st.st_uid != me && st.st_uid != 0)
    return "it is owned by uid " + std::to_string(st.st_uid) + ", not by this process's user (uid " +
           std::to_string(me) + ") or root, who can replace the files written there";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("it is ") + ((st.st_mode & S_IWOTH) != 0 ? "world" : "group") +
           "-writable without the sticky bit (mode " + mode +
           "), so other users can delete or replace the files written there";
  }
  return "";
}

namespace {
// The directories checked so far, as 64-bit FNV-1a hashes in static storage:
// no heap memory that would outlive a dlclose of the plugin (which unmaps the
// pointer to it), and nothing to destroy at exit (std::mutex is trivially
// destructible here; the final cycle may run from an exit hook). Past kMaxDirs
// directories a new one is checked (and may warn) every time.
constexpr int kMaxDirs = 32;
constinit std::mutex g_dirs_mu;
constinit uint64_t g_dirs_seen[kMaxDirs] = {};
constinit int g_n_dirs = 0;  // under g_dirs_mu

// fork (src/core/fork.h): a leaf lock, held across the fork so that the
// child's first file does not wait for a dump thread it does not have.
const bool g_dirs_in_fork = core::join_fork({core::kForkOrderLeaf, []() noexcept { g_dirs_mu.lock(); },
                                              []() noexcept { g_dirs_mu.unlock(); },
                                              []() noexcept { g_dirs_mu.unlock(); }});
}  // namespace

void warn_if_unsafe_dir(Io& io, const std::string& dir, const std::function<void(const std::string&)>& warn) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : dir) h = (h ^ ch) * 1099511628211ull;
  {
    std::lock_guard<std::mutex> lk(g_dirs_mu);
    for (int i = 0; i < g_n_dirs; ++i)
      if (g_dirs_seen[i] == h) return;  // checked before: once per directory per process
    if (g_n_dirs < kMaxDirs) g_dirs_seen[g_n_dirs++] = h;
  }
  std::string why = unsafe_dir_reason(io, dir);
  if (why.empty()) return;
  warn("NCCL Inspector: the output directory " + (dir.empty() ? std::string(".") : dir) + " is unsafe: " + why +
       ". Use a directory only this user can write (see docs/deployment.md, Security).");
}

}  // namespace ni::out
