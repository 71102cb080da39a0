// Registers the in-memory sink as the runtime's Sink (runtime.h) in every
// program that links this object (target ni_memory_sink).
#include "src/output/memory_sink.h"

namespace ni::out {
namespace {
std::unique_ptr<Sink> make_memory_sink() { return std::make_unique<MemorySink>(); }
[[maybe_unused]] const bool g_registered = (set_sink_factory(make_memory_sink), true);
}  // namespace
}  // namespace ni::out
