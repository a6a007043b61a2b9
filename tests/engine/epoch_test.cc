// Scale-out epochs (docs/scale-out.md): with Batch::SetEpoch(E > 0) every
// version the engine derives from a commit is E << 40 | lsn (the row, its
// ETag, the change record's ops, the WriteResult, a retried request id's
// remembered outcome); epoch 0 stays as before; the bounds are refused.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include "engine/etag.h"
#include "engine/internal/codec.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

constexpr uint64_t Stamp(uint64_t epoch, uint64_t lsn) { return epoch << 40 | lsn; }

class EpochTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Items", "").ok());
  }
  Result<WriteResult> RunEpoch(Batch b, uint64_t epoch) {
    b.SetEpoch(epoch);
    return Run(std::move(b));
  }
  ChangeRecord LastRecord() {
    auto changes = engine_->ReadChanges(engine_->Stats().last_lsn, 1);
    EXPECT_TRUE(changes.ok());
    EXPECT_EQ(changes->records.size(), 1u);
    return changes->records.empty() ? ChangeRecord{} : changes->records[0];
  }
};

// Readers fence records whose epoch is below the shard's newest claim: an
// archive request of the current owner must carry its epoch too, or every
// worker would skip it (issue 19).
TEST_F(EpochTest, AnArchiveRequestCarriesItsEpoch) {
  auto lsn = engine_->RequestArchive("Items", "p", {"a", "b"}, "Archive", "app", 9);
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  ChangeRecord rec = LastRecord();
  EXPECT_EQ(rec.kind, ChangeKind::kArchiveRequested);
  EXPECT_EQ(rec.epoch, 9u);
  EXPECT_EQ(rec.target_table, "Archive");
  // Without one, as before.
  ASSERT_TRUE(engine_->RequestArchive("Items", "p", {"a"}, "Archive", "app").ok());
  EXPECT_EQ(LastRecord().epoch, 0u);
}

TEST_F(EpochTest, AnArchiveRequestBeyondTheEpochBitsIsRefused) {
  const uint64_t before = engine_->Stats().last_lsn;
  auto lsn = engine_->RequestArchive("Items", "p", {"a"}, "Archive", "app", uint64_t{1} << 24);
  ASSERT_FALSE(lsn.ok());
  EXPECT_EQ(lsn.status().code(), Code::kInvalidInput);
  EXPECT_EQ(engine_->Stats().last_lsn, before);  // nothing committed
}

TEST_F(EpochTest, AnEpochStampsEveryVersionOfTheCommit) {
  Batch b("Items");
  b.Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 2));
  auto r = RunEpoch(std::move(b), 7);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const uint64_t v = Stamp(7, r->lsn);
  EXPECT_EQ(r->etags, (std::vector<std::string>{MakeETag(v), MakeETag(v)}));

  auto e = engine_->Get("Items", "p", "a");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->etag, MakeETag(v));
  EXPECT_EQ(VersionFromETag(e->etag), v);
  // The same version read in place.
  ASSERT_TRUE(engine_->GetRow("Items", "p", "b", [&](const RowView& row) {
    EXPECT_EQ(row.version(), v);
    return Status::OK();
  }).ok());

  ChangeRecord rec = LastRecord();
  EXPECT_EQ(rec.epoch, 7u);
  EXPECT_EQ(rec.lsn, r->lsn);
  ASSERT_EQ(rec.ops.size(), 2u);
  for (const ChangeOp& op : rec.ops) {
    EXPECT_EQ(op.version, v);
    EXPECT_EQ(op.etag, MakeETag(v));
  }

  // If-Match with the stamped ETag works; the old one after an update does not.
  auto upd = RunEpoch(std::move(Batch("Items").Update(MakeEntity("p", "a", 3), MakeETag(v))), 7);
  ASSERT_TRUE(upd.ok()) << upd.status().ToString();
  EXPECT_EQ(upd->etags[0], MakeETag(Stamp(7, upd->lsn)));
  EXPECT_FAILS_UNCHANGED(RunEpoch(std::move(Batch("Items").Update(MakeEntity("p", "a", 4), MakeETag(v))), 7),
                         Code::kUpdateConditionNotSatisfied);
}

TEST_F(EpochTest, EpochZeroWritesTheOldFormatAndVersionIsTheLsn) {
  auto r = Insert("Items", MakeEntity("p", "a"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->etags[0], MakeETag(r->lsn));
  std::string page;
  auto raw = engine_->ReadRawChanges(r->lsn, 1, 1 << 20, &page);
  ASSERT_TRUE(raw.ok());
  // varint length, then the format byte: 2, as before scale-out.
  codec::Reader reader(page);
  std::string_view value;
  ASSERT_TRUE(reader.LengthPrefixed(&value));
  EXPECT_EQ(static_cast<uint8_t>(value[0]), codec::kChangeFormat);
  EXPECT_EQ(LastRecord().epoch, 0u);

  auto r3 = RunEpoch(std::move(Batch("Items").Insert(MakeEntity("p", "b"))), 1);
  ASSERT_TRUE(r3.ok());
  page.clear();
  ASSERT_TRUE(engine_->ReadRawChanges(r3->lsn, 1, 1 << 20, &page).ok());
  codec::Reader reader3(page);
  ASSERT_TRUE(reader3.LengthPrefixed(&value));
  EXPECT_EQ(static_cast<uint8_t>(value[0]), codec::kChangeFormatEpoch);
}

TEST_F(EpochTest, VersionsOfAnEntityGrowAcrossEpochs) {
  auto a = RunEpoch(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a"))), 2);
  ASSERT_TRUE(a.ok());
  // An epoch-0 write after it would go backwards; a later epoch goes forward.
  auto b = RunEpoch(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a"))), 3);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(*VersionFromETag(b->etags[0]), *VersionFromETag(a->etags[0]));
}

TEST_F(EpochTest, AnEpochBeyond24BitsIsRefusedWithNothingChanged) {
  EXPECT_FAILS_UNCHANGED(RunEpoch(std::move(Batch("Items").Insert(MakeEntity("p", "a"))), 1u << 24),
                         Code::kInvalidInput);
  auto ok = RunEpoch(std::move(Batch("Items").Insert(MakeEntity("p", "a"))), (1u << 24) - 1);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(VersionFromETag(ok->etags[0]), Stamp((1u << 24) - 1, ok->lsn));
}

TEST_F(EpochTest, AnLsnBeyond40BitsIsRefusedUnderAnEpochOnly) {
  // Move the log to just below 2^40: the trim watermark is where the next
  // LSN starts when the log is empty beyond it.
  engine_.reset();
  {
    rocksdb::Options o;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"entities", {}}, {"changelog", {}}, {"requests", {}},
        {"images", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.Sub("db"), cfs, &handles, &db).ok());
    rocksdb::WriteBatch wb;
    std::string below;
    codec::PutVarint64(&below, (uint64_t{1} << 40) - 1);
    wb.Put(handles[0], "log_trimmed_below", below);
    // Drop the existing records so the watermark decides.
    wb.DeleteRange(handles[2], codec::LogKey(0), codec::LogKey(uint64_t{1} << 40));
    ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &wb).ok());
    for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    delete db;
  }
  Reopen();
  // LSN 2^40 - 1 still fits.
  auto last = RunEpoch(std::move(Batch("Items").Insert(MakeEntity("p", "a"))), 5);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->lsn, (uint64_t{1} << 40) - 1);
  // The next one would carry 2^40 into the epoch's bits.
  EXPECT_FAILS_UNCHANGED(RunEpoch(std::move(Batch("Items").Insert(MakeEntity("p", "b"))), 5),
                         Code::kInternal);
  // Without an epoch the LSN is the version: no bound, and the refused LSN
  // was not consumed.
  auto plain = Insert("Items", MakeEntity("p", "c"));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->lsn, uint64_t{1} << 40);
}

TEST_F(EpochTest, ARetriedRequestIdIsAnsweredWithTheStampedETags) {
  Batch b("Items");
  b.Insert(MakeEntity("p", "a")).Insert(MakeEntity("p", "b"));
  b.SetClientRequestId("req-e").SetCaller("app");
  auto first = RunEpoch(b, 9);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->etags[0], MakeETag(Stamp(9, first->lsn)));
  const std::string before = DumpState(*engine_);
  // The retry, even from a later epoch (the same sidecar, ownership renewed),
  // answers what the first attempt answered.
  for (uint64_t epoch : {9, 10}) {
    auto retry = RunEpoch(b, epoch);
    ASSERT_TRUE(retry.ok()) << retry.status().ToString();
    EXPECT_TRUE(retry->replayed);
    EXPECT_EQ(retry->lsn, first->lsn);
    EXPECT_EQ(retry->etags, first->etags);
  }
  // And after a reopen (the outcome is read back from storage).
  Reopen();
  auto again = RunEpoch(b, 9);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->etags, first->etags);
  EXPECT_EQ(DumpState(*engine_), before);
}

TEST_F(EpochTest, EpochZeroRequestOutcomesStayReadable) {
  // An epoch-0 outcome is stored in the old format (version = lsn).
  Batch b("Items");
  b.Insert(MakeEntity("p", "a")).SetClientRequestId("old").SetCaller("app");
  auto first = Run(b);
  ASSERT_TRUE(first.ok());
  Reopen();
  auto retry = Run(b);
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed);
  EXPECT_EQ(retry->etags[0], MakeETag(first->lsn));
}

}  // namespace
}  // namespace sidetable::testing
