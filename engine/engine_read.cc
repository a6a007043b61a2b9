// Point reads and ordered scans.
#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"

#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>

namespace sidetable {
namespace {

class SnapshotView : public ReadView {
 public:
  SnapshotView(rocksdb::DB* db) : db_(db), snap_(db->GetSnapshot()) {}
  ~SnapshotView() override { db_->ReleaseSnapshot(snap_); }
  const rocksdb::Snapshot* snapshot() const { return snap_; }

 private:
  rocksdb::DB* db_;
  const rocksdb::Snapshot* snap_;
};

// Counts what RocksDB's iterator passes over during one step, through the
// thread's perf context (the only place RocksDB reports it). The level is
// raised for the step alone, so the thread's other work pays nothing.
class SkipCounter {
 public:
  SkipCounter() : level_(rocksdb::GetPerfLevel()) {
    if (level_ < rocksdb::PerfLevel::kEnableCount)
      rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
    before_ = Now();
  }
  ~SkipCounter() {
    if (level_ < rocksdb::PerfLevel::kEnableCount) rocksdb::SetPerfLevel(level_);
  }
  uint64_t Passed() const { return Now() - before_; }

 private:
  static uint64_t Now() {
    const rocksdb::PerfContext* p = rocksdb::get_perf_context();
    return p->internal_key_skipped_count + p->internal_delete_skipped_count;
  }
  rocksdb::PerfLevel level_;
  uint64_t before_ = 0;
};

class Cursor : public RowCursor {
 public:
  Cursor(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, const rocksdb::Snapshot* snap,
         uint32_t table_id, std::string lower, std::string upper, ScanLimits limits)
      : table_id_(table_id),
        lower_(std::move(lower)),
        upper_(std::move(upper)),
        lower_slice_(lower_),
        upper_slice_(upper_),
        limits_(limits) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap;
    ro.iterate_lower_bound = &lower_slice_;
    ro.iterate_upper_bound = &upper_slice_;
    // RocksDB stops a single step that passes over more than this (Status
    // Incomplete) and says where; the total over steps is counted here.
    ro.max_skippable_internal_keys = limits_.max_skipped;
    it_.reset(db->NewIterator(ro, cf));
    Step(0, [&] { it_->Seek(lower_slice_); });
  }

  bool Valid() const override { return valid_; }
  void Next() override {
    // RocksDB counts the step off the current entity as one key passed over.
    Step(1, [&] { it_->Next(); });
  }
  void Seek(std::string_view pk, std::string_view rk) override {
    std::string key = codec::EntityKey(table_id_, pk, rk);
    if (key < lower_) key = lower_;
    // A seek starts a new walk: what was passed over before it is not counted.
    stopped_at_.reset();
    skipped_ = 0;
    Step(0, [&] { it_->Seek(key); });
  }
  const std::string& partition_key() const override { return pk_; }
  const std::string& row_key() const override { return rk_; }
  Status Read(Entity* out, const std::vector<std::string>* select) const override {
    out->partition_key = pk_;
    out->row_key = rk_;
    return codec::DecodeRow(it_->value().ToStringView(), out, select);
  }
  Result<RowView> Row() const override { return RowView::Parse(pk_, rk_, it_->value().ToStringView()); }
  Status status() const override {
    if (!decode_error_.ok()) return decode_error_;
    if (stopped_at_) return Status::OK();
    if (!it_->status().ok()) return Status(Code::kInternal, "scan: " + it_->status().ToString());
    return Status::OK();
  }
  uint64_t skipped() const override { return skipped_; }
  const std::optional<std::pair<std::string, std::string>>& stopped_at() const override {
    return stopped_at_;
  }

 private:
  // Moves the iterator; `own` is what RocksDB counts for the move itself.
  template <typename Move>
  void Step(uint64_t own, Move move) {
    if (limits_.max_skipped == 0) {
      move();
      Load();
      return;
    }
    {
      SkipCounter count;
      move();
      const uint64_t passed = count.Passed();
      skipped_ += passed > own ? passed - own : 0;
    }
    if (!it_->Valid() && it_->status().IsIncomplete()) {
      // One step passed over max_skipped entries: resume at the last one
      // RocksDB looked at (a deleted key; the next page seeks to it).
      std::string at;
      if (!it_->GetProperty("rocksdb.iterator.internal-key", &at).ok() || !StopAt(at)) {
        decode_error_ = Status(Code::kInternal, "scan: " + it_->status().ToString());
      }
      valid_ = false;
      return;
    }
    Load();
    // Over the bound across steps: stop before the entity reached, which
    // the next page starts with.
    if (valid_ && skipped_ > limits_.max_skipped) {
      stopped_at_ = std::make_pair(pk_, rk_);
      valid_ = false;
    }
  }

  bool StopAt(const std::string& key) {
    uint32_t id;
    std::string pk, rk;
    if (!codec::DecodeEntityKey(key, &id, &pk, &rk) || id != table_id_) return false;
    stopped_at_ = std::make_pair(std::move(pk), std::move(rk));
    return true;
  }

  void Load() {
    valid_ = it_->Valid();
    if (!valid_) return;
    uint32_t id;
    if (!codec::DecodeEntityKey(it_->key().ToStringView(), &id, &pk_, &rk_) || id != table_id_) {
      decode_error_ = Status(Code::kInternal, "corrupt entity key");
      valid_ = false;
    }
  }

  uint32_t table_id_;
  std::string lower_, upper_;
  rocksdb::Slice lower_slice_, upper_slice_;
  ScanLimits limits_;
  std::unique_ptr<rocksdb::Iterator> it_;
  bool valid_ = false;
  std::string pk_, rk_;
  Status decode_error_;
  uint64_t skipped_ = 0;
  std::optional<std::pair<std::string, std::string>> stopped_at_;
};

}  // namespace

Status Engine::Impl::ReadStoredRow(std::string_view table, std::string_view pk, std::string_view rk,
                                   rocksdb::PinnableSlice* value) const {
  auto t = FindTable(table);
  if (!t) return Status(Code::kTableNotFound, "table '" + std::string(table) + "' not found");
  const std::string key = codec::EntityKey(t->info.id, pk, rk);
  if (row_cache_->Lookup(key, value->GetSelf())) {  // always a miss when it is off
    value->PinSelf();
    return Status::OK();
  }
  // The row may be cached only if no writer of its partition can be under
  // way: read it while holding the table's and the partition's locks, if
  // both are free (row_cache.h). A reader never waits for a writer.
  std::shared_lock<std::shared_mutex> table_lock;
  std::unique_lock<std::mutex> partition_lock;
  if (row_cache_->enabled()) {
    table_lock = std::shared_lock(t->mu, std::try_to_lock);
    if (table_lock.owns_lock() && !t->deleted) {
      partition_lock = std::unique_lock(partition_locks_.For(t->info.id, pk), std::try_to_lock);
    }
  }
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), entities_cf_, key, value);
  if (s.IsNotFound()) {
    return Status(Code::kResourceNotFound,
                  "entity (" + std::string(pk) + ", " + std::string(rk) + ") does not exist");
  }
  if (!s.ok()) return Status(Code::kInternal, "read: " + s.ToString());
  if (partition_lock.owns_lock()) row_cache_->Insert(key, value->ToStringView());
  return Status::OK();
}

Result<Entity> Engine::Impl::Get(std::string_view table, std::string_view pk,
                                 std::string_view rk,
                                 const std::vector<std::string>* select) const {
  rocksdb::PinnableSlice value;
  ST_RETURN_IF_ERROR(ReadStoredRow(table, pk, rk, &value));
  Entity e;
  e.partition_key = std::string(pk);
  e.row_key = std::string(rk);
  ST_RETURN_IF_ERROR(codec::DecodeRow(value.ToStringView(), &e, select));
  return e;
}

Status Engine::Impl::GetRow(std::string_view table, std::string_view pk, std::string_view rk,
                            const std::function<Status(const RowView&)>& fn) const {
  rocksdb::PinnableSlice value;
  ST_RETURN_IF_ERROR(ReadStoredRow(table, pk, rk, &value));
  auto row = RowView::Parse(pk, rk, value.ToStringView());
  if (!row.ok()) return row.status();
  return fn(*row);
}

// Defined here rather than with the other forwarders: the read side's API.
Status Engine::GetRow(std::string_view table, std::string_view pk, std::string_view rk,
                      const std::function<Status(const RowView&)>& fn) const {
  return impl_->GetRow(table, pk, rk, fn);
}

std::unique_ptr<ReadView> Engine::Impl::NewReadView() const {
  return std::make_unique<SnapshotView>(db_.get());
}

Result<std::unique_ptr<RowCursor>> Engine::Impl::Scan(std::string_view table,
                                                      const ScanBounds& bounds,
                                                      const ReadView* view,
                                                      ScanLimits limits) const {
  auto t = FindTable(table);
  if (!t) return Status(Code::kTableNotFound, "table '" + std::string(table) + "' not found");
  const uint32_t id = t->info.id;
  std::string lower = bounds.start ? codec::EntityKey(id, bounds.start->first, bounds.start->second)
                                   : codec::TablePrefix(id);
  std::string upper = bounds.end ? codec::EntityKey(id, bounds.end->first, bounds.end->second)
                                 : codec::TablePrefix(id + 1);
  const rocksdb::Snapshot* snap =
      view ? static_cast<const SnapshotView*>(view)->snapshot() : nullptr;
  return std::unique_ptr<RowCursor>(
      new Cursor(db_.get(), entities_cf_, snap, id, std::move(lower), std::move(upper), limits));
}

}  // namespace sidetable
