// The map of local table ids to cluster incarnations and its file
// (sidecar/cluster/table_incarnations.h).
#include "sidecar/cluster/table_incarnations.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"

namespace sidetable::cluster {
namespace {

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

TEST(TableIncarnationsTest, AMissingFileIsAnEmptyMapAndEverySetIsOnDiskAtOnce) {
  testing::TempDir dir;
  const std::string path = dir.Sub("incarnations");
  auto t = TableIncarnations::Open(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Of(1), 0u);
  EXPECT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE((*t)->Set(1, 5).ok());
  ASSERT_TRUE((*t)->Set(7, 12).ok());
  ASSERT_TRUE((*t)->Set(1, 5).ok());  // unchanged
  EXPECT_EQ((*t)->Of(1), 5u);
  EXPECT_EQ((*t)->Of(7), 12u);
  EXPECT_EQ((*t)->Of(2), 0u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  // What a restart reads: the same map, without any Stop or flush.
  auto again = TableIncarnations::Open(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->Snapshot(), (std::map<uint32_t, uint64_t>{{1, 5}, {7, 12}}));
}

TEST(TableIncarnationsTest, TheTextRoundTrips) {
  for (const auto& map : std::vector<std::map<uint32_t, uint64_t>>{
           {}, {{1, 1}}, {{1, 3}, {2, 3}, {UINT32_MAX, UINT64_MAX}}}) {
    std::map<uint32_t, uint64_t> back{{99, 99}};
    ASSERT_TRUE(DecodeTableIncarnations(EncodeTableIncarnations(map), &back).ok());
    EXPECT_EQ(back, map);
  }
}

TEST(TableIncarnationsTest, ATornOrForeignFileIsRefusedNamingIt) {
  const std::string whole = EncodeTableIncarnations({{1, 5}, {2, 9}});
  std::map<uint32_t, uint64_t> out;
  // Every cut short of the whole text lacks its trailer (or has a wrong one).
  for (size_t cut = 0; cut < whole.size(); cut++) {
    EXPECT_FALSE(DecodeTableIncarnations(whole.substr(0, cut), &out).ok()) << "cut at " << cut;
    EXPECT_TRUE(out.empty());
  }
  for (const std::string bad : {
           "something else\n1 5\nend 1\n",                             // not ours
           "sidetable-table-incarnations 1\n1 5\nend 2\n",             // the trailer counts another map
           "sidetable-table-incarnations 1\n1 x\nend 1\n",             // malformed line
           "sidetable-table-incarnations 1\n0 5\nend 1\n",             // no table has id 0
           "sidetable-table-incarnations 1\n1 0\nend 1\n",             // 0 means unknown
           "sidetable-table-incarnations 1\n1 5 6\nend 1\n",           // trailing text
           "sidetable-table-incarnations 1\n1 5\nend 1\n2 6\n",        // text after the trailer
       }) {
    EXPECT_FALSE(DecodeTableIncarnations(bad, &out).ok()) << bad;
  }

  testing::TempDir dir;
  const std::string path = dir.Sub("incarnations");
  WriteText(path, whole.substr(0, whole.size() - 4));
  auto t = TableIncarnations::Open(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInternal);
  EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();

  // A temp file left by a crash before its rename is not read.
  WriteText(path, whole);
  WriteText(path + ".tmp", "torn");
  t = TableIncarnations::Open(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->Of(2), 9u);
}

TEST(TableIncarnationsTest, AFailedWriteIsAnErrorAndTheMapInMemoryKeepsTheEntry) {
  testing::TempDir dir;
  auto t = TableIncarnations::Open(dir.Sub("missing-dir/incarnations"));
  ASSERT_TRUE(t.ok());
  Status s = (*t)->Set(3, 4);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ((*t)->Of(3), 4u);
}

TEST(TableIncarnationsTest, AnEmptyPathKeepsTheMapInMemoryOnly) {
  auto t = TableIncarnations::Open("");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Set(3, 4).ok());
  EXPECT_EQ((*t)->Of(3), 4u);
}

TEST(TableIncarnationsTest, TheStartUpDecision) {
  // A map from before incarnations were kept: the local table is taken to be the catalog's.
  EXPECT_EQ(CheckLocalTable(0, 7), LocalTableCheck::kMap);
  EXPECT_EQ(CheckLocalTable(7, 7), LocalTableCheck::kKeep);
  // Missed a delete and a create while down: the local table is the predecessor.
  EXPECT_EQ(CheckLocalTable(3, 7), LocalTableCheck::kRecreate);
  EXPECT_EQ(CheckLocalTable(9, 7), LocalTableCheck::kRecreate);
}

}  // namespace
}  // namespace sidetable::cluster
