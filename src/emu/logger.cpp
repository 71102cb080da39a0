// NCCL's logger stand-in, passed to v4+ inits: prints "host:pid:tid [dev] NCCL
// INFO ..." like NCCL, honouring NCCL_DEBUG (default INFO here, so plugin
// lines show in demos) and NCCL_DEBUG_SUBSYS (default all; "^X" excludes).
#include <unistd.h>
#include <sys/syscall.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "src/emu/emu.h"

namespace ni::emu {

namespace {

using namespace ni::abi;

struct LogConfig {
  int level = kLogInfo;
  unsigned long mask = kSubsysAll;
  char host[64] = {};
};

unsigned long subsys_bit(const std::string& s) {
  static const struct {
    const char* n;
    unsigned long b;
  } t[] = {{"INIT", 0x1},    {"COLL", 0x2},       {"P2P", 0x4},        {"SHM", 0x8},      {"NET", 0x10},
           {"GRAPH", 0x20},  {"TUNING", 0x40},    {"ENV", 0x80},       {"ALLOC", 0x100},  {"CALL", 0x200},
           {"PROXY", 0x400}, {"NVLS", 0x800},     {"BOOTSTRAP", 0x1000}, {"REG", 0x2000}, {"PROFILE", 0x4000},
           {"RAS", 0x8000},  {"DESTROY", 0x10000}, {"ALL", ~0ul}};
  for (const auto& e : t)
    if (strcasecmp(s.c_str(), e.n) == 0) return e.b;
  return 0;
}

const LogConfig& config() {
  static const LogConfig c = [] {
    LogConfig x;
    if (const char* d = std::getenv("NCCL_DEBUG")) {
      if (strcasecmp(d, "VERSION") == 0) x.level = kLogVersion;
      else if (strcasecmp(d, "WARN") == 0) x.level = kLogWarn;
      else if (strcasecmp(d, "INFO") == 0) x.level = kLogInfo;
      else if (strcasecmp(d, "TRACE") == 0) x.level = kLogTrace;
      else if (strcasecmp(d, "NONE") == 0) x.level = kLogNone;
    }
    if (const char* s = std::getenv("NCCL_DEBUG_SUBSYS")) {
      std::string v = s;
      const bool invert = !v.empty() && v[0] == '^';
      if (invert) v.erase(0, 1);
      unsigned long m = 0;
      size_t pos = 0;
      while (pos <= v.size()) {
        const size_t comma = v.find(',', pos);
        m |= subsys_bit(v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
      x.mask = invert ? ~m : m;
    }
    gethostname(x.host, sizeof x.host - 1);
    return x;
  }();
  return c;
}

void nccl_log(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  const LogConfig& c = config();
  if (level > c.level || level == kLogNone) return;
  if (level >= kLogInfo && !(flags & c.mask)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char* lv = level == kLogWarn ? "WARN" : level == kLogTrace ? "TRACE" : level == kLogVersion ? "VERSION" : "INFO";
  char out[1400];
  const long tid = syscall(SYS_gettid);
  if (level == kLogTrace)
    std::snprintf(out, sizeof out, "%s:%d:%ld [0] NCCL %s %s:%d %s\n", c.host, getpid(), tid, lv, file ? file : "?",
                  line, msg);
  else
    std::snprintf(out, sizeof out, "%s:%d:%ld [0] NCCL %s %s\n", c.host, getpid(), tid, lv, msg);
  std::fputs(out, stdout);  // one call per line: stdio locks the stream, lines never interleave
  std::fflush(stdout);
}

}  // namespace

ni::abi::DebugLogger nccl_logger() { return &nccl_log; }

}  // namespace ni::emu
