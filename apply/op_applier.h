// OpApplier: applies one patterns::TableOp through a TableStore with exactly
// the fencing its kind defines (patterns/pattern.h):
//
//   kFencedUpsert  Get; present with SourceVersion >= version: skip; absent:
//                  Insert; else Update If-Match the ETag read. On
//                  EntityAlreadyExists / UpdateConditionNotSatisfied /
//                  ResourceNotFound (a race with another writer): re-read.
//   kFencedDelete  Get; absent: done; SourceVersion > version: skip; else
//                  Delete If-Match the ETag read; on 412 re-read.
//   kFencedClear   Query the table page by page; fenced-delete (If-Match)
//                  every entity with SourceVersion <= version.
//   kMove          Get the source; absent: done; its version (ETag) already
//                  above op.version on the first read: skip (it was
//                  rewritten after the move was decided). Fenced-upsert a copy into
//                  the target with SourceVersion = the source entity's own
//                  version (from its ETag W/"<n>", else op.version), then
//                  Delete the source If-Match the ETag copied; on 412 the
//                  source changed: re-read and redo both. A copy fenced out
//                  by an archive entity that is not this copy (a higher
//                  SourceVersion) leaves the source alone: a permanent error
//                  naming the entity (the source must never be deleted
//                  without its copy in the archive).
//
// Every read-check-write loop is bounded by `fence_attempts`; running out
// returns UpdateConditionNotSatisfied, which the caller retries like a
// transient error. A missing target table (TableNotFound) is created
// (TableAlreadyExists ignored): derived tables appear by themselves.
// SourceVersion is written as Edm.Int64; Int32 and decimal strings are read.
//
// Thread safety: not thread-safe (neither is the store): one per thread.
#pragma once

#include <map>
#include <mutex>

#include <cstdint>
#include <optional>
#include <string>

#include "apply/table_store.h"
#include "engine/status.h"
#include "engine/table_name.h"
#include "patterns/pattern.h"

namespace sidetable::apply {

enum class OpResult : uint8_t {
  kWritten,  // the operation changed a table
  kFenced,   // skipped: the stored entity is as new or newer
  kNoop,     // nothing to do (already absent, empty table, ...)
};

class OpApplier {
 public:
  OpApplier(TableStore* store, int fence_attempts) : store_(store), attempts_(fence_attempts) {}

  Status Apply(const patterns::TableOp& op, OpResult* result);
  // An upsert of `table` at `version` that a clear this process applied
  // already covers (it must not re-create an entry; see cleared_).
  bool FencedByClear(const std::string& table, uint64_t version);

 private:
  Status FencedUpsert(const std::string& table, Entity entity, uint64_t version, OpResult* r);
  Status FencedDelete(const std::string& table, const std::string& pk, const std::string& rk,
                      uint64_t version, OpResult* r);
  Status FencedClear(const std::string& table, uint64_t version, OpResult* r);
  Status Move(const patterns::TableOp& op, OpResult* r);
  // After a move's copy was fenced out: OK when the archive holds this very
  // copy (SourceVersion == version: an earlier attempt made it); otherwise a
  // permanent error naming the entity, so that its source is not deleted.
  Status ConfirmCopy(const patterns::TableOp& op, uint64_t version);
  Status EnsureTable(const std::string& table);

  TableStore* store_;
  int attempts_;
  // Per derived table, the source version of the last
  // clear this process applied. A table's delete event and its entity events
  // travel on different Kafka partitions, so an upsert from before the clear
  // may arrive after it; it must not re-create an entry (docs/patterns.md).
  // In memory: a restart forgets it, and the replay applies the clear again.
  // A cluster's clears are not kept (patterns::ClearVersion, pattern.h).
  std::mutex cleared_mu_;
  std::map<TableKey, uint64_t> cleared_;
};

// The SourceVersion an entity carries (0 when absent or unreadable).
uint64_t SourceVersionOf(const Entity& e);
// "FencedUpsert", "FencedDelete", "FencedClear", "Move".
const char* TableOpKindName(patterns::TableOp::Kind kind);

}  // namespace sidetable::apply
