// `hangs`: after a job hung (and was killed), which rank never joined which
// collective. Read from what the plugin left on disk: each comm rank's
// progress lines (what it started, its ops in flight for NCCL_INSPECTOR_HANG_MS
// with their channels and network steps), its completed records (each
// collective's place in the comm's issue order), comm_end and the time its
// log stops (alive lines while it waits).
//
// Per communicator that some rank did not finalize: the first collective (by
// issue order) that some rank is stuck in or that the ranks disagree on having
// started. Then, in this order of precedence:
//   missing_ranks     some ranks never started it: they are named, and told
//                     apart by whether their log went on (alive, waiting
//                     elsewhere) or stopped before the hang (the process died);
//   desync            every rank started it, not all the same op (function,
//                     size or root): the minority, with both sides;
//   stuck_collective  every rank is in it and none completed: the ranks whose
//                     kernel never started, or the receive that never got its
//                     data (that peer or link), or the channel that never
//                     ended everywhere; or no rank stands out.
// P2P ops stuck with no collective pending give stuck_p2p, with the peer.
// docs/analysis.md has the user's view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/analysis/analysis.h"
#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

inline constexpr int kExitHang = 4;  // the CLI's exit code when a hang is found

struct HangRank {
  int rank = -1;
  std::uint32_t file = UINT32_MAX;  // its process's log; UINT32_MAX: none
  // missing | died | exited | waiting | desync | completed | finalized | no_log
  std::string state;
  std::int64_t started = -1;     // collectives it started on the comm (-1 unknown)
  std::int64_t done_issue = -1;  // the highest issue it completed
  std::int64_t log_end_ns = 0;   // the last time its process's log gives
  std::string op;                // its op at the hang's issue ("" none)
  std::string progress;          // how far that op got (channels, network)
  std::string note;
};

struct HangFinding {
  std::uint64_t comm = 0;
  std::string comm_name;
  int nranks = 0;
  std::string kind;      // missing_ranks | desync | stuck_collective | stuck_p2p
  std::string func;      // the op the others issued there
  std::uint64_t seq = 0;
  bool has_seq = false;
  std::int64_t issue = -1;
  std::vector<int> culprits;  // comm ranks
  int peer = -1;              // stuck_collective on a link / stuck_p2p: the other end
  std::int64_t since_ns = 0;  // when the first rank got stuck (wall); 0 unknown
  std::string verdict;        // one sentence, culprit first
  std::vector<std::string> evidence;
  std::vector<HangRank> ranks;
};

struct HangResult {
  std::vector<HangFinding> findings;  // the earliest hang first
  std::size_t comms = 0;              // communicators seen
  std::size_t comms_finalized = 0;    // finalized by every rank that logged them
  std::size_t files_with_progress = 0, files = 0;
  std::vector<std::string> notes;
};

HangResult find_hangs(const ReadResult& res);
// The hangs sections (verdicts, then each hung comm's ranks side by side).
void add_hang_sections(Report& r, const HangResult& h, const ReadResult& res);
std::vector<Marker> hang_markers(const HangResult& h);

}  // namespace ni::analysis
