// Entity, WriteResult and ChangeRecord → JSON.
#include <cmath>

#include "sidecar/protocol/json/base64.h"
#include "sidecar/protocol/json/entity_json.h"

namespace sidetable::json {
namespace {

void Annotate(JsonWriter* w, const std::string& name, EdmType type) {
  w->Key(name + "@odata.type").String(EdmTypeName(type));
}

void WriteProperty(const Property& p, JsonWriter* w) {
  const Value& v = p.value;
  w->Key(p.name);
  switch (v.type()) {
    case EdmType::kString: w->String(v.bytes()); return;
    case EdmType::kBoolean: w->Bool(v.as_bool()); return;
    case EdmType::kInt32: w->Int(v.as_int32()); return;
    case EdmType::kDouble: {
      const double d = v.as_double();
      if (std::isfinite(d)) {
        w->Double(d);
        return;
      }
      w->String(std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity"));
      break;
    }
    case EdmType::kInt64: w->String(std::to_string(v.as_int64())); break;
    case EdmType::kDateTime: w->String(FormatDateTime(v.as_ticks())); break;
    case EdmType::kGuid: w->String(FormatGuid(v.as_guid())); break;
    case EdmType::kBinary: w->String(Base64Encode(v.bytes())); break;
  }
  Annotate(w, p.name, v.type());
}

}  // namespace

void WriteEntityJson(const Entity& e, JsonWriter* w) {
  w->BeginObject();
  if (!e.etag.empty()) w->Key("odata.etag").String(e.etag);
  w->Key("PartitionKey").String(e.partition_key);
  w->Key("RowKey").String(e.row_key);
  if (e.timestamp != 0) w->Key("Timestamp").String(FormatDateTime(e.timestamp));
  for (const auto& p : e.properties) WriteProperty(p, w);
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
