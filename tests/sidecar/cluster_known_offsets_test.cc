// KnownOffsets (sidecar/cluster/known_offsets.h): what a member knows each
// change-topic partition held, its file, and the decision that holds a shard
// whose partition ends before it (Kafka lost and re-created).
#include "sidecar/cluster/known_offsets.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace sidetable::cluster {
namespace {

const std::string kKnownTopic = "sidetable.orders.changes";

TEST(KnownOffsetsTest, RisesOnlyAndSurvivesAReopen) {
  sidetable::testing::TempDir dir;
  const std::string path = dir.Sub("cluster-change-offsets");
  {
    auto k = KnownOffsets::Open(path, kKnownTopic);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    EXPECT_EQ((*k)->Of(0), 0);
    EXPECT_TRUE((*k)->Note(0, 12));
    EXPECT_FALSE((*k)->Note(0, 5)) << "an end offset never goes down";
    EXPECT_FALSE((*k)->Note(1, 0));
    EXPECT_TRUE((*k)->Note(3, 7));
    ASSERT_TRUE((*k)->Flush().ok());
  }
  auto k = KnownOffsets::Open(path, kKnownTopic);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ((*k)->Snapshot(), (std::map<int32_t, int64_t>{{0, 12}, {3, 7}}));
  // Another change topic's file says nothing about this one.
  auto other = KnownOffsets::Open(path, "sidetable.other.changes");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*other)->Snapshot().empty());
}

TEST(KnownOffsetsTest, ATornOrForeignFileStopsTheStartNamingIt) {
  sidetable::testing::TempDir dir;
  const std::string path = dir.Sub("cluster-change-offsets");
  const std::string whole = EncodeKnownOffsets(kKnownTopic, {{0, 12}, {3, 7}});
  for (const std::string& text : {whole.substr(0, whole.size() - 4), std::string("hello\n"),
                                  whole.substr(0, whole.find("end "))}) {
    std::ofstream(path, std::ios::trunc) << text;
    auto k = KnownOffsets::Open(path, kKnownTopic);
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_EQ(k.status().code(), Code::kInternal);
    EXPECT_NE(k.status().message().find(path), std::string::npos);
  }
}

// The decision: a partition that ends before an offset the member knew was
// on it lost records (re-created, truncated); retention (a later start) is
// not that, and neither is a partition that grew.
TEST(KnownOffsetsTest, APartitionEndingBeforeWhatWasKnownLostRecords) {
  EXPECT_FALSE(LostHistory(kKnownTopic, 2, 0, 0, 0)) << "nothing known";
  EXPECT_FALSE(LostHistory(kKnownTopic, 2, 30, 0, 30));
  EXPECT_FALSE(LostHistory(kKnownTopic, 2, 30, 25, 31))
      << "retention moves the start, never the end";
  auto lost = LostHistory(kKnownTopic, 2, 30, 0, 0);
  ASSERT_TRUE(lost);
  for (const char* what :
       {"sidetable.orders.changes partition 2", "ends at offset 0", "up to 29", "kept"}) {
    EXPECT_NE(lost->find(what), std::string::npos) << what << " in " << *lost;
  }
}

}  // namespace
}  // namespace sidetable::cluster
