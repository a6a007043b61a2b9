// IdFilter (engine/internal/id_filter.h): never a false "no", few false
// "maybe"s at the size it was made for, and a size that stays capped.
#include "engine/internal/id_filter.h"

#include <gtest/gtest.h>

#include <random>

namespace sidetable::internal {
namespace {

TEST(IdFilterTest, EveryAddedHashIsMaybeAtEverySize) {
  for (uint64_t expected : {uint64_t{1}, uint64_t{10}, uint64_t{1000}, uint64_t{100000}}) {
    IdFilter f(expected);
    std::mt19937_64 rng(expected);
    std::vector<uint64_t> added;
    // Twice the expected number: a full filter still never says no.
    for (uint64_t i = 0; i < 2 * expected; i++) {
      added.push_back(rng());
      f.Add(added.back());
    }
    for (uint64_t h : added)
      ASSERT_TRUE(f.MayContain(h)) << "expected " << expected << ", hash " << h;
  }
}

TEST(IdFilterTest, NewHashesAreMostlyRefusedAtTheExpectedLoad) {
  constexpr uint64_t kIds = 50000;
  IdFilter f(kIds);
  std::mt19937_64 rng(7);
  for (uint64_t i = 0; i < kIds; i++) f.Add(rng());
  std::mt19937_64 other(8);
  int maybe = 0;
  constexpr int kProbesMade = 100000;
  for (int i = 0; i < kProbesMade; i++) maybe += f.MayContain(other()) ? 1 : 0;
  // ~1% at 10 bits an id with 6 probes in a 64-byte block; a filter that
  // said "maybe" to everything, or set too few bits, fails here.
  EXPECT_LT(maybe, kProbesMade * 3 / 100) << maybe << " false positives";
  EXPECT_GT(maybe, 0) << "no false positive at all in 100,000: the filter is larger than it says";
}

TEST(IdFilterTest, AnEmptyFilterRefusesEverything) {
  IdFilter f(1000);
  std::mt19937_64 rng(9);
  for (int i = 0; i < 10000; i++) ASSERT_FALSE(f.MayContain(rng()));
}

TEST(IdFilterTest, SizeFollowsTheExpectedIdsUpToTheCap) {
  EXPECT_EQ(IdFilter(1).bytes(), 64u);
  // 500,000 ids (the default window) at 10 bits: 625,000 bytes, in blocks of 64.
  EXPECT_EQ(IdFilter(500000).bytes(), (500000u * 10 + 511) / 512 * 64);
  EXPECT_EQ(IdFilter(uint64_t{1} << 40).bytes(), IdFilter::kMaxBytes);
  EXPECT_EQ(IdFilter(UINT64_MAX).bytes(), IdFilter::kMaxBytes);
}

}  // namespace
}  // namespace sidetable::internal
