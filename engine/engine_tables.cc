// The table catalog: create, delete, find and list tables.
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"
#include "engine/limits.h"

namespace sidetable {
namespace {

std::string EncodeTableInfo(const TableInfo& t) {
  std::string v;
  codec::PutVarint64(&v, t.id);
  codec::PutFixed64(&v, static_cast<uint64_t>(t.created));
  codec::PutLengthPrefixed(&v, t.name);
  return v;
}

bool DecodeTableInfo(std::string_view v, TableInfo* t) {
  codec::Reader r(v);
  uint64_t id, created;
  std::string_view name;
  if (!r.Varint64(&id) || !r.Fixed64(&created) || !r.LengthPrefixed(&name)) return false;
  t->id = static_cast<uint32_t>(id);
  t->created = static_cast<int64_t>(created);
  t->name.assign(name);
  return true;
}

std::string MetaTableKey(std::string_view lower_name) {
  std::string k(kMetaTablePrefix);
  k.append(lower_name);
  return k;
}

// A table event in the change log (no rows).
void EncodeTableEvent(ChangeKind kind, const TableInfo& t, std::string_view caller,
                      const TableEventStamp& stamp, uint64_t lsn, int64_t time, std::string* dst) {
  codec::EncodeChangeHeader(lsn, kind, time, t.name, t.id, "", caller, 0, dst, {},
                            stamp.client_request_id, stamp.epoch);
}

class CreateTableWork : public CommitWork {
 public:
  CreateTableWork(Engine::Impl* e, TableInfo* info, std::string_view caller,
                  const TableEventStamp& stamp)
      : e_(e), info_(info), caller_(caller), stamp_(stamp) {}
  void Encode(uint64_t lsn, int64_t time, rocksdb::WriteBatch* wb) override {
    info_->created = time;
    std::string next_id;
    codec::PutVarint64(&next_id, uint64_t{info_->id} + 1);
    wb->Put(e_->meta_cf_, MetaTableKey(TableKey(info_->name).str()), EncodeTableInfo(*info_));
    wb->Put(e_->meta_cf_, kMetaNextTableId, next_id);
    std::string rec;
    EncodeTableEvent(ChangeKind::kTableCreated, *info_, caller_, stamp_, lsn, time, &rec);
    wb->Put(e_->log_cf_, codec::LogKey(lsn), rec);
    if (ChangeObserver* o = e_->options_.change_observer) o->Staged(lsn, info_->name, "");
  }
  size_t ApproximateBytes() const override { return 128 + info_->name.size(); }

 private:
  Engine::Impl* e_;
  TableInfo* info_;
  std::string_view caller_;
  const TableEventStamp& stamp_;
};

class DeleteTableWork : public CommitWork {
 public:
  DeleteTableWork(Engine::Impl* e, const TableInfo& info, std::string_view caller,
                  const TableEventStamp& stamp)
      : e_(e), info_(info), caller_(caller), stamp_(stamp) {}
  void Encode(uint64_t lsn, int64_t time, rocksdb::WriteBatch* wb) override {
    wb->Delete(e_->meta_cf_, MetaTableKey(TableKey(info_.name).str()));
    // Its rows may be the after images of records still in the log: they
    // go (one range tombstone, constant time whatever the table's size)
    // once the log is trimmed past this record (internal/images.h).
    e_->DeferDrop(info_.id, lsn, wb);
    std::string rec;
    EncodeTableEvent(ChangeKind::kTableDeleted, info_, caller_, stamp_, lsn, time, &rec);
    wb->Put(e_->log_cf_, codec::LogKey(lsn), rec);
    if (ChangeObserver* o = e_->options_.change_observer) o->Staged(lsn, info_.name, "");
  }
  size_t ApproximateBytes() const override { return 128 + info_.name.size(); }

 private:
  Engine::Impl* e_;
  const TableInfo& info_;
  std::string_view caller_;
  const TableEventStamp& stamp_;
};

}  // namespace

Status Engine::Impl::LoadCatalog() {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), meta_cf_, kMetaNextTableId, &v);
  if (s.ok()) {
    codec::Reader r(v);
    uint64_t id;
    if (!r.Varint64(&id)) return Status(Code::kInternal, "corrupt next table id");
    next_table_id_ = id;
  } else if (!s.IsNotFound()) {
    return Status(Code::kInternal, "reading catalog: " + s.ToString());
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf_));
  for (it->Seek(kMetaTablePrefix); it->Valid() && it->key().starts_with(kMetaTablePrefix);
       it->Next()) {
    auto t = std::make_shared<TableState>();
    if (!DecodeTableInfo(it->value().ToStringView(), &t->info)) {
      return Status(Code::kInternal, "corrupt catalog entry " + it->key().ToString());
    }
    tables_[TableKey(t->info.name).str()] = std::move(t);
  }
  if (!it->status().ok()) return Status(Code::kInternal, "reading catalog: " + it->status().ToString());
  return Status::OK();
}

std::shared_ptr<TableState> Engine::Impl::FindTable(std::string_view name) const {
  std::string lower = TableKey(name).str();
  std::shared_lock lock(catalog_mu_);
  auto it = tables_.find(lower);
  return it == tables_.end() ? nullptr : it->second;
}

std::vector<TableInfo> Engine::Impl::ListTables(std::string_view prefix) const {
  std::string lower = TableKey(prefix).str();
  std::vector<TableInfo> out;
  std::shared_lock lock(catalog_mu_);
  for (auto it = tables_.lower_bound(lower); it != tables_.end(); ++it) {
    if (it->first.compare(0, lower.size(), lower) != 0) break;
    out.push_back(it->second->info);
  }
  return out;
}

Status Engine::Impl::NextTableId(uint32_t* id) const {
  if (next_table_id_ > kMaxTableId) {
    return Status(Code::kInternal,
                  "no table id is left: all " + std::to_string(kMaxTableId) +
                      " were given out (ids are never reused); nothing was created");
  }
  *id = static_cast<uint32_t>(next_table_id_);
  return Status::OK();
}

Status Engine::Impl::CreateTable(std::string_view name, std::string_view caller,
                                 const TableEventStamp& stamp) {
  ST_RETURN_IF_ERROR(ValidateTableName(name));
  std::lock_guard ddl(ddl_mu_);
  if (FindTable(name)) {
    return Status(Code::kTableAlreadyExists, "table '" + std::string(name) + "' already exists");
  }
  auto t = std::make_shared<TableState>();
  t->info.name = std::string(name);
  ST_RETURN_IF_ERROR(NextTableId(&t->info.id));
  CreateTableWork work(this, &t->info, caller, stamp);
  uint64_t lsn;
  int64_t time;
  ST_RETURN_IF_ERROR(commits_->Commit(&work, &lsn, &time));
  next_table_id_++;
  std::unique_lock lock(catalog_mu_);
  tables_[TableKey(name).str()] = std::move(t);
  return Status::OK();
}

Status Engine::Impl::DeleteTable(std::string_view name, std::string_view caller,
                                 const TableEventStamp& stamp) {
  std::lock_guard ddl(ddl_mu_);
  auto t = FindTable(name);
  if (!t) return Status(Code::kTableNotFound, "table '" + std::string(name) + "' not found");
  // Wait for in-flight batches on the table, and keep new ones out.
  std::unique_lock table_lock(t->mu);
  // Before the range deletion is visible, and no reader can cache a row of
  // the table while the lock is held (row_cache.h).
  row_cache_->Clear();
  DeleteTableWork work(this, t->info, caller, stamp);
  uint64_t lsn;
  int64_t time;
  ST_RETURN_IF_ERROR(commits_->Commit(&work, &lsn, &time));
  t->deleted = true;
  std::unique_lock lock(catalog_mu_);
  tables_.erase(TableKey(name).str());
  return Status::OK();
}

// ---- tables as another owner's records create and delete them ----------
// (Engine::ApplyReplicated): the same catalog writes as CreateTable and
// DeleteTable, but no change record and no LSN, since this sidecar's
// publisher must not republish another owner's record.

Status Engine::Impl::WriteUnlogged(rocksdb::WriteBatch* wb) {
  if (storage_) ST_RETURN_IF_ERROR(storage_->AdmitWrite());
  rocksdb::WriteOptions wo;
  wo.sync = options_.durability == Durability::kFsync;
  rocksdb::Status s = db_->Write(wo, wb);
  if (!s.ok()) {
    if (storage_) return storage_->WriteFailed(s, 1);
    return Status(Code::kUnavailable, "write failed; nothing was applied: " + s.ToString());
  }
  return Status::OK();
}

Status Engine::Impl::CreateTableReplicated(std::string_view name, int64_t created) {
  ST_RETURN_IF_ERROR(ValidateTableName(name));
  std::lock_guard ddl(ddl_mu_);
  if (FindTable(name)) return Status::OK();  // idempotent
  auto t = std::make_shared<TableState>();
  t->info.name = std::string(name);
  ST_RETURN_IF_ERROR(NextTableId(&t->info.id));
  t->info.created = created;
  std::string next_id;
  codec::PutVarint64(&next_id, uint64_t{t->info.id} + 1);
  rocksdb::WriteBatch wb;
  wb.Put(meta_cf_, MetaTableKey(TableKey(name).str()), EncodeTableInfo(t->info));
  wb.Put(meta_cf_, kMetaNextTableId, next_id);
  ST_RETURN_IF_ERROR(WriteUnlogged(&wb));
  next_table_id_++;
  std::unique_lock lock(catalog_mu_);
  tables_[TableKey(name).str()] = std::move(t);
  return Status::OK();
}

Status Engine::Impl::DeleteTableReplicated(std::string_view name) {
  ST_RETURN_IF_ERROR(ValidateTableName(name));
  std::lock_guard ddl(ddl_mu_);
  auto t = FindTable(name);
  if (!t) return Status::OK();  // idempotent
  std::unique_lock table_lock(t->mu);
  // Holding the table's lock exclusively, no reader can cache a row of it
  // again (row_cache.h); table ids are never reused.
  row_cache_->Clear();
  rocksdb::WriteBatch wb;
  wb.Delete(meta_cf_, MetaTableKey(TableKey(t->info.name).str()));
  // As DeleteTable, after every record committed so far.
  DeferDrop(t->info.id, commits_->last_committed_lsn(), &wb);
  ST_RETURN_IF_ERROR(WriteUnlogged(&wb));
  t->deleted = true;
  std::unique_lock lock(catalog_mu_);
  tables_.erase(TableKey(name).str());
  return Status::OK();
}

}  // namespace sidetable
