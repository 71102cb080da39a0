// Where per-rank findings concentrate: on one host, or in one rack (a
// top-of-rack switch, a power or cooling domain). Racks come from a host map
// (`--host-map FILE`: "host rack" lines) or, without one, from the hostname
// (rack_from_hostname). A finding concentrates in a host or rack when
//  * at least 2 comm ranks are affected and at least 2 of them are there,
//  * at least 75 % of the affected ranks are there,
//  * it is not the whole job, and
//  * chance does not explain it: the hypergeometric probability that this
//    many of the affected ranks fall there, were they drawn at random from
//    the measured ones, is below 1 %.
// A rack is named only when its affected ranks span 2+ hosts (else the host
// says it). Ranks are counted per communicator ((comm, rank) pairs).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/table.h"

namespace ni::analysis {

struct HostMap {
  std::map<std::string, std::string> rack_of;  // host -> rack
  std::string path;
};

// Reads "host rack" lines (whitespace, ',', '=' or ':' between them; '#' starts a
// comment; blank lines skipped). On failure returns false and says why in err
// (the file, the line number, what is wrong).
bool load_host_map(const std::string& path, HostMap& m, std::string& err);

// The rack a hostname implies when no map is given: hostnames that carry two
// numbers (r12n03, rack12-node03, sc-a12-07.cluster) are read as rack then
// node, and the rack is the short name up to the end of its first number (r12,
// rack12, sc-a12). A hostname with fewer numbers (node017, localhost) implies
// none: "".
std::string rack_from_hostname(const std::string& host);

// Sets FileInfo::rack of every file (map first, then the hostname) and
// ReadResult::racks_from. Hosts missing from a given map get no rack.
void assign_racks(ReadResult& res, const HostMap* m);

struct Concentration {
  std::string level;   // "host" | "rack"
  std::string where;   // the host or rack
  int affected_here = 0, affected_total = 0;
  int measured_here = 0, measured_total = 0;
  std::vector<std::string> hosts;  // affected hosts there (rack level)
  double p_chance = 1;             // hypergeometric tail probability
  std::string text() const;        // "7 of 8 affected ranks are in rack r12 (8 of 64 measured)"
};

// One unit per (comm, rank) the detector could judge: the log it came from
// (ReadResult::files, which names its host and rack) and whether the detector
// flagged it. A process with ranks in several comms counts once per comm.
struct Judged {
  std::uint32_t file = 0;
  bool affected = false;
};
std::vector<Concentration> concentrations(const ReadResult& res, const std::vector<Judged>& units);

// The process (and GPU, where the comm records give the device) of each
// (comm, rank) in the logs, so that one GPU's ranks on several communicators,
// a rank number on each, are named together. A process is (host, pid); a file
// without a pid (upstream logs) is one of its own.
class RankProcesses {
 public:
  explicit RankProcesses(const ReadResult& res);
  struct Process {
    std::tuple<std::string, std::int64_t, int> key;  // (host, pid or -1 - file, cuda_dev or -1)
    std::string label;                               // "host pid P" (+ " GPU d")
  };
  // nullptr when no comm record of the logs gives that (comm, rank).
  const Process* of(std::uint64_t comm, int rank) const;

 private:
  std::map<std::pair<std::uint64_t, int>, Process> by_;
};

// P(X >= k) for X ~ Hypergeometric(population N, successes K, draws n).
double hypergeom_tail(int N, int K, int n, int k);

}  // namespace ni::analysis
