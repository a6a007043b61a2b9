// The Table service's OData JSON: entities and tables written at the three
// metadata levels, entities and table names read from request bodies, and
// the service's error body. Built on events/ (simdjson to read, JsonWriter
// to write): no DOM library on the request path.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::sidecar::rest {

enum class Metadata : uint8_t { kNone, kMinimal, kFull };

// From an Accept header: application/json;odata=nometadata|minimalmetadata|
// fullmetadata (minimal when absent or only application/json or */*).
// nullopt for a media type the gateway does not serve (Atom XML): 415.
std::optional<Metadata> ParseAccept(std::string_view accept);
// "application/json;odata=minimalmetadata;streaming=true;charset=utf-8", ...
std::string ContentType(Metadata m);

// Where the links of fullmetadata and odata.metadata point:
// "http://host:port/account".
struct Links {
  std::string base;   // http://127.0.0.1:10002/devstoreaccount1
  std::string table;  // for entities
};

// One entity as the service writes it (odata.etag, keys, Timestamp, then the
// properties with "@odata.type" annotations for Int64, DateTime, Guid and
// Binary, and for Double as well at fullmetadata). `element`: a single
// entity (Get, Insert) carries odata.metadata itself.
// `select` (null or empty: everything): the $select the entity was read
// with; the keys and Timestamp are written only when selected.
void AppendEntity(const Entity& e, Metadata m, const Links& links, bool element, std::string* out,
                  const std::vector<std::string>* select = nullptr);
// {"odata.metadata":...,"value":[...]} for a query page.
std::string EntityPage(const std::vector<Entity>& entities, Metadata m, const Links& links,
                       const std::vector<std::string>* select = nullptr);

// A table as the service writes it; `element` as above.
void AppendTable(std::string_view name, Metadata m, const Links& links, bool element, std::string* out);
std::string TablePage(const std::vector<std::string>& tables, Metadata m, const Links& links);

// An entity from a request body. The URL's keys (when given) win over the
// body's (the SDKs send both); without URL keys the body must carry them.
// "odata.*" keys and Timestamp are ignored. InvalidInput naming the
// property otherwise.
Result<Entity> ParseEntityBody(std::string_view body, const std::string* pk, const std::string* rk);
// {"TableName":"name"} from a Create Table body.
Result<std::string> ParseTableName(std::string_view body);

// {"odata.error":{"code":..,"message":{"lang":"en-US","value":..}}}
std::string ErrorBody(std::string_view code, std::string_view message);

}  // namespace sidetable::sidecar::rest
