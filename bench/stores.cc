#include "bench/stores.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <atomic>

#include "bench/harness.h"
#include "engine/change_record.h"
#include "engine/engine.h"
#include "engine/internal/codec.h"
#include "engine/internal/rocksdb_options.h"

namespace sidetable::bench {
namespace {

std::string TableName(int table) { return "bench" + std::to_string(table); }

class EngineStore : public Store {
 public:
  EngineStore(std::unique_ptr<Engine> engine, const EntityFactory& f)
      : engine_(std::move(engine)), factory_(f) {
    for (int t = 0; t < 8; t++) names_.push_back(TableName(t));
  }
  const char* name() const override { return "engine"; }

  void CreateTable(int table) override { Check(engine_->CreateTable(names_.at(table))); }

  void Insert(int table, uint64_t partition, uint64_t row) override {
    Batch b(names_[table]);
    b.Insert(factory_.Make(EntityFactory::PartitionKey(partition), EntityFactory::RowKey(row),
                           row));
    Check(engine_->Execute(b).status());
  }

  void InsertBatch(int table, uint64_t partition, uint64_t first_row, size_t count) override {
    Batch b(names_[table]);
    const std::string pk = EntityFactory::PartitionKey(partition);
    for (uint64_t r = first_row; r < first_row + count; r++) {
      b.Insert(factory_.Make(pk, EntityFactory::RowKey(r), r));
    }
    Check(engine_->Execute(b).status());
  }

  bool Get(int table, uint64_t partition, uint64_t row) override {
    auto r = engine_->Get(names_[table], EntityFactory::PartitionKey(partition),
                          EntityFactory::RowKey(row));
    if (r.status() == Code::kResourceNotFound) return false;
    Check(r.status());
    return true;
  }

  void DeleteTable(int table) override { Check(engine_->DeleteTable(names_.at(table))); }

  std::string Note() const override {
    EngineStats s = engine_->Stats();
    if (s.group_commits == 0) return "";
    char buf[96];
    std::snprintf(buf, sizeof buf, "%llu batches in %llu group commits (%.2f per group)",
                  static_cast<unsigned long long>(s.commits),
                  static_cast<unsigned long long>(s.group_commits),
                  static_cast<double>(s.commits) / static_cast<double>(s.group_commits));
    return buf;
  }

 private:
  static void Check(const Status& s) {
    if (!s.ok()) Die("engine: " + s.ToString());
  }

  std::unique_ptr<Engine> engine_;
  const EntityFactory& factory_;
  std::vector<std::string> names_;
};

class RawStore : public Store {
 public:
  RawStore(std::unique_ptr<rocksdb::DB> db, bool sync, const EntityFactory& f)
      : db_(std::move(db)), factory_(f) {
    wo_.sync = sync;
  }
  ~RawStore() override { db_->Close().PermitUncheckedError(); }
  const char* name() const override { return "raw"; }

  // The engine writes a catalog entry; a raw key range needs nothing.
  void CreateTable(int) override {}

  void Insert(int table, uint64_t partition, uint64_t row) override {
    std::string key = Key(table, partition, row);
    std::string value;
    factory_.RawValue(row, &value);
    Check(db_->Put(wo_, key, value));
  }

  void InsertBatch(int table, uint64_t partition, uint64_t first_row, size_t count) override {
    rocksdb::WriteBatch wb;
    std::string value;
    for (uint64_t r = first_row; r < first_row + count; r++) {
      factory_.RawValue(r, &value);
      Check(wb.Put(Key(table, partition, r), value));
    }
    Check(db_->Write(wo_, &wb));
  }

  bool Get(int table, uint64_t partition, uint64_t row) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(),
                                 Key(table, partition, row), &value);
    if (s.IsNotFound()) return false;
    Check(s);
    return true;
  }

  // What the engine's DeleteTable writes for the rows: one range tombstone
  // over the table's key prefix.
  void DeleteTable(int table) override {
    rocksdb::WriteBatch wb;
    Check(wb.DeleteRange(codec::TablePrefix(table), codec::TablePrefix(table + 1)));
    Check(db_->Write(wo_, &wb));
  }

 private:
  static std::string Key(int table, uint64_t partition, uint64_t row) {
    return codec::EntityKey(static_cast<uint32_t>(table), EntityFactory::PartitionKey(partition),
                            EntityFactory::RowKey(row));
  }
  static void Check(const rocksdb::Status& s) {
    if (!s.ok()) Die("rocksdb: " + s.ToString());
  }

  std::unique_ptr<rocksdb::DB> db_;
  const EntityFactory& factory_;
  rocksdb::WriteOptions wo_;
};

// Raw RocksDB plus the outbox: the engine's column-family layout (catalog in
// "default", unused here; "entities"; "changelog") and, per write, the rows
// plus one change record in one WriteBatch. No validation, no existence read,
// no commit queue, no Entity: what is left is the cost of writing the log.
class RawOutboxStore : public Store {
 public:
  RawOutboxStore(std::unique_ptr<rocksdb::DB> db, std::vector<rocksdb::ColumnFamilyHandle*> cfs,
                 bool sync, const EntityFactory& f)
      : db_(std::move(db)), handles_(std::move(cfs)), factory_(f) {
    entities_ = handles_.at(1);
    log_ = handles_.at(2);
    wo_.sync = sync;
  }
  ~RawOutboxStore() override {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db_->Close().PermitUncheckedError();
  }
  const char* name() const override { return "raw+outbox"; }

  void CreateTable(int) override {}

  void Insert(int table, uint64_t partition, uint64_t row) override {
    InsertBatch(table, partition, row, 1);
  }

  void InsertBatch(int table, uint64_t partition, uint64_t first_row, size_t count) override {
    rocksdb::WriteBatch wb;
    const std::string pk = EntityFactory::PartitionKey(partition);
    const uint64_t lsn = next_lsn_.fetch_add(1, std::memory_order_relaxed);
    std::string record, value;
    record.reserve(64 + count * (factory_.row_bytes() + 24));
    // The engine's header: LSN, kind, commit time, table name and id, PK,
    // caller, op count.
    codec::EncodeChangeHeader(lsn, ChangeKind::kEntities, /*commit_time=*/lsn,
                              TableName(table), static_cast<uint32_t>(table), pk, "", count,
                              &record);
    for (uint64_t r = first_row; r < first_row + count; r++) {
      factory_.RawValue(r, &value);
      const std::string rk = EntityFactory::RowKey(r);
      Check(wb.Put(entities_, codec::EntityKey(static_cast<uint32_t>(table), pk, rk), value));
      codec::EncodeChangeOp({rk, OpKind::kInsert, {}, value}, &record);
    }
    Check(wb.Put(log_, codec::LogKey(lsn), record));
    Check(db_->Write(wo_, &wb));
  }

  bool Get(int table, uint64_t partition, uint64_t row) override {
    rocksdb::PinnableSlice value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), entities_,
                                 codec::EntityKey(static_cast<uint32_t>(table),
                                                  EntityFactory::PartitionKey(partition),
                                                  EntityFactory::RowKey(row)),
                                 &value);
    if (s.IsNotFound()) return false;
    Check(s);
    return true;
  }

  // The engine's DeleteTable: a range tombstone plus a small table event.
  void DeleteTable(int table) override {
    rocksdb::WriteBatch wb;
    Check(wb.DeleteRange(entities_, codec::TablePrefix(table), codec::TablePrefix(table + 1)));
    const uint64_t lsn = next_lsn_.fetch_add(1);
    std::string record;
    codec::EncodeChangeHeader(lsn, ChangeKind::kTableDeleted, lsn, TableName(table),
                              static_cast<uint32_t>(table), "", "", 0, &record);
    Check(wb.Put(log_, codec::LogKey(lsn), record));
    Check(db_->Write(wo_, &wb));
  }

 private:
  static void Check(const rocksdb::Status& s) {
    if (!s.ok()) Die("rocksdb: " + s.ToString());
  }

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* entities_ = nullptr;
  rocksdb::ColumnFamilyHandle* log_ = nullptr;
  const EntityFactory& factory_;
  rocksdb::WriteOptions wo_;
  // LSNs come from a counter; they need not be in WAL order here (nothing
  // reads the log), so concurrent writers need no commit queue.
  std::atomic<uint64_t> next_lsn_{1};
};

}  // namespace

EngineOptions EngineOptionsOf(const StoreOptions& o) {
  EngineOptions eo;
  eo.durability = o.sync ? Durability::kFsync : Durability::kOs;
  eo.block_cache_bytes = o.block_cache_bytes;
  eo.write_buffer_bytes = o.write_buffer_bytes;
  return eo;
}

// The engine's own RocksDB options (engine/internal/rocksdb_options.h), so the
// comparison stays fair when the engine's tuning changes.
rocksdb::Options RawDbOptions(const StoreOptions& o) {
  internal::RocksDbOptionSet set = internal::MakeRocksDbOptions(EngineOptionsOf(o));
  rocksdb::Options opts(set.db, set.entities);
  opts.create_if_missing = true;
  return opts;
}

std::unique_ptr<Store> OpenEngineStore(const std::string& path, const StoreOptions& options,
                                       const EntityFactory& factory) {
  auto engine = Engine::Open(EngineOptionsOf(options), path);
  if (!engine.ok()) Die("engine open: " + engine.status().ToString());
  return std::make_unique<EngineStore>(std::move(engine).value(), factory);
}

std::unique_ptr<Store> OpenRawStore(const std::string& path, const StoreOptions& options,
                                    const EntityFactory& factory) {
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(RawDbOptions(options), path, &raw);
  if (!s.ok()) Die("rocksdb open: " + s.ToString());
  return std::make_unique<RawStore>(std::unique_ptr<rocksdb::DB>(raw), options.sync, factory);
}


std::unique_ptr<Store> OpenRawOutboxStore(const std::string& path, const StoreOptions& options,
                                          const EntityFactory& factory) {
  internal::RocksDbOptionSet set = internal::MakeRocksDbOptions(EngineOptionsOf(options));
  set.db.create_if_missing = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
      {rocksdb::kDefaultColumnFamilyName, set.meta},
      {"entities", set.entities},
      {"changelog", set.changelog},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(set.db, path, cfs, &handles, &raw);
  if (!s.ok()) Die("rocksdb open: " + s.ToString());
  return std::make_unique<RawOutboxStore>(std::unique_ptr<rocksdb::DB>(raw), std::move(handles),
                                          options.sync, factory);
}

}  // namespace sidetable::bench
