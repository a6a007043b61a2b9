// Archive moves (apply/grouped_moves.h, the one-at-a-time OpApplier::Move
// and the event processor around them) when one entity cannot be moved.
// Regression for session 35's archive wedge: an Orders entity with 252
// properties (its copy, with SourceVersion, has 253) made the whole request
// or rule page fail, and every other entity of it was copied into the
// archive but never deleted from the source (in both tables).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "apply/event_processor.h"
#include "apply/grouped_moves.h"
#include "apply/grouped_writes.h"
#include "client/entity_builder.h"
#include "engine/etag.h"
#include "engine/limits.h"
#include "events/event.h"
#include "patterns/archive/archive.h"
#include "tests/apply/fake_table_store.h"

namespace sidetable::apply {
namespace {

using patterns::TableOp;

// `n` user properties, Status among them.
Entity Wide(const std::string& pk, const std::string& rk, size_t n) {
  client::EntityBuilder b(pk, rk);
  b.String("Status", "Shipped");
  for (size_t i = 1; i < n; i++) b.String("P" + std::to_string(i), "x");
  return b.Build();
}

// EntitySize (Azure's formula) exactly `size` (even).
Entity Sized(const std::string& pk, const std::string& rk, size_t size) {
  Entity e = client::EntityBuilder(pk, rk).String("Status", "Shipped").Build();
  // Values of 10,000 characters (20 KB each), then one to fill the rest.
  for (int i = 0; EntitySize(e) + 40000 < size; i++) {
    e.Set("S" + std::to_string(i), Value::String(std::string(10000, 'y')));
  }
  e.Set("T", Value::String(""));
  e.Set("T", Value::String(std::string((size - EntitySize(e)) / 2, 'z')));
  EXPECT_EQ(EntitySize(e), size);
  return e;
}

// The store refuses what the engine refuses: an entity over the limits (in
// a batch, by operation index). `refuse` (a RowKey) is refused too, as a
// permanent error no check up front can know.
struct MoveFixture {
  MoveFixture() {
    store.tables["Orders"];
    store.validate = [this](const Entity& e) {
      seen_copies.push_back(e.row_key);
      return ValidateEntity(e);
    };
    store.write_hook = [this](const Batch& b) {
      for (size_t i = 0; i < b.operations().size(); i++) {
        const Entity& e = b.operations()[i].entity;
        if (b.operations()[i].kind == OpKind::kFencedUpsert && e.row_key == refuse) {
          return Status(Code::kInvalidInput, "refused", static_cast<int>(i));
        }
      }
      return Status::OK();
    };
  }
  void Put(Entity e) {
    versions[e.row_key] = VersionFromETag(store.Put("Orders", std::move(e)).etag).value();
  }
  // One move per RowKey (partition from the entity), all of one event, as an
  // archive request's.
  std::vector<EventFailure> MoveAll(const std::vector<std::pair<std::string, std::string>>& keys) {
    ops.clear();
    for (const auto& [pk, rk] : keys) {
      ops.push_back(patterns::MakeArchiveMove(patterns::ArchiveConfig("Orders", "OrdersArchive"),
                                              "", pk, rk, versions[rk]));
    }
    std::vector<MoveItem> items;
    for (const TableOp& op : ops) items.push_back({&op, std::nullopt, 0});
    std::vector<EventFailure> failures(1);
    GroupedWrites writes(&store, &applier, &policy, &observer, &sleep);
    MoveMany(&store, &applier, &writes, items, &failures, &observer, &moved);
    return failures;
  }
  bool InSource(const std::string& pk, const std::string& rk) const {
    return store.Find("Orders", pk, rk);
  }
  bool InArchive(const std::string& pk, const std::string& rk) const {
    return store.Find("OrdersArchive", pk, rk);
  }

  testing::FakeTableStore store;
  OpApplier applier{&store, 4};
  RetryPolicy policy{2, 1, 1};
  ApplyObserver observer;
  GroupedWrites::Sleeper sleep = [](int) { return true; };
  std::string refuse;
  std::vector<std::string> seen_copies;
  std::map<std::string, uint64_t> versions;
  std::vector<TableOp> ops;
  uint64_t moved = 0;
};

TEST(MoveManyTest, AnEntityWhoseCopyCannotFitFailsAloneAndTheOthersAreMoved) {
  MoveFixture f;
  f.Put(Wide("req", "n3", 1));
  f.Put(Wide("req", "props252", 252));
  f.Put(Wide("req", "n4", 1));
  f.Put(Wide("zz", "w1", 1));
  auto failures = f.MoveAll({{"req", "n3"}, {"req", "props252"}, {"req", "n4"}, {"zz", "w1"}});

  for (const auto& [pk, rk] : std::vector<std::pair<std::string, std::string>>{
           {"req", "n3"}, {"req", "n4"}, {"zz", "w1"}}) {
    EXPECT_FALSE(f.InSource(pk, rk))
        << rk << " must be deleted from the source, not left in both tables";
    EXPECT_TRUE(f.InArchive(pk, rk)) << rk;
  }
  EXPECT_EQ(f.moved, 3u);
  EXPECT_TRUE(f.InSource("req", "props252")) << "never lost";
  EXPECT_FALSE(f.InArchive("req", "props252"));
  EXPECT_EQ(std::count(f.seen_copies.begin(), f.seen_copies.end(), "props252"), 0)
      << "refused before any write";
  const EventFailure& bad = failures[0];
  EXPECT_EQ(bad.status.code(), Code::kTooManyProperties);
  EXPECT_TRUE(bad.permanent);
  EXPECT_NE(bad.status.message().find("Orders(req, props252) -> OrdersArchive"), std::string::npos)
      << bad.status.ToString();
  EXPECT_NE(bad.status.message().find("253"), std::string::npos) << bad.status.ToString();
}

TEST(MoveManyTest, ACopyTheSidecarRefusesFailsAloneAndIsNamed) {
  MoveFixture f;
  f.store.tables["OrdersArchive"];  // (with the policy's 2 attempts, creating it would use one)
  f.refuse = "poison";
  f.Put(Wide("p", "a", 1));
  f.Put(Wide("p", "poison", 1));
  f.Put(Wide("p", "b", 1));
  auto failures = f.MoveAll({{"p", "a"}, {"p", "poison"}, {"p", "b"}});
  EXPECT_FALSE(f.InSource("p", "a"));
  EXPECT_FALSE(f.InSource("p", "b"));
  EXPECT_TRUE(f.InArchive("p", "a"));
  EXPECT_TRUE(f.InArchive("p", "b"));
  EXPECT_TRUE(f.InSource("p", "poison"));
  EXPECT_EQ(failures[0].status.code(), Code::kInvalidInput);
  EXPECT_TRUE(failures[0].permanent);
  EXPECT_NE(failures[0].status.message().find("Orders(p, poison) -> OrdersArchive"),
            std::string::npos)
      << failures[0].status.ToString();
}

// The check up front is exactly what the engine refuses (the store runs the
// engine's ValidateEntity on every copy): SourceVersion costs 42 bytes.
TEST(MoveManyTest, TheCopysSizeAndPropertyCountAreCheckedAsTheEngineWould) {
  MoveFixture f;
  f.Put(Sized("lim", "fits", Limits::kMaxEntityBytes - 42));
  f.Put(Sized("lim", "over", Limits::kMaxEntityBytes - 40));
  f.Put(Sized("lim", "mib", Limits::kMaxEntityBytes));
  Entity own =
      Wide("lim", "own252", 251);  // 252 with its own SourceVersion: the copy overwrites it
  own.Set("SourceVersion", Value::Int64(1));
  f.Put(own);
  f.Put(Wide("lim", "p251", 251));
  auto failures = f.MoveAll({{"lim", "fits"}, {"lim", "own252"}, {"lim", "p251"}});
  EXPECT_TRUE(failures[0].status.ok()) << failures[0].status.ToString();
  EXPECT_EQ(f.moved, 3u);
  for (const char* rk : {"over", "mib"}) {
    failures = f.MoveAll({{"lim", rk}});
    EXPECT_EQ(failures[0].status.code(), Code::kEntityTooLarge) << rk;
    EXPECT_NE(failures[0].status.message().find(std::string("Orders(lim, ") + rk + ")"),
              std::string::npos)
        << failures[0].status.ToString();
    EXPECT_TRUE(f.InSource("lim", rk));
    EXPECT_FALSE(f.InArchive("lim", rk));
  }
  EXPECT_EQ(std::count(f.seen_copies.begin(), f.seen_copies.end(), "over"), 0);
}

// Session 39: a copy fenced out by an archive entity that is not this copy
// (a higher SourceVersion: another table's entity archived into the same
// table, or one written there directly) left the grouped path deleting the
// source anyway, so the entity was in neither table. It now stays, named; an
// entity whose own earlier copy is in the archive (a move redelivered after
// a crash between copy and delete) is still deleted.
TEST(MoveManyTest, ACopyFencedOutByAnotherEntityInTheArchiveLeavesItsSource) {
  MoveFixture f;
  f.store.tables["OrdersArchive"];
  f.Put(Wide("p", "a", 1));
  f.Put(Wide("p", "taken", 1));
  f.Put(Wide("p", "again", 1));
  f.store.Put("OrdersArchive", client::EntityBuilder("p", "taken")
                                   .String("Status", "theirs")
                                   .Int64("SourceVersion", 999999)
                                   .Build());
  Entity earlier = *f.store.Find("Orders", "p", "again");
  earlier.Set("SourceVersion", Value::Int64(static_cast<int64_t>(f.versions["again"])));
  f.store.Put("OrdersArchive", earlier);
  auto failures = f.MoveAll({{"p", "a"}, {"p", "taken"}, {"p", "again"}});

  ASSERT_TRUE(f.InSource("p", "taken"))
      << "deleted from the source without its copy in the archive";
  EXPECT_EQ(f.store.Find("Orders", "p", "taken")->Find("Status")->bytes(), "Shipped");
  const Entity* held = f.store.Find("OrdersArchive", "p", "taken");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->Find("Status")->bytes(), "theirs") << "the archive's entity is untouched";
  EXPECT_EQ(SourceVersionOf(*held), 999999u);
  EXPECT_FALSE(f.InSource("p", "a"));
  EXPECT_TRUE(f.InArchive("p", "a"));
  EXPECT_FALSE(f.InSource("p", "again")) << "its own earlier copy is in the archive";
  EXPECT_EQ(f.moved, 2u);
  EXPECT_EQ(failures[0].status.code(), Code::kInvalidInput) << failures[0].status.ToString();
  EXPECT_TRUE(failures[0].permanent);
  EXPECT_NE(failures[0].status.message().find("Orders(p, taken) -> OrdersArchive"),
            std::string::npos)
      << failures[0].status.ToString();
  EXPECT_NE(failures[0].status.message().find("999999"), std::string::npos)
      << failures[0].status.ToString();
}

// Two tables archived into one: moves of the same keys in one batch are
// coalesced to the newer copy; the older one's source must stay.
TEST(MoveManyTest, TwoSourcesWithTheSameKeysInOneBatchLoseNeither) {
  MoveFixture f;
  f.store.tables["OrdersUS"];
  f.Put(Wide("p", "k", 1));  // Orders(p, k), the older
  Entity& us = f.store.Put("OrdersUS", Wide("p", "k", 1));
  const uint64_t us_version = VersionFromETag(us.etag).value();
  std::vector<TableOp> ops = {
      patterns::MakeArchiveMove(patterns::ArchiveConfig("Orders", "OrdersArchive"), "", "p", "k",
                                f.versions["k"]),
      patterns::MakeArchiveMove(patterns::ArchiveConfig("OrdersUS", "OrdersArchive"), "", "p", "k",
                                us_version)};
  std::vector<MoveItem> items = {{&ops[0], std::nullopt, 0}, {&ops[1], std::nullopt, 1}};
  std::vector<EventFailure> failures(2);
  GroupedWrites writes(&f.store, &f.applier, &f.policy, &f.observer, &f.sleep);
  MoveMany(&f.store, &f.applier, &writes, items, &failures, &f.observer, &f.moved);

  EXPECT_TRUE(f.InSource("p", "k")) << "Orders(p, k) was deleted, and its copy overwritten";
  EXPECT_FALSE(f.store.Find("OrdersUS", "p", "k"));
  EXPECT_EQ(SourceVersionOf(*f.store.Find("OrdersArchive", "p", "k")), us_version);
  EXPECT_EQ(f.moved, 1u);
  EXPECT_TRUE(failures[0].permanent);
  EXPECT_NE(failures[0].status.message().find("Orders(p, k) -> OrdersArchive"), std::string::npos)
      << failures[0].status.ToString();
  EXPECT_TRUE(failures[1].status.ok()) << failures[1].status.ToString();
}

// An archive request naming [n3, props252, n4], through the worker's
// grouped path and through the one-at-a-time path.
std::string ArchiveRequest(uint64_t lsn, const std::string& pk,
                           const std::vector<std::string>& rks) {
  ChangeRecord rec;
  rec.lsn = lsn;
  rec.kind = ChangeKind::kArchiveRequested;
  rec.commit_time = NowTicks();
  rec.table = "Orders";
  rec.table_id = 1;
  rec.partition_key = pk;
  rec.target_table = "ReqArch";
  for (const std::string& rk : rks) {
    ChangeOp op;
    op.row_key = rk;
    op.kind = OpKind::kDelete;
    rec.ops.push_back(op);
  }
  return events::EncodeEvent(rec, "test");
}

void ExpectRequestMovesAllButTheBadOne(bool grouped) {
  MoveFixture f;
  f.Put(Wide("req", "n3", 1));
  f.Put(Wide("req", "props252", 252));
  f.Put(Wide("req", "n4", 1));
  std::vector<std::unique_ptr<patterns::Pattern>> patterns;
  patterns.push_back(std::make_unique<patterns::ArchivePattern>(
      patterns::ArchiveConfig("Orders", "OrdersArchive")));
  EventProcessor processor(&patterns, &f.applier, RetryPolicy{3, 1, 1}, nullptr,
                           [](int) { return true; });
  const std::string ev = ArchiveRequest(1000, "req", {"n3", "props252", "n4"});
  EventOutcome o;
  if (grouped) {
    processor.EnableGrouping(&f.store);
    o = processor.ProcessBatch({ev})[0];
  } else {
    o = processor.Process(ev);
  }
  EXPECT_EQ(o.kind, EventOutcome::Kind::kDeadLetter);
  EXPECT_EQ(o.reason_kind, FailureKind::kPermanent);
  EXPECT_NE(o.reason.find("TooManyProperties"), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("Orders(req, props252) -> ReqArch"), std::string::npos) << o.reason;
  for (const char* rk : {"n3", "n4"}) {
    EXPECT_FALSE(f.store.Find("Orders", "req", rk)) << rk << " left in the source";
    EXPECT_TRUE(f.store.Find("ReqArch", "req", rk)) << rk;
  }
  EXPECT_TRUE(f.store.Find("Orders", "req", "props252"));
  EXPECT_FALSE(f.store.Find("ReqArch", "req", "props252"));
}

TEST(ArchiveRequestTest, OneBadRowKeyIsDeadLetteredByNameAndTheOthersAreMovedGrouped) {
  ExpectRequestMovesAllButTheBadOne(/*grouped=*/true);
}

TEST(ArchiveRequestTest, OneBadRowKeyIsDeadLetteredByNameAndTheOthersAreMovedOneAtATime) {
  ExpectRequestMovesAllButTheBadOne(/*grouped=*/false);
}

}  // namespace
}  // namespace sidetable::apply
