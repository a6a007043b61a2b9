// ChangeRecord: one committed EGT (or table event) in the change log.
//
// The change log is the transactional outbox: each record is written in the
// same RocksDB WriteBatch as the rows it describes, keyed by a log sequence
// number (LSN) that increases by one per commit with no gaps. The Kafka
// publisher, the audit and replay tools and the pattern workers all read this
// record; docs/change-events.md is its normative description.
//
// Thread safety: value types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/batch.h"
#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable {

enum class ChangeKind : uint8_t {
  kEntities = 1,      // an EGT on one partition
  kTableCreated = 2,
  kTableDeleted = 3,
  // An application asked for entities to be moved to an archive table (the
  // eventually consistent transactions pattern): the change log is the
  // guide's queue. No rows change; each op names a RowKey (op kind Delete:
  // the eventual effect on the source) and target_table the archive.
  kArchiveRequested = 4,
  // Scale-out (docs/scale-out.md): a sidecar took ownership of a shard with
  // `epoch`. Never in an engine's change log: the new owner produces it
  // straight to the shard's Kafka partition, and readers use it to fence
  // records of older owners (events/epoch_filter.h).
  kShardClaimed = 5,
};

std::string_view ChangeKindName(ChangeKind kind);
bool ParseChangeKind(std::string_view name, ChangeKind* kind);

struct ChangeOp {
  std::string row_key;
  OpKind kind = OpKind::kInsert;
  // The entity before and after the operation (keys, timestamp, ETag and
  // properties filled in). An Insert has no before, a Delete no after.
  std::optional<Entity> before;
  std::optional<Entity> after;
  // The per-entity version this operation produced: the LSN of its commit,
  // so it only ever increases for a given entity, across delete and re-insert.
  uint64_t version = 0;
  std::string etag;  // of `after`; empty for deletes
};

struct ChangeRecord {
  uint64_t lsn = 0;
  ChangeKind kind = ChangeKind::kEntities;
  int64_t commit_time = 0;  // DateTime ticks
  std::string table;
  uint32_t table_id = 0;  // distinguishes a re-created table from its predecessor
  std::string partition_key;
  std::string caller;
  // The writer's client request id ("" = none given): joins a client's log
  // line with the audit trail.
  std::string client_request_id;
  std::string target_table;  // kArchiveRequested only
  // Scale-out: the epoch of the writer's ownership of the record's shard
  // (0 = not in a cluster). Each op's version is epoch << 40 | lsn then.
  uint64_t epoch = 0;
  // kShardClaimed only: the shard (Kafka partition) claimed.
  int32_t shard = -1;
  // kShardClaimed only: the claiming member's cluster.service ("" = a claim
  // written before claims named their service). A reader that knows its own
  // service never lets another service's claim fence its records
  // (events/epoch_filter.h).
  std::string service;
  // Scale-out: the cluster incarnation of `table` when the record was
  // written (0 = not stamped), from the st-ti Kafka header
  // (sidecar/cluster/table_incarnations.h). Carried in memory only: never
  // in the change log nor in the event's JSON.
  uint64_t table_incarnation = 0;
  std::vector<ChangeOp> ops;
};

// Scale-out (docs/scale-out.md, "Table events in a cluster"): what a member
// applying a table record of the cluster topic writes into its table event
// besides its own LSN. The cluster's request id is the same on every
// member, so the publisher can send only the event of the member that
// wrote the record; the epoch lets the event's readers fence and clear with
// it. Empty outside a cluster.
struct TableEventStamp {
  std::string client_request_id;
  uint64_t epoch = 0;
};

// A page of the change log as Engine::ReadChanges returns it (and the wire's
// ReadChanges reply carries it).
struct ChangeBatch {
  std::vector<ChangeRecord> records;
  // Records below this LSN have been trimmed and cannot be read any more.
  uint64_t first_available_lsn = 1;
  // The LSN of the newest committed record when the read started.
  uint64_t last_lsn = 0;
};

// A page of the change log left in its stored encoding (a "raw page"): each
// record, as docs/storage-format.md describes it, preceded by its length as
// a varint. Engine::ReadRawChanges appends one for a server to ship without
// decoding it; DecodeChangePage turns it into records. This describes what
// was appended.
struct RawChangePage {
  uint64_t records = 0;
  uint64_t first_available_lsn = 1;  // as in ChangeBatch
  uint64_t last_lsn = 0;             // as in ChangeBatch
};

// Appends the records of a raw page to *out, in page order. Fails with
// kInternal naming the record on a length that runs past the page or a
// record that does not decode (a truncated or corrupt page); *out then holds
// the records before it. `expected_records`, when not 0, is how many the
// page announced: a page holding a different number fails too.
Status DecodeChangePage(std::string_view page, std::vector<ChangeRecord>* out,
                        uint64_t expected_records = 0);

}  // namespace sidetable
