// Scale-out (docs/scale-out.md): another owner's change records applied
// exactly (restore, standbys) and the rows of shards given up dropped. Both
// write outside the commit queue: no LSN, no change record, because this
// sidecar's publisher must publish only its own writes.
#include <rocksdb/write_batch.h>

#include <unordered_set>

#include "engine/etag.h"
#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"
#include "engine/limits.h"

namespace sidetable {
namespace {

Status Invalid(std::string what, int op = -1) {
  return Status(Code::kInvalidInput, "replicated record: " + what, op);
}

// Everything checkable without reading, so a bad record changes nothing.
Status ValidateEntitiesRecord(const ChangeRecord& r) {
  if (r.ops.empty()) return Invalid("an Entities record needs at least one operation");
  if (r.ops.size() > Limits::kMaxBatchOperations) {
    return Invalid("at most 100 operations, got " + std::to_string(r.ops.size()));
  }
  ST_RETURN_IF_ERROR(ValidateKey(r.partition_key, "PartitionKey"));
  ST_RETURN_IF_ERROR(ValidateCaller(r.caller));
  if (!r.client_request_id.empty()) ST_RETURN_IF_ERROR(ValidateClientRequestId(r.client_request_id));
  if (r.epoch > codec::kMaxEpoch) return Invalid("epoch does not fit in 24 bits");
  size_t payload = 0;
  std::unordered_set<std::string_view> rows;
  for (size_t i = 0; i < r.ops.size(); i++) {
    const ChangeOp& op = r.ops[i];
    const int idx = static_cast<int>(i);
    ST_RETURN_IF_ERROR(ValidateKey(op.row_key, "RowKey").WithOpIndex(idx));
    if (!rows.insert(op.row_key).second) return Invalid("RowKey '" + op.row_key + "' appears twice", idx);
    if (op.version == 0) return Invalid("operation without a version", idx);
    // One commit gives all its entities one version.
    if (op.version != r.ops[0].version) return Invalid("operations with different versions", idx);
    if (op.after) {
      if (op.after->partition_key != r.partition_key || op.after->row_key != op.row_key) {
        return Invalid("after image keys differ from the record's", idx);
      }
      size_t size = 0;
      ST_RETURN_IF_ERROR(ValidateEntity(*op.after, &size).WithOpIndex(idx));
      payload += size;
      // The ETag travels as the version: they must agree, or a client's
      // If-Match would stop matching after the hand-over.
      const std::string etag = MakeETag(op.version);
      if ((!op.etag.empty() && op.etag != etag) || (!op.after->etag.empty() && op.after->etag != etag)) {
        return Invalid("ETag does not match version " + std::to_string(op.version), idx);
      }
    }
  }
  if (payload >= Limits::kMaxBatchBytes) return Invalid("record larger than 4 MiB");
  return Status::OK();
}

// A record that breaks a limit is bad input whatever the limit's own code
// (the restorer logs it and stops; it is not a client's request).
Status AsInvalid(Status s) {
  if (s.ok() || s.code() == Code::kInvalidInput) return s;
  return Status(Code::kInvalidInput, "replicated record: " + s.message(), s.op_index());
}

}  // namespace

Status Engine::ApplyReplicated(const ChangeRecord& record) {
  Impl* e = impl_.get();
  switch (record.kind) {
    case ChangeKind::kArchiveRequested:
    case ChangeKind::kShardClaimed:
      return Status::OK();  // no rows change
    case ChangeKind::kTableCreated:
      ST_RETURN_IF_ERROR(AsInvalid(ValidateTableName(record.table)));
      return e->CreateTableReplicated(record.table, record.commit_time);
    case ChangeKind::kTableDeleted:
      ST_RETURN_IF_ERROR(AsInvalid(ValidateTableName(record.table)));
      return e->DeleteTableReplicated(record.table);
    case ChangeKind::kEntities:
      break;
    default:
      return Invalid("unknown record kind " + std::to_string(static_cast<int>(record.kind)));
  }
  ST_RETURN_IF_ERROR(AsInvalid(ValidateTableName(record.table)));
  ST_RETURN_IF_ERROR(AsInvalid(ValidateEntitiesRecord(record)));
  // A shard restored before its table's record was seen (or a table whose
  // creation this sidecar never read) still gets its rows.
  auto table = e->FindTable(record.table);
  if (!table) {
    ST_RETURN_IF_ERROR(e->CreateTableReplicated(record.table, record.commit_time));
    table = e->FindTable(record.table);
    if (!table) return Status(Code::kTableNotFound, "table '" + record.table + "' not found");
  }
  std::shared_lock table_lock(table->mu);
  if (table->deleted) return Status(Code::kTableNotFound, "table '" + record.table + "' was deleted meanwhile");
  const uint32_t id = table->info.id;
  std::lock_guard partition_lock(e->partition_locks_.For(id, record.partition_key));

  rocksdb::WriteBatch wb;
  std::string row;
  for (size_t i = 0; i < record.ops.size(); i++) {
    const ChangeOp& op = record.ops[i];
    const std::string key = codec::EntityKey(id, record.partition_key, op.row_key);
    std::string stored;
    rocksdb::Status s = e->db_->Get(rocksdb::ReadOptions(), e->entities_cf_, key, &stored);
    if (!s.ok() && !s.IsNotFound()) return Status(Code::kInternal, "read: " + s.ToString(), static_cast<int>(i));
    if (s.ok()) {
      uint64_t version;
      int64_t ts;
      ST_RETURN_IF_ERROR(codec::DecodeRowHeader(stored, &version, &ts).WithOpIndex(static_cast<int>(i)));
      if (version >= op.version) continue;  // already applied, or overtaken
      // Displaced without a record of ours: keep it if one of ours needs it.
      e->KeepDisplaced(key, stored, /*displaced_by=*/0, &wb);
    }
    e->row_cache_->Erase(key);  // under the partition lock, before the write (row_cache.h)
    if (op.after) {
      row.clear();
      // The image's Timestamp is the old owner's commit time; an image
      // without one (a hand-built record) takes the record's.
      const int64_t ts = op.after->timestamp != 0 ? op.after->timestamp : record.commit_time;
      codec::EncodeRow(*op.after, op.version, ts, &row);
      wb.Put(e->entities_cf_, key, row);
    } else if (s.ok()) {
      wb.Delete(e->entities_cf_, key);
    }
  }
  if (!record.client_request_id.empty()) {
    // Always the restored outcome, even over one this engine remembers: the
    // topic is the shard's truth. A sidecar that owned the shard before may
    // remember its own commit of the request that never reached Kafka (it
    // was killed first; the client retried elsewhere and that commit is the
    // one restored here). Answering a retry from the stale one would hand
    // the client an ETag no row has (seen in ScaleOutTest, seed 436159).
    {
      RememberedOutcome outcome;
      outcome.any_fingerprint = true;
      outcome.lsn = 0;
      outcome.version = record.ops[0].version;
      outcome.time = record.commit_time;
      for (const ChangeOp& op : record.ops) {
        outcome.marks.push_back(op.after ? RememberedOutcome::kWritten : RememberedOutcome::kDeleted);
      }
      const int64_t now = e->options_.clock();
      e->requests_->Record(record.caller, record.client_request_id, outcome, now, &wb);
    }
  }
  if (wb.Count() == 0) return Status::OK();
  return e->WriteUnlogged(&wb);
}

Result<uint64_t> Engine::DropPartitions(
    const std::function<bool(std::string_view table, std::string_view pk)>& drop) {
  Impl* e = impl_.get();
  constexpr size_t kRowsPerWrite = 1000;
  uint64_t dropped = 0;
  for (const TableInfo& info : e->ListTables("")) {
    auto table = e->FindTable(info.name);
    if (!table) continue;  // deleted meanwhile: nothing left to drop
    std::shared_lock table_lock(table->mu);
    if (table->deleted) continue;
    const uint32_t id = table->info.id;
    const std::string lower = codec::TablePrefix(id), upper = codec::TablePrefix(id + 1);
    rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions ro;
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(e->db_->NewIterator(ro, e->entities_cf_));
    uint32_t key_table;
    std::string pk, rk;
    for (it->Seek(lower); it->Valid();) {
      if (!codec::DecodeEntityKey(it->key().ToStringView(), &key_table, &pk, &rk)) {
        return Status(Code::kInternal, "corrupt entity key in table '" + info.name + "'");
      }
      const std::string first = codec::PartitionPrefix(id, pk);
      std::string next = first;
      next.back() = '\x01';  // past every RowKey of pk
      if (drop(table->info.name, pk)) {
        // Bounded writes, each under the partition's lock, so writes of
        // this partition racing the drop are dropped too or come after.
        rocksdb::Slice next_slice(next);
        for (;;) {
          std::lock_guard partition_lock(e->partition_locks_.For(id, pk));
          rocksdb::ReadOptions pro;
          pro.iterate_upper_bound = &next_slice;
          std::unique_ptr<rocksdb::Iterator> pit(e->db_->NewIterator(pro, e->entities_cf_));
          rocksdb::WriteBatch wb;
          size_t rows = 0;
          for (pit->Seek(first); pit->Valid() && rows < kRowsPerWrite; pit->Next(), rows++) {
            // A row written here may be the after image of a record not yet
            // published: kept until the log is trimmed past it.
            e->KeepDisplaced(pit->key().ToStringView(), pit->value().ToStringView(), 0, &wb);
            wb.Delete(e->entities_cf_, pit->key());
            e->row_cache_->Erase(pit->key().ToStringView());
          }
          if (!pit->status().ok()) return Status(Code::kInternal, "scan: " + pit->status().ToString());
          const uint32_t n = static_cast<uint32_t>(rows);
          if (n == 0) break;
          ST_RETURN_IF_ERROR(e->WriteUnlogged(&wb));
          dropped += n;
          if (n < kRowsPerWrite) break;
        }
      }
      // The outer iterator reads the table as it was when the scan began:
      // a partition first written after that is not seen. The caller drops
      // shards it no longer owns, which nobody writes here any more.
      it->Seek(next);
    }
    if (!it->status().ok()) return Status(Code::kInternal, "scan: " + it->status().ToString());
  }
  return dropped;
}

}  // namespace sidetable
