// Request frames: header and body, both directions.
#include <cstring>
#include <type_traits>

#include "engine/limits.h"
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

#include "engine/limits.h"
#include "engine/utf8.h"

namespace sidetable::wire {
namespace {

using codec::Invalid;

constexpr std::string_view kOpNames[] = {"Unknown",
                                         "Ping",
                                         "CreateTable",
                                         "DeleteTable",
                                         "ListTables",
                                         "Write",
                                         "Get",
                                         "Query",
                                         "ReadChanges",
                                         "RequestArchive",
                                         "AdvanceWatermarks",
                                         "ReadWatermarks",
                                         "WriteMany",
                                         "SetTablePolicies",
                                         "GetTablePolicies",
                                         "IssueToken",
                                         "Backup",
                                         "ForgetWatermarks"};

Status ReadString(msgpack::Reader& r, std::string_view key, std::string* out) {
  std::string_view s;
  if (!r.Str(&s)) return Invalid("'" + std::string(key) + "' must be a string");
  out->assign(s);
  return Status::OK();
}

Status ReadUint(msgpack::Reader& r, std::string_view key, uint64_t* out) {
  if (!r.Uint(out)) return Invalid("'" + std::string(key) + "' must be a non-negative integer");
  return Status::OK();
}

// `max` is the most the operation allows ($select: 255 names, rks: 100):
// the declared count is checked before anything is reserved.
Status ReadStringList(msgpack::Reader& r, std::string_view key, size_t max,
                      std::vector<std::string>* out) {
  uint32_t n;
  if (!r.ArrayHeader(&n)) return Invalid("'" + std::string(key) + "' must be an array of strings");
  if (n > max) {
    return Invalid("'" + std::string(key) + "' holds at most " + std::to_string(max) +
                   " strings, got " + std::to_string(n));
  }
  if (n > r.remaining()) return Invalid("truncated '" + std::string(key) + "'");
  out->clear();
  out->reserve(n);
  for (uint32_t i = 0; i < n; i++) {
    std::string_view s;
    if (!r.Str(&s)) return Invalid("'" + std::string(key) + "' must be an array of strings");
    out->emplace_back(s);
  }
  return Status::OK();
}

Status ReadOperation(msgpack::Reader& r, Operation* op, size_t index) {
  uint32_t n;
  if (!r.MapHeader(&n)) return Status(Code::kInvalidInput, "an operation must be a map", static_cast<int>(index));
  bool has_kind = false, has_entity = false;
  uint32_t seen = 0;  // op, entity, ifMatch, fence: each at most once
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    if (!r.Str(&key)) return Status(Code::kInvalidInput, "operation keys must be strings", static_cast<int>(index));
    enum : uint32_t { kOther = 0, kOp = 1, kEntity = 2, kIfMatch = 4, kFence = 8 };
    const uint32_t bit = key == "op"        ? kOp
                         : key == "entity"  ? kEntity
                         : key == "ifMatch" ? kIfMatch
                         : key == "fence"   ? kFence
                                            : kOther;
    if ((seen & bit) != 0) {
      return Status(Code::kInvalidInput, "operation field '" + std::string(key) + "' repeated",
                    static_cast<int>(index));
    }
    seen |= bit;
    // nil is absent, as for the request's own fields (docs/protocol.md).
    if (bit != kOther && r.Peek() == msgpack::Kind::kNil) {
      r.Nil();
      continue;
    }
    // The key was compared once, above.
    switch (bit) {
      case kOp:
        if (!r.Str(&s) || !ParseOpKind(s, &op->kind)) {
          return Status(Code::kInvalidInput, "unknown operation kind", static_cast<int>(index));
        }
        has_kind = true;
        break;
      case kEntity: {
        Status st = ReadEntity(r, &op->entity);
        if (!st.ok()) return st.WithOpIndex(static_cast<int>(index));
        has_entity = true;
        break;
      }
      case kIfMatch:
        if (!r.Str(&s))
          return Status(Code::kInvalidInput, "ifMatch must be a string", static_cast<int>(index));
        op->if_match.assign(s);
        break;
      case kFence:
        if (!r.Uint(&op->fence)) {
          return Status(Code::kInvalidInput, "fence must be an unsigned integer",
                        static_cast<int>(index));
        }
        break;
      default:
        if (!r.Skip())
          return Status(Code::kInvalidInput, "malformed operation", static_cast<int>(index));
    }
  }
  if (!has_kind || !has_entity) {
    return Status(Code::kInvalidInput, "an operation needs 'op' and 'entity'", static_cast<int>(index));
  }
  return Status::OK();
}

Status ReadOps(msgpack::Reader& r, std::vector<Operation>* ops) {
  uint32_t n;
  if (!r.ArrayHeader(&n)) return Invalid("'ops' must be an array");
  // The declared count is untrusted: the batch limit first (the engine's
  // own message), then what the bytes left can hold, before resizing.
  if (n > Limits::kMaxBatchOperations) {
    return Invalid("a batch holds at most 100 operations, got " + std::to_string(n));
  }
  // At most 100: resizing before reading is bounded, and a short frame
  // fails on the operation that is missing, with its index.
  ops->resize(n);
  for (uint32_t i = 0; i < n; i++) ST_RETURN_IF_ERROR(ReadOperation(r, &(*ops)[i], i));
  return Status::OK();
}

void WriteOps(msgpack::Writer& w, const std::vector<Operation>& ops);

// The request's own fields. Each key is classified once (its index in
// kRequestFields); DecodeRequest keeps a bit per field to refuse a repeat,
// and ReadField dispatches on the classification, so the two cannot
// disagree about which fields exist.
enum class RequestField : uint8_t {
  kTable,
  kCaller,
  kToken,
  kPolicies,
  kSpec,
  kClientRequestId,
  kPk,
  kRk,
  kFilter,
  kSelect,
  kRks,
  kTarget,
  kNpk,
  kNrk,
  kNext,
  kTop,
  kWatermarks,
  kAfter,
  kDerived,
  kWaitMs,
  kFrom,
  kMax,
  kMaxBytes,
  kRaw,
  kOps,
  kNoContent,
  kWrites,
  kUnknown,  // skipped (newer clients may send more), never tracked
};
constexpr std::string_view kRequestFields[] = {
    "table",   "caller",    "token",  "policies", "spec",       "clientRequestId",
    "pk",      "rk",        "filter", "select",   "rks",        "target",
    "npk",     "nrk",       "next",   "top",      "watermarks", "after",
    "derived", "waitMs",    "from",   "max",      "maxBytes",   "raw",
    "ops",     "noContent", "writes"};
static_assert(std::size(kRequestFields) == static_cast<size_t>(RequestField::kUnknown),
              "a name per RequestField");
static_assert(static_cast<size_t>(RequestField::kUnknown) <= 32,
              "the repeat check keeps one bit per field in a uint32_t");

RequestField ClassifyRequestField(std::string_view key) {
  for (size_t i = 0; i < std::size(kRequestFields); i++) {
    if (kRequestFields[i] == key) return static_cast<RequestField>(i);
  }
  return RequestField::kUnknown;
}

// One of WriteMany's `writes`: table, clientRequestId and ops, each at most
// once, as at the top level.
Status ReadWriteItem(msgpack::Reader& r, uint32_t i, WriteItem* item) {
  uint32_t fields;
  if (!r.MapHeader(&fields)) return Invalid("each of 'writes' must be a map");
  uint32_t seen = 0;
  for (uint32_t k = 0; k < fields; k++) {
    std::string_view name;
    if (!r.Str(&name)) return Invalid("field names in 'writes' must be strings");
    enum : uint32_t { kOther = 0, kTable = 1, kRequestId = 2, kOps = 4 };
    const uint32_t bit = name == "table"             ? kTable
                         : name == "clientRequestId" ? kRequestId
                         : name == "ops"             ? kOps
                                                     : kOther;
    if ((seen & bit) != 0) {
      return Invalid("writes[" + std::to_string(i) + "]: field '" + std::string(name) +
                     "' repeated");
    }
    seen |= bit;
    // The key was compared once, above.
    switch (bit) {
      case kTable:
        ST_RETURN_IF_ERROR(ReadString(r, name, &item->table));
        break;
      case kRequestId:
        ST_RETURN_IF_ERROR(ReadString(r, name, &item->client_request_id));
        if (item->client_request_id.empty()) {
          const Status s = ValidateClientRequestId(item->client_request_id);
          return Invalid("writes[" + std::to_string(i) + "]: " + s.message());
        }
        break;
      case kOps: {
        Status s = ReadOps(r, &item->ops);
        if (!s.ok())
          return Status(s.code(), "writes[" + std::to_string(i) + "]: " + s.message(),
                        s.op_index());
        break;
      }
      default:
        if (!r.Skip()) return Invalid("malformed field in 'writes'");
    }
  }
  if (item->table.empty()) return Invalid("writes[" + std::to_string(i) + "] needs 'table'");
  if (item->ops.empty())
    return Invalid("writes[" + std::to_string(i) + "] needs 'ops' (1 to 100 operations)");
  return Status::OK();
}

// `key` classified as `field` (ClassifyRequestField), for messages.
Status ReadField(msgpack::Reader& r, RequestField field, std::string_view key, Request* q) {
  // Many MessagePack libraries send nil for "no value": treat it as absent.
  if (r.Peek() == msgpack::Kind::kNil) {
    r.Nil();
    return Status::OK();
  }
  switch (field) {
    case RequestField::kTable:
      return ReadString(r, key, &q->table);
    case RequestField::kCaller:
      return ReadString(r, key, &q->caller);
    case RequestField::kToken:
      ST_RETURN_IF_ERROR(ReadString(r, key, &q->token));
      if (q->token.size() > token::kMaxTokenLength)
        return Invalid("'token' is longer than 8192 bytes");
      return Status::OK();
    case RequestField::kPolicies:
      return ReadPolicies(r, &q->policies);
    case RequestField::kSpec: {
      token::TokenSpec spec;
      ST_RETURN_IF_ERROR(ReadTokenSpec(r, &spec));
      q->issue = std::move(spec);
      return Status::OK();
    }
    case RequestField::kClientRequestId:
      ST_RETURN_IF_ERROR(ReadString(r, key, &q->client_request_id));
      // Present but empty is a mistake, not "no id": the write would lose its
      // retry protection without a word.
      return q->client_request_id.empty() ? ValidateClientRequestId(q->client_request_id)
                                          : Status::OK();
    // Presence is kept: "" is a valid key, so a missing (or misspelled) key
    // field must not read as one.
    case RequestField::kPk:
      q->has_pk = true;
      return ReadString(r, key, &q->pk);
    case RequestField::kRk:
      q->has_rk = true;
      return ReadString(r, key, &q->rk);
    case RequestField::kFilter:
      return ReadString(r, key, &q->filter);
    case RequestField::kSelect:
      return ReadStringList(r, key, Limits::kMaxUserProperties + 3, &q->select);
    case RequestField::kRks:
      return ReadStringList(r, key, Limits::kMaxBatchOperations, &q->rks);
    case RequestField::kTarget:
      return ReadString(r, key, &q->target);
    case RequestField::kNpk:
    case RequestField::kNrk:
    case RequestField::kNext: {
      std::string s;
      ST_RETURN_IF_ERROR(ReadString(r, key, &s));
      (field == RequestField::kNpk   ? q->next_pk
       : field == RequestField::kNrk ? q->next_rk
                                     : q->next_table) = std::move(s);
      return Status::OK();
    }
    case RequestField::kTop: {
      int64_t top;
      if (!r.Int(&top)) return Invalid("'top' must be an integer");
      q->top = top;
      return Status::OK();
    }
    case RequestField::kWatermarks:
      return ReadWatermarkEntries(r, &q->watermarks);
    case RequestField::kAfter:
      return ReadAfterTokens(r, &q->after);
    case RequestField::kDerived:
      return ReadString(r, key, &q->derived);
    case RequestField::kWaitMs: {
      uint64_t ms;
      ST_RETURN_IF_ERROR(ReadUint(r, key, &ms));
      if (ms > kMaxWaitMs) {
        return Invalid("'waitMs' must be at most " + std::to_string(kMaxWaitMs) + ", got " +
                       std::to_string(ms));
      }
      q->wait_ms = ms;
      return Status::OK();
    }
    case RequestField::kFrom:
      return ReadUint(r, key, &q->from_lsn);
    case RequestField::kMax:
      return ReadUint(r, key, &q->max_records);
    case RequestField::kMaxBytes:
      return ReadUint(r, key, &q->max_bytes);
    case RequestField::kRaw:
      if (!r.Bool(&q->raw_changes)) return Invalid("'raw' must be a boolean");
      return Status::OK();
    case RequestField::kOps:
      return ReadOps(r, &q->ops);
    case RequestField::kNoContent:
      if (!r.Bool(&q->no_content)) return Invalid("'noContent' must be a boolean");
      return Status::OK();
    case RequestField::kWrites: {
      uint32_t n;
      if (!r.ArrayHeader(&n)) return Invalid("'writes' must be an array");
      if (n > kMaxWriteManyBatches) {
        return Invalid("WriteMany holds at most " + std::to_string(kMaxWriteManyBatches) +
                       " batches, got " + std::to_string(n));
      }
      if (n > r.remaining() / 8) return Invalid("truncated 'writes'");
      q->writes.resize(n);
      for (uint32_t i = 0; i < n; i++) ST_RETURN_IF_ERROR(ReadWriteItem(r, i, &q->writes[i]));
      return Status::OK();
    }
    case RequestField::kUnknown:
      break;
  }
  // Unknown fields are skipped: newer clients may send more.
  if (!r.Skip()) return Invalid("malformed field '" + std::string(key) + "'");
  return Status::OK();
}

void WriteString(msgpack::Writer& w, std::string_view key, std::string_view value) {
  w.Str(key);
  w.Str(value);
}

}  // namespace

std::string_view OpName(Op op) {
  auto i = static_cast<size_t>(op);
  return i < std::size(kOpNames) ? kOpNames[i] : kOpNames[0];
}

bool ParseHeader(std::string_view frame, Header* h) {
  if (frame.size() < kHeaderBytes) return false;
  auto u = reinterpret_cast<const uint8_t*>(frame.data());
  h->version = u[0];
  h->op = u[1];
  h->status = static_cast<uint16_t>(u[2] | u[3] << 8);
  uint64_t id = 0;
  for (int i = 7; i >= 0; i--) id = id << 8 | u[8 + i];
  h->request_id = id;
  return true;
}

void AppendHeader(std::string* out, const Header& h) {
  char buf[kHeaderBytes] = {};
  buf[0] = static_cast<char>(h.version);
  buf[1] = static_cast<char>(h.op);
  buf[2] = static_cast<char>(h.status & 0xFF);
  buf[3] = static_cast<char>(h.status >> 8);
  for (int i = 0; i < 8; i++) buf[8 + i] = static_cast<char>(h.request_id >> (8 * i));
  out->append(buf, kHeaderBytes);
}

void SetRequestId(std::string* frame, uint64_t request_id) {
  for (int i = 0; i < 8; i++) (*frame)[8 + i] = static_cast<char>(request_id >> (8 * i));
}

namespace {

// One kWrite's Batch, its operations copied (const) or moved (non-const).
template <typename Ops>
Batch MakeBatch(const std::string& table, const std::string& caller, const std::string& client_request_id,
                Ops& ops) {
  Batch b(table);
  b.SetCaller(caller);
  b.SetClientRequestId(client_request_id);
  b.Reserve(ops.size());
  for (auto& op : ops) {
    if constexpr (std::is_const_v<Ops>) {
      b.Add(op);
    } else {
      b.Add(std::move(op));
    }
  }
  return b;
}

}  // namespace

Batch Request::ToBatch() const { return MakeBatch(table, caller, client_request_id, ops); }

Batch Request::TakeBatch() {
  Batch b = MakeBatch(table, caller, client_request_id, ops);
  ops.clear();
  return b;
}

std::vector<Batch> Request::ToBatches() const {
  std::vector<Batch> out;
  out.reserve(writes.size());
  for (const WriteItem& item : writes) out.push_back(MakeBatch(item.table, caller, item.client_request_id, item.ops));
  return out;
}

std::vector<Batch> Request::TakeBatches() {
  std::vector<Batch> out;
  out.reserve(writes.size());
  for (WriteItem& item : writes) out.push_back(MakeBatch(item.table, caller, item.client_request_id, item.ops));
  writes.clear();
  return out;
}

namespace {

Status Utf8Field(std::string_view field, std::string_view s) {
  if (IsValidUtf8(s)) return Status::OK();
  return Invalid("'" + std::string(field) + "' is not valid UTF-8");
}

// Every string of a request that is not entity data must be UTF-8 (the
// engine checks keys, names and values itself, with their own codes), so
// nothing the server logs, echoes or records carries bytes a reader cannot
// decode. The caller is checked in full here too: it is recorded in the
// change log.
Status CheckRequestText(const Request& q) {
  ST_RETURN_IF_ERROR(ValidateCaller(q.caller));
  if (!q.client_request_id.empty()) ST_RETURN_IF_ERROR(ValidateClientRequestId(q.client_request_id));
  for (const auto& item : q.writes) {
    if (!item.client_request_id.empty()) ST_RETURN_IF_ERROR(ValidateClientRequestId(item.client_request_id));
  }
  ST_RETURN_IF_ERROR(Utf8Field("table", q.table));
  ST_RETURN_IF_ERROR(Utf8Field("pk", q.pk));
  ST_RETURN_IF_ERROR(Utf8Field("rk", q.rk));
  ST_RETURN_IF_ERROR(Utf8Field("filter", q.filter));
  ST_RETURN_IF_ERROR(Utf8Field("target", q.target));
  ST_RETURN_IF_ERROR(Utf8Field("derived", q.derived));
  for (const auto& s : q.select) ST_RETURN_IF_ERROR(Utf8Field("select", s));
  for (const auto& s : q.rks) ST_RETURN_IF_ERROR(Utf8Field("rks", s));
  if (q.next_pk) ST_RETURN_IF_ERROR(Utf8Field("npk", *q.next_pk));
  if (q.next_rk) ST_RETURN_IF_ERROR(Utf8Field("nrk", *q.next_rk));
  if (q.next_table) ST_RETURN_IF_ERROR(Utf8Field("next", *q.next_table));
  for (const auto& op : q.encoded_ops()) ST_RETURN_IF_ERROR(Utf8Field("ifMatch", op.if_match));
  for (const auto& item : q.writes) {
    ST_RETURN_IF_ERROR(Utf8Field("table", item.table));
    for (const auto& op : item.encoded_ops()) ST_RETURN_IF_ERROR(Utf8Field("ifMatch", op.if_match));
  }
  return Status::OK();
}

}  // namespace

Status DecodeRequest(std::string_view frame, Request* q) {
  Header h;
  if (!ParseHeader(frame, &h)) {
    return Invalid("frame shorter than the 16-byte header");
  }
  q->id = h.request_id;
  if (h.version != kVersion) {
    return Invalid("unsupported protocol version " + std::to_string(h.version) +
                   "; this server speaks version " + std::to_string(kVersion));
  }
  if (h.op < 1 || h.op > kMaxOp) return Invalid("unknown operation " + std::to_string(h.op));
  q->op = static_cast<Op>(h.op);
  if (h.status != 0) return Invalid("a request must have status 0 in its header");
  msgpack::Reader r(frame.substr(kHeaderBytes));
  uint32_t n;
  if (!r.MapHeader(&n)) return Invalid("the request body must be a MessagePack map");
  // A known field given twice is refused, as in an operation or an entity:
  // taking the last one silently would let a client's bug (or a proxy that
  // appends a field) change what the request does, a `table` or `pk` above
  // all. A nil counts as given: a field is either absent or said once.
  uint32_t seen = 0;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Invalid("request field names must be strings");
    const RequestField field = ClassifyRequestField(key);
    const uint32_t bit =
        field == RequestField::kUnknown ? 0 : uint32_t{1} << static_cast<uint32_t>(field);
    if ((seen & bit) != 0) return Invalid("request field '" + std::string(key) + "' repeated");
    seen |= bit;
    ST_RETURN_IF_ERROR(ReadField(r, field, key, q));
  }
  if (!r.empty()) return Invalid("trailing bytes after the request body");
  switch (q->op) {
    case Op::kCreateTable: case Op::kDeleteTable: case Op::kWrite: case Op::kQuery:
    case Op::kSetTablePolicies: case Op::kGetTablePolicies:
      if (q->table.empty()) return Invalid(std::string(OpName(q->op)) + " needs 'table'");
      break;
    case Op::kGet:
      if (q->table.empty() || !q->has_pk || !q->has_rk)
        return Invalid("Get needs 'table', 'pk' and 'rk'");
      break;
    case Op::kWriteMany:
      if (q->writes.empty()) return Invalid("WriteMany needs 'writes' (1 to 1000 batches)");
      break;
    case Op::kRequestArchive:
      if (q->table.empty() || !q->has_pk || q->target.empty() || q->rks.empty()) {
        return Invalid("RequestArchive needs 'table', 'pk', 'rks' and 'target'");
      }
      break;
    case Op::kAdvanceWatermarks:
      if (q->watermarks.empty()) return Invalid("AdvanceWatermarks needs a non-empty 'watermarks'");
      break;
    case Op::kIssueToken:
      if (!q->issue) return Invalid("IssueToken needs 'spec' (the fields of the token wanted)");
      break;
    case Op::kForgetWatermarks:
      if (q->derived.empty())
        return Invalid("ForgetWatermarks needs 'derived' (the table to forget)");
      break;
    default:
      break;
  }
  if (q->op == Op::kQuery && (q->next_pk.has_value() != q->next_rk.has_value())) {
    return Invalid("a continuation needs both 'npk' and 'nrk'");
  }
  return CheckRequestText(*q);
}

namespace {

// A little over what the operations encode to: their keys and each
// property's name and bytes, with room for the framing. Reserved before
// encoding, so a write's frame is allocated once instead of doubling its
// way up (seven allocations and copies for a 1 KiB entity; the client's
// largest cost per insert after the entity itself, callgrind).
size_t ApproxOpsBytes(const std::vector<Operation>& ops) {
  size_t n = 0;
  for (const Operation& op : ops) {
    n += 48 + op.entity.partition_key.size() + op.entity.row_key.size() + op.if_match.size();
    for (const Property& p : op.entity.properties) n += 24 + p.name.size() + p.value.bytes().size();
  }
  return n;
}

size_t ApproxRequestBytes(const Request& q) {
  size_t n = 256 + q.table.size() + q.caller.size() + q.token.size() + q.client_request_id.size() +
             q.filter.size() + ApproxOpsBytes(q.encoded_ops());
  for (const WriteItem& w : q.writes)
    n += 64 + w.table.size() + w.client_request_id.size() + ApproxOpsBytes(w.encoded_ops());
  return n;
}

}  // namespace

void EncodeRequest(const Request& q, std::string* out) {
  out->reserve(out->size() + ApproxRequestBytes(q));
  AppendHeader(out, Header{kVersion, static_cast<uint8_t>(q.op), 0, q.id});
  msgpack::Writer w(out);
  uint32_t fields = 0;
  // Count first, so the map header is exact.
  const bool t = !q.table.empty(), c = !q.caller.empty();
  // Each field is written when its operation needs it or when it is set, so
  // what DecodeRequest() read always encodes back the same.
  const bool w_ops = q.op == Op::kWrite || !q.encoded_ops().empty();
  const bool get = q.op == Op::kGet || q.op == Op::kRequestArchive || !q.pk.empty() || !q.rk.empty();
  const bool archive = q.op == Op::kRequestArchive || !q.rks.empty() || !q.target.empty();
  const bool sel = !q.select.empty(), filt = !q.filter.empty();
  const bool changes = q.op == Op::kReadChanges;
  const bool many = q.op == Op::kWriteMany || !q.writes.empty();
  const bool crid = !q.client_request_id.empty();
  fields += many + q.no_content + crid;
  const bool wms = q.op == Op::kAdvanceWatermarks || !q.watermarks.empty();
  const bool der = !q.derived.empty(), after = !q.after.empty();
  const bool tok = !q.token.empty(), pol = q.op == Op::kSetTablePolicies || !q.policies.empty();
  const bool spec = q.issue.has_value();
  fields += tok + pol + spec;
  fields += t + c + w_ops + (get ? 2 : 0) + sel + filt + q.top.has_value() +
            q.next_pk.has_value() + q.next_rk.has_value() + q.next_table.has_value() +
            (changes ? 3 : 0) + q.raw_changes + (archive ? 2 : 0) + wms + der + after + q.wait_ms.has_value();
  w.MapHeader(fields);
  if (tok) WriteString(w, "token", q.token);
  if (pol) {
    w.Str("policies");
    WritePolicies(w, q.policies);
  }
  if (spec) {
    w.Str("spec");
    WriteTokenSpec(w, *q.issue);
  }
  if (wms) {
    w.Str("watermarks");
    WriteWatermarkEntries(w, q.watermarks);
  }
  if (der) WriteString(w, "derived", q.derived);
  if (after) {
    w.Str("after");
    WriteAfterTokens(w, q.after);
  }
  if (q.wait_ms) {
    w.Str("waitMs");
    w.Uint(*q.wait_ms);
  }
  if (t) WriteString(w, "table", q.table);
  if (c) WriteString(w, "caller", q.caller);
  if (crid) WriteString(w, "clientRequestId", q.client_request_id);
  if (get) {
    WriteString(w, "pk", q.pk);
    WriteString(w, "rk", q.rk);
  }
  if (archive) {
    w.Str("rks");
    w.ArrayHeader(static_cast<uint32_t>(q.rks.size()));
    for (const auto& rk : q.rks) w.Str(rk);
    WriteString(w, "target", q.target);
  }
  if (sel) {
    w.Str("select");
    w.ArrayHeader(static_cast<uint32_t>(q.select.size()));
    for (const auto& s : q.select) w.Str(s);
  }
  if (filt) WriteString(w, "filter", q.filter);
  if (q.top) {
    w.Str("top");
    w.Int(*q.top);
  }
  if (q.next_pk) WriteString(w, "npk", *q.next_pk);
  if (q.next_rk) WriteString(w, "nrk", *q.next_rk);
  if (q.next_table) WriteString(w, "next", *q.next_table);
  if (changes) {
    w.Str("from");
    w.Uint(q.from_lsn);
    w.Str("max");
    w.Uint(q.max_records);
    w.Str("maxBytes");
    w.Uint(q.max_bytes);
  }
  if (q.raw_changes) {
    w.Str("raw");
    w.Bool(true);
  }
  if (w_ops) {
    w.Str("ops");
    WriteOps(w, q.encoded_ops());
  }
  if (q.no_content) {
    w.Str("noContent");
    w.Bool(true);
  }
  if (many) {
    w.Str("writes");
    w.ArrayHeader(static_cast<uint32_t>(q.writes.size()));
    for (const WriteItem& item : q.writes) {
      w.MapHeader(item.client_request_id.empty() ? 2 : 3);
      WriteString(w, "table", item.table);
      if (!item.client_request_id.empty()) WriteString(w, "clientRequestId", item.client_request_id);
      w.Str("ops");
      WriteOps(w, item.encoded_ops());
    }
  }
}

namespace {

void WriteOps(msgpack::Writer& w, const std::vector<Operation>& ops) {
  w.ArrayHeader(static_cast<uint32_t>(ops.size()));
  for (const Operation& op : ops) {
    w.MapHeader(2 + (op.if_match.empty() ? 0 : 1) + (op.fence == 0 ? 0 : 1));
    WriteString(w, "op", OpKindName(op.kind));
    w.Str("entity");
    WriteEntity(w, op.entity, false);
    if (!op.if_match.empty()) WriteString(w, "ifMatch", op.if_match);
    if (op.fence != 0) {
      w.Str("fence");
      w.Uint(op.fence);
    }
  }
}

}  // namespace

}  // namespace sidetable::wire
