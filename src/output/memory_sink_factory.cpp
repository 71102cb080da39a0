// make_sink() for builds that link the in-memory sink.
#include "src/output/memory_sink.h"

namespace ni {
std::unique_ptr<Sink> make_sink() { return std::make_unique<MemorySink>(); }
}  // namespace ni
