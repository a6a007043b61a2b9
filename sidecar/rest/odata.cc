#include "sidecar/rest/odata.h"

#include <simdjson.h>

#include <cmath>

#include "events/base64.h"
#include "events/entity_json.h"
#include "events/entity_json_dom.h"
#include "events/json_writer.h"
#include "sidecar/rest/path.h"

namespace sidetable::sidecar::rest {
namespace {

Status InvalidOData(std::string m) { return Status(Code::kInvalidInput, std::move(m)); }

bool ContainsNoCase(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); i++) {
    size_t j = 0;
    while (j < needle.size() && std::tolower(static_cast<unsigned char>(hay[i + j])) == needle[j]) j++;
    if (j == needle.size()) return true;
  }
  return false;
}

void WriteProperty(json::JsonWriter& w, const Property& p, Metadata m) {
  const bool annotate =
      m != Metadata::kNone && (json::NeedsTypeAnnotation(p.value) ||
                               (m == Metadata::kFull && p.value.type() == EdmType::kDouble));
  if (annotate) {
    w.Key(p.name + "@odata.type").String(EdmTypeName(p.value.type()));
  }
  w.Key(p.name);
  // JsonWriter has no raw-value call: write the value through its typed calls.
  switch (p.value.type()) {
    case EdmType::kString: w.String(p.value.bytes()); break;
    case EdmType::kBoolean: w.Bool(p.value.as_bool()); break;
    case EdmType::kInt32: w.Int(p.value.as_int32()); break;
    case EdmType::kInt64: w.String(std::to_string(p.value.as_int64())); break;
    case EdmType::kDateTime: w.String(FormatDateTime(p.value.as_ticks())); break;
    case EdmType::kGuid: w.String(FormatGuid(p.value.as_guid())); break;
    case EdmType::kBinary: w.String(json::Base64Encode(p.value.bytes())); break;
    case EdmType::kDouble: {
      const double d = p.value.as_double();
      if (std::isnan(d)) w.String("NaN");
      else if (std::isinf(d)) w.String(d > 0 ? "Infinity" : "-Infinity");
      else w.Double(d);
      break;
    }
  }
}

std::string EntityLink(const Links& links, const Entity& e) {
  return links.table + "(PartitionKey=" + QuoteKey(e.partition_key) + ",RowKey=" + QuoteKey(e.row_key) + ")";
}

bool Selected(const std::vector<std::string>* select, std::string_view name) {
  if (select == nullptr || select->empty()) return true;
  for (const auto& s : *select) {
    if (s == name) return true;
  }
  return false;
}

void WriteEntityFields(json::JsonWriter& w, const Entity& e, Metadata m, const Links& links, bool element,
                       const std::vector<std::string>* select) {
  if (m != Metadata::kNone) {
    if (element) w.Key("odata.metadata").String(links.base + "/$metadata#" + links.table + "/@Element");
    if (m == Metadata::kFull) {
      w.Key("odata.type").String(links.base.substr(links.base.rfind('/') + 1) + "." + links.table);
      w.Key("odata.id").String(links.base + "/" + EntityLink(links, e));
    }
    if (!e.etag.empty()) w.Key("odata.etag").String(e.etag);
    if (m == Metadata::kFull) w.Key("odata.editLink").String(EntityLink(links, e));
  }
  // A $select without the keys leaves them out, as the service does.
  if (Selected(select, "PartitionKey")) w.Key("PartitionKey").String(e.partition_key);
  if (Selected(select, "RowKey")) w.Key("RowKey").String(e.row_key);
  if (e.timestamp != 0 && Selected(select, "Timestamp")) {
    if (m == Metadata::kFull) w.Key("Timestamp@odata.type").String("Edm.DateTime");
    w.Key("Timestamp").String(FormatDateTime(e.timestamp));
  }
  for (const auto& p : e.properties) WriteProperty(w, p, m);
}

}  // namespace

std::optional<Metadata> ParseAccept(std::string_view accept) {
  if (accept.empty()) return Metadata::kMinimal;
  if (ContainsNoCase(accept, "nometadata")) return Metadata::kNone;
  if (ContainsNoCase(accept, "fullmetadata")) return Metadata::kFull;
  if (ContainsNoCase(accept, "minimalmetadata")) return Metadata::kMinimal;
  if (ContainsNoCase(accept, "application/json") || ContainsNoCase(accept, "*/*")) return Metadata::kMinimal;
  return std::nullopt;  // application/atom+xml, application/xml, ...
}

std::string ContentType(Metadata m) {
  switch (m) {
    case Metadata::kNone: return "application/json;odata=nometadata;streaming=true;charset=utf-8";
    case Metadata::kFull: return "application/json;odata=fullmetadata;streaming=true;charset=utf-8";
    case Metadata::kMinimal: break;
  }
  return "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";
}

void AppendEntity(const Entity& e, Metadata m, const Links& links, bool element, std::string* out,
                  const std::vector<std::string>* select) {
  json::JsonWriter w;
  w.BeginObject();
  WriteEntityFields(w, e, m, links, element, select);
  w.EndObject();
  out->append(w.str());
}

std::string EntityPage(const std::vector<Entity>& entities, Metadata m, const Links& links,
                       const std::vector<std::string>* select) {
  json::JsonWriter w;
  w.BeginObject();
  if (m != Metadata::kNone) w.Key("odata.metadata").String(links.base + "/$metadata#" + links.table);
  w.Key("value").BeginArray();
  for (const auto& e : entities) {
    w.BeginObject();
    WriteEntityFields(w, e, m, links, false, select);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

static void WriteTableFields(json::JsonWriter& w, std::string_view name, Metadata m, const Links& links,
                             bool element) {
  if (m != Metadata::kNone && element) w.Key("odata.metadata").String(links.base + "/$metadata#Tables/@Element");
  if (m == Metadata::kFull) {
    const std::string link = "Tables(" + QuoteKey(name) + ")";
    w.Key("odata.type").String(links.base.substr(links.base.rfind('/') + 1) + ".Tables");
    w.Key("odata.id").String(links.base + "/" + link);
    w.Key("odata.editLink").String(link);
  }
  w.Key("TableName").String(name);
}

void AppendTable(std::string_view name, Metadata m, const Links& links, bool element, std::string* out) {
  json::JsonWriter w;
  w.BeginObject();
  WriteTableFields(w, name, m, links, element);
  w.EndObject();
  out->append(w.str());
}

std::string TablePage(const std::vector<std::string>& tables, Metadata m, const Links& links) {
  json::JsonWriter w;
  w.BeginObject();
  if (m != Metadata::kNone) w.Key("odata.metadata").String(links.base + "/$metadata#Tables");
  w.Key("value").BeginArray();
  for (const auto& t : tables) {
    w.BeginObject();
    WriteTableFields(w, t, m, links, false);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

Result<Entity> ParseEntityBody(std::string_view body, const std::string* pk, const std::string* rk) {
  // One parser per thread: simdjson reuses its buffers across documents.
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string text(body);
  simdjson::dom::element doc;
  if (auto error = parser.parse(text).get(doc); error != simdjson::SUCCESS) {
    return InvalidOData(std::string("the body is not valid JSON: ") +
                        simdjson::error_message(error));
  }
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS)
    return InvalidOData("the body must be a JSON object (an entity)");
  Entity e;
  // The URL's keys stand in for absent body keys; EntityFromJsonElement
  // needs both, so an object without them is read with placeholders.
  const bool body_pk = obj["PartitionKey"].error() == simdjson::SUCCESS;
  const bool body_rk = obj["RowKey"].error() == simdjson::SUCCESS;
  if ((!body_pk || !body_rk) && pk != nullptr && rk != nullptr) {
    const size_t brace = body.find('{');
    std::string patched = "{";
    if (!body_pk) patched += "\"PartitionKey\":\"\",";
    if (!body_rk) patched += "\"RowKey\":\"\",";
    const std::string_view inner = body.substr(brace + 1);
    const size_t first = inner.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && inner[first] == '}') patched.pop_back();  // {} had no members
    patched.append(inner);
    simdjson::padded_string text2(patched);
    if (parser.parse(text2).get(doc) != simdjson::SUCCESS)
      return InvalidOData("the body is not valid JSON");
    ST_RETURN_IF_ERROR(json::EntityFromJsonElement(doc, &e, false));
  } else {
    ST_RETURN_IF_ERROR(json::EntityFromJsonElement(doc, &e, false));
  }
  if (pk != nullptr) e.partition_key = *pk;
  if (rk != nullptr) e.row_key = *rk;
  e.etag.clear();
  return e;
}

Result<std::string> ParseTableName(std::string_view body) {
  thread_local simdjson::dom::parser parser;
  simdjson::padded_string text(body);
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS)
    return InvalidOData("the body is not valid JSON");
  std::string_view name;
  if (doc["TableName"].get_string().get(name) != simdjson::SUCCESS) {
    return InvalidOData("the body must be {\"TableName\":\"<name>\"}");
  }
  return std::string(name);
}

std::string ErrorBody(std::string_view code, std::string_view message) {
  json::JsonWriter w;
  w.BeginObject().Key("odata.error").BeginObject();
  w.Key("code").String(code);
  w.Key("message").BeginObject().Key("lang").String("en-US").Key("value").String(message).EndObject();
  w.EndObject().EndObject();
  return w.Take();
}

}  // namespace sidetable::sidecar::rest
