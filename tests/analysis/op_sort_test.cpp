// sort_op_indices (src/analysis/op_sort.h): the order std::sort gives with the
// same comparison, for ops laid out as logs give them (each file's ops of a
// communicator and function in seq order, files one after another, graph
// replays repeating a seq) and for ops in no order at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "src/analysis/model.h"
#include "src/analysis/op_sort.h"

namespace ana = ni::analysis;

namespace {

struct Key {
  std::uint64_t comm, seq;
  std::uint32_t rank, file, i;
  std::uint8_t func;
};
Key key_of(const ana::Op& op, std::uint32_t i) {
  return Key{op.comm_hash, op.seq, static_cast<std::uint32_t>(op.rank), op.file_idx, i, static_cast<std::uint8_t>(op.func)};
}
bool less(const Key& a, const Key& b) {
  return std::tie(a.comm, a.func, a.seq, a.rank, a.file, a.i) < std::tie(b.comm, b.func, b.seq, b.rank, b.file, b.i);
}

// What sort_op_indices must give: the indices sorted through std::sort.
std::vector<std::uint32_t> expected(const std::vector<ana::Op>& ops, std::vector<std::uint32_t> idx) {
  std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return less(key_of(ops[a], a), key_of(ops[b], b)); });
  return idx;
}
std::vector<std::uint32_t> sorted(const std::vector<ana::Op>& ops, std::vector<std::uint32_t> idx) {
  ana::sort_op_indices(ops, idx, key_of, less);
  return idx;
}
std::vector<std::uint32_t> all(const std::vector<ana::Op>& ops) {
  std::vector<std::uint32_t> idx(ops.size());
  for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  return idx;
}

// A job's logs read back: `files` ranks, each with `comms` communicators'
// ops of `funcs` functions interleaved, seq up by one per (comm, func), some
// seqs repeated (graph replays); the files one after another.
std::vector<ana::Op> job(std::mt19937_64& rng, int files, int comms, int funcs, int per_file) {
  std::vector<ana::Op> ops;
  for (int f = 0; f < files; ++f) {
    std::vector<std::uint64_t> seq(static_cast<std::size_t>(comms * funcs), 0);
    for (int k = 0; k < per_file; ++k) {
      ana::Op op;
      const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(comms));
      const int fn = static_cast<int>(rng() % static_cast<std::uint64_t>(funcs));
      // Comm hashes with and without the top bit: the groups order as unsigned.
      op.comm_hash = (c % 2 ? 0xf000000000000000ull : 0x1000000000000000ull) + static_cast<std::uint64_t>(c);
      op.func = static_cast<ana::Func>(fn);
      op.rank = (f * 7 + c) % files;
      op.file_idx = static_cast<std::uint32_t>(f);
      std::uint64_t& s = seq[static_cast<std::size_t>(c * funcs + fn)];
      op.seq = s;
      if (rng() % 10 != 0) ++s;  // else the next one repeats it
      ops.push_back(op);
    }
  }
  return ops;
}

TEST(OpSort, GivesStdSortsOrderForLogsAsTheyAreRead) {
  std::mt19937_64 rng(7);
  for (int files : {1, 2, 3, 8, 13, 64})  // a group has about as many runs as files: odd counts too
    for (int comms : {1, 3, 40}) {
      const std::vector<ana::Op> ops = job(rng, files, comms, 4, 300);
      const auto idx = all(ops);
      ASSERT_EQ(sorted(ops, idx), expected(ops, idx)) << files << " files, " << comms << " comms";
      // A subset (the ops an analysis keeps), and the files in another order.
      std::vector<std::uint32_t> some;
      for (std::uint32_t i : idx)
        if (rng() % 3 != 0) some.push_back(i);
      EXPECT_EQ(sorted(ops, some), expected(ops, some));
      std::vector<std::uint32_t> rev(idx.rbegin(), idx.rend());
      EXPECT_EQ(sorted(ops, rev), expected(ops, rev));
    }
}

TEST(OpSort, GivesStdSortsOrderForOpsInNoOrder) {
  std::mt19937_64 rng(3);
  for (std::size_t n : {0, 1, 2, 3, 17, 1000, 20000}) {
    std::vector<ana::Op> ops(n);
    for (auto& op : ops) {
      op.comm_hash = rng() % 3 == 0 ? rng() : rng() % 5;  // a few large groups and thousands of small ones
      op.func = static_cast<ana::Func>(rng() % static_cast<unsigned>(ana::Func::kCount_));
      op.seq = rng() % 50;
      op.rank = static_cast<std::int32_t>(rng() % 8);
      op.file_idx = static_cast<std::uint32_t>(rng() % 8);
    }
    const auto idx = all(ops);
    EXPECT_EQ(sorted(ops, idx), expected(ops, idx)) << n << " ops";
  }
}

// What rank_positions must give: every op with a start sorted by (comm, rank,
// start, its place in idx), numbered from 1 within each (comm, rank).
std::vector<std::uint32_t> expected_positions(const std::vector<ana::Op>& ops, const std::vector<std::uint32_t>& idx) {
  std::vector<std::uint32_t> k_of;
  for (std::uint32_t k = 0; k < idx.size(); ++k)
    if (ops[idx[k]].has_start()) k_of.push_back(k);
  auto key = [&](std::uint32_t k) {
    const ana::Op& op = ops[idx[k]];
    return std::tuple(op.comm_hash, op.rank, op.start_wall_ns, k);
  };
  std::sort(k_of.begin(), k_of.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  std::vector<std::uint32_t> pos(idx.size(), 0);
  std::uint32_t at = 0;
  for (std::size_t j = 0; j < k_of.size(); ++j) {
    const ana::Op &x = ops[idx[k_of[j]]], &prev = ops[idx[k_of[j > 0 ? j - 1 : 0]]];
    if (j == 0 || x.comm_hash != prev.comm_hash || x.rank != prev.rank) at = 0;
    pos[k_of[j]] = ++at;
  }
  return pos;
}

// Ops as anomalies' instances() hands them over ((comm, func, seq) order),
// each rank starting its collectives in program order by its own clock: a
// rank's ops of one function are one sorted run. Times as logs give them:
// functions interleaved, ties (two ops at one start), ops without a start,
// ranks whose clock jitters (many runs), ranks numbered sparsely or unknown (-1).
TEST(OpSort, RankPositionsAreTheOrderOfASortByRankAndStart) {
  std::mt19937_64 rng(11);
  for (int ranks : {1, 3, 8, 64})
    for (int shape = 0; shape < 4; ++shape) {
      std::vector<ana::Op> ops;
      for (int c = 0; c < 3; ++c)
        for (int r = 0; r < ranks; ++r) {
          std::int64_t t = 1'000'000 * (r + 1);
          for (int s = 0; s < 200; ++s) {
            ana::Op op;
            op.comm_hash = 0x100u + static_cast<std::uint64_t>(c);
            op.func = static_cast<ana::Func>(rng() % 3);
            op.seq = static_cast<std::uint64_t>(s);
            op.rank = shape == 2 ? r * 1000 : shape == 3 && r == 0 ? -1 : r;  // sparse; an unknown rank
            t += rng() % 4 == 0 ? 0 : static_cast<std::int64_t>(rng() % 5000);  // a quarter tie with the last
            op.start_wall_ns = shape == 1 ? t + static_cast<std::int64_t>(rng() % 20000) : t;  // jitter: many runs
            if (rng() % 20 != 0) op.flags = ana::kFlagHasStart;
            op.file_idx = static_cast<std::uint32_t>(r);
            ops.push_back(op);
          }
        }
      std::vector<std::uint32_t> idx = all(ops);
      // instances()' order: (comm, func, seq, i).
      std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
        return std::tuple(ops[a].comm_hash, ops[a].func, ops[a].seq, a) < std::tuple(ops[b].comm_hash, ops[b].func, ops[b].seq, b);
      });
      std::vector<std::uint32_t> pos{7, 7};  // rank_positions sizes and clears it
      ana::rank_positions(ops, idx, pos);
      ASSERT_EQ(pos, expected_positions(ops, idx)) << ranks << " ranks, shape " << shape;
    }
  std::vector<std::uint32_t> none;
  ana::rank_positions(std::vector<ana::Op>{}, {}, none);
  EXPECT_TRUE(none.empty());
}

}  // namespace
