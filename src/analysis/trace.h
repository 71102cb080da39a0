// `trace`: a Chrome Trace Event Format file (object form) of every rank on the
// aligned wall clock, for Perfetto (ui.perfetto.dev), speedscope and Chrome
// DevTools. Layout:
//  * pid 0 "findings": the markers of every registered analysis that runs on ops
//    (analysis.h: stragglers, change points, outliers, bimodality, channel/HCA
//    imbalance, ...) as instants on a track per kind, time windows as slices;
//  * one process per GPU (pid 1..N, see view.h for how a GPU is identified),
//    named "host · rank r · pid p", with
//      - tid 1 "markers": marks, drops, truncation, findings about this rank;
//        and the counters (network and per-HCA GB/s, binned);
//      - per communicator c (index in comm order): tid 10000*(c+1) the ops
//        (one X slice each), tid 10000*(c+1)+l for overflow lane l (an op
//        that partially overlaps the previous one on its lane), and
//        tid 10000*(c+1)+1000+10*ch+l the per-channel sub-tracks (ch_times);
//  * flows (s/f, bp "e") from the earliest rank of each collective instance
//    (comm, op, seq) to every other rank, and from each Send to its Recv.
// The file is written as it is produced (one op at a time, gzip when the name
// ends in .gz); memory is the ops (ViewSink), not the trace.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "src/analysis/analysis.h"
#include "src/analysis/view.h"

namespace ni::analysis {

struct ClockCalibration;  // stragglers.h
struct TraceGlobals;      // below

struct TraceOptions {
  std::string from, to;            // seconds from the first op ("12.5") or ISO 8601 UTC ("2025-01-01T00:00:12.5Z")
  std::vector<std::string> comms;  // comm names or hashes
  std::vector<int> ranks;          // displayed ranks (the process names' "rank r")
  std::vector<std::string> ops;    // NCCL function names (case-insensitive)
  std::uint64_t sample = 1;        // keep instances with seq % sample == 0
  std::uint64_t max_ops = 250000;  // above: sample more (0: no limit)
  std::uint64_t channel_ops_max = 50000;  // per-channel sub-tracks only up to this many ops (0: never)
  bool flows = true;
  bool counters = true;
  bool findings = true;            // run the registered analyses (their default options) for markers
  // The clock calibration already applied to the ops (the metadata says what
  // was shifted); nullptr: times as logged.
  const ClockCalibration* calibration = nullptr;
  std::map<std::uint64_t, std::string> tag_map;  // --tag-map: user tag names over the logs' tag records
  // The bounded read (trace_bounded.h): the data holds only the ops to show,
  // and this says what every op gave. nullptr: the data holds every op.
  const TraceGlobals* given = nullptr;
};

// The sampling a trace uses: `requested` (TraceOptions::sample), multiplied so that the `kept` ops it keeps of the
// selection come to about max_ops (0: no limit). The in-memory trace and the bounded one apply the same rule.
inline std::uint64_t trace_sample(std::uint64_t requested, std::uint64_t kept, std::uint64_t max_ops) {
  const std::uint64_t n = requested > 1 ? requested : 1;
  return max_ops && kept > max_ops ? n * ((kept + max_ops - 1) / max_ops) : n;
}

// What a trace shows of the ops (--comm, --op, --rank, --from/--to), built
// from the options, the GPU map and the first op's time (t0).
class TraceFilter {
 public:
  // false + error on a --comm or --op that names nothing, a bad time or an empty window.
  bool init(const TraceOptions& o, const GpuMap& gm, const ReadResult& res, std::int64_t t0, std::string& error);
  // op (its start as placed, after the clock calibration); rank: its GPU's displayed rank.
  bool passes(const Op& op, int rank) const;
  bool comm_shown(std::uint64_t comm) const { return comms_.empty() || comms_.count(comm) != 0; }
  bool in_window(std::int64_t t) const { return t >= from_ && t <= to_; }
  std::int64_t from() const { return from_; }
  std::int64_t to() const { return to_; }

 private:
  std::int64_t from_ = std::numeric_limits<std::int64_t>::min(), to_ = std::numeric_limits<std::int64_t>::max();
  std::set<std::uint64_t> comms_;
  std::set<Func> funcs_;
  std::set<int> ranks_;
};

// An op's end on the trace: its start plus its duration (none when it has no
// finite positive one).
std::int64_t trace_end_ns(std::int64_t start, double dur_us);

// What every op gave, for a trace whose data holds only the ops it shows (the
// bounded read, trace_bounded.cpp), so that the trace is the one the ops in
// memory give: the counts, t0, the sampling chosen, the GPUs of every op's
// (file, comm, rank) with its latest end, whether channel times and tags were
// there, and the detectors' markers.
struct TraceGlobals {
  struct Key {
    std::uint32_t file = 0;
    std::uint64_t comm = 0;
    std::int32_t rank = 0;
    auto operator<=>(const Key&) const = default;
  };
  struct KeyInfo {
    std::uint32_t gpu = 0;  // index into gm.gpus
    std::int64_t last_end = std::numeric_limits<std::int64_t>::min();  // of its ops with a start, calibrated
    bool any_start = false;
  };
  std::uint64_t ops_input = 0, ops_no_start = 0;
  std::uint64_t ops_selected = 0;  // passing the filters, before sampling
  std::uint64_t sample = 1;        // the sampling chosen (TraceStats::sample)
  std::int64_t t0 = std::numeric_limits<std::int64_t>::max();
  GpuMap gm;  // of every op's (file, comm, rank); op_gpu unused
  std::map<Key, KeyInfo> keys;
  bool ch_any = false, ch_capped = false, tagged = false;
  std::vector<Marker> markers;
  // gm with op_gpu for these ops (each of a key in keys).
  GpuMap gpus_of(const std::vector<Op>& ops) const;
};

struct TraceStats {
  std::uint64_t ops_input = 0;      // ops read
  std::uint64_t ops_selected = 0;   // after filters, before sampling
  std::uint64_t ops_written = 0;    // X slices of ops
  std::uint64_t ops_no_start = 0;   // ops without start_wall_ns (not placeable)
  std::uint64_t sample = 1;         // sampling used (>= the requested one)
  bool channel_tracks = false;
  std::string channel_note;         // why there are no channel sub-tracks
  std::uint64_t channel_slices = 0, flows = 0, instants = 0, counters = 0, metadata = 0;
  std::uint64_t overflow_ops = 0;   // ops put on an overflow lane
  std::uint64_t lane_dropped = 0;   // slices dropped: more than the lanes a track may have
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;          // uncompressed JSON bytes
  std::size_t processes = 0, threads = 0;
};

// Parses --from/--to: seconds ("12.5", relative to t0_ns) or ISO 8601 UTC.
// Returns false (with error) when neither.
bool parse_time_arg(const std::string& s, std::int64_t t0_ns, std::int64_t& out_ns, std::string& error);

// Writes the trace to out (already gzip-wrapped by the caller if wanted).
TraceStats write_trace(const ViewSink& data, const ReadResult& res, const TraceOptions& o, std::ostream& out,
                       std::string& error);

// Opens `path` (gzip when it ends in ".gz") and writes the trace. false + error on failure.
bool write_trace_file(const ViewSink& data, const ReadResult& res, const TraceOptions& o, const std::string& path,
                      TraceStats& stats, std::string& error);

}  // namespace ni::analysis
