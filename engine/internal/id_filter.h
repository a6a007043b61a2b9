// IdFilter: a blocked Bloom filter over 64-bit hashes, for the request log's
// "has this client request id been seen?" (request_log.h). Nearly every id
// a write carries is new, and answering that from RocksDB took two Gets
// (two generations), 6% of the sidecar's frontend on single inserts
// (docs/performance.md, session 26). A "no" from the filter is certain, so
// those lookups read nothing; a "maybe" (every recorded id, and about 1% of
// new ones) reads RocksDB as before.
//
// Each id sets kProbes bits inside one 64-byte block: a probe costs one
// cache miss whatever the filter's size. Sized for an expected number of
// ids at ~10 bits each, and capped (kMaxBytes): past the cap the false
// positives grow and cost Gets, never a wrong answer.
//
// Not thread-safe: the request log calls it under its mutex.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sidetable::internal {

class IdFilter {
 public:
  static constexpr size_t kMaxBytes = 16 << 20;
  static constexpr int kProbes = 6;

  explicit IdFilter(uint64_t expected_ids);

  void Add(uint64_t hash);
  // False only if `hash` was never added.
  bool MayContain(uint64_t hash) const;

  size_t bytes() const { return blocks_.size() * sizeof(Block); }

 private:
  struct alignas(64) Block {
    uint64_t words[8] = {};
  };
  size_t BlockIndex(uint64_t hash) const;

  std::vector<Block> blocks_;
};

}  // namespace sidetable::internal
