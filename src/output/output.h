// One output format of the dump thread (DumpSink): what a format is told, and
// the table of formats.
//
// Each cycle the DumpSink tells every configured output, in this order:
//   comm()      a comm appeared, or what is known of it changed (ABI v1-v3
//               learn the hash from the first op): announce it (again);
//   record()    each drained record, with its comm and, to outputs that
//               wants_clock(), the comm's GPU clock estimate of this cycle;
//   comm_end()  a comm was finalized (after its last records);
//   clock()     a comm's GPU clock estimate moved (wants_clock() outputs only);
//   progress()  a comm's issue state / long in-flight ops changed (hangs);
//   alive()     nothing else was written for HANG_MS;
//   end_cycle() write the counters if this output's stats period ran out,
//               flush, and on the final cycle close.
// Outputs end their cycle in the order of formats(): one listed later sees
// the counts of an earlier one's flush in its StatsSnapshot.
//
// Accounting: the first output that keeps_records() decides the fate of every
// record (records_written / dropped.write_error): records it holds are
// pending() until end_cycle() says how many were written or lost. With no
// such output a record counts as written once every output has consumed it.
//
// Contract: everything runs on the dump thread; outputs are single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "src/core/config.h"
#include "src/core/record.h"
#include "src/core/runtime.h"
#include "src/output/encoder.h"
#include "src/output/gzip_log.h"
#include "src/output/io.h"

namespace ni::out {

// What an output sees of its surroundings. The DumpSink owns every referenced
// object and outlives its outputs.
struct OutputEnv {
  const Config& cfg;
  const MetaInfo& meta;  // the sink's: abi_version fills in with the first comm
  ClockAnchor anchor;    // CLOCK_REALTIME <-> the core's clock
  std::string stamp;     // start time, UTC "YYYYmmddTHHMMSSZ" (file names)
  Io& io;
  Logger log;
  uint64_t retry_ns;                       // retry pacing while writes fail
  std::function<uint64_t()> now_mono_ns;   // the core's clock, now
};

// The end of a cycle, as one output sees it.
struct CycleEnd {
  uint64_t now_ns = 0;     // the core's clock at the cycle's start
  int64_t wall_ns = 0;     // the same instant on the wall clock
  bool final = false;      // stop(): the last cycle; close what is open
  bool forced = false;     // dump-now: make everything durable now
  bool stats_due = false;  // this output's stats period ran out (always when final or forced)
  StatsSnapshot stats;     // when stats_due: the counters now, records still pending counted as written
};

// What a flush did with the records an output held.
struct Flushed {
  uint64_t written = 0;
  uint64_t lost = 0;
};

class Output {
 public:
  virtual ~Output() = default;

  // How often it wants the counters (CycleEnd::stats_due).
  virtual uint64_t stats_period_ns() const = 0;
  // It holds records until end_cycle() writes them (see Accounting above).
  virtual bool keeps_records() const { return false; }
  // record() needs the comm's clock estimate for GPU-timed ops, and clock()
  // is wanted.
  virtual bool wants_clock() const { return false; }

  virtual void comm(const CommInfo& c, int64_t wall_ns) = 0;
  // comm: null for marks and for comms the core does not know. clk: the
  // comm's estimate of this cycle for GPU-timed ops (may be invalid), else null.
  virtual void record(const OpRecord& r, const CommInfo* comm, const ClockEstimate* clk) = 0;
  virtual void comm_end(const CommInfo& c, int64_t wall_ns) = 0;
  virtual void clock(const ClockEstimate& /*e*/, const CommInfo& /*c*/, int64_t /*wall_ns*/) {}
  // A comm's progress (hangs; see DumpSink::report_progress()).
  virtual void progress(const CommProgress& /*p*/, const CommInfo& /*c*/, uint64_t /*now_mono_ns*/) {}
  // Nothing else was written for HANG_MS: the process is alive.
  virtual void alive(int64_t /*wall_ns*/) {}
  virtual Flushed end_cycle(const CycleEnd& c) = 0;

  // Records held, neither written nor lost yet.
  virtual uint64_t pending() const { return 0; }
  // The cycle failed (out of memory): drop what is buffered and not yet
  // handed to the file; returns how many records that was.
  virtual uint64_t discard() { return 0; }
  // The file it writes (current or last; "" if none yet).
  virtual std::string path() const = 0;
};

// A format: the Config flag that turns it on, and how to make it.
struct Format {
  std::string_view name;
  bool Config::*enabled;
  std::unique_ptr<Output> (*make)(const OutputEnv& env);
};

// Every format, in cycle-end order (formats.cpp).
std::span<const Format> formats();

inline constexpr std::string_view kLogFormat = "log";
inline constexpr std::string_view kPromFormat = "prometheus";

}  // namespace ni::out
