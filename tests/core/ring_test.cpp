#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "src/core/ring.h"

namespace {

struct Item {
  uint64_t seq;
  uint64_t payload[7];
};

TEST(SpscRing, CapacityRoundsUpToPowerOfTwo) {
  ni::SpscRing<Item> r(100);
  EXPECT_EQ(r.capacity(), 128u);
}

TEST(SpscRing, FullRingRefusesAndKeepsContents) {
  ni::SpscRing<Item> r(4);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(r.try_push(Item{i, {}}));
  EXPECT_FALSE(r.try_push(Item{99, {}}));
  std::vector<uint64_t> got;
  r.drain([&](const Item* p, size_t n) {
    for (size_t k = 0; k < n; ++k) got.push_back(p[k].seq);
  });
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(r.try_push(Item{4, {}}));
}

TEST(SpscRing, DrainWrapsAroundInTwoRuns) {
  ni::SpscRing<Item> r(4);
  for (uint64_t i = 0; i < 3; ++i) r.try_push(Item{i, {}});
  r.drain([](const Item*, size_t) {});
  for (uint64_t i = 3; i < 7; ++i) ASSERT_TRUE(r.try_push(Item{i, {}}));
  int runs = 0;
  std::vector<uint64_t> got;
  r.drain([&](const Item* p, size_t n) {
    ++runs;
    for (size_t k = 0; k < n; ++k) got.push_back(p[k].seq);
  });
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(got, (std::vector<uint64_t>{3, 4, 5, 6}));
}

// Exactly once, in producer order, with a producer and a consumer racing.
TEST(SpscRing, ExactlyOnceFifoUnderConcurrency) {
  ni::SpscRing<Item> r(64);
  constexpr uint64_t kN = 200000;
  uint64_t dropped = 0;
  std::vector<uint64_t> pushed;
  pushed.reserve(kN);
  std::atomic<bool> done{false};
  std::thread prod([&] {
    for (uint64_t i = 0; i < kN; ++i) {
      Item it{i, {i, i, i, i, i, i, i}};
      if (r.try_push(it)) pushed.push_back(i); else ++dropped;
    }
    done.store(true, std::memory_order_release);
  });
  std::vector<uint64_t> got;
  got.reserve(kN);
  bool corrupt = false;
  while (!done.load(std::memory_order_acquire) || r.size() != 0) {
    r.drain([&](const Item* p, size_t n) {
      for (size_t k = 0; k < n; ++k) {
        got.push_back(p[k].seq);
        for (uint64_t v : p[k].payload) corrupt |= v != p[k].seq;
      }
    });
  }
  prod.join();
  r.drain([&](const Item* p, size_t n) {
    for (size_t k = 0; k < n; ++k) got.push_back(p[k].seq);
  });
  EXPECT_FALSE(corrupt);
  EXPECT_EQ(got, pushed);
  EXPECT_EQ(got.size() + dropped, kN);
}

}  // namespace
