// Batch: an entity group transaction (EGT) as callers build it.
//
// Every write is a Batch; a single operation is a Batch of one. All
// operations name the same table and PartitionKey and each RowKey at most
// once; the engine validates that, the limits and the ETag conditions in full
// before it commits anything, and commits all operations or none.
//
// Thread safety: a value type; build it on one thread, then hand it over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/edm.h"

namespace sidetable {

// Wire and storage values are fixed (docs/change-events.md): never renumber.
enum class OpKind : uint8_t {
  kInsert = 1,           // fails with EntityAlreadyExists when present
  kUpdate = 2,           // replace; needs the entity; If-Match
  kMerge = 3,            // update the given properties; needs the entity; If-Match
  kDelete = 4,           // needs the entity; If-Match
  kInsertOrReplace = 5,  // upsert, no condition
  kInsertOrMerge = 6,    // upsert, no condition
  // Fenced writes, for pattern workers keeping derived tables (docs/patterns.md):
  // the condition is the stored entity's kFenceProperty, checked inside the
  // EGT, so a worker needs no read first. A fenced-out operation is skipped
  // (not an error) and leaves no trace in the change log; the others commit.
  // In the change log they appear as InsertOrReplace and Delete.
  kFencedUpsert = 7,     // InsertOrReplace unless stored fence >= Operation::fence
  kFencedDelete = 8,     // Delete unless absent or stored fence > Operation::fence
};

// The property that carries a derived entity's source version (the fence).
inline constexpr const char* kFenceProperty = "SourceVersion";

// The fence an entity carries: kFenceProperty as Edm.Int64, Edm.Int32 or a
// decimal string; 0 when absent or unreadable.
uint64_t FenceOf(const Entity& e);

inline bool IsFenced(OpKind k) { return k == OpKind::kFencedUpsert || k == OpKind::kFencedDelete; }

std::string_view OpKindName(OpKind kind);  // "Insert", "InsertOrMerge", ...
bool ParseOpKind(std::string_view name, OpKind* kind);

struct Operation {
  OpKind kind = OpKind::kInsert;
  // Keys and user properties. timestamp and etag are ignored: the engine sets them.
  Entity entity;
  // Update, Merge, Delete: an ETag, or "*" for unconditional. Must be empty
  // for Insert and the upserts.
  std::string if_match;
  // FencedUpsert, FencedDelete: the source version (>= 1); 0 for the others.
  uint64_t fence = 0;
};

class Batch {
 public:
  explicit Batch(std::string table) : table_(std::move(table)) {}

  Batch& Insert(Entity e) { return Add(OpKind::kInsert, std::move(e), ""); }
  Batch& Update(Entity e, std::string if_match = "*") {
    return Add(OpKind::kUpdate, std::move(e), std::move(if_match));
  }
  Batch& Merge(Entity e, std::string if_match = "*") {
    return Add(OpKind::kMerge, std::move(e), std::move(if_match));
  }
  Batch& Delete(std::string pk, std::string rk, std::string if_match = "*");
  Batch& InsertOrReplace(Entity e) { return Add(OpKind::kInsertOrReplace, std::move(e), ""); }
  Batch& InsertOrMerge(Entity e) { return Add(OpKind::kInsertOrMerge, std::move(e), ""); }
  // `e` should carry kFenceProperty = fence, as the derived entity's version.
  Batch& FencedUpsert(Entity e, uint64_t fence);
  Batch& FencedDelete(std::string pk, std::string rk, uint64_t fence);
  Batch& Add(OpKind kind, Entity e, std::string if_match);
  Batch& Add(Operation op) {
    ops_.push_back(std::move(op));
    return *this;
  }
  void Reserve(size_t operations) { ops_.reserve(operations); }

  // Who asked for the change; recorded in the change log ("" = anonymous).
  Batch& SetCaller(std::string caller) {
    caller_ = std::move(caller);
    return *this;
  }

  // The client's id for this request (the service's x-ms-client-request-id;
  // "" = none). A batch whose id the engine has already committed within the
  // request-id window is not executed again: Execute() answers with the
  // first outcome (WriteResult::replayed), so a client's retry after a lost
  // reply applies the write exactly once. Recorded in the change log.
  Batch& SetClientRequestId(std::string id) {
    client_request_id_ = std::move(id);
    return *this;
  }

  // Scale-out (docs/scale-out.md): the epoch of this sidecar's ownership of
  // the batch's shard, set by the sidecar, never by a client. 0 = not in a
  // cluster: versions are LSNs. Otherwise each version is epoch << 40 | lsn,
  // so an entity's versions keep growing across owners.
  Batch& SetEpoch(uint64_t epoch) {
    epoch_ = epoch;
    return *this;
  }
  uint64_t epoch() const { return epoch_; }

  const std::string& table() const { return table_; }
  const std::string& caller() const { return caller_; }
  const std::string& client_request_id() const { return client_request_id_; }
  const std::vector<Operation>& operations() const { return ops_; }
  size_t size() const { return ops_.size(); }

  // Payload size as the 4 MiB EGT limit counts it: keys, names and values
  // in bytes as sent (EntityPayloadBytes, limits.h).
  size_t PayloadBytes() const;

 private:
  std::string table_;
  std::string caller_;
  std::string client_request_id_;
  uint64_t epoch_ = 0;
  std::vector<Operation> ops_;
};

// What a committed Batch returns: per operation, in order, the new ETag and
// version (empty ETag for deletes), and the change log LSN of the commit.
// With fenced operations: `skipped` lists the indexes of those fenced out
// (their ETag is empty); when every operation was skipped nothing commits
// and `lsn` is 0.
struct WriteResult {
  uint64_t lsn = 0;
  int64_t timestamp = 0;
  std::vector<std::string> etags;
  std::vector<uint32_t> skipped;
  // True when this is the remembered outcome of an earlier attempt with the
  // same client request id: nothing was executed this time.
  bool replayed = false;
  // A batch of one Insert, in the sidecar's reply: the entity as stored
  // (keys, properties, Timestamp, ETag), as Azure's Insert Entity answers 201
  // with it. Filled by the reply, not by the engine (nothing to copy when
  // the caller asked for no content).
  std::optional<Entity> entity;
};

}  // namespace sidetable
