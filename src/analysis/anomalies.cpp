#include "src/analysis/anomalies.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <map>
#include <optional>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <numeric>
#include <set>

#include "src/analysis/analysis.h"
#include "src/analysis/locate.h"
#include "src/analysis/op_sort.h"
#include "src/analysis/recent.h"
#include "src/analysis/slow_channel.h"
#include "src/analysis/slow_hca.h"
#include "src/analysis/stats.h"
#include "src/analysis/stragglers.h"

namespace ni::analysis {
namespace {

std::string fmt(const char* f, double a) {
  char b[96];
  std::snprintf(b, sizeof b, f, a);
  return b;
}
std::string time_str(std::int64_t ns) {
  if (ns <= 0) return "?";
  const std::time_t s = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char b[64];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>((ns % 1000000000) / 1000));
  return b;
}

using GKey = std::tuple<std::uint64_t, Func, int>;  // comm, op, size bucket
struct PairHash {  // (comm, rank)
  std::size_t operator()(const std::pair<std::uint64_t, int>& k) const {
    return static_cast<std::size_t>((k.first ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.second)) << 1) *
                                    0x9E3779B97F4A7C15ull >> 7);
  }
};
struct GKeyHash {
  std::size_t operator()(const GKey& k) const {
    const std::uint64_t x = std::get<0>(k) ^ (static_cast<std::uint64_t>(std::get<1>(k)) << 8) ^
                            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::get<2>(k))) << 16);
    return static_cast<std::size_t>(x * 0x9E3779B97F4A7C15ull >> 7);
  }
};

// One collective instance across ranks: (comm, func, seq).
struct Instance {
  std::uint64_t comm;
  Func func;
  int bucket;
  std::uint64_t seq;
  std::int64_t start;  // earliest start (0 unknown)
  double dur;          // slowest rank's duration
  Algo algo;
  Proto proto;
  double ratio = 1;    // dur / median of its (comm, func, bucket)
  // Its place in program order: the median over its ranks of its position in
  // the rank's own sequence of the comm's collectives (by that rank's start
  // times); 0 when no rank's op has a start.
  double order = 0;
};

// The worst outliers first: by robust z, ties by where and when (a total
// order: the same list whatever the order the ops came in).
bool worse(const std::pair<double, Finding>& a, const std::pair<double, Finding>& b) {
  if (a.second.explained != b.second.explained) return !a.second.explained;  // the unexplained first
  if (a.first != b.first) return a.first > b.first;
  return std::tie(a.second.comm, a.second.rank, a.second.seq_first, a.second.start_ns, a.second.evidence) <
         std::tie(b.second.comm, b.second.rank, b.second.seq_first, b.second.start_ns, b.second.evidence);
}
void keep_worst(std::vector<std::pair<double, Finding>>& v, std::size_t top) {
  std::sort(v.begin(), v.end(), worse);
  if (v.size() > top) v.erase(v.begin() + static_cast<std::ptrdiff_t>(top), v.end());
}

// What explains a slow collective instance without it being a single op's spike:
// the degradation windows found (per comm and function, their seq ranges) and
// the bimodal groups (their slow mode's median).
struct Explained {
  std::map<std::pair<std::uint64_t, Func>, std::vector<std::pair<std::uint64_t, std::uint64_t>>> windows;
  std::map<GKey, double> slow_mode_us;
};

// The outliers of the ops' groups, one per collective instance: counted, and
// the worst `top` of them kept in cands (the unexplained first).
// ops[sel[..]]: the ops analysed (sel: their indices, in order).
void outliers(const std::vector<Op>& ops, const std::vector<std::uint32_t>& sel, const ReadResult& res,
              const AnomalyOptions& o, const Explained& why, AnomalyResult& out,
              std::vector<std::pair<double, Finding>>& cands) {
  // Hashed: the candidates are ordered at the end (worse()), not by group.
  std::unordered_map<GKey, std::vector<std::uint32_t>, GKeyHash> groups;
  Recent<decltype(groups)> recent;
  for (std::uint32_t i : sel) {
    const GKey k{ops[i].comm_hash, ops[i].func, size_bucket(ops[i].bytes)};
    recent.get(groups, k, GKeyHash{}(k)).push_back(i);
  }
  std::vector<std::pair<double, Finding>> all;
  for (const auto& [k, group] : groups) {
    const std::vector<std::uint32_t>& v = group;  // lambdas use it: clang < 16 cannot capture a binding
    if (v.size() < 20) continue;
    std::vector<double> d;
    d.reserve(v.size());
    for (auto i : v) d.push_back(ops[i].dur_us);
    std::vector<double> tmp = d;
    const double med = median_of(tmp);
    double mad = mad_of(d, med);
    if (mad <= 0) {
      double s = 0;
      for (double x : d) s += std::fabs(x - med);
      mad = s / static_cast<double>(d.size()) / 1.2533;  // mean abs deviation -> MAD scale (normal)
    }
    if (!(mad > 0)) continue;
    // The group's outlier ops, then one row per collective instance (kernel or
    // copy-engine collective, by seq): a slow collective is slow on every rank
    // that took part, and a row per rank would fill the list with one event. The
    // row names the instance's slowest rank. A P2P op (its seq counts per peer
    // and direction) or one of an unknown rank is a row of its own.
    auto instance_of = [](const Op& op) { return (op.kind == OpKind::kColl || op.kind == OpKind::kCe) && op.rank >= 0; };
    struct Hit {
      bool alone;
      OpKind kind;
      std::uint64_t key;  // seq, or for an op alone its index in v
      double z;
      std::uint32_t j;
    };
    std::vector<Hit> hits;
    for (std::size_t j = 0; j < v.size(); ++j) {
      const double z = 0.6745 * (d[j] - med) / mad;
      if (!(z >= o.z_threshold) || d[j] < o.min_outlier_ratio * med) continue;
      const Op& op = ops[v[j]];
      const bool alone = !instance_of(op);
      hits.push_back({alone, op.kind, alone ? j : op.seq, z, static_cast<std::uint32_t>(j)});
    }
    if (hits.empty()) continue;
    out.outlier_count += hits.size();
    const auto windows = why.windows.find({std::get<0>(k), std::get<1>(k)});
    const auto slow_mode = why.slow_mode_us.find(k);
    // (kind, seq) -> the instance's ranks in the group, with their ops' places in v
    std::map<std::pair<OpKind, std::uint64_t>, std::vector<std::pair<int, std::uint32_t>>> in_instance;
    for (const Hit& h : hits)
      if (!h.alone) in_instance.emplace(std::make_pair(h.kind, h.key), std::vector<std::pair<int, std::uint32_t>>{});
    if (!in_instance.empty())
      for (std::size_t i = 0; i < v.size(); ++i)
        if (instance_of(ops[v[i]]))
          if (auto it = in_instance.find({ops[v[i]].kind, ops[v[i]].seq}); it != in_instance.end())
            it->second.emplace_back(ops[v[i]].rank, static_cast<std::uint32_t>(i));
    // Per rank of the group: its median duration (of 5 ops or more), the
    // group's durations sorted by rank on the first ask.
    std::map<int, std::vector<double>> by_rank;
    std::map<int, std::optional<double>> rank_median;
    auto own_median = [&](int r) -> std::optional<double> {
      if (by_rank.empty())
        for (std::size_t i = 0; i < v.size(); ++i)
          if (instance_of(ops[v[i]])) by_rank[ops[v[i]].rank].push_back(d[i]);
      auto [it, fresh] = rank_median.try_emplace(r);
      if (fresh)
        if (auto m = by_rank.find(r); m != by_rank.end() && m->second.size() >= 5) it->second = median_of(m->second);
      return it->second;
    };
    std::sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
      if (a.alone != b.alone || a.kind != b.kind || a.key != b.key)
        return std::tie(a.alone, a.kind, a.key) < std::tie(b.alone, b.kind, b.key);
      if (a.z != b.z) return a.z > b.z;
      const Op &x = ops[v[a.j]], &y = ops[v[b.j]];
      return std::tie(x.rank, x.start_wall_ns, x.file_idx, a.j) < std::tie(y.rank, y.start_wall_ns, y.file_idx, b.j);
    });
    for (std::size_t b = 0, e; b < hits.size(); b = e) {
      for (e = b + 1; e < hits.size() && !hits[b].alone && !hits[e].alone && hits[e].kind == hits[b].kind &&
                      hits[e].key == hits[b].key;
           ++e) {}
      const std::size_t j = hits[b].j;
      const double z = hits[b].z;
      const Op& op = ops[v[j]];
      std::vector<int> took;
      std::map<int, double> took_dur;  // rank -> its duration in this instance
      if (hits[b].alone) {
        took.push_back(op.rank);
      } else {
        for (const auto& [r, i] : in_instance[{op.kind, op.seq}]) {
          took.push_back(r);
          took_dur.emplace(r, d[i]);
        }
      }
      std::sort(took.begin(), took.end());
      took.erase(std::unique(took.begin(), took.end()), took.end());
      Finding f;
      f.kind = "outlier";
      f.comm = op.comm_hash;
      f.comm_label = comm_display(op.comm_hash, res);
      f.rank = op.rank;
      f.host = op.file_idx < res.files.size() ? res.files[op.file_idx].host : "";
      for (std::size_t h = b; h < e; ++h) f.ranks.push_back(ops[v[hits[h].j]].rank);
      std::sort(f.ranks.begin(), f.ranks.end());
      f.ranks.erase(std::unique(f.ranks.begin(), f.ranks.end()), f.ranks.end());
      const std::size_t slow = f.ranks.size(), took_part = took.size();
      std::vector<int> others;  // the instance's ranks in the logs that were not outliers
      std::set_difference(took.begin(), took.end(), f.ranks.begin(), f.ranks.end(), std::back_inserter(others));
      // Of those, a rank that waited much longer than it usually does in this
      // group arrived before the one the slow ranks waited for (a rank late to
      // every op, always last, waits little, so more than usual stays under the
      // group's median): it is not named as the one they may have waited for.
      std::vector<int> waited;
      for (int r : others) {
        const auto own = own_median(r);
        const auto here = took_dur.find(r);
        if (own && here != took_dur.end() && here->second - *own > 0.5 * (d[j] - med)) waited.push_back(r);
      }
      std::set_difference(others.begin(), others.end(), waited.begin(), waited.end(),
                          std::back_inserter(f.not_slow));
      if (f.not_slow.empty()) {  // every one waited longer than usual: no rank to single out by this
        f.not_slow = std::move(others);
        waited.clear();
      }
      const std::vector<int>& not_slow = f.not_slow;
      const std::string slowest = "rank " + std::to_string(op.rank) + " on " + f.host;
      f.where = slow == 1 && took_part == 1 ? slowest
                : slow == 1               ? slowest + " (1 of " + std::to_string(took_part) + " ranks in the logs)"
                                          : "ranks " + rank_list(f.ranks) + " (" + std::to_string(slow) + " of " +
                                  std::to_string(took_part) + " in the logs), slowest " + slowest;
      f.start_ns = op.has_start() ? op.start_wall_ns : 0;
      f.seq_first = f.seq_last = op.seq;
      f.seq_ranges.push_back({op.func, op.seq, op.seq, 1});
      f.when = "seq " + std::to_string(op.seq) + (op.has_start() ? " at " + time_str(op.start_wall_ns) : "");
      f.magnitude = d[j] / med;
      f.evidence = std::string(to_string(op.func)) + " " + size_bucket_label(size_bucket(op.bytes)) + " " +
                   std::string(to_string(op.algo)) + "/" + std::string(proto_label(op.algo, op.proto)) + ": " +
                   fmt("%.1f us", d[j]) + fmt(" vs median %.1f us", med) + fmt(" (robust z %.1f)", z) +
                   (op.has_busbw() ? fmt(", busbw %.1f GB/s", op.busbw_gbs) : "") +
                   (took_part < 2 ? std::string()
                    : slow == took_part
                        ? "; slow on all " + std::to_string(took_part) + " ranks of the instance in the logs: the "
                          "collective itself was slow, not one rank"
                        : std::string(not_slow.size() > 1 ? "; ranks " : "; rank ") + rank_list(not_slow) +
                              (not_slow.size() > 1 ? " were" : " was") + " not slow: the slow rank" +
                              (slow > 1 ? "s" : "") + " may have waited for " +
                              (not_slow.size() > 1 ? "one of them" : "it") +
                              " to arrive (a late rank: see stragglers)" +
                              (waited.empty() ? std::string()
                                              : std::string(waited.size() > 1 ? "; ranks " : "; rank ") +
                                                    rank_list(waited) +
                                                    " waited longer than usual too (over half the delay above " +
                                                    (waited.size() > 1 ? "their own medians" : "its own median") +
                                                    "), so arrived before the rank waited for"));
      if (windows != why.windows.end() && op.kind == OpKind::kColl)  // windows are of kernel collectives
        for (const auto& [first, last] : windows->second)
          if (first <= op.seq && op.seq <= last) {
            f.explained = true;
            f.evidence += "; inside the change_point window of " + std::string(to_string(op.func)) + " seq " +
                          std::to_string(first) + ".." + std::to_string(last);
            break;
          }
      if (!f.explained && slow_mode != why.slow_mode_us.end() && d[j] <= o.min_outlier_ratio * slow_mode->second) {
        f.explained = true;
        f.evidence += fmt("; the slow mode (median %.1f us) of this bimodal group", slow_mode->second);
      }
      ++(hits[b].alone ? out.outlier_ops_alone : out.outlier_instances);
      out.outliers_explained += f.explained;
      all.emplace_back(z, std::move(f));
    }
  }
  keep_worst(all, o.top);
  for (auto& c : all) cands.push_back(std::move(c));
}

std::vector<Instance> instances(const std::vector<Op>& ops, const std::vector<std::uint32_t>& sel) {
  // By (comm, func, seq), sorted as packed keys (not through the index: the
  // indirect compares were a tenth of the time on a large input).
  struct Key {
    std::uint64_t comm, seq;
    std::uint32_t i;
    std::uint8_t func;
  };
  std::vector<std::uint32_t> idx;
  for (std::uint32_t i : sel)
    if (ops[i].kind == OpKind::kColl) idx.push_back(i);
  sort_op_indices(
      ops, idx, [](const Op& op, std::uint32_t i) { return Key{op.comm_hash, op.seq, i, static_cast<std::uint8_t>(op.func)}; },
      [](const Key& a, const Key& b) { return std::tie(a.comm, a.func, a.seq, a.i) < std::tie(b.comm, b.func, b.seq, b.i); });
  // Each op's position in its rank's own sequence of the comm's collectives,
  // by that rank's start times. One rank's times come from one clock, so they
  // keep its program order across the ranks' clock disagreements; the median
  // over the ranks (below) outvotes the rank whose GPU clock estimate moved
  // mid-run (the plugin converts each record with the estimate of the moment
  // it writes it).
  std::vector<std::uint32_t> pos;
  rank_positions(ops, idx, pos);
  std::vector<Instance> out;
  std::vector<std::uint32_t> places;
  for (std::size_t b = 0; b < idx.size();) {
    std::size_t e = b + 1;
    const Op& f = ops[idx[b]];
    while (e < idx.size() && ops[idx[e]].comm_hash == f.comm_hash && ops[idx[e]].func == f.func &&
           ops[idx[e]].seq == f.seq)
      ++e;
    Instance in{f.comm_hash, f.func, size_bucket(f.bytes), f.seq, 0, 0, f.algo, f.proto};
    places.clear();
    for (std::size_t i = b; i < e; ++i) {
      const Op& op = ops[idx[i]];
      in.dur = std::max(in.dur, op.dur_us);
      if (op.has_start() && (in.start == 0 || op.start_wall_ns < in.start)) in.start = op.start_wall_ns;
      if (pos[i] != 0) places.push_back(pos[i]);
    }
    if (!places.empty()) {
      std::sort(places.begin(), places.end());
      const std::size_t m = places.size() / 2;
      in.order = places.size() % 2 ? places[m] : 0.5 * (places[m - 1] + places[m]);
    }
    out.push_back(in);
    b = e;
  }
  // Normalise by the (comm, func, bucket) median.
  std::map<GKey, std::vector<double>> durs;
  Recent<decltype(durs)> recent_durs;
  for (const auto& in : out) {
    const GKey k{in.comm, in.func, in.bucket};
    recent_durs.get(durs, k, GKeyHash{}(k)).push_back(in.dur);
  }
  std::map<GKey, double> med;
  for (auto& [k, v] : durs) med[k] = median_of(v);
  Recent<decltype(med)> recent_med;
  for (auto& in : out) {
    const GKey k{in.comm, in.func, in.bucket};
    const double m = recent_med.get(med, k, GKeyHash{}(k));
    in.ratio = m > 0 ? in.dur / m : 1;
  }
  return out;
}

// A comm's instances in program order. Each function's collectives are in
// seq order (NCCL numbers them per function: exact, no clock); the functions'
// sequences are merged by their instances' places in the ranks' own sequences
// (Instance::order), ties by their earliest starts. Time alone could reorder
// a function's own collectives, and earliest starts across ranks could
// reorder the functions: a clock estimate can move during a run, and the
// ranks' clocks may disagree by more than the gap between two collectives.
void program_order(std::vector<Instance>& v, bool timed) {
  const auto by_seq = [](const Instance& a, const Instance& b) {
    return std::tie(a.func, a.seq) < std::tie(b.func, b.seq);
  };
  // instances() hands a comm's instances over in this order already (a sort of
  // them was ≈ 3 % of `report`'s instructions); one (func, seq) is one instance.
  if (!std::is_sorted(v.begin(), v.end(), by_seq)) std::sort(v.begin(), v.end(), by_seq);
  if (!timed) return;
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [begin, end) per function
  for (std::size_t b = 0; b < v.size();) {
    std::size_t e = b + 1;
    while (e < v.size() && v[e].func == v[b].func) ++e;
    runs.emplace_back(b, e);
    b = e;
  }
  if (runs.size() < 2) return;
  std::vector<Instance> merged;
  merged.reserve(v.size());
  for (;;) {
    std::size_t best = runs.size();
    for (std::size_t r = 0; r < runs.size(); ++r)
      if (runs[r].first < runs[r].second &&
          (best == runs.size() || std::pair(v[runs[r].first].order, v[runs[r].first].start) <
                                      std::pair(v[runs[best].first].order, v[runs[best].first].start)))
        best = r;
    if (best == runs.size()) break;
    merged.push_back(v[runs[best].first++]);
  }
  v = std::move(merged);
}

// Its findings into `found`, its counts into `out`.
void change_points(std::vector<Instance> ins, const ReadResult& res, const AnomalyOptions& o, AnomalyResult& out,
                   std::vector<Finding>& found) {
  std::map<std::uint64_t, std::vector<Instance>> per;
  for (auto& in : ins) per[in.comm].push_back(in);
  out.min_change_instances = 4 * o.min_window;
  for (auto& [comm, v] : per) {
    if (v.size() < 4 * o.min_window) {  // no baseline to speak of: said in the report
      ++out.short_comms;
      continue;
    }
    const bool timed = std::all_of(v.begin(), v.end(), [](const Instance& x) { return x.start > 0; });
    program_order(v, timed);
    const std::size_t w = std::clamp<std::size_t>(v.size() / 50, 5, 31) | 1;
    const std::size_t h = w / 2;
    std::vector<double> ratios(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) ratios[i] = v[i].ratio;
    const std::vector<double> roll = rolling_median(ratios, h);
    for (std::size_t i = 0; i < v.size();) {
      if (roll[i] < o.shift_ratio) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < v.size() && roll[j] >= o.shift_ratio) ++j;
      if (j - i >= o.min_window) {
        std::vector<double> in_r, out_r;
        for (std::size_t k = 0; k < v.size(); ++k) (k >= i && k < j ? in_r : out_r).push_back(v[k].ratio);
        const double mag = median_of(in_r);
        const double base = out_r.empty() ? 1.0 : median_of(out_r);
        Finding f;
        f.kind = "change_point";
        f.comm = comm;
        f.comm_label = comm_display(comm, res);
        f.where = "all ranks of the communicator";
        f.start_ns = INT64_MAX;
        f.end_ns = INT64_MIN;
        for (std::size_t k = i; k < j; ++k) {
          f.start_ns = std::min(f.start_ns, v[k].start);
          f.end_ns = std::max(f.end_ns, v[k].start + static_cast<std::int64_t>(v[k].dur * 1000));
        }
        std::uint64_t s0 = UINT64_MAX, s1 = 0;
        std::map<Func, Finding::SeqRange> by_func;
        for (std::size_t k = i; k < j; ++k) {
          s0 = std::min(s0, v[k].seq);
          s1 = std::max(s1, v[k].seq);
          Finding::SeqRange& r = by_func[v[k].func];
          if (r.count++ == 0) r = {v[k].func, v[k].seq, v[k].seq, 1};
          r.first = std::min(r.first, v[k].seq);
          r.last = std::max(r.last, v[k].seq);
        }
        f.seq_first = s0;
        f.seq_last = s1;
        std::string seqs;
        for (const auto& [fn, r] : by_func) {
          f.seq_ranges.push_back(r);
          seqs += (seqs.empty() ? "" : ", ") + std::string(to_string(fn)) + " seq " + std::to_string(r.first) + ".." +
                  std::to_string(r.last);
        }
        f.when = (timed ? time_str(f.start_ns) + " .. " + time_str(f.end_ns) + fmt(" (%.3f s), ", static_cast<double>(f.end_ns - f.start_ns) / 1e9)
                        : std::string()) +
                 seqs + (j == v.size() ? " (until the end of the log)" : "");
        f.magnitude = base > 0 ? mag / base : mag;
        f.evidence = std::to_string(j - i) + " consecutive collectives with rolling median latency " +
                     fmt("%.2fx", f.magnitude) + " their usual (window " + std::to_string(w) + " ops); " +
                     std::to_string(v.size() - (j - i)) + " others at " + fmt("%.2fx", base);
        found.push_back(std::move(f));
      }
      i = j;
    }
  }
}

// Bimodality needs 40 instances of a group, or from 16 (a few dozen
// collectives of one size are common) each mode with 5 or more and the modes
// either cleanly apart (eta >= 0.95) or told apart by NCCL's own algo/proto
// (labels_split()).
constexpr std::size_t kBimodalMin = 40, kBimodalMinFew = 16, kBimodalFewMode = 5;
constexpr double kBimodalFewEta = 0.95;

// Whether the latency split at `split` (x sorted by log latency) is also a
// split by NCCL's algo/proto: each side has one majority algo/proto, they
// differ, and at least 90 % of each side carries its side's.
bool labels_split(const std::vector<std::pair<double, const Instance*>>& x, std::size_t split) {
  auto majority = [&](std::size_t b, std::size_t e, std::pair<Algo, Proto>& label) {
    std::map<std::pair<Algo, Proto>, std::size_t> m;
    for (std::size_t i = b; i < e; ++i) ++m[{x[i].second->algo, x[i].second->proto}];
    std::size_t best = 0;
    for (const auto& [l, c] : m)
      if (c > best) best = c, label = l;
    return static_cast<double>(best) >= 0.9 * static_cast<double>(e - b);
  };
  std::pair<Algo, Proto> fast{}, slow{};
  return majority(0, split, fast) && majority(split, x.size(), slow) && fast != slow;
}

// The groups found bimodal (their findings into `found`), with their slow
// mode's median (us).
std::map<GKey, double> bimodal(const std::vector<Instance>& ins, const ReadResult& res, const AnomalyOptions& o,
                               std::vector<Finding>& found) {
  std::map<GKey, double> groups_found;
  std::map<GKey, std::vector<const Instance*>> groups;
  for (const auto& in : ins) groups[{in.comm, in.func, in.bucket}].push_back(&in);
  for (auto& [k, v] : groups) {
    const std::size_t n = v.size();
    if (n < kBimodalMinFew) continue;
    std::vector<std::pair<double, const Instance*>> x;
    for (auto* p : v) x.emplace_back(std::log(std::max(p->dur, 1e-3)), p);
    std::sort(x.begin(), x.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    double tot = 0, tot2 = 0;
    for (auto& [l, p] : x) {
      tot += l;
      tot2 += l * l;
    }
    const double mean = tot / static_cast<double>(n);
    const double var = tot2 / static_cast<double>(n) - mean * mean;
    if (!(var > 1e-12)) continue;
    double best = 0, c = 0;
    std::size_t split = 0;
    for (std::size_t i = 1; i < n; ++i) {  // split before i
      c += x[i - 1].first;
      const double n1 = static_cast<double>(i), n2 = static_cast<double>(n - i);
      const double m1 = c / n1, m2 = (tot - c) / n2;
      const double between = n1 * n2 / static_cast<double>(n * n) * (m1 - m2) * (m1 - m2);
      if (between > best) {
        best = between;
        split = i;
      }
    }
    const double eta = best / var;
    const double minfrac = static_cast<double>(std::min(split, n - split)) / static_cast<double>(n);
    const double med_fast = std::exp(x[split / 2].first);
    const double med_slow = std::exp(x[split + (n - split) / 2].first);
    if (eta < o.bimodal_eta || minfrac < 0.1 || med_slow / med_fast < o.bimodal_ratio) continue;
    if (n < kBimodalMin && !(std::min(split, n - split) >= kBimodalFewMode &&
                             (eta >= kBimodalFewEta || labels_split(x, split))))
      continue;
    // Interleaved in time (switching), not one contiguous window (a change point).
    std::vector<std::pair<std::pair<std::int64_t, std::uint64_t>, bool>> order;
    // Program order: one function's instances by seq (no clock involved).
    for (std::size_t i = 0; i < n; ++i)
      order.push_back({{static_cast<std::int64_t>(x[i].second->seq), x[i].second->start}, i >= split});
    std::sort(order.begin(), order.end());
    std::size_t transitions = 0;
    for (std::size_t i = 1; i < n; ++i) transitions += order[i].second != order[i - 1].second;
    const std::size_t small = std::min(split, n - split);
    if (transitions < 4 || static_cast<double>(transitions) < 0.2 * static_cast<double>(small)) continue;
    // What explains the modes?
    auto mix = [&](std::size_t b, std::size_t e) {
      std::map<std::string, std::size_t> m;
      for (std::size_t i = b; i < e; ++i)
        ++m[std::string(to_string(x[i].second->algo)) + "/" + std::string(to_string(x[i].second->proto))];
      std::string s;
      for (auto& [name, cnt] : m)
        s += (s.empty() ? "" : ", ") + name + fmt(" %.0f%%", 100.0 * static_cast<double>(cnt) / static_cast<double>(e - b));
      return s;
    };
    const std::string fast_mix = mix(0, split), slow_mix = mix(split, n);
    Finding f;
    f.kind = "bimodal";
    f.comm = std::get<0>(k);
    f.comm_label = comm_display(f.comm, res);
    f.where = std::string(to_string(std::get<1>(k))) + " " + size_bucket_label(std::get<2>(k));
    f.when = "interleaved over the run (" + std::to_string(transitions) + " switches)";
    f.magnitude = med_slow / med_fast;
    f.evidence = fmt("fast mode %.1f us", med_fast) + fmt(" (%.0f%%", 100.0 * static_cast<double>(split) / static_cast<double>(n)) +
                 ": " + fast_mix + ")" + fmt(", slow mode %.1f us", med_slow) +
                 fmt(" (%.0f%%", 100.0 * static_cast<double>(n - split) / static_cast<double>(n)) + ": " + slow_mix + ")" +
                 fmt("; separation eta %.2f", eta) +
                 (fast_mix != slow_mix ? "; the modes use different algo/proto: NCCL is switching"
                                       : "; same algo/proto in both: contention or placement");
    found.push_back(std::move(f));
    groups_found.emplace(k, med_slow);
  }
  return groups_found;
}

Finding slow_channel_finding(const SlowChannel& x, const ReadResult& res) {
  Finding f;
  f.kind = "slow_channel";
  f.comm = x.comm;
  f.comm_label = comm_display(x.comm, res);
  f.channel = x.channel;
  f.every_rank = x.every_rank;
  f.ranks = x.slow_ranks;
  f.rank = x.slow_ranks.empty() ? -1 : x.slow_ranks.front();
  std::string hosts;
  for (const auto& h : x.hosts) hosts += (hosts.empty() ? "" : " ") + h;
  if (x.hosts.size() == 1) f.host = x.hosts[0];
  if (x.every_rank && x.ranks_measured == 1) {
    f.where = "channel " + std::to_string(x.channel) + " on rank " + std::to_string(f.rank) + " on " + hosts +
              ", the only rank of this comm in these logs";
  } else if (x.every_rank) {
    f.where = "channel " + std::to_string(x.channel) + " on every rank (" + std::to_string(x.ranks_measured) +
              ", hosts " + hosts + "): the channel's path";
  } else {
    std::string rs;
    for (int r : x.slow_ranks) rs += (rs.empty() ? "" : ",") + std::to_string(r);
    f.where = "channel " + std::to_string(x.channel) + " on rank" + (x.slow_ranks.size() > 1 ? "s " : " ") + rs + " of " +
              std::to_string(x.ranks_measured) + " (hosts " + hosts + "): one GPU or link";
  }
  f.when = std::to_string(x.samples) + " rank-ops";
  f.magnitude = x.factor;
  f.evidence = fmt("the longest channel in %.0f%% of", 100 * x.slowest_share) + " " + std::to_string(x.samples) +
               " rank-ops" + fmt(", by %.2fx the median channel", x.factor) +
               fmt(" once the rank's wait for the others is taken out (P25 %.2fx", x.p25) +
               fmt(", +%.1f us); share of ops each channel was the longest:", x.excess_us);
  for (const auto& [ch, r] : x.channels) f.evidence += " " + std::to_string(ch) + fmt("=%.0f%%", 100 * r);
  return f;
}

void channels(const CollectSink& c, const ReadResult& res, const AnomalyOptions& o,
              const std::set<std::uint64_t>& explained, std::vector<Finding>& found) {
  struct Acc {
    std::vector<double> bal;
    std::map<int, std::size_t> slowest;
    std::vector<double> ratio;
    std::string host;
  };
  // Hashed while the ops are read, ordered by (comm, rank) for the findings.
  std::unordered_map<std::pair<std::uint64_t, int>, Acc, PairHash> by_rank;
  const std::pair<std::uint64_t, int>* last_key = nullptr;
  Acc* last = nullptr;
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const Op& op = c.ops[i];
    if (op.ch_balance < 0 || op.nchannels < 2) continue;
    const std::pair<std::uint64_t, int> key{op.comm_hash, op.rank};
    if (last_key == nullptr || *last_key != key) {
      auto it = by_rank.try_emplace(key).first;
      last_key = &it->first;
      last = &it->second;
    }
    Acc& a = *last;
    a.bal.push_back(op.ch_balance);
    if (a.host.empty() && op.file_idx < res.files.size()) a.host = res.files[op.file_idx].host;
    if (i < c.extra.size() && c.extra[i].slowest_channel >= 0) {
      ++a.slowest[c.extra[i].slowest_channel];
      a.ratio.push_back(c.extra[i].slowest_ratio);
    }
  }
  std::vector<std::pair<std::pair<std::uint64_t, int>, Acc*>> acc;
  for (auto& [k, a] : by_rank) acc.emplace_back(k, &a);
  std::sort(acc.begin(), acc.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [k, ap] : acc) {
    Acc& a = *ap;
    if (a.bal.size() < 10 || explained.count(k.first)) continue;  // a slow channel says more
    const double med = median_of(a.bal);
    if (med >= o.min_ch_balance) continue;
    Finding f;
    f.kind = "channel_imbalance";
    f.comm = k.first;
    f.comm_label = comm_display(k.first, res);
    f.rank = k.second;
    f.host = a.host;
    f.where = "rank " + std::to_string(k.second) + " on " + a.host;
    f.when = std::to_string(a.bal.size()) + " ops";
    f.magnitude = med;
    f.evidence = fmt("median ch_balance %.2f", med) + fmt(" (min/max channel time; threshold %.2f)", o.min_ch_balance);
    if (!a.slowest.empty()) {
      auto it = std::max_element(a.slowest.begin(), a.slowest.end(),
                                 [](const auto& x, const auto& y) { return x.second < y.second; });
      f.channel = it->first;
      f.where += ", channel " + std::to_string(it->first);
      f.evidence += "; channel " + std::to_string(it->first) +
                    fmt(" was the slowest in %.0f%% of ops", 100.0 * static_cast<double>(it->second) / static_cast<double>(a.ratio.size())) +
                    fmt(", %.2fx the median channel", median_of(a.ratio));
    }
    found.push_back(std::move(f));
  }
}

Finding slow_hca_finding(const SlowHca& x, const ReadResult& res) {
  Finding f;
  f.kind = "slow_hca";
  f.host = x.host;
  f.hca = x.dev;
  std::string ranks;
  for (const auto& [comm, rank] : x.comm_ranks) {
    if (f.comm == 0) {
      f.comm = comm;
      f.comm_label = comm_display(comm, res);
      f.rank = rank;
    }
    ranks += (ranks.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " of " + comm_display(comm, res);
  }
  f.where = "HCA " + x.dev + " of " + ranks + " on " + x.host;
  f.when = std::to_string(x.ops) + " ops";
  f.magnitude = x.factor;
  f.evidence = fmt("its send requests moved %.1f GB/s on the wire", x.gbs) +
               " (median), device " + x.dev + " on the comm's other ranks " + fmt("%.1f GB/s", x.peers_gbs) +
               (x.own_gbs > 0 ? fmt(", this rank's other devices %.1f GB/s", x.own_gbs) : std::string()) +
               "; a receive-limited NIC slows its senders' requests too";
  return f;
}

// HCA use from op durations and bytes (without wire times): per (host, HCA)
// each op's latency over its (comm, func, bucket) median, and per process
// the bytes per HCA. Collected batch by batch (the medians are one comm's).
void collect_hcas(const CollectSink& c, const ReadResult& res, HcaUseAcc& acc) {
  if (std::none_of(c.extra.begin(), c.extra.end(), [](const CollectSink::Extra& e) { return !e.hcas.empty(); })) return;
  // Normalised latency of each op within its (comm, func, bucket, kind).
  std::map<std::tuple<std::uint64_t, Func, int>, std::vector<double>> durs;
  for (const auto& op : c.ops)
    if (!duration_is_enqueue(op.timing)) durs[{op.comm_hash, op.func, size_bucket(op.bytes)}].push_back(op.dur_us);
  std::map<std::tuple<std::uint64_t, Func, int>, double> med;
  for (auto& [k, v] : durs) med[k] = median_of(v);
  for (std::size_t i = 0; i < c.ops.size() && i < c.extra.size(); ++i) {
    const Op& op = c.ops[i];
    if (c.extra[i].hcas.empty()) continue;
    const double m = med[{op.comm_hash, op.func, size_bucket(op.bytes)}];
    const std::string host = op.file_idx < res.files.size() ? res.files[op.file_idx].host : "";
    for (const auto& h : c.extra[i].hcas) {
      if (h.bytes == 0) continue;
      if (m > 0 && !duration_is_enqueue(op.timing)) acc.per_hca[{host, h.dev}].push_back(op.dur_us / m);
      acc.bytes[op.file_idx][h.dev] += h.bytes;
    }
  }
}

void judge_hcas(HcaUseAcc& acc, const ReadResult& res, const AnomalyOptions& o, bool from_durations,
                AnomalyResult& out) {
  auto& per_hca = acc.per_hca;
  auto& bytes = acc.bytes;
  if (from_durations && per_hca.size() >= 2) {
    std::vector<std::pair<std::pair<std::string, std::string>, double>> meds;
    std::vector<double> all;
    for (auto& [k, v] : per_hca) {
      if (v.size() < 10) continue;
      std::sort(v.begin(), v.end());
      // P25: even the better ops through a slow HCA are slow; an HCA that is only
      // a peer of the slow one has half its ops at normal speed.
      meds.emplace_back(k, sorted_quantile(v, 0.25));
      all.push_back(meds.back().second);
    }
    if (all.size() >= 2) {
      const double typical = median_of(all);
      for (auto& [k, m] : meds) {
        if (m < o.hca_slow_ratio * typical) continue;
        Finding f;
        f.kind = "hca_slow";
        f.host = k.first;
        f.hca = k.second;
        f.where = "HCA " + k.second + " on " + k.first;
        f.when = std::to_string(per_hca[k].size()) + " ops";
        f.magnitude = m / typical;
        f.evidence = fmt("even its faster ops (P25) take %.2fx", m) + fmt(" their group median; typical HCA %.2fx", typical);
        out.findings.push_back(std::move(f));
      }
    }
  }
  for (auto& [file, devs] : bytes) {
    if (devs.size() < 2) continue;
    std::uint64_t mn = UINT64_MAX, mx = 0;
    std::string mn_dev, mx_dev;
    for (auto& [d, b] : devs) {
      if (b < mn) { mn = b; mn_dev = d; }
      if (b > mx) { mx = b; mx_dev = d; }
    }
    const double share = mx ? static_cast<double>(mn) / static_cast<double>(mx) : 1;
    if (share >= o.hca_min_share) continue;
    Finding f;
    f.kind = "hca_imbalance";
    f.host = file < res.files.size() ? res.files[file].host : "";
    f.hca = mn_dev;
    f.where = "process " + f.host + " pid " + std::to_string(file < res.files.size() ? res.files[file].pid : -1) + ", HCA " + mn_dev;
    f.when = "whole file";
    f.magnitude = share;
    f.evidence = "HCA " + mn_dev + " carried " + format_bytes(static_cast<double>(mn)) + " vs " + format_bytes(static_cast<double>(mx)) +
                 " on " + mx_dev + fmt(" (%.2f of the busiest)", share);
    out.findings.push_back(std::move(f));
  }
}

// The rows that name one rank alone as not slow (explained ones aside: a
// change point or a bimodal group's slow mode is their cause), by the process
// (and GPU, when the comm records give it) of that rank.
std::vector<WaitedFor> waited_for(const std::vector<Finding>& rows, const ReadResult& res) {
  const RankProcesses procs(res);
  std::map<std::tuple<std::string, std::int64_t, int>, WaitedFor> by;
  for (const Finding& f : rows) {
    if (f.explained || f.not_slow.size() != 1) continue;
    const RankProcesses::Process* p = procs.of(f.comm, f.not_slow[0]);
    if (p == nullptr) continue;
    WaitedFor& w = by[p->key];
    w.process = p->label;
    ++w.rows;
    w.ranks.emplace_back(f.comm_label, f.comm, f.not_slow[0]);
  }
  std::vector<WaitedFor> out;
  for (auto& [k, w] : by) {
    std::sort(w.ranks.begin(), w.ranks.end());
    w.ranks.erase(std::unique(w.ranks.begin(), w.ranks.end()), w.ranks.end());
    out.push_back(std::move(w));
  }
  std::stable_sort(out.begin(), out.end(), [](const WaitedFor& a, const WaitedFor& b) { return a.rows > b.rows; });
  return out;
}

}  // namespace

AnomalyAcc::AnomalyAcc(const ReadResult& res, const AnomalyOptions& o) : res_(res), o_(o) {
  out_.min_change_instances = 4 * o.min_window;
}

void AnomalyAcc::add(const CollectSink& c) {
  const ReadResult& res = res_;
  const AnomalyOptions& o = o_;
  AnomalyResult& out = out_;
  // Durations that are only the enqueue say nothing about the op (model.h).
  std::vector<std::uint32_t> timed;  // the ops with a run time of their own
  timed.reserve(c.ops.size());
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const Op& op = c.ops[i];
    if (duration_is_enqueue(op.timing)) ++out.enqueue_timed;
    else if (!std::isfinite(op.dur_us)) ++out.no_duration;
    else if (op.sym_plan != 0) ++out.sym_plan_heads;  // the plan's time: no outlier among single ops
    else timed.push_back(static_cast<std::uint32_t>(i));
  }
  std::vector<Instance> ins = instances(c.ops, timed);
  // Bimodal groups first: their slow mode is explained (interleaved), so
  // their instances do not count towards a change point, where a chance run
  // of slow-mode ops would read as a degradation window.
  Explained why;
  why.slow_mode_us = bimodal(ins, res, o, bimodal_);
  if (!why.slow_mode_us.empty())
    ins.erase(std::remove_if(ins.begin(), ins.end(),
                             [&](const Instance& in) {
                               return why.slow_mode_us.count({in.comm, in.func, in.bucket}) != 0;
                             }),
              ins.end());
  const std::size_t windows_before = change_.size();
  change_points(std::move(ins), res, o, out, change_);
  // Then the single-op outliers, those inside a window or a slow mode marked as explained.
  for (std::size_t i = windows_before; i < change_.size(); ++i)
    for (const Finding::SeqRange& r : change_[i].seq_ranges)
      why.windows[{change_[i].comm, r.func}].emplace_back(r.first, r.last);
  outliers(c.ops, timed, res, o, why, out, outlier_cands_);
  keep_worst(outlier_cands_, o.top);
  timed = {};
  const SlowChannelResult sc = find_slow_channels(c, res, o.slow_channel);
  std::set<std::uint64_t> explained;
  for (const SlowChannel& x : sc.found) {
    explained.insert(x.comm);
    slow_channel_.push_back(slow_channel_finding(x, res));
  }
  out.slow_channel_samples += sc.samples;
  out.slow_channel_unaligned += sc.unaligned;
  out.slow_channel_not_gpu += sc.not_gpu_timed;
  out.slow_channel_comms += sc.comms_measured;
  channels(c, res, o, explained, channel_);
  collect_hca_series(c, o.slow_hca, hca_series_);
  collect_hcas(c, res, hca_use_);
  // Every (comm, rank) judged, for where the per-rank findings concentrate
  // (the file of its first op). Looked up in a hash table first: a handful
  // of keys over millions of ops.
  std::unordered_map<std::pair<std::uint64_t, int>, std::uint32_t, PairHash> first_file;
  std::vector<std::pair<std::uint64_t, int>> order;
  std::pair<std::uint64_t, int> prev{0, -1};
  for (const Op& op : c.ops) {
    if (op.kind != OpKind::kColl || op.comm_hash == 0 || op.rank < 0) continue;
    const std::pair<std::uint64_t, int> key{op.comm_hash, op.rank};
    if (key == prev) continue;  // a run of one rank's ops: looked up once
    prev = key;
    if (first_file.emplace(key, op.file_idx).second) order.push_back(key);
  }
  for (const auto& k : order) units_.emplace(k, Judged{first_file[k], false});
}

AnomalyResult AnomalyAcc::finish() {
  const ReadResult& res = res_;
  const AnomalyOptions& o = o_;
  AnomalyResult out = std::move(out_);
  // Each kind's findings in communicator order (a batch's own order within a
  // communicator): what one pass over every op gives.
  auto by_comm = [](std::vector<Finding>& v) {
    std::stable_sort(v.begin(), v.end(), [](const Finding& a, const Finding& b) { return a.comm < b.comm; });
  };
  for (auto* v : {&bimodal_, &change_, &slow_channel_, &channel_}) {
    by_comm(*v);
    out.findings.insert(out.findings.end(), std::make_move_iterator(v->begin()), std::make_move_iterator(v->end()));
    v->clear();
  }
  std::sort(outlier_cands_.begin(), outlier_cands_.end(), worse);
  for (std::size_t i = 0; i < outlier_cands_.size() && i < o.top; ++i) out.outliers.push_back(std::move(outlier_cands_[i].second));
  out.waited_for = waited_for(out.outliers, res);
  const SlowHcaResult sh = judge_slow_hcas(hca_series_, res, o.slow_hca);
  for (const SlowHca& x : sh.found) out.findings.push_back(slow_hca_finding(x, res));
  for (const HcaDegraded& x : sh.degraded) {
    Finding f;
    f.kind = "hca_degraded";
    f.comm = x.comm;
    f.comm_label = comm_display(x.comm, res);
    f.rank = x.rank;
    f.host = x.host;
    f.hca = x.dev;
    f.where = "HCA " + x.dev + " of rank " + std::to_string(x.rank) + " on " + x.host;
    f.when = "from seq " + std::to_string(x.first_seq) + (x.from_ns ? " at " + time_str(x.from_ns) : std::string()) +
             " (op " + std::to_string(x.ops_before + 1) + " of " + std::to_string(x.ops_before + x.ops_after) + ")";
    f.seq_first = x.first_seq;
    f.start_ns = x.from_ns;
    f.magnitude = x.before_gbs / x.after_gbs;
    f.evidence = fmt("its send bandwidth on the wire fell from %.1f GB/s", x.before_gbs) +
                 " (median of " + std::to_string(x.ops_before) + " ops) " + fmt("to %.1f GB/s", x.after_gbs) +
                 " (" + std::to_string(x.ops_after) + " ops)" +
                 (x.others_before > 0 ? fmt("; the same device on the other ranks: %.1f", x.others_before) +
                                            fmt(" -> %.1f GB/s", x.others_after)
                                      : std::string("; no other rank to compare with"));
    out.findings.push_back(std::move(f));
  }
  out.hca_wire_ops = sh.ops_with_wire;
  out.hca_no_wire_ops = sh.ops_without_wire;
  out.hca_alone = sh.alone;
  out.hca_implausible = sh.implausible;
  // Without wire times, HCA slowness is read from op durations (judge_hcas()),
  // which cannot tell the slow NIC from the ranks that waited for it.
  judge_hcas(hca_use_, res, o, sh.ops_with_wire == 0, out);
  // Where the per-rank findings concentrate: every (comm, rank) judged, and
  // those a channel finding names.
  std::map<std::pair<std::uint64_t, int>, Judged>& units = units_;
  auto mark = [&](std::uint64_t comm, int rank) {
    auto it = units.find({comm, rank});
    if (it != units.end()) it->second.affected = true;
  };
  for (const Finding& f : out.findings) {
    if (f.kind == "channel_imbalance" || f.kind == "slow_hca" || f.kind == "hca_degraded") mark(f.comm, f.rank);
    if (f.kind == "slow_channel" && !f.every_rank)
      for (int r : f.ranks) mark(f.comm, r);
  }
  std::vector<Judged> judged;
  for (const auto& [k, u] : units) judged.push_back(u);
  for (const Concentration& k : concentrations(res, judged)) {
    Finding f;
    f.kind = "concentration";
    f.where = k.level + " " + k.where;
    f.host = k.level == "host" ? k.where : "";
    f.when = "whole run";
    f.magnitude = static_cast<double>(k.affected_here) / static_cast<double>(std::max(1, k.affected_total));
    f.evidence = k.text() + "; affected: the ranks of the channel and HCA findings above";
    out.findings.push_back(std::move(f));
  }
  return out;
}


AnomalyResult find_anomalies(const CollectSink& c, const ReadResult& res, const AnomalyOptions& o) {
  AnomalyAcc a(res, o);
  a.add(c);
  return a.finish();
}

Report anomalies_report(const AnomalyResult& r) {
  Report rep;
  Section& f = rep.add("findings", "Findings");
  f.table.columns = {"kind", "comm", "where", "when", "magnitude", "evidence"};
  for (const auto& x : r.findings)
    f.table.rows.push_back({x.kind, x.comm_label, x.where, x.when, Cell(x.magnitude, 2), x.evidence});
  f.notes.push_back("magnitude: x times the baseline (change_point, bimodal, slow_channel, slow_hca, hca_slow), a share of "
                    "the affected ranks (concentration), or a balance 0..1 (channel/hca imbalance)");
  Section& o = rep.add("outliers", "Worst single-op outliers (robust z of latency within comm/op/size)");
  o.table.columns = {"comm", "where", "when", "x_median", "evidence"};
  for (const auto& x : r.outliers)
    o.table.rows.push_back({x.comm_label, x.where, x.when, Cell(x.magnitude, 2), x.evidence});
  if (r.outlier_count == 0) o.notes.push_back("0 outlier ops");
  else o.notes.push_back(std::to_string(r.outlier_count) + " outlier ops in total, in " + std::to_string(r.outlier_instances) +
                    " collective instances (one row each, named by its slowest rank)" +
                    (r.outlier_ops_alone ? " and " + std::to_string(r.outlier_ops_alone) +
                                               " P2P ops or ops of an unknown rank (a row each)"
                                         : std::string()) +
                    (r.outliers_explained ? "; " + std::to_string(r.outliers_explained) +
                                                " of these inside a change_point window or in the slow mode of a bimodal "
                                                "group, listed after the others"
                                          : std::string()));
  if (!r.waited_for.empty()) {
    std::string line = "the rank the slow ranks may have waited for (the one rank not slow in a row), by process:";
    for (std::size_t i = 0; i < r.waited_for.size(); ++i) {
      const WaitedFor& w = r.waited_for[i];
      line += std::string(i ? ";" : "") + " " + w.process + " in " + std::to_string(w.rows) + (w.rows > 1 ? " rows" : " row") + " (";
      for (std::size_t j = 0; j < w.ranks.size(); ++j)
        line += (j ? ", " : "") + std::get<0>(w.ranks[j]) + " rank " + std::to_string(std::get<2>(w.ranks[j]));
      line += ")";
    }
    o.notes.push_back(line);
  }
  if (r.short_comms)
    f.notes.push_back(std::to_string(r.short_comms) + " communicators with fewer than " +
                      std::to_string(r.min_change_instances) +
                      " collective instances not searched for change points: too few for a baseline");
  if (r.slow_channel_samples || r.slow_channel_not_gpu)
    f.notes.push_back("slow_channel: " + std::to_string(r.slow_channel_samples) + " rank-ops measured on " +
                      std::to_string(r.slow_channel_comms) + " communicators" +
                      (r.slow_channel_unaligned ? ", " + std::to_string(r.slow_channel_unaligned) +
                                                      " of them the only rank of their instance in the logs (their wait "
                                                      "for the others could not be taken out)"
                                                : std::string()) +
                      (r.slow_channel_not_gpu ? "; " + std::to_string(r.slow_channel_not_gpu) +
                                                    " collectives with channel times not GPU-timed on every rank left out"
                                              : std::string()));
  if (r.hca_wire_ops || r.hca_no_wire_ops)
    f.notes.push_back(r.hca_wire_ops
                          ? std::to_string(r.hca_wire_ops) + " ops with per-HCA wire times (slow_hca); " +
                                std::to_string(r.hca_no_wire_ops) +
                                " with HCA traffic but none (socket transport, unfinished requests, or NCCL 2.27, "
                                "which tracks only the first channel of each proxy args)"
                          : std::to_string(r.hca_no_wire_ops) +
                                " ops with HCA traffic but no wire time: hca_slow is read from op durations, which "
                                "cannot tell a slow NIC from the ranks that waited for it");
  if (r.hca_implausible)
    f.notes.push_back(std::to_string(r.hca_implausible) +
                      " per-HCA wire times faster than any NIC (> 100 GB/s) left out: their QP events were not timed on "
                      "the wire (delivered back to back)");
  if (r.hca_alone)
    f.notes.push_back(std::to_string(r.hca_alone) +
                      " (comm, rank, HCA) with wire times but no other rank of their communicator in these logs: not "
                      "judged (slow_hca compares a NIC with the same device on the comm's other ranks)");
  if (r.sym_plan_heads)
    f.notes.push_back(std::to_string(r.sym_plan_heads) +
                      " heads of symmetric-kernel plans of several tasks not analysed: their kernel time is the "
                      "whole plan's (sym_plan_tasks)");
  if (r.no_duration)
    f.notes.push_back(std::to_string(r.no_duration) +
                      " ops without a duration (assembled from parts with no common GPU-timed start) not analysed");
  if (r.enqueue_timed)
    f.notes.push_back(std::to_string(r.enqueue_timed) +
                      " ops timed only by their enqueue (no GPU timer, or copy-engine collectives) not analysed: "
                      "their duration is the CPU's enqueue, not the op's");
  return rep;
}

// ---- the registered analysis

namespace {

// The trace's findings track of a finding's kind.
const char* track_of(const std::string& kind) {
  if (kind == "outlier") return "outliers";
  if (kind == "bimodal") return "bimodal latency";
  if (kind == "channel_imbalance") return "channel imbalance";
  return "HCA";
}

Marker marker_of(const Finding& f, bool outlier) {
  Marker m;
  m.kind = f.kind;
  m.comm_label = f.comm_label;
  m.where = f.where;
  m.when = f.when;
  m.evidence = f.evidence;
  m.magnitude = f.magnitude;
  m.comm = f.comm;
  m.rank = f.rank;
  m.start_ns = f.start_ns;
  m.end_ns = f.end_ns;
  m.window = f.kind == "change_point" && f.end_ns > f.start_ns;
  m.track = m.window ? "change points" : track_of(f.kind);
  m.chart = outlier ? Marker::Chart::kPoint : m.window ? Marker::Chart::kBand : Marker::Chart::kNone;
  // A culprit with no time of its own is marked at its rank's first op of the comm.
  m.at_first_op = (f.kind == "slow_hca" || f.kind == "slow_channel" || f.kind == "channel_imbalance") && f.rank >= 0 &&
                  f.comm != 0;
  return m;
}

class AnomaliesAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "anomalies"; }
  std::string_view help() const override {
    return "outliers, change points, bimodality, channel and HCA imbalance";
  }
  Input input() const override { return Input::kOpsDetail; }
  void options(std::vector<OptionSpec>& o) override {
    o.push_back({"--z", "robust z-score threshold for outliers", &opt_.z_threshold, true});
    o.push_back({"--top", "worst outliers to list", &opt_.top, true});
    o.push_back({"--shift", "change point: rolling median / baseline ratio", &opt_.shift_ratio, true});
    o.push_back({"--min-ch-balance", "channel imbalance: median ch_balance below this", &opt_.min_ch_balance, true});
    o.push_back({"--slow-channel-ratio", "slow channel: its time over the median channel's, the rank's wait taken out",
                 &opt_.slow_channel.ratio, true});
    o.push_back({"--slow-hca-ratio", "slow HCA: the other ranks' (and devices') send bandwidth over its own",
                 &opt_.slow_hca.ratio, true});
  }
  AnalysisResult run(const AnalysisInput& in) override { return result(find_anomalies(in.data, in.res, opt_)); }
  // Every finding but the HCA ones is one communicator's; those keep compact inputs (AnomalyAcc).
  Partition partition() const override { return Partition::kComm; }
  void run_part(const AnalysisInput& in) override {
    if (!acc_) acc_ = std::make_unique<AnomalyAcc>(in.res, opt_);
    acc_->add(in.data);
  }
  AnalysisResult finish_parts(const ReadResult& res) override {
    if (!acc_) acc_ = std::make_unique<AnomalyAcc>(res, opt_);
    AnomalyResult ar = acc_->finish();
    acc_.reset();  // the next run in parts starts afresh
    return result(std::move(ar));
  }

 private:
  static AnalysisResult result(AnomalyResult ar) {
    AnalysisResult r;
    r.report = anomalies_report(ar);
    for (const auto& f : ar.findings) r.markers.push_back(marker_of(f, false));
    for (const auto& f : ar.outliers) r.markers.push_back(marker_of(f, true));
    r.detail = std::move(ar);
    return r;
  }

 public:
  // The report shows its findings in the health section and on the busbw-over-time charts.
  bool tables_in_report() const override { return false; }

 private:
  AnomalyOptions opt_;
  std::unique_ptr<AnomalyAcc> acc_;
};

}  // namespace

std::unique_ptr<Analysis> make_anomalies_analysis() { return std::make_unique<AnomaliesAnalysis>(); }

}  // namespace ni::analysis
