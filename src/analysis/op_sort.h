// Sorting a batch's ops by a key that starts with
// (communicator, function): what the cross-rank analyses do to line up a
// collective's ranks (stragglers, anomalies' instances, the report's lateness).
//
// Ops come file after file (one file: one rank), and within a file the ops of
// one (communicator, function) are already in seq order. So the keys of a
// (comm, func) are a few sorted runs, about one per rank, and merging those
// runs takes log2(runs) passes where a comparison sort takes log2(n): a stable
// counting pass puts each (comm, func) together, then each group's runs are
// merged pairwise. The result is the one std::sort gives with the same order,
// whatever the input order (short runs only make it slower: past a run per 16
// keys a group is handed to std::sort). Keys are trivially copyable structs.
// rank_positions() places each op in its own rank's sequence the same way.
#ifndef NI_ANALYSIS_OP_SORT_H_
#define NI_ANALYSIS_OP_SORT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace ni::analysis {

namespace op_sort_detail {

// The (comm, func) groups of a batch: a handful to a few thousand; an open
// addressing table (a lookup per key: std::unordered_map's nodes cost more
// than the sort saves).
class GroupTable {
 public:
  std::uint32_t id(std::uint64_t comm, unsigned func) {
    if (used_ * 2 >= slots_.size()) grow();
    std::size_t s = slot_of(comm, func);
    for (;; s = (s + 1) & (slots_.size() - 1)) {
      Slot& x = slots_[s];
      if (x.func1 == 0) {
        x = {comm, func + 1, static_cast<std::uint32_t>(groups_.size())};
        groups_.push_back({comm, func});
        ++used_;
        return x.id;
      }
      if (x.comm == comm && x.func1 == func + 1) return x.id;
    }
  }
  const std::vector<std::pair<std::uint64_t, unsigned>>& groups() const { return groups_; }

 private:
  struct Slot {
    std::uint64_t comm = 0;
    unsigned func1 = 0;  // func + 1; 0: empty
    std::uint32_t id = 0;
  };
  std::size_t slot_of(std::uint64_t comm, unsigned func) const {
    const std::uint64_t h = (comm ^ (static_cast<std::uint64_t>(func) << 56)) * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h >> 32) & (slots_.size() - 1);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    for (const Slot& x : old)
      if (x.func1 != 0) {
        std::size_t s = slot_of(x.comm, x.func1 - 1);
        while (slots_[s].func1 != 0) s = (s + 1) & (slots_.size() - 1);
        slots_[s] = x;
      }
  }
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
  std::vector<std::pair<std::uint64_t, unsigned>> groups_;
};

}  // namespace op_sort_detail

// Puts idx (indices into ops) in the order of their ops' keys: make(op, i)
// gives op i's key, a struct with members `comm`, `func` (the op's) and `i`;
// `less` is a strict total order on keys (no two equal: end it with i) that
// orders by comm, then by func as an unsigned number, before anything else.
// Holds the keys once (in the order they end in) and a buffer the size of
// the largest (comm, func) group, where a sort in place holds the keys once.
template <class Op, class Make, class Less>
void sort_op_indices(const std::vector<Op>& ops, std::vector<std::uint32_t>& idx, Make make, Less less) {
  using Key = decltype(make(ops[0], std::uint32_t{0}));
  const std::size_t n = idx.size();
  if (n < 2) return;
  op_sort_detail::GroupTable table;
  std::vector<std::uint32_t> gid(n);
  {
    std::uint64_t last_comm = ops[idx[0]].comm_hash;
    auto last_func = static_cast<unsigned>(ops[idx[0]].func);
    std::uint32_t last = table.id(last_comm, last_func);
    for (std::size_t k = 0; k < n; ++k) {
      const auto& op = ops[idx[k]];
      const auto func = static_cast<unsigned>(op.func);
      if (op.comm_hash != last_comm || func != last_func) {
        last_comm = op.comm_hash;
        last_func = func;
        last = table.id(last_comm, last_func);
      }
      gid[k] = last;
    }
  }
  // The groups in (comm, func) order, and where each starts.
  const auto& groups = table.groups();
  std::vector<std::uint32_t> order(groups.size());
  for (std::uint32_t g = 0; g < order.size(); ++g) order[g] = g;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return groups[a] < groups[b]; });
  std::vector<std::size_t> count(groups.size(), 0), begin(groups.size(), 0);
  for (std::uint32_t g : gid) ++count[g];
  std::size_t at = 0, largest = 0;
  for (std::uint32_t g : order) {
    begin[g] = at;
    at += count[g];
    largest = std::max(largest, count[g]);
  }
  // The keys, each group's together in input order (so its runs stay runs).
  std::vector<Key> keys(n);
  {
    std::vector<std::size_t> next = begin;
    for (std::size_t k = 0; k < n; ++k) keys[next[gid[k]]++] = make(ops[idx[k]], idx[k]);
  }
  gid = {};
  // Each group: its runs merged pairwise, between keys and a buffer.
  std::vector<Key> buf(largest);
  std::vector<std::size_t> runs, merged;
  for (std::uint32_t g : order) {
    Key* const grp = keys.data() + begin[g];
    const std::size_t len = count[g];
    runs.clear();
    runs.push_back(0);
    for (std::size_t i = 1; i < len; ++i)
      if (less(grp[i], grp[i - 1])) runs.push_back(i);
    runs.push_back(len);
    if (runs.size() - 1 > 1 && (runs.size() - 1) * 16 > len) {
      std::sort(grp, grp + len, less);
      continue;
    }
    Key* src = grp;
    Key* dst = buf.data();
    while (runs.size() > 2) {
      merged.clear();
      std::size_t r = 0;
      for (; r + 2 < runs.size(); r += 2) {
        std::merge(src + runs[r], src + runs[r + 1], src + runs[r + 1], src + runs[r + 2], dst + runs[r], less);
        merged.push_back(runs[r]);
      }
      if (r + 2 == runs.size()) {  // an odd run out: carried over as it is
        std::copy(src + runs[r], src + runs[r + 1], dst + runs[r]);
        merged.push_back(runs[r]);
      }
      merged.push_back(len);
      runs.swap(merged);
      std::swap(src, dst);
    }
    if (src != grp) std::copy(src, src + len, grp);
  }
  for (std::size_t k = 0; k < n; ++k) idx[k] = keys[k].i;
}

namespace op_sort_detail {

// (start, k) pairs of one rank's ops of one communicator, in k order: one
// sorted run per function when the ops come in (comm, func, seq) order, as a
// rank starts its collectives of one function in seq order. Sorted with a merge
// of those runs; over 8 runs (a clock that jitters) go to std::sort.
inline void sort_starts(std::vector<std::pair<std::int64_t, std::uint32_t>>& v) {
  std::size_t runs = 1;
  for (std::size_t i = 1; i < v.size(); ++i) runs += v[i] < v[i - 1];
  if (runs == 1) return;
  if (runs > 8) {
    std::sort(v.begin(), v.end());
    return;
  }
  for (std::size_t sorted = 1; sorted < v.size();) {  // [0, sorted) is sorted: merge the next run in
    std::size_t e = sorted + 1;
    while (e < v.size() && !(v[e] < v[e - 1])) ++e;
    std::inplace_merge(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(sorted),
                       v.begin() + static_cast<std::ptrdiff_t>(e));
    sorted = e;
  }
}

}  // namespace op_sort_detail

// Each op's place in its rank's own sequence of its communicator's ops, by
// that rank's start times: pos[k] (from 1) is op idx[k]'s position among the
// ops idx[j] of its (comm_hash, rank) ordered by (start_wall_ns, j); 0 for an
// op without a start (has_start()). idx holds each communicator's ops together
// (anomalies' instances: (comm, func, seq) order). What sorting all of them by
// (comm, rank, start, j) gives, without the comparison sort (≈ 4 % of
// `report`'s time at scale): within a communicator, one pass copies each op's
// rank and start in idx order (the only reads of ops), a counting pass buckets
// them by rank (a communicator's ranks are 0..nranks-1; ranks too sparse to
// count are sorted instead), and each rank's starts are merged from their runs.
template <class Op>
void rank_positions(const std::vector<Op>& ops, const std::vector<std::uint32_t>& idx, std::vector<std::uint32_t>& pos) {
  pos.assign(idx.size(), 0);
  struct RankStart {
    std::int64_t start;
    std::int32_t rank;
    std::uint32_t k;
  };
  std::vector<RankStart> seg;
  std::vector<std::uint32_t> first, next, by_rank;  // by_rank: places in seg
  std::vector<std::pair<std::int64_t, std::uint32_t>> starts;
  for (std::size_t b = 0, e; b < idx.size(); b = e) {
    const std::uint64_t comm = ops[idx[b]].comm_hash;
    seg.clear();
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (e = b; e < idx.size() && ops[idx[e]].comm_hash == comm; ++e)
      if (const Op& op = ops[idx[e]]; op.has_start()) {
        seg.push_back({op.start_wall_ns, op.rank, static_cast<std::uint32_t>(e)});
        lo = std::min<std::int64_t>(lo, op.rank);
        hi = std::max<std::int64_t>(hi, op.rank);
      }
    if (seg.empty()) continue;
    const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
    if (span > 4 * seg.size() + 64) {  // sparse ranks: one sort by (rank, start, k)
      std::sort(seg.begin(), seg.end(), [](const RankStart& x, const RankStart& y) {
        return std::tie(x.rank, x.start, x.k) < std::tie(y.rank, y.start, y.k);
      });
      std::uint32_t at = 0;
      for (std::size_t j = 0; j < seg.size(); ++j) {
        if (j > 0 && seg[j].rank != seg[j - 1].rank) at = 0;
        pos[seg[j].k] = ++at;
      }
      continue;
    }
    // first[r] .. first[r + 1]: rank lo + r's ops, in k order.
    first.assign(static_cast<std::size_t>(span) + 1, 0);
    for (const RankStart& x : seg) ++first[static_cast<std::size_t>(x.rank - lo) + 1];
    for (std::size_t r = 1; r <= span; ++r) first[r] += first[r - 1];
    next.assign(first.begin(), first.end() - 1);
    by_rank.resize(seg.size());
    for (std::uint32_t j = 0; j < seg.size(); ++j) by_rank[next[static_cast<std::size_t>(seg[j].rank - lo)]++] = j;
    for (std::size_t r = 0; r < span; ++r) {
      starts.clear();
      for (std::uint32_t j = first[r]; j < first[r + 1]; ++j) starts.emplace_back(seg[by_rank[j]].start, seg[by_rank[j]].k);
      op_sort_detail::sort_starts(starts);
      for (std::size_t j = 0; j < starts.size(); ++j) pos[starts[j].second] = static_cast<std::uint32_t>(j + 1);
    }
  }
}

}  // namespace ni::analysis

#endif  // NI_ANALYSIS_OP_SORT_H_
