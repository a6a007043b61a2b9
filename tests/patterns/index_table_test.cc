#include "patterns/index_table/index_table.h"

#include <gtest/gtest.h>

#include "patterns/registry.h"
#include "tests/patterns/table_sim.h"

namespace sidetable::patterns {
namespace {

using testing::MakeEntity;
using testing::SourceSim;
using testing::TableStore;
using Kind = TableOp::Kind;

std::unique_ptr<Pattern> MakeIndex(std::map<std::string, std::vector<std::string>> settings) {
  auto p = CreatePattern({"index_table", std::move(settings)});
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(p).value() : nullptr;
}

std::unique_ptr<Pattern> EmailIndex() {
  return MakeIndex({{"source", {"Employees"}},
                    {"target", {"EmployeesByEmail"}},
                    {"properties", {"Email"}},
                    {"project", {"Name"}}});
}

std::vector<TableOp> IndexOps(const Pattern& p, const ChangeRecord& r) {
  std::vector<TableOp> out;
  EXPECT_TRUE(p.Apply(r, &out).ok());
  return out;
}

bool SameEntity(const Entity& a, const Entity& b) {
  return a.partition_key == b.partition_key && a.row_key == b.row_key &&
         a.properties == b.properties;
}
bool SameOps(const std::vector<TableOp>& a, const std::vector<TableOp>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i].kind != b[i].kind || a[i].table != b[i].table ||
        a[i].source_table != b[i].source_table || a[i].version != b[i].version ||
        !SameEntity(a[i].entity, b[i].entity)) {
      return false;
    }
  }
  return true;
}

Entity Emp(const std::string& rk, std::vector<Property> props) {
  return MakeEntity("Sales", rk, std::move(props));
}

TEST(IndexTableTest, InsertWritesOneEntryNamingTheSource) {
  auto index = EmailIndex();
  SourceSim src("Employees");
  auto r = src.Write(OpKind::kInsert, Emp("e1", {{"Email", Value::String("jo@x.com")},
                                                 {"Name", Value::String("Jo")},
                                                 {"Age", Value::Int32(40)}}));
  ASSERT_TRUE(index->Wants(r));
  auto ops = IndexOps(*index, r);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedUpsert);
  EXPECT_EQ(ops[0].table, "EmployeesByEmail");
  EXPECT_EQ(ops[0].version, r.lsn);
  const Entity& e = ops[0].entity;
  EXPECT_EQ(e.partition_key, "jo@x.com");
  EXPECT_EQ(e.row_key, "Sales|e1");
  std::vector<Property> want = {{"SourcePartitionKey", Value::String("Sales")},
                                {"SourceRowKey", Value::String("e1")},
                                {"SourceVersion", Value::Int64(static_cast<int64_t>(r.lsn))},
                                {"Name", Value::String("Jo")}};
  EXPECT_EQ(e.properties, want);
}

TEST(IndexTableTest, EveryOpKindFollowsTheAfterImage) {
  auto index = EmailIndex();
  SourceSim src("Employees");
  src.Write(OpKind::kInsert,
            Emp("e1", {{"Email", Value::String("a@x")}, {"Name", Value::String("A")}}));

  // Merge without the indexed property: same value, new version, new projection.
  auto merge = src.Write(OpKind::kMerge, Emp("e1", {{"Name", Value::String("A2")}}));
  auto ops = IndexOps(*index, merge);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedUpsert);
  EXPECT_EQ(ops[0].entity.partition_key, "a@x");
  EXPECT_EQ(ops[0].version, merge.lsn);
  EXPECT_EQ(*ops[0].entity.Find("Name"), Value::String("A2"));
  EXPECT_EQ(*ops[0].entity.Find("SourceVersion"), Value::Int64(static_cast<int64_t>(merge.lsn)));

  // Update changing the value: the old entry goes, fenced at the new version.
  auto update = src.Write(OpKind::kUpdate, Emp("e1", {{"Email", Value::String("b@x")}}));
  ops = IndexOps(*index, update);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[0].entity.partition_key, "a@x");
  EXPECT_EQ(ops[0].entity.row_key, "Sales|e1");
  EXPECT_EQ(ops[0].version, update.lsn);
  EXPECT_EQ(ops[1].kind, Kind::kFencedUpsert);
  EXPECT_EQ(ops[1].entity.partition_key, "b@x");
  EXPECT_EQ(ops[1].entity.Find("Name"), nullptr);  // Update replaced it away

  // InsertOrMerge changing the value.
  auto iom = src.Write(OpKind::kInsertOrMerge, Emp("e1", {{"Email", Value::String("c@x")}}));
  ops = IndexOps(*index, iom);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].entity.partition_key, "b@x");
  EXPECT_EQ(ops[1].entity.partition_key, "c@x");

  // InsertOrReplace without the property: the entry goes.
  auto ior = src.Write(OpKind::kInsertOrReplace, Emp("e1", {{"Name", Value::String("C")}}));
  ops = IndexOps(*index, ior);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[0].entity.partition_key, "c@x");

  // InsertOrReplace bringing it back, then a Delete (before image).
  src.Write(OpKind::kInsertOrReplace, Emp("e1", {{"Email", Value::String("d@x")}}));
  auto del = src.Delete("Sales", "e1");
  ops = IndexOps(*index, del);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[0].entity.partition_key, "d@x");
  EXPECT_EQ(ops[0].version, del.lsn);

  // An entity without the property: nothing to index or delete.
  EXPECT_TRUE(IndexOps(*index, src.Write(OpKind::kInsert, Emp("e2", {}))).empty());
  EXPECT_TRUE(IndexOps(*index, src.Delete("Sales", "e2")).empty());
}

TEST(IndexTableTest, TypeChangeMovesTheEntryOnlyWhenTheTextChanges) {
  auto index = MakeIndex({{"source", {"Tab1"}}, {"target", {"Tab2"}}, {"properties", {"P"}}});
  SourceSim src("Tab1");
  src.Write(OpKind::kInsert, Emp("r", {{"P", Value::Int32(5)}}));
  auto same_text = src.Write(OpKind::kUpdate, Emp("r", {{"P", Value::Int64(5)}}));
  auto ops = IndexOps(*index, same_text);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedUpsert);
  EXPECT_EQ(ops[0].entity.partition_key, "5");

  src.Write(OpKind::kUpdate, Emp("r", {{"P", Value::Boolean(true)}}));
  auto new_text = src.Write(OpKind::kUpdate, Emp("r", {{"P", Value::String("yes")}}));
  ops = IndexOps(*index, new_text);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[0].entity.partition_key, "true");
  EXPECT_EQ(ops[1].entity.partition_key, "yes");
}

TEST(IndexTableTest, TableEventsAndOtherTables) {
  auto index = EmailIndex();
  SourceSim src("employees");  // table names are case-insensitive
  ChangeRecord created;
  created.kind = ChangeKind::kTableCreated;
  created.table = "Employees";
  created.lsn = 3;
  EXPECT_FALSE(index->Wants(created));
  EXPECT_TRUE(IndexOps(*index, created).empty());

  auto w = src.Write(OpKind::kInsert, Emp("e", {{"Email", Value::String("x")}}));
  EXPECT_TRUE(index->Wants(w));

  auto deleted = src.DeleteTable();
  ASSERT_TRUE(index->Wants(deleted));
  auto ops = IndexOps(*index, deleted);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedClear);
  EXPECT_EQ(ops[0].table, "EmployeesByEmail");
  EXPECT_EQ(ops[0].version, deleted.lsn);
  // In a cluster (docs/scale-out.md, "Table events in a cluster") entity
  // versions are epoch << 40 | lsn with each owner's own LSNs: the clear
  // covers every version of the event's epoch and below, whatever the LSN.
  deleted.epoch = 3;
  ops = IndexOps(*index, deleted);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].version, (uint64_t{3} << 40) | ((uint64_t{1} << 40) - 1));
  EXPECT_GT(ops[0].version, (uint64_t{3} << 40) | 987654321) << "another owner's higher LSN";
  EXPECT_LT(ops[0].version, uint64_t{4} << 40);

  SourceSim other("Customers");
  auto o = other.Write(OpKind::kInsert, Emp("e", {{"Email", Value::String("x")}}));
  EXPECT_FALSE(index->Wants(o));
  EXPECT_TRUE(IndexOps(*index, o).empty());
  EXPECT_FALSE(index->Wants(other.DeleteTable()));
  EXPECT_FALSE(index->Wants(src.RequestArchive("Sales", {"e"}, "Old")));
}

TEST(IndexTableTest, SeveralPropertiesGetOneEntryEach) {
  auto index = MakeIndex({{"source", {"Employees"}},
                          {"target", {"EmpIdx"}},
                          {"properties", {"Email", "Dept"}},
                          {"layout", {"{property}_{value}"}}});
  SourceSim src("Employees");
  auto ins =
      src.Write(OpKind::kInsert,
                Emp("e1", {{"Email", Value::String("a@x")}, {"Dept", Value::String("Ops")}}));
  auto ops = IndexOps(*index, ins);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].entity.partition_key, "Email_a@x");
  EXPECT_EQ(*ops[0].entity.Find("IndexedProperty"), Value::String("Email"));
  EXPECT_EQ(ops[1].entity.partition_key, "Dept_Ops");
  EXPECT_EQ(*ops[1].entity.Find("IndexedProperty"), Value::String("Dept"));
  EXPECT_EQ(ops[0].entity.row_key, ops[1].entity.row_key);

  // Only Dept changes: Email is re-upserted, Dept moves.
  auto merge = src.Write(OpKind::kMerge, Emp("e1", {{"Dept", Value::String("Dev")}}));
  ops = IndexOps(*index, merge);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedUpsert);
  EXPECT_EQ(ops[0].entity.partition_key, "Email_a@x");
  EXPECT_EQ(ops[1].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[1].entity.partition_key, "Dept_Ops");
  EXPECT_EQ(ops[2].entity.partition_key, "Dept_Dev");
}

TEST(IndexTableTest, PrefixLayoutAndEscapedValues) {
  auto index = MakeIndex({{"source", {"Employees"}},
                          {"target", {"EmpIdx"}},
                          {"properties", {"Email"}},
                          {"prefix", {"email"}}});
  SourceSim src("Employees");
  auto ins =
      src.Write(OpKind::kInsert, MakeEntity("a|b", "c%d", {{"Email", Value::String("x/y#z?%")}}));
  auto ops = IndexOps(*index, ins);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].entity.partition_key, "email_x%2Fy%23z%3F%25");
  EXPECT_EQ(ops[0].entity.row_key, "a%7Cb|c%25d");
  auto keys = ParseSourceRowKey(ops[0].entity.row_key);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->partition_key, "a|b");
  EXPECT_EQ(keys->row_key, "c%d");
  EXPECT_EQ(*ops[0].entity.Find("SourcePartitionKey"), Value::String("a|b"));
}

TEST(IndexTableTest, TooLongValuesAreSkippedAndTheirOldEntryRemoved) {
  auto index = MakeIndex({{"source", {"Tab1"}}, {"target", {"Tab2"}}, {"properties", {"P"}}});
  SourceSim src("Tab1");
  EXPECT_TRUE(IndexOps(*index, src.Write(OpKind::kInsert,
                                         Emp("r", {{"P", Value::String(std::string(600, 'x'))}})))
                  .empty());
  EXPECT_EQ(
      IndexOps(*index, src.Write(OpKind::kUpdate, Emp("r", {{"P", Value::String("ok")}}))).size(),
      1u);
  auto ops = IndexOps(
      *index, src.Write(OpKind::kUpdate, Emp("r", {{"P", Value::Binary(std::string(1000, 'b'))}})));
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].kind, Kind::kFencedDelete);
  EXPECT_EQ(ops[0].entity.partition_key, "ok");

  size_t skipped = 0;
  auto expected = ExpectedIndex(static_cast<const IndexTablePattern&>(*index).config(),
                                src.Entities(), &skipped);
  EXPECT_TRUE(expected.empty());
  EXPECT_EQ(skipped, 1u);
}

TEST(IndexTableTest, SourceKeysTooLongForOneRowKeyAreSkipped) {
  auto index = MakeIndex({{"source", {"Tab1"}}, {"target", {"Tab2"}}, {"properties", {"P"}}});
  SourceSim src("Tab1");
  auto r = src.Write(OpKind::kInsert, MakeEntity(std::string(300, 'p'), std::string(300, 'r'),
                                                 {{"P", Value::Int32(1)}}));
  EXPECT_TRUE(IndexOps(*index, r).empty());
  EXPECT_TRUE(IndexOps(*index, src.Delete(std::string(300, 'p'), std::string(300, 'r'))).empty());
}

TEST(IndexTableTest, RedeliveryProducesIdenticalOps) {
  auto index = MakeIndex({{"source", {"Employees"}},
                          {"target", {"EmpIdx"}},
                          {"properties", {"Email", "Dept"}},
                          {"layout", {"{value}_{property}"}},
                          {"project", {"Name", "Dept"}}});
  SourceSim src("Employees");
  std::vector<ChangeRecord> records = {
      src.Write(OpKind::kInsert,
                Emp("e", {{"Email", Value::String("a")}, {"Name", Value::String("n")}})),
      src.Write(OpKind::kMerge, Emp("e", {{"Dept", Value::Int64(3)}})),
      src.Write(OpKind::kUpdate, Emp("e", {{"Dept", Value::Double(3.5)}})),
      src.Delete("Sales", "e"), src.DeleteTable()};
  for (const auto& r : records) {
    EXPECT_TRUE(SameOps(IndexOps(*index, r), IndexOps(*index, r)));
    ChangeRecord copy = r;
    EXPECT_TRUE(SameOps(IndexOps(*index, r), IndexOps(*index, copy)));
  }
}

TEST(IndexTableTest, ExpectedIndexMatchesInOrderApplication) {
  auto pattern = MakeIndex({{"source", {"Employees"}},
                            {"target", {"EmpIdx"}},
                            {"properties", {"Email", "Dept"}},
                            {"layout", {"{property}_{value}"}},
                            {"project", {"Name"}}});
  SourceSim src("Employees");
  TableStore store;
  auto run = [&](const ChangeRecord& r) { store.ApplyAll(IndexOps(*pattern, r)); };
  run(src.Write(OpKind::kInsert,
                Emp("a", {{"Email", Value::String("a@x")}, {"Name", Value::String("A")}})));
  run(src.Write(OpKind::kInsert, Emp("b", {{"Dept", Value::String("Ops")}})));
  run(src.Write(OpKind::kMerge, Emp("a", {{"Dept", Value::String("Ops")}})));
  run(src.Write(OpKind::kUpdate, Emp("b", {{"Email", Value::String("b@x")}})));
  run(src.Write(OpKind::kInsertOrReplace, Emp("c", {{"Email", Value::String("a@x")}})));
  const auto& config = static_cast<const IndexTablePattern&>(*pattern).config();
  auto expected = ExpectedIndex(config, src.Entities());
  auto actual = store.Contents("EmpIdx");
  ASSERT_EQ(expected.size(), 4u);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); i++) {
    EXPECT_TRUE(SameEntity(actual[i], expected[i]))
        << actual[i].partition_key << " " << actual[i].row_key;
  }
}

TEST(IndexTableConfigTest, LayoutMustKeepPropertiesApart) {
  auto config = [](std::vector<std::string> props, std::string layout) {
    PatternConfig c{"index_table",
                    {{"source", {"Src"}}, {"target", {"Dst"}}, {"properties", props}}};
    if (!layout.empty()) c.settings["layout"] = {layout};
    return IndexTableConfig::FromSettings(c);
  };
  EXPECT_FALSE(config({"A", "B"}, "").ok());                      // both "{value}"
  EXPECT_FALSE(config({"A", "A_B"}, "{property}_{value}").ok());  // "A_" + "B_x" == "A_B_" + "x"
  EXPECT_TRUE(config({"A", "A_B"}, "{value}_{property}").ok());
  EXPECT_TRUE(config({"Email", "Dept"}, "{property}_{value}").ok());
  EXPECT_TRUE(config({"Email"}, "").ok());
  auto bad = config({"A", "B"}, "{value}");
  EXPECT_EQ(bad.status().code(), Code::kInvalidInput);
  EXPECT_NE(bad.status().message().find("layout"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::patterns
