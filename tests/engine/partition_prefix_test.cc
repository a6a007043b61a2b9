// The entity family's memtable insert hint (engine/internal/partition_prefix.h):
// the prefix it keys hints by, the keys it must leave alone, and an engine
// whose inserts take it in every order a partition sees.
#include "engine/internal/partition_prefix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "engine/internal/codec.h"
#include "engine/internal/rocksdb_options.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

TEST(PartitionPrefixTest, AnEntityKeysPrefixIsItsPartitionPrefix) {
  auto t = internal::NewPartitionPrefixTransform();
  // Empty keys, a non-ASCII PartitionKey, and key bytes that look like
  // the separator only before the ordinal mapping.
  const std::pair<std::string, std::string> keys[] = {
      {"", ""}, {"p", ""}, {"", "r"}, {"p\xC3\xA9", "row-1"}, {"\x01", "\x01\x02"}};
  for (uint32_t table : {0u, 1u, 0x01000000u, 0xFFFFFFFFu}) {
    for (const auto& [pk, rk] : keys) {
      const std::string key = codec::EntityKey(table, pk, rk);
      ASSERT_TRUE(t->InDomain(key)) << pk << "/" << rk;
      EXPECT_EQ(t->Transform(key).ToString(), codec::PartitionPrefix(table, pk)) << pk << "/" << rk;
    }
  }
}

// RocksDB 7.8 (Debian 12) also consults the hint for a range tombstone's
// start key, with the point keys' splices (later releases skip range
// deletions): a DeleteTable's start key must stay out of the domain.
TEST(PartitionPrefixTest, ADeleteTablesRangeIsOutsideTheDomain) {
  auto t = internal::NewPartitionPrefixTransform();
  for (uint32_t table : {0u, 7u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(t->InDomain(codec::TablePrefix(table)));
  }
  EXPECT_FALSE(t->InDomain(""));
}

TEST(PartitionPrefixTest, OnlyTheEntityFamilyTakesHints) {
  auto set = internal::MakeRocksDbOptions(EngineOptions{});
  ASSERT_NE(set.entities.memtable_insert_with_hint_prefix_extractor, nullptr);
  EXPECT_STREQ(set.entities.memtable_insert_with_hint_prefix_extractor->Name(),
               "sidetable.PartitionPrefix");
  EXPECT_EQ(set.changelog.memtable_insert_with_hint_prefix_extractor, nullptr);
  EXPECT_EQ(set.requests.memtable_insert_with_hint_prefix_extractor, nullptr);
  EXPECT_EQ(set.meta.memtable_insert_with_hint_prefix_extractor, nullptr);
}

class HintedInsertTest : public EngineTest {
 protected:
  // Every (PartitionKey, RowKey) of the table, in scan order.
  std::vector<std::pair<std::string, std::string>> Keys(const std::string& table) {
    std::vector<std::pair<std::string, std::string>> out;
    auto cur = engine_->Scan(table, ScanBounds{}, nullptr);
    EXPECT_TRUE(cur.ok());
    if (!cur.ok()) return out;
    for (; (*cur)->Valid(); (*cur)->Next()) {
      Entity e;
      EXPECT_TRUE((*cur)->Read(&e).ok());
      out.emplace_back(e.partition_key, e.row_key);
    }
    return out;
  }
};

// Partitions whose RowKeys grow, shrink or come at random, interleaved, in
// memtables small enough to be flushed several times, then a DeleteTable
// (a range tombstone in the same memtable), the table again, and a reopen
// (the WAL's replay inserts through the hints too). Every scan must hold
// exactly the rows written, in key order; a misplaced hint breaks the
// skip list's order (Debian's RocksDB asserts on it as well).
TEST_F(HintedInsertTest, InsertsInEveryOrderScanInKeyOrder) {
  ASSERT_TRUE(engine_->CreateTable("hints").ok());
  std::mt19937 rng(17);
  constexpr int kRows = 120;
  auto row_key = [](int i) {
    char rk[16];
    std::snprintf(rk, sizeof rk, "r%04d", i);
    return std::string(rk);
  };
  std::map<std::string, std::vector<int>> plan;  // partition -> row numbers, in write order
  for (int p = 0; p < 30; p++) {
    std::vector<int> rows(kRows);
    for (int i = 0; i < kRows; i++) rows[i] = i;
    if (p % 3 == 1) std::reverse(rows.begin(), rows.end());
    if (p % 3 == 2) std::shuffle(rows.begin(), rows.end(), rng);
    char pk[16];
    std::snprintf(pk, sizeof pk, "p%02d", p);
    plan[pk] = rows;
  }
  // Round robin over the partitions, so that their inserts interleave.
  auto write_all = [&](const std::string& tag) {
    for (int i = 0; i < kRows; i++) {
      for (const auto& [pk, rows] : plan) {
        Entity e = MakeEntity(pk, row_key(rows[i]));
        e.Set("tag", Value::String(tag)).Set("pad", Value::String(std::string(2000, 'x')));
        ASSERT_TRUE(Insert("hints", std::move(e)).ok());
      }
    }
  };
  std::vector<std::pair<std::string, std::string>> want;
  for (const auto& [pk, rows] : plan) {
    for (int i = 0; i < kRows; i++) want.emplace_back(pk, row_key(i));
  }
  write_all("first");
  EXPECT_EQ(Keys("hints"), want);
  ASSERT_TRUE(engine_->DeleteTable("hints").ok());
  ASSERT_TRUE(engine_->CreateTable("hints").ok());
  EXPECT_TRUE(Keys("hints").empty());
  write_all("second");
  EXPECT_EQ(Keys("hints"), want);
  Reopen();
  EXPECT_EQ(Keys("hints"), want);
}

}  // namespace
}  // namespace sidetable::testing
