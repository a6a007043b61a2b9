// VisitQuery (the page without an Entity per row) against ExecuteQuery, the
// filter the plan leaves to test per row (ResidualFilter), and corrupt stored
// rows: an Internal error from every read path, never a crash.
#include <gtest/gtest.h>

#include <rocksdb/db.h>

#include "engine/internal/codec.h"
#include "engine/internal/rocksdb_options.h"
#include "engine/query/query.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::query {
namespace {

using sidetable::testing::MakeEntity;

// Collects what a visitor sees, as Entities (every property).
class Collect : public RowVisitor {
 public:
  Status Visit(const RowView& row) override {
    ETagBuffer buf;
    etags.emplace_back(row.ETag(&buf));
    // ExecuteQuery's measure, so the pages of both end at the same row.
    bytes_ += row.partition_key().size() + row.row_key().size() + row.properties_bytes().size();
    return RowToEntity(row, &entities.emplace_back());
  }
  uint64_t bytes() const override { return bytes_; }
  std::vector<Entity> entities;
  uint64_t bytes_ = 0;
  std::vector<std::string> etags;
};

class QueryVisitTest : public sidetable::testing::EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable("Tbl").ok());
    for (int p = 0; p < 3; p++) {
      Batch b("Tbl");
      for (int r = 0; r < 30; r++) {
        char rk[8];
        std::snprintf(rk, sizeof rk, "r%02d", r);
        Entity e = MakeEntity("p" + std::to_string(p), rk, 30 * p + r);
        if (r % 3 == 0) e.Set("third", Value::Boolean(true));
        b.Insert(std::move(e));
      }
      ASSERT_TRUE(Run(b).ok());
    }
  }

  // Overwrites the stored row of (pk, rk) with `bytes`, behind the engine's back.
  void CorruptRow(const std::string& pk, const std::string& rk, const std::string& bytes) {
    auto info = engine_->GetTable("Tbl");
    ASSERT_TRUE(info.ok());
    const std::string path = dir_.Sub("db");
    engine_.reset();
    {
      internal::RocksDbOptionSet opts = internal::MakeRocksDbOptions(options_);
      std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
          {rocksdb::kDefaultColumnFamilyName, opts.meta},
          {"entities", opts.entities},
          {"changelog", opts.changelog},
          {"requests", opts.requests},
          {"images", opts.images},
      };
      std::vector<rocksdb::ColumnFamilyHandle*> handles;
      rocksdb::DB* raw = nullptr;
      ASSERT_TRUE(rocksdb::DB::Open(opts.db, path, cfs, &handles, &raw).ok());
      ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), handles[1], codec::EntityKey(info->id, pk, rk), bytes).ok());
      for (auto* h : handles) ASSERT_TRUE(raw->DestroyColumnFamilyHandle(h).ok());
      delete raw;
    }
    Reopen();
  }

  // Every page of the query both ways; they must agree page by page.
  void ExpectSame(Query q) {
    q.table = "Tbl";
    for (int pages = 0; pages < 1000; pages++) {
      auto want = ExecuteQuery(*engine_, q);
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      Collect got;
      auto visited = VisitQuery(*engine_, q, got);
      ASSERT_TRUE(visited.ok()) << visited.status().ToString();
      ASSERT_EQ(got.entities.size(), want->entities.size()) << q.filter;
      const auto keep = UserSelect(q.select);
      for (size_t i = 0; i < got.entities.size(); i++) {
        Entity& g = got.entities[i];
        const Entity& w = want->entities[i];
        EXPECT_EQ(g.partition_key, w.partition_key);
        EXPECT_EQ(g.row_key, w.row_key);
        EXPECT_EQ(g.timestamp, w.timestamp);
        EXPECT_EQ(g.etag, w.etag);
        EXPECT_EQ(got.etags[i], w.etag);
        // The visitor sees every property; ExecuteQuery has projected them.
        if (keep) {
          std::erase_if(g.properties, [&](const Property& p) {
            return std::find(keep->begin(), keep->end(), p.name) == keep->end();
          });
        }
        EXPECT_EQ(g.properties, w.properties) << q.filter << " #" << i;
      }
      EXPECT_EQ(visited->stats.examined, want->stats.examined);
      EXPECT_EQ(visited->stats.returned, want->stats.returned);
      EXPECT_EQ(visited->stats.plan, want->stats.plan);
      EXPECT_EQ(visited->continuation, want->continuation);
      if (!want->continuation) return;
      q.continuation = want->continuation;
    }
    FAIL() << "no end";
  }
};

TEST_F(QueryVisitTest, AgreesWithExecuteQuery) {
  ExpectSame({.filter = "PartitionKey eq 'p1'"});
  ExpectSame({.filter = "PartitionKey eq 'p1'", .top = 7});
  ExpectSame({.filter = "PartitionKey eq 'p1' and third eq true", .top = 4});
  ExpectSame({.filter = "PartitionKey eq 'p1' and RowKey ge 'r05' and RowKey lt 'r20' and RowKey ne 'r10'"});
  ExpectSame({.filter = "PartitionKey ge 'p1' and n lt 50", .top = 9});
  ExpectSame({.filter = "PartitionKey eq 'p2' and RowKey eq 'r03'"});
  ExpectSame({.filter = "PartitionKey eq 'p2' and RowKey eq 'r03' and third eq false"});
  ExpectSame({.filter = "PartitionKey eq 'p2' and RowKey eq 'nope'"});
  ExpectSame({.filter = "third eq true or n eq 4", .select = {"n", "PartitionKey", "absent"}});
  ExpectSame({.filter = "", .top = 11, .max_examined = 5});
  ExpectSame({.filter = "n lt 70", .max_bytes = 1000});
  ExpectSame({.filter = "", .max_bytes = 1});
  ExpectSame({.filter = "PartitionKey eq 'a' and PartitionKey eq 'b'"});
}

TEST_F(QueryVisitTest, AVisitorErrorEndsThePage) {
  class Stop : public RowVisitor {
   public:
    Status Visit(const RowView&) override {
      return ++seen == 3 ? Status(Code::kServerBusy, "enough") : Status::OK();
    }
    uint64_t bytes() const override { return 0; }
    int seen = 0;
  } stop;
  auto r = VisitQuery(*engine_, {.table = "Tbl", .filter = "PartitionKey eq 'p0'"}, stop);
  EXPECT_EQ(r.status().code(), Code::kServerBusy);
  EXPECT_EQ(stop.seen, 3);

  // On a point plan too, even with the code a missing entity has.
  class NotFound : public RowVisitor {
   public:
    Status Visit(const RowView&) override { return Status(Code::kResourceNotFound, "mine"); }
    uint64_t bytes() const override { return 0; }
  } not_found;
  auto p = VisitQuery(*engine_, {.table = "Tbl", .filter = "PartitionKey eq 'p0' and RowKey eq 'r01'"}, not_found);
  EXPECT_EQ(p.status().code(), Code::kResourceNotFound);
  EXPECT_EQ(p.status().message(), "mine");
}

TEST_F(QueryVisitTest, ErrorsAsExecuteQuery) {
  Collect c;
  EXPECT_EQ(VisitQuery(*engine_, {.table = "Nope"}, c).status().code(), Code::kTableNotFound);
  EXPECT_EQ(VisitQuery(*engine_, {.table = "Tbl", .filter = "n eq"}, c).status().code(), Code::kInvalidInput);
  EXPECT_EQ(VisitQuery(*engine_, {.table = "Tbl", .top = 0}, c).status().code(), Code::kInvalidInput);
  EXPECT_TRUE(c.entities.empty());
}

TEST_F(QueryVisitTest, ResidualFilterDropsWhatTheBoundsGuarantee) {
  auto residual = [](const std::string& text) -> std::string {
    auto f = ParseFilter(text);
    EXPECT_TRUE(f.ok()) << text;
    auto r = ResidualFilter(f->get(), MakePlan(f->get()));
    return r ? ToString(*r) : "";
  };
  EXPECT_EQ(residual("PartitionKey eq 'p'"), "");
  EXPECT_EQ(residual("PartitionKey eq 'p' and n gt 3"), "n gt 3");
  EXPECT_EQ(residual("n gt 3 and PartitionKey eq 'p' and m eq 1"), "n gt 3 and m eq 1");
  EXPECT_EQ(residual("PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b'"), "");
  EXPECT_EQ(residual("PartitionKey eq 'p' and RowKey ne 'a' and RowKey lt 'b'"), "RowKey ne 'a'");
  EXPECT_EQ(residual("PartitionKey ge 'a' and PartitionKey lt 'c' and RowKey eq 'x'"), "RowKey eq 'x'");
  EXPECT_EQ(residual("n gt 3"), "n gt 3");                          // a table scan keeps all
  EXPECT_EQ(residual("PartitionKey eq 'p' or n gt 3"), "PartitionKey eq 'p' or n gt 3");
  EXPECT_EQ(residual("not (PartitionKey eq 'p')"), "not (PartitionKey eq 'p')");
  EXPECT_EQ(residual("PartitionKey gt 'a\\u0000' and n eq 1").empty(), false);
  EXPECT_EQ(ResidualFilter(nullptr, Plan()), nullptr);
}

TEST_F(QueryVisitTest, ACorruptRowIsAnInternalErrorOnEveryPath) {
  Entity one;
  one.Set("n", Value::Int32(1)).Set("name", Value::String("x"));
  std::string row;
  codec::EncodeRow(one, 5, 6, &row);
  row.resize(row.size() - 1);  // the last value cut short
  CorruptRow("p1", "r04", row);

  Collect c;
  const std::vector<Query> queries = {
      {.table = "Tbl", .filter = "PartitionKey eq 'p1'"},
      {.table = "Tbl", .filter = "PartitionKey eq 'p1' and n eq -1"},  // the filter rejects it first
      {.table = "Tbl", .filter = "PartitionKey eq 'p1' and RowKey eq 'r04'"},
      {.table = "Tbl", .filter = "PartitionKey eq 'p1' and RowKey eq 'r04' and n eq -1"},
      {.table = "Tbl", .filter = "PartitionKey eq 'p1'", .select = {"n"}},
  };
  for (const Query& q : queries) {
    EXPECT_EQ(VisitQuery(*engine_, q, c).status().code(), Code::kInternal) << q.filter;
    EXPECT_EQ(ExecuteQuery(*engine_, q).status().code(), Code::kInternal) << q.filter;
  }
  EXPECT_EQ(engine_->GetRow("Tbl", "p1", "r04", [](const RowView&) { return Status::OK(); }).code(),
            Code::kOk)
      << "the header is fine: GetRow hands the row over, its reader finds the damage";
  EXPECT_EQ(engine_->Get("Tbl", "p1", "r04").status().code(), Code::kInternal);

  CorruptRow("p1", "r05", "");  // not even a header
  EXPECT_EQ(engine_->GetRow("Tbl", "p1", "r05", [](const RowView&) { return Status::OK(); }).code(),
            Code::kInternal);
  // Rows before the damage are untouched.
  auto page = ExecuteQuery(*engine_, {.table = "Tbl", .filter = "PartitionKey eq 'p1'", .top = 4});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->entities.size(), 4u);
}

TEST_F(QueryVisitTest, GetRowReadsInPlace) {
  int calls = 0;
  Status s = engine_->GetRow("Tbl", "p2", "r07", [&](const RowView& row) {
    calls++;
    EXPECT_EQ(row.partition_key(), "p2");
    EXPECT_EQ(row.row_key(), "r07");
    auto got = engine_->Get("Tbl", "p2", "r07");
    EXPECT_TRUE(got.ok());
    Entity e;
    EXPECT_TRUE(RowToEntity(row, &e).ok());
    EXPECT_EQ(e.properties, got->properties);
    EXPECT_EQ(e.etag, got->etag);
    return Status(Code::kUpdateConditionNotSatisfied, "returned as is");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(s.code(), Code::kUpdateConditionNotSatisfied);
  auto noop = [](const RowView&) { return Status::OK(); };
  EXPECT_EQ(engine_->GetRow("Tbl", "p2", "zz", noop).code(), Code::kResourceNotFound);
  EXPECT_EQ(engine_->GetRow("Nope", "p2", "r07", noop).code(), Code::kTableNotFound);
}

}  // namespace
}  // namespace sidetable::query
