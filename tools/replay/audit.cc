// Audit rows (JSON lines, CSV) and the property diff; see audit.h (the
// summary is in audit_summary.cc).
//
// Write() is on the replay hot path: rows are appended to the caller's string
// directly (no JsonWriter buffer), the parts shared by every row of a record
// are formatted once per record, the diff works on pointers into the record's
// images, and the summary is updated once per (record, op kind).
#include "tools/replay/audit.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

#include "events/entity_json.h"
#include "events/json_writer.h"
#include "tools/replay/audit_text.h"

namespace sidetable::replay {

using audit_text::AppendCsvField;
using audit_text::AppendUInt;
using audit_text::kCsvEol;

namespace {

// ---- diff ----------------------------------------------------------------

// A change as pointers into the images (the hot path copies no value).
struct RawChange {
  const std::string* name;
  PropertyChange::Kind kind;
  const Value* before;  // null when added
  const Value* after;   // null when removed
};

bool ByName(const Property* a, const Property* b) { return a->name < b->name; }

// Scratch vectors reused across calls (a writer is used from one thread; the
// buffers are per thread so that two writers on two threads stay independent).
struct DiffScratch {
  std::vector<const Property*> before, after;
};

DiffScratch& Scratch() {
  static thread_local DiffScratch scratch;
  return scratch;
}

void SortedProperties(const Entity* e, std::vector<const Property*>* out) {
  out->clear();
  if (e == nullptr) return;
  for (const Property& p : e->properties) out->push_back(&p);
  // Images come from the engine in insertion order: usually short, often
  // already sorted.
  if (!std::is_sorted(out->begin(), out->end(), ByName)) std::sort(out->begin(), out->end(), ByName);
}

// Appends the changes between the images to *out, sorted by name (byte order).
void RawDiff(const Entity* before, const Entity* after, std::vector<RawChange>* out) {
  DiffScratch& s = Scratch();
  SortedProperties(before, &s.before);
  SortedProperties(after, &s.after);
  size_t i = 0, j = 0;
  while (i < s.before.size() || j < s.after.size()) {
    if (j == s.after.size() || (i < s.before.size() && s.before[i]->name < s.after[j]->name)) {
      out->push_back({&s.before[i]->name, PropertyChange::Kind::kRemoved, &s.before[i]->value, nullptr});
      i++;
    } else if (i == s.before.size() || s.after[j]->name < s.before[i]->name) {
      out->push_back({&s.after[j]->name, PropertyChange::Kind::kAdded, nullptr, &s.after[j]->value});
      j++;
    } else {
      // Same name: a new value or a new type (Value::operator== compares
      // both; Doubles bitwise, so NaN is unchanged and -0.0 differs from 0.0).
      if (s.before[i]->value != s.after[j]->value) {
        out->push_back({&s.before[i]->name, PropertyChange::Kind::kModified, &s.before[i]->value,
                        &s.after[j]->value});
      }
      i++;
      j++;
    }
  }
}

std::string_view ChangeName(PropertyChange::Kind kind) {
  switch (kind) {
    case PropertyChange::Kind::kAdded: return "added";
    case PropertyChange::Kind::kRemoved: return "removed";
    case PropertyChange::Kind::kModified: return "modified";
  }
  return "";
}

// ---- text helpers --------------------------------------------------------

// "55000 (Edm.Int64)"; a String as its text alone.
void AppendCsvValue(const Value& v, std::string* out) {
  if (v.type() == EdmType::kString) {
    AppendCsvField(v.bytes(), out);
    return;
  }
  const std::string text = v.ToString();
  char suffix[24];
  const std::string_view type = EdmTypeName(v.type());
  size_t n = 0;
  suffix[n++] = ' ';
  suffix[n++] = '(';
  const size_t len = std::min(type.size(), sizeof suffix - 3);
  type.copy(suffix + n, len);
  n += len;
  suffix[n++] = ')';
  AppendCsvField(text, std::string_view(suffix, n), out);
}

constexpr std::string_view kCsvHeader = "lsn,time,caller,table,pk,rk,op,property,change,before,after";

// ---- rows ----------------------------------------------------------------

// What every row of a record shares, formatted once per record.
struct RecordText {
  std::string prefix;  // JSON: `{"lsn":..,"time":..,"caller":..,"table":..`; CSV: `lsn,time,caller,table,`
  std::vector<RawChange> changes;
};

RecordText& RecordScratch() {
  static thread_local RecordText text;
  return text;
}

void FormatRecordPrefix(AuditFormat format, const ChangeRecord& r, std::string* prefix) {
  prefix->clear();
  const std::string time = FormatDateTime(r.commit_time);
  if (format == AuditFormat::kJsonl) {
    prefix->append("{\"lsn\":");
    AppendUInt(r.lsn, prefix);
    prefix->append(",\"time\":");
    json::AppendJsonString(time, prefix);
    prefix->append(",\"caller\":");
    json::AppendJsonString(r.caller, prefix);
    prefix->append(",\"table\":");
    json::AppendJsonString(r.table, prefix);
  } else {
    AppendUInt(r.lsn, prefix);
    prefix->push_back(',');
    AppendCsvField(time, prefix);
    prefix->push_back(',');
    AppendCsvField(r.caller, prefix);
    prefix->push_back(',');
    AppendCsvField(r.table, prefix);
    prefix->push_back(',');
  }
}

void AppendJsonSide(std::string_view key, std::string_view type_key, const Value& v, std::string* out) {
  out->append(key);
  json::AppendValueJson(v, out);
  if (json::NeedsTypeAnnotation(v)) {
    out->append(type_key);
    json::AppendJsonString(EdmTypeName(v.type()), out);
  }
}

// One JSON line. `pk`/`rk` null: a table event. `changes` null: no "changes".
void AppendJsonRow(const std::string& prefix, const std::string* pk, const std::string* rk,
                   std::string_view op, std::string_view etag, const std::string* target,
                   const std::vector<RawChange>* changes, std::string* out) {
  out->append(prefix);
  if (pk != nullptr) {
    out->append(",\"pk\":");
    json::AppendJsonString(*pk, out);
  }
  if (rk != nullptr) {
    out->append(",\"rk\":");
    json::AppendJsonString(*rk, out);
  }
  out->append(",\"op\":");
  json::AppendJsonString(op, out);
  if (!etag.empty()) {
    out->append(",\"etag\":");
    json::AppendJsonString(etag, out);
  }
  if (target != nullptr) {
    out->append(",\"target\":");
    json::AppendJsonString(*target, out);
  }
  if (changes != nullptr) {
    out->append(",\"changes\":[");
    bool first = true;
    for (const RawChange& c : *changes) {
      if (!first) out->push_back(',');
      first = false;
      out->append("{\"property\":");
      json::AppendJsonString(*c.name, out);
      out->append(",\"change\":\"");
      out->append(ChangeName(c.kind));
      out->push_back('"');
      if (c.before != nullptr) AppendJsonSide(",\"before\":", ",\"before@odata.type\":", *c.before, out);
      if (c.after != nullptr) AppendJsonSide(",\"after\":", ",\"after@odata.type\":", *c.after, out);
      out->push_back('}');
    }
    out->push_back(']');
  }
  out->append("}\n");
}

// The CSV lines of one row: `row` is everything up to and including the op
// column and its comma; one line per change, or one with empty property
// columns (and `after_text` in the after column) when there is none.
void AppendCsvRow(const std::string& row, const std::vector<RawChange>* changes,
                  std::string_view after_text, std::string* out) {
  if (changes == nullptr || changes->empty()) {
    out->append(row);
    out->append(",,,");
    AppendCsvField(after_text, out);
    out->append(kCsvEol);
    return;
  }
  for (const RawChange& c : *changes) {
    out->append(row);
    AppendCsvField(*c.name, out);
    out->push_back(',');
    out->append(ChangeName(c.kind));
    out->push_back(',');
    if (c.before != nullptr) AppendCsvValue(*c.before, out);
    out->push_back(',');
    if (c.after != nullptr) AppendCsvValue(*c.after, out);
    out->append(kCsvEol);
  }
}

// Appends `prefix` + pk,rk,op, to *row (CSV).
void FormatCsvRowStart(const std::string& prefix, const std::string* pk, const std::string* rk,
                       std::string_view op, std::string* row) {
  row->assign(prefix);
  if (pk != nullptr) AppendCsvField(*pk, row);
  row->push_back(',');
  if (rk != nullptr) AppendCsvField(*rk, row);
  row->push_back(',');
  AppendCsvField(op, row);
  row->push_back(',');
}

std::string& CsvRowScratch() {
  static thread_local std::string row;
  return row;
}

}  // namespace

std::vector<PropertyChange> DiffEntities(const Entity* before, const Entity* after) {
  std::vector<RawChange> raw;
  RawDiff(before, after, &raw);
  std::vector<PropertyChange> out;
  out.reserve(raw.size());
  for (const RawChange& c : raw) {
    PropertyChange pc;
    pc.name = *c.name;
    pc.kind = c.kind;
    if (c.before != nullptr) pc.before = *c.before;
    if (c.after != nullptr) pc.after = *c.after;
    out.push_back(std::move(pc));
  }
  return out;
}

// ---- AuditWriter ---------------------------------------------------------

void AuditWriter::Begin(std::string* out) const {
  if (format_ != AuditFormat::kCsv) return;
  out->append(kCsvHeader);
  out->append(kCsvEol);
}

size_t AuditWriter::Write(const ChangeRecord& record, std::string* out, AuditSummary* summary) const {
  if (!filter_.MatchesRecord(record)) return 0;
  const bool json = format_ == AuditFormat::kJsonl;
  RecordText& text = RecordScratch();
  std::string& row = CsvRowScratch();

  switch (record.kind) {
    case ChangeKind::kEntities: {
      // Rows per op kind, so the summary is touched once per kind.
      std::array<uint64_t, 8> per_kind{};
      size_t rows = 0;
      for (const ChangeOp& op : record.ops) {
        if (!filter_.MatchesRowKey(op.row_key)) continue;
        if (rows == 0) FormatRecordPrefix(format_, record, &text.prefix);
        text.changes.clear();
        RawDiff(op.before ? &*op.before : nullptr, op.after ? &*op.after : nullptr, &text.changes);
        const std::string_view op_name = OpKindName(op.kind);
        if (json) {
          AppendJsonRow(text.prefix, &record.partition_key, &op.row_key, op_name, op.etag, nullptr,
                        &text.changes, out);
        } else {
          FormatCsvRowStart(text.prefix, &record.partition_key, &op.row_key, op_name, &row);
          AppendCsvRow(row, &text.changes, {}, out);
        }
        per_kind[static_cast<size_t>(op.kind) % per_kind.size()]++;
        rows++;
      }
      if (summary != nullptr) {
        for (size_t k = 0; k < per_kind.size(); k++) {
          if (per_kind[k] == 0) continue;
          summary->Add(record.table, std::string(OpKindName(static_cast<OpKind>(k))), record.caller,
                       per_kind[k]);
        }
      }
      return rows;
    }
    case ChangeKind::kTableCreated:
    case ChangeKind::kTableDeleted: {
      const std::string_view op_name = ChangeKindName(record.kind);
      FormatRecordPrefix(format_, record, &text.prefix);
      if (json) {
        AppendJsonRow(text.prefix, nullptr, nullptr, op_name, {}, nullptr, nullptr, out);
      } else {
        FormatCsvRowStart(text.prefix, nullptr, nullptr, op_name, &row);
        AppendCsvRow(row, nullptr, {}, out);
      }
      if (summary != nullptr) summary->Add(record.table, std::string(op_name), record.caller);
      return 1;
    }
    case ChangeKind::kArchiveRequested: {
      const std::string_view op_name = ChangeKindName(record.kind);
      size_t rows = 0;
      for (const ChangeOp& op : record.ops) {
        if (!filter_.MatchesRowKey(op.row_key)) continue;
        if (rows == 0) FormatRecordPrefix(format_, record, &text.prefix);
        if (json) {
          AppendJsonRow(text.prefix, &record.partition_key, &op.row_key, op_name, {}, &record.target_table,
                        nullptr, out);
        } else {
          FormatCsvRowStart(text.prefix, &record.partition_key, &op.row_key, op_name, &row);
          AppendCsvRow(row, nullptr, record.target_table, out);
        }
        rows++;
      }
      if (summary != nullptr && rows != 0) {
        summary->Add(record.table, std::string(op_name), record.caller, rows);
      }
      return rows;
    }
    case ChangeKind::kShardClaimed:
      // Ownership, not data: the sources consume claims (events/epoch_filter.h).
      return 0;
  }
  return 0;  // an unknown kind: nothing to audit
}

}  // namespace sidetable::replay
