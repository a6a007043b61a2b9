// Entity, WriteResult and ChangeRecord → JSON.
#include <charconv>
#include <cmath>

#include "events/base64.h"
#include "events/entity_json.h"

namespace sidetable::json {
namespace {

// The one mapping from Edm values to JSON, shared by the JsonWriter and the
// plain-string paths: `sink` has String, Bool, Int and Double like JsonWriter.
template <typename Sink>
void EmitValue(const Value& v, Sink& sink) {
  switch (v.type()) {
    case EdmType::kString: sink.String(v.bytes()); return;
    case EdmType::kBoolean: sink.Bool(v.as_bool()); return;
    case EdmType::kInt32: sink.Int(v.as_int32()); return;
    case EdmType::kDouble: {
      const double d = v.as_double();
      if (std::isfinite(d)) {
        sink.Double(d);
      } else {
        sink.String(std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity"));
      }
      return;
    }
    case EdmType::kInt64: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof buf, v.as_int64());
      sink.String(std::string_view(buf, static_cast<size_t>(res.ptr - buf)));
      return;
    }
    case EdmType::kDateTime: sink.String(FormatDateTime(v.as_ticks())); return;
    case EdmType::kGuid: sink.String(FormatGuid(v.as_guid())); return;
    case EdmType::kBinary: sink.String(Base64Encode(v.bytes())); return;
  }
}

// Appends to a string what JsonWriter would write for the value.
struct StringSink {
  std::string* out;
  void String(std::string_view s) { AppendJsonString(s, out); }
  void Bool(bool b) { out->append(b ? "true" : "false"); }
  void Int(int64_t i) {
    char buf[24];
    auto res = std::to_chars(buf, buf + sizeof buf, i);
    out->append(buf, res.ptr);
  }
  void Double(double d) { out->append(FormatDouble(d)); }
};

}  // namespace

bool NeedsTypeAnnotation(const Value& v) {
  switch (v.type()) {
    case EdmType::kString:
    case EdmType::kBoolean:
    case EdmType::kInt32: return false;
    case EdmType::kDouble: return !std::isfinite(v.as_double());
    default: return true;
  }
}

void AppendValueJson(const Value& v, std::string* out) {
  StringSink sink{out};
  EmitValue(v, sink);
}

void WriteValueJson(const Value& v, std::string_view key, JsonWriter* w) {
  w->Key(key);
  EmitValue(v, *w);
  if (NeedsTypeAnnotation(v)) {
    std::string annotation;
    annotation.reserve(key.size() + 11);
    annotation.append(key).append("@odata.type");
    w->Key(annotation).String(EdmTypeName(v.type()));
  }
}

void WriteEntityJson(const Entity& e, JsonWriter* w) {
  w->BeginObject();
  if (!e.etag.empty()) w->Key("odata.etag").String(e.etag);
  w->Key("PartitionKey").String(e.partition_key);
  w->Key("RowKey").String(e.row_key);
  if (e.timestamp != 0) w->Key("Timestamp").String(FormatDateTime(e.timestamp));
  for (const auto& p : e.properties) WriteValueJson(p.value, p.name, w);
  w->EndObject();
}

std::string EntityToJson(const Entity& e) {
  JsonWriter w;
  WriteEntityJson(e, &w);
  return w.Take();
}

std::string WriteResultToJson(const WriteResult& r, bool single) {
  JsonWriter w;
  w.BeginObject();
  w.Key("lsn").UInt(r.lsn);
  w.Key("timestamp").String(FormatDateTime(r.timestamp));
  if (single) {
    if (!r.etags.empty() && !r.etags[0].empty()) w.Key("etag").String(r.etags[0]);
  } else {
    w.Key("etags").BeginArray();
    for (const auto& etag : r.etags) w.String(etag);
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

void WriteChangeRecordFields(const ChangeRecord& r, JsonWriter* out) {
  JsonWriter& w = *out;
  w.Key("lsn").UInt(r.lsn);
  w.Key("kind").String(ChangeKindName(r.kind));
  w.Key("time").String(FormatDateTime(r.commit_time));
  w.Key("table").String(r.table);
  w.Key("tableId").UInt(r.table_id);
  if (r.kind == ChangeKind::kEntities || r.kind == ChangeKind::kArchiveRequested) {
    w.Key("pk").String(r.partition_key);
  }
  if (r.kind == ChangeKind::kArchiveRequested) w.Key("targetTable").String(r.target_table);
  w.Key("caller").String(r.caller);
  // Optional field (schema 1 readers skip unknown fields): written only
  // when the writer gave one.
  if (!r.client_request_id.empty()) w.Key("clientRequestId").String(r.client_request_id);
  // Scale-out only (docs/scale-out.md): absent means 0, so an event of a
  // sidecar outside a cluster is byte-identical to before.
  if (r.epoch != 0) w.Key("epoch").UInt(r.epoch);
  w.Key("ops").BeginArray();
  for (const auto& op : r.ops) {
    w.BeginObject();
    w.Key("rk").String(op.row_key);
    w.Key("op").String(OpKindName(op.kind));
    w.Key("version").UInt(op.version);
    w.Key("etag").String(op.etag);
    if (op.before) {
      w.Key("before");
      WriteEntityJson(*op.before, &w);
    }
    if (op.after) {
      w.Key("after");
      WriteEntityJson(*op.after, &w);
    }
    w.EndObject();
  }
  w.EndArray();
}

std::string ChangeRecordToJson(const ChangeRecord& r) {
  JsonWriter w;
  w.BeginObject();
  WriteChangeRecordFields(r, &w);
  w.EndObject();
  return w.Take();
}

}  // namespace sidetable::json
