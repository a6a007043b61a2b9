// AuditSummary: counts of audit rows by (table, op, caller); see audit.h.
#include "tools/replay/audit.h"

#include <simdjson.h>

#include "events/json_writer.h"
#include "tools/replay/audit_text.h"

namespace sidetable::replay {

using audit_text::AppendCsvField;
using audit_text::AppendUInt;
using audit_text::kCsvEol;

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
  w.Key("fenced").UInt(fenced_);
  w.Key("undecodable").UInt(undecodable_);
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
  if (auto fenced = doc["fenced"]; fenced.error() != simdjson::NO_SUCH_FIELD) {
    if (fenced.get_uint64().get(s.fenced_) != simdjson::SUCCESS) return BadSummary("\"fenced\" is not a count");
  }
  if (auto undecodable = doc["undecodable"]; undecodable.error() != simdjson::NO_SUCH_FIELD) {
    if (undecodable.get_uint64().get(s.undecodable_) != simdjson::SUCCESS) {
      return BadSummary("\"undecodable\" is not a count");
    }
  }
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

}  // namespace sidetable::replay
