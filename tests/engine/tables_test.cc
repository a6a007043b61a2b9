#include <gtest/gtest.h>

#include "tests/engine/engine_fixture.h"

namespace sidetable {
namespace {

using testing::EngineTest;
using testing::MakeEntity;

TEST_F(EngineTest, CreateListGetDelete) {
  ASSERT_TRUE(engine_->CreateTable("Customers").ok());
  ASSERT_TRUE(engine_->CreateTable("orders").ok());
  ASSERT_TRUE(engine_->CreateTable("Orders2026").ok());
  auto all = engine_->ListTables();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "Customers");
  auto some = engine_->ListTables("ORD");
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].name, "orders");
  EXPECT_EQ(some[1].name, "Orders2026");
  EXPECT_TRUE(engine_->GetTable("customers").ok());  // case-insensitive
  ASSERT_TRUE(engine_->DeleteTable("CUSTOMERS").ok());
  EXPECT_EQ(engine_->GetTable("Customers").status().code(), Code::kTableNotFound);
  EXPECT_EQ(engine_->ListTables().size(), 2u);
}

TEST_F(EngineTest, CreateExistingIsConflictAndChangesNothing) {
  ASSERT_TRUE(engine_->CreateTable("Customers").ok());
  EXPECT_FAILS_UNCHANGED(engine_->CreateTable("customers"), Code::kTableAlreadyExists);
}

TEST_F(EngineTest, BadTableNamesGetAzuresCodes) {
  for (std::string bad : std::vector<std::string>{"1abc", "a-bc", "tables", "Tables"}) {
    EXPECT_FAILS_UNCHANGED(engine_->CreateTable(bad), Code::kInvalidResourceName);
  }
  for (std::string bad : std::vector<std::string>{"ab", std::string(64, 'x')}) {
    EXPECT_FAILS_UNCHANGED(engine_->CreateTable(bad), Code::kOutOfRangeInput);
  }
}

TEST_F(EngineTest, MissingTableErrors) {
  EXPECT_FAILS_UNCHANGED(engine_->DeleteTable("nope"), Code::kTableNotFound);
  EXPECT_FAILS_UNCHANGED(Insert("nope", MakeEntity("p", "r")), Code::kTableNotFound);
  EXPECT_EQ(engine_->Get("nope", "p", "r").status().code(), Code::kTableNotFound);
  EXPECT_EQ(engine_->Scan("nope", ScanBounds{}, nullptr).status().code(), Code::kTableNotFound);
}

TEST_F(EngineTest, RecreatedTableStartsEmpty) {
  ASSERT_TRUE(engine_->CreateTable("Items").ok());
  for (int i = 0; i < 50; i++) ASSERT_TRUE(Insert("Items", MakeEntity("p", "r" + std::to_string(i))).ok());
  ASSERT_TRUE(engine_->DeleteTable("Items").ok());
  ASSERT_TRUE(engine_->CreateTable("Items").ok());
  EXPECT_EQ(engine_->Get("Items", "p", "r1").status().code(), Code::kResourceNotFound);
  auto cur = engine_->Scan("Items", ScanBounds{}, nullptr);
  ASSERT_TRUE(cur.ok());
  EXPECT_FALSE((*cur)->Valid());
}

TEST_F(EngineTest, DeletedTableDoesNotLeakIntoNeighbours) {
  ASSERT_TRUE(engine_->CreateTable("Aaa").ok());
  ASSERT_TRUE(engine_->CreateTable("Bbb").ok());
  ASSERT_TRUE(engine_->CreateTable("Ccc").ok());
  for (const char* t : {"Aaa", "Bbb", "Ccc"}) {
    for (int i = 0; i < 20; i++) ASSERT_TRUE(Insert(t, MakeEntity("p", "r" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(engine_->DeleteTable("Bbb").ok());
  for (const char* t : {"Aaa", "Ccc"}) {
    auto cur = engine_->Scan(t, ScanBounds{}, nullptr);
    ASSERT_TRUE(cur.ok());
    int n = 0;
    for (; (*cur)->Valid(); (*cur)->Next()) n++;
    EXPECT_EQ(n, 20) << t;
  }
}

TEST_F(EngineTest, TablesSurviveReopen) {
  ASSERT_TRUE(engine_->CreateTable("Keep").ok());
  ASSERT_TRUE(engine_->CreateTable("Drop").ok());
  ASSERT_TRUE(engine_->DeleteTable("Drop").ok());
  ASSERT_TRUE(Insert("Keep", MakeEntity("p", "r", 5)).ok());
  Reopen();
  auto tables = engine_->ListTables();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "Keep");
  auto e = engine_->Get("Keep", "p", "r");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->Find("n"), Value::Int32(5));
  // Table ids are never reused after a reopen either.
  ASSERT_TRUE(engine_->CreateTable("Drop").ok());
  EXPECT_GT(engine_->GetTable("Drop")->id, tables[0].id + 1);
}

TEST_F(EngineTest, TableEventsAreInTheChangeLog) {
  ASSERT_TRUE(engine_->CreateTable("Audit", "alice").ok());
  ASSERT_TRUE(engine_->DeleteTable("Audit", "bob").ok());
  auto log = engine_->ReadChanges(1, 10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->records.size(), 2u);
  EXPECT_EQ(log->records[0].kind, ChangeKind::kTableCreated);
  EXPECT_EQ(log->records[0].caller, "alice");
  EXPECT_EQ(log->records[1].kind, ChangeKind::kTableDeleted);
  EXPECT_EQ(log->records[1].caller, "bob");
  EXPECT_EQ(log->records[1].table, "Audit");
}

}  // namespace
}  // namespace sidetable
