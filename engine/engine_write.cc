// Entity group transactions: validate in full, check conditions against the
// current rows under the partition lock, then commit rows and change record
// as one WriteBatch through the commit queue.
#include <rocksdb/write_batch.h>

#include <unordered_set>

#include "engine/etag.h"
#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"
#include "engine/limits.h"

namespace sidetable {
namespace {

bool TakesCondition(OpKind k) {
  return k == OpKind::kUpdate || k == OpKind::kMerge || k == OpKind::kDelete;
}

// Everything that can be checked without reading: limits, keys, kinds, one
// partition, each RowKey once.
Status ValidateBatch(const Batch& batch) {
  const auto& ops = batch.operations();
  if (ops.empty()) return Status(Code::kInvalidInput, "a batch needs at least one operation");
  if (ops.size() > Limits::kMaxBatchOperations) {
    return Status(Code::kInvalidInput, "a batch holds at most 100 operations, got " +
                                           std::to_string(ops.size()));
  }
  if (batch.caller().size() > 1024) {
    return Status(Code::kInvalidInput, "caller identity longer than 1024 bytes");
  }
  if (!batch.client_request_id().empty()) {
    ST_RETURN_IF_ERROR(ValidateClientRequestId(batch.client_request_id()));
  }
  if (batch.epoch() > codec::kMaxEpoch) {
    // The version keeps 24 bits for the epoch (docs/scale-out.md).
    return Status(Code::kInvalidInput, "epoch " + std::to_string(batch.epoch()) +
                                           " does not fit in 24 bits");
  }
  // Duplicate RowKeys: a set only when there can be any (a single write,
  // the most common batch, spares building and freeing one).
  std::unordered_set<std::string_view> rows;
  if (ops.size() > 1) rows.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); i++) {
    const Operation& op = ops[i];
    const int idx = static_cast<int>(i);
    if (OpKindName(op.kind).empty()) {
      return Status(Code::kInvalidInput, "unknown operation kind", idx);
    }
    if (IsFenced(op.kind) && op.fence == 0) {
      return Status(Code::kInvalidInput, std::string(OpKindName(op.kind)) + " needs a fence version >= 1", idx);
    }
    if (!IsFenced(op.kind) && op.fence != 0) {
      return Status(Code::kInvalidInput, std::string(OpKindName(op.kind)) + " takes no fence version", idx);
    }
    if (op.kind == OpKind::kDelete || op.kind == OpKind::kFencedDelete) {
      ST_RETURN_IF_ERROR(ValidateKey(op.entity.partition_key, "PartitionKey").WithOpIndex(idx));
      ST_RETURN_IF_ERROR(ValidateKey(op.entity.row_key, "RowKey").WithOpIndex(idx));
      if (!op.entity.properties.empty()) {
        return Status(Code::kInvalidInput, "a Delete carries no properties", idx);
      }
    } else {
      Status s = ValidateEntity(op.entity, nullptr);
      if (!s.ok()) return s.WithOpIndex(idx);
    }
    if (!TakesCondition(op.kind) && !op.if_match.empty()) {
      return Status(Code::kInvalidInput,
                    std::string(OpKindName(op.kind)) + " takes no If-Match condition", idx);
    }
    if (op.entity.partition_key != ops[0].entity.partition_key) {
      return Status(Code::kCommandsInBatchActOnDifferentPartitions,
                    "all operations of a batch must have the same PartitionKey", idx);
    }
    if (ops.size() > 1 && !rows.insert(op.entity.row_key).second) {
      return Status(Code::kInvalidDuplicateRow,
                    "RowKey '" + op.entity.row_key + "' appears twice in the batch", idx);
    }
  }
  // After every operation's own checks: those name the operation at fault.
  if (const size_t payload = batch.PayloadBytes(); payload >= Limits::kMaxBatchBytes) {
    return Status(Code::kRequestBodyTooLarge, "a batch's payload must be smaller than 4 MiB, got " +
                                                  std::to_string(payload) + " bytes");
  }
  return Status::OK();
}

// Encoded size of an entity's properties, roughly (bytes, not UTF-16).
size_t ApproxEncodedBytes(const Entity& e) {
  size_t n = 16;
  for (const auto& p : e.properties) n += p.name.size() + p.value.bytes().size() + 12;
  return n;
}

// One operation after its checks: the row image before and after.
struct PreparedOp {
  const Operation* op;
  std::string key;
  std::string before_row;  // empty: the entity did not exist
  const Entity* after;     // null for Delete
  Entity merged;           // storage for Merge / InsertOrMerge results
  bool skipped = false;    // a fenced operation fenced out: not written
};

// The kind the change log records: fenced writes are plain ones there.
OpKind LoggedKind(OpKind k) {
  if (k == OpKind::kFencedUpsert) return OpKind::kInsertOrReplace;
  if (k == OpKind::kFencedDelete) return OpKind::kDelete;
  return k;
}

class EgtWork : public CommitWork {
 public:
  EgtWork(Engine::Impl* e, const TableInfo& table, const Batch& batch,
          std::vector<PreparedOp>& ops, uint64_t fingerprint)
      : e_(e), table_(table), batch_(batch), ops_(ops), fingerprint_(fingerprint) {
    approx_bytes_ = 64;
    for (const PreparedOp& p : ops_) {
      approx_bytes_ += 2 * p.key.size() + p.before_row.size() + 32;
      // The row, and its copy in the record unless written once.
      if (p.after != nullptr) {
        approx_bytes_ += (e->options_.write_images_once ? 1 : 2) * ApproxEncodedBytes(*p.after);
      }
    }
  }

  Status Admit(uint64_t lsn) override {
    if (batch_.epoch() != 0 && lsn > codec::kMaxStampedLsn) {
      return Status(Code::kInternal, "LSN " + std::to_string(lsn) +
                                         " does not fit the 40 bits of an epoch-stamped version");
    }
    return Status::OK();
  }

  void Encode(uint64_t lsn, int64_t time, rocksdb::WriteBatch* wb) override {
    std::string record;
    record.reserve(ApproximateBytes());
    size_t written = 0;
    for (const PreparedOp& p : ops_) written += p.skipped ? 0 : 1;
    // Written once (internal/images.h): the record names the rows it wrote
    // as its after images. An LSN beyond the 40 bits a row's version keeps
    // for it could not be found from the row: such records carry copies.
    const bool once = e_->options_.write_images_once && lsn <= codec::kMaxStampedLsn;
    codec::EncodeChangeHeader(lsn, ChangeKind::kEntities, time, table_.name, table_.id,
                              batch_.operations()[0].entity.partition_key, batch_.caller(),
                              written, &record, {}, batch_.client_request_id(), batch_.epoch(), once);
    // Epoch 0: the version is the LSN, as outside a cluster.
    const uint64_t version = codec::StampVersion(batch_.epoch(), lsn);
    const uint8_t row_format = once ? codec::kRowFormatSoleImage : codec::kRowFormat;
    // The same record with its images inline, for the reader of the log's
    // tail (recent_records.h): memory only, no WAL, memtable or flush.
    const bool keep_resolved = once && e_->recent_->enabled();
    std::string resolved;
    if (keep_resolved) {
      resolved.reserve(ApproximateBytes() + record.size());
      codec::EncodeChangeHeader(lsn, ChangeKind::kEntities, time, table_.name, table_.id,
                                batch_.operations()[0].entity.partition_key, batch_.caller(),
                                written, &resolved, {}, batch_.client_request_id(), batch_.epoch());
    }
    std::string row;
    for (const PreparedOp& p : ops_) {
      if (p.skipped) continue;
      row.clear();
      // The row it displaces may be the after image of a record still in
      // the log; this record's before image keeps it.
      if (!p.before_row.empty()) e_->KeepDisplaced(p.key, p.before_row, lsn, wb);
      if (p.after != nullptr) {
        codec::EncodeRow(*p.after, version, time, &row, row_format);
        wb->Put(e_->entities_cf_, p.key, row);
      } else {
        wb->Delete(e_->entities_cf_, p.key);
      }
      const int mode = !once ? -1 : p.after != nullptr ? codec::kImageInRow : codec::kImageInline;
      codec::EncodeChangeOp({p.op->entity.row_key, LoggedKind(p.op->kind), p.before_row, row}, &record, mode);
      if (keep_resolved) {
        codec::EncodeChangeOp({p.op->entity.row_key, LoggedKind(p.op->kind), p.before_row, row},
                              &resolved);
      }
    }
    wb->Put(e_->log_cf_, codec::LogKey(lsn), record);
    if (ChangeObserver* o = e_->options_.change_observer) {
      o->Staged(lsn, table_.name, batch_.operations()[0].entity.partition_key);
    }
    if (keep_resolved) e_->recent_->Add(lsn, record, std::move(resolved));
    if (!batch_.client_request_id().empty()) {
      // The outcome is remembered in the same WriteBatch: it exists exactly
      // when the write does.
      RememberedOutcome outcome;
      outcome.fingerprint = fingerprint_;
      outcome.lsn = lsn;
      outcome.version = version;
      outcome.time = time;
      outcome.marks.reserve(ops_.size());
      for (const PreparedOp& p : ops_) {
        outcome.marks.push_back(p.skipped          ? RememberedOutcome::kSkipped
                                : p.after != nullptr ? RememberedOutcome::kWritten
                                                     : RememberedOutcome::kDeleted);
      }
      e_->requests_->Record(batch_.caller(), batch_.client_request_id(), outcome, time, wb);
    }
  }

  size_t ApproximateBytes() const override { return approx_bytes_; }

 private:
  Engine::Impl* e_;
  const TableInfo& table_;
  const Batch& batch_;
  std::vector<PreparedOp>& ops_;
  uint64_t fingerprint_;
  size_t approx_bytes_;
};

// Applies one operation's semantics to the current row.
Status Prepare(PreparedOp* p, int idx) {
  const Operation& op = *p->op;
  const bool exists = !p->before_row.empty();
  if (op.kind == OpKind::kInsert && exists) {
    return Status(Code::kEntityAlreadyExists,
                  "entity (" + op.entity.partition_key + ", " + op.entity.row_key +
                      ") already exists",
                  idx);
  }
  if (TakesCondition(op.kind)) {
    if (!exists) {
      return Status(Code::kResourceNotFound,
                    "entity (" + op.entity.partition_key + ", " + op.entity.row_key +
                        ") does not exist",
                    idx);
    }
    if (!op.if_match.empty() && op.if_match != "*") {
      uint64_t version;
      int64_t ts;
      ST_RETURN_IF_ERROR(codec::DecodeRowHeader(p->before_row, &version, &ts).WithOpIndex(idx));
      if (op.if_match != MakeETag(version)) {
        return Status(Code::kUpdateConditionNotSatisfied,
                      "ETag " + op.if_match + " does not match the entity's " +
                          MakeETag(version),
                      idx);
      }
    }
  }
  if (IsFenced(op.kind)) {
    // The fence, read from the stored entity inside the partition lock.
    uint64_t stored = 0;
    if (exists) {
      Entity cur;
      ST_RETURN_IF_ERROR(codec::DecodeRow(p->before_row, &cur).WithOpIndex(idx));
      stored = FenceOf(cur);
    }
    if (op.kind == OpKind::kFencedUpsert) {
      p->skipped = exists && stored >= op.fence;
      p->after = &op.entity;
    } else {
      p->skipped = !exists || stored > op.fence;
      p->after = nullptr;
    }
    return Status::OK();
  }
  switch (op.kind) {
    case OpKind::kDelete:
      p->after = nullptr;
      break;
    case OpKind::kMerge:
    case OpKind::kInsertOrMerge:
      if (exists) {
        ST_RETURN_IF_ERROR(codec::DecodeRow(p->before_row, &p->merged).WithOpIndex(idx));
        for (const auto& prop : op.entity.properties) p->merged.Set(prop.name, prop.value);
        if (p->merged.properties.size() > Limits::kMaxUserProperties) {
          return Status(Code::kTooManyProperties, "merged entity has more than 252 properties",
                        idx);
        }
        p->merged.partition_key = op.entity.partition_key;
        p->merged.row_key = op.entity.row_key;
        if (EntitySize(p->merged) > Limits::kMaxEntityBytes) {
          return Status(Code::kEntityTooLarge, "merged entity is larger than 1 MiB", idx);
        }
        p->after = &p->merged;
      } else {
        p->after = &op.entity;
      }
      break;
    default:
      p->after = &op.entity;
  }
  return Status::OK();
}

class ArchiveRequestWork : public CommitWork {
 public:
  ArchiveRequestWork(Engine::Impl* e, const TableInfo& table, std::string_view pk,
                     const std::vector<std::string>& rks, std::string_view target,
                     std::string_view caller, uint64_t epoch)
      : e_(e), table_(table), pk_(pk), rks_(rks), target_(target), caller_(caller), epoch_(epoch) {}
  void Encode(uint64_t lsn, int64_t time, rocksdb::WriteBatch* wb) override {
    std::string record;
    codec::EncodeChangeHeader(lsn, ChangeKind::kArchiveRequested, time, table_.name, table_.id,
                              pk_, caller_, rks_.size(), &record, target_, {}, epoch_);
    for (const auto& rk : rks_) codec::EncodeChangeOp({rk, OpKind::kDelete, {}, {}}, &record);
    wb->Put(e_->log_cf_, codec::LogKey(lsn), record);
    if (ChangeObserver* o = e_->options_.change_observer) o->Staged(lsn, table_.name, pk_);
  }
  size_t ApproximateBytes() const override { return 128 + rks_.size() * 64; }

 private:
  Engine::Impl* e_;
  const TableInfo& table_;
  std::string_view pk_;
  const std::vector<std::string>& rks_;
  std::string_view target_, caller_;
  uint64_t epoch_;  // scale-out: readers fence a record of an older owner
};

}  // namespace

Result<uint64_t> Engine::Impl::RequestArchive(std::string_view table, std::string_view pk,
                                              const std::vector<std::string>& rks,
                                              std::string_view archive_table,
                                              std::string_view caller, uint64_t epoch) {
  if (epoch > codec::kMaxEpoch) {
    return Status(Code::kInvalidInput, "epoch " + std::to_string(epoch) + " is beyond 24 bits");
  }
  if (rks.empty() || rks.size() > Limits::kMaxBatchOperations) {
    return Status(Code::kInvalidInput, "an archive request names 1 to 100 RowKeys");
  }
  ST_RETURN_IF_ERROR(ValidateTableName(archive_table));
  ST_RETURN_IF_ERROR(ValidateKey(pk, "PartitionKey"));
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i < rks.size(); i++) {
    ST_RETURN_IF_ERROR(ValidateKey(rks[i], "RowKey").WithOpIndex(static_cast<int>(i)));
    if (!seen.insert(rks[i]).second) {
      return Status(Code::kInvalidDuplicateRow, "RowKey '" + rks[i] + "' appears twice",
                    static_cast<int>(i));
    }
  }
  if (caller.size() > 1024) return Status(Code::kInvalidInput, "caller identity longer than 1024 bytes");
  auto t = FindTable(table);
  if (!t) return Status(Code::kTableNotFound, "table '" + std::string(table) + "' not found");
  if (TableNameEquals(table, archive_table)) {
    return Status(Code::kInvalidInput, "the archive table must differ from the source table");
  }
  std::shared_lock table_lock(t->mu);
  if (t->deleted) return Status(Code::kTableNotFound, "table '" + std::string(table) + "' not found");
  // In the partition's order with its writes.
  std::lock_guard partition_lock(partition_locks_.For(t->info.id, pk));
  ArchiveRequestWork work(this, t->info, pk, rks, archive_table, caller, epoch);
  uint64_t lsn;
  int64_t time;
  ST_RETURN_IF_ERROR(commits_->Commit(&work, &lsn, &time));
  return lsn;
}

Result<WriteResult> Engine::Impl::Execute(const Batch& batch, WriteGroup::State* group) {
  ST_RETURN_IF_ERROR(ValidateBatch(batch));
  auto table = FindTable(batch.table());
  if (!table) return Status(Code::kTableNotFound, "table '" + batch.table() + "' not found");
  const auto& ops = batch.operations();
  const std::string& pk = ops[0].entity.partition_key;
  std::mutex& partition = partition_locks_.For(table->info.id, pk);
  // Alone: held until this write is committed. In a group: the group's
  // until its flush (write_group.h).
  std::shared_lock<std::shared_mutex> table_lock;
  std::unique_lock<std::mutex> partition_lock;
  if (group != nullptr) {
    group->Acquire(table, &partition);
  } else {
    table_lock = std::shared_lock(table->mu);
    partition_lock = std::unique_lock(partition);
  }
  // Under the table's lock (shared) either way: a DeleteTable has finished or waits.
  if (table->deleted) return Status(Code::kTableNotFound, "table '" + batch.table() + "' not found");

  // A retry of a committed request: its first outcome, nothing executed.
  // Under the partition lock, so an attempt still committing is seen.
  uint64_t fingerprint = 0;
  // Held until this write is committed or has failed (in a group, until the
  // flush). Declared after the locks, so given back before them.
  RequestIdClaim claim;
  if (!batch.client_request_id().empty()) {
    fingerprint = RequestFingerprint(batch);
    // Claimed before the lookup: a request with this id on another
    // partition is either still executing (the claim refuses) or committed
    // (the lookup finds it).
    const std::string* key =
        inflight_ids_.Claim(batch.caller(), batch.client_request_id(), fingerprint);
    if (key == nullptr) {
      return Status(Code::kInvalidInput, "client request id '" + batch.client_request_id() +
                                             "' is in use by a different request still executing");
    }
    claim = RequestIdClaim(&inflight_ids_, key);
    auto known = requests_->Lookup(batch.caller(), batch.client_request_id());
    if (!known.ok()) return known.status();
    if (known->has_value()) {
      // An outcome restored from another owner's record has no fingerprint
      // (the record does not carry the request): the id and size must do.
      // One stored by an older release carries the legacy fingerprint.
      const bool same = (*known)->any_fingerprint ||
                        (*known)->fingerprint ==
                            ((*known)->legacy_fingerprint ? LegacyRequestFingerprint(batch) : fingerprint);
      if (!same || (*known)->marks.size() != ops.size()) {
        return Status(Code::kInvalidInput, "client request id '" + batch.client_request_id() +
                                               "' was already used for a different request");
      }
      return (*known)->ToResult();
    }
  }

  std::vector<PreparedOp> prepared(ops.size());
  for (size_t i = 0; i < ops.size(); i++) {
    prepared[i].op = &ops[i];
    prepared[i].key = codec::EntityKey(table->info.id, pk, ops[i].entity.row_key);
  }
  // Current rows. Holding the partition lock, nothing else can change them.
  rocksdb::ReadOptions ro;
  if (ops.size() == 1) {
    rocksdb::Status s = db_->Get(ro, entities_cf_, prepared[0].key, &prepared[0].before_row);
    if (!s.ok() && !s.IsNotFound()) return Status(Code::kInternal, "read: " + s.ToString(), 0);
  } else {
    std::vector<rocksdb::Slice> keys(ops.size());
    std::vector<rocksdb::PinnableSlice> values(ops.size());
    std::vector<rocksdb::Status> statuses(ops.size());
    for (size_t i = 0; i < ops.size(); i++) keys[i] = prepared[i].key;
    db_->MultiGet(ro, entities_cf_, keys.size(), keys.data(), values.data(), statuses.data());
    for (size_t i = 0; i < ops.size(); i++) {
      if (statuses[i].ok()) {
        prepared[i].before_row.assign(values[i].data(), values[i].size());
      } else if (!statuses[i].IsNotFound()) {
        return Status(Code::kInternal, "read: " + statuses[i].ToString(), static_cast<int>(i));
      }
    }
  }
  for (size_t i = 0; i < prepared.size(); i++) {
    ST_RETURN_IF_ERROR(Prepare(&prepared[i], static_cast<int>(i)));
  }

  WriteResult result;
  size_t skipped = 0;
  for (const PreparedOp& p : prepared) skipped += p.skipped ? 1 : 0;
  if (skipped == prepared.size()) {
    // Every operation fenced out: nothing to commit, no change record.
    result.etags.assign(prepared.size(), std::string());
    for (uint32_t i = 0; i < prepared.size(); i++) result.skipped.push_back(i);
    return result;
  }
  // Under the partition lock, before the write is visible: no reader can
  // cache these keys again until the lock is let go, after the write
  // (row_cache.h). A write that then fails has only cost the cache a row.
  for (const PreparedOp& p : prepared) {
    if (!p.skipped) row_cache_->Erase(p.key);
  }
  EgtWork work(this, table->info, batch, prepared, fingerprint);
  // Durability is waited for by the caller (Engine::Execute), after the
  // partition lock is released.
  if (group != nullptr) {
    ST_RETURN_IF_ERROR(group->Add(&work, &result.lsn, &result.timestamp));
    group->claims.push_back(std::move(claim));
  } else {
    ST_RETURN_IF_ERROR(commits_->Commit(&work, &result.lsn, &result.timestamp, /*wait_durable=*/false));
  }
  result.etags.reserve(prepared.size());
  const std::string etag = MakeETag(codec::StampVersion(batch.epoch(), result.lsn));
  for (uint32_t i = 0; i < prepared.size(); i++) {
    const PreparedOp& p = prepared[i];
    if (p.skipped) result.skipped.push_back(i);
    result.etags.push_back(p.after && !p.skipped ? etag : std::string());
  }
  return result;
}

}  // namespace sidetable
