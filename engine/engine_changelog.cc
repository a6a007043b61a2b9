// Reading and trimming the change log (the transactional outbox).
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"

namespace sidetable {

Status internal::ReadLogPosition(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                                 rocksdb::ColumnFamilyHandle* log, LogPosition* out) {
  uint64_t trimmed_below = 1;
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kMetaLogTrimmedBelow, &v);
  if (s.ok()) {
    codec::Reader r(v);
    if (!r.Varint64(&trimmed_below)) return Status(Code::kInternal, "corrupt trim watermark");
  } else if (!s.IsNotFound()) {
    return Status(Code::kInternal, "reading trim watermark: " + s.ToString());
  }
  out->first_lsn = trimmed_below;
  out->last_lsn = trimmed_below - 1;
  out->last_time = 0;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), log));
  it->SeekToLast();
  if (it->Valid()) {
    ChangeRecord rec;
    ST_RETURN_IF_ERROR(codec::DecodeChangeHeader(it->value().ToStringView(), &rec));
    out->last_lsn = std::max(out->last_lsn, rec.lsn);
    out->last_time = rec.commit_time;
  }
  if (!it->status().ok()) return Status(Code::kInternal, "reading change log: " + it->status().ToString());
  return Status::OK();
}

Status Engine::Impl::RecoverLogPosition(uint64_t* last_lsn, int64_t* last_time) {
  internal::LogPosition log;
  ST_RETURN_IF_ERROR(internal::ReadLogPosition(db_.get(), meta_cf_, log_cf_, &log));
  first_available_lsn_ = log.first_lsn;
  *last_lsn = log.last_lsn;
  *last_time = log.last_time;
  return Status::OK();
}

template <typename Each>
Status Engine::Impl::VisitChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes,
                                  uint64_t* first, uint64_t* last, Each&& each) const {
  *first = first_available_lsn_.load();
  *last = commits_->last_committed_lsn();
  if (max_records == 0) return Status::OK();
  // Never read past the committed LSN: a record is only visible once its whole
  // group is durable.
  std::string upper_key = codec::LogKey(*last + 1);
  rocksdb::Slice upper(upper_key);
  // One snapshot for the log and the rows its records refer to
  // (internal/images.h): a row displaced while this page is read is still
  // the record's image in it.
  const rocksdb::Snapshot* snapshot = db_->GetSnapshot();
  struct Release {
    rocksdb::DB* db;
    const rocksdb::Snapshot* s;
    ~Release() { db->ReleaseSnapshot(s); }
  } release{db_.get(), snapshot};
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.iterate_upper_bound = &upper;
  rocksdb::ReadOptions point;
  point.snapshot = snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, log_cf_));
  size_t bytes = 0, records = 0;
  // Records are resolved a chunk at a time: one MultiGet for the rows of
  // all their images. A chunk stops where the stored bytes alone would
  // reach the page's bound (resolved records are no smaller). A record
  // that refers to its rows is a few dozen bytes stored and up to 1 MiB
  // resolved, so the stored size says little: the first chunk is small, and
  // each next one holds what the bytes left fit at the size records
  // resolved to so far. (A fixed 256 resolved 256 rows of ~900 KB to return
  // 3 of them: 0.2 s a page, minutes for a replay of large entities.)
  constexpr size_t kFirstChunk = 8, kMaxChunk = 256;
  size_t chunk_limit = kFirstChunk;
  std::vector<std::string> chunk;
  std::vector<std::string_view> views;
  std::vector<uint64_t> lsns;
  std::vector<std::string> resolved;
  it->Seek(codec::LogKey(std::max(from_lsn, *first)));
  bool full = false;
  while (!full && it->Valid() && records < max_records) {
    chunk.clear();
    lsns.clear();
    size_t chunk_bytes = 0;
    for (; it->Valid() && chunk.size() < chunk_limit && records + chunk.size() < max_records;
         it->Next()) {
      if (!chunk.empty() && bytes + chunk_bytes >= max_bytes) break;
      chunk.emplace_back(it->value().data(), it->value().size());
      lsns.push_back(it->key().size() == 8 ? codec::DecodeFixed64BE(it->key().data()) : 0);
      chunk_bytes += it->value().size();
    }
    if (!it->status().ok()) break;
    views.assign(chunk.begin(), chunk.end());
    ST_RETURN_IF_ERROR(ResolveImages(views, lsns, point, &resolved));
    for (size_t i = 0; i < chunk.size(); i++) {
      if (records >= max_records || (records > 0 && bytes >= max_bytes)) {
        full = true;
        break;
      }
      const std::string_view value =
          codec::HasImageRefs(chunk[i]) ? std::string_view(resolved[i]) : views[i];
      ST_RETURN_IF_ERROR(each(value));
      bytes += value.size();
      records++;
    }
    if (records > 0 && bytes < max_bytes) {
      const size_t average = std::max<size_t>(1, bytes / records);
      chunk_limit = std::clamp<size_t>((max_bytes - bytes) / average + 1, 1, kMaxChunk);
    }
  }
  if (!it->status().ok()) return Status(Code::kInternal, "reading change log: " + it->status().ToString());
  return Status::OK();
}

Result<ChangeBatch> Engine::Impl::ReadChanges(uint64_t from_lsn, size_t max_records,
                                              size_t max_bytes) const {
  ChangeBatch out;
  ST_RETURN_IF_ERROR(VisitChanges(from_lsn, max_records, max_bytes, &out.first_available_lsn, &out.last_lsn,
                                  [&](std::string_view value) {
                                    ChangeRecord& rec = out.records.emplace_back();
                                    return codec::DecodeChange(value, &rec);
                                  }));
  return out;
}

Result<ChangeBatch> Engine::Impl::ReadChangeHeaders(uint64_t from_lsn, size_t max_records) const {
  ChangeBatch out;
  out.first_available_lsn = first_available_lsn_.load();
  out.last_lsn = commits_->last_committed_lsn();
  // As VisitChanges: never past the committed LSN.
  std::string upper_key = codec::LogKey(out.last_lsn + 1);
  rocksdb::Slice upper(upper_key);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, log_cf_));
  for (it->Seek(codec::LogKey(std::max(from_lsn, out.first_available_lsn)));
       it->Valid() && out.records.size() < max_records; it->Next()) {
    ST_RETURN_IF_ERROR(
        codec::DecodeChangeHeader(it->value().ToStringView(), &out.records.emplace_back()));
  }
  if (!it->status().ok())
    return Status(Code::kInternal, "reading change log: " + it->status().ToString());
  return out;
}

Result<RawChangePage> Engine::Impl::ReadRawChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes,
                                                   std::string* out) const {
  RawChangePage page;
  // Nothing is decoded: the sidecar ships the records as they are stored
  // (resolved to format 2 or 3 when they refer to their rows), and the
  // client decodes each once (the format byte travels with it).
  ST_RETURN_IF_ERROR(VisitChanges(from_lsn, max_records, max_bytes, &page.first_available_lsn, &page.last_lsn,
                                  [&](std::string_view value) {
                                    codec::PutLengthPrefixed(out, value);
                                    page.records++;
                                    return Status::OK();
                                  }));
  return page;
}

Result<RawChangePage> Engine::ReadRawChanges(uint64_t from_lsn, size_t max_records, size_t max_bytes,
                                             std::string* out) const {
  return impl_->ReadRawChanges(from_lsn, max_records, max_bytes, out);
}

Result<uint64_t> Engine::Impl::TrimChanges(uint64_t below_lsn) {
  std::lock_guard lock(trim_mu_);
  below_lsn = std::min(below_lsn, commits_->last_committed_lsn() + 1);
  const uint64_t first = first_available_lsn_.load();
  if (below_lsn <= first) return first;
  rocksdb::WriteBatch wb;
  wb.DeleteRange(log_cf_, codec::LogKey(0), codec::LogKey(below_lsn));
  // What displaced rows left for the records trimmed now, and the rows of
  // tables deleted before them (internal/images.h).
  wb.DeleteRange(images_cf_, codec::LogKey(0), codec::LogKey(below_lsn));
  std::vector<uint32_t> dropped;
  ST_RETURN_IF_ERROR(DropTrimmedTables(below_lsn, &wb, &dropped));
  std::string v;
  codec::PutVarint64(&v, below_lsn);
  wb.Put(meta_cf_, kMetaLogTrimmedBelow, v);
  // Through the storage gate, as PutSetting is (engine_open.cc says why).
  if (storage_) ST_RETURN_IF_ERROR(storage_->AdmitWrite(/*client_write=*/false));
  rocksdb::WriteOptions wo;
  wo.sync = options_.durability == Durability::kFsync;
  rocksdb::Status s = db_->Write(wo, &wb);
  if (!s.ok()) {
    if (storage_) return storage_->WriteFailed(s, 0);
    return Status(Code::kInternal, "trim: " + s.ToString());
  }
  first_available_lsn_ = below_lsn;
  // The range deletions free no disk by themselves (space_reclaimer.h).
  for (uint32_t id : dropped) {
    reclaimer_->Reclaim(entities_cf_, codec::TablePrefix(id), codec::TablePrefix(id + 1));
  }
  return below_lsn;
}

uint64_t Engine::Impl::ApproximateChangeBytes(uint64_t from_lsn, uint64_t to_lsn) const {
  if (to_lsn < from_lsn) return 0;
  std::string a = codec::LogKey(from_lsn), b = codec::LogKey(to_lsn + 1);
  rocksdb::Range r(a, b);
  uint64_t size = 0;
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  db_->GetApproximateSizes(o, log_cf_, &r, 1, &size).PermitUncheckedError();
  return size;
}

Result<uint64_t> Engine::Impl::ApplyRetention(uint64_t keep_from_lsn) {
  const uint64_t first = first_available_lsn_.load();
  const uint64_t last = commits_->last_committed_lsn();
  uint64_t cut = first;

  if (options_.changelog_max_age_seconds > 0) {
    const int64_t cutoff = options_.clock() - options_.changelog_max_age_seconds * kTicksPerSecond;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), log_cf_));
    for (it->Seek(codec::LogKey(first)); it->Valid(); it->Next()) {
      ChangeRecord rec;
      ST_RETURN_IF_ERROR(codec::DecodeChangeHeader(it->value().ToStringView(), &rec));
      if (rec.commit_time >= cutoff) break;
      cut = rec.lsn + 1;
    }
  }

  if (options_.changelog_max_bytes > 0 && last >= first) {
    // Smallest cut such that [cut, last] fits the byte bound, by binary search
    // over RocksDB's size estimates (memtables included).
    auto size_from = [&](uint64_t lsn) { return ApproximateChangeBytes(lsn, last); };
    if (size_from(first) > options_.changelog_max_bytes) {
      uint64_t lo = first, hi = last + 1;
      while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (size_from(mid) > options_.changelog_max_bytes) lo = mid + 1;
        else hi = mid;
      }
      cut = std::max(cut, lo);
    }
  }
  cut = std::min(cut, keep_from_lsn);
  return TrimChanges(cut);
}

}  // namespace sidetable
