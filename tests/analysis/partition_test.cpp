// The memory budget's pieces (src/analysis/partition.h): the size parser, the
// spill of ops by communicator and its read back in batches of whole
// communicators, and a spill that cannot be written (a full disk) failing
// with a clear error instead of an analysis of part of the ops.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "src/analysis/partition.h"
#include "tests/analysis/fixtures.h"

namespace ana = ni::analysis;

namespace {

TEST(MemoryLimit, ParsesSizesAndRefusesTheRest) {
  std::uint64_t b = 0;
  ASSERT_TRUE(ana::parse_memory_limit("1500000000", b));
  EXPECT_EQ(b, 1500000000u);
  ASSERT_TRUE(ana::parse_memory_limit("512M", b));
  EXPECT_EQ(b, 512ull << 20);
  ASSERT_TRUE(ana::parse_memory_limit("2g", b));
  EXPECT_EQ(b, 2ull << 30);
  ASSERT_TRUE(ana::parse_memory_limit("64KB", b));
  EXPECT_EQ(b, 64ull << 10);
  ASSERT_TRUE(ana::parse_memory_limit("1T", b));
  EXPECT_EQ(b, 1ull << 40);
  for (const char* bad : {"", "0", "M", "12X", "1.5G", "-1", "5MBB", "99999999999999999999", "20000000T"})
    EXPECT_FALSE(ana::parse_memory_limit(bad, b)) << bad;
  EXPECT_GE(ana::default_memory_limit(), 256ull << 20);
  // A budget smaller than what the program holds anyway still analyses: one op per batch at least.
  EXPECT_EQ(ana::batch_ops(1), 1u);
  EXPECT_EQ(ana::batch_ops(1ull << 30), (1ull << 30) / ana::kBytesPerOpInMemory);
}

// The default budget follows the process's control group: its own limit or a
// parent's (a SLURM job's group above its step's), cgroup v2 or v1, the lowest
// of them; a path that does not exist under the mount (a container seeing its
// own group at the root) is looked for up to the root; "max" and v1's ~2^63
// are no limit.
void put(const std::string& dir, const std::string& file, const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + file) << text << "\n";
}
TEST(MemoryLimit, CgroupLimitsOfTheGroupAndItsParents) {
  const std::string root = ni::test::temp_dir("cgroup");
  const std::string job = root + "/system.slice/slurmstepd.scope/job_42";
  put(job, "memory.max", "8589934592");
  put(job + "/step_0", "memory.max", "max");
  EXPECT_EQ(ana::cgroup_memory_limit("0::/system.slice/slurmstepd.scope/job_42/step_0\n", root), 8ull << 30)
      << "the job's limit binds its step";
  put(job + "/step_0", "memory.max", "4294967296");
  EXPECT_EQ(ana::cgroup_memory_limit("0::/system.slice/slurmstepd.scope/job_42/step_0", root), 4ull << 30)
      << "the lowest on the way up";
  EXPECT_EQ(ana::cgroup_memory_limit("0::/system.slice/other\n", root), 0u) << "no limit on that path";
  EXPECT_EQ(ana::cgroup_memory_limit("", root), 0u);

  const std::string v1 = ni::test::temp_dir("cgroup_v1");
  put(v1 + "/memory", "memory.limit_in_bytes", "9223372036854771712");  // v1's "unlimited"
  put(v1 + "/memory/slurm/uid_1/job_7", "memory.limit_in_bytes", "3221225472");
  const std::string self_v1 = "12:pids:/slurm/uid_1/job_7\n4:cpu,memory:/slurm/uid_1/job_7/step_batch\n0::/\n";
  EXPECT_EQ(ana::cgroup_memory_limit(self_v1, v1), 3ull << 30) << "v1, a parent's limit, a missing step dir";
  EXPECT_EQ(ana::cgroup_memory_limit("4:memory:/docker/0123abcd\n", v1), 0u) << "unlimited at the root";
  put(v1 + "/memory", "memory.limit_in_bytes", "1073741824");
  EXPECT_EQ(ana::cgroup_memory_limit("4:memory:/docker/0123abcd\n", v1), 1ull << 30)
      << "a container's own group at the mount's root";

  const std::string hybrid = ni::test::temp_dir("cgroup_hybrid");
  put(hybrid + "/unified/user.slice", "memory.max", "2147483648");
  EXPECT_EQ(ana::cgroup_memory_limit("0::/user.slice\n1:name=systemd:/user.slice\n", hybrid), 2ull << 30);
  EXPECT_EQ(ana::cgroup_memory_limit("garbage\n0:memory\n::\n", hybrid), 0u);
}

ana::Op op_of(std::uint64_t comm, int rank, std::uint64_t seq, std::uint32_t file) {
  ana::Op o;
  o.comm_hash = comm;
  o.rank = rank;
  o.seq = seq;
  o.file_idx = file;
  o.bytes = seq * 8 + static_cast<std::uint64_t>(rank);
  o.dur_us = static_cast<double>(seq) + 0.5;
  return o;
}

using Key = std::tuple<std::uint64_t, int, std::uint64_t, std::uint32_t>;
Key key(const ana::Op& o) { return {o.comm_hash, o.rank, o.seq, o.file_idx}; }

// Ops of 300 communicators (more than there are buckets) written by three
// "reader threads", merged, read back under budgets from one op to all of
// them: every op comes back once with its bytes, each communicator whole in
// one batch, a batch over the budget only when one bucket alone is, and a
// file's ops in their order.
TEST(Spill, EveryOpComesBackOnceWithItsCommunicatorWhole) {
  const std::string dir = ni::test::temp_dir("spill");
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> comms;
  for (int i = 0; i < 300; ++i) comms.push_back(rng());
  std::multiset<Key> want;
  ana::SpillSink first(dir, ana::Partition::kComm), second(dir, ana::Partition::kComm), third(dir, ana::Partition::kComm);
  ana::SpillSink* sinks[] = {&first, &second, &third};
  ana::FileInfo fi;
  for (std::uint32_t file = 0; file < 6; ++file) {
    ana::SpillSink& s = *sinks[file % 3];
    for (std::uint64_t seq = 0; seq < 400; ++seq) {
      const ana::Op o = op_of(comms[(seq * 7 + file) % comms.size()], static_cast<int>(file), seq, file);
      s.on_op(o, nullptr, fi);
      want.insert(key(o));
    }
  }
  first.merge(std::move(second));
  first.merge(std::move(third));
  ASSERT_EQ(first.error(), "");
  EXPECT_EQ(first.ops(), want.size());
  for (std::size_t max_ops : {std::size_t{1}, std::size_t{50}, std::size_t{700}, want.size()}) {
    std::multiset<Key> got;
    std::map<std::uint64_t, std::size_t> batch_of;
    std::size_t batch = 0;
    bool ordered = true;
    const std::size_t n = first.for_each_batch(max_ops, [&](ana::CollectSink& batch_ops) {
      const std::vector<ana::Op>& ops = batch_ops.ops;
      ++batch;
      std::set<int> buckets;
      std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint64_t> last_seq;  // per (file, comm): its order kept
      for (const ana::Op& o : ops) {
        got.insert(key(o));
        buckets.insert(ana::SpillSink::bucket_of(o.comm_hash));
        auto [it, fresh] = batch_of.emplace(o.comm_hash, batch);
        EXPECT_EQ(it->second, batch) << "a communicator split over two batches";
        auto [ls, first_seen] = last_seq.emplace(std::make_pair(o.file_idx, o.comm_hash), o.seq);
        ordered = ordered && (first_seen || o.seq > ls->second);
        ls->second = o.seq;
        EXPECT_DOUBLE_EQ(o.dur_us, static_cast<double>(o.seq) + 0.5);
        EXPECT_EQ(o.bytes, o.seq * 8 + static_cast<std::uint64_t>(o.rank));
      }
      if (ops.size() > max_ops) {
        EXPECT_EQ(buckets.size(), 1u) << "over the budget with more than one bucket";
      }
    });
    EXPECT_EQ(n, batch);
    EXPECT_EQ(got, want) << "max_ops " << max_ops;
    EXPECT_TRUE(ordered);
    if (max_ops == want.size()) {
      EXPECT_EQ(n, 1u);
    }
    if (max_ops == 1) {  // every bucket used, on its own
      std::set<int> used;
      for (std::uint64_t c : comms) used.insert(ana::SpillSink::bucket_of(c));
      EXPECT_EQ(n, used.size());
      EXPECT_GT(n, 150u);  // the mix spreads 300 hashes over most of the 256 buckets
    }
  }
}

// The spill writes each op against the one before it in its chunk: every
// field comes back bit for bit, whatever it holds (NaN, -0.0, infinities,
// doubles with and without three decimals, seq and times that go back, wrap or
// sit at their limits, fields that change on every op or never), across
// chunk boundaries and from several sinks; and a plugin log's ops, which
// repeat most fields, take under a third of their 88 bytes.
TEST(Spill, EveryFieldComesBackBitForBit) {
  const std::string dir = ni::test::temp_dir("spill_bits");
  std::mt19937_64 rng(11);
  const double odd[] = {ana::kNaN, -0.0, 0.0, std::numeric_limits<double>::infinity(), -1.5e300, 61.638, 1e12,
                        999999999999.999, -0.001, 0.1 + 0.2, 5e-324};
  const float oddf[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, 0.95f, -1.0f, 1e30f};
  const std::int64_t starts[] = {0, INT64_MIN, INT64_MAX, 1767225600000000000, -1};
  auto pick = [&](auto& arr) { return arr[rng() % std::size(arr)]; };
  auto bits = [](const ana::Op& o) {
    return std::tuple{o.comm_hash, o.start_wall_ns, o.bytes, o.seq, std::bit_cast<std::uint64_t>(o.dur_us),
                      std::bit_cast<std::uint64_t>(o.busbw_gbs), std::bit_cast<std::uint32_t>(o.ch_balance),
                      std::bit_cast<std::uint32_t>(o.sync_us), o.rank, o.nranks, o.peer, o.file_idx, o.nchannels,
                      o.nnodes, static_cast<int>(o.kind), static_cast<int>(o.func), static_cast<int>(o.algo),
                      static_cast<int>(o.proto), static_cast<int>(o.timing), o.flags, o.transport, o.sym_plan};
  };
  ana::SpillSink a(dir, ana::Partition::kComm), b(dir, ana::Partition::kComm);
  std::multiset<decltype(bits(ana::Op{}))> sent, got;
  ana::FileInfo fi;
  ana::Op o;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    // Runs of similar ops, with every field changing now and then, some wildly.
    const bool wild = rng() % 7 == 0;
    // More communicators than a chunk keeps ops to write against (SpillSink::kSlots).
    o.comm_hash = rng() % 3 == 0 ? rng() % 12 : o.comm_hash;
    o.seq = wild ? (rng() % 2 ? UINT64_MAX - rng() % 3 : rng()) : o.seq + rng() % 3 - 1;
    // Steps back and forth, wrapping at the limits (in unsigned arithmetic: no overflow).
    o.start_wall_ns = wild ? pick(starts)
                           : static_cast<std::int64_t>(static_cast<std::uint64_t>(o.start_wall_ns) + rng() % 400000 - 100000);
    o.bytes = rng() % 4 == 0 ? (wild ? rng() : rng() % 100000) : o.bytes;
    o.dur_us = rng() % 3 == 0 ? pick(odd) : static_cast<double>(rng() % 10000000) / 1000.0;
    o.busbw_gbs = rng() % 3 == 0 ? std::bit_cast<double>(rng()) : static_cast<double>(rng() % 900000) / 1000.0;
    o.ch_balance = rng() % 5 == 0 ? pick(oddf) : o.ch_balance;
    o.sync_us = rng() % 9 == 0 ? pick(oddf) : o.sync_us;
    if (rng() % 6 == 0) {
      o.rank = static_cast<std::int32_t>(rng());
      o.nranks = static_cast<std::int32_t>(rng() % 5);
      o.peer = rng() % 2 ? -1 : static_cast<std::int32_t>(rng() % 64);
      o.file_idx = static_cast<std::uint32_t>(rng() % 3);
      o.nchannels = static_cast<std::uint16_t>(rng());
      o.nnodes = static_cast<std::uint16_t>(rng() % 3);
    }
    if (rng() % 4 == 0) {
      o.kind = static_cast<ana::OpKind>(rng() % 3);
      o.func = static_cast<ana::Func>(rng() % 5);
      o.algo = static_cast<ana::Algo>(rng() % 3);
      o.proto = static_cast<ana::Proto>(rng() % 3);
      o.timing = static_cast<ana::Timing>(rng() % 3);
      o.flags = static_cast<std::uint8_t>(rng());
      o.transport = static_cast<std::uint8_t>(rng() % 3);
      o.sym_plan = static_cast<std::uint8_t>(rng());
    }
    (i % 2 ? a : b).on_op(o, nullptr, fi);
    sent.insert(bits(o));
  }
  a.merge(std::move(b));
  ASSERT_EQ(a.error(), "");
  a.for_each_batch(3000, [&](ana::CollectSink& c) {
    for (const ana::Op& x : c.ops) got.insert(bits(x));
  });
  EXPECT_EQ(a.error(), "");
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_TRUE(got == sent) << "an op came back changed";

  // A plugin log's stream: one rank's ops of two comms, seq up by one, starts
  // 200 us apart, times and bandwidths with three decimals.
  // By communicator, and by process (where the two comms share a chunk: each
  // op is written against its own comm's last).
  ana::SpillSink c(dir, ana::Partition::kComm), d(dir, ana::Partition::kProcess);
  for (std::uint64_t i = 0; i < 100000; ++i) {
    ana::Op p = op_of(i % 2 ? 0x7a11000000000000ull : 0x7a12000000000000ull, 3, i / 2, 0);
    p.func = static_cast<ana::Func>(i % 3);
    p.flags = ana::kFlagHasStart;
    p.start_wall_ns = 1767225600000000000 + static_cast<std::int64_t>(i) * 200000 + static_cast<std::int64_t>(rng() % 5000);
    p.dur_us = static_cast<double>(60000 + rng() % 9000) / 1000.0;
    p.busbw_gbs = static_cast<double>(rng() % 400000) / 1000.0;
    p.ch_balance = 0.95f;
    c.on_op(p, nullptr, fi);
    d.on_op(p, nullptr, fi);
  }
  for (ana::SpillSink* s : {&c, &d}) {
    std::size_t n = 0;
    s->for_each_batch(1u << 20, [&](ana::CollectSink& batch) { n += batch.ops.size(); });
    EXPECT_EQ(n, 100000u);
    EXPECT_LT(static_cast<double>(s->spilled_bytes()) / 100000.0, 88.0 / 3) << "bytes per op";
  }
}

// By process: the files of one (host, pid) (rotation) come back in one
// batch, whatever their communicators; a file without a pid is its own.
TEST(Spill, ByProcessKeepsAProcesssFilesTogether) {
  const std::string dir = ni::test::temp_dir("spill_proc");
  ana::SpillSink s(dir, ana::Partition::kProcess);
  std::vector<ana::FileInfo> files(40);
  for (std::size_t f = 0; f < files.size(); ++f) {
    files[f].host = "node" + std::to_string(f % 10);
    files[f].pid = f < 36 ? 100 + static_cast<std::int64_t>(f % 20) : -1;  // files f and f + 20 of one process
  }
  for (std::uint64_t i = 0; i < 4000; ++i) {
    const auto f = static_cast<std::uint32_t>(i % files.size());
    s.on_op(op_of(i * 2654435761u, 0, i, f), nullptr, files[f]);
  }
  std::map<std::pair<std::string, std::int64_t>, std::size_t> batch_of;
  std::size_t batch = 0, ops = 0;
  s.for_each_batch(1, [&](ana::CollectSink& b) {
    const std::vector<ana::Op>& v = b.ops;
    ++batch;
    for (const ana::Op& o : v) {
      const ana::FileInfo& fi = files[o.file_idx];
      const auto key = std::make_pair(fi.host, fi.pid >= 0 ? fi.pid : -2 - static_cast<std::int64_t>(o.file_idx));
      auto [it, fresh] = batch_of.emplace(key, batch);
      EXPECT_EQ(it->second, batch) << fi.host << " pid " << fi.pid << " over two batches";
      ++ops;
    }
  });
  EXPECT_EQ(ops, 4000u);
  EXPECT_EQ(batch_of.size(), 24u);  // 20 processes of two files each (node k, pid 100+k) and 4 without a pid
  EXPECT_GE(batch, 15u);  // spread over buckets, not one batch
}

// With detail (anomalies): each op's HCA use and slowest channel come back
// with it, as CollectSink computes them, HCA names included, from several
// reader threads (each names its HCAs in its own table).
TEST(Spill, DetailComesBackWithItsOp) {
  const std::string dir = ni::test::temp_dir("spill_detail");
  ana::SpillSink a(dir, ana::Partition::kComm, true), b(dir, ana::Partition::kComm, true);
  EXPECT_TRUE(a.wants_detail());
  ana::FileInfo fi;
  std::map<std::uint64_t, ana::CollectSink::Extra> want;  // by seq
  for (std::uint64_t i = 0; i < 3000; ++i) {
    ana::OpDetail d;
    for (std::uint64_t h = 0; h < i % 4; ++h)
      d.hcas.push_back({"mlx5_" + std::to_string((i + h) % (i % 2 ? 3 : 7)), i * 100 + h, h == 1 ? ana::kNaN : 0.5 * static_cast<double>(i)});
    if (i % 3 == 0)
      for (int ch = 0; ch < 4; ++ch) d.ch_times.push_back({ch, 0.0, 10.0 + static_cast<double>((ch * 7 + i) % 5)});
    else if (i % 3 == 1) {
      d.slow_ch = static_cast<int>(i % 8);
      d.slow_us = 20;
      d.median_us = 10;
    }
    const ana::Op o = op_of(i % 11, static_cast<int>(i % 4), i, static_cast<std::uint32_t>(i % 2));
    (i % 2 ? a : b).on_op(o, i % 5 == 4 ? nullptr : &d, fi);
    want[i] = ana::CollectSink::extra_of(i % 5 == 4 ? nullptr : &d);
  }
  a.merge(std::move(b));
  std::size_t seen = 0;
  a.for_each_batch(500, [&](ana::CollectSink& c) {
    ASSERT_EQ(c.ops.size(), c.extra.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      const ana::CollectSink::Extra& got = c.extra[k];
      const ana::CollectSink::Extra& w = want.at(c.ops[k].seq);
      ++seen;
      EXPECT_EQ(got.slowest_channel, w.slowest_channel);
      EXPECT_EQ(got.slowest_us, w.slowest_us);
      EXPECT_EQ(got.median_us, w.median_us);
      EXPECT_EQ(got.slowest_ratio, w.slowest_ratio);
      ASSERT_EQ(got.hcas.size(), w.hcas.size()) << "seq " << c.ops[k].seq;
      for (std::size_t h = 0; h < w.hcas.size(); ++h) {
        EXPECT_EQ(got.hcas[h].dev, w.hcas[h].dev);
        EXPECT_EQ(got.hcas[h].bytes, w.hcas[h].bytes);
        EXPECT_EQ(std::isnan(got.hcas[h].wire_us), std::isnan(w.hcas[h].wire_us));
        if (!std::isnan(w.hcas[h].wire_us)) {
          EXPECT_EQ(got.hcas[h].wire_us, w.hcas[h].wire_us);
        }
      }
    }
  });
  EXPECT_EQ(seen, 3000u);
  EXPECT_EQ(a.error(), "");
}

// With view detail (trace): each op's channel times (ids clamped to 16 bits,
// times as floats, as ViewSink keeps them), network bytes and user tag come
// back with it and its Extra; an op with none of them takes no bytes for them.
TEST(Spill, ViewDetailComesBackWithItsOp) {
  const std::string dir = ni::test::temp_dir("spill_view");
  ana::SpillSink a(dir, ana::Partition::kComm, true, true), plain(dir, ana::Partition::kComm, true);
  EXPECT_TRUE(a.wants_detail());
  ana::FileInfo fi;
  struct Want {
    std::vector<ana::CollectSink::ChSpan> ch;
    std::uint64_t net = 0, tag = 0;
    int slowest = -1;
  };
  std::map<std::uint64_t, Want> want;  // by seq
  for (std::uint64_t i = 0; i < 4000; ++i) {
    ana::OpDetail d;
    Want w;
    if (i % 3 != 2)
      for (std::uint64_t c = 0; c < i % 9; ++c) {
        const int id = c == 5 ? 70000 : c == 6 ? -3 : static_cast<int>(c);
        d.ch_times.push_back({id, 0.1 * static_cast<double>(c), 1.0 / 3.0 + static_cast<double>(i % 17)});
        w.ch.push_back({static_cast<std::uint16_t>(std::clamp(id, 0, 65535)), static_cast<float>(0.1 * static_cast<double>(c)),
                        static_cast<float>(1.0 / 3.0 + static_cast<double>(i % 17))});
      }
    if (i % 4 == 1) d.net_send_bytes = i * 1000, d.net_recv_bytes = 7;
    if (i % 5 == 3) d.user_tag = (1ull << 62) + i;
    w.net = d.net_send_bytes + d.net_recv_bytes;
    w.tag = d.user_tag;
    w.slowest = ana::CollectSink::extra_of(&d).slowest_channel;
    const ana::Op o = op_of(i % 5, static_cast<int>(i % 4), i, 0);
    a.on_op(o, &d, fi);
    plain.on_op(o, &d, fi);
    want[i] = w;
  }
  std::size_t seen = 0;
  a.for_each_batch(700, [&](ana::CollectSink& c) {
    const ana::CollectSink::ViewCols& v = c.view;
    ASSERT_EQ(v.ch_end.size(), c.ops.size());
    ASSERT_EQ(v.net_bytes.size(), c.ops.size());
    ASSERT_EQ(v.tag.size(), c.ops.size());
    ASSERT_EQ(c.extra.size(), c.ops.size());
    for (std::size_t k = 0; k < c.ops.size(); ++k) {
      const Want& w = want.at(c.ops[k].seq);
      ++seen;
      const std::uint32_t from = k == 0 ? 0 : v.ch_end[k - 1];
      ASSERT_EQ(v.ch_end[k] - from, w.ch.size()) << "seq " << c.ops[k].seq;
      for (std::size_t j = 0; j < w.ch.size(); ++j) {
        EXPECT_EQ(v.ch[from + j].channel, w.ch[j].channel);
        EXPECT_EQ(v.ch[from + j].off_us, w.ch[j].off_us);
        EXPECT_EQ(v.ch[from + j].dur_us, w.ch[j].dur_us);
      }
      EXPECT_EQ(v.net_bytes[k], w.net);
      EXPECT_EQ(v.tag[k], w.tag);
      EXPECT_EQ(c.extra[k].slowest_channel, w.slowest);
    }
  });
  EXPECT_EQ(seen, 4000u);
  EXPECT_EQ(a.error(), "");
  // Without view detail the batches carry none.
  plain.for_each_batch(1u << 20, [&](ana::CollectSink& c) {
    EXPECT_TRUE(c.view.ch_end.empty());
    EXPECT_EQ(c.extra.size(), c.ops.size());
  });
}

// A spill that cannot be written (the file size limit stands for a full disk:
// the write fails with EFBIG): the sink says so and reads nothing back.
TEST(Spill, AFullDiskIsAnErrorNotAPartialAnalysis) {
  const std::string dir = ni::test::temp_dir("spill_full");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit rl{64 << 10, 64 << 10};
    setrlimit(RLIMIT_FSIZE, &rl);
    ana::SpillSink s(dir, ana::Partition::kComm);
    ana::FileInfo fi;
    for (std::uint64_t i = 0; i < 20000; ++i) s.on_op(op_of(i % 5, 0, i, 0), nullptr, fi);
    bool called = false;
    const std::size_t n = s.for_each_batch(1000, [&](ana::CollectSink&) { called = true; });
    const bool ok = n == 0 && !called && s.error().find("cannot write the spill file") != std::string::npos &&
                    s.error().find("TMPDIR") != std::string::npos;
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Spill, AnUnwritableDirectoryIsAnError) {
  ana::SpillSink s("/nonexistent-dir-for-spill", ana::Partition::kComm);
  EXPECT_NE(s.error().find("cannot create a spill file in /nonexistent-dir-for-spill"), std::string::npos) << s.error();
  EXPECT_EQ(s.for_each_batch(10, [](ana::CollectSink&) {}), 0u);
}

}  // namespace
