#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "src/core/names.h"

namespace {
using ni::DType;
using ni::Func;
using ni::OpKind;

TEST(Names, NcclStringsMapToCodes) {
  EXPECT_EQ(ni::func_from_nccl("AllReduce"), Func::kAllReduce);
  EXPECT_EQ(ni::func_from_nccl("ReduceScatter"), Func::kReduceScatter);
  EXPECT_EQ(ni::func_from_nccl("Reduce"), Func::kReduce);
  EXPECT_EQ(ni::func_from_nccl("AlltoAll"), Func::kAlltoAll);
  EXPECT_EQ(ni::func_from_nccl("Invalid"), Func::kUnknown);
  EXPECT_EQ(ni::func_from_nccl(nullptr), Func::kUnknown);
  EXPECT_EQ(ni::dtype_from_nccl("ncclBfloat16"), DType::kBfloat16);
  EXPECT_EQ(ni::dtype_from_nccl("ncclInt8"), DType::kInt8);
  EXPECT_EQ(ni::dtype_from_nccl("Unknown"), DType::kUnknown);
  EXPECT_EQ(ni::algo_from_nccl("NVLS_TREE"), ni::Algo::kNvlsTree);
  EXPECT_EQ(ni::proto_from_nccl("LL128"), ni::Proto::kLL128);
  EXPECT_EQ(ni::func_from_code(4), Func::kAllReduce);
  EXPECT_EQ(ni::dtype_from_code(200), DType::kUnknown);
}

TEST(Names, UnknownDatatypeHasSizeZeroNotGarbage) {
  EXPECT_EQ(ni::dtype_size(DType::kUnknown), 0u);
  EXPECT_EQ(ni::dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(ni::dtype_size(DType::kBfloat16), 2u);
  EXPECT_EQ(ni::dtype_size(DType::kFloat8e5m2), 1u);
}

TEST(Names, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kAllReduce, OpKind::kColl, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kAllGather, OpKind::kColl, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kReduceScatter, OpKind::kColl, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kBroadcast, OpKind::kColl, 8), 1.0);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kSend, OpKind::kP2p, 8), 1.0);
  EXPECT_DOUBLE_EQ(ni::traffic_multiplier(Func::kAllGather, OpKind::kColl, 8), 8.0);
  EXPECT_DOUBLE_EQ(ni::traffic_multiplier(Func::kAllReduce, OpKind::kColl, 8), 1.0);
}

TEST(Names, LogNames) {
  EXPECT_EQ(ni::func_name(Func::kAllReduce), "AllReduce");
  EXPECT_EQ(ni::dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(ni::timing_name(ni::TimingSource::kGpu), "gpu");
  EXPECT_EQ(ni::func_name(static_cast<Func>(250)), "Unknown");
}

}  // namespace

namespace {
// Symmetric-kernel variants (ABI v7 kernelVariant) interned to a one-byte id.
TEST(Variants, SameNameSameIdByPointerOrText) {
  static const char kA[] = "AllReduce_AGxLL_R";
  char copy[sizeof kA];
  std::memcpy(copy, kA, sizeof kA);
  const uint8_t a = ni::variant_id(kA);
  ASSERT_NE(a, 0);
  EXPECT_EQ(ni::variant_id(kA), a) << "NCCL's pointer again";
  EXPECT_EQ(ni::variant_id(copy), a) << "another pointer to the same text";
  const uint8_t b = ni::variant_id("AllGather_STMC");
  EXPECT_NE(b, 0);
  EXPECT_NE(b, a);
  EXPECT_EQ(ni::variant_name(a), "AllReduce_AGxLL_R");
  EXPECT_EQ(ni::variant_name(b), "AllGather_STMC");
  EXPECT_EQ(ni::variant_id(nullptr), 0);
  EXPECT_EQ(ni::variant_id(""), 0);
  EXPECT_EQ(ni::variant_name(0), "");
  EXPECT_EQ(ni::variant_name(ni::kMaxVariants + 1), "");
  EXPECT_EQ(ni::variant_algo("AllReduce_RSxLD_AGxST"), "RSxLD_AGxST");
  EXPECT_EQ(ni::variant_algo("Plain"), "Plain");
}

TEST(Variants, OddCharactersAndLongNamesAreKeptSafeForJson) {
  const uint8_t q = ni::variant_id("Bad\"Name\\\n");
  ASSERT_NE(q, 0);
  EXPECT_EQ(ni::variant_name(q), "Bad?Name??");
  EXPECT_EQ(ni::variant_id("Bad\"Name\\\n"), q) << "the same raw text finds its sanitised entry";
  const std::string long_name(200, 'x');
  const uint8_t l = ni::variant_id(long_name.c_str());
  ASSERT_NE(l, 0);
  EXPECT_EQ(ni::variant_name(l), std::string(ni::kVariantChars - 1, 'x'));
}

// A full table gives 0 (the op still says it ran a symmetric kernel) and keeps
// the names it has. In a child: the table is process-wide.
[[noreturn]] void fill_the_table_and_exit() {
  std::vector<std::string> names;
  for (int i = 0; i < ni::kMaxVariants + 5; ++i) names.push_back("Variant_" + std::to_string(i));
  int zero = 0;
  for (const std::string& n : names) zero += ni::variant_id(n.c_str()) == 0;
  const bool kept = ni::variant_name(ni::variant_id(names[0].c_str())) == names[0];
  std::exit(zero >= 5 && kept ? 0 : 1);
}
TEST(Variants, AFullTableGivesZeroAndKeepsItsNames) {
  EXPECT_EXIT(fill_the_table_and_exit(), ::testing::ExitedWithCode(0), "");
}

// Threads meeting the same new names at once: every id they get names the
// text they asked for, once its claimant has written it (variant_name is ""
// for the moment that takes; the plugin reads names when it encodes a
// record, after the op's stop).
TEST(Variants, ConcurrentInternsAgree) {
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) names.push_back("Concurrent_" + std::to_string(i));
  constexpr int kThreads = 4, kReps = 50;
  std::vector<std::vector<uint8_t>> got(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int rep = 0; rep < kReps; ++rep)
        for (const std::string& n : names) got[t].push_back(ni::variant_id(n.c_str()));
    });
  for (auto& t : ts) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), names.size() * kReps);
    for (size_t k = 0; k < got[t].size(); ++k)
      ASSERT_EQ(ni::variant_name(got[t][k]), names[k % names.size()]) << "thread " << t << ", call " << k;
  }
}

// Threads that meet one new name at once, each through its own copy of the
// text (NCCL's pointers differ between comms), get one id: the symmetric-plan
// matching compares ids, and two ids for one kernel left a plan's head
// without its task count (a sanitizer CI run, 2026-12). In a child: each
// round takes a table entry.
[[noreturn]] void race_new_names_and_exit() {
  constexpr int kThreads = 4;
  constexpr int kRounds = ni::kMaxVariants - 20;  // what the tests before leave
  std::atomic<int> arrived{0}, split{0};
  std::vector<std::array<uint8_t, kRounds>> got(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::vector<std::string> mine;  // this thread's own copies, alive throughout (as NCCL's strings are)
      for (int r = 0; r < kRounds; ++r) mine.push_back("Race_" + std::to_string(r) + std::string(24, 'x'));
      for (int r = 0; r < kRounds; ++r) {
        arrived.fetch_add(1);
        while (arrived.load() < kThreads * (r + 1)) {
        }
        got[t][r] = ni::variant_id(mine[r].c_str());
      }
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < kRounds; ++r)
    for (int t = 1; t < kThreads; ++t) split += got[t][r] != got[0][r] || got[0][r] == 0;
  for (int r = 0; r < kRounds; ++r)
    if (ni::variant_name(got[0][r]) != "Race_" + std::to_string(r) + std::string(24, 'x')) ++split;
  std::exit(split.load() == 0 ? 0 : 1);
}
TEST(Variants, ThreadsMeetingANewNameAtOnceGetOneId) {
  EXPECT_EXIT(race_new_names_and_exit(), ::testing::ExitedWithCode(0), "");
}
}  // namespace
