// Pattern: an Azure table design pattern as a pure function from a change
// event to idempotent table operations (ARCHITECTURE.md, invariant 4).
//
// A pattern does no I/O: the worker runtime (workers/) feeds it events from
// Kafka and applies the operations it returns through the client, with the
// fencing and retries each operation kind defines below. Applying the
// operations of an event twice, or of an older event after a newer one,
// leaves the tables as applying them once in order would.
//
// Thread safety: Apply() is const and may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::patterns {

// The reserved property in derived entities that carries the source
// entity's version (its change-log LSN): the fence.
// The engine's fenced operations read the same property (engine/batch.h).
inline constexpr const char* kSourceVersionProperty = kFenceProperty;

// Scale-out (docs/scale-out.md): entity versions are epoch << 40 | lsn, each
// owner counting its own LSNs; outside a cluster a version is an LSN, never
// above this.
inline constexpr uint64_t kMaxStampedLsn = (uint64_t{1} << 40) - 1;

// The source version up to which a TableDeleted clears a derived table
// (kFencedClear). Outside a cluster its LSN: every version of the deleted
// table is an earlier LSN of the same log, every later one a higher LSN. In
// a cluster no LSN separates them (each owner has its own), so the event
// carries the highest owner epoch when the table was deleted
// (docs/scale-out.md, "Table events in a cluster") and every version of
// that epoch or below is cleared.
inline uint64_t ClearVersion(const ChangeRecord& deleted) {
  return deleted.epoch == 0 ? deleted.lsn : (deleted.epoch << 40 | kMaxStampedLsn);
}

struct TableOp {
  enum class Kind : uint8_t {
    // Write `entity` into `table` unless the stored entity already carries a
    // SourceVersion >= `version`. The entity carries SourceVersion = version.
    kFencedUpsert,
    // Delete (table, pk, rk) unless the stored entity carries a
    // SourceVersion > `version`. Absent is fine.
    kFencedDelete,
    // Delete every entity of `table` whose SourceVersion <= `version`
    // (the source table was deleted).
    // Caveat: the source's entity events travel on other Kafka partitions
    // than its TableDeleted event, so one with a version <= `version` can
    // arrive after the clear and re-create an entry; only a clear fence the
    // runtime remembers per table (drop upserts <= it) closes that gap.
    // In a cluster (`version` above kMaxStampedLsn, see ClearVersion) the
    // runtime remembers none: the re-created table's entities can have
    // versions below it. And a re-created table's entity applied before
    // the clear is cleared too (docs/scale-out.md says when).
    kFencedClear,
    // The eventually consistent move (archive pattern): copy the source
    // entity (source_table, pk, rk) into `table` with a fenced upsert (the
    // copy carries SourceVersion = the copied state's version), then delete
    // it from the source only if its ETag is still the one copied; if it
    // changed, start over with the new state. Absent source: nothing to do.
    // Fence: if the state first found has a version (ETag W/"<n>") above
    // `version`, it was written after the move was decided and stays in the
    // source (so a replayed old request never moves a later re-insert).
    kMove,
  };
  Kind kind = Kind::kFencedUpsert;
  std::string table;         // the table written to
  std::string source_table;  // kMove only
  Entity entity;             // kFencedUpsert: the entity to write; others: keys only
  uint64_t version = 0;      // the source version this operation stems from
};


class Pattern {
 public:
  virtual ~Pattern() = default;
  // The name in the worker's configuration ("index_table", "archive").
  virtual const std::string& name() const = 0;
  // The source tables whose events this instance wants.
  virtual bool Wants(const ChangeRecord& record) const = 0;
  // Appends the operations that make the derived tables reflect `record`.
  virtual Status Apply(const ChangeRecord& record, std::vector<TableOp>* out) const = 0;

  // (source table, derived table) pairs this instance keeps: events of a
  // table that is no pattern's source are skipped unread, and the worker
  // records its applied watermark per pair (docs/consistency.md).
  struct Derivation {
    std::string source;
    std::string derived;
  };
  virtual std::vector<Derivation> Derivations() const = 0;
};

}  // namespace sidetable::patterns
