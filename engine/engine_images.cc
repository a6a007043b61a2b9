// Row images written once: resolving a record's after images, and keeping
// what a displaced row's record still needs (internal/images.h says why).
#include <rocksdb/write_batch.h>

#include <memory>

#include "engine/internal/codec.h"
#include "engine/internal/engine_impl.h"
#include "engine/internal/images.h"

namespace sidetable {
namespace {

Status Lost(const codec::StoredChange& rec, std::string_view rk, const std::string& why) {
  return Status(Code::kInternal, "change record " + std::to_string(rec.lsn) +
                                     ": the after image of ('" + std::string(rec.partition_key) +
                                     "', '" + std::string(rk) + "') " + why);
}

}  // namespace

Status Engine::Impl::ResolveImage(const codec::StoredChange& rec, const codec::StoredChangeOp& op,
                                  const rocksdb::ReadOptions& ro, std::string* out) const {
  const std::string key = codec::EntityKey(rec.table_id, rec.partition_key, op.row_key);
  const uint64_t version = codec::StampVersion(rec.epoch, rec.lsn);
  // Usually the row is still the one this record wrote.
  rocksdb::PinnableSlice row;
  rocksdb::Status s = db_->Get(ro, entities_cf_, key, &row);
  if (!s.ok() && !s.IsNotFound())
    return Lost(rec, op.row_key, "could not be read: " + s.ToString());
  if (s.ok()) {
    uint64_t row_version;
    int64_t ts;
    if (codec::DecodeRowHeader(row.ToStringView(), &row_version, &ts).ok() &&
        row_version == version) {
      codec::PutRowImage(out, row.ToStringView());
      return Status::OK();
    }
  }
  // Displaced: whatever displaced it left the image, or where it is.
  rocksdb::PinnableSlice kept;
  s = db_->Get(ro, images_cf_, internal::ImageKey(rec.lsn, key), &kept);
  if (s.IsNotFound()) return Lost(rec, op.row_key, "is neither in its row nor kept");
  if (!s.ok()) return Lost(rec, op.row_key, "could not be read: " + s.ToString());
  const std::string_view v = kept.ToStringView();
  if (!v.empty() && v[0] == internal::kImageRow) {
    codec::PutRowImage(out, v.substr(1));
    return Status::OK();
  }
  codec::Reader r(v.substr(v.empty() ? 0 : 1));
  uint64_t displaced_by = 0;
  if (v.empty() || v[0] != internal::kImagePointer || !r.Varint64(&displaced_by) ||
      displaced_by <= rec.lsn) {
    return Lost(rec, op.row_key, "has a corrupt images entry");
  }
  // The displacing record's before image, always inline.
  rocksdb::PinnableSlice later;
  s = db_->Get(ro, log_cf_, codec::LogKey(displaced_by), &later);
  if (!s.ok()) {
    return Lost(rec, op.row_key,
                "was displaced by record " + std::to_string(displaced_by) +
                    ", which could not be read: " + s.ToString());
  }
  codec::StoredChange displacing;
  // Any format: one written with images inline (the option off) still has
  // the before image.
  Status parsed = codec::SplitStoredChange(later.ToStringView(), &displacing);
  if (!parsed.ok())
    return Lost(rec, op.row_key,
                "points at record " + std::to_string(displaced_by) + ": " + parsed.message());
  for (const codec::StoredChangeOp& d : displacing.ops) {
    if (d.row_key == op.row_key && !d.before.empty()) {
      codec::PutRowImage(out, d.before);
      return Status::OK();
    }
  }
  return Lost(rec, op.row_key, "is not the before image of record " + std::to_string(displaced_by));
}

Status Engine::Impl::ResolveImages(std::string_view stored, const rocksdb::ReadOptions& ro,
                                   std::string* out) const {
  codec::StoredChange rec;
  ST_RETURN_IF_ERROR(codec::SplitStoredChange(stored, &rec));
  if (!codec::HasImageRefs(stored))
    return Status(Code::kInternal, "ResolveImages: a record without references");
  out->reserve(out->size() + stored.size() + 64);
  out->push_back(static_cast<char>(
      rec.format == codec::kChangeFormatRefs ? codec::kChangeFormat : codec::kChangeFormatEpoch));
  out->append(rec.header_rest);
  for (const codec::StoredChangeOp& op : rec.ops) {
    codec::PutLengthPrefixed(out, op.row_key);
    out->push_back(static_cast<char>(op.kind));
    codec::PutLengthPrefixed(out, op.before);
    if (op.image_mode == codec::kImageInRow) {
      ST_RETURN_IF_ERROR(ResolveImage(rec, op, ro, out));
    } else {
      codec::PutLengthPrefixed(out, op.after);
    }
  }
  return Status::OK();
}

void Engine::Impl::KeepDisplaced(std::string_view key, std::string_view row, uint64_t displaced_by,
                                 rocksdb::WriteBatch* wb) const {
  const uint64_t lsn = internal::SoleImageLsn(row);
  // Below the log's start the record is gone: nothing needs the image. (A
  // trim racing this write leaves at most an entry the next trim removes:
  // each trim deletes the images range from 0.)
  if (lsn == 0 || lsn < first_available_lsn_.load()) return;
  std::string value;
  if (displaced_by != 0) {
    value.push_back(internal::kImagePointer);
    codec::PutVarint64(&value, displaced_by);
  } else {
    value.reserve(1 + row.size());
    value.push_back(internal::kImageRow);
    value.append(row);
  }
  wb->Put(images_cf_, internal::ImageKey(lsn, key), value);
}

void Engine::Impl::DeferDrop(uint32_t table_id, uint64_t lsn, rocksdb::WriteBatch* wb) const {
  std::string id;
  codec::PutVarint64(&id, table_id);
  wb->Put(meta_cf_, internal::PendingDropKey(lsn), id);
}

Status Engine::Impl::DropTrimmedTables(uint64_t below_lsn, rocksdb::WriteBatch* wb) const {
  const std::string lower = internal::PendingDropKey(0),
                    upper = internal::PendingDropKey(below_lsn);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, meta_cf_));
  for (it->Seek(lower); it->Valid(); it->Next()) {
    codec::Reader r(it->value().ToStringView());
    uint64_t id;
    if (!r.Varint64(&id) || id > UINT32_MAX) {
      return Status(Code::kInternal, "corrupt pending drop " + it->key().ToString(true));
    }
    const uint32_t table_id = static_cast<uint32_t>(id);
    wb->DeleteRange(entities_cf_, codec::TablePrefix(table_id), codec::TablePrefix(table_id + 1));
    wb->Delete(meta_cf_, it->key());
  }
  if (!it->status().ok())
    return Status(Code::kInternal, "reading pending drops: " + it->status().ToString());
  return Status::OK();
}

}  // namespace sidetable
