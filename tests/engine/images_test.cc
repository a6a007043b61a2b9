// Row images written once (engine/internal/images.h): an EGT's change record
// refers to the rows it wrote instead of carrying copies, and every reader of
// the log still gets each record's after images, whatever happened to the rows
// since: overwrites, deletes, merges, a deleted table, another owner's
// records applied over them, partitions dropped, a restart, trims.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "engine/etag.h"
#include "engine/internal/codec.h"
#include "engine/internal/images.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

// What a record's after images say: RowKey -> "n=<n> etag" ("-" for none).
std::map<std::string, std::string> Afters(const ChangeRecord& r) {
  std::map<std::string, std::string> out;
  for (const ChangeOp& op : r.ops) {
    out[op.row_key] = op.after ? op.after->Find("n")->ToString() + " " + op.after->etag : "-";
  }
  return out;
}

std::string Image(int n, uint64_t version) { return std::to_string(n) + " " + MakeETag(version); }

class ImagesTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Items", "").ok());
  }

  std::vector<ChangeRecord> Log(uint64_t from = 1) {
    auto log = engine_->ReadChanges(from, 100000);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? log->records : std::vector<ChangeRecord>{};
  }
  ChangeRecord At(uint64_t lsn) {
    auto log = Log(lsn);
    EXPECT_FALSE(log.empty());
    return log.empty() ? ChangeRecord{} : log.front();
  }
  // The same records through the raw pages the sidecar ships.
  std::vector<ChangeRecord> RawLog() {
    std::string page;
    auto raw = engine_->ReadRawChanges(1, 100000, SIZE_MAX, &page);
    EXPECT_TRUE(raw.ok()) << raw.status().ToString();
    std::vector<ChangeRecord> out;
    Status s = DecodeChangePage(page, &out, raw.ok() ? raw->records : 0);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  uint64_t Write(Batch b) {
    auto r = Run(std::move(b));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->lsn : 0;
  }

  // The engine closed, its RocksDB opened raw: `fn(db, handles)`.
  template <typename Fn>
  void WithRawDb(Fn&& fn) {
    engine_.reset();
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, {}},
                                                        {"entities", {}},
                                                        {"changelog", {}},
                                                        {"requests", {}},
                                                        {"images", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* db = nullptr;
    rocksdb::Options o;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_.Sub("db"), cfs, &handles, &db).ok());
    fn(db, handles);
    for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    delete db;
    Reopen();
  }
  static size_t CountKeys(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
    size_t n = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) n++;
    return n;
  }
};

TEST_F(ImagesTest, TheRecordHoldsNoCopyAndReadersStillGetTheImage) {
  Entity big = MakeEntity("p", "a", 1);
  big.Set("pad", Value::String(std::string(4000, 'x')));
  const uint64_t lsn = Write(std::move(Batch("Items").Insert(big)));

  ChangeRecord r = At(lsn);
  ASSERT_EQ(r.ops.size(), 1u);
  ASSERT_TRUE(r.ops[0].after.has_value());
  EXPECT_EQ(r.ops[0].after->Find("pad")->bytes(), std::string(4000, 'x'));
  EXPECT_EQ(r.ops[0].after->etag, MakeETag(lsn));
  EXPECT_EQ(r.ops[0].etag, MakeETag(lsn));
  auto raw = RawLog();
  ASSERT_FALSE(raw.empty());
  EXPECT_EQ(Afters(raw.back()), Afters(r)) << "the raw page resolves the image too";

  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    std::string record, row;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), h[2], codec::LogKey(lsn), &record).ok());
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), h[1], codec::EntityKey(1, "p", "a"), &row).ok());
    EXPECT_EQ(static_cast<uint8_t>(record[0]), codec::kChangeFormatRefs);
    EXPECT_EQ(static_cast<uint8_t>(row[0]), codec::kRowFormatSoleImage);
    EXPECT_LT(record.size(), 200u) << "the 4 KB image is not in the record";
    ChangeRecord undecodable;
    EXPECT_EQ(codec::DecodeChange(record, &undecodable).code(), Code::kInternal)
        << "a stored record with a reference is not decoded as if it had no image";
  });
}

TEST_F(ImagesTest, OverwrittenAndDeletedRowsImagesComeFromWhatDisplacedThem) {
  const uint64_t l1 = Write(
      std::move(Batch("Items").Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 1))));
  const uint64_t l2 = Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 2))));
  Entity m = MakeEntity("p", "a", 3);
  m.properties.erase(m.properties.begin() + 1);  // merge only n
  const uint64_t l3 = Write(std::move(Batch("Items").Merge(m)));
  const uint64_t l4 =
      Write(std::move(Batch("Items").Delete("p", "a").Update(MakeEntity("p", "b", 4))));
  const uint64_t l5 = Write(std::move(Batch("Items").Insert(MakeEntity("p", "a", 5))));

  const std::map<uint64_t, std::map<std::string, std::string>> want = {
      {l1, {{"a", Image(1, l1)}, {"b", Image(1, l1)}}},
      {l2, {{"a", Image(2, l2)}}},
      {l3, {{"a", Image(3, l3)}}},
      {l4, {{"a", "-"}, {"b", Image(4, l4)}}},
      {l5, {{"a", Image(5, l5)}}},
  };
  auto check = [&](const std::vector<ChangeRecord>& log, const char* how) {
    std::map<uint64_t, std::map<std::string, std::string>> got;
    for (const ChangeRecord& r : log) {
      if (r.kind == ChangeKind::kEntities) got[r.lsn] = Afters(r);
    }
    EXPECT_EQ(got, want) << how;
  };
  check(Log(), "ReadChanges");
  check(RawLog(), "raw pages");
  // The merged image keeps the property the merge did not name.
  EXPECT_EQ(At(l3).ops[0].after->Find("name")->ToString(), "entity 2");
  // Before images are as they were: the displaced rows.
  EXPECT_EQ(At(l4).ops[0].before->Find("n")->ToString(), "3");
  EXPECT_EQ(At(l4).ops[0].before->etag, MakeETag(l3));

  Reopen();
  check(Log(), "after a restart");
}

// With the tail kept resolved in memory (the sidecar's setting when it
// publishes), readers get the same records, from memory or from RocksDB.
TEST_F(ImagesTest, TheTailKeptInMemoryReadsTheSameAsTheStore) {
  options_.recent_records_bytes = 1 << 20;
  Reopen();
  const uint64_t l1 = Write(
      std::move(Batch("Items").Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 1))));
  const uint64_t l2 = Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 2))));
  const uint64_t l3 =
      Write(std::move(Batch("Items").Delete("p", "a").Update(MakeEntity("p", "b", 3))));
  const std::map<uint64_t, std::map<std::string, std::string>> want = {
      {l1, {{"a", Image(1, l1)}, {"b", Image(1, l1)}}},
      {l2, {{"a", Image(2, l2)}}},
      {l3, {{"a", "-"}, {"b", Image(3, l3)}}},
  };
  auto got = [&](const std::vector<ChangeRecord>& log) {
    std::map<uint64_t, std::map<std::string, std::string>> m;
    for (const ChangeRecord& r : log) {
      if (r.kind == ChangeKind::kEntities) m[r.lsn] = Afters(r);
    }
    return m;
  };
  EXPECT_EQ(got(Log()), want) << "from memory";
  EXPECT_EQ(got(RawLog()), want) << "raw pages from memory";
  Reopen();  // memory empty: from the store
  EXPECT_EQ(got(Log()), want) << "from the store";
}

TEST_F(ImagesTest, ADeletedTableKeepsItsRowsUntilTheLogIsTrimmedPastIt) {
  const uint64_t l1 = Write(std::move(Batch("Items").Insert(MakeEntity("p", "a", 1))));
  ASSERT_TRUE(engine_->DeleteTable("Items", "").ok());
  const uint64_t drop = engine_->Stats().last_lsn;
  ASSERT_TRUE(engine_->CreateTable("Items", "").ok());
  EXPECT_EQ(engine_->Get("Items", "p", "a").status().code(), Code::kResourceNotFound)
      << "a re-created table starts empty";
  EXPECT_EQ(Afters(At(l1)), (std::map<std::string, std::string>{{"a", Image(1, l1)}}));

  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    EXPECT_EQ(CountKeys(db, h[1]), 1u) << "the old table's row waits for the trim";
  });
  ASSERT_TRUE(engine_->TrimChanges(drop).ok());  // the drop's record stays
  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    EXPECT_EQ(CountKeys(db, h[1]), 1u) << "trimmed below the drop, not past it";
  });
  ASSERT_TRUE(engine_->TrimChanges(drop + 1).ok());
  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    EXPECT_EQ(CountKeys(db, h[1]), 0u) << "the deleted table's rows are gone";
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), h[0]));
    it->Seek(std::string(internal::kMetaPendingDrop));
    EXPECT_FALSE(it->Valid() && it->key().starts_with(std::string(internal::kMetaPendingDrop)))
        << "the pending drop is done";
  });
  ASSERT_TRUE(Write(std::move(Batch("Items").Insert(MakeEntity("p", "a", 7)))) > 0);
  EXPECT_EQ(engine_->Get("Items", "p", "a")->Find("n")->ToString(), "7");
}

// Bytes of the table files in `dir` (RocksDB deletes the obsolete ones).
uint64_t SstBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  // Without exceptions: RocksDB may delete a file while it is listed.
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".sst") continue;
    std::error_code size_ec;
    const uint64_t size = it->file_size(size_ec);
    if (!size_ec) n += size;
  }
  return n;
}

// The trim range-deleted a dropped table's rows, and RocksDB kept their
// files until a compaction happened to rewrite them: with no writes after
// the trim (or a few), never. From outside, 100 MB of a deleted table stayed
// on disk minutes after the trim. The engine now compacts the dropped range
// (internal/space_reclaimer.h).
TEST_F(ImagesTest, ADeletedTablesRowsLeaveTheDiskOnceTheLogIsTrimmedPastIt) {
  ASSERT_TRUE(engine_->CreateTable("Big", "").ok());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 160;
       i++) {  // 160 x 48 KiB that do not compress: 7.5 MiB, past the 4 MiB memtables
    std::string bytes(48 * 1024, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    Entity e = MakeEntity("p", "r" + std::to_string(i), i);
    e.Set("blob", Value::Binary(std::move(bytes)));
    Write(std::move(Batch("Big").Insert(std::move(e))));
  }
  Write(std::move(Batch("Items").Insert(MakeEntity("p", "kept", 1))));
  const std::string db = dir_.Sub("db");
  const uint64_t filled = SstBytes(db);
  ASSERT_GT(filled, 3u << 20) << "the table's rows reached table files";

  ASSERT_TRUE(engine_->DeleteTable("Big", "").ok());
  const uint64_t drop = engine_->Stats().last_lsn;
  ASSERT_TRUE(engine_->TrimChanges(drop + 1).ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  uint64_t now = SstBytes(db);
  while (now > (1u << 20) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now = SstBytes(db);
  }
  EXPECT_LE(now, 1u << 20) << "table files still hold " << now << " of the " << filled
                           << " bytes 30 s after the trim";
  EXPECT_EQ(engine_->Get("Items", "p", "kept")->Find("n")->ToString(), "1")
      << "the other table is intact";
  EXPECT_EQ(engine_->Get("Big", "p", "r0").status().code(), Code::kTableNotFound);
}

TEST_F(ImagesTest, TrimmingRemovesWhatDisplacedRowsLeftBelowIt) {
  const uint64_t l1 = Write(std::move(Batch("Items").Insert(MakeEntity("p", "a", 1))));
  const uint64_t l2 = Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 2))));
  Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 3))));
  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    EXPECT_EQ(CountKeys(db, h[4]), 2u) << "one pointer per displaced image";
  });
  ASSERT_TRUE(engine_->TrimChanges(l2).ok());
  EXPECT_EQ(Afters(At(l2)), (std::map<std::string, std::string>{{"a", Image(2, l2)}}));
  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), h[4]));
    it->SeekToFirst();
    ASSERT_TRUE(it->Valid());
    EXPECT_GE(it->key().ToString(), internal::ImageKey(l2, "")) << "nothing below the trim is left";
    EXPECT_EQ(CountKeys(db, h[4]), 1u);
  });
  EXPECT_LT(l1, l2);
}

TEST_F(ImagesTest, AnotherOwnersRecordOverARowKeepsTheLocalRecordsImage) {
  const uint64_t l1 = Write(
      std::move(Batch("Items").Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 1))));
  // A later owner's record (a larger epoch) over both rows: one replaced,
  // one deleted; no local record displaces them.
  ChangeRecord foreign;
  foreign.kind = ChangeKind::kEntities;
  foreign.table = "Items";
  foreign.partition_key = "p";
  foreign.lsn = 3;
  foreign.commit_time = NowTicks();
  ChangeOp put;
  put.row_key = "a";
  put.kind = OpKind::kInsertOrReplace;
  put.version = uint64_t{7} << 40 | 3;
  put.after = MakeEntity("p", "a", 70);
  ChangeOp del;
  del.row_key = "b";
  del.kind = OpKind::kDelete;
  del.version = put.version;
  foreign.ops = {put, del};
  ASSERT_TRUE(engine_->ApplyReplicated(foreign).ok());
  EXPECT_EQ(engine_->Get("Items", "p", "a")->Find("n")->ToString(), "70");
  EXPECT_EQ(Afters(At(l1)),
            (std::map<std::string, std::string>{{"a", Image(1, l1)}, {"b", Image(1, l1)}}));
  Reopen();
  EXPECT_EQ(Afters(At(l1)),
            (std::map<std::string, std::string>{{"a", Image(1, l1)}, {"b", Image(1, l1)}}));
}

TEST_F(ImagesTest, DroppedPartitionsKeepTheImagesOfRecordsStillInTheLog) {
  const uint64_t l1 = Write(std::move(Batch("Items").Insert(MakeEntity("gone", "a", 1))));
  const uint64_t l2 = Write(std::move(Batch("Items").Insert(MakeEntity("kept", "a", 2))));
  auto dropped =
      engine_->DropPartitions([](std::string_view, std::string_view pk) { return pk == "gone"; });
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 1u);
  EXPECT_EQ(engine_->Get("Items", "gone", "a").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(Afters(At(l1)), (std::map<std::string, std::string>{{"a", Image(1, l1)}}));
  EXPECT_EQ(Afters(At(l2)), (std::map<std::string, std::string>{{"a", Image(2, l2)}}));
}

TEST_F(ImagesTest, RecordsWithAndWithoutCopiesMixAcrossTheOption) {
  // Copies first, then once: an update of a row whose record has a copy.
  options_.write_images_once = false;
  Reopen();
  const uint64_t l1 = Write(
      std::move(Batch("Items").Insert(MakeEntity("p", "a", 1)).Insert(MakeEntity("p", "b", 1))));
  options_.write_images_once = true;
  Reopen();
  const uint64_t l2 = Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 2))));
  // Once, then copies: the pointer leads to a record with its images inline.
  options_.write_images_once = false;
  Reopen();
  const uint64_t l3 = Write(std::move(Batch("Items").InsertOrReplace(MakeEntity("p", "a", 3))));
  const std::map<uint64_t, std::map<std::string, std::string>> want = {
      {l1, {{"a", Image(1, l1)}, {"b", Image(1, l1)}}},
      {l2, {{"a", Image(2, l2)}}},
      {l3, {{"a", Image(3, l3)}}},
  };
  for (bool once : {false, true}) {
    options_.write_images_once = once;
    Reopen();
    std::map<uint64_t, std::map<std::string, std::string>> got;
    for (const ChangeRecord& r : Log()) {
      if (r.kind == ChangeKind::kEntities) got[r.lsn] = Afters(r);
    }
    EXPECT_EQ(got, want) << "read with write_images_once=" << once;
  }
}

TEST_F(ImagesTest, ALostImageFailsTheReadInsteadOfHandingOutARecordWithoutIt) {
  const uint64_t l1 = Write(std::move(Batch("Items").Insert(MakeEntity("p", "a", 1))));
  // Corruption: the row removed behind the engine's back.
  WithRawDb([&](rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& h) {
    ASSERT_TRUE(db->Delete(rocksdb::WriteOptions(), h[1], codec::EntityKey(1, "p", "a")).ok());
  });
  auto log = engine_->ReadChanges(l1, 10);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), Code::kInternal);
  EXPECT_NE(log.status().message().find("after image of ('p', 'a')"), std::string::npos)
      << log.status().ToString();
  std::string page;
  EXPECT_EQ(engine_->ReadRawChanges(l1, 10, SIZE_MAX, &page).status().code(), Code::kInternal);
}

TEST_F(ImagesTest, ReadersRacingOverwritesSeeEachRecordsOwnImage) {
  // A writer overwrites a few rows again and again while a reader reads the
  // whole log: every after image must carry its own record's version (the
  // log and the rows read under one snapshot).
  constexpr int kWrites = 600;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < kWrites; i++) {
      Batch b("Items");
      b.InsertOrReplace(MakeEntity("p", "k" + std::to_string(i % 3), i));
      if (i % 7 == 6) b.Delete("p", "k" + std::to_string((i + 1) % 3));
      // A Delete of a row that does not exist fails the batch: retry alone.
      if (!engine_->Execute(b).ok()) {
        ASSERT_TRUE(engine_
                        ->Execute(Batch("Items").InsertOrReplace(
                            MakeEntity("p", "k" + std::to_string(i % 3), i)))
                        .ok());
      }
    }
    done = true;
  });
  // Reads while the writer runs (how many overlap it depends on the
  // machine), then once more after it: every image is its record's.
  size_t concurrent = 0;
  for (int round = 0; round < 5000 && !done; round++) {
    auto log = engine_->ReadChanges(1, 100000);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (const ChangeRecord& r : log->records) {
      for (const ChangeOp& op : r.ops) {
        if (!op.after) continue;
        ASSERT_EQ(op.after->etag, MakeETag(r.lsn)) << "record " << r.lsn << " row " << op.row_key;
        concurrent++;
      }
    }
  }
  writer.join();
  size_t after = 0;
  for (const ChangeRecord& r : Log()) {
    for (const ChangeOp& op : r.ops) {
      if (!op.after) continue;
      EXPECT_EQ(op.after->etag, MakeETag(r.lsn)) << "record " << r.lsn << " row " << op.row_key;
      after++;
    }
  }
  EXPECT_GE(after, static_cast<size_t>(kWrites)) << concurrent << " images checked while writing";
}

// Pages of records whose rows are large, read after a restart (nothing in
// the in-memory tail): a page is resolved a few records at a time, sized
// by what the records resolved to so far, so records of very different
// sizes still come whole, in order, without gaps, each page within its
// byte bound.
TEST_F(ImagesTest, PagesOfLargeAndSmallRecordsComeWholeAndInOrder) {
  std::vector<uint64_t> lsns;
  for (int i = 0; i < 40; i++) {
    Entity e = MakeEntity("p" + std::to_string(i % 3), "r" + std::to_string(i), i);
    // Every fifth record small, the others ~120 KB.
    if (i % 5 != 0) {
      e.Set("a", Value::Binary(std::string(60000, static_cast<char>('a' + i % 26))));
      e.Set("b", Value::Binary(std::string(60000, 'b')));
    }
    lsns.push_back(Write(std::move(Batch("Items").InsertOrReplace(e))));
  }
  Reopen();
  for (size_t max_bytes : {size_t{1}, size_t{100000}, size_t{300000}, size_t{4} << 20}) {
    uint64_t from = lsns.front();
    size_t seen = 0;
    for (int pages = 0; pages < 100 && from <= lsns.back(); pages++) {
      auto page = engine_->ReadChanges(from, 1000, max_bytes);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      ASSERT_FALSE(page->records.empty()) << "page from " << from << " at " << max_bytes;
      // The byte bound holds: at 300 KB a page stops after at most three
      // ~120 KB records (plus the small ones between them); at 4 MiB it
      // holds many.
      if (max_bytes == 300000) {
        EXPECT_LE(page->records.size(), 5u);
      }
      if (max_bytes == (size_t{4} << 20) && from + 20 <= lsns.back()) {
        EXPECT_GT(page->records.size(), 20u);
      }
      for (const ChangeRecord& r : page->records) {
        ASSERT_EQ(r.lsn, from) << "in order, no gap";
        const int i = static_cast<int>(r.lsn - lsns.front());
        ASSERT_EQ(r.ops.size(), 1u);
        ASSERT_TRUE(r.ops[0].after.has_value());
        const Value* a = r.ops[0].after->Find("a");
        if (i % 5 != 0) {
          ASSERT_NE(a, nullptr) << r.lsn;
          EXPECT_EQ(a->bytes(), std::string(60000, static_cast<char>('a' + i % 26)));
        } else {
          EXPECT_EQ(a, nullptr) << r.lsn;
        }
        from++;
        seen++;
      }
    }
    EXPECT_EQ(seen, lsns.size()) << max_bytes;
  }
}

}  // namespace
}  // namespace sidetable::testing
