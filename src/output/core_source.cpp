// The production RecordSource (forwards to the capture core, src/core/runtime.h)
// and the registration of the Sink the plugin's runtime creates (a DumpSink
// over it). Only the plugin links this file (target ni_output_core); tests use
// a fake source.
#include <memory>

#include "src/output/dump_sink.h"
#include "src/output/source.h"

namespace ni::out {
namespace {

class CoreSource final : public RecordSource {
 public:
  size_t drain(const std::function<void(const OpRecord*, size_t)>& fn, bool final) override {
    return ni::drain_records(fn, final);
  }
  size_t reclaim(uint64_t now_mono_ns) override { return ni::reclaim_stale_ops(now_mono_ns); }
  CoreStats stats() override { return ni::stats(); }
  std::vector<CommInfo> comms() override { return ni::comms(); }
  ClockEstimate clock(uint32_t comm_id) override { return ni::clock_estimate(comm_id); }
  uint64_t now_mono_ns() override { return ni::mono_now_ns(); }
  void refine_clock() override { ni::refine_clock(); }
  std::vector<CommProgress> progress(uint64_t min_age_ns) override { return ni::progress_snapshot(min_age_ns); }
  void log(ni::abi::LogLevel level, const std::string& msg) override { ni::log(level, "%s", msg.c_str()); }
};

}  // namespace

std::unique_ptr<RecordSource> make_core_source() { return std::make_unique<CoreSource>(); }

}  // namespace ni::out

namespace ni::out {
namespace {
std::unique_ptr<Sink> make_dump_sink() { return std::make_unique<DumpSink>(make_core_source()); }
// The core's runtime makes its Sink through this factory (runtime.h); linking
// this object in is what gives the plugin its output.
[[maybe_unused]] const bool g_registered = (set_sink_factory(make_dump_sink), true);
}  // namespace
}  // namespace ni::out
