// Audit rows (JSON lines, CSV) and the summary; see audit.h.
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

#include "sidecar/protocol/json/entity_json.h"
#include "sidecar/protocol/json/json_writer.h"

namespace sidetable::replay {
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

void AppendUInt(uint64_t v, std::string* out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, res.ptr);
}

// RFC 4180: a field holding a comma, a quote, CR or LF is quoted, with its
// quotes doubled. `suffix` is part of the same field.
void AppendCsvField(std::string_view text, std::string_view suffix, std::string* out) {
  constexpr std::string_view kSpecial = ",\"\r\n";
  if (text.find_first_of(kSpecial) == std::string_view::npos &&
      suffix.find_first_of(kSpecial) == std::string_view::npos) {
    out->append(text);
    out->append(suffix);
    return;
  }
  out->push_back('"');
  for (std::string_view part : {text, suffix}) {
    size_t start = 0;
    for (size_t q = part.find('"'); q != std::string_view::npos; q = part.find('"', start)) {
      out->append(part.substr(start, q + 1 - start));
      out->push_back('"');
      start = q + 1;
    }
    out->append(part.substr(start));
  }
  out->push_back('"');
}

void AppendCsvField(std::string_view text, std::string* out) { AppendCsvField(text, {}, out); }

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

constexpr std::string_view kCsvEol = "\r\n";
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

// ---- AuditSummary --------------------------------------------------------

void AuditSummary::Add(const std::string& table, const std::string& op, const std::string& caller,
                       uint64_t n) {
  if (n == 0) return;
  counts_[std::make_tuple(table, op, caller)] += n;
  rows_ += n;
}

namespace {

using Counts = std::map<std::tuple<std::string, std::string, std::string>, uint64_t>;

struct Totals {
  std::map<std::string, uint64_t> by_table, by_op, by_caller;
};

Totals TotalsOf(const Counts& counts) {
  Totals t;
  for (const auto& [key, n] : counts) {
    t.by_table[std::get<0>(key)] += n;
    t.by_op[std::get<1>(key)] += n;
    t.by_caller[std::get<2>(key)] += n;
  }
  return t;
}

void WriteTotals(json::JsonWriter* w, std::string_view key, const std::map<std::string, uint64_t>& m) {
  w->Key(key).BeginObject();
  for (const auto& [name, n] : m) w->Key(name).UInt(n);
  w->EndObject();
}

Status BadSummary(std::string_view what) {
  return Status(Code::kInvalidInput, "audit summary: " + std::string(what));
}

// Reads an object of name -> count and checks it against the recomputed totals.
Status CheckTotals(simdjson::dom::element doc, const char* key, const std::map<std::string, uint64_t>& want) {
  simdjson::dom::object obj;
  if (doc[key].get_object().get(obj) != simdjson::SUCCESS) {
    return BadSummary(std::string("no \"") + key + "\" object");
  }
  std::map<std::string, uint64_t> got;
  for (auto field : obj) {
    uint64_t n = 0;
    if (field.value.get_uint64().get(n) != simdjson::SUCCESS) {
      return BadSummary(std::string("\"") + key + "\" holds a value that is not a count");
    }
    if (!got.emplace(std::string(field.key), n).second) {
      return BadSummary(std::string("duplicate key in \"") + key + "\"");
    }
  }
  if (got != want) return BadSummary(std::string("\"") + key + "\" disagrees with \"counts\"");
  return Status::OK();
}

}  // namespace

std::string AuditSummary::ToJson() const {
  const Totals t = TotalsOf(counts_);
  json::JsonWriter w;
  w.BeginObject();
  w.Key("rows").UInt(rows_);
  WriteTotals(&w, "byTable", t.by_table);
  WriteTotals(&w, "byOp", t.by_op);
  WriteTotals(&w, "byCaller", t.by_caller);
  w.Key("counts").BeginArray();
  for (const auto& [key, n] : counts_) {
    w.BeginObject();
    w.Key("table").String(std::get<0>(key));
    w.Key("op").String(std::get<1>(key));
    w.Key("caller").String(std::get<2>(key));
    w.Key("count").UInt(n);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

std::string AuditSummary::ToCsv() const {
  std::string out = "table,op,caller,count";
  out.append(kCsvEol);
  for (const auto& [key, n] : counts_) {
    AppendCsvField(std::get<0>(key), &out);
    out.push_back(',');
    AppendCsvField(std::get<1>(key), &out);
    out.push_back(',');
    AppendCsvField(std::get<2>(key), &out);
    out.push_back(',');
    AppendUInt(n, &out);
    out.append(kCsvEol);
  }
  return out;
}

Result<AuditSummary> AuditSummary::FromJson(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return BadSummary("not valid JSON");
  if (!doc.is_object()) return BadSummary("not a JSON object");
  uint64_t rows = 0;
  if (doc["rows"].get_uint64().get(rows) != simdjson::SUCCESS) return BadSummary("no \"rows\" count");
  simdjson::dom::array counts;
  if (doc["counts"].get_array().get(counts) != simdjson::SUCCESS) return BadSummary("no \"counts\" array");
  AuditSummary s;
  for (simdjson::dom::element el : counts) {
    std::string_view table, op, caller;
    uint64_t n = 0;
    if (!el.is_object() || el["table"].get_string().get(table) != simdjson::SUCCESS ||
        el["op"].get_string().get(op) != simdjson::SUCCESS ||
        el["caller"].get_string().get(caller) != simdjson::SUCCESS ||
        el["count"].get_uint64().get(n) != simdjson::SUCCESS) {
      return BadSummary("a \"counts\" entry needs string \"table\", \"op\", \"caller\" and a \"count\"");
    }
    auto key = std::make_tuple(std::string(table), std::string(op), std::string(caller));
    if (s.counts_.count(key) != 0) return BadSummary("a (table, op, caller) counted twice");
    if (n == 0) continue;  // Add() never makes one; tolerate it
    if (s.rows_ + n < s.rows_) return BadSummary("counts overflow");
    s.counts_.emplace(std::move(key), n);
    s.rows_ += n;
  }
  if (s.rows_ != rows) return BadSummary("\"rows\" is not the sum of \"counts\"");
  const Totals t = TotalsOf(s.counts_);
  ST_RETURN_IF_ERROR(CheckTotals(doc, "byTable", t.by_table));
  ST_RETURN_IF_ERROR(CheckTotals(doc, "byOp", t.by_op));
  ST_RETURN_IF_ERROR(CheckTotals(doc, "byCaller", t.by_caller));
  return s;
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
  }
  return 0;  // an unknown kind: nothing to audit
}

}  // namespace sidetable::replay
