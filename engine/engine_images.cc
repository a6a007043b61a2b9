// Row images written once: resolving a record's after images, and keeping
// what a displaced row's record still needs (internal/images.h says why).
#include <rocksdb/write_batch.h>

#include <map>
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

// One operation whose after image is in its row.
struct PendingImage {
  size_t record;  // index into the batch
  size_t op;      // index into its StoredChange::ops
  std::string key;
  std::string image;  // found: the row (any format)
};

}  // namespace

Status Engine::Impl::ResolveImages(const std::vector<std::string_view>& stored,
                                   const std::vector<uint64_t>& lsns,
                                   const rocksdb::ReadOptions& ro,
                                   std::vector<std::string>* out) const {
  out->assign(stored.size(), std::string());
  std::vector<codec::StoredChange> recs(stored.size());
  std::vector<bool> kept(stored.size(), false);
  std::vector<PendingImage> pending;
  for (size_t i = 0; i < stored.size(); i++) {
    if (!codec::HasImageRefs(stored[i])) continue;
    // The log's tail, resolved when it was written.
    if (recent_->Find(lsns[i], stored[i], &(*out)[i])) {
      kept[i] = true;
      continue;
    }
    ST_RETURN_IF_ERROR(codec::SplitStoredChange(stored[i], &recs[i]));
    for (size_t j = 0; j < recs[i].ops.size(); j++) {
      if (recs[i].ops[j].image_mode != codec::kImageInRow) continue;
      pending.push_back(
          {i,
           j,
           codec::EntityKey(recs[i].table_id, recs[i].partition_key, recs[i].ops[j].row_key),
           {}});
    }
  }
  // Usually the rows are still the ones the records wrote: one MultiGet for
  // the batch. Measured against a Get per image it made no difference
  // outside the noise (the cost is each row's memtable search;
  // docs/performance.md, session 28), but it is no slower and lets RocksDB
  // share index and filter work when the rows are in files.
  std::vector<size_t> displaced;
  {
    std::vector<rocksdb::Slice> keys;
    keys.reserve(pending.size());
    for (const PendingImage& p : pending) keys.emplace_back(p.key);
    std::vector<rocksdb::PinnableSlice> rows(pending.size());
    std::vector<rocksdb::Status> st(pending.size());
    if (!keys.empty())
      db_->MultiGet(ro, entities_cf_, keys.size(), keys.data(), rows.data(), st.data());
    for (size_t k = 0; k < pending.size(); k++) {
      const codec::StoredChange& rec = recs[pending[k].record];
      const std::string_view rk = rec.ops[pending[k].op].row_key;
      if (!st[k].ok() && !st[k].IsNotFound())
        return Lost(rec, rk, "could not be read: " + st[k].ToString());
      uint64_t version;
      int64_t ts;
      if (st[k].ok() && codec::DecodeRowHeader(rows[k].ToStringView(), &version, &ts).ok() &&
          version == codec::StampVersion(rec.epoch, rec.lsn)) {
        pending[k].image.assign(rows[k].data(), rows[k].size());
      } else {
        displaced.push_back(k);
      }
    }
  }
  // Displaced: whatever displaced each left the image, or where it is.
  if (!displaced.empty()) {
    std::vector<std::string> image_keys;
    image_keys.reserve(displaced.size());
    for (size_t k : displaced)
      image_keys.push_back(internal::ImageKey(recs[pending[k].record].lsn, pending[k].key));
    std::vector<rocksdb::Slice> keys(image_keys.begin(), image_keys.end());
    std::vector<rocksdb::PinnableSlice> kept(displaced.size());
    std::vector<rocksdb::Status> st(displaced.size());
    db_->MultiGet(ro, images_cf_, keys.size(), keys.data(), kept.data(), st.data());
    std::map<uint64_t, std::string> later;  // displacing records read once per batch
    for (size_t d = 0; d < displaced.size(); d++) {
      PendingImage& p = pending[displaced[d]];
      const codec::StoredChange& rec = recs[p.record];
      const std::string_view rk = rec.ops[p.op].row_key;
      if (st[d].IsNotFound()) return Lost(rec, rk, "is neither in its row nor kept");
      if (!st[d].ok()) return Lost(rec, rk, "could not be read: " + st[d].ToString());
      const std::string_view v = kept[d].ToStringView();
      if (!v.empty() && v[0] == internal::kImageRow) {
        p.image.assign(v.substr(1));
        continue;
      }
      codec::Reader r(v.substr(v.empty() ? 0 : 1));
      uint64_t by = 0;
      if (v.empty() || v[0] != internal::kImagePointer || !r.Varint64(&by) || by <= rec.lsn) {
        return Lost(rec, rk, "has a corrupt images entry");
      }
      auto it = later.find(by);
      if (it == later.end()) {
        std::string value;
        rocksdb::Status s = db_->Get(ro, log_cf_, codec::LogKey(by), &value);
        if (!s.ok()) {
          return Lost(rec, rk,
                      "was displaced by record " + std::to_string(by) +
                          ", which could not be read: " + s.ToString());
        }
        it = later.emplace(by, std::move(value)).first;
      }
      // Any format: one written with images inline (the option off) still
      // has the before image, always inline.
      codec::StoredChange displacing;
      Status parsed = codec::SplitStoredChange(it->second, &displacing);
      if (!parsed.ok())
        return Lost(rec, rk, "points at record " + std::to_string(by) + ": " + parsed.message());
      bool found = false;
      for (const codec::StoredChangeOp& o : displacing.ops) {
        if (o.row_key == rk && !o.before.empty()) {
          p.image.assign(o.before);
          found = true;
          break;
        }
      }
      if (!found) return Lost(rec, rk, "is not the before image of record " + std::to_string(by));
    }
  }
  // Each record as format 2 or 3, its images inline.
  size_t next = 0;
  for (size_t i = 0; i < stored.size(); i++) {
    if (!codec::HasImageRefs(stored[i]) || kept[i]) continue;
    const codec::StoredChange& rec = recs[i];
    std::string& o = (*out)[i];
    o.reserve(stored[i].size() + 64);
    o.push_back(static_cast<char>(
        rec.format == codec::kChangeFormatRefs ? codec::kChangeFormat : codec::kChangeFormatEpoch));
    o.append(rec.header_rest);
    for (const codec::StoredChangeOp& op : rec.ops) {
      // The stored images are already in image form (PutRowImage), which
      // encoding them again leaves as they are.
      const std::string_view after =
          op.image_mode == codec::kImageInRow ? std::string_view(pending[next++].image) : op.after;
      codec::EncodeChangeOp({op.row_key, static_cast<OpKind>(op.kind), op.before, after}, &o);
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

Status Engine::Impl::DropTrimmedTables(uint64_t below_lsn, rocksdb::WriteBatch* wb,
                                       std::vector<uint32_t>* dropped) const {
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
    dropped->push_back(table_id);
  }
  if (!it->status().ok())
    return Status(Code::kInternal, "reading pending drops: " + it->status().ToString());
  return Status::OK();
}

}  // namespace sidetable
