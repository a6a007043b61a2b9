#include "events/event.h"

#include <simdjson.h>

#include <cstring>

#include "events/entity_json.h"
#include "events/entity_json_dom.h"

namespace sidetable::events {
namespace {

using simdjson::dom::element;

Status Bad(const std::string& what) {
  return Status(Code::kInvalidInput, "change event: " + what);
}

bool GetString(element obj, const char* key, std::string* out) {
  std::string_view s;
  if (obj[key].get_string().get(s) != simdjson::SUCCESS) return false;
  out->assign(s);
  return true;
}

bool GetUint(element obj, const char* key, uint64_t* out) {
  return obj[key].get_uint64().get(*out) == simdjson::SUCCESS;
}

Status DecodeOp(element el, ChangeOp* op) {
  std::string kind;
  if (!GetString(el, "rk", &op->row_key)) return Bad("operation without \"rk\"");
  if (!GetString(el, "op", &kind) || !ParseOpKind(kind, &op->kind)) return Bad("bad operation kind");
  if (!GetUint(el, "version", &op->version)) return Bad("operation without \"version\"");
  GetString(el, "etag", &op->etag);
  for (const char* image : {"before", "after"}) {
    element e;
    if (el[image].get(e) != simdjson::SUCCESS) continue;
    Entity entity;
    ST_RETURN_IF_ERROR(json::EntityFromJsonElement(e, &entity, true));
    (std::string_view(image) == "before" ? op->before : op->after) = std::move(entity);
  }
  return Status::OK();
}

Status DecodeDocument(element doc, Event* out) {
  uint64_t schema = 0;
  if (!GetUint(doc, "schema", &schema)) return Bad("no \"schema\"");
  if (schema != kEventSchema) return Bad("unsupported schema " + std::to_string(schema));
  out->schema = static_cast<int>(schema);
  ChangeRecord& r = out->record;
  std::string kind, time;
  uint64_t table_id = 0;
  if (!GetString(doc, "source", &out->source) || !GetUint(doc, "lsn", &r.lsn) ||
      !GetString(doc, "kind", &kind) || !GetString(doc, "time", &time) ||
      !GetString(doc, "table", &r.table) || !GetUint(doc, "tableId", &table_id)) {
    return Bad("missing or mistyped envelope field");
  }
  if (!ParseChangeKind(kind, &r.kind)) return Bad("unknown kind " + kind);
  auto ticks = ParseDateTime(time);
  if (!ticks) return Bad("bad time");
  r.commit_time = *ticks;
  r.table_id = static_cast<uint32_t>(table_id);
  GetString(doc, "pk", &r.partition_key);
  GetString(doc, "caller", &r.caller);
  GetString(doc, "clientRequestId", &r.client_request_id);
  GetString(doc, "targetTable", &r.target_table);
  simdjson::dom::array ops;
  if (doc["ops"].get_array().get(ops) != simdjson::SUCCESS) return Bad("no \"ops\" array");
  r.ops.clear();
  for (element op : ops) {
    ChangeOp o;
    ST_RETURN_IF_ERROR(DecodeOp(op, &o));
    r.ops.push_back(std::move(o));
  }
  return Status::OK();
}

}  // namespace

std::string EncodeEvent(const ChangeRecord& record, const std::string& source) {
  json::JsonWriter w;
  w.BeginObject();
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
