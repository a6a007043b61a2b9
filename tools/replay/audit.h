// Audit: "who changed what, when" from a replay.
//
// One audit row per changed entity (per operation of a committed EGT): the
// commit time, LSN, caller, table, keys, the operation and the property-level
// difference between the entity before and after it. Table events and
// archive requests get a row each too.
//
// JSON lines (one object per row, each line ending in "\n"):
//   {"lsn":42,"time":"2026-11-30T10:00:00.1234567Z","caller":"hr-app",
//    "table":"Employees","pk":"Sales","rk":"000223","op":"Merge","etag":"W/\"42\"",
//    "changes":[{"property":"Salary","change":"modified",
//                "before":"50000","before@odata.type":"Edm.Int64",
//                "after":"55000","after@odata.type":"Edm.Int64"}]}
//   Values are written as Azure's JSON entity format writes them, with the
//   same "@odata.type" annotations, so every Edm type survives exactly
//   (json::WriteValueJson; NaN and the infinities as "NaN"/"Infinity"/
//   "-Infinity" annotated Edm.Double).
//   "change" is "added" (no "before"), "removed" (no "after") or "modified"
//   (a new value or a new type). "changes" is sorted by property name in
//   byte order (UTF-8 code points, not the UTF-16 order of keys); it is []
//   for an operation that changed no property.
//   "op" is the operation's name (Insert, Update, Merge, Delete,
//   InsertOrReplace, InsertOrMerge). "etag" is the ETag the operation
//   produced, left out when empty (deletes). "caller" is always present,
//   "" for writes without one.
//   Table events: {"lsn","time","caller","table","op":"TableCreated"|
//   "TableDeleted"}: no "pk", "rk", "etag" or "changes".
//   Archive requests: one row per RowKey, {"lsn","time","caller","table",
//   "pk","rk","op":"ArchiveRequested","target":<archive table>}: no "etag"
//   or "changes".
//
// CSV (RFC 4180: a header line first, every line ending in CRLF, a field
// quoted when it holds a comma, a quote, CR or LF, with its quotes doubled):
// one line per changed property,
//   lsn,time,caller,table,pk,rk,op,property,change,before,after
//   before/after as Value::ToString() text with the type in a suffix
//   ("55000 (Edm.Int64)" for types other than String); an operation that
//   changed no property (or a table event, with empty pk and rk) gets one
//   line with empty property columns. An archive request gets one line per
//   RowKey with the archive table in the after column (property, change and
//   before empty).
//
// Rows follow the filter: a record must pass MatchesRecord, and each
// operation (entities, archive requests) MatchesRowKey.
//
// The summary counts rows by (table, op, caller), "op" as in the rows.
//
// Thread safety: values; use from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"
#include "tools/replay/filter.h"

namespace sidetable::replay {

struct PropertyChange {
  enum class Kind : uint8_t { kAdded, kRemoved, kModified };
  std::string name;
  Kind kind = Kind::kModified;
  std::optional<Value> before, after;
};

// The properties added, removed or modified between `before` and `after`
// (either may be null: an insert, a delete), sorted by property name in byte
// order. A value compares with Value::operator== (type and value; Doubles
// bitwise: NaN equals NaN, -0.0 differs from 0.0). Keys, Timestamp and ETag
// are not properties and never appear.
std::vector<PropertyChange> DiffEntities(const Entity* before, const Entity* after);

enum class AuditFormat : uint8_t { kJsonl, kCsv };

class AuditSummary {
 public:
  void Add(const std::string& table, const std::string& op, const std::string& caller,
           uint64_t n = 1);
  uint64_t rows() const { return rows_; }
  // count per (table, op, caller), sorted.
  const std::map<std::tuple<std::string, std::string, std::string>, uint64_t>& counts() const {
    return counts_;
  }
  // Scale-out: the records the source skipped as fenced (a replaced shard
  // owner's writes after a newer claim; RecordSource::fenced()), over every
  // run of a resumed replay. They have no rows.
  uint64_t fenced() const { return fenced_; }
  void set_fenced(uint64_t n) { fenced_ = n; }
  // Kafka: messages skipped because they do not decode
  // (RecordSource::undecodable()), over every run. They have no rows.
  uint64_t undecodable() const { return undecodable_; }
  void set_undecodable(uint64_t n) { undecodable_ = n; }
  // {"rows":N,"fenced":F,"undecodable":U,"byTable":{..},"byOp":{..},"byCaller":{..},
  //  "counts":[{"table","op","caller","count"}]}
  std::string ToJson() const;
  // table,op,caller,count lines after a header line (CSV as the rows).
  std::string ToCsv() const;
  // Restores what ToJson() wrote (checkpoints carry the summary). Anything
  // else is InvalidInput: bad JSON, missing or mistyped fields, a triple
  // counted twice, "rows" or the by* totals disagreeing with "counts".
  // "fenced" and "undecodable" may be absent (a checkpoint written before
  // they existed): 0.
  static Result<AuditSummary> FromJson(std::string_view json);

 private:
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;
  uint64_t rows_ = 0;
  uint64_t fenced_ = 0;
  uint64_t undecodable_ = 0;
};

class AuditWriter {
 public:
  AuditWriter(AuditFormat format, ReplayFilter filter) : format_(format), filter_(std::move(filter)) {}
  // The CSV header line; nothing for JSON lines.
  void Begin(std::string* out) const;
  // Appends the rows of `record` that pass the filter and counts them in
  // *summary (which may be null). Returns the number of rows written.
  size_t Write(const ChangeRecord& record, std::string* out, AuditSummary* summary) const;

 private:
  AuditFormat format_;
  ReplayFilter filter_;
};

}  // namespace sidetable::replay
