#include "src/analysis/slow_hca.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "src/analysis/stats.h"

namespace ni::analysis {

namespace {

// Program order of one (comm, rank, device)'s ops: by seq when they are all
// one function (NCCL numbers each function's collectives on its own: no
// clock involved), else by its process's wall clock.
template <class Points>
bool order_points(Points& pts) {
  bool one_func = true;
  for (const auto& p : pts) one_func = one_func && p.func == pts.front().func;
  if (one_func)
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return std::tie(a.seq, a.t, a.gbs) < std::tie(b.seq, b.t, b.gbs); });
  else
    std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return std::tie(a.t, a.seq, a.gbs) < std::tie(b.t, b.seq, b.gbs); });
  return one_func;
}

// Medians of a series' bandwidth before and after a point of program order.
template <class Points, class P>
std::pair<double, double> split_medians(const Points& pts, bool by_seq, const P& at, std::size_t min_each) {
  std::vector<double> b, a;
  for (const auto& p : pts) {
    const bool before = by_seq ? (p.func == at.func && p.seq < at.seq) || (p.func != at.func && p.t < at.t) : p.t < at.t;
    (before ? b : a).push_back(p.gbs);
  }
  if (b.size() < min_each || a.size() < min_each) return {0.0, 0.0};
  return {median_of(b), median_of(a)};
}

template <class Series, class Files>
void degradations(Series& series, const Files& file_of, const ReadResult& res, const SlowHcaOptions& o,
                  SlowHcaResult& out) {
  std::map<typename Series::key_type, bool> by_seq;
  for (auto& [k, pts] : series) by_seq[k] = order_points(pts);
  for (auto& [k, pts] : series) {
    const std::size_t n = pts.size();
    const std::size_t seg = std::max(o.min_segment, n / 4);
    if (n < 2 * seg) continue;
    // The split: where the most ops are above a level before it and below it
    // after (the peak of the running sum of signs) around a level halfway (in
    // log) between the series' 15th and 85th percentiles, which each op moves
    // by one whatever its size: a request stalled for 40 ms (a proxy thread
    // descheduled) weighs no more than any other, and the many near-equal
    // values of the faster part do not read as noise around a median.
    std::vector<double> sorted_g;
    for (const auto& p : pts) sorted_g.push_back(p.gbs);
    std::sort(sorted_g.begin(), sorted_g.end());
    const double m = std::sqrt(std::max(sorted_quantile(sorted_g, 0.15), 1e-9) * std::max(sorted_quantile(sorted_g, 0.85), 1e-9));
    std::vector<double> cum(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) cum[i + 1] = cum[i] + (pts[i].gbs > m ? 1.0 : pts[i].gbs < m ? -1.0 : 0.0);
    std::size_t best = 0;
    double best_drop = -1e300;
    for (std::size_t i = seg; i + seg <= n; ++i) {
      const double d = cum[i];  // ops above the level before i + ops below it from i on, up to a constant
      if (d > best_drop) {
        best_drop = d;
        best = i;
      }
    }
    if (best == 0) continue;
    std::vector<double> b, a;
    for (std::size_t i = 0; i < n; ++i) (i < best ? b : a).push_back(pts[i].gbs);
    std::sort(b.begin(), b.end());
    std::sort(a.begin(), a.end());
    const double mb = sorted_quantile(b, 0.5), ma = sorted_quantile(a, 0.5);
    // A step, not noise: the median fell by the ratio and most of the later
    // ops are below most of the earlier ones.
    if (!(ma * o.ratio < mb) || !(sorted_quantile(a, 0.75) < sorted_quantile(b, 0.25))) continue;
    // And it stays there: the last min_segment ops are as slow (a drop that
    // recovers is a window, which a passing load on its host also makes).
    std::vector<double> tail;
    for (std::size_t i = n - o.min_segment; i < n; ++i) tail.push_back(pts[i].gbs);
    if (!(median_of(tail) * o.ratio < mb)) continue;
    const auto& [comm, rank, dev] = k;
    const auto& at = pts[best];
    // The others over the same spans: the same device on the comm's other
    // ranks (else the fabric slowed), and this rank's other devices (else its
    // process or host did): neither may have fallen alike.
    std::vector<double> others_b, others_a, process_ratio;
    bool own_fell = false;
    const std::uint32_t file = file_of.at(k);
    for (const auto& [k2, p2] : series) {
      if (k2 == k) continue;
      const bool same_comm = std::get<0>(k2) == comm;
      const bool same_process = file_of.at(k2) == file;
      const bool same_dev_other_rank = same_comm && std::get<1>(k2) != rank && std::get<2>(k2) == dev;
      const bool own_other_dev = same_comm && std::get<1>(k2) == rank;
      if (!same_dev_other_rank && !own_other_dev && !same_process) continue;
      // Another comm's ops are split by time (its seq counts something else).
      const auto [x, y] = split_medians(p2, same_comm && by_seq[k2] && by_seq[k], at, o.min_ops);
      if (!(x > 0 && y > 0)) continue;
      if (same_dev_other_rank) {
        others_b.push_back(x);
        others_a.push_back(y);
      } else if (own_other_dev) {
        own_fell = own_fell || y * o.others_ratio < x;
      } else {
        process_ratio.push_back(x / y);
      }
    }
    if (own_fell || others_b.empty()) continue;  // its other devices fell too, or nothing to compare with
    // Its process's other ranks' HCAs (other comms) mostly fell as well: the
    // process or its host slowed (a CPU-bound phase descheduling the proxy).
    if (!process_ratio.empty() && median_of(process_ratio) > o.others_ratio) continue;
    const double omb = median_of(others_b), oma = median_of(others_a);
    if (oma * o.others_ratio < omb) continue;  // everyone slowed: the fabric, not this link
    HcaDegraded d;
    d.file = file_of.at(k);
    d.host = d.file < res.files.size() ? res.files[d.file].host : "";
    d.dev = dev;
    d.comm = comm;
    d.rank = rank;
    d.before_gbs = mb;
    d.after_gbs = ma;
    d.others_before = omb;
    d.others_after = oma;
    d.ops_before = best;
    d.ops_after = n - best;
    d.first_seq = at.seq;
    d.from_ns = at.t;
    out.degraded.push_back(std::move(d));
  }
}

}  // namespace

void collect_hca_series(const CollectSink& c, const SlowHcaOptions& o, HcaSeries& into) {
  for (std::size_t i = 0; i < c.ops.size() && i < c.extra.size(); ++i) {
    const Op& op = c.ops[i];
    if (c.extra[i].hcas.empty()) continue;
    bool wire = false;
    for (const HcaUse& h : c.extra[i].hcas) {
      if (!std::isfinite(h.wire_us) || h.bytes < o.min_bytes) continue;
      wire = true;
      const HcaSeries::Key k{op.comm_hash, op.rank, h.dev};
      const double g = static_cast<double>(h.bytes) / (h.wire_us * 1000.0);
      if (g > o.max_gbs) {
        ++into.implausible;
        continue;
      }
      into.series[k].push_back({op.has_start() ? op.start_wall_ns : 0, op.seq, static_cast<int>(op.func), g});
      into.file_of.emplace(k, op.file_idx);
    }
    ++(wire ? into.ops_with_wire : into.ops_without_wire);
  }
}

SlowHcaResult judge_slow_hcas(HcaSeries& s, const ReadResult& res, const SlowHcaOptions& o) {
  SlowHcaResult out;
  out.ops_with_wire = s.ops_with_wire;
  out.ops_without_wire = s.ops_without_wire;
  out.implausible = s.implausible;
  using Key = HcaSeries::Key;
  std::map<Key, double> med, q75;
  std::map<Key, std::size_t> nops;
  for (const auto& [k, pts] : s.series) {
    nops[k] = pts.size();
    if (pts.size() < o.min_ops) continue;
    std::vector<double> v;
    v.reserve(pts.size());
    for (const auto& p : pts) v.push_back(p.gbs);
    std::sort(v.begin(), v.end());
    med[k] = sorted_quantile(v, 0.5);
    q75[k] = sorted_quantile(v, 0.75);
  }
  out.measured = med.size();
  // Per (file, device): the NIC, over the comms it was measured in.
  std::map<std::pair<std::uint32_t, std::string>, SlowHca> found;
  for (const auto& [k, b] : med) {
    const auto& [comm, rank, dev] = k;
    std::vector<double> peers, own;
    for (const auto& [k2, b2] : med) {
      if (std::get<0>(k2) != comm) continue;
      if (std::get<1>(k2) != rank && std::get<2>(k2) == dev) peers.push_back(b2);
      if (std::get<1>(k2) == rank && std::get<2>(k2) != dev) own.push_back(b2);
    }
    if (peers.empty()) {  // nothing to compare with: a comm seen by one rank only
      ++out.alone;
      continue;
    }
    const double p = median_of(peers), w = own.empty() ? 0 : median_of(own);
    // Slow on most of its ops, not on half of them: its 75th percentile too is below the references by the
    // ratio (a thread descheduled now and then stretches some requests' wire time; a slow link all of them).
    const double hi = q75[k];
    if (!(b * o.ratio < p) || !(hi * o.ratio < p)) continue;
    if (!own.empty() && (!(b * o.ratio < w) || !(hi * o.ratio < w))) continue;
    const std::uint32_t file = s.file_of[k];
    SlowHca& f = found[{file, dev}];
    f.file = file;
    f.host = file < res.files.size() ? res.files[file].host : "";
    f.dev = dev;
    f.ops += nops[k];
    f.comm_ranks.emplace_back(comm, rank);
    // The comm where it was measured on the most ops gives the numbers.
    if (nops[k] * 2 > f.ops || f.gbs == 0) {
      f.gbs = b;
      f.peers_gbs = p;
      f.own_gbs = w;
      f.factor = p / b;
    }
  }
  for (auto& [k, f] : found) out.found.push_back(std::move(f));
  degradations(s.series, s.file_of, res, o, out);
  return out;
}

SlowHcaResult find_slow_hcas(const CollectSink& c, const ReadResult& res, const SlowHcaOptions& o) {
  HcaSeries s;
  collect_hca_series(c, o, s);
  return judge_slow_hcas(s, res, o);
}

}  // namespace ni::analysis
