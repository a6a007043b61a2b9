// RecentRecords: the newest change records, resolved, kept in memory for the
// reader of the log's tail (internal to the engine).
//
// A record that refers to its rows for its after images (internal/images.h)
// costs its reader a RocksDB lookup per image; under a steady load the
// publisher resolving the records it sends to Kafka spent as much CPU on
// those lookups (a skip-list search each, in a large memtable) as writing
// the images once had saved (docs/performance.md, issue 17, session 28).
// The writer has the images in hand when it encodes a record, so it also
// keeps the resolved record here, bounded by bytes, oldest out first; a
// reader takes it when the stored record is the one it was made from (its
// LSN, size and XXH3 match: an LSN handed out again after a failed write
// names a different record). Off (0 bytes) unless something reads the tail:
// the sidecar turns it on with a change stream.
//
// Thread safety: all methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace sidetable::internal {

class RecentRecords {
 public:
  explicit RecentRecords(size_t max_bytes) : max_bytes_(max_bytes) {}

  bool enabled() const { return max_bytes_ > 0; }
  // `stored` is the record as written at `lsn`, `resolved` its images
  // inline. A record as large as the whole bound is not kept.
  void Add(uint64_t lsn, std::string_view stored, std::string resolved);
  // The resolved form of `stored` at `lsn`, if kept.
  bool Find(uint64_t lsn, std::string_view stored, std::string* resolved) const;
  size_t bytes() const;

 private:
  struct Entry {
    uint64_t lsn;
    uint64_t hash;
    size_t size;
    // Shared, so a reader copies it outside the lock: a record may be
    // megabytes, and the writer adding the next one must not wait for that.
    std::shared_ptr<const std::string> resolved;
  };
  static uint64_t Hash(std::string_view stored);

  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;  // ascending LSN
  size_t bytes_ = 0;
};

}  // namespace sidetable::internal
