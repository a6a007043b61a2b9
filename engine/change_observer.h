// ChangeObserver: told where every change record goes as it is committed,
// for a reader that must know the log's routing without reading the log
// (the sidecar's SourceRoutes: the newest record of each source table per
// Kafka partition, for session tokens, docs/consistency.md).
//
// Contract:
// - Staged() is called once per change record the engine writes (entity
//   writes and EGTs, archive requests, table created / deleted), while it is
//   encoded, before it is written; Settled() follows once the records staged
//   since the last Settled() were written (true) or not (false: nothing of
//   them is visible and their LSNs are handed out again).
// - Both are called by one thread at a time, the one at the head of the
//   commit queue, in LSN order; successive calls may come from different
//   threads, ordered by the queue's mutex. Settled(true) returns before any
//   writer of those records is told its write is done, so anything learned
//   from an acknowledged write (a session token) is already observed.
// - They run on the commit path: keep them to a few hundred ns a record, and
//   never call back into the engine.
#pragma once

#include <cstdint>
#include <string_view>

namespace sidetable {

class ChangeObserver {
 public:
  virtual ~ChangeObserver() = default;
  // `table` is the table's name as created; `partition_key` is "" for table
  // events. The views are valid during the call only.
  virtual void Staged(uint64_t lsn, std::string_view table, std::string_view partition_key) = 0;
  virtual void Settled(bool written) = 0;
};

}  // namespace sidetable
