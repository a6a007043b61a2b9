// Audit: the property diff, JSON-lines rows (read back with simdjson and the
// entity JSON parser, every Edm type exact), CSV (read back with an RFC 4180
// reader), filtering, table events, archive requests and the summary.
#include "tools/replay/audit.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <set>

#include "events/entity_json.h"

namespace sidetable::replay {
namespace {

using Kind = PropertyChange::Kind;

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const int64_t kTime = *ParseDateTime("2026-11-30T10:00:00.1234567Z");
const Guid kGuid1 = *ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833");
const Guid kGuid2 = *ParseGuid("00000000-0000-0000-0000-0000000000ff");

Entity MakeEntity(std::vector<Property> props, std::string etag = "W/\"1\"", int64_t ts = kTime) {
  Entity e;
  e.partition_key = "Sales";
  e.row_key = "000223";
  e.timestamp = ts;
  e.etag = std::move(etag);
  e.properties = std::move(props);
  return e;
}

ChangeOp Op(std::string rk, OpKind kind, std::optional<Entity> before, std::optional<Entity> after,
            std::string etag = "") {
  ChangeOp op;
  op.row_key = std::move(rk);
  op.kind = kind;
  op.before = std::move(before);
  op.after = std::move(after);
  op.etag = std::move(etag);
  return op;
}

ChangeRecord EntitiesRecord(uint64_t lsn, std::vector<ChangeOp> ops, std::string caller = "hr-app",
                            std::string pk = "Sales", int64_t time = kTime) {
  ChangeRecord r;
  r.lsn = lsn;
  r.kind = ChangeKind::kEntities;
  r.commit_time = time;
  r.table = "Employees";
  r.partition_key = std::move(pk);
  r.caller = std::move(caller);
  r.ops = std::move(ops);
  return r;
}

ChangeRecord TableEvent(uint64_t lsn, ChangeKind kind, std::string caller = "admin") {
  ChangeRecord r;
  r.lsn = lsn;
  r.kind = kind;
  r.commit_time = kTime;
  r.table = "Employees";
  r.caller = std::move(caller);
  return r;
}

ChangeRecord ArchiveRecord(uint64_t lsn, std::vector<std::string> rks) {
  ChangeRecord r;
  r.lsn = lsn;
  r.kind = ChangeKind::kArchiveRequested;
  r.commit_time = kTime;
  r.table = "Employees";
  r.partition_key = "Sales";
  r.caller = "archiver";
  r.target_table = "EmployeesArchive";
  for (auto& rk : rks) r.ops.push_back(Op(std::move(rk), OpKind::kDelete, std::nullopt, std::nullopt));
  return r;
}

// ---- DiffEntities ----------------------------------------------------------

struct Expected {
  std::string name;
  Kind kind;
  std::optional<Value> before, after;
};

void ExpectDiff(const std::vector<PropertyChange>& got, const std::vector<Expected>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].kind, want[i].kind);
    EXPECT_EQ(got[i].before, want[i].before);
    EXPECT_EQ(got[i].after, want[i].after);
  }
}

// An update touching every type: unchanged, modified, type-changed, added
// and removed properties, in no particular order in the images.
Entity UpdateBefore() {
  return MakeEntity({
      {"ModStr", Value::String("a")},
      {"SameStr", Value::String("x")},
      {"GoneStr", Value::String("bye")},
      {"ModBin", Value::Binary(std::string("\x01", 1))},
      {"SameBin", Value::Binary(std::string("\x00\xff", 2))},
      {"ModBool", Value::Boolean(false)},
      {"SameBool", Value::Boolean(true)},
      {"ModDate", Value::DateTime(kTime)},
      {"SameDate", Value::DateTime(kMinDateTimeTicks)},
      {"GoneDate", Value::DateTime(kMaxDateTimeTicks)},
      {"ModDbl", Value::Double(0.0)},
      {"SameDbl", Value::Double(1.5)},
      {"SameNaN", Value::Double(kNaN)},
      {"ModInf", Value::Double(kInf)},
      {"ModNaN", Value::Double(1.0)},
      {"ModGuid", Value::MakeGuid(kGuid1)},
      {"SameGuid", Value::MakeGuid(kGuid2)},
      {"ModI32", Value::Int32(1)},
      {"SameI32", Value::Int32(-7)},
      {"ModI64", Value::Int64(-5)},
      {"SameI64", Value::Int64(int64_t{1} << 40)},
      {"TypeI32toI64", Value::Int32(5)},
      {"TypeStrToI32", Value::String("5")},
      {"TypeDblToI64", Value::Double(5.0)},
      {"TypeGuidToStr", Value::MakeGuid(kGuid1)},
      {"TypeBinToStr", Value::Binary("abc")},
  });
}

Entity UpdateAfter() {
  return MakeEntity(
      {
          {"NewGuid", Value::MakeGuid(kGuid2)},
          {"TypeBinToStr", Value::String("abc")},
          {"TypeGuidToStr", Value::String(FormatGuid(kGuid1))},
          {"TypeDblToI64", Value::Int64(5)},
          {"TypeStrToI32", Value::Int32(5)},
          {"TypeI32toI64", Value::Int64(5)},
          {"SameI64", Value::Int64(int64_t{1} << 40)},
          {"ModI64", Value::Int64(std::numeric_limits<int64_t>::max())},
          {"SameI32", Value::Int32(-7)},
          {"ModI32", Value::Int32(2)},
          {"SameGuid", Value::MakeGuid(kGuid2)},
          {"ModGuid", Value::MakeGuid(kGuid2)},
          {"ModNaN", Value::Double(kNaN)},
          {"ModInf", Value::Double(-kInf)},
          {"SameNaN", Value::Double(kNaN)},
          {"SameDbl", Value::Double(1.5)},
          {"ModDbl", Value::Double(-0.0)},
          {"NewDbl", Value::Double(1e300)},
          {"SameDate", Value::DateTime(kMinDateTimeTicks)},
          {"ModDate", Value::DateTime(kTime + 1)},
          {"SameBool", Value::Boolean(true)},
          {"ModBool", Value::Boolean(true)},
          {"SameBin", Value::Binary(std::string("\x00\xff", 2))},
          {"ModBin", Value::Binary(std::string("\x02\x00", 2))},
          {"NewBin", Value::Binary("")},
          {"SameStr", Value::String("x")},
          {"ModStr", Value::String("b")},
      },
      "W/\"2\"", kTime + 99);
}

// The expected diff of UpdateBefore -> UpdateAfter, in byte order by name.
std::vector<Expected> UpdateDiff() {
  return {
      {"GoneDate", Kind::kRemoved, Value::DateTime(kMaxDateTimeTicks), std::nullopt},
      {"GoneStr", Kind::kRemoved, Value::String("bye"), std::nullopt},
      {"ModBin", Kind::kModified, Value::Binary(std::string("\x01", 1)), Value::Binary(std::string("\x02\x00", 2))},
      {"ModBool", Kind::kModified, Value::Boolean(false), Value::Boolean(true)},
      {"ModDate", Kind::kModified, Value::DateTime(kTime), Value::DateTime(kTime + 1)},
      {"ModDbl", Kind::kModified, Value::Double(0.0), Value::Double(-0.0)},
      {"ModGuid", Kind::kModified, Value::MakeGuid(kGuid1), Value::MakeGuid(kGuid2)},
      {"ModI32", Kind::kModified, Value::Int32(1), Value::Int32(2)},
      {"ModI64", Kind::kModified, Value::Int64(-5), Value::Int64(std::numeric_limits<int64_t>::max())},
      {"ModInf", Kind::kModified, Value::Double(kInf), Value::Double(-kInf)},
      {"ModNaN", Kind::kModified, Value::Double(1.0), Value::Double(kNaN)},
      {"ModStr", Kind::kModified, Value::String("a"), Value::String("b")},
      {"NewBin", Kind::kAdded, std::nullopt, Value::Binary("")},
      {"NewDbl", Kind::kAdded, std::nullopt, Value::Double(1e300)},
      {"NewGuid", Kind::kAdded, std::nullopt, Value::MakeGuid(kGuid2)},
      {"TypeBinToStr", Kind::kModified, Value::Binary("abc"), Value::String("abc")},
      {"TypeDblToI64", Kind::kModified, Value::Double(5.0), Value::Int64(5)},
      {"TypeGuidToStr", Kind::kModified, Value::MakeGuid(kGuid1), Value::String(FormatGuid(kGuid1))},
      {"TypeI32toI64", Kind::kModified, Value::Int32(5), Value::Int64(5)},
      {"TypeStrToI32", Kind::kModified, Value::String("5"), Value::Int32(5)},
  };
}

TEST(AuditDiffTest, UpdateFindsModifiedTypeChangedAddedAndRemovedAcrossEveryType) {
  const Entity before = UpdateBefore(), after = UpdateAfter();
  ExpectDiff(DiffEntities(&before, &after), UpdateDiff());
}

TEST(AuditDiffTest, InsertAddsAndDeleteRemovesEveryProperty) {
  const Entity e = MakeEntity({{"b", Value::Int64(1)},
                               {"a", Value::Double(-kInf)},
                               {"c", Value::Binary(std::string("\0", 1))},
                               {"B", Value::Boolean(false)}});
  ExpectDiff(DiffEntities(nullptr, &e), {{"B", Kind::kAdded, std::nullopt, Value::Boolean(false)},
                                         {"a", Kind::kAdded, std::nullopt, Value::Double(-kInf)},
                                         {"b", Kind::kAdded, std::nullopt, Value::Int64(1)},
                                         {"c", Kind::kAdded, std::nullopt, Value::Binary(std::string("\0", 1))}});
  ExpectDiff(DiffEntities(&e, nullptr),
             {{"B", Kind::kRemoved, Value::Boolean(false), std::nullopt},
              {"a", Kind::kRemoved, Value::Double(-kInf), std::nullopt},
              {"b", Kind::kRemoved, Value::Int64(1), std::nullopt},
              {"c", Kind::kRemoved, Value::Binary(std::string("\0", 1)), std::nullopt}});
  EXPECT_TRUE(DiffEntities(nullptr, nullptr).empty());
  const Entity empty = MakeEntity({});
  EXPECT_TRUE(DiffEntities(nullptr, &empty).empty());
}

TEST(AuditDiffTest, MergeWithSameValuesAndNewMetadataChangesNothing) {
  // Only the ETag, the Timestamp (and the keys' images) differ: no property.
  const Entity before = MakeEntity({{"Name", Value::String("Ana")}, {"N", Value::Double(kNaN)}}, "W/\"1\"", 1);
  Entity after = MakeEntity({{"N", Value::Double(kNaN)}, {"Name", Value::String("Ana")}}, "W/\"9\"", 2);
  EXPECT_TRUE(DiffEntities(&before, &after).empty());
  after.row_key = "other";
  EXPECT_TRUE(DiffEntities(&before, &after).empty());
}

TEST(AuditDiffTest, SortedByNameInByteOrder) {
  // Byte order: upper case before lower case, "a" before "a1", UTF-8
  // (code point order) last.
  const Entity after = MakeEntity({{"\xC3\xA9", Value::Int32(1)},
                                   {"b", Value::Int32(1)},
                                   {"a1", Value::Int32(1)},
                                   {"Z", Value::Int32(1)},
                                   {"a", Value::Int32(1)},
                                   {"A", Value::Int32(1)}});
  std::vector<std::string> names;
  for (const auto& c : DiffEntities(nullptr, &after)) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "Z", "a", "a1", "b", "\xC3\xA9"}));
}

// ---- JSON lines --------------------------------------------------------------

std::vector<std::string> Lines(const std::string& out) {
  EXPECT_TRUE(out.empty() || out.back() == '\n') << out;
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl = out.find('\n'); nl != std::string::npos; nl = out.find('\n', start)) {
    lines.push_back(out.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::set<std::string> Keys(simdjson::dom::object obj) {
  std::set<std::string> keys;
  for (auto field : obj) EXPECT_TRUE(keys.insert(std::string(field.key)).second) << field.key;
  return keys;
}

std::string Str(simdjson::dom::object obj, const char* key) {
  std::string_view s;
  EXPECT_EQ(obj[key].get_string().get(s), simdjson::SUCCESS) << key;
  return std::string(s);
}

// One parsed JSON line (the parser owns the memory, so each row gets one).
struct Row {
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
};

std::vector<std::unique_ptr<Row>> ParseRows(const std::string& out) {
  std::vector<std::unique_ptr<Row>> rows;
  for (const std::string& line : Lines(out)) {
    auto row = std::make_unique<Row>();
    simdjson::dom::element el;
    EXPECT_EQ(row->parser.parse(line).get(el), simdjson::SUCCESS) << line;
    EXPECT_EQ(el.get_object().get(row->obj), simdjson::SUCCESS) << line;
    rows.push_back(std::move(row));
  }
  return rows;
}

// How WriteEntityJson writes a property holding `v`: the value's JSON text
// and whether it carries an "@odata.type" annotation (and which).
struct EntityJsonForm {
  std::string value;
  std::optional<std::string> type;
};

EntityJsonForm FormInEntityJson(const Value& v) {
  Entity e;
  e.properties = {{"v", v}};
  const std::string text = json::EntityToJson(e);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << text;
  EntityJsonForm form;
  simdjson::dom::element v;
  EXPECT_EQ(doc["v"].get(v), simdjson::SUCCESS) << text;
  form.value = simdjson::minify(v);
  std::string_view type;
  if (doc["v@odata.type"].get_string().get(type) == simdjson::SUCCESS) form.type = std::string(type);
  return form;
}

// Checks one side ("before"/"after") of a change object: written exactly as
// the entity writer writes the value, annotated exactly when it annotates,
// and read back by the entity parser to the same Edm value.
void ExpectSide(simdjson::dom::object change, const std::string& side, const std::optional<Value>& want) {
  SCOPED_TRACE(side);
  simdjson::dom::element value;
  const bool present = change[side].get(value) == simdjson::SUCCESS;
  std::string_view type;
  const bool annotated = change[side + "@odata.type"].get_string().get(type) == simdjson::SUCCESS;
  if (!want) {
    EXPECT_FALSE(present);
    EXPECT_FALSE(annotated);
    return;
  }
  ASSERT_TRUE(present);
  const EntityJsonForm form = FormInEntityJson(*want);
  EXPECT_EQ(simdjson::minify(value), form.value);
  EXPECT_EQ(annotated, form.type.has_value());
  if (annotated && form.type) {
    EXPECT_EQ(type, *form.type);
  }
  // Parsed back as a property of a synthetic entity.
  std::string entity = "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":" + simdjson::minify(value);
  if (annotated) entity += ",\"v@odata.type\":\"" + std::string(type) + "\"";
  entity += "}";
  auto parsed = json::ParseEntityJson(entity);
  ASSERT_TRUE(parsed.ok()) << entity << ": " << parsed.status().ToString();
  const Value* back = parsed->Find("v");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(*back, *want) << entity << " read back as " << back->ToString();
}

void ExpectChanges(simdjson::dom::object row, const std::vector<Expected>& want) {
  simdjson::dom::array changes;
  ASSERT_EQ(row["changes"].get_array().get(changes), simdjson::SUCCESS);
  ASSERT_EQ(changes.size(), want.size());
  size_t i = 0;
  for (simdjson::dom::element el : changes) {
    const Expected& w = want[i++];
    SCOPED_TRACE(w.name);
    simdjson::dom::object change;
    ASSERT_EQ(el.get_object().get(change), simdjson::SUCCESS);
    EXPECT_EQ(Str(change, "property"), w.name);
    EXPECT_EQ(Str(change, "change"),
              w.kind == Kind::kAdded ? "added" : w.kind == Kind::kRemoved ? "removed" : "modified");
    ExpectSide(change, "before", w.before);
    ExpectSide(change, "after", w.after);
    // Nothing else: property, change and the sides with their annotations.
    std::set<std::string> keys = {"property", "change"};
    for (const char* side : {"before", "after"}) {
      const auto& v = std::string(side) == "before" ? w.before : w.after;
      if (!v) continue;
      keys.insert(side);
      if (FormInEntityJson(*v).type) keys.insert(std::string(side) + "@odata.type");
    }
    EXPECT_EQ(Keys(change), keys);
  }
}

uint64_t UInt(simdjson::dom::object obj, const char* key) {
  uint64_t v = 0;
  EXPECT_EQ(obj[key].get_uint64().get(v), simdjson::SUCCESS) << key;
  return v;
}

TEST(AuditJsonTest, ExactLineForTheHeaderExample) {
  const Entity before = MakeEntity({{"Salary", Value::Int64(50000)}, {"Name", Value::String("Ana")}});
  const Entity after = MakeEntity({{"Name", Value::String("Ana")}, {"Salary", Value::Int64(55000)}}, "W/\"42\"");
  AuditWriter writer(AuditFormat::kJsonl, ReplayFilter{});
  std::string out;
  writer.Begin(&out);
  EXPECT_EQ(out, "");
  out = "earlier\n";  // Write appends
  EXPECT_EQ(writer.Write(EntitiesRecord(42, {Op("000223", OpKind::kMerge, before, after, "W/\"42\"")}), &out,
                         nullptr),
            1u);
  EXPECT_EQ(out,
            "earlier\n"
            R"({"lsn":42,"time":"2026-11-30T10:00:00.1234567Z","caller":"hr-app",)"
            R"("table":"Employees","pk":"Sales","rk":"000223","op":"Merge","etag":"W/\"42\"",)"
            R"("changes":[{"property":"Salary","change":"modified",)"
            R"("before":"50000","before@odata.type":"Edm.Int64",)"
            R"("after":"55000","after@odata.type":"Edm.Int64"}]})"
            "\n");
}

TEST(AuditJsonTest, InsertUpdateDeleteRowsReadBackExactly) {
  const Entity before = UpdateBefore(), after = UpdateAfter();
  const Entity inserted = MakeEntity({{"I", Value::Int32(3)}, {"D", Value::Double(kNaN)}, {"S", Value::String("s")}});
  ChangeRecord r = EntitiesRecord(
      7, {Op("r1", OpKind::kInsert, std::nullopt, inserted, "W/\"7a\""),
          Op("r2", OpKind::kUpdate, before, after, "W/\"7b\""),
          Op("r3", OpKind::kDelete, before, std::nullopt, ""),
          Op("r4", OpKind::kInsertOrMerge, inserted, inserted, "W/\"7d\"")});
  AuditWriter writer(AuditFormat::kJsonl, ReplayFilter{});
  std::string out;
  AuditSummary summary;
  ASSERT_EQ(writer.Write(r, &out, &summary), 4u);
  auto rows = ParseRows(out);
  ASSERT_EQ(rows.size(), 4u);

  const std::vector<std::string> ops = {"Insert", "Update", "Delete", "InsertOrMerge"};
  const std::vector<std::string> etags = {"W/\"7a\"", "W/\"7b\"", "", "W/\"7d\""};
  for (size_t i = 0; i < rows.size(); i++) {
    SCOPED_TRACE(ops[i]);
    simdjson::dom::object row = rows[i]->obj;
    std::set<std::string> keys = {"lsn", "time", "caller", "table", "pk", "rk", "op", "changes"};
    if (!etags[i].empty()) keys.insert("etag");
    EXPECT_EQ(Keys(row), keys);
    EXPECT_EQ(UInt(row, "lsn"), 7u);
    EXPECT_EQ(Str(row, "time"), "2026-11-30T10:00:00.1234567Z");
    EXPECT_EQ(Str(row, "caller"), "hr-app");
    EXPECT_EQ(Str(row, "table"), "Employees");
    EXPECT_EQ(Str(row, "pk"), "Sales");
    EXPECT_EQ(Str(row, "rk"), "r" + std::to_string(i + 1));
    EXPECT_EQ(Str(row, "op"), ops[i]);
    if (!etags[i].empty()) {
      EXPECT_EQ(Str(row, "etag"), etags[i]);
    }
  }
  ExpectChanges(rows[0]->obj, {{"D", Kind::kAdded, std::nullopt, Value::Double(kNaN)},
                               {"I", Kind::kAdded, std::nullopt, Value::Int32(3)},
                               {"S", Kind::kAdded, std::nullopt, Value::String("s")}});
  ExpectChanges(rows[1]->obj, UpdateDiff());
  std::vector<Expected> deleted;
  for (const auto& p : DiffEntities(&before, nullptr)) deleted.push_back({p.name, p.kind, p.before, p.after});
  ASSERT_EQ(deleted.size(), before.properties.size());
  ExpectChanges(rows[2]->obj, deleted);
  ExpectChanges(rows[3]->obj, {});  // an upsert that changed nothing: "changes":[]

  EXPECT_EQ(summary.rows(), 4u);
  EXPECT_EQ(summary.counts().size(), 4u);
}

TEST(AuditJsonTest, EveryTypeAndNonFiniteDoubleSurvivesOnBothSides) {
  const std::vector<Value> values = {
      Value::String(""), Value::String("line\n\"quoted\" \\ \t \x01 caf\xC3\xA9 \xF0\x9F\x98\x80"),
      Value::Binary(""), Value::Binary(std::string("\x00\x01\xfe\xff", 4)),
      Value::Boolean(true), Value::Boolean(false),
      Value::DateTime(kMinDateTimeTicks), Value::DateTime(kMaxDateTimeTicks),
      Value::Double(0.1), Value::Double(-0.0), Value::Double(2.0), Value::Double(1e-310),
      Value::Double(std::numeric_limits<double>::max()), Value::Double(kNaN), Value::Double(kInf),
      Value::Double(-kInf),
      Value::MakeGuid(kGuid1),
      Value::Int32(std::numeric_limits<int32_t>::min()), Value::Int32(std::numeric_limits<int32_t>::max()),
      Value::Int64(std::numeric_limits<int64_t>::min()), Value::Int64(std::numeric_limits<int64_t>::max()),
      Value::Int64(0),
  };
  // Property i goes from values[i] to values[i+1]: every type on each side,
  // and every pair of neighbours differs.
  Entity before = MakeEntity({}), after = MakeEntity({});
  std::vector<Expected> want;
  for (size_t i = 0; i + 1 < values.size(); i++) {
    const std::string name = (i < 10 ? "p0" : "p") + std::to_string(i);
    before.properties.push_back({name, values[i]});
    after.properties.push_back({name, values[i + 1]});
    want.push_back({name, Kind::kModified, values[i], values[i + 1]});
  }
  AuditWriter writer(AuditFormat::kJsonl, ReplayFilter{});
  std::string out;
  ASSERT_EQ(writer.Write(EntitiesRecord(1, {Op("r", OpKind::kUpdate, before, after, "e")}), &out, nullptr), 1u);
  auto rows = ParseRows(out);
  ASSERT_EQ(rows.size(), 1u);
  ExpectChanges(rows[0]->obj, want);
}

TEST(AuditJsonTest, KeysAndCallerWithEscapesAndUnicode) {
  const std::string pk = "P\"K\\\n\xE2\x9C\x93", rk = "\xF0\x9F\x98\x80,\r\n\"", caller = "caf\xC3\xA9 \"x\"";
  const Entity after = MakeEntity({{"n\"a\nme \xC3\xBC", Value::String("v\"\n")}});
  AuditWriter writer(AuditFormat::kJsonl, ReplayFilter{});
  std::string out;
  ASSERT_EQ(writer.Write(EntitiesRecord(3, {Op(rk, OpKind::kInsert, std::nullopt, after, "e")}, caller, pk),
                         &out, nullptr),
            1u);
  auto rows = ParseRows(out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(Str(rows[0]->obj, "pk"), pk);
  EXPECT_EQ(Str(rows[0]->obj, "rk"), rk);
  EXPECT_EQ(Str(rows[0]->obj, "caller"), caller);
  ExpectChanges(rows[0]->obj, {{"n\"a\nme \xC3\xBC", Kind::kAdded, std::nullopt, Value::String("v\"\n")}});
}

TEST(AuditJsonTest, TableEventsAndArchiveRequests) {
  AuditWriter writer(AuditFormat::kJsonl, ReplayFilter{});
  std::string out;
  AuditSummary summary;
  EXPECT_EQ(writer.Write(TableEvent(1, ChangeKind::kTableCreated), &out, &summary), 1u);
  EXPECT_EQ(writer.Write(TableEvent(9, ChangeKind::kTableDeleted, ""), &out, &summary), 1u);
  EXPECT_EQ(writer.Write(ArchiveRecord(5, {"a", "b"}), &out, &summary), 2u);
  auto rows = ParseRows(out);
  ASSERT_EQ(rows.size(), 4u);
  for (int i = 0; i < 2; i++) {
    simdjson::dom::object row = rows[i]->obj;
    EXPECT_EQ(Keys(row), (std::set<std::string>{"lsn", "time", "caller", "table", "op"}));
    EXPECT_EQ(Str(row, "table"), "Employees");
    EXPECT_EQ(Str(row, "time"), "2026-11-30T10:00:00.1234567Z");
  }
  EXPECT_EQ(UInt(rows[0]->obj, "lsn"), 1u);
  EXPECT_EQ(Str(rows[0]->obj, "op"), "TableCreated");
  EXPECT_EQ(Str(rows[0]->obj, "caller"), "admin");
  EXPECT_EQ(UInt(rows[1]->obj, "lsn"), 9u);
  EXPECT_EQ(Str(rows[1]->obj, "op"), "TableDeleted");
  EXPECT_EQ(Str(rows[1]->obj, "caller"), "");  // always present
  for (int i = 2; i < 4; i++) {
    simdjson::dom::object row = rows[i]->obj;
    EXPECT_EQ(Keys(row), (std::set<std::string>{"lsn", "time", "caller", "table", "pk", "rk", "op", "target"}));
    EXPECT_EQ(UInt(row, "lsn"), 5u);
    EXPECT_EQ(Str(row, "op"), "ArchiveRequested");
    EXPECT_EQ(Str(row, "pk"), "Sales");
    EXPECT_EQ(Str(row, "rk"), i == 2 ? "a" : "b");
    EXPECT_EQ(Str(row, "target"), "EmployeesArchive");
    EXPECT_EQ(Str(row, "caller"), "archiver");
  }
  using K = std::tuple<std::string, std::string, std::string>;
  EXPECT_EQ(summary.counts(), (std::map<K, uint64_t>{{{"Employees", "TableCreated", "admin"}, 1},
                                                     {{"Employees", "TableDeleted", ""}, 1},
                                                     {{"Employees", "ArchiveRequested", "archiver"}, 2}}));
  EXPECT_EQ(summary.rows(), 4u);
}

// ---- CSV -----------------------------------------------------------------------

// A strict RFC 4180 reader: CRLF after every record, quotes only around a
// whole field, "" inside quotes. Fails the test on anything else.
std::vector<std::vector<std::string>> ReadCsv(std::string_view s) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '"') {
      i++;
      for (;;) {
        if (i >= s.size()) {
          ADD_FAILURE() << "unterminated quoted field";
          return records;
        }
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += s[i++];
      }
    } else {
      while (i < s.size() && s[i] != ',' && s[i] != '\r' && s[i] != '\n') {
        if (s[i] == '"') ADD_FAILURE() << "quote inside an unquoted field at " << i;
        field += s[i++];
      }
    }
    record.push_back(std::move(field));
    field.clear();
    if (i < s.size() && s[i] == ',') {
      i++;
      continue;
    }
    if (s.substr(i, 2) != "\r\n") {
      ADD_FAILURE() << "record not ended by CRLF at " << i;
      return records;
    }
    i += 2;
    records.push_back(std::move(record));
    record.clear();
  }
  EXPECT_TRUE(record.empty() && field.empty()) << "last record not ended by CRLF";
  return records;
}

using Csv = std::vector<std::vector<std::string>>;
const std::vector<std::string> kCsvHeader = {"lsn", "time",     "caller", "table",  "pk",   "rk",
                                             "op",  "property", "change", "before", "after"};
constexpr const char* kT = "2026-11-30T10:00:00.1234567Z";

TEST(AuditCsvTest, ExactTextWithQuoting) {
  const Entity before = MakeEntity({{"Salary", Value::Int64(50000)}, {"Note", Value::String("a,b")}});
  const Entity after = MakeEntity({{"Note", Value::String("say \"hi\"")},
                                   {"Salary", Value::Int64(55000)},
                                   {"\xC3\x9Cn\xC3\xAF \xE2\x9C\x93", Value::String("na\xC3\xAFve \xF0\x9F\x98\x80")},
                                   {"cr", Value::String("a\rb")}});
  AuditWriter writer(AuditFormat::kCsv, ReplayFilter{});
  std::string out;
  writer.Begin(&out);
  EXPECT_EQ(writer.Write(EntitiesRecord(42, {Op("line1\nline2", OpKind::kMerge, before, after, "W/\"1\"")},
                                        "hr, app", "Sales \"East\""),
                         &out, nullptr),
            1u);
  const std::string prefix =
      "42,2026-11-30T10:00:00.1234567Z,\"hr, app\",Employees,\"Sales \"\"East\"\"\",\"line1\nline2\",Merge,";
  EXPECT_EQ(out,
            "lsn,time,caller,table,pk,rk,op,property,change,before,after\r\n" +
                prefix + "Note,modified,\"a,b\",\"say \"\"hi\"\"\"\r\n" +
                prefix + "Salary,modified,50000 (Edm.Int64),55000 (Edm.Int64)\r\n" +
                prefix + "cr,added,,\"a\rb\"\r\n" +
                prefix + "\xC3\x9Cn\xC3\xAF \xE2\x9C\x93,added,,na\xC3\xAFve \xF0\x9F\x98\x80\r\n");
  // And a reader gets the fields back.
  const Csv csv = ReadCsv(out);
  ASSERT_EQ(csv.size(), 5u);
  EXPECT_EQ(csv[0], kCsvHeader);
  EXPECT_EQ(csv[1], (std::vector<std::string>{"42", kT, "hr, app", "Employees", "Sales \"East\"", "line1\nline2",
                                              "Merge", "Note", "modified", "a,b", "say \"hi\""}));
  EXPECT_EQ(csv[3][9], "");
  EXPECT_EQ(csv[3][10], "a\rb");
}

TEST(AuditCsvTest, EveryTypeWithItsSuffix) {
  const Entity after = MakeEntity({
      {"a_str", Value::String("plain")},
      {"b_bin", Value::Binary(std::string("\x00\xff", 2))},
      {"c_bool", Value::Boolean(true)},
      {"d_date", Value::DateTime(kTime)},
      {"e_dbl", Value::Double(0.5)},
      {"f_nan", Value::Double(kNaN)},
      {"g_inf", Value::Double(-kInf)},
      {"h_guid", Value::MakeGuid(kGuid1)},
      {"i_i32", Value::Int32(-7)},
      {"j_i64", Value::Int64(std::numeric_limits<int64_t>::min())},
      {"k_strnum", Value::String("55000 (Edm.Int64)")},
  });
  AuditWriter writer(AuditFormat::kCsv, ReplayFilter{});
  std::string out;
  ASSERT_EQ(writer.Write(EntitiesRecord(1, {Op("r", OpKind::kInsert, std::nullopt, after, "e")}), &out, nullptr), 1u);
  const Csv csv = ReadCsv(out);
  ASSERT_EQ(csv.size(), after.properties.size());
  std::vector<std::string> got;
  for (const auto& line : csv) {
    ASSERT_EQ(line.size(), 11u);
    EXPECT_EQ(line[8], "added");
    EXPECT_EQ(line[9], "");
    got.push_back(line[10]);
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "plain",
                     "X'00FF' (Edm.Binary)",
                     "true (Edm.Boolean)",
                     "2026-11-30T10:00:00.1234567Z (Edm.DateTime)",
                     "0.5 (Edm.Double)",
                     Value::Double(kNaN).ToString() + " (Edm.Double)",
                     Value::Double(-kInf).ToString() + " (Edm.Double)",
                     "c9da6455-213d-42c9-9a79-3e9149a57833 (Edm.Guid)",
                     "-7 (Edm.Int32)",
                     "-9223372036854775808 (Edm.Int64)",
                     "55000 (Edm.Int64)",  // a String: no suffix of its own
                 }));
}

TEST(AuditCsvTest, NoChangeTableEventAndArchiveLines) {
  const Entity e = MakeEntity({{"x", Value::Int32(1)}});
  AuditWriter writer(AuditFormat::kCsv, ReplayFilter{});
  std::string out;
  EXPECT_EQ(writer.Write(EntitiesRecord(2, {Op("r", OpKind::kInsertOrReplace, e, e, "e"),
                                            Op("s", OpKind::kDelete, MakeEntity({}), std::nullopt)}),
                         &out, nullptr),
            2u);
  EXPECT_EQ(writer.Write(TableEvent(1, ChangeKind::kTableCreated, ""), &out, nullptr), 1u);
  EXPECT_EQ(writer.Write(ArchiveRecord(3, {"a,1"}), &out, nullptr), 1u);
  EXPECT_EQ(ReadCsv(out),
            (Csv{{"2", kT, "hr-app", "Employees", "Sales", "r", "InsertOrReplace", "", "", "", ""},
                 {"2", kT, "hr-app", "Employees", "Sales", "s", "Delete", "", "", "", ""},
                 {"1", kT, "", "Employees", "", "", "TableCreated", "", "", "", ""},
                 {"3", kT, "archiver", "Employees", "Sales", "a,1", "ArchiveRequested", "", "", "", "EmployeesArchive"}}));
}

// ---- filtering -----------------------------------------------------------------

// The (lsn, rk) of every JSON row written.
std::vector<std::pair<uint64_t, std::string>> RowIds(const std::string& out) {
  std::vector<std::pair<uint64_t, std::string>> ids;
  for (const auto& row : ParseRows(out)) {
    std::string_view rk;
    if (row->obj["rk"].get_string().get(rk) != simdjson::SUCCESS) rk = "-";
    ids.emplace_back(UInt(row->obj, "lsn"), std::string(rk));
  }
  return ids;
}

std::vector<ChangeRecord> History() {
  const Entity e = MakeEntity({{"x", Value::Int32(1)}});
  std::vector<ChangeRecord> h;
  h.push_back(TableEvent(1, ChangeKind::kTableCreated));
  h.push_back(EntitiesRecord(2,
                             {Op("a", OpKind::kInsert, std::nullopt, e, "e"), Op("b", OpKind::kInsert, std::nullopt, e, "e"),
                              Op("c", OpKind::kInsert, std::nullopt, e, "e"), Op("d", OpKind::kInsert, std::nullopt, e, "e")},
                             "hr-app", "Sales", kTime));
  h.push_back(EntitiesRecord(3, {Op("b", OpKind::kUpdate, e, e, "e")}, "payroll", "Sales", kTime + 10));
  h.push_back(EntitiesRecord(4, {Op("c", OpKind::kDelete, e, std::nullopt)}, "hr-app", "Ops", kTime + 20));
  h.push_back(ArchiveRecord(5, {"a", "c"}));
  h.push_back(TableEvent(6, ChangeKind::kTableDeleted));
  h.back().commit_time = kTime + 30;
  return h;
}

std::vector<std::pair<uint64_t, std::string>> Audit(const ReplayFilter& f, AuditSummary* summary = nullptr) {
  AuditWriter writer(AuditFormat::kJsonl, f);
  std::string out;
  size_t n = 0;
  for (const auto& r : History()) n += writer.Write(r, &out, summary);
  auto ids = RowIds(out);
  EXPECT_EQ(n, ids.size());
  return ids;
}

using Ids = std::vector<std::pair<uint64_t, std::string>>;

TEST(AuditFilterTest, EverythingWithoutAFilter) {
  EXPECT_EQ(Audit({}), (Ids{{1, "-"}, {2, "a"}, {2, "b"}, {2, "c"}, {2, "d"}, {3, "b"}, {4, "c"}, {5, "a"}, {5, "c"}, {6, "-"}}));
}

TEST(AuditFilterTest, RowKeyRangeSelectsOperations) {
  ReplayFilter f;
  f.rk_from = "b";
  f.rk_to = "d";
  AuditSummary summary;
  EXPECT_EQ(Audit(f, &summary), (Ids{{2, "b"}, {2, "c"}, {3, "b"}, {4, "c"}, {5, "c"}}));
  using K = std::tuple<std::string, std::string, std::string>;
  EXPECT_EQ(summary.counts(), (std::map<K, uint64_t>{{{"Employees", "Insert", "hr-app"}, 2},
                                                     {{"Employees", "Update", "payroll"}, 1},
                                                     {{"Employees", "Delete", "hr-app"}, 1},
                                                     {{"Employees", "ArchiveRequested", "archiver"}, 1}}));
  EXPECT_EQ(summary.rows(), 5u);
}

TEST(AuditFilterTest, PartitionKeyCallerTimeTableAndLsn) {
  ReplayFilter pk;
  pk.pk = "Ops";
  EXPECT_EQ(Audit(pk), (Ids{{4, "c"}}));

  ReplayFilter caller;
  caller.caller = "hr-app";
  EXPECT_EQ(Audit(caller), (Ids{{2, "a"}, {2, "b"}, {2, "c"}, {2, "d"}, {4, "c"}}));

  ReplayFilter time;
  time.since = kTime + 10;
  time.until = kTime + 30;
  EXPECT_EQ(Audit(time), (Ids{{3, "b"}, {4, "c"}}));

  ReplayFilter table;
  table.table = "EMPLOYEES";
  EXPECT_EQ(Audit(table).size(), 10u);
  table.table = "Other";
  EXPECT_EQ(Audit(table), Ids{});

  ReplayFilter lsn;
  lsn.from_lsn = 3;
  lsn.to_lsn = 5;
  EXPECT_EQ(Audit(lsn), (Ids{{3, "b"}, {4, "c"}, {5, "a"}, {5, "c"}}));

  ReplayFilter combined;
  combined.pk = "Sales";
  combined.caller = "hr-app";
  combined.rk_to = "c";
  EXPECT_EQ(Audit(combined), (Ids{{2, "a"}, {2, "b"}}));
}

TEST(AuditFilterTest, FilteredRowsAreNeitherWrittenNorCounted) {
  ReplayFilter f;
  f.rk_from = "x";
  AuditWriter writer(AuditFormat::kCsv, f);
  std::string out = "keep";
  AuditSummary summary;
  for (const auto& r : History()) EXPECT_EQ(writer.Write(r, &out, &summary), 0u);
  EXPECT_EQ(out, "keep");
  EXPECT_EQ(summary.rows(), 0u);
  EXPECT_TRUE(summary.counts().empty());
}

// ---- summary -------------------------------------------------------------------

AuditSummary SampleSummary() {
  AuditSummary s;
  s.Add("Employees", "Insert", "hr-app", 3);
  s.Add("Employees", "Insert", "hr-app");
  s.Add("Employees", "Delete", "");
  s.Add("T\"2\xC3\xA9", "Merge", "x,y\n", 5);
  s.Add("Employees", "Merge", "x,y\n", 0);  // nothing
  s.set_fenced(3);                           // records skipped, no rows
  s.set_undecodable(2);                      // messages skipped, no rows
  return s;
}

TEST(AuditSummaryTest, CountsAndJsonAndCsv) {
  const AuditSummary s = SampleSummary();
  EXPECT_EQ(s.rows(), 10u);
  using K = std::tuple<std::string, std::string, std::string>;
  EXPECT_EQ(s.counts(), (std::map<K, uint64_t>{{{"Employees", "Delete", ""}, 1},
                                               {{"Employees", "Insert", "hr-app"}, 4},
                                               {{"T\"2\xC3\xA9", "Merge", "x,y\n"}, 5}}));
  EXPECT_EQ(s.ToJson(),
            "{\"rows\":10,\"fenced\":3,\"undecodable\":2,\"byTable\":{\"Employees\":5,"
            "\"T\\\"2\xC3\xA9\":5},"
            "\"byOp\":{\"Delete\":1,\"Insert\":4,\"Merge\":5},"
            "\"byCaller\":{\"\":1,\"hr-app\":4,\"x,y\\n\":5},"
            "\"counts\":[{\"table\":\"Employees\",\"op\":\"Delete\",\"caller\":\"\",\"count\":1},"
            "{\"table\":\"Employees\",\"op\":\"Insert\",\"caller\":\"hr-app\",\"count\":4},"
            "{\"table\":\"T\\\"2\xC3\xA9\",\"op\":\"Merge\",\"caller\":\"x,y\\n\",\"count\":5}]}");
  EXPECT_EQ(ReadCsv(s.ToCsv()), (Csv{{"table", "op", "caller", "count"},
                                     {"Employees", "Delete", "", "1"},
                                     {"Employees", "Insert", "hr-app", "4"},
                                     {"T\"2\xC3\xA9", "Merge", "x,y\n", "5"}}));
}

TEST(AuditSummaryTest, JsonRoundTrip) {
  for (const AuditSummary& s : {AuditSummary{}, SampleSummary()}) {
    const std::string text = s.ToJson();
    auto back = AuditSummary::FromJson(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->rows(), s.rows());
    EXPECT_EQ(back->counts(), s.counts());
    EXPECT_EQ(back->fenced(), s.fenced());
    EXPECT_EQ(back->undecodable(), s.undecodable());
    EXPECT_EQ(back->ToJson(), text);
    // It keeps counting where it left off.
    back->Add("Employees", "Insert", "hr-app");
    EXPECT_EQ(back->rows(), s.rows() + 1);
  }
  // A checkpoint written before "fenced" and "undecodable" existed: none.
  std::string old = SampleSummary().ToJson();
  old.erase(old.find("\"fenced\":3,\"undecodable\":2,"), 27);
  auto before = AuditSummary::FromJson(old);
  ASSERT_TRUE(before.ok()) << old << ": " << before.status().ToString();
  EXPECT_EQ(before->fenced(), 0u);
  EXPECT_EQ(before->undecodable(), 0u);
  EXPECT_EQ(before->rows(), 10u);
  auto big = AuditSummary{};
  big.Add("t", "o", "c", UINT64_MAX);
  auto back = AuditSummary::FromJson(big.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rows(), UINT64_MAX);
}

TEST(AuditSummaryTest, FromJsonRejectsMalformedInput) {
  const std::string good = SampleSummary().ToJson();
  auto replace = [&](std::string_view from, std::string_view to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  const std::vector<std::string> bad = {
      "",
      "not json",
      good.substr(0, good.size() - 1),  // truncated
      "[]",
      "42",
      "{}",
      replace("\"rows\":10", "\"rows\":11"),  // not the sum
      replace("\"rows\":10", "\"rows\":-10"),
      replace("\"rows\":10", "\"rows\":\"10\""),
      replace("\"rows\":10,", ""),  // missing
      replace("\"fenced\":3", "\"fenced\":-3"),
      replace("\"fenced\":3", "\"fenced\":\"3\""),
      replace("\"fenced\":3", "\"fenced\":null"),
      replace("\"undecodable\":2", "\"undecodable\":-2"),
      replace("\"undecodable\":2", "\"undecodable\":\"2\""),
      replace("\"counts\":[", "\"counts\":{\"x\":[") + "}",  // not an array
      replace("\"count\":1}", "\"count\":-1}"),
      replace("\"count\":1}", "\"count\":1.5}"),
      replace("\"count\":1}", "\"count\":\"1\"}"),
      replace(",\"count\":1}", "}"),    // no count
      replace("\"caller\":\"\",", ""),  // no caller
      replace("\"op\":\"Delete\"", "\"op\":7"),
      replace("\"table\":\"Employees\",\"op\":\"Delete\"", "\"table\":null,\"op\":\"Delete\""),
      replace("{\"table\":\"Employees\",\"op\":\"Delete\",\"caller\":\"\",\"count\":1},", "1,"),
      // The same triple twice (rows adjusted to match).
      replace("\"rows\":10", "\"rows\":11")
          .replace(good.find("\"counts\":[") + 10, 0,
                   "{\"table\":\"Employees\",\"op\":\"Delete\",\"caller\":\"\",\"count\":1},"),
      // Totals that disagree with the counts, or are missing.
      replace("\"byOp\":{\"Delete\":1,", "\"byOp\":{\"Delete\":2,"),
      replace("\"byTable\":{\"Employees\":5,", "\"byTable\":{\"Employees\":5,\"Extra\":0,"),
      replace("\"byCaller\":{\"\":1,\"hr-app\":4,\"x,y\\n\":5},", ""),
      replace("\"byOp\":{\"Delete\":1,\"Insert\":4,\"Merge\":5}", "\"byOp\":[]"),
      replace("\"byTable\":{\"Employees\":5,", "\"byTable\":{\"Employees\":\"5\","),
  };
  for (const std::string& text : bad) {
    auto s = AuditSummary::FromJson(text);
    EXPECT_FALSE(s.ok()) << text;
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), Code::kInvalidInput) << text;
    }
  }
}

}  // namespace
}  // namespace sidetable::replay
