#include "engine/change_record.h"

#include "engine/internal/codec.h"

namespace sidetable {

std::string_view ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kEntities: return "Entities";
    case ChangeKind::kTableCreated: return "TableCreated";
    case ChangeKind::kTableDeleted: return "TableDeleted";
    case ChangeKind::kArchiveRequested: return "ArchiveRequested";
    case ChangeKind::kShardClaimed: return "ShardClaimed";
  }
  return "";
}

bool ParseChangeKind(std::string_view name, ChangeKind* kind) {
  for (int k = 1; k <= 5; k++) {
    if (ChangeKindName(static_cast<ChangeKind>(k)) == name) {
      *kind = static_cast<ChangeKind>(k);
      return true;
    }
  }
  return false;
}

namespace codec {
namespace {

Status CorruptRecord(const char* what) {
  return Status(Code::kInternal, std::string("corrupt change record: ") + what);
}

Status DecodeImage(std::string_view row, const ChangeRecord& rec, std::string_view rk,
                   std::optional<Entity>* out) {
  Entity e;
  e.partition_key = rec.partition_key;
  e.row_key = std::string(rk);
  ST_RETURN_IF_ERROR(DecodeRow(row, &e));
  *out = std::move(e);
  return Status::OK();
}

// The header's fields as stored, without copies.
struct HeaderView {
  uint8_t format = 0, kind = 0;
  uint64_t lsn = 0, ts = 0, table_id = 0, epoch = 0, op_count = 0;
  std::string_view table, pk, caller, request_id, target;
  bool image_refs = false;  // formats 4 and 5: a mode byte per operation
};

Status ReadHeader(Reader* r, HeaderView* h) {
  if (!r->Byte(&h->format)) return CorruptRecord("empty");
  const uint8_t f = h->format;
  if (f != kChangeFormat && f != kChangeFormatV1 && f != kChangeFormatEpoch &&
      f != kChangeFormatRefs && f != kChangeFormatEpochRefs) {
    return CorruptRecord("unknown format version");
  }
  h->image_refs = f == kChangeFormatRefs || f == kChangeFormatEpochRefs;
  const bool has_epoch = f == kChangeFormatEpoch || f == kChangeFormatEpochRefs;
  if (!r->Byte(&h->kind) || h->kind < 1 || h->kind > 4 || !r->Varint64(&h->lsn) ||
      !r->Fixed64(&h->ts) || !r->LengthPrefixed(&h->table) || !r->Varint64(&h->table_id) ||
      !r->LengthPrefixed(&h->pk) || !r->LengthPrefixed(&h->caller) ||
      (f >= 2 && !r->LengthPrefixed(&h->request_id)) || (has_epoch && !r->Varint64(&h->epoch)) ||
      (h->kind == static_cast<uint8_t>(ChangeKind::kArchiveRequested) &&
       !r->LengthPrefixed(&h->target)) ||
      !r->Varint64(&h->op_count)) {
    return CorruptRecord("truncated header");
  }
  if (has_epoch && (h->epoch == 0 || h->epoch > kMaxEpoch || h->lsn > kMaxStampedLsn)) {
    return CorruptRecord("epoch out of range");
  }
  return Status::OK();
}

Status ReadStoredOp(Reader* r, bool image_refs, StoredChangeOp* op) {
  if (!r->LengthPrefixed(&op->row_key) || !r->Byte(&op->kind) || op->kind < 1 || op->kind > 6 ||
      (image_refs && (!r->Byte(&op->image_mode) || op->image_mode > kImageInRow)) ||
      !r->LengthPrefixed(&op->before) || !r->LengthPrefixed(&op->after)) {
    return CorruptRecord("truncated operation");
  }
  if (!image_refs) op->image_mode = kImageInline;
  if (op->image_mode == kImageInRow && !op->after.empty())
    return CorruptRecord("an image both inline and in the row");
  return Status::OK();
}

Status DecodeHeader(Reader* r, ChangeRecord* out, uint64_t* op_count, bool* image_refs = nullptr) {
  HeaderView h;
  ST_RETURN_IF_ERROR(ReadHeader(r, &h));
  if (image_refs != nullptr) *image_refs = h.image_refs;
  *op_count = h.op_count;
  const uint8_t kind = h.kind;
  const uint64_t lsn = h.lsn, ts = h.ts, table_id = h.table_id, epoch = h.epoch;
  const std::string_view table = h.table, pk = h.pk, caller = h.caller, request_id = h.request_id,
                         target = h.target;
  out->target_table.assign(target);
  out->epoch = epoch;
  out->lsn = lsn;
  out->kind = static_cast<ChangeKind>(kind);
  out->commit_time = static_cast<int64_t>(ts);
  out->table.assign(table);
  out->table_id = static_cast<uint32_t>(table_id);
  out->partition_key.assign(pk);
  out->caller.assign(caller);
  out->client_request_id.assign(request_id);
  return Status::OK();
}

}  // namespace

void EncodeChangeHeader(uint64_t lsn, ChangeKind kind, int64_t commit_time, std::string_view table,
                        uint32_t table_id, std::string_view pk, std::string_view caller,
                        size_t op_count, std::string* dst, std::string_view target_table,
                        std::string_view client_request_id, uint64_t epoch, bool image_refs) {
  const uint8_t format = image_refs ? (epoch == 0 ? kChangeFormatRefs : kChangeFormatEpochRefs)
                                    : (epoch == 0 ? kChangeFormat : kChangeFormatEpoch);
  dst->push_back(static_cast<char>(format));
  dst->push_back(static_cast<char>(kind));
  PutVarint64(dst, lsn);
  PutFixed64(dst, static_cast<uint64_t>(commit_time));
  PutLengthPrefixed(dst, table);
  PutVarint64(dst, table_id);
  PutLengthPrefixed(dst, pk);
  PutLengthPrefixed(dst, caller);
  PutLengthPrefixed(dst, client_request_id);
  if (epoch != 0) PutVarint64(dst, epoch);
  if (kind == ChangeKind::kArchiveRequested) PutLengthPrefixed(dst, target_table);
  PutVarint64(dst, op_count);
}

void EncodeChangeOp(const ChangeOpImages& op, std::string* dst, int image_mode) {
  PutLengthPrefixed(dst, op.row_key);
  dst->push_back(static_cast<char>(op.kind));
  if (image_mode >= 0) dst->push_back(static_cast<char>(image_mode));
  PutRowImage(dst, op.before_row);
  if (image_mode == kImageInRow) {
    PutVarint64(dst, 0);
  } else {
    PutRowImage(dst, op.after_row);
  }
}

Status SplitStoredChange(std::string_view value, StoredChange* out) {
  Reader r(value);
  HeaderView h;
  ST_RETURN_IF_ERROR(ReadHeader(&r, &h));
  out->format = h.format;
  out->lsn = h.lsn;
  out->epoch = h.epoch;
  out->table_id = static_cast<uint32_t>(h.table_id);
  out->partition_key = h.pk;
  out->header_rest = value.substr(1, value.size() - r.remaining() - 1);
  if (h.op_count > r.remaining()) return CorruptRecord("bad operation count");
  out->ops.clear();
  out->ops.resize(h.op_count);
  for (StoredChangeOp& op : out->ops) ST_RETURN_IF_ERROR(ReadStoredOp(&r, h.image_refs, &op));
  if (!r.empty()) return CorruptRecord("trailing bytes");
  return Status::OK();
}

Status DecodeChangeHeader(std::string_view value, ChangeRecord* out) {
  Reader r(value);
  uint64_t op_count;
  return DecodeHeader(&r, out, &op_count);
}

Status DecodeChange(std::string_view value, ChangeRecord* out) {
  Reader r(value);
  uint64_t op_count;
  bool image_refs = false;
  ST_RETURN_IF_ERROR(DecodeHeader(&r, out, &op_count, &image_refs));
  if (op_count > r.remaining()) return CorruptRecord("bad operation count");
  out->ops.clear();
  out->ops.reserve(op_count);
  for (uint64_t i = 0; i < op_count; i++) {
    StoredChangeOp stored;
    ST_RETURN_IF_ERROR(ReadStoredOp(&r, image_refs, &stored));
    if (stored.image_mode == kImageInRow) {
      return Status(Code::kInternal,
                    "change record " + std::to_string(out->lsn) +
                        ": an after image is stored in its row; read it through the engine");
    }
    const std::string_view rk = stored.row_key, before = stored.before, after = stored.after;
    const uint8_t kind = stored.kind;
    ChangeOp op;
    op.row_key.assign(rk);
    op.kind = static_cast<OpKind>(kind);
    op.version = StampVersion(out->epoch, out->lsn);
    if (!before.empty()) ST_RETURN_IF_ERROR(DecodeImage(before, *out, rk, &op.before));
    if (!after.empty()) {
      ST_RETURN_IF_ERROR(DecodeImage(after, *out, rk, &op.after));
      op.etag = op.after->etag;
    }
    out->ops.push_back(std::move(op));
  }
  if (!r.empty()) return CorruptRecord("trailing bytes");
  return Status::OK();
}

}  // namespace codec

Status DecodeChangePage(std::string_view page, std::vector<ChangeRecord>* out, uint64_t expected_records) {
  codec::Reader r(page);
  // Each record takes at least two bytes (its length and format byte).
  if (expected_records > page.size() / 2) {
    return Status(Code::kInternal, "corrupt change page: " + std::to_string(expected_records) +
                                       " records announced in " + std::to_string(page.size()) + " bytes");
  }
  out->reserve(out->size() + expected_records);
  uint64_t n = 0;
  while (!r.empty()) {
    std::string_view value;
    if (!r.LengthPrefixed(&value)) {
      return Status(Code::kInternal, "corrupt change page: record " + std::to_string(n) + " is truncated");
    }
    ChangeRecord& rec = out->emplace_back();
    if (Status s = codec::DecodeChange(value, &rec); !s.ok()) {
      out->pop_back();
      return Status(s.code(), "change page record " + std::to_string(n) + ": " + s.message());
    }
    n++;
  }
  if (expected_records != 0 && n != expected_records) {
    return Status(Code::kInternal, "corrupt change page: " + std::to_string(n) + " records, " +
                                       std::to_string(expected_records) + " announced");
  }
  return Status::OK();
}

}  // namespace sidetable
