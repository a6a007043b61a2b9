// Reply bodies: the server encodes them, clients decode them.
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

#include <algorithm>

#include "engine/utf8.h"

namespace sidetable::wire {
namespace {

using codec::Be8;
using codec::ReadDateTime;

Status Malformed(const char* what) {
  return Status(Code::kInternal, std::string("malformed reply: ") + what);
}

// {"code", "message", "index"?}: an error reply's body, and a failed
// batch's entry in a WriteMany reply.
void WriteErrorBody(msgpack::Writer& w, const Status& s) {
  w.MapHeader(s.op_index() >= 0 ? 3 : 2);
  w.Str("code");
  w.Str(ErrorCodeName(s.code()));
  w.Str("message");
  // Messages may quote what a client sent: the reply is valid UTF-8 and
  // bounded whatever that was.
  w.Str(ToValidUtf8(s.message(), kMaxErrorMessageBytes));
  if (s.op_index() >= 0) {
    w.Str("index");
    w.Int(s.op_index());
  }
}

// Iterates the fields of a map body: fn(key, reader) returns false on a
// malformed value. Unknown keys must be skipped by fn.
template <typename Fn>
Status ForEachField(std::string_view body, Fn&& fn) {
  msgpack::Reader r(body);
  uint32_t n;
  if (!r.MapHeader(&n)) return Malformed("body is not a map");
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Malformed("field name");
    if (!fn(key, r)) return Malformed("field value");
  }
  return Status::OK();
}

void WriteChange(msgpack::Writer& w, const ChangeRecord& rec) {
  const bool archive = rec.kind == ChangeKind::kArchiveRequested;
  const bool crid = !rec.client_request_id.empty();
  w.MapHeader((archive ? 9 : 8) + (crid ? 1 : 0));
  if (crid) {
    w.Str("clientRequestId");
    w.Str(rec.client_request_id);
  }
  if (archive) {
    w.Str("target");
    w.Str(rec.target_table);
  }
  w.Str("lsn");
  w.Uint(rec.lsn);
  w.Str("kind");
  w.Str(ChangeKindName(rec.kind));
  w.Str("time");
  w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(rec.commit_time)));
  w.Str("table");
  w.Str(rec.table);
  w.Str("tableId");
  w.Uint(rec.table_id);
  w.Str("pk");
  w.Str(rec.partition_key);
  w.Str("caller");
  w.Str(rec.caller);
  w.Str("ops");
  w.ArrayHeader(static_cast<uint32_t>(rec.ops.size()));
  for (const ChangeOp& op : rec.ops) {
    w.MapHeader(4 + (op.before ? 1 : 0) + (op.after ? 1 : 0));
    w.Str("rk");
    w.Str(op.row_key);
    w.Str("op");
    w.Str(OpKindName(op.kind));
    w.Str("version");
    w.Uint(op.version);
    w.Str("etag");
    w.Str(op.etag);
    if (op.before) {
      w.Str("before");
      WriteEntity(w, *op.before, true);
    }
    if (op.after) {
      w.Str("after");
      WriteEntity(w, *op.after, true);
    }
  }
}

bool ReadChangeOp(msgpack::Reader& r, ChangeOp* op) {
  uint32_t n;
  if (!r.MapHeader(&n)) return false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    if (!r.Str(&key)) return false;
    if (key == "rk") {
      if (!r.Str(&s)) return false;
      op->row_key.assign(s);
    } else if (key == "op") {
      if (!r.Str(&s) || !ParseOpKind(s, &op->kind)) return false;
    } else if (key == "version") {
      if (!r.Uint(&op->version)) return false;
    } else if (key == "etag") {
      if (!r.Str(&s)) return false;
      op->etag.assign(s);
    } else if (key == "before" || key == "after") {
      Entity e;
      if (!ReadEntity(r, &e, EntityRead::kReply).ok()) return false;
      (key == "before" ? op->before : op->after) = std::move(e);
    } else if (!r.Skip()) {
      return false;
    }
  }
  return true;
}

bool ReadChange(msgpack::Reader& r, ChangeRecord* rec) {
  uint32_t n;
  if (!r.MapHeader(&n)) return false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    uint64_t u;
    if (!r.Str(&key)) return false;
    if (key == "lsn") {
      if (!r.Uint(&rec->lsn)) return false;
    } else if (key == "kind") {
      if (!r.Str(&s)) return false;
      if (!ParseChangeKind(s, &rec->kind)) return false;
    } else if (key == "time") {
      if (!ReadDateTime(r, &rec->commit_time)) return false;
    } else if (key == "table" || key == "pk" || key == "caller" || key == "target" ||
               key == "clientRequestId") {
      if (!r.Str(&s)) return false;
      (key == "table"    ? rec->table
       : key == "pk"     ? rec->partition_key
       : key == "caller" ? rec->caller
       : key == "target" ? rec->target_table
                         : rec->client_request_id)
          .assign(s);
    } else if (key == "tableId") {
      if (!r.Uint(&u)) return false;
      rec->table_id = static_cast<uint32_t>(u);
    } else if (key == "ops") {
      uint32_t count;
      if (!r.ArrayHeader(&count) || count > r.remaining()) return false;
      rec->ops.resize(count);
      for (uint32_t i = 0; i < count; i++) {
        if (!ReadChangeOp(r, &rec->ops[i])) return false;
      }
    } else if (!r.Skip()) {
      return false;
    }
  }
  return true;
}

}  // namespace

void EncodeError(const Header& request, const Status& s, std::string* out) {
  Header h = request;
  h.version = kVersion;
  h.status = static_cast<uint16_t>(HttpStatus(s.code()));
  AppendHeader(out, h);
  msgpack::Writer w(out);
  WriteErrorBody(w, s);
}

void EncodeEmpty(std::string* out) { msgpack::Writer(out).MapHeader(0); }

void EncodePing(const PingReply& r, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(3);
  w.Str("version");
  w.Int(r.version);
  w.Str("sidecar");
  w.Str(r.sidecar_id);
  w.Str("lsn");
  w.Uint(r.last_lsn);
}

void EncodeTables(const TablesReply& r, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(r.next_table ? 2 : 1);
  w.Str("tables");
  w.ArrayHeader(static_cast<uint32_t>(r.tables.size()));
  for (const auto& t : r.tables) w.Str(t);
  if (r.next_table) {
    w.Str("next");
    w.Str(*r.next_table);
  }
}

namespace {

void WriteWriteResult(msgpack::Writer& w, const WriteResult& r) {
  w.MapHeader(3 + (r.skipped.empty() ? 0 : 1) + (r.entity ? 1 : 0) + (r.replayed ? 1 : 0));
  w.Str("lsn");
  w.Uint(r.lsn);
  w.Str("ts");
  w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(r.timestamp)));
  w.Str("etags");
  w.ArrayHeader(static_cast<uint32_t>(r.etags.size()));
  for (const auto& e : r.etags) w.Str(e);
  if (!r.skipped.empty()) {
    // Only fenced operations are ever skipped: other replies stay as they were.
    w.Str("skipped");
    w.ArrayHeader(static_cast<uint32_t>(r.skipped.size()));
    for (uint32_t i : r.skipped) w.Uint(i);
  }
  if (r.entity) {
    w.Str("entity");
    WriteEntity(w, *r.entity, /*with_meta=*/true);
  }
  if (r.replayed) {
    w.Str("replayed");
    w.Bool(true);
  }
}

// One field of a write result; false on a malformed value.
bool ReadWriteField(std::string_view key, msgpack::Reader& r, WriteResult* w) {
  if (key == "lsn") return r.Uint(&w->lsn);
  if (key == "replayed") return r.Bool(&w->replayed);
  if (key == "entity") {
    Entity e;
    if (!ReadEntity(r, &e, EntityRead::kReply).ok()) return false;
    w->entity = std::move(e);
    return true;
  }
  if (key == "ts") return ReadDateTime(r, &w->timestamp);
  if (key == "etags") {
    uint32_t n;
    if (!r.ArrayHeader(&n) || n > r.remaining()) return false;
    for (uint32_t i = 0; i < n; i++) {
      std::string_view s;
      if (!r.Str(&s)) return false;
      w->etags.emplace_back(s);
    }
    return true;
  }
  if (key == "skipped") {
    uint32_t n;
    if (!r.ArrayHeader(&n) || n > r.remaining()) return false;
    for (uint32_t i = 0; i < n; i++) {
      uint64_t v;
      if (!r.Uint(&v) || v > UINT32_MAX) return false;
      w->skipped.push_back(static_cast<uint32_t>(v));
    }
    return true;
  }
  return r.Skip();
}

}  // namespace

void EncodeWrite(const WriteResult& r, std::string* out) {
  msgpack::Writer w(out);
  WriteWriteResult(w, r);
}

void EncodeWriteMany(const std::vector<Result<WriteResult>>& results, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("results");
  w.ArrayHeader(static_cast<uint32_t>(results.size()));
  for (const auto& r : results) {
    if (r.ok()) {
      WriteWriteResult(w, *r);
      continue;
    }
    WriteErrorBody(w, r.status());
  }
}

Status DecodeWriteMany(std::string_view body, std::vector<Result<WriteResult>>* results) {
  bool found = false;
  Status st = ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    if (key != "results") return r.Skip();
    found = true;
    uint32_t n;
    if (!r.ArrayHeader(&n) || n > r.remaining()) return false;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t fields;
      if (!r.MapHeader(&fields)) return false;
      WriteResult w;
      std::optional<Code> code;
      std::string message;
      int64_t index = -1;
      for (uint32_t k = 0; k < fields; k++) {
        std::string_view name, s;
        if (!r.Str(&name)) return false;
        if (name == "code") {
          if (!r.Str(&s)) return false;
          code = ParseErrorCode(s).value_or(Code::kInternal);
        } else if (name == "message") {
          if (!r.Str(&s)) return false;
          message.assign(s);
        } else if (name == "index") {
          if (!r.Int(&index)) return false;
        } else if (!ReadWriteField(name, r, &w)) {
          return false;
        }
      }
      if (code) {
        results->push_back(Status(*code, std::move(message), static_cast<int>(index)));
      } else {
        results->push_back(std::move(w));
      }
    }
    return true;
  });
  if (st.ok() && !found) return Malformed("no results");
  return st;
}

void EncodeEntityReply(const Entity& e, std::string* out, const std::vector<std::string>* select) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("entity");
  if (select != nullptr && !select->empty()) {
    WriteSelectedEntity(w, e, *select);
  } else {
    WriteEntity(w, e, true);
  }
}

namespace {

// {"tailAt": <uint32 0xce, 4 bytes>} right after the body's map header.
constexpr std::string_view kTailAtKey = "\xa6tailAt\xce";
constexpr size_t kTailAtBytes = 4;

void WriteTailAtPlaceholder(std::string* out) {
  out->append(kTailAtKey);
  out->append(kTailAtBytes, '\0');
}

void PatchU32(std::string* out, size_t at, uint32_t v) {
  for (size_t i = 0; i < 4; i++) (*out)[at + i] = static_cast<char>(v >> (24 - 8 * i));
}

void WriteQueryTail(msgpack::Writer& w, const std::optional<std::string>& next_pk,
                    const std::optional<std::string>& next_rk, std::string_view plan, uint64_t examined) {
  if (next_pk) {
    w.Str("npk");
    w.Str(*next_pk);
    w.Str("nrk");
    w.Str(next_rk.value_or(""));
  }
  w.Str("plan");
  w.Str(plan);
  w.Str("examined");
  w.Uint(examined);
}

}  // namespace

void EncodeQuery(const QueryReply& r, std::string* out) {
  const size_t body_at = out->size();
  msgpack::Writer w(out);
  w.MapHeader(4 + (r.next_pk ? 2 : 0));
  WriteTailAtPlaceholder(out);
  const size_t tail_value_at = out->size() - kTailAtBytes;
  w.Str("entities");
  w.ArrayHeader(static_cast<uint32_t>(r.entities.size()));
  if (r.select.empty()) {
    for (const auto& e : r.entities) WriteEntity(w, e, true);
  } else {
    for (const auto& e : r.entities) WriteSelectedEntity(w, e, r.select);
  }
  PatchU32(out, tail_value_at, static_cast<uint32_t>(out->size() - body_at));
  WriteQueryTail(w, r.next_pk, r.next_rk, r.plan, r.examined);
}

RowEncoder::RowEncoder(const std::vector<std::string>& select) : select_(select) {
  if (select.empty()) return;
  pk_ = rk_ = ts_ = false;
  for (const std::string& name : select) {
    if (name == "PartitionKey") pk_ = true;
    else if (name == "RowKey") rk_ = true;
    else if (name == "Timestamp") ts_ = true;
    else if (std::find(user_.begin(), user_.end(), name) == user_.end()) user_.push_back(name);
  }
  found_.resize(user_.size());
}

Status RowEncoder::Write(const RowView& row, std::string* out) {
  msgpack::Writer w(out);
  // The fields of WriteEntityMap, in its order: pk, rk, ts, etag, props.
  w.MapHeader(2 + pk_ + rk_ + ts_);
  if (pk_) {
    w.Str("pk");
    w.Str(row.partition_key());
  }
  if (rk_) {
    w.Str("rk");
    w.Str(row.row_key());
  }
  if (ts_) {
    w.Str("ts");
    w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(row.timestamp())));
  }
  ETagBuffer etag;
  w.Str("etag");
  w.Str(row.ETag(&etag));
  w.Str("props");
  PropertyView p;
  if (select_.empty()) {
    // Every property, in stored order; the declared count is checked as the
    // reader goes.
    w.MapHeader(static_cast<uint32_t>(row.property_count()));
    PropertyReader r(row);
    while (r.Next(&p)) {
      w.Str(p.name);
      codec::WriteTypedValue(w, p);
    }
    return r.status();
  }
  // The selected properties the row has, in stored order, then a nil for
  // each selected one it lacks, in $select order (WriteSelectedEntity).
  std::fill(found_.begin(), found_.end(), 0);
  uint32_t present = 0;
  PropertyReader names(row);
  while (names.Next(&p)) {
    auto it = std::find(user_.begin(), user_.end(), p.name);
    if (it != user_.end() && !found_[it - user_.begin()]) {
      found_[it - user_.begin()] = 1;
      present++;
    }
  }
  ST_RETURN_IF_ERROR(names.status());
  w.MapHeader(static_cast<uint32_t>(user_.size()));
  if (present > 0) {
    PropertyReader r(row);
    while (r.Next(&p)) {
      if (std::find(user_.begin(), user_.end(), p.name) == user_.end()) continue;
      w.Str(p.name);
      codec::WriteTypedValue(w, p);
    }
  }
  for (size_t i = 0; i < user_.size(); i++) {
    if (found_[i]) continue;
    w.Str(user_[i]);
    w.Nil();
  }
  return Status::OK();
}

Status EncodeRowReply(const RowView& row, const std::vector<std::string>& select, std::string* out) {
  // About the stored properties' bytes, the keys, and 96 for the field
  // names, the Timestamp and the ETag: one allocation for the reply instead
  // of growing it seven times from empty to ~1 KB (with the frontend's
  // frames on the stack, point reads 1.05x; docs/performance.md session
  // 22). A hint: a reply that needs more grows.
  out->reserve(out->size() + row.properties_bytes().size() + row.partition_key().size() +
               row.row_key().size() + 96);
  out->push_back('\x81');  // {"entity": ...}
  msgpack::Writer(out).Str("entity");
  RowEncoder encoder(select);
  return encoder.Write(row, out);
}

QueryReplyWriter::QueryReplyWriter(std::string* out, const std::vector<std::string>& select)
    : out_(out), row_(select) {
  // The body map's size (4, or 6 with a continuation), the tail's offset and
  // the array's size are known at Finish(): room is kept for them and
  // patched then.
  map_at_ = out_->size();
  out_->push_back('\x84');
  WriteTailAtPlaceholder(out_);
  tail_at_ = out_->size() - kTailAtBytes;
  msgpack::Writer(out_).Str("entities");
  array_at_ = out_->size();
  out_->append(3, '\0');
}

Status QueryReplyWriter::Add(const RowView& row) {
  ST_RETURN_IF_ERROR(row_.Write(row, out_));
  count_++;
  return Status::OK();
}

void QueryReplyWriter::Finish(const std::optional<std::string>& next_pk,
                              const std::optional<std::string>& next_rk, std::string_view plan,
                              uint64_t examined) {
  std::string header;
  msgpack::Writer(&header).ArrayHeader(count_);
  // The array header replaces 3 bytes of room: the tail moves by the difference.
  const size_t tail = out_->size() - map_at_ - (3 - header.size());
  PatchU32(out_, tail_at_, static_cast<uint32_t>(tail));
  msgpack::Writer w(out_);
  WriteQueryTail(w, next_pk, next_rk, plan, examined);
  (*out_)[map_at_] = next_pk ? '\x86' : '\x84';
  out_->replace(array_at_, 3, header);
}

void EncodeChanges(const ChangeBatch& b, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(3);
  w.Str("records");
  w.ArrayHeader(static_cast<uint32_t>(b.records.size()));
  for (const auto& rec : b.records) WriteChange(w, rec);
  w.Str("first");
  w.Uint(b.first_available_lsn);
  w.Str("last");
  w.Uint(b.last_lsn);
}

size_t BeginRawChanges(std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(4);
  w.Str("raw");
  // bin 32 with its length left for FinishRawChanges (a page may pass 64 KiB).
  out->push_back(static_cast<char>(0xc6));
  out->append(4, '\0');
  return out->size();
}

void FinishRawChanges(const RawChangePage& page, size_t begin, std::string* out) {
  const uint64_t size = out->size() - begin;
  for (int i = 0; i < 4; i++) (*out)[begin - 4 + i] = static_cast<char>(size >> (24 - 8 * i));
  msgpack::Writer w(out);
  w.Str("n");
  w.Uint(page.records);
  w.Str("first");
  w.Uint(page.first_available_lsn);
  w.Str("last");
  w.Uint(page.last_lsn);
}

void EncodeLsn(uint64_t lsn, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("lsn");
  w.Uint(lsn);
}

Status DecodeLsn(std::string_view body, uint64_t* lsn) {
  bool found = false;
  Status s = ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    if (key == "lsn") return found = r.Uint(lsn);
    return r.Skip();
  });
  if (s.ok() && !found) return Malformed("no lsn");
  return s;
}

Status DecodeReply(std::string_view frame, Header* h, std::string_view* body) {
  if (!ParseHeader(frame, h)) return Malformed("shorter than the header");
  *body = frame.substr(kHeaderBytes);
  if (h->status >= 200 && h->status < 300) return Status::OK();
  Code code = Code::kInternal;
  std::string message;
  int64_t index = -1;
  Status parsed = ForEachField(*body, [&](std::string_view key, msgpack::Reader& r) {
    std::string_view s;
    if (key == "code") {
      if (!r.Str(&s)) return false;
      code = ParseErrorCode(s).value_or(Code::kInternal);
      if (!ParseErrorCode(s)) message = std::string(s) + ": ";
      return true;
    }
    if (key == "message") {
      if (!r.Str(&s)) return false;
      message += std::string(s);
      return true;
    }
    if (key == "index") return r.Int(&index);
    return r.Skip();
  });
  if (!parsed.ok()) return parsed;
  return Status(code, std::move(message), static_cast<int>(index));
}

Status DecodePing(std::string_view body, PingReply* p) {
  return ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    std::string_view s;
    if (key == "version") return r.Int(&p->version);
    if (key == "lsn") return r.Uint(&p->last_lsn);
    if (key == "sidecar") {
      if (!r.Str(&s)) return false;
      p->sidecar_id.assign(s);
      return true;
    }
    return r.Skip();
  });
}

Status DecodeTables(std::string_view body, TablesReply* t) {
  return ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    std::string_view s;
    if (key == "tables") {
      uint32_t n;
      if (!r.ArrayHeader(&n)) return false;
      for (uint32_t i = 0; i < n; i++) {
        if (!r.Str(&s)) return false;
        t->tables.emplace_back(s);
      }
      return true;
    }
    if (key == "next") {
      if (!r.Str(&s)) return false;
      t->next_table = std::string(s);
      return true;
    }
    return r.Skip();
  });
}

Status DecodeWrite(std::string_view body, WriteResult* w) {
  return ForEachField(body, [&](std::string_view key, msgpack::Reader& r) { return ReadWriteField(key, r, w); });
}

Status DecodeEntityReply(std::string_view body, Entity* e) {
  bool found = false;
  Status s = ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    if (key == "entity") {
      found = true;
      return ReadEntity(r, e, EntityRead::kReply).ok();
    }
    return r.Skip();
  });
  if (s.ok() && !found) return Malformed("no entity");
  return s;
}

namespace {

// A query reply's fields other than its entities (DecodeQuery, IndexQuery).
template <typename Reply>
bool ReadQueryField(std::string_view key, msgpack::Reader& r, Reply* q) {
  std::string_view s;
  if (key == "npk" || key == "nrk" || key == "plan") {
    if (!r.Str(&s)) return false;
    if (key == "plan") q->plan.assign(s);
    else (key == "npk" ? q->next_pk : q->next_rk) = std::string(s);
    return true;
  }
  if (key == "examined") return r.Uint(&q->examined);
  return r.Skip();
}

}  // namespace

// The entities array read by `read_one` (an Entity, or a view in place),
// the other fields by ReadQueryField.
template <typename Reply, typename ReadOne>
Status ReadQueryBody(std::string_view body, Reply* q, ReadOne read_one) {
  return ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    if (key != "entities") return ReadQueryField(key, r, q);
    uint32_t n;
    if (!r.ArrayHeader(&n) || n > r.remaining()) return false;
    // Fresh elements: a body with "entities" twice must not merge the second
    // array into the first's entities (the last array wins, in both readers).
    q->entities.clear();
    q->entities.resize(n);
    for (uint32_t i = 0; i < n; i++) {
      if (!read_one(r, &q->entities[i]).ok()) return false;
    }
    return true;
  });
}

Status DecodeQuery(std::string_view body, QueryReply* q) {
  return ReadQueryBody(body, q, [](msgpack::Reader& r, Entity* e) { return ReadEntity(r, e, EntityRead::kReply); });
}

Status IndexQuery(std::string_view body, QueryIndex* q) {
  *q = QueryIndex{};
  return ReadQueryBody(body, q, codec::ReadEntityRef);
}

Status PeekQueryContinuation(std::string_view body, std::optional<std::string>* next_pk,
                             std::optional<std::string>* next_rk) {
  next_pk->reset();
  next_rk->reset();
  // npk and nrk read, any other field skipped: on either path below.
  auto field = [&](std::string_view key, msgpack::Reader& r) {
    if (key != "npk" && key != "nrk") return r.Skip();
    std::string_view s;
    if (!r.Str(&s)) return false;
    (key == "npk" ? *next_pk : *next_rk) = std::string(s);
    return true;
  };
  // The fast way: the "tailAt" field says where the fields after the
  // entities start. Whatever does not fit falls back to walking the body.
  if (body.size() >= 1 + kTailAtKey.size() + kTailAtBytes && body.substr(1, kTailAtKey.size()) == kTailAtKey) {
    msgpack::Reader head(body);
    uint32_t fields;
    size_t tail = 0;
    for (size_t i = 0; i < kTailAtBytes; i++) tail = tail << 8 | static_cast<uint8_t>(body[1 + kTailAtKey.size() + i]);
    if (head.MapHeader(&fields) && fields >= 2 && tail <= body.size()) {
      msgpack::Reader r(body.substr(tail));
      bool ok = true;
      for (uint32_t k = 0; ok && k < fields - 2; k++) {
        std::string_view key;
        ok = r.Str(&key) && field(key, r);
      }
      if (ok && r.empty()) return Status::OK();
      next_pk->reset();
      next_rk->reset();
    }
  }
  return ForEachField(body, field);
}

Status DecodeChanges(std::string_view body, ChangeBatch* b) {
  std::optional<std::string_view> raw;
  uint64_t raw_records = 0;
  Status s = ForEachField(body, [&](std::string_view key, msgpack::Reader& r) {
    if (key == "raw") {
      std::string_view page;
      if (!r.Bin(&page)) return false;
      raw = page;
      return true;
    }
    if (key == "n") return r.Uint(&raw_records);
    if (key == "records") {
      uint32_t n;
      if (!r.ArrayHeader(&n) || n > r.remaining()) return false;
      b->records.resize(n);
      for (uint32_t i = 0; i < n; i++) {
        if (!ReadChange(r, &b->records[i])) return false;
      }
      return true;
    }
    if (key == "first") return r.Uint(&b->first_available_lsn);
    if (key == "last") return r.Uint(&b->last_lsn);
    return r.Skip();
  });
  if (!s.ok() || !raw) return s;
  // Decoded after the other fields, in whichever order they came.
  if (!b->records.empty()) return Malformed("both 'raw' and 'records'");
  if (raw_records == 0 && !raw->empty()) return Malformed("a raw page without its record count 'n'");
  return DecodeChangePage(*raw, &b->records, raw_records);
}

}  // namespace sidetable::wire
