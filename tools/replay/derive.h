// Derive: builds a derived table (the index_table pattern) afresh over an
// existing source table, while the application keeps writing.
//
//   1. L0 = the sidecar's newest LSN.
//   2. Snapshot: the source table page by page. Each entity goes through the
//      pattern as if it had just been inserted at its own version (its ETag
//      W/"<lsn>"). Pages are separate snapshots, so an entity may be seen in a
//      state newer than L0; such entities are remembered with that version.
//   3. The change log from L0 + 1 to its newest LSN, through the same
//      pattern. An operation whose version is at or below the version the
//      snapshot saw for that entity is already reflected and is dropped.
//
// Every change after L0 is in the log (no gap), and no change is applied on
// top of a snapshot state that already contains it (nothing counted twice):
// the result is the pattern's function of the source as of the last LSN read.
// The operations are the workers' own fenced operations (apply/op_applier.h),
// so re-applying any of them after a resume is harmless.
//
// Resumable: the progress (phase, L0, snapshot continuation, the versions
// remembered, the log position) is a checkpoint (checkpoint.h).
//
// Thread safety: uses one client from the calling thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "engine/status.h"
#include "patterns/registry.h"
#include "tools/replay/checkpoint.h"
#include "tools/replay/progress.h"

namespace sidetable::client {
class Client;
}

namespace sidetable::replay {

struct DeriveOptions {
  // An index_table pattern as in a worker configuration; its "target" is
  // the table to build (it must be new or empty unless resuming).
  patterns::PatternConfig pattern;
  int page_size = 1000;
  int fence_attempts = 16;
  int max_attempts = 8;  // per operation, for transient errors (busy, no reply)
  uint64_t stop_after = 0;  // snapshot entities + log records in this run; 0 = no limit
  const std::atomic<bool>* interrupted = nullptr;
  Progress* progress = nullptr;
  // Tests: called after each snapshot page is applied (to write meanwhile).
  std::function<void(size_t page)> after_snapshot_page;
};

struct DeriveReport {
  uint64_t snapshot_lsn = 0;       // L0
  uint64_t snapshot_entities = 0;
  uint64_t log_records = 0;        // records read from the log after L0
  uint64_t ops_dropped = 0;        // log operations the snapshot already held
  uint64_t table_ops = 0;          // derived-table operations applied
  uint64_t consistent_lsn = 0;     // the target reflects the source as of this LSN
  bool stopped = false;            // interrupted or stop_after: a checkpoint was saved
};

// `checkpoint_path` empty: no checkpoint (an interruption loses the progress,
// and the target must then be deleted before a new run).
Result<DeriveReport> Derive(client::Client* client, const DeriveOptions& options,
                            const std::string& checkpoint_path);

}  // namespace sidetable::replay
