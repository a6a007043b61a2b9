#include "events/event.h"

#include <simdjson.h>

#include <climits>
#include <cstring>

#include "events/entity_json.h"
#include "events/entity_json_dom.h"

namespace sidetable::events {
namespace {

using simdjson::dom::element;

Status Bad(const std::string& what) {
  return Status(Code::kInvalidInput, "change event: " + what);
}

// The fields of an event and of its operations are read in one pass over
// each object, in the order they come (element::operator[] would scan the
// object once per field). A repeated field keeps its first value, as that
// lookup did.
enum : uint32_t {
  kSchema = 1 << 0, kSource = 1 << 1, kLsn = 1 << 2, kKind = 1 << 3, kTime = 1 << 4,
  kTable = 1 << 5, kTableId = 1 << 6, kPk = 1 << 7, kCaller = 1 << 8, kRequestId = 1 << 9,
  kTarget = 1 << 10, kOps = 1 << 11, kEpoch = 1 << 12, kShard = 1 << 13,
};

// For a field named `name` not seen yet: marks it and returns true.
bool First(uint32_t* seen, uint32_t bit) {
  if (*seen & bit) return false;
  *seen |= bit;
  return true;
}

bool AssignString(element value, std::string* out) {
  std::string_view s;
  if (value.get_string().get(s) != simdjson::SUCCESS) return false;
  out->assign(s);
  return true;
}

Status DecodeOp(element el, ChangeOp* op) {
  simdjson::dom::object obj;
  if (el.get_object().get(obj) != simdjson::SUCCESS) return Bad("operation without \"rk\"");
  enum : uint32_t { kRk = 1, kOp = 2, kVersion = 4, kEtag = 8, kBefore = 16, kAfter = 32 };
  uint32_t seen = 0, ok = 0;
  element before, after;
  op->etag.clear();  // optional; the others are required
  for (auto field : obj) {
    const std::string_view key = field.key;
    if (key == "rk") {
      if (First(&seen, kRk) && AssignString(field.value, &op->row_key)) ok |= kRk;
    } else if (key == "op") {
      std::string_view kind;
      if (First(&seen, kOp) && field.value.get_string().get(kind) == simdjson::SUCCESS &&
          ParseOpKind(kind, &op->kind)) {
        ok |= kOp;
      }
    } else if (key == "version") {
      if (First(&seen, kVersion) && field.value.get_uint64().get(op->version) == simdjson::SUCCESS) ok |= kVersion;
    } else if (key == "etag") {
      if (First(&seen, kEtag)) AssignString(field.value, &op->etag);
    } else if (key == "before") {
      if (First(&seen, kBefore)) before = field.value;
    } else if (key == "after") {
      if (First(&seen, kAfter)) after = field.value;
    }
  }
  if (!(ok & kRk)) return Bad("operation without \"rk\"");
  if (!(ok & kOp)) return Bad("bad operation kind");
  if (!(ok & kVersion)) return Bad("operation without \"version\"");
  // Before, then after, as the images were always read; into the images a
  // reused operation already holds.
  if (seen & kBefore) {
    ST_RETURN_IF_ERROR(json::EntityFromJsonElement(
        before, op->before ? &*op->before : &op->before.emplace(), true));
  } else {
    op->before.reset();
  }
  if (seen & kAfter) {
    ST_RETURN_IF_ERROR(
        json::EntityFromJsonElement(after, op->after ? &*op->after : &op->after.emplace(), true));
  } else {
    op->after.reset();
  }
  return Status::OK();
}

// Clears what an event may leave out, keeping the strings' storage, so that
// decoding into a reused Event (EventDecoder's callers recycle them) gives
// what decoding into a fresh one does. Every field of Event and ChangeRecord
// is set here or by every successful decode (tests/tools/event_reuse_test.cc
// checks a reused decode against a fresh one, field by field, for each kind
// of event, and trips on a new field).
void ResetOptionalFields(Event* out) {
  ChangeRecord& r = out->record;
  r.lsn = 0;  // a claim has none
  r.kind = ChangeKind::kEntities;
  r.commit_time = 0;
  r.table.clear();
  r.table_id = 0;
  r.partition_key.clear();
  r.caller.clear();
  r.client_request_id.clear();
  r.target_table.clear();
  r.epoch = 0;
  r.shard = -1;
  r.service.clear();
  r.table_incarnation = 0;
}

Status DecodeDocument(element doc, Event* out) {
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return Bad("no \"schema\"");
  ResetOptionalFields(out);
  ChangeRecord& r = out->record;
  uint64_t schema = 0, table_id = 0;
  int64_t shard = -1;
  std::string_view kind, time;
  simdjson::dom::array ops;
  uint32_t seen = 0, ok = 0;
  for (auto field : obj) {
    const std::string_view key = field.key;
    const element v = field.value;
    bool good = false;
    uint32_t bit = 0;
    if (key == "schema") {
      bit = kSchema;
      good = First(&seen, bit) && v.get_uint64().get(schema) == simdjson::SUCCESS;
    } else if (key == "source") {
      bit = kSource;
      good = First(&seen, bit) && AssignString(v, &out->source);
    } else if (key == "lsn") {
      bit = kLsn;
      good = First(&seen, bit) && v.get_uint64().get(r.lsn) == simdjson::SUCCESS;
    } else if (key == "kind") {
      bit = kKind;
      good = First(&seen, bit) && v.get_string().get(kind) == simdjson::SUCCESS;
    } else if (key == "time") {
      bit = kTime;
      good = First(&seen, bit) && v.get_string().get(time) == simdjson::SUCCESS;
    } else if (key == "table") {
      bit = kTable;
      good = First(&seen, bit) && AssignString(v, &r.table);
    } else if (key == "tableId") {
      bit = kTableId;
      good = First(&seen, bit) && v.get_uint64().get(table_id) == simdjson::SUCCESS;
    } else if (key == "pk") {
      bit = kPk;
      good = First(&seen, bit) && AssignString(v, &r.partition_key);
    } else if (key == "caller") {
      bit = kCaller;
      good = First(&seen, bit) && AssignString(v, &r.caller);
    } else if (key == "clientRequestId") {
      bit = kRequestId;
      good = First(&seen, bit) && AssignString(v, &r.client_request_id);
    } else if (key == "targetTable") {
      bit = kTarget;
      good = First(&seen, bit) && AssignString(v, &r.target_table);
    } else if (key == "epoch") {
      bit = kEpoch;
      good = First(&seen, bit) && v.get_uint64().get(r.epoch) == simdjson::SUCCESS;
    } else if (key == "shard") {
      bit = kShard;
      good = First(&seen, bit) && v.get_int64().get(shard) == simdjson::SUCCESS;
    } else if (key == "service") {
      // ShardClaimed only (optional: claims before it had none).
      good = AssignString(v, &r.service);
    } else if (key == "ops") {
      bit = kOps;
      good = First(&seen, bit) && v.get_array().get(ops) == simdjson::SUCCESS;
    }
    if (good) ok |= bit;
  }
  if (!(ok & kSchema)) return Bad("no \"schema\"");
  if (schema != kEventSchema) return Bad("unsupported schema " + std::to_string(schema));
  out->schema = static_cast<int>(schema);
  if ((seen & kEpoch) && !(ok & kEpoch)) return Bad("\"epoch\" is not an unsigned integer");
  if ((ok & kKind) && kind == ChangeKindName(ChangeKind::kShardClaimed)) {
    // A claim is no change of data: no LSN, table or operations. Nor a
    // time: the sidecar writes its claims without one, and requiring it
    // made every reader outside the sidecar (workers, replay) take each
    // real claim for an undecodable message and fence nothing (before
    // session 42). A time that is there must still parse.
    constexpr uint32_t kClaim = kSource | kEpoch | kShard;
    if ((ok & kClaim) != kClaim || ((seen & kTime) && !(ok & kTime))) {
      if (!(ok & kShard)) return Bad("ShardClaimed without an integer \"shard\"");
      if (!(ok & kEpoch)) return Bad("ShardClaimed without \"epoch\"");
      return Bad("missing or mistyped envelope field");
    }
    if (shard < 0 || shard > INT32_MAX) return Bad("ShardClaimed with shard " + std::to_string(shard));
    // Epoch 0 means "outside a cluster": a claim of it would fence nothing.
    if (r.epoch == 0) return Bad("ShardClaimed with epoch 0");
    std::optional<int64_t> ticks = 0;
    if (ok & kTime) ticks = ParseDateTime(time);
    if (!ticks) return Bad("bad time");
    r.kind = ChangeKind::kShardClaimed;
    r.shard = static_cast<int32_t>(shard);
    r.commit_time = *ticks;
    r.caller = out->source;  // who claimed, for a reader holding only the record
    r.ops.clear();
    return Status::OK();
  }
  constexpr uint32_t kEnvelope = kSource | kLsn | kKind | kTime | kTable | kTableId;
  if ((ok & kEnvelope) != kEnvelope) return Bad("missing or mistyped envelope field");
  if (!ParseChangeKind(kind, &r.kind)) return Bad("unknown kind " + std::string(kind));
  auto ticks = ParseDateTime(time);
  if (!ticks) return Bad("bad time");
  r.commit_time = *ticks;
  r.table_id = static_cast<uint32_t>(table_id);
  if (!(ok & kOps)) return Bad("no \"ops\" array");
  // Over the operations a reused record holds (their strings and images).
  r.ops.resize(ops.size());
  size_t i = 0;
  for (element op : ops) ST_RETURN_IF_ERROR(DecodeOp(op, &r.ops[i++]));
  return Status::OK();
}

}  // namespace

std::string EncodeEvent(const ChangeRecord& record, const std::string& source) {
  json::JsonWriter w;
  w.BeginObject();
  if (record.kind == ChangeKind::kShardClaimed) {
    w.Key("schema").Int(kEventSchema);
    w.Key("kind").String(ChangeKindName(record.kind));
    w.Key("source").String(source);
    w.Key("epoch").UInt(record.epoch);
    w.Key("shard").Int(record.shard);
    if (!record.service.empty()) w.Key("service").String(record.service);
    w.Key("time").String(FormatDateTime(record.commit_time));
    w.EndObject();
    return w.Take();
  }
  w.Key("schema").Int(kEventSchema);
  w.Key("source").String(source);
  json::WriteChangeRecordFields(record, &w);
  w.EndObject();
  return w.Take();
}

Status DecodeEvent(std::string_view text, Event* out) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return Bad("not valid JSON");
  return DecodeDocument(doc, out);
}

struct EventDecoder::Impl {
  simdjson::dom::parser parser;
  // The input copied with simdjson's padding, grown as needed, never shrunk.
  std::string buffer;
};

EventDecoder::EventDecoder() : impl_(std::make_unique<Impl>()) {}
EventDecoder::~EventDecoder() = default;

Status EventDecoder::Decode(std::string_view text, Event* out) {
  std::string& buf = impl_->buffer;
  if (buf.size() < text.size() + simdjson::SIMDJSON_PADDING) {
    buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
  }
  std::memcpy(buf.data(), text.data(), text.size());
  std::memset(buf.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);  // as padded_string does
  element doc;
  if (impl_->parser.parse(buf.data(), text.size(), false).get(doc) != simdjson::SUCCESS) {
    return Bad("not valid JSON");
  }
  return DecodeDocument(doc, out);
}

}  // namespace sidetable::events
