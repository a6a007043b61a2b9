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

Status Corrupt(const char* what) {
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

Status DecodeHeader(Reader* r, ChangeRecord* out, uint64_t* op_count) {
  uint8_t format, kind;
  uint64_t lsn, ts, table_id;
  std::string_view table, pk, caller, request_id;
  if (!r->Byte(&format)) return Corrupt("empty");
  if (format != kChangeFormat && format != kChangeFormatV1 && format != kChangeFormatEpoch) {
    return Corrupt("unknown format version");
  }
  std::string_view target;
  uint64_t epoch = 0;
  if (!r->Byte(&kind) || kind < 1 || kind > 4 || !r->Varint64(&lsn) || !r->Fixed64(&ts) ||
      !r->LengthPrefixed(&table) || !r->Varint64(&table_id) || !r->LengthPrefixed(&pk) ||
      !r->LengthPrefixed(&caller) ||
      (format >= 2 && !r->LengthPrefixed(&request_id)) ||
      (format >= kChangeFormatEpoch && !r->Varint64(&epoch)) ||
      (kind == static_cast<uint8_t>(ChangeKind::kArchiveRequested) && !r->LengthPrefixed(&target)) ||
      !r->Varint64(op_count)) {
    return Corrupt("truncated header");
  }
  if (format >= kChangeFormatEpoch && (epoch == 0 || epoch > kMaxEpoch || lsn > kMaxStampedLsn)) {
    return Corrupt("epoch out of range");
  }
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

void EncodeChangeHeader(uint64_t lsn, ChangeKind kind, int64_t commit_time,
                        std::string_view table, uint32_t table_id, std::string_view pk,
                        std::string_view caller, size_t op_count, std::string* dst,
                        std::string_view target_table, std::string_view client_request_id,
                        uint64_t epoch) {
  dst->push_back(static_cast<char>(epoch == 0 ? kChangeFormat : kChangeFormatEpoch));
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

void EncodeChangeOp(const ChangeOpImages& op, std::string* dst) {
  PutLengthPrefixed(dst, op.row_key);
  dst->push_back(static_cast<char>(op.kind));
  PutLengthPrefixed(dst, op.before_row);
  PutLengthPrefixed(dst, op.after_row);
}

Status DecodeChangeHeader(std::string_view value, ChangeRecord* out) {
  Reader r(value);
  uint64_t op_count;
  return DecodeHeader(&r, out, &op_count);
}

Status DecodeChange(std::string_view value, ChangeRecord* out) {
  Reader r(value);
  uint64_t op_count;
  ST_RETURN_IF_ERROR(DecodeHeader(&r, out, &op_count));
  if (op_count > r.remaining()) return Corrupt("bad operation count");
  out->ops.clear();
  out->ops.reserve(op_count);
  for (uint64_t i = 0; i < op_count; i++) {
    std::string_view rk, before, after;
    uint8_t kind;
    if (!r.LengthPrefixed(&rk) || !r.Byte(&kind) || kind < 1 || kind > 6 ||
        !r.LengthPrefixed(&before) || !r.LengthPrefixed(&after)) {
      return Corrupt("truncated operation");
    }
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
  if (!r.empty()) return Corrupt("trailing bytes");
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
