#include <gtest/gtest.h>

#include <random>

#include "tests/engine/engine_fixture.h"
#include "testing/change_records.h"

namespace sidetable {
namespace {

using testing::MakeEntity;

class ChangelogTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Tbl").ok());  // LSN 1
    for (int i = 0; i < 50; i++) {
      ASSERT_TRUE(Insert("Tbl", MakeEntity("p" + std::to_string(i % 5), "r" + std::to_string(i), i)).ok());
    }
  }
};

TEST_F(ChangelogTest, ContiguousFromOne) {
  auto all = engine_->ReadChanges(0, 1000);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->records.size(), 51u);
  for (size_t i = 0; i < all->records.size(); i++) EXPECT_EQ(all->records[i].lsn, i + 1);
  EXPECT_EQ(all->last_lsn, 51u);
  EXPECT_EQ(engine_->Stats().last_lsn, 51u);
}

TEST_F(ChangelogTest, PagesByCountAndBytes) {
  auto page = engine_->ReadChanges(10, 5);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 5u);
  EXPECT_EQ(page->records.front().lsn, 10u);
  auto tiny = engine_->ReadChanges(10, 100, 1);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->records.size(), 1u);  // at least one record, even over the byte bound
  auto past = engine_->ReadChanges(52, 100);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->records.empty());
}

// The headers ReadChanges gives, without the operations; bounded by count,
// never before the log's first record or past its last.
TEST_F(ChangelogTest, HeadersAreReadChangesWithoutTheOperations) {
  auto full = engine_->ReadChanges(1, 1000);
  auto heads = engine_->ReadChangeHeaders(1, 1000);
  ASSERT_TRUE(full.ok() && heads.ok());
  ChangeBatch stripped = *full;
  for (ChangeRecord& r : stripped.records) r.ops.clear();
  testing::ExpectSameChanges(*heads, stripped);
  auto five = engine_->ReadChangeHeaders(10, 5);
  ASSERT_TRUE(five.ok());
  ASSERT_EQ(five->records.size(), 5u);
  EXPECT_EQ(five->records.front().lsn, 10u);
  EXPECT_EQ(five->records.back().lsn, 14u);
  ASSERT_TRUE(engine_->TrimChanges(21).ok());
  auto trimmed = engine_->ReadChangeHeaders(3, 2);
  ASSERT_TRUE(trimmed.ok());
  EXPECT_EQ(trimmed->first_available_lsn, 21u);
  ASSERT_EQ(trimmed->records.size(), 2u);
  EXPECT_EQ(trimmed->records.front().lsn, 21u);
  auto past = engine_->ReadChangeHeaders(52, 100);
  ASSERT_TRUE(past.ok());
  EXPECT_TRUE(past->records.empty());
}

TEST_F(ChangelogTest, TrimRemovesOnlyBelowAndSurvivesReopen) {
  auto first = engine_->TrimChanges(21);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 21u);
  auto rest = engine_->ReadChanges(0, 1000);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->first_available_lsn, 21u);
  ASSERT_EQ(rest->records.size(), 31u);
  EXPECT_EQ(rest->records.front().lsn, 21u);
  // Rows are untouched by trimming.
  EXPECT_TRUE(engine_->Get("Tbl", "p0", "r0").ok());
  Reopen();
  auto again = engine_->ReadChanges(0, 1000);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->first_available_lsn, 21u);
  EXPECT_EQ(again->records.size(), 31u);
}

TEST_F(ChangelogTest, TrimEverythingKeepsLsnsMonotonicAcrossReopen) {
  ASSERT_TRUE(engine_->TrimChanges(1000).ok());  // capped at last + 1
  auto empty = engine_->ReadChanges(0, 10);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->records.empty());
  EXPECT_EQ(empty->first_available_lsn, 52u);
  Reopen();
  auto w = Insert("Tbl", MakeEntity("p", "after"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->lsn, 52u);
}

TEST_F(ChangelogTest, RetentionBySizeNeverPassesTheKeepMark) {
  options_.changelog_max_bytes = 1;  // everything is over the bound
  options_.changelog_max_age_seconds = 0;
  Reopen();
  auto first = engine_->ApplyRetention(30);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 30u);
  auto log = engine_->ReadChanges(0, 1000);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->records.front().lsn, 30u);
}

TEST_F(ChangelogTest, RetentionByAge) {
  options_.changelog_max_bytes = 0;
  options_.changelog_max_age_seconds = 3600;
  Reopen();
  // Everything is younger than an hour: nothing goes.
  auto kept = engine_->ApplyRetention(UINT64_MAX);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 1u);
  options_.changelog_max_age_seconds = 0;  // disabled both: nothing goes either
  Reopen();
  EXPECT_EQ(*engine_->ApplyRetention(UINT64_MAX), 1u);
}

TEST_F(ChangelogTest, RetentionByAgeTrimsOldRecords) {
  int64_t now = NowTicks() + 100 * kTicksPerSecond;  // ahead of the records above
  options_.clock = [&now] { return now; };
  options_.changelog_max_bytes = 0;
  options_.changelog_max_age_seconds = 60;
  Reopen();
  // Ten records at the fake "now"; then time moves on by 30 s.
  uint64_t young_from = 0;
  for (int i = 0; i < 10; i++) {
    auto w = Insert("Tbl", MakeEntity("young", "r" + std::to_string(i)));
    ASSERT_TRUE(w.ok());
    if (i == 0) young_from = w->lsn;
  }
  now += 30 * kTicksPerSecond;
  // The first 51 records are >60 s older than the clock; the 10 young ones are 30 s old.
  auto first = engine_->ApplyRetention(UINT64_MAX);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, young_from);
  now += 60 * kTicksPerSecond;
  EXPECT_EQ(*engine_->ApplyRetention(UINT64_MAX), young_from + 10);  // all expired
}

TEST_F(ChangelogTest, RetentionByGenerousSizeKeepsAll) {
  options_.changelog_max_bytes = 1 << 30;
  options_.changelog_max_age_seconds = 0;
  Reopen();
  EXPECT_EQ(*engine_->ApplyRetention(UINT64_MAX), 1u);
}

}  // namespace
}  // namespace sidetable

namespace sidetable {
namespace {

TEST_F(ChangelogTest, SettingsPersistAcrossReopen) {
  auto missing = engine_->GetSetting("publisher/watermark");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  ASSERT_TRUE(engine_->PutSetting("publisher/watermark", "42").ok());
  ASSERT_TRUE(engine_->PutSetting("publisher/watermark", "43").ok());
  Reopen();
  auto got = engine_->GetSetting("publisher/watermark");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->value_or(""), "43");
  // Settings live apart from the catalog: a table of a similar name is unaffected.
  EXPECT_EQ(engine_->ListTables().size(), 1u);
}

// The sidecar's watermarks: several keys in one write, listed by prefix
// (and only that prefix) after a reopen.
TEST_F(ChangelogTest, SettingsWrittenTogetherAreListedByPrefix) {
  ASSERT_TRUE(engine_->PutSettings({{"wm/a/b", "1"}, {"wm/a/c", "2"}, {"wm/b/a", "3"}, {"wn/x", "4"}}).ok());
  ASSERT_TRUE(engine_->PutSettings({}).ok());
  ASSERT_TRUE(engine_->PutSetting("wm/a/b", "5").ok());
  Reopen();
  auto all = engine_->ListSettings("wm/");
  ASSERT_TRUE(all.ok());
  using KV = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(*all, (KV{{"wm/a/b", "5"}, {"wm/a/c", "2"}, {"wm/b/a", "3"}}));
  auto some = engine_->ListSettings("wm/a/");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->size(), 2u);
  auto none = engine_->ListSettings("zz");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(engine_->GetSetting("wn/x")->value_or(""), "4");
}

}  // namespace
}  // namespace sidetable

namespace sidetable {
namespace {

TEST_F(ChangelogTest, ApproximateBytesShrinkWithTheRange) {
  const uint64_t all = engine_->ApproximateChangeBytes(1);
  const uint64_t half = engine_->ApproximateChangeBytes(26);
  EXPECT_GT(all, 0u);
  EXPECT_LE(half, all);
  EXPECT_EQ(engine_->ApproximateChangeBytes(1000), 0u);
}

// Raw pages (ReadRawChanges, what the sidecar ships when asked) decode to
// exactly the records ReadChanges returns, under the same bounds.
TEST_F(ChangelogTest, RawPagesDecodeToTheSameRecords) {
  Batch b("Tbl");
  b.InsertOrMerge(MakeEntity("p1", "r1", 99)).Delete("p1", "r6");
  b.SetClientRequestId("req-1");
  ASSERT_TRUE(Run(b).ok());  // LSN 52: before images, a delete, a request id
  for (uint64_t from : {0, 1, 10, 51, 52, 53}) {
    for (size_t max : {size_t{1}, size_t{5}, size_t{1000}}) {
      for (size_t bytes : {size_t{1}, size_t{300}, size_t{16} << 20}) {
        SCOPED_TRACE(std::to_string(from) + "/" + std::to_string(max) + "/" + std::to_string(bytes));
        auto want = engine_->ReadChanges(from, max, bytes);
        ASSERT_TRUE(want.ok());
        std::string page = "prefix";  // appended to, not replaced
        auto raw = engine_->ReadRawChanges(from, max, bytes, &page);
        ASSERT_TRUE(raw.ok()) << raw.status().ToString();
        ASSERT_EQ(page.substr(0, 6), "prefix");
        EXPECT_EQ(raw->records, want->records.size());
        EXPECT_EQ(raw->first_available_lsn, want->first_available_lsn);
        EXPECT_EQ(raw->last_lsn, want->last_lsn);
        std::vector<ChangeRecord> got;
        ASSERT_TRUE(DecodeChangePage(std::string_view(page).substr(6), &got, raw->records).ok());
        ::sidetable::testing::ExpectSameRecords(got, want->records);
      }
    }
  }
}

// A truncated or corrupt raw page is an error naming the record, never a
// crash or a silently shorter page.
TEST_F(ChangelogTest, TruncatedOrCorruptRawPagesFailClearly) {
  std::string page;
  auto raw = engine_->ReadRawChanges(1, 10, 1 << 20, &page);
  ASSERT_TRUE(raw.ok());
  ASSERT_EQ(raw->records, 10u);
  std::vector<ChangeRecord> out;
  ASSERT_TRUE(DecodeChangePage(page, &out, 10).ok());
  ASSERT_EQ(out.size(), 10u);
  for (size_t cut = 0; cut < page.size(); cut++) {
    out.clear();
    Status s = DecodeChangePage(std::string_view(page).substr(0, cut), &out, 10);
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), Code::kInternal);
    EXPECT_NE(s.message().find("record"), std::string::npos) << s.ToString();
    EXPECT_LT(out.size(), 10u);
  }
  // A page holding a different number of records than announced.
  out.clear();
  Status more = DecodeChangePage(page, &out, 9);
  EXPECT_EQ(more.code(), Code::kInternal);
  EXPECT_NE(more.message().find("10 records, 9 announced"), std::string::npos) << more.ToString();
  out.clear();
  EXPECT_FALSE(DecodeChangePage(page, &out, 1u << 30).ok()) << "more records than bytes";
  // Bytes changed anywhere: decoded or refused, never a crash.
  std::mt19937 rng(11);
  size_t refused = 0;
  for (int i = 0; i < 5000; i++) {
    std::string bad = page;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); k++) bad[rng() % bad.size()] = static_cast<char>(rng());
    out.clear();
    refused += !DecodeChangePage(bad, &out, 10).ok();
  }
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace sidetable
