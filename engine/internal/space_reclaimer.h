// Gives the disk space of deleted tables back.
//
// A deleted table's rows go with one range deletion once the change log is
// trimmed past the deletion (internal/images.h). A range deletion frees
// nothing by itself: RocksDB drops the rows only when a compaction rewrites
// the files that hold them, and it compacts a level only when that level
// grows past its target. On a sidecar with few writes after the trim (or
// none: a full disk refuses them) the files stayed for good: 100 MB of a
// deleted table was still on disk minutes after the trim, while idle or at
// 20 writes a second.
//
// So each dropped range is compacted on purpose, on a thread of its own
// (named st-reclaim, started at the first drop): a manual compaction of a
// range takes as long as rewriting the files overlapping it, and the
// sidecar's maintenance thread that trims the log must keep checking the
// storage every second meanwhile. Automatic compactions go on beside it.
#pragma once

#include <rocksdb/db.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace sidetable::internal {

class SpaceReclaimer {
 public:
  explicit SpaceReclaimer(rocksdb::DB* db) : db_(db) {}
  ~SpaceReclaimer() { Stop(); }
  SpaceReclaimer(const SpaceReclaimer&) = delete;
  SpaceReclaimer& operator=(const SpaceReclaimer&) = delete;

  // Compacts [begin, end) of `cf` soon, after the ranges queued before.
  void Reclaim(rocksdb::ColumnFamilyHandle* cf, std::string begin, std::string end);
  // Cancels the compaction running (RocksDB aborts manual compactions) and
  // forgets the rest; before the database closes. Idempotent.
  void Stop();
  // Ranges compacted so far (tests).
  uint64_t done() const;

 private:
  struct Range {
    rocksdb::ColumnFamilyHandle* cf;
    std::string begin, end;
  };
  void Run();

  rocksdb::DB* const db_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Range> queue_;
  bool stop_ = false;
  uint64_t done_ = 0;
  std::thread thread_;
};

}  // namespace sidetable::internal
