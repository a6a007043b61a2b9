// Every entity operation, its ETag condition, and its error codes.
#include <gtest/gtest.h>

#include "engine/limits.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable {
namespace {

using testing::MakeEntity;

class OperationsTest : public testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
  }
  Entity MustGet(const std::string& pk, const std::string& rk) {
    auto e = engine_->Get("Tbl", pk, rk);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? *e : Entity{};
  }
};

TEST_F(OperationsTest, InsertThenGet) {
  Entity in = MakeEntity("p", "r", 7);
  in.Set("big", Value::Int64(1234567890123456789LL));
  auto w = Insert("Tbl", in);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->etags.size(), 1u);
  Entity out = MustGet("p", "r");
  EXPECT_EQ(out.properties, in.properties);
  EXPECT_EQ(out.etag, w->etags[0]);
  EXPECT_EQ(out.timestamp, w->timestamp);
  EXPECT_GT(out.timestamp, kMinDateTimeTicks);
}

TEST_F(OperationsTest, TimestampAndEtagComeFromTheEngine) {
  Entity in = MakeEntity("p", "r");
  in.timestamp = 5;
  in.etag = "W/\"forged\"";
  auto w = Insert("Tbl", in);
  ASSERT_TRUE(w.ok());
  Entity out = MustGet("p", "r");
  EXPECT_NE(out.timestamp, 5);
  EXPECT_NE(out.etag, "W/\"forged\"");
}

TEST_F(OperationsTest, InsertExistingIsConflict) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "r", 1)).ok());
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", MakeEntity("p", "r", 2)), Code::kEntityAlreadyExists);
}

TEST_F(OperationsTest, GetMissingIsNotFound) {
  EXPECT_EQ(engine_->Get("Tbl", "p", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(OperationsTest, GetWithProjection) {
  Entity in = MakeEntity("p", "r", 3);
  in.Set("extra", Value::Boolean(true));
  ASSERT_TRUE(Insert("Tbl", in).ok());
  std::vector<std::string> select = {"extra"};
  auto e = engine_->Get("Tbl", "p", "r", &select);
  ASSERT_TRUE(e.ok());
  ASSERT_EQ(e->properties.size(), 1u);
  EXPECT_EQ(*e->Find("extra"), Value::Boolean(true));
  EXPECT_EQ(e->partition_key, "p");
}

TEST_F(OperationsTest, UpdateReplacesAllProperties) {
  Entity in = MakeEntity("p", "r", 1);
  in.Set("gone", Value::Int32(1));
  auto w1 = Insert("Tbl", in);
  ASSERT_TRUE(w1.ok());
  Entity repl;
  repl.partition_key = "p";
  repl.row_key = "r";
  repl.Set("only", Value::String("x"));
  auto w2 = Run(std::move(Batch("Tbl").Update(repl, w1->etags[0])));
  ASSERT_TRUE(w2.ok()) << w2.status().ToString();
  EXPECT_NE(w2->etags[0], w1->etags[0]);
  Entity out = MustGet("p", "r");
  ASSERT_EQ(out.properties.size(), 1u);
  EXPECT_EQ(*out.Find("only"), Value::String("x"));
}

TEST_F(OperationsTest, MergeKeepsOtherProperties) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "r", 1)).ok());
  Entity m;
  m.partition_key = "p";
  m.row_key = "r";
  m.Set("n", Value::Int64(2)).Set("added", Value::Boolean(false));
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Merge(m))).ok());
  Entity out = MustGet("p", "r");
  EXPECT_EQ(*out.Find("n"), Value::Int64(2));  // type may change on merge
  EXPECT_EQ(*out.Find("name"), Value::String("entity 1"));
  EXPECT_EQ(*out.Find("added"), Value::Boolean(false));
}

TEST_F(OperationsTest, UpdateMergeDeleteOfMissingAreNotFound) {
  Entity e = MakeEntity("p", "r");
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Update(e))), Code::kResourceNotFound);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Merge(e))), Code::kResourceNotFound);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Delete("p", "r"))), Code::kResourceNotFound);
}

TEST_F(OperationsTest, StaleEtagIsPreconditionFailed) {
  auto w1 = Insert("Tbl", MakeEntity("p", "r", 1));
  ASSERT_TRUE(w1.ok());
  const std::string old_etag = w1->etags[0];
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Merge(MakeEntity("p", "r", 2), old_etag))).ok());
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Update(MakeEntity("p", "r", 3), old_etag))),
                         Code::kUpdateConditionNotSatisfied);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Merge(MakeEntity("p", "r", 3), old_etag))),
                         Code::kUpdateConditionNotSatisfied);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Delete("p", "r", old_etag))),
                         Code::kUpdateConditionNotSatisfied);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Delete("p", "r", "garbage"))),
                         Code::kUpdateConditionNotSatisfied);
  // The current ETag and "*" both work.
  Entity cur = MustGet("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Update(MakeEntity("p", "r", 4), cur.etag))).ok());
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Delete("p", "r", "*"))).ok());
  EXPECT_EQ(engine_->Get("Tbl", "p", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(OperationsTest, UpsertsNeverFailOnExistence) {
  ASSERT_TRUE(Run(std::move(Batch("Tbl").InsertOrReplace(MakeEntity("p", "a", 1)))).ok());
  ASSERT_TRUE(Run(std::move(Batch("Tbl").InsertOrReplace(MakeEntity("p", "a", 2)))).ok());
  EXPECT_EQ(*MustGet("p", "a").Find("n"), Value::Int32(2));
  Entity extra;
  extra.partition_key = "p";
  extra.row_key = "b";
  extra.Set("x", Value::Int32(1));
  ASSERT_TRUE(Run(std::move(Batch("Tbl").InsertOrMerge(extra))).ok());
  Entity more = extra;
  more.properties = {{"y", Value::Int32(2)}};
  ASSERT_TRUE(Run(std::move(Batch("Tbl").InsertOrMerge(more))).ok());
  Entity b = MustGet("p", "b");
  EXPECT_EQ(*b.Find("x"), Value::Int32(1));
  EXPECT_EQ(*b.Find("y"), Value::Int32(2));
}

TEST_F(OperationsTest, UpsertsTakeNoCondition) {
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Add(OpKind::kInsertOrReplace,
                                                      MakeEntity("p", "r"), "*"))),
                         Code::kInvalidInput);
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Add(OpKind::kInsert, MakeEntity("p", "r"),
                                                      "W/\"1\""))),
                         Code::kInvalidInput);
}

TEST_F(OperationsTest, EveryWriteYieldsANewEtag) {
  std::set<std::string> seen;
  auto w = Insert("Tbl", MakeEntity("p", "r"));
  ASSERT_TRUE(w.ok());
  seen.insert(w->etags[0]);
  for (int i = 0; i < 20; i++) {
    auto u = Run(std::move(Batch("Tbl").Merge(MakeEntity("p", "r", i))));
    ASSERT_TRUE(u.ok());
    EXPECT_TRUE(seen.insert(u->etags[0]).second);
  }
  // A deleted and re-inserted entity gets a fresh ETag too.
  ASSERT_TRUE(Run(std::move(Batch("Tbl").Delete("p", "r"))).ok());
  auto again = Insert("Tbl", MakeEntity("p", "r"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(seen.insert(again->etags[0]).second);
}

TEST_F(OperationsTest, LimitsAreEnforcedWithAzureCodes) {
  auto with = [](auto mutate) {
    Entity e = MakeEntity("p", "r");
    mutate(e);
    return e;
  };
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) { e.partition_key = std::string(513, 'k'); })),
                         Code::kKeyValueTooLarge);
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) { e.row_key = std::string(513, 'k'); })),
                         Code::kKeyValueTooLarge);
  for (const char* bad : {"a/b", "a\\b", "a#b", "a?b", "a\x01", "a\xC2\x85"}) {
    EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([&](Entity& e) { e.row_key = bad; })),
                           Code::kOutOfRangeInput);
    EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([&](Entity& e) { e.partition_key = bad; })),
                           Code::kOutOfRangeInput);
  }
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) { e.Set("bad-name", Value::Int32(1)); })),
                         Code::kPropertyNameInvalid);
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) { e.Set("RowKey", Value::Int32(1)); })),
                         Code::kPropertyNameInvalid);
  EXPECT_FAILS_UNCHANGED(
      Insert("Tbl", with([](Entity& e) { e.Set(std::string(256, 'n'), Value::Int32(1)); })),
      Code::kPropertyNameTooLong);
  EXPECT_FAILS_UNCHANGED(
      Insert("Tbl", with([](Entity& e) { e.Set("s", Value::String(std::string(32769, 'x'))); })),
      Code::kPropertyValueTooLarge);
  EXPECT_FAILS_UNCHANGED(
      Insert("Tbl", with([](Entity& e) { e.Set("b", Value::Binary(std::string(65537, 'x'))); })),
      Code::kPropertyValueTooLarge);
  EXPECT_FAILS_UNCHANGED(
      Insert("Tbl", with([](Entity& e) { e.Set("d", Value::DateTime(kMinDateTimeTicks - 1)); })),
      Code::kOutOfRangeInput);
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) {
                           for (int i = 0; i < 251; i++) e.Set("p" + std::to_string(i), Value::Int32(i));
                         })),
                         Code::kTooManyProperties);
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) {
                           for (int i = 0; i < 17; i++)
                             e.Set("s" + std::to_string(i), Value::String(std::string(32000, 'x')));
                         })),
                         Code::kEntityTooLarge);
  EXPECT_FAILS_UNCHANGED(Insert("Tbl", with([](Entity& e) { e.Set("s", Value::String("\xFF")); })),
                         Code::kInvalidInput);
}

TEST_F(OperationsTest, MergeThatWouldExceedLimitsFails) {
  Entity e = MakeEntity("p", "r");  // 2 properties
  for (int i = 0; i < 240; i++) e.Set("a" + std::to_string(i), Value::Int32(i));
  ASSERT_TRUE(Insert("Tbl", e).ok());
  Entity m;
  m.partition_key = "p";
  m.row_key = "r";
  for (int i = 0; i < 20; i++) m.Set("b" + std::to_string(i), Value::Int32(i));
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Merge(m))), Code::kTooManyProperties);
}

TEST_F(OperationsTest, DeleteCarriesNoProperties) {
  ASSERT_TRUE(Insert("Tbl", MakeEntity("p", "r")).ok());
  EXPECT_FAILS_UNCHANGED(Run(std::move(Batch("Tbl").Add(OpKind::kDelete, MakeEntity("p", "r"), "*"))),
                         Code::kInvalidInput);
}

TEST_F(OperationsTest, WritesSurviveReopen) {
  auto w = Insert("Tbl", MakeEntity("p", "r", 9));
  ASSERT_TRUE(w.ok());
  Reopen();
  Entity out = MustGet("p", "r");
  EXPECT_EQ(out.etag, w->etags[0]);
  EXPECT_EQ(*out.Find("n"), Value::Int32(9));
  // LSNs continue after a reopen.
  auto w2 = Insert("Tbl", MakeEntity("p", "r2"));
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(w2->lsn, w->lsn + 1);
}

}  // namespace
}  // namespace sidetable
