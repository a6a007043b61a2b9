// The row cache (engine/internal/row_cache.h): the cache itself (bounds,
// eviction order, accounting), and the engine's use of it: a point read
// after any write sees the write, whichever path wrote it (single writes of
// every kind, deferred groups, table deletion, another owner's records,
// dropped partitions), and a read that races a writer never caches the row
// the writer is replacing.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "engine/internal/row_cache.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::testing {
namespace {

using internal::RowCache;

constexpr size_t kOverhead = RowCache::kEntryOverhead;

TEST(RowCacheUnit, MissThenHitCopiesTheRowAndCountsBoth) {
  RowCache cache(1 << 20);
  std::string row = "unchanged";
  EXPECT_FALSE(cache.Lookup("k", &row));
  EXPECT_EQ(row, "unchanged");
  cache.Insert("k", "v1");
  ASSERT_TRUE(cache.Lookup("k", &row));
  EXPECT_EQ(row, "v1");
  cache.Insert("k", "value two");  // replaces, and is charged anew
  ASSERT_TRUE(cache.Lookup("k", &row));
  EXPECT_EQ(row, "value two");
  const auto st = cache.Stats();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.bytes, 1 + 9 + kOverhead);
}

TEST(RowCacheUnit, EraseAndClearGiveTheBytesBack) {
  RowCache cache(1 << 20);
  for (int i = 0; i < 100; i++) cache.Insert("key" + std::to_string(i), std::string(100, 'x'));
  EXPECT_EQ(cache.Stats().entries, 100u);
  cache.Erase("key7");
  cache.Erase("absent");
  std::string row;
  EXPECT_FALSE(cache.Lookup("key7", &row));
  EXPECT_TRUE(cache.Lookup("key8", &row));
  EXPECT_EQ(cache.Stats().entries, 99u);
  cache.Clear();
  const auto st = cache.Stats();
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
  EXPECT_FALSE(cache.Lookup("key8", &row));
}

TEST(RowCacheUnit, ARowReadSinceItWasCachedOutlivesTheOldestOneNotRead) {
  // One shard with room for exactly eight entries of this size (an entry
  // may take up to an eighth of its shard).
  const size_t entry = 2 + 100 + kOverhead;
  RowCache cache(8 * entry, /*shards=*/1);
  for (int i = 1; i <= 8; i++) cache.Insert("k" + std::to_string(i), std::string(100, 'x'));
  std::string row;
  ASSERT_TRUE(cache.Lookup("k1", &row));  // the oldest, but read: a second chance; k2 goes
  cache.Insert("k9", std::string(100, 'y'));
  EXPECT_FALSE(cache.Lookup("k2", &row));
  for (int i : {1, 3, 4, 5, 6, 7, 8, 9})
    EXPECT_TRUE(cache.Lookup("k" + std::to_string(i), &row)) << i;
  EXPECT_EQ(cache.Stats().bytes, 8 * entry);
}

// The table of one shard (open addressing, entries shifted back on erase)
// against a std::map, through random inserts, replacements, erases and
// lookups of a few hundred keys; the capacity is large enough that nothing
// is evicted, so the two must agree on every key.
TEST(RowCacheUnit, AgreesWithAMapThroughRandomInsertsAndErases) {
  RowCache cache(64 << 20, /*shards=*/1);
  std::map<std::string, std::string> model;
  std::mt19937 rng(11);
  for (int step = 0; step < 40000; step++) {
    const std::string key = "k" + std::to_string(rng() % 700);
    const unsigned what = rng() % 10;
    if (what < 4) {
      const std::string row = std::to_string(step);
      cache.Insert(key, row);
      model[key] = row;
    } else if (what < 7) {
      cache.Erase(key);
      model.erase(key);
    } else {
      std::string row;
      const bool hit = cache.Lookup(key, &row);
      const auto it = model.find(key);
      ASSERT_EQ(hit, it != model.end()) << key << " at step " << step;
      if (hit) {
        ASSERT_EQ(row, it->second) << key << " at step " << step;
      }
    }
  }
  for (int k = 0; k < 700; k++) {
    const std::string key = "k" + std::to_string(k);
    std::string row;
    EXPECT_EQ(cache.Lookup(key, &row), model.count(key) == 1) << key;
  }
  EXPECT_EQ(cache.Stats().entries, model.size());
}

TEST(RowCacheUnit, BytesStayWithinTheCapacity) {
  const size_t capacity = 64 << 10;
  RowCache cache(capacity);
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; i++) {
    cache.Insert("key" + std::to_string(rng() % 2000), std::string(rng() % 900, 'r'));
    ASSERT_LE(cache.Stats().bytes, capacity) << "after insert " << i;
  }
  EXPECT_GT(cache.Stats().entries, 10u);
}

TEST(RowCacheUnit, ARowOverAnEighthOfItsShardIsNotCached) {
  RowCache cache(8 * 1024, /*shards=*/1);
  cache.Insert("small", "s");
  cache.Insert("huge", std::string(1024, 'h'));  // + key + overhead > 1,024
  std::string row;
  EXPECT_FALSE(cache.Lookup("huge", &row));
  EXPECT_TRUE(cache.Lookup("small", &row));  // and it evicted nothing
  // Replacing a cached row by one too large drops the old one too.
  cache.Insert("small", std::string(2048, 's'));
  EXPECT_FALSE(cache.Lookup("small", &row));
  EXPECT_EQ(cache.Stats().bytes, 0u);
}

TEST(RowCacheUnit, ZeroCapacityCachesNothingAndCountsNothing) {
  RowCache cache(0);
  EXPECT_FALSE(cache.enabled());
  cache.Insert("k", "v");
  std::string row;
  EXPECT_FALSE(cache.Lookup("k", &row));
  const auto st = cache.Stats();
  EXPECT_EQ(st.entries + st.bytes + st.hits + st.misses, 0u);
}

class RowCacheTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Rows").ok());
  }
  // Reads (pk, rk) twice and checks the second read was a hit: the row is
  // in the cache before the write that follows.
  void ReadTwiceCached(const std::string& pk, const std::string& rk) {
    ASSERT_TRUE(engine_->Get("Rows", pk, rk).ok());
    const uint64_t hits = engine_->Stats().row_cache_hits;
    ASSERT_TRUE(engine_->Get("Rows", pk, rk).ok());
    ASSERT_EQ(engine_->Stats().row_cache_hits, hits + 1)
        << "(" << pk << ", " << rk << ") not cached";
  }
  int64_t N(const std::string& pk, const std::string& rk) {
    auto e = engine_->Get("Rows", pk, rk);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return -1;
    const Value* v = e->Find("n");
    return v == nullptr ? -2 : v->as_int64();
  }
};

TEST_F(RowCacheTest, EveryKindOfWriteIsSeenByTheNextRead) {
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());
  ReadTwiceCached("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Rows").Update(MakeEntity("p", "r", 2)))).ok());
  EXPECT_EQ(N("p", "r"), 2);

  ReadTwiceCached("p", "r");
  Entity extra;
  extra.partition_key = "p";
  extra.row_key = "r";
  extra.Set("added", Value::String("yes"));
  ASSERT_TRUE(Run(std::move(Batch("Rows").Merge(extra))).ok());
  auto merged = engine_->Get("Rows", "p", "r");
  ASSERT_TRUE(merged.ok());
  ASSERT_NE(merged->Find("added"), nullptr);
  EXPECT_EQ(merged->Find("n")->as_int64(), 2);

  ReadTwiceCached("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Rows").InsertOrReplace(MakeEntity("p", "r", 3)))).ok());
  EXPECT_EQ(N("p", "r"), 3);
  EXPECT_EQ(engine_->Get("Rows", "p", "r")->Find("added"), nullptr);

  ReadTwiceCached("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Rows").InsertOrMerge(MakeEntity("p", "r", 4)))).ok());
  EXPECT_EQ(N("p", "r"), 4);

  ReadTwiceCached("p", "r");
  const std::string etag = engine_->Get("Rows", "p", "r")->etag;
  ASSERT_TRUE(Run(std::move(Batch("Rows").Update(MakeEntity("p", "r", 5), etag))).ok());
  EXPECT_EQ(N("p", "r"), 5);
  EXPECT_NE(engine_->Get("Rows", "p", "r")->etag, etag);

  ReadTwiceCached("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Rows").FencedUpsert(MakeEntity("p", "r", 6), 9))).ok());
  EXPECT_EQ(N("p", "r"), 6);

  ReadTwiceCached("p", "r");
  ASSERT_TRUE(Run(std::move(Batch("Rows").Delete("p", "r"))).ok());
  EXPECT_EQ(engine_->Get("Rows", "p", "r").status().code(), Code::kResourceNotFound);
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 7)).ok());
  EXPECT_EQ(N("p", "r"), 7);
}

TEST_F(RowCacheTest, AnEgtInvalidatesEachRowItWrites) {
  for (int i = 0; i < 5; i++)
    ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r" + std::to_string(i), i)).ok());
  for (int i = 0; i < 5; i++) ReadTwiceCached("p", "r" + std::to_string(i));
  Batch b("Rows");
  for (int i = 0; i < 4; i++) b.Update(MakeEntity("p", "r" + std::to_string(i), 100 + i));
  b.Delete("p", "r4");
  ASSERT_TRUE(Run(std::move(b)).ok());
  for (int i = 0; i < 4; i++) EXPECT_EQ(N("p", "r" + std::to_string(i)), 100 + i);
  EXPECT_EQ(engine_->Get("Rows", "p", "r4").status().code(), Code::kResourceNotFound);
}

TEST_F(RowCacheTest, AFailedWriteLeavesTheCachedRowRight) {
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());
  ReadTwiceCached("p", "r");
  const std::string etag = engine_->Get("Rows", "p", "r")->etag;
  EXPECT_FAILS_UNCHANGED(
      Run(std::move(Batch("Rows").Update(MakeEntity("p", "r", 2), "W/\"datetime'x'\""))),
      Code::kUpdateConditionNotSatisfied);
  EXPECT_FAILS_UNCHANGED(Insert("Rows", MakeEntity("p", "r", 3)), Code::kEntityAlreadyExists);
  // An EGT whose second operation fails writes nothing, the first included.
  Batch b("Rows");
  b.Update(MakeEntity("p", "r", 4)).Update(MakeEntity("p", "absent", 5));
  EXPECT_FAILS_UNCHANGED(Run(std::move(b)), Code::kResourceNotFound);
  EXPECT_EQ(N("p", "r"), 1);
  EXPECT_EQ(engine_->Get("Rows", "p", "r")->etag, etag);
}

TEST_F(RowCacheTest, AGroupsWritesAreSeenOnceFlushed) {
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());
  ReadTwiceCached("p", "r");
  WriteGroup group(engine_.get());
  ASSERT_TRUE(engine_->Execute(Batch("Rows").Update(MakeEntity("p", "r", 2)), &group).ok());
  // Not yet written: another thread reads the old row (the group holds the
  // partition's lock, so this read can not cache it).
  int64_t during = 0;
  std::thread([&] { during = N("p", "r"); }).join();
  EXPECT_EQ(during, 1);
  ASSERT_TRUE(group.Flush().ok());
  EXPECT_EQ(N("p", "r"), 2);
  EXPECT_EQ(N("p", "r"), 2);
}

// The rule the cache's consistency rests on (row_cache.h): a read racing a
// writer of its partition must not cache what it read. Here the race is
// made certain: the read runs while a group holds the partition with the
// update encoded but not written, then the group is written. Caching the
// read's row would answer the next read with the old value.
TEST_F(RowCacheTest, AReadWhileAWriterHoldsThePartitionDoesNotCacheTheOldRow) {
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());  // not read yet: not cached
  WriteGroup group(engine_.get());
  ASSERT_TRUE(engine_->Execute(Batch("Rows").Update(MakeEntity("p", "r", 2)), &group).ok());
  const uint64_t bytes_before = engine_->Stats().row_cache_bytes;
  int64_t during = 0;
  std::thread([&] { during = N("p", "r"); }).join();
  EXPECT_EQ(during, 1);
  EXPECT_EQ(engine_->Stats().row_cache_bytes, bytes_before) << "a row was cached under a writer";
  ASSERT_TRUE(group.Flush().ok());
  EXPECT_EQ(N("p", "r"), 2);
}

TEST_F(RowCacheTest, ADeletedTableRecreatedUnderItsNameIsEmpty) {
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());
  ReadTwiceCached("p", "r");
  ASSERT_GT(engine_->Stats().row_cache_bytes, 0u);
  ASSERT_TRUE(engine_->DeleteTable("Rows").ok());
  EXPECT_EQ(engine_->Stats().row_cache_bytes, 0u);
  EXPECT_EQ(engine_->Get("Rows", "p", "r").status().code(), Code::kTableNotFound);
  ASSERT_TRUE(engine_->CreateTable("Rows").ok());
  EXPECT_EQ(engine_->Get("Rows", "p", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(RowCacheTest, AnotherOwnersRecordsAndDroppedPartitionsAreSeen) {
  auto opened = Engine::Open(options_, dir_.Sub("old-owner"));
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<Engine> old = std::move(opened).value();
  ASSERT_TRUE(old->CreateTable("Rows").ok());
  auto last_record = [&] {
    auto changes = old->ReadChanges(old->Stats().last_lsn, 1);
    EXPECT_TRUE(changes.ok());
    return changes->records.at(0);
  };
  Batch first("Rows");
  first.SetEpoch(3).Insert(MakeEntity("q", "r", 1));
  ASSERT_TRUE(old->Execute(first).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(last_record()).ok());
  ReadTwiceCached("q", "r");
  Batch second("Rows");
  second.SetEpoch(3).Update(MakeEntity("q", "r", 2));
  ASSERT_TRUE(old->Execute(second).ok());
  ASSERT_TRUE(engine_->ApplyReplicated(last_record()).ok());
  EXPECT_EQ(N("q", "r"), 2);

  ReadTwiceCached("q", "r");
  auto dropped =
      engine_->DropPartitions([](std::string_view, std::string_view pk) { return pk == "q"; });
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 1u);
  EXPECT_EQ(engine_->Get("Rows", "q", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(RowCacheTest, TheCacheStaysWithinItsCapacity) {
  options_.row_cache_bytes = 256 << 10;
  Reopen();
  const std::string big(1000, 'b');
  for (int i = 0; i < 1000; i++) {
    Entity e = MakeEntity("p" + std::to_string(i % 10), "r" + std::to_string(i), i);
    e.Set("pad", Value::String(big));
    ASSERT_TRUE(Insert("Rows", std::move(e)).ok());
  }
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(N("p" + std::to_string(i % 10), "r" + std::to_string(i)), i);
    ASSERT_LE(engine_->Stats().row_cache_bytes, options_.row_cache_bytes);
  }
  EXPECT_GT(engine_->Stats().row_cache_bytes, options_.row_cache_bytes / 2);
}

TEST_F(RowCacheTest, OffItCachesNothingAndReadsAreTheSame) {
  options_.row_cache_bytes = 0;
  Reopen();
  ASSERT_TRUE(Insert("Rows", MakeEntity("p", "r", 1)).ok());
  EXPECT_EQ(N("p", "r"), 1);
  ASSERT_TRUE(Run(std::move(Batch("Rows").Update(MakeEntity("p", "r", 2)))).ok());
  EXPECT_EQ(N("p", "r"), 2);
  EXPECT_EQ(engine_->Get("Rows", "p", "absent").status().code(), Code::kResourceNotFound);
  const EngineStats st = engine_->Stats();
  EXPECT_EQ(st.row_cache_hits + st.row_cache_misses + st.row_cache_bytes, 0u);
}

// Readers and writers of the same few rows at once, with a cache small
// enough to evict under them. Each row has one writer, which counts its
// value up and reads it back after each write (a read after an acknowledged
// write sees it); every reader sees each row's values in order (never an
// older value after a newer one). Bounded: a fixed number of writes.
TEST_F(RowCacheTest, ConcurrentReadersSeeEachRowsWritesInOrder) {
  options_.row_cache_bytes = 64 << 10;
  Reopen();
  constexpr int kWriters = 2, kRowsPerWriter = 4, kWrites = 1500, kReaders = 2;
  auto rk = [](int w, int j) { return "w" + std::to_string(w) + "r" + std::to_string(j); };
  for (int w = 0; w < kWriters; w++) {
    for (int j = 0; j < kRowsPerWriter; j++)
      ASSERT_TRUE(Insert("Rows", MakeEntity("p", rk(w, j), 0)).ok());
  }
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; w++) {
    threads.emplace_back([&, w] {
      for (int i = 1; i <= kWrites; i++) {
        const int j = i % kRowsPerWriter;
        const int value = (i + kRowsPerWriter - 1) / kRowsPerWriter;  // 1, 1, 1, 1, 2, ...
        if (!engine_->Execute(Batch("Rows").Update(MakeEntity("p", rk(w, j), value))).ok())
          failures++;
        if (N("p", rk(w, j)) != value) failures++;
      }
    });
  }
  for (int r = 0; r < kReaders; r++) {
    threads.emplace_back([&, r] {
      std::mt19937 rng(static_cast<unsigned>(r));
      std::vector<int64_t> last(kWriters * kRowsPerWriter, 0);
      while (!done.load()) {
        const int k = static_cast<int>(rng() % last.size());
        const int64_t n = N("p", rk(k / kRowsPerWriter, k % kRowsPerWriter));
        if (n < last[k]) failures++;
        last[k] = std::max(last[k], n);
      }
    });
  }
  for (int w = 0; w < kWriters; w++) threads[w].join();
  done = true;
  for (size_t t = kWriters; t < threads.size(); t++) threads[t].join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(engine_->Stats().row_cache_hits, 0u);
}

}  // namespace
}  // namespace sidetable::testing
