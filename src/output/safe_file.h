// Creating files in directories other users may write (shared dump and
// Prometheus directories), where the plugin often runs as root:
//
//  - a temporary file is always a fresh one: O_CREAT|O_EXCL|O_NOFOLLOW under a
//    name with 64 random bits, so a planted symlink or file at any name (the
//    old predictable one, or a guessed one) is never opened, followed or
//    truncated; the caller renames it over the final name (rename() replaces
//    a symlink there, never writes through it);
//  - a directory owned by another user, or group/world writable without the
//    sticky bit, lets others swap files under us: warned about once per
//    directory per process.
//
// The threat model is docs/deployment.md, "Security".
#pragma once

#include <fcntl.h>

#include <functional>
#include <string>

#include "src/output/io.h"

namespace ni::out {

// The flags of every file the plugin creates: never through a symlink, never
// an existing file.
inline constexpr int kCreateFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;

// Creates "<stem>.<16 random hex digits>.tmp" with kCreateFlags and `mode`
// (the umask applies), retrying with new random names while one exists.
// Returns the descriptor and sets *path, or -1 with errno (ENOENT: the
// directory is missing).
int create_temp(Io& io, const std::string& stem, mode_t mode, std::string* path);

// Why `dir` is unsafe to create files in ("" when it is not, or cannot be
// stat'ed): owned by a user other than ours or root, or group/world writable
// without the sticky bit.
std::string unsafe_dir_reason(Io& io, const std::string& dir);

// Calls warn once per directory per process (thread-safe) when
// unsafe_dir_reason() finds a reason; the text names the directory and why.
void warn_if_unsafe_dir(Io& io, const std::string& dir, const std::function<void(const std::string&)>& warn);

}  // namespace ni::out
