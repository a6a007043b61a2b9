// Entities, batches and change records as JSON: Azure's JSON entity format
// with "@odata.type" annotations (docs/cli.md is the specification).
//
//   {"PartitionKey":"Sales","RowKey":"1","Name":"Ana","Age":34,
//    "Salary":"5400000000","Salary@odata.type":"Edm.Int64", ...}
//
// Parsing keeps every Edm type exact; writing annotates the types plain JSON
// cannot carry (Int64, DateTime, Guid, Binary, non-finite Double) so that
// what is written parses back to the same entity. Errors are InvalidInput
// Statuses whose message names the property (and, in a batch, the operation).
//
// Thread safety: stateless functions over values.
#pragma once

#include <string>
#include <string_view>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"
#include "events/json_writer.h"

namespace sidetable::json {

// One entity from a JSON object. PartitionKey and RowKey are required
// strings; "Timestamp" is ignored; "odata.etag" (a string) goes to
// Entity::etag; other "odata.*" keys are ignored.
Result<Entity> ParseEntityJson(std::string_view json);

// An EGT from a JSON array of {"op", "entity", "ifMatch"?}. For Update,
// Merge and Delete without "ifMatch", the entity's "odata.etag" is the
// condition if present, else "*".
Result<Batch> ParseBatchJson(std::string_view json, const std::string& table);

// The entity as one JSON object: "odata.etag" and "Timestamp" when set, then
// the keys and the properties in order.
void WriteEntityJson(const Entity& e, JsonWriter* w);
std::string EntityToJson(const Entity& e);

// One property as WriteEntityJson writes it: `key`, the value and, when
// NeedsTypeAnnotation(v), "<key>@odata.type" with the type's name.
void WriteValueJson(const Value& v, std::string_view key, JsonWriter* w);
// Whether the written value carries an "@odata.type" annotation: Int64,
// DateTime, Guid, Binary and non-finite Doubles (plain JSON cannot carry
// them); String, Boolean, Int32 and finite Doubles are not annotated.
bool NeedsTypeAnnotation(const Value& v);
// The value alone (a JSON string, number or boolean, exactly the text
// WriteValueJson writes after the key) appended to *out: for writers that
// build JSON text directly, like the audit.
void AppendValueJson(const Value& v, std::string* out);

// {"lsn","timestamp","etags":[...]}; `single` writes "etag" (the only one) instead.
std::string WriteResultToJson(const WriteResult& r, bool single);

// {"lsn","kind","time","table","tableId","pk","caller","clientRequestId"?,"ops":[{"rk","op",
// "version","etag","before"?,"after"?}]} (before/after as entity objects).
std::string ChangeRecordToJson(const ChangeRecord& r);
// The same fields, written into an object the caller has opened (the Kafka
// change event adds its envelope fields around them).
void WriteChangeRecordFields(const ChangeRecord& r, JsonWriter* w);

}  // namespace sidetable::json
