// The engine returns entities in Azure's order: PartitionKey, then RowKey,
// ordinal by UTF-16 code unit, for random Unicode keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "testing/random_keys.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable {
namespace {

using testing::MakeEntity;
using OrderTest = testing::EngineTest;

TEST_F(OrderTest, ScanOrderIsAzureOrdinalOrder) {
  ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
  testing::RandomKeys gen(1234);
  std::set<std::pair<std::u16string, std::u16string>> expected;
  std::map<std::pair<std::u16string, std::u16string>, std::pair<std::string, std::string>> utf8;
  for (int i = 0; i < 3000; i++) {
    std::string pk = i % 2 ? gen.FromSmallSet() : gen.Next(4);
    std::string rk = gen.Next(6);
    auto key = std::make_pair(testing::ToUtf16(pk), testing::ToUtf16(rk));
    if (!expected.insert(key).second) continue;
    utf8[key] = {pk, rk};
    ASSERT_TRUE(Run(std::move(Batch("Tbl").InsertOrReplace(MakeEntity(pk, rk, i)))).ok());
  }
  auto cur = engine_->Scan("Tbl", ScanBounds{}, nullptr);
  ASSERT_TRUE(cur.ok());
  auto want = expected.begin();
  size_t n = 0;
  for (; (*cur)->Valid(); (*cur)->Next(), ++want, ++n) {
    ASSERT_NE(want, expected.end());
    ASSERT_EQ((*cur)->partition_key(), utf8[*want].first) << "at " << n;
    ASSERT_EQ((*cur)->row_key(), utf8[*want].second) << "at " << n;
  }
  EXPECT_EQ(n, expected.size());
  ASSERT_TRUE((*cur)->status().ok());
}

TEST_F(OrderTest, PartitionScanStaysInItsPartition) {
  ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
  // "a" is a prefix of "ab"; "a" + U+FFFF and "a" + U+1F600 are neighbours.
  for (std::string pk : {"a", "ab", "a\xEF\xBF\xBF", "a\xF0\x9F\x98\x80", "", "b"}) {
    for (std::string rk : {"", "x", "\xEF\xBF\xBF"}) {
      ASSERT_TRUE(Insert("Tbl", MakeEntity(pk, rk)).ok());
    }
  }
  for (std::string pk : {"a", "ab", "", "b"}) {
    auto cur = engine_->Scan("Tbl", ScanBounds::Partition(pk), nullptr);
    ASSERT_TRUE(cur.ok());
    int n = 0;
    for (; (*cur)->Valid(); (*cur)->Next(), n++) EXPECT_EQ((*cur)->partition_key(), pk);
    EXPECT_EQ(n, 3) << pk;
  }
  // Seek inside bounds.
  auto cur = engine_->Scan("Tbl", ScanBounds::Partition("a"), nullptr);
  ASSERT_TRUE(cur.ok());
  (*cur)->Seek("a", "y");
  ASSERT_TRUE((*cur)->Valid());
  EXPECT_EQ((*cur)->row_key(), "\xEF\xBF\xBF");
  (*cur)->Next();
  EXPECT_FALSE((*cur)->Valid());
}

}  // namespace
}  // namespace sidetable
