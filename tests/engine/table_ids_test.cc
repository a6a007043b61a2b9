// Table ids run out (found from outside in session 42): a table's rows are
// the key range [id, id + 1) of a 32-bit id, and ids are never reused. The
// 2^32 - 1st CreateTable got id UINT32_MAX, whose DeleteTable left a drop of
// [UINT32_MAX, 0) for the log trim: RocksDB refused that write after it
// reached the WAL, writes stopped, and the directory never opened again
// ("end key comes before start key", --accept-wal-damage included). The
// next CreateTable wrapped to id 0, then 1: a new table that held the first
// table's rows. The last id is now UINT32_MAX - 1; a create past it fails
// and changes nothing.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "engine/internal/codec.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

class TableIdsTest : public EngineTest {
 protected:
  // Sets the id the next table gets, as ~4 billion creations would have.
  void SetNextTableId(uint64_t id) {
    engine_.reset();
    rocksdb::Options o;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, {}},
                                                        {"entities", {}},
                                                        {"changelog", {}},
                                                        {"requests", {}},
                                                        {"images", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.Sub("db"), cfs, &handles, &db).ok());
    std::string v;
    codec::PutVarint64(&v, id);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), handles[0], "next_table_id", v).ok());
    for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    delete db;
    Reopen();
  }
};

TEST_F(TableIdsTest, PastTheLastIdCreateTableFailsAndTheDirectoryStaysUsable) {
  ASSERT_TRUE(engine_->CreateTable("First").ok());
  ASSERT_TRUE(Insert("First", MakeEntity("p", "r", 1)).ok());
  SetNextTableId(uint64_t{UINT32_MAX} - 1);

  ASSERT_TRUE(engine_->CreateTable("Last").ok());
  EXPECT_EQ(engine_->GetTable("Last")->id, UINT32_MAX - 1);
  ASSERT_TRUE(Insert("Last", MakeEntity("p", "r", 2)).ok());
  EXPECT_FAILS_UNCHANGED(engine_->CreateTable("Beyond"), Code::kInternal);
  EXPECT_FAILS_UNCHANGED(engine_->CreateTable("Wrapped"), Code::kInternal);

  // The last table's drop is a valid range: the trim past it commits, and
  // the directory opens again.
  ASSERT_TRUE(engine_->DeleteTable("Last").ok());
  auto trimmed = engine_->TrimChanges(engine_->Stats().last_lsn + 1);
  ASSERT_TRUE(trimmed.ok()) << trimmed.status().ToString();
  ASSERT_TRUE(Insert("First", MakeEntity("p", "after-trim", 3)).ok());
  Reopen();
  EXPECT_TRUE(engine_->Get("First", "p", "r").ok());
  EXPECT_TRUE(engine_->Get("First", "p", "after-trim").ok());
  // Still none left after the restart.
  EXPECT_FAILS_UNCHANGED(engine_->CreateTable("Beyond"), Code::kInternal);
}

}  // namespace
}  // namespace sidetable::testing
