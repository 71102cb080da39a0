#include "src/analysis/stragglers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <tuple>
#include <utility>
#include <numeric>

#include "src/analysis/analysis.h"
#include "src/analysis/op_sort.h"
#include "src/analysis/stats.h"
#include "src/analysis/view.h"

namespace ni::analysis {

std::string comm_display(std::uint64_t h, const ReadResult& res) {
  auto it = res.comm_names.find(h);
  const std::string hex = hex_hash(h);
  if (it == res.comm_names.end() || it->second.empty()) return hex;
  return it->second + " (" + hex + ")";
}

namespace {

// Timed by the GPU: kernel start to kernel end, waiting for the peers included.
bool gpu_kernel_timed(const Op& op) {
  return gpu_timed(op.timing) && std::isfinite(op.dur_us) && op.dur_us > 0;
}

}  // namespace

bool instance_lateness(const std::vector<Op>& ops, const std::vector<std::uint32_t>& idx, std::size_t b,
                       std::size_t e, std::vector<double>& late, bool* from_phases) {
  late.assign(e - b, kNaN);
  if (from_phases != nullptr) *from_phases = false;
  bool phases = true;
  for (std::size_t i = b; i < e; ++i) {
    if (!gpu_kernel_timed(ops[idx[i]])) return false;
    phases = phases && std::isfinite(ops[idx[i]].sync_us);
  }
  if (phases) {
    // Kernel phases (NCCL 2.31+): a channel waits in initial_sync until the
    // last peer's channel arrives, so the rank that waited longest came first
    // and each rank is (longest wait - its own) late; unlike the kernel time
    // this leaves out how long the transfer itself took on each rank.
    double mx = 0;
    for (std::size_t i = b; i < e; ++i) mx = std::max(mx, static_cast<double>(ops[idx[i]].sync_us));
    for (std::size_t i = b; i < e; ++i) late[i - b] = mx - static_cast<double>(ops[idx[i]].sync_us);
    if (from_phases != nullptr) *from_phases = true;
    return true;
  }
  // All ranks end together: arrival = end - kernel time, so the longest
  // kernel arrived first and each rank is (longest - its own) late.
  double mx = 0;
  for (std::size_t i = b; i < e; ++i) mx = std::max(mx, ops[idx[i]].dur_us);
  for (std::size_t i = b; i < e; ++i) late[i - b] = mx - ops[idx[i]].dur_us;
  return true;
}

namespace {

struct Acc {
  RankLateness r;
  double margin_sum = 0, margin_sq = 0, late_sum = 0;
  std::vector<double> end_resid;  // us: its end - the instance's median end
};
// What the aligned instances add up to, per (comm, rank) and per comm.
struct Alignment {
  std::map<std::pair<std::uint64_t, int>, Acc> acc;
  std::map<std::uint64_t, std::vector<double>> spreads;
  std::map<std::uint64_t, int> comm_nranks;
  std::vector<double> late, ends, tmp;  // scratch
  // The last instance's comm, its entries and its ranks' (the next instance of
  // the comm has the same ranks in the same order: no map lookup per op).
  std::uint64_t last_comm = 0;
  std::vector<double>* last_spreads = nullptr;
  int* last_nranks = nullptr;
  std::vector<std::pair<int, Acc*>> last_acc;
};

// One collective instance (comm, op, seq) seen on ranks idx[b, e), n >= 2:
// its start spread (clock-dependent), each rank's lateness and who came last
// (clock-free where GPU-timed), and each rank's end against the others' (its
// clock's offset).
void add_instance(const std::vector<Op>& ops, const std::vector<std::uint32_t>& idx, std::size_t b,
                  std::size_t e, const ReadResult& res, StragglerResult& out, Alignment& al) {
  const Op& first = ops[idx[b]];
  const std::size_t n = e - b;
  ++out.aligned;
  std::int64_t mn = INT64_MAX, mx = INT64_MIN;
  bool starts = true;
  for (std::size_t i = b; i < e; ++i) {
    starts = starts && ops[idx[i]].has_start();
    mn = std::min(mn, ops[idx[i]].start_wall_ns);
    mx = std::max(mx, ops[idx[i]].start_wall_ns);
  }
  if (al.last_spreads == nullptr || al.last_comm != first.comm_hash) {
    al.last_comm = first.comm_hash;
    al.last_spreads = &al.spreads[first.comm_hash];
    al.last_nranks = &al.comm_nranks[first.comm_hash];
    al.last_acc.clear();
  }
  if (starts) al.last_spreads->push_back(static_cast<double>(mx - mn) / 1000.0);
  int& cn = *al.last_nranks;
  cn = std::max(cn, std::max(first.nranks, static_cast<int>(n)));

  bool phases = false;
  const bool measured = instance_lateness(ops, idx, b, e, al.late, &phases);
  out.measured += measured;
  out.measured_by_phases += phases;
  std::size_t last = n, second = n;  // positions of the latest and next latest arrivals
  if (measured)
    for (std::size_t i = 0; i < n; ++i) {
      if (last == n || al.late[i] > al.late[last]) {
        second = last;
        last = i;
      } else if (second == n || al.late[i] > al.late[second]) {
        second = i;
      }
    }
  // Each rank's end on its own wall clock against the instance's median end.
  double median_end = kNaN;
  if (measured && starts) {
    al.ends.clear();
    for (std::size_t i = b; i < e; ++i)
      al.ends.push_back(static_cast<double>(ops[idx[i]].start_wall_ns - mn) / 1000.0 + ops[idx[i]].dur_us);
    al.tmp = al.ends;
    median_end = median_of(al.tmp);
  }
  for (std::size_t i = b; i < e; ++i) {
    const Op& op = ops[idx[i]];
    const std::size_t j = i - b;
    if (j >= al.last_acc.size()) al.last_acc.resize(j + 1, {-1, nullptr});
    if (al.last_acc[j].second == nullptr || al.last_acc[j].first != op.rank)
      al.last_acc[j] = {op.rank, &al.acc[{op.comm_hash, op.rank}]};
    Acc& a = *al.last_acc[j].second;
    if (a.r.nranks == 0) {
      a.r.comm = op.comm_hash;
      a.r.rank = op.rank;
      a.r.host = op.file_idx < res.files.size() ? res.files[op.file_idx].host : "";
      a.r.file = op.file_idx;
    }
    a.r.nranks = std::max(a.r.nranks, std::max(op.nranks, static_cast<int>(n)));
    if (std::isfinite(median_end)) a.end_resid.push_back(al.ends[i - b] - median_end);
    if (!measured) continue;
    ++a.r.ops;
    a.late_sum += al.late[i - b];
    if (i - b == last) {
      ++a.r.last;
      const double m = al.late[last] - al.late[second];
      a.margin_sum += m;
      a.margin_sq += m * m;
    }
  }
}

// Instances of each collective across ranks (sorted by comm, op, seq, rank).
void align_collectives(const std::vector<Op>& ops, const std::vector<std::uint32_t>& idx, const ReadResult& res,
                       StragglerResult& out, Alignment& al) {
  for (std::size_t b = 0; b < idx.size();) {
    std::size_t e = b + 1;
    const Op& first = ops[idx[b]];
    while (e < idx.size() && ops[idx[e]].comm_hash == first.comm_hash && ops[idx[e]].func == first.func &&
           ops[idx[e]].seq == first.seq)
      ++e;
    if (e - b < 2) ++out.single_rank;
    else add_instance(ops, idx, b, e, res, out, al);
    b = e;
  }
}

// Each rank's scores against chance (1/nranks), its clock offset and its flag (finish_stragglers orders them).
void score_ranks(Alignment& al, const StragglerOptions& o, StragglerResult& out) {
  for (auto& [key, a] : al.acc) {
    RankLateness r = a.r;
    if (r.ops != 0) {  // the host's instances measured, and how often its rank came last
      auto& h = out.hosts[r.host];
      h.first += r.last;
      h.second += r.ops;
    }
    r.mean_lateness_us = r.ops ? a.late_sum / static_cast<double>(r.ops) : 0;
    const double L = static_cast<double>(r.last);
    r.last_margin_us = r.last ? a.margin_sum / L : 0;
    r.margin_sd_us = r.last > 1 ? std::sqrt(std::max(0.0, (a.margin_sq - L * r.last_margin_us * r.last_margin_us) / (L - 1))) : 0;
    const double p = 1.0 / std::max(2, r.nranks);
    const double N = static_cast<double>(r.ops);
    r.z = N > 0 ? (L - N * p) / std::sqrt(N * p * (1 - p)) : 0;
    const double frac = N > 0 ? L / N : 0;
    r.flagged = r.z > 4 && frac >= o.min_last_fraction && r.last_margin_us > o.threshold_us;
    if (!a.end_resid.empty()) {
      r.clock_samples = a.end_resid.size();
      r.clock_offset_us = median_of(a.end_resid);
      for (double& x : a.end_resid) x = std::fabs(x - r.clock_offset_us);
      r.clock_spread_us = std::round(1.4826 * median_of(a.end_resid) * 1000.0) / 1000.0;  // ns: no float noise
      a.end_resid = {};
    }
    out.ranks.push_back(std::move(r));
  }
}

// Per comm: the range of its ranks' clock offsets.
void comm_clocks(StragglerResult& out) {
  std::map<std::uint64_t, std::pair<const RankLateness*, const RankLateness*>> ext;  // comm -> (ahead, behind)
  std::map<std::uint64_t, CommClock> m;
  for (const auto& r : out.ranks) {
    if (r.clock_samples == 0) continue;
    auto& [hi, lo] = ext[r.comm];
    if (hi == nullptr || r.clock_offset_us > hi->clock_offset_us) hi = &r;
    if (lo == nullptr || r.clock_offset_us < lo->clock_offset_us) lo = &r;
    CommClock& c = m[r.comm];
    ++c.ranks;
    c.spread_us = std::max(c.spread_us, r.clock_spread_us);
  }
  for (auto& [comm, c] : m) {
    const auto [hi, lo] = ext[comm];
    c.comm = comm;
    c.range_us = hi->clock_offset_us - lo->clock_offset_us;
    c.ahead_rank = hi->rank;
    c.ahead_host = hi->host;
    c.behind_rank = lo->rank;
    c.behind_host = lo->host;
    out.clocks.push_back(std::move(c));
  }
}

// Start skew per communicator: percentiles and a histogram of the instances' spreads.
void comm_skews(Alignment& al, const StragglerOptions& o, StragglerResult& out) {
  for (auto& [comm, v] : al.spreads) {
    std::sort(v.begin(), v.end());
    CommSkew s;
    s.comm = comm;
    s.nranks = al.comm_nranks[comm];
    s.instances = v.size();
    s.p50 = sorted_quantile(v, 0.5);
    s.p90 = sorted_quantile(v, 0.9);
    s.p99 = sorted_quantile(v, 0.99);
    s.max = v.back();
    s.hist.assign(6, 0);
    std::size_t over = 0;
    for (double x : v) {
      over += x > o.threshold_us;
      const int bk = x < 1 ? 0 : x < 5 ? 1 : x < 20 ? 2 : x < 100 ? 3 : x < 1000 ? 4 : 5;
      ++s.hist[static_cast<std::size_t>(bk)];
    }
    s.frac_over = static_cast<double>(over) / static_cast<double>(v.size());
    out.comms.push_back(std::move(s));
  }
}

void p2p_skews(const std::vector<Op>& ops, const std::vector<std::uint32_t>& p2p, StragglerResult& out) {
  // P2P: the k-th send from r to p pairs with the k-th recv on p from r (seq is the per-peer counter).
  std::map<std::tuple<std::uint64_t, int, int, std::uint64_t>, std::pair<std::int64_t, std::int64_t>> pairs;
  for (std::uint32_t i : p2p) {
    const Op& op = ops[i];
    if (op.func == Func::kSend) {
      auto& pr = pairs[{op.comm_hash, op.rank, op.peer, op.seq}];
      pr.first = op.start_wall_ns;
    } else if (op.func == Func::kRecv) {
      auto& pr = pairs[{op.comm_hash, op.peer, op.rank, op.seq}];
      pr.second = op.start_wall_ns;
    }
  }
  std::map<std::tuple<std::uint64_t, int, int>, std::vector<double>> skews;
  for (const auto& [k, v] : pairs)
    if (v.first && v.second)
      skews[{std::get<0>(k), std::get<1>(k), std::get<2>(k)}].push_back(static_cast<double>(v.second - v.first) / 1000.0);
  for (auto& [k, v] : skews) {
    P2pSkew s;
    s.comm = std::get<0>(k);
    s.sender = std::get<1>(k);
    s.receiver = std::get<2>(k);
    s.pairs = v.size();
    std::vector<double> c = v;
    s.p50_us = median_of(c);
    for (double& x : v) x = std::fabs(x);
    std::sort(v.begin(), v.end());
    s.p90_abs_us = sorted_quantile(v, 0.9);
    out.p2p.push_back(s);
  }
}

}  // namespace

StragglerResult find_stragglers_part(const std::vector<Op>& ops, const ReadResult& res, const StragglerOptions& o) {
  StragglerResult out;
  std::vector<std::uint32_t> idx;
  std::vector<std::uint32_t> p2p;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (!op.has_start()) ++out.no_start;
    if (op.kind == OpKind::kColl && (op.comm_hash == 0 || op.rank < 0)) ++out.no_identity;
    else if (op.kind == OpKind::kColl) idx.push_back(static_cast<std::uint32_t>(i));
    else if (op.kind == OpKind::kP2p && op.has_start()) p2p.push_back(static_cast<std::uint32_t>(i));
  }
  // By (comm, func, seq, rank), then file, then position: ops of one rank
  // with one seq (graph replays) keep their log order, whatever order the
  // files were read in. Sorted as packed keys, not through the index (a third
  // of the time of a large input went to the indirect compares).
  {
    struct Key {
      std::uint64_t comm, seq;
      std::uint32_t rank, file, i;
      std::uint8_t func;
    };
    sort_op_indices(
        ops, idx,
        [](const Op& op, std::uint32_t i) {
          return Key{op.comm_hash, op.seq, static_cast<std::uint32_t>(op.rank), op.file_idx, i,
                     static_cast<std::uint8_t>(op.func)};
        },
        [](const Key& a, const Key& b) {
          return std::tie(a.comm, a.func, a.seq, a.rank, a.file, a.i) < std::tie(b.comm, b.func, b.seq, b.rank, b.file, b.i);
        });
  }
  std::stable_sort(p2p.begin(), p2p.end(), [&](std::uint32_t a, std::uint32_t b) { return ops[a].file_idx < ops[b].file_idx; });
  Alignment al;
  align_collectives(ops, idx, res, out, al);
  score_ranks(al, o, out);
  comm_clocks(out);
  comm_skews(al, o, out);
  p2p_skews(ops, p2p, out);
  return out;
}

void merge_stragglers(StragglerResult& into, StragglerResult&& part) {
  auto append = [](auto& a, auto& b) { a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end())); };
  append(into.ranks, part.ranks);
  append(into.comms, part.comms);
  append(into.clocks, part.clocks);
  append(into.p2p, part.p2p);
  for (const auto& [host, v] : part.hosts) {
    auto& h = into.hosts[host];
    h.first += v.first;
    h.second += v.second;
  }
  into.aligned += part.aligned;
  into.single_rank += part.single_rank;
  into.no_start += part.no_start;
  into.measured += part.measured;
  into.measured_by_phases += part.measured_by_phases;
  into.no_identity += part.no_identity;
}

void finish_stragglers(StragglerResult& r, const ReadResult& res) {
  // Flagged first, then by how much lateness each rank caused (last x margin);
  // ties by comm and rank, so that the order does not depend on the batches.
  std::sort(r.ranks.begin(), r.ranks.end(), [](const RankLateness& a, const RankLateness& b) {
    if (a.flagged != b.flagged) return a.flagged;
    const double ka = a.last_margin_us * static_cast<double>(a.last), kb = b.last_margin_us * static_cast<double>(b.last);
    if (ka != kb) return ka > kb;
    return std::tie(a.comm, a.rank) < std::tie(b.comm, b.rank);
  });
  std::sort(r.comms.begin(), r.comms.end(), [](const CommSkew& a, const CommSkew& b) { return a.comm < b.comm; });
  std::sort(r.clocks.begin(), r.clocks.end(), [](const CommClock& a, const CommClock& b) { return a.comm < b.comm; });
  std::sort(r.p2p.begin(), r.p2p.end(), [](const P2pSkew& a, const P2pSkew& b) {
    return std::tie(a.comm, a.sender, a.receiver) < std::tie(b.comm, b.sender, b.receiver);
  });
  std::vector<Judged> units;
  for (const auto& k : r.ranks)
    if (k.ops != 0) units.push_back({k.file, k.flagged});
  r.where = concentrations(res, units);
  const RankProcesses procs(res);
  std::map<std::tuple<std::string, std::int64_t, int>, LateProcess> by;
  for (const auto& k : r.ranks)
    if (k.flagged)
      if (const RankProcesses::Process* p = procs.of(k.comm, k.rank)) {
        LateProcess& lp = by[p->key];
        lp.process = p->label;
        lp.ranks.emplace_back(k.comm, k.rank);
      }
  r.late_processes.clear();
  for (auto& [key, lp] : by) {
    std::sort(lp.ranks.begin(), lp.ranks.end());
    r.late_processes.push_back(std::move(lp));
  }
  std::stable_sort(r.late_processes.begin(), r.late_processes.end(),
                   [](const LateProcess& a, const LateProcess& b) { return a.ranks.size() > b.ranks.size(); });
}

StragglerResult find_stragglers(const std::vector<Op>& ops, const ReadResult& res, const StragglerOptions& o) {
  StragglerResult out = find_stragglers_part(ops, res, o);
  finish_stragglers(out, res);
  return out;
}

ClockCalibration calibrate_clocks(const StragglerResult& r) {
  ClockCalibration cal;
  cal.comms_measured = r.clocks.size();
  std::map<std::uint64_t, double> least;  // comm -> least offset (us)
  for (const CommClock& c : r.clocks) {
    if (c.ranks < 2 || c.range_us <= ClockCalibration::kMinCorrectionUs || c.range_us <= 3 * c.spread_us) continue;
    least[c.comm] = kNaN;
    cal.comms.push_back(c);
  }
  for (const auto& k : r.ranks) {
    auto it = least.find(k.comm);
    if (it != least.end() && k.clock_samples > 0 && !(it->second <= k.clock_offset_us)) it->second = k.clock_offset_us;
  }
  for (const auto& k : r.ranks) {
    auto it = least.find(k.comm);
    if (it == least.end() || k.clock_samples == 0) continue;
    cal.shift_ns[{k.comm, k.rank}] = std::llround((k.clock_offset_us - it->second) * 1000.0);
  }
  return cal;
}

bool calibrate_part(std::vector<Op>& ops, const ReadResult& res, ClockCalibration& into, StragglerResult& logged) {
  logged = find_stragglers_part(ops, res, {});
  ClockCalibration part = calibrate_clocks(logged);  // its comms in order: a part's clocks come from a map
  apply_clock_calibration(part, ops);
  const bool none = std::all_of(part.shift_ns.begin(), part.shift_ns.end(), [](const auto& s) { return s.second == 0; });
  into.comms_measured += part.comms_measured;
  into.shift_ns.merge(part.shift_ns);
  // As finish_stragglers orders the comms' clocks.
  const auto mid = into.comms.insert(into.comms.end(), part.comms.begin(), part.comms.end());
  std::inplace_merge(into.comms.begin(), mid, into.comms.end(),
                     [](const CommClock& a, const CommClock& b) { return a.comm < b.comm; });
  return none;
}

void apply_clock_calibration(const ClockCalibration& c, std::vector<Op>& ops) {
  if (c.shift_ns.empty()) return;
  // A rank's ops come in runs: its shift is looked up once per run.
  std::pair<std::uint64_t, int> last{0, -1};
  std::int64_t shift = 0;
  bool first = true;
  for (Op& op : ops) {
    if (!op.has_start()) continue;
    if (first || op.comm_hash != last.first || op.rank != last.second) {
      first = false;
      last = {op.comm_hash, op.rank};
      auto it = c.shift_ns.find(last);
      shift = it != c.shift_ns.end() ? it->second : 0;
    }
    op.start_wall_ns -= shift;
  }
}

Report stragglers_report(const StragglerResult& r, const ReadResult& res, const StragglerOptions& o) {
  Report rep;
  Section& f = rep.add("stragglers", "Late ranks (flagged first)");
  f.table.columns = {"comm", "rank", "host", "ops", "last", "last_pct", "chance_pct", "z", "margin_when_last_us",
                     "margin_sd_us", "mean_lateness_us", "clock_offset_us", "flagged"};
  std::size_t shown = 0;
  for (const auto& k : r.ranks) {
    if (!k.flagged && shown >= 20) break;
    ++shown;
    const double ops = static_cast<double>(std::max<std::uint64_t>(1, k.ops));
    f.table.rows.push_back({comm_display(k.comm, res), k.rank, k.host, k.ops, k.last,
                            Cell(k.ops ? 100.0 * static_cast<double>(k.last) / ops : kNaN, 1),
                            Cell(100.0 / std::max(2, k.nranks), 1), Cell(k.ops ? k.z : kNaN, 1),
                            Cell(k.last ? k.last_margin_us : kNaN, 2), Cell(k.last > 1 ? k.margin_sd_us : kNaN, 2),
                            Cell(k.ops ? k.mean_lateness_us : kNaN, 2),
                            Cell(k.clock_offset_us, 1), k.flagged ? "LATE" : ""});
  }
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "LATE: last far more often than chance (binomial z > 4 against 1/nranks), in >= %.0f%% of its ops, "
                "by > %.1f us on average (--threshold-us)",
                100 * o.min_last_fraction, o.threshold_us);
  f.notes.push_back(buf);
  if (!r.late_processes.empty()) {
    std::string line = "LATE ranks by process (and GPU, where the comm records name it):";
    for (std::size_t i = 0; i < r.late_processes.size(); ++i) {
      const LateProcess& lp = r.late_processes[i];
      line += std::string(i ? ";" : "") + " " + lp.process + " (";
      for (std::size_t j = 0; j < lp.ranks.size(); ++j)
        line += (j ? ", " : "") + comm_display(lp.ranks[j].first, res) + " rank " + std::to_string(lp.ranks[j].second);
      line += ")";
    }
    f.notes.push_back(line);
  }
  f.notes.push_back("arrival without clocks: the ranks of a collective end together, so a rank's GPU kernel time is "
                    "the common end minus its arrival; the late rank has the shortest kernel and its margin is the "
                    "next shortest kernel time minus its own. Only instances GPU-timed on every rank are measured "
                    "(a CPU-timed start is when a CPU saw the op, not when the rank arrived)");
  if (r.measured_by_phases > 0)
    f.notes.push_back(std::to_string(r.measured_by_phases) + " of the measured instances had kernel phases on every "
                      "rank (NCCL 2.31+, NCCL_INSPECTOR_ENABLE_PHASES=1): their arrivals come from the ranks' "
                      "initial_sync instead (the median channel's wait for its peers: the longest wait arrived "
                      "first, each rank is that wait minus its own late), which leaves out the transfer's own time");
  f.notes.push_back("clock_offset_us: median of its kernel end minus the instance's median end, on the wall clock "
                    "of each process (+ = its times run ahead); what the start skew below is off by");
  f.notes.push_back(std::to_string(r.aligned) + " aligned collectives, " + std::to_string(r.measured) +
                    " of them GPU-timed on every rank (measured), " + std::to_string(r.aligned - r.measured) +
                    " not; " + std::to_string(r.single_rank) + " seen on one rank only; " +
                    std::to_string(r.no_identity) +
                    " collectives without communicator hash or rank (profiler ABI v1-v3): not aligned; " +
                    std::to_string(r.no_start) + " ops without start time");
  if (!r.where.empty()) {
    Section& w = rep.add("where", "Where the late ranks are");
    w.table.columns = {"level", "where", "affected", "of_affected", "measured_there", "of_measured", "chance", "hosts"};
    for (const auto& c : r.where) {
      std::string hs;
      for (const auto& x : c.hosts) hs += (hs.empty() ? "" : " ") + x;
      w.table.rows.push_back({c.level, c.where, c.affected_here, c.affected_total, c.measured_here, c.measured_total,
                              Cell(c.p_chance, 4), hs});
    }
    w.notes.push_back("LATE (comm, rank)s, by host and by rack" +
                      (res.racks_from.empty() ? std::string() : " (racks from " + res.racks_from + ")") +
                      ": shown where >= 75% of them are and chance (hypergeometric) explains it with < 1% "
                      "probability");
  }
  Section& h = rep.add("hosts", "Hosts");
  h.table.columns = {"host", "instances", "last", "last_pct", "flagged_ranks"};
  for (const auto& [host, v] : r.hosts) {
    std::string fl;
    for (const auto& k : r.ranks)
      if (k.flagged && k.host == host) fl += (fl.empty() ? "" : " ") + std::to_string(k.rank);
    h.table.rows.push_back({host, v.second, v.first,
                            Cell(100.0 * static_cast<double>(v.first) / static_cast<double>(std::max<std::uint64_t>(1, v.second)), 1), fl});
  }
  if (!r.clocks.empty()) {
    Section& c = rep.add("clocks", "Clock agreement per communicator (from the collectives' common end)");
    c.table.columns = {"comm", "ranks", "offset_range_us", "uncertainty_us", "most_ahead", "most_behind"};
    for (const auto& x : r.clocks)
      c.table.rows.push_back({comm_display(x.comm, res), x.ranks, Cell(x.range_us, 1), Cell(x.spread_us, 1),
                              "rank " + std::to_string(x.ahead_rank) + " on " + x.ahead_host,
                              "rank " + std::to_string(x.behind_rank) + " on " + x.behind_host});
    c.notes.push_back("offset_range_us: how far apart the ranks' wall clocks are (largest minus smallest rank offset); "
                      "start-time skews and trace positions across these ranks are off by up to that much. "
                      "uncertainty_us: the largest per-rank scatter (1.4826 x MAD) of those offsets");
  }
  Section& s = rep.add("skew", "Start skew per communicator (max - min kernel start, on the ranks' own clocks)");
  s.table.columns = {"comm", "nranks", "instances", "p50_us", "p90_us", "p99_us", "max_us", "over_threshold_pct",
                     "<1us", "1-5us", "5-20us", "20-100us", "0.1-1ms", ">=1ms"};
  for (const auto& c : r.comms) {
    std::vector<Cell> row = {comm_display(c.comm, res), c.nranks, c.instances, Cell(c.p50, 2), Cell(c.p90, 2),
                             Cell(c.p99, 2), Cell(c.max, 2), Cell(100 * c.frac_over, 1)};
    for (auto x : c.hist) row.push_back(x);
    s.table.rows.push_back(std::move(row));
  }
  if (!r.p2p.empty()) {
    Section& p = rep.add("p2p", "P2P send/recv start skew (recv start - send start)");
    p.table.columns = {"comm", "sender", "receiver", "pairs", "p50_us", "p90_abs_us"};
    for (const auto& x : r.p2p)
      p.table.rows.push_back({comm_display(x.comm, res), x.sender, x.receiver, x.pairs, Cell(x.p50_us, 2),
                              Cell(x.p90_abs_us, 2)});
  }
  return rep;
}

// ---- the registered analysis

namespace {

// Late ranks: findings for the report's table and markers on the trace.
std::vector<Marker> straggler_markers(const StragglerResult& sr, const ReadResult& res) {
  std::vector<Marker> v;
  for (const auto& rl : sr.ranks) {
    if (!rl.flagged) continue;
    Marker m;
    m.kind = "straggler";
    m.comm_label = comm_display(rl.comm, res);
    m.where = "rank " + std::to_string(rl.rank) + " on " + rl.host;
    m.magnitude = rl.mean_lateness_us;
    char ev[300];
    std::snprintf(ev, sizeof ev,
                  "last in %llu of %llu instances (z %.1f, chance %.0f%%), by %.1f +- %.1f us on average "
                  "(from kernel times: no clocks involved)",
                  static_cast<unsigned long long>(rl.last), static_cast<unsigned long long>(rl.ops), rl.z,
                  100.0 / std::max(2, rl.nranks), rl.last_margin_us, rl.margin_sd_us);
    m.evidence = ev;
    m.in_trace = true;
    m.track = "stragglers";
    m.comm = rl.comm;
    m.rank = rl.rank;
    m.at_first_op = true;
    char b[256];
    std::snprintf(b, sizeof b, "straggler: rank %d of %s last in %.0f%% (+%.1f us)", rl.rank,
                  comm_short(rl.comm, res).c_str(),
                  100.0 * static_cast<double>(rl.last) / static_cast<double>(std::max<std::uint64_t>(1, rl.ops)),
                  rl.last_margin_us);
    m.trace_name = b;
    char a[256];
    std::snprintf(a, sizeof a, "\"comm\":\"%s\",\"rank\":%d,\"last\":%llu,\"ops\":%llu,\"z\":%.1f,\"mean_lateness_us\":%.2f",
                  hex_hash(rl.comm).c_str(), rl.rank, static_cast<unsigned long long>(rl.last),
                  static_cast<unsigned long long>(rl.ops), rl.z, rl.mean_lateness_us);
    m.trace_args = a;
    v.push_back(std::move(m));
  }
  for (const auto& c : sr.where) {
    Marker m;
    m.kind = "late_" + c.level;
    m.where = c.level + " " + c.where;
    m.magnitude = static_cast<double>(c.affected_here) / static_cast<double>(std::max(1, c.affected_total));
    m.evidence = c.text();
    m.in_trace = false;  // a place, not a time
    v.push_back(std::move(m));
  }
  return v;
}

class StragglersAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "stragglers"; }
  std::string_view help() const override { return "late ranks/hosts (clock-free), clock agreement and start skew"; }
  Input input() const override { return Input::kOps; }
  void options(std::vector<OptionSpec>& o) override {
    o.push_back({"--threshold-us", "mean margin (us) a rank must be last by to be LATE (NPKit: 5 us)", &opt_.threshold_us, true});
    o.push_back({"--min-last-fraction", "flag a rank last in at least this fraction of its ops",
                 &opt_.min_last_fraction, true});
  }
  AnalysisResult run(const AnalysisInput& in) override {
    return result(find_stragglers(in.data.ops, in.res, opt_), in.res);
  }
  // Every instance is one communicator's: the analysis runs on batches of whole ones.
  Partition partition() const override { return Partition::kComm; }
  void run_part(const AnalysisInput& in) override {
    const bool defaults = opt_.threshold_us == StragglerOptions{}.threshold_us &&
                          opt_.min_last_fraction == StragglerOptions{}.min_last_fraction;
    merge_stragglers(parts_, in.stragglers != nullptr && defaults ? StragglerResult(*in.stragglers)
                                                                 : find_stragglers_part(in.data.ops, in.res, opt_));
  }
  AnalysisResult finish_parts(const ReadResult& res) override {
    StragglerResult sr = std::exchange(parts_, {});  // the next run in parts starts afresh
    finish_stragglers(sr, res);
    return result(std::move(sr), res);
  }
  // The report draws its own stragglers section (a heatmap and the ranks by lateness).
  bool tables_in_report() const override { return false; }

 private:
  AnalysisResult result(StragglerResult sr, const ReadResult& res) const {
    AnalysisResult r;
    r.report = stragglers_report(sr, res, opt_);
    r.markers = straggler_markers(sr, res);
    r.detail = std::move(sr);
    return r;
  }
  StragglerOptions opt_;
  StragglerResult parts_;
};

}  // namespace

std::unique_ptr<Analysis> make_stragglers_analysis() { return std::make_unique<StragglersAnalysis>(); }

}  // namespace ni::analysis
