// Fuzz target: the analyzer's log reader (gzip stream + line parser) on
// arbitrary bytes, once as a plugin log (.jsonl.gz name) and once as an
// upstream log (.log name). Damage must be counted, never crash or hang.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "src/analysis/reader.h"

namespace ana = ni::analysis;

namespace {
std::string scratch(const char* suffix) {
  static const std::string base = "/tmp/ni-reader-fuzz-" + std::to_string(getpid());
  return base + suffix;
}

void read_as(const uint8_t* data, size_t size, const char* suffix) {
  const std::string path = scratch(suffix);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  ana::ReadOptions o;
  o.progress = 0;
  o.validate = (size & 1) != 0;
  ana::CollectSink sink(true);
  ana::ReadResult r = ana::read_logs({path}, o, {&sink});
  // Invariant: every op handed to the sink was counted.
  if (r.ops != sink.ops.size()) __builtin_trap();
  std::remove(path.c_str());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read_as(data, size, ".jsonl.gz");
  read_as(data, size, ".log");
  return 0;
}
