// The partition part of an entity key, as a RocksDB SliceTransform: the
// entity family's memtable keeps, per partition, where its last insert went
// (memtable_insert_with_hint_prefix_extractor) and starts the next insert's
// search there instead of from the skip list's top.
//
// An entity key is table id (4 bytes) + the ordinal-mapped PartitionKey
// (never a zero byte) + '\0' + the mapped RowKey (codec.h, EntityKey); the
// prefix is everything up to and including that '\0', which is
// PartitionPrefix(table, pk). Shorter keys are out of the domain and get
// RocksDB's plain insert; that includes DeleteTable's range tombstone,
// which starts at the bare table id. It must: RocksDB 7.8 (Debian 12) looks
// a range tombstone's start key up in the same hints as the point keys and
// inserts it into the tombstone list with a point key's splice (later
// releases skip range deletions), which breaks the list. A session that
// hinted the change log met exactly that (docs/performance.md). So no
// range deletion may ever start at a partition prefix.
#pragma once

#include <rocksdb/slice_transform.h>

#include <memory>

namespace sidetable::internal {

std::shared_ptr<const rocksdb::SliceTransform> NewPartitionPrefixTransform();

}  // namespace sidetable::internal
